# DDL that waits for every process of the cluster, with the GPU worker
# running and busy: CREATE/DROP DATABASE (also WITH (FORCE) under load, and
# of a database that has a gpuidx index), ALTER DATABASE ... SET TABLESPACE
# and DROP TABLESPACE finish within seconds on a primary and are replayed
# within seconds by a streaming standby, whose worker serves afterwards.
# Then pg_terminate_backend of the worker's supervisor: a new one serves
# within its restart time, no process it started stays behind, and queries
# running meanwhile answer right.  Every wait has a deadline, so a hang fails
# the test instead of hanging it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

# a statement that does not finish in this many seconds hangs
my $ddl_timeout = 20;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', q{
shared_preload_libraries = 'gpuidx'
gpuidx.device = worker
gpuidx.gpu_min_postings = 0
max_connections = 40
autovacuum = off
});
$primary->start;

# documents 1..60000 of words a<id % 7>, b<id % 11>, c<id % 13>; check_q()
# compares the rows of 'a<x> b<y>' through the index (and the worker) with
# the ids arithmetic gives, and raises an error when they differ
my $setup = q{
CREATE EXTENSION gpuidx;
CREATE TABLE docs AS SELECT g AS id,
	format('a%s b%s c%s', g % 7, g % 11, g % 13) AS body
	FROM generate_series(1, 60000) g;
CREATE INDEX docs_idx ON docs USING gpuidx (body);
VACUUM ANALYZE docs;
CREATE FUNCTION check_q(x int, y int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	got postinglist; ref postinglist;
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	SELECT pl_agg(id) INTO got FROM docs WHERE body @@& format('a%s b%s', x, y);
	SELECT pl_agg(g) INTO ref FROM generate_series(1, 60000) g WHERE g % 7 = x AND g % 11 = y;
	IF got IS DISTINCT FROM ref THEN
		RAISE EXCEPTION 'a% b%: % rows through the index, % expected', x, y, pl_length(got), pl_length(ref);
	END IF;
	RETURN pl_length(got);
END $$;
};
$primary->safe_psql('postgres', $setup);

# whether $sql answers 't' on $node within $ddl_timeout seconds
# (poll_query_until waits minutes: too long for what should take a second)
sub soon
{
	my ($node, $db, $sql) = @_;
	my $t0 = time();
	while (time() - $t0 < $ddl_timeout)
	{
		my $timed_out;
		my ($ret, $out) = $node->psql($db, $sql, timeout => $ddl_timeout, timed_out => \$timed_out);
		return 1 if !$timed_out && $ret == 0 && $out eq 't';
		usleep(100_000);
	}
	return 0;
}

sub requests
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT requests FROM gpuidx_worker_stats');
}

# the worker serves on $node: a check through the index reaches it
sub serves
{
	my ($node, $db, $what) = @_;
	soon($node, 'postgres', 'SELECT serving FROM gpuidx_worker_stats')
	  or return fail("$what: the worker serves");
	my $before = requests($node);
	my ($ret, $out, $err) = $node->psql($db, 'SELECT check_q(3, 5) + check_q(6, 10)', timeout => 60);
	is($ret, 0, "$what: rows through the worker are right") or diag($err);
	cmp_ok(requests($node) - $before, '>', 0, "$what: the queries reached the worker");
}

# the primary's tablespace, made before the standby's base backup, which
# puts the standby's elsewhere: primary and standby never share a directory
my $tsdir = PostgreSQL::Test::Utils::tempdir_short();
my $standby_tsdir = PostgreSQL::Test::Utils::tempdir_short();
$primary->safe_psql('postgres', "CREATE TABLESPACE ts LOCATION '$tsdir'");

my $ts_oid = $primary->safe_psql('postgres', q{SELECT oid FROM pg_tablespace WHERE spcname = 'ts'});
$primary->backup('b', backup_options => [ "--tablespace-mapping=$tsdir=$standby_tsdir" ]);
# init_from_backup copies no symbolic link: take the tablespace's out, then
# put it in the standby's data directory
unlink($primary->backup_dir . "/b/pg_tblspc/$ts_oid") or die "no tablespace link in the backup: $!";
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
symlink($standby_tsdir, $standby->data_dir . "/pg_tblspc/$ts_oid") or die $!;
$standby->start;

soon($primary, 'postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'gpuidx worker'})
  or die 'no gpuidx worker';
serves($primary, 'postgres', 'primary');
serves($standby, 'postgres', 'standby');

my $script = $primary->basedir . '/check.sql';
open(my $fh, '>', $script) or die;
print $fh "\\set x random(0, 6)\n\\set y random(0, 10)\nSELECT check_q(:x, :y);\n";
close($fh);

# clients checking their rows in the background, until finish_load
sub start_load
{
	my ($node, $db, $clients, $seconds) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', $clients, '-j', 2, '-T', $seconds, '-f', $script,
		  '-h', $node->host, '-p', $node->port, $db ],
		'>', \$out, '2>', \$err,
		IPC::Run::timeout($seconds + 60));
	return [ $h, \$out, \$err ];
}

sub finish_load
{
	my ($load, $what) = @_;
	my ($h, $out, $err) = @$load;
	eval { $h->finish; };
	is($h->result(0), 0, "$what: the clients end well") or diag($$err);
	like($$out, qr/number of failed transactions: 0 /, "$what: no query failed");
	my ($n) = $$out =~ /number of transactions actually processed: (\d+)/;
	cmp_ok($n // 0, '>', 0, "$what: " . ($n // 0) . ' checked queries');
}

# a DDL statement on the primary: finished within the deadline, no error
my $failed_ddl = 0;
sub ddl
{
	my ($sql, $what) = @_;
	my $t0 = time();
	my $timed_out;
	my ($ret, $out, $err) = $primary->psql('postgres',
		"SET statement_timeout = '${ddl_timeout}s';\n$sql",
		on_error_stop => 1, timeout => 2 * $ddl_timeout, timed_out => \$timed_out);
	my $took = time() - $t0;
	$failed_ddl++ unless ok(!$timed_out && $ret == 0 && $took < $ddl_timeout,
		sprintf('%s: done in %.1f s on the primary', $what, $took));
	diag($err) if $ret != 0;
}

# the standby replays up to the primary's WAL position within the deadline
sub replayed
{
	my ($what) = @_;
	my $lsn = $primary->lsn('insert');
	my $t0 = time();
	my $done = soon($standby, 'postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'");
	$failed_ddl++ unless ok($done, sprintf('%s: replayed in %.1f s on the standby', $what, time() - $t0));
}

# past a hang the cluster waits for ever: stop here (the nodes are stopped
# immediately on exit) instead of piling up deadlines
sub stop_if_hung
{
	return unless $failed_ddl;
	diag('a DDL statement or its replay hung: the remaining steps would hang too');
	done_testing();
	exit 1;
}

# 1. idle worker, empty database
ddl('CREATE DATABASE d1', 'CREATE DATABASE');
replayed('CREATE DATABASE');
ddl('DROP DATABASE d1', 'DROP DATABASE');
replayed('DROP DATABASE');
stop_if_hung();

# 2. the same while clients keep the worker busy on both nodes, with a
# database that has a gpuidx index the worker has read lists of
my @busy = (requests($primary), requests($standby));
my @loads = (start_load($primary, 'postgres', 4, 25), start_load($standby, 'postgres', 3, 25));
usleep(500_000);
for my $d ('d2', 'd3')
{
	ddl("CREATE DATABASE $d", "CREATE DATABASE $d (busy worker)");
	$primary->safe_psql($d, $setup);
}
replayed('CREATE DATABASE d2, d3 with gpuidx indexes');
serves($primary, 'd2', 'primary, database d2');
serves($standby, 'd2', 'standby, database d2');

ddl('ALTER DATABASE d2 SET TABLESPACE ts', 'ALTER DATABASE d2 SET TABLESPACE ts');
replayed('ALTER DATABASE SET TABLESPACE');
stop_if_hung();
serves($primary, 'd2', 'primary, d2 moved to ts');
serves($standby, 'd2', 'standby, d2 moved to ts');
ddl('ALTER DATABASE d2 SET TABLESPACE pg_default', 'ALTER DATABASE d2 SET TABLESPACE pg_default');
replayed('ALTER DATABASE SET TABLESPACE back');
ddl('DROP TABLESPACE ts', 'DROP TABLESPACE');
replayed('DROP TABLESPACE');
is(join(' ', glob("$tsdir/*")), '', 'the tablespace directory is empty on the primary');
stop_if_hung();

# clients inside the database dropped WITH (FORCE): on the primary they are
# terminated, on the standby replay ends them (how they end is not checked)
my @doomed = (start_load($primary, 'd3', 2, 20), start_load($standby, 'd3', 2, 20));
soon($primary, 'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = 'd3'});
usleep(500_000);
ddl('DROP DATABASE d2', 'DROP DATABASE d2 (gpuidx index, busy worker)');
ddl('DROP DATABASE d3 WITH (FORCE)', 'DROP DATABASE WITH (FORCE) under clients querying its gpuidx index');
replayed('DROP DATABASE of databases with gpuidx indexes, clients on the standby');
stop_if_hung();
eval { $_->[0]->finish; } for @doomed;
is($standby->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname IN ('d2', 'd3')}), '0',
	'the standby has dropped both databases');

finish_load($loads[0], 'primary under DDL');
finish_load($loads[1], 'standby replaying DDL');
cmp_ok(requests($primary) - $busy[0], '>', 100, 'the primary\'s worker was busy: '
	  . (requests($primary) - $busy[0]) . ' requests');
cmp_ok(requests($standby) - $busy[1], '>', 100, 'the standby\'s worker was busy: '
	  . (requests($standby) - $busy[1]) . ' requests');
serves($primary, 'postgres', 'primary after the DDL');
serves($standby, 'postgres', 'standby after replaying the DDL');

# 3. pg_terminate_backend of the supervisor, under load
sub supervisor
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpuidx worker'});
}

# pid => start time of each process whose parent is $ppid
sub children
{
	my ($ppid) = @_;
	my %kids;
	for my $stat (glob('/proc/[0-9]*/stat'))
	{
		open(my $f, '<', $stat) or next;
		my $line = <$f>;
		close($f);
		next unless defined $line;
		# the command name is in parentheses and may hold anything
		my @f = split ' ', substr($line, rindex($line, ')') + 2);
		$kids{ $stat =~ m{/proc/(\d+)/} ? $1 : 0 } = $f[19] if $f[1] == $ppid;
	}
	return \%kids;
}

# whether process $pid, started at $start, is still there (not a reused pid)
sub still_there
{
	my ($pid, $start) = @_;
	open(my $f, '<', "/proc/$pid/stat") or return 0;
	my $line = <$f>;
	close($f);
	my @f = split ' ', substr($line, rindex($line, ')') + 2);
	return $f[19] eq $start;
}

for my $node ($primary, $standby)
{
	my $name = $node->name;
	my $old = supervisor($node);
	like($old, qr/^\d+$/, "$name: one supervisor");
	my $kids = children($old);
	cmp_ok(scalar(keys %$kids), '>=', 1,
		"$name: the supervisor has started processes: " . join(' ', sort keys %$kids));
	my $starts = $node->safe_psql('postgres', 'SELECT engine_starts FROM gpuidx_worker_stats');

	my $load = start_load($node, 'postgres', 4, 8);
	usleep(1_500_000);
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($old)");
	my $t0 = time();
	my $back = soon($node, 'postgres', qq{SELECT serving FROM gpuidx_worker_stats
		WHERE EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'gpuidx worker' AND pid <> $old)});
	my $new = supervisor($node);
	ok($back, sprintf('%s: a new supervisor (%s) serves %.1f s after the old one (%d) was terminated',
			$name, $new, time() - $t0, $old));
	ok(!kill(0, $old), "$name: the old supervisor is gone");
	my @left = grep { still_there($_, $kids->{$_}) } keys %$kids;
	is("@left", '', "$name: no process the old supervisor started is left");
	finish_load($load, "$name: queries while the supervisor was terminated");
	cmp_ok($node->safe_psql('postgres', 'SELECT engine_starts FROM gpuidx_worker_stats'), '>', $starts,
		"$name: a new engine was started");
	serves($node, 'postgres', "$name: after the supervisor was terminated");
}

for my $node ($primary, $standby)
{
	my $log = slurp_file($node->logfile);
	unlike($log, qr/terminated by signal|server process .* was terminated|PANIC|terminating any other active server/,
		$node->name . ': no process crashed, the cluster never restarted');
}
$standby->stop('fast');
$primary->stop('fast');
done_testing();
