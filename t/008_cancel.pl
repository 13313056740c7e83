# Long work on a gpuidx index can be stopped at once: statement_timeout,
# pg_cancel_backend, pg_terminate_backend and a fast shutdown end a
# CREATE INDEX or REINDEX of 800,000 rows (several seconds of work) within a
# fraction of a second; a multi-megabyte document's insert holds no lock
# that scans or inserts wait for, and stops at once when cancelled.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = PostgreSQL::Test::Cluster->new('cancel');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\nmax_wal_size = 4GB\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION gpuidx;
	CREATE TABLE t (id int, body text);
	INSERT INTO t SELECT g, 'w' || (g % 5003) || ' v' || (g % 7919) || ' u' || g || ' x' || (g * 31 % 100003)
	FROM generate_series(1, 800000) g;
	ANALYZE t;
});

# how long a whole build takes here, for comparison
my $t0 = time();
$node->safe_psql('postgres', 'CREATE INDEX t_full ON t USING gpuidx (body)');
my $build = time() - $t0;
note sprintf('a whole build takes %.2f s', $build);

# statement_timeout, on CREATE INDEX and on REINDEX
for my $cmd ('CREATE INDEX t_idx ON t USING gpuidx (body)', 'REINDEX INDEX t_full')
{
	$t0 = time();
	my ($ret, $out, $err) = $node->psql('postgres', "SET statement_timeout = '300ms'; $cmd",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	my $took = time() - $t0;
	like($err, qr/57014: canceling statement due to statement timeout/, "$cmd: statement_timeout cancels it");
	cmp_ok($took, '<', 0.3 + 0.7, sprintf('%s: ended %.2f s after it began (a build takes %.2f s)', $cmd, $took, $build));
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 't_idx'}), '0',
	'the cancelled CREATE INDEX left no index');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM t WHERE body @@& 'u77'}), '1',
	'the index whose REINDEX was cancelled still answers');

# a build in another session, stopped from outside once it is under way
sub start_build
{
	my $psql = $node->background_psql('postgres');
	my $pid = $psql->query_safe('SELECT pg_backend_pid()');
	$psql->query_until(qr/started/, "\\echo started\nCREATE INDEX t_bg ON t USING gpuidx (body);\n");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_progress_create_index WHERE pid = $pid AND phase LIKE 'building%'")
	  or die 'the build did not start';
	usleep(200_000);
	return ($psql, $pid);
}

# time until the backend no longer runs the statement (or is gone)
sub wait_statement_end
{
	my ($pid) = @_;
	my $start = time();
	while (time() - $start < 30)
	{
		last if $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid AND state = 'active'") eq '0';
		usleep(5_000);
	}
	return time() - $start;
}

my ($psql, $pid) = start_build();
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
my $took = wait_statement_end($pid);
cmp_ok($took, '<', 0.5, sprintf('pg_cancel_backend ends a running build in %.2f s', $took));
eval { $psql->quit };		# its psql may have gone with its backend

($psql, $pid) = start_build();
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$took = wait_statement_end($pid);
cmp_ok($took, '<', 0.5, sprintf('pg_terminate_backend ends a running build in %.2f s', $took));
eval { $psql->quit };		# its psql may have gone with its backend

($psql, $pid) = start_build();
$t0 = time();
$node->stop('fast');
$took = time() - $t0;
cmp_ok($took, '<', 5, sprintf('a fast shutdown during a build completes in %.2f s', $took));
eval { $psql->quit };		# its psql may have gone with its backend
$node->start;
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 't_bg'}), '0',
	'no index is left of the builds that were stopped');

# a 25 MB document of distinct words: scans and inserts go on while it is
# tokenized and its pending pages are written (no lock they wait for), and
# a statement_timeout stops it at once wherever it is
$node->safe_psql('postgres', q{
	CREATE TABLE big (id int, body text);
	INSERT INTO big SELECT g, 'small doc' || g || ' common' FROM generate_series(1, 1000) g;
	CREATE INDEX big_idx ON big USING gpuidx (body) WITH (pending_list_limit = 2147483647);
});
my $doc_sql = q{INSERT INTO big SELECT 0, string_agg('bigword' || g, ' ') FROM generate_series(1, 2000000) g};
# the big document's insert alone, timed twice and the faster taken: the
# first, on a cold backend, ran 15% slower than later ones (a cancel point
# at 85% of it was once reached after the insert had ended)
my $insert;
for my $word ('firstword', 'secondword')
{
	$t0 = time();
	$node->safe_psql('postgres', $doc_sql =~ s/bigword/$word/r);
	my $took = time() - $t0;
	$insert = $took if !defined $insert || $took < $insert;
}
my $writer = $node->background_psql('postgres');
my $wpid = $writer->query_safe('SELECT pg_backend_pid()');
$t0 = time();
$writer->query_until(qr/started/, "\\echo started\n$doc_sql;\n\\echo inserted\n");
my ($max_ms, $scans) = (0, 0);
while ($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $wpid AND state = 'active'") eq '1')
{
	my $s0 = time();
	$node->safe_psql('postgres', q{
		SET enable_seqscan = off;
		SELECT count(*) FROM big WHERE body @@& 'common';
		INSERT INTO big VALUES (-1, 'concurrent small insert');});
	my $ms = (time() - $s0) * 1000;
	$max_ms = $ms if $ms > $max_ms;
	$scans++;
}
eval { $writer->quit };
note sprintf('a big document alone takes %.2f s; with %d scans and inserts meanwhile %.2f s, the slowest of them %.0f ms',
	$insert, $scans, time() - $t0, $max_ms);
cmp_ok($scans, '>', 5, "scans and inserts ran while the big document was inserted ($scans)");
cmp_ok($max_ms, '<', 1000, 'none of them waited for it');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM big WHERE body @@& 'bigword77 bigword1999999'}),
	'1', 'the big document is found');

# cancelled at points spread over its work: ended at once, nothing of it found
for my $share (0.2, 0.45, 0.7)
{
	my $timeout = int($insert * 1000 * $share);
	$t0 = time();
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET statement_timeout = '${timeout}ms'; " . ($doc_sql =~ s/bigword/otherword/r));
	my $took = time() - $t0;
	like($err, qr/canceling statement due to statement timeout/, "a big document cancelled at ${timeout} ms");
	cmp_ok($took - $timeout / 1000, '<', 0.8, sprintf('... ended %.2f s after the timeout', $took - $timeout / 1000));
}
$node->safe_psql('postgres', 'VACUUM big');
like($node->safe_psql('postgres', q{SELECT gpuidx_verify('big_idx')}), qr/is sound/,
	'the index is sound after the cancelled documents and VACUUM');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM big WHERE body @@& 'otherword77'}),
	'0', 'no cancelled document is found');

$node->stop;
done_testing();
