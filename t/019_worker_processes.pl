# The GPU worker keeps PostgreSQL's process model.  Its engine process is a
# program of its own, exec'd by the supervisor: it maps the queue segment and
# nothing of PostgreSQL's shared memory, and dies with its supervisor.
# Whatever dies or hangs -- the engine process mid-batch, SIGSTOPped, the
# supervisor (terminated, or killed), the postmaster -- while 16 clients
# check every answer against the CPU's: no wrong answer, no process left
# behind, the server starts again, an engine serves again within its
# back-off.  An engine whose device does not start is tried again until it
# does; a small arena keeps its room after load.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use GpxLoad;
use Time::HiRes qw(time usleep);

my $node = PostgreSQL::Test::Cluster->new('processes');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'gpuidx'
gpuidx.device = worker
gpuidx.gpu_min_postings = 0
gpuidx.engine_stall_timeout = '2s'
max_connections = 60
autovacuum = off
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION gpuidx');
$node->safe_psql('postgres', slurp_file('test/worker/lists.sql'));

sub stat_of
{
	my ($col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM gpuidx_worker_stats");
}

sub wait_serving
{
	my ($what) = @_;
	ok($node->poll_query_until('postgres', 'SELECT serving FROM gpuidx_worker_stats'), "$what: an engine serves");
}

sub supervisor_pid
{
	return $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'gpuidx worker'});
}

# a process is gone once it is reaped (a zombie only waits for that)
sub gone
{
	my ($pid) = @_;
	my $stat = eval { slurp_file("/proc/$pid/stat") } // return 1;
	return $stat =~ /^\d+ \(.*\) Z/;
}

sub wait_gone
{
	my ($pids, $what) = @_;
	my $deadline = time() + 10;
	while (time() < $deadline)
	{
		return pass("$what: no process left (@$pids)") unless grep { !gone($_) } @$pids;
		usleep(50_000);
	}
	fail("$what: processes left: " . join(' ', grep { !gone($_) } @$pids));
}

sub children_of
{
	my ($ppid) = @_;
	my @pids;
	for my $dir (glob('/proc/[0-9]*'))
	{
		my $status = eval { slurp_file("$dir/status") } // next;
		push @pids, $dir =~ m{(\d+)$} if $status =~ /^PPid:\s+$ppid$/m;
	}
	return @pids;
}

wait_serving('at start');
my $engine = stat_of('engine_pid');
my $supervisor = supervisor_pid();

# the engine process: exec'd, the supervisor's child, no PostgreSQL memory
like(readlink("/proc/$engine/exe"), qr{/gpuidx_engine$}, 'the engine process runs the program gpuidx_engine');
like(slurp_file("/proc/$engine/status"), qr/^PPid:\s+$supervisor$/m, 'its parent is the supervisor');
my $maps = slurp_file("/proc/$engine/maps");
like($maps, qr{memfd:gpuidx queue}, 'it maps the queue segment');
unlike($maps, qr{SYSV|/dev/zero|/dev/shm/PostgreSQL}, 'and none of PostgreSQL\'s shared memory');
my @shared = grep { (split ' ')[1] =~ /s$/ } split /\n/, $maps;
is(scalar(grep { !/memfd:gpuidx queue/ } @shared), 0, 'no other shared mapping')
  or diag(join("\n", @shared));
my @files = map { readlink($_) // '' } glob("/proc/$engine/fd/*");
is(scalar(grep { m{/(base|global|pg_wal)/} } @files), 0, 'no descriptor of the database\'s files');

# pgbench in the background: every transaction checks its answer
my $script = $node->basedir . '/check.sql';
open(my $fh, '>', $script) or die;
print $fh "\\set a random(1, 123)\n\\set b random(1, 123)\n\\set c random(1, 123)\nSELECT check_generated(:a, :b, :c);\n";
close($fh);

# the server restarts under it: connections end, but no answer was wrong
sub finish_load_broken
{
	my ($load, $what) = @_;
	my ($h, $out, $err) = @$load;
	eval { $h->finish; };
	unlike($$err, qr/differs from the CPU/, "$what: no wrong answer before the connections ended");
}

# 1. the engine process killed mid-batch, again and again
my $starts = stat_of('engine_starts');
my $load = start_load($node, $script, 16, 6);
my @killed;
for my $i (1 .. 4)
{
	usleep(1_000_000);
	my $pid = stat_of('engine_pid');
	next unless $pid;
	push @killed, $pid if kill('KILL', $pid);
}
finish_load($load, 'the engine process SIGKILLed ' . scalar(@killed) . ' times');
cmp_ok(scalar(@killed), '>=', 3, 'killed at least 3 times');
wait_gone(\@killed, 'the killed engine processes');
wait_serving('after the kills');
# a process killed in a batch leaves that batch's start behind; the next one
# serves on and is not taken for stalled because of it
usleep(1_000_000);
unlike(slurp_file($node->logfile), qr/engine process \d+ (ran one batch|made no progress)/,
	'no engine process taken for stalled after the kills');
cmp_ok(stat_of('engine_starts') - $starts, '>=', scalar(@killed), 'a new engine process each time');

# 2. a stalled engine process (SIGSTOP) is found out and replaced
my $stopped = stat_of('engine_pid');
my $stalls = stat_of('engine_stalls');
$load = start_load($node, $script, 16, 6);
usleep(500_000);
kill('STOP', $stopped);
my $t0 = time();
ok($node->poll_query_until('postgres',
	"SELECT serving AND engine_pid <> $stopped FROM gpuidx_worker_stats"), 'a stopped engine process is replaced');
my $took = time() - $t0;
cmp_ok($took, '<', 2 + 5, sprintf('within its stall timeout (2 s) and a little: %.1f s', $took));
finish_load($load, 'an engine process stopped under load');
is(stat_of('engine_stalls') - $stalls, 1, 'counted as one stall');
wait_gone([$stopped], 'the stopped engine process');
# stopped in a batch, its batch can outrun the limit before its heartbeat does
like(slurp_file($node->logfile),
	qr/engine process $stopped (made no progress|ran one batch) for 2000 ms; killing it/,
	'the log says why it was killed');

# 3. pg_terminate_backend of the supervisor: another one, with a new engine process
$supervisor = supervisor_pid();
$engine = stat_of('engine_pid');
$load = start_load($node, $script, 16, 5);
usleep(1_000_000);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($supervisor)");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'gpuidx worker' AND pid <> $supervisor"),
	'a terminated supervisor is started again');
wait_gone([$supervisor, $engine], 'the terminated supervisor and its engine process');
wait_serving('after the supervisor was terminated');
finish_load($load, 'the supervisor terminated under load');

# 4. the supervisor killed: the postmaster restarts the server (its rule for
# any child's death by a signal); its engine process dies with it
$supervisor = supervisor_pid();
$engine = stat_of('engine_pid');
$load = start_load($node, $script, 16, 5);
usleep(1_000_000);
kill('KILL', $supervisor);
wait_gone([$supervisor, $engine], 'the killed supervisor and its engine process');
finish_load_broken($load, 'the supervisor killed under load');
ok($node->poll_query_until('postgres', 'SELECT 1', '1'), 'the server is back');
wait_serving('after the server restarted');
is($node->safe_psql('postgres', 'SELECT count(*) FROM generate_series(1, 40) i WHERE check_generated(i, i + 40, i + 80) < 0'),
	'0', 'answers are right after the restart');

# 5. the postmaster killed: nothing of the old server stays, the next start works
$engine = stat_of('engine_pid');
my $postmaster = $node->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity WHERE backend_type = \'checkpointer\'');
$postmaster = (slurp_file("/proc/$postmaster/status") =~ /^PPid:\s+(\d+)/m)[0];
# every process of the old server: the postmaster, its children, the engine process
my @old = ($postmaster, $engine, children_of($postmaster));
$load = start_load($node, $script, 16, 5);
usleep(1_000_000);
$node->kill9;
wait_gone(\@old, 'the postmaster killed: it, its children and the engine process');
finish_load_broken($load, 'the postmaster killed under load');
# a start refuses while the old postmaster's pid exists, reaped or not
my $deadline = time() + 30;
usleep(50_000) while kill(0, $postmaster) && time() < $deadline;
$node->start;
wait_serving('after the postmaster was killed and the server started');
unlike(slurp_file($node->logfile), qr/pre-existing shared memory block|could not create the GPU worker/,
	'no start-up failure');
is($node->safe_psql('postgres', 'SELECT count(*) FROM generate_series(1, 40) i WHERE check_generated(i, i + 40, i + 80) < 0'),
	'0', 'answers are right after the new start');

# 6. a library that is no engine: the CPU engine, said why, not tried again
$node->append_conf('postgresql.conf', "gpuidx.engine_library = '\$libdir/gpuidx'\n");
$node->restart;
wait_serving('with a library that is no engine');
like(stat_of('engine || \': \' || engine_note'), qr/^cpu: (could not load engine|.*is not a gpuidx engine)/,
	'the CPU engine serves and the view says why');
usleep(2_500_000);
is(stat_of('gpu_retries'), '0', 'a library that does not load is not tried again');

my $libdir = `pg_config --pkglibdir`;
chomp $libdir;

# 6b. the CUDA engine on a machine with no GPU driver at all: the CPU engine,
# said so, and not tried again (a machine with a driver: nothing to check)
SKIP:
{
	skip 'the CUDA engine is not installed', 2 unless -e "$libdir/gpuidx_cuda.so";
	$node->append_conf('postgresql.conf', "gpuidx.engine_library = '\$libdir/gpuidx_cuda'\n");
	$node->restart;
	wait_serving('with the CUDA engine');
	my $note = stat_of('engine || \': \' || engine_note');
	skip "this machine has a CUDA driver ($note)", 2 unless $note =~ /no CUDA driver/;
	like($note, qr/^cpu: .*no CUDA driver is installed on this machine.*not tried again until the server restarts$/,
		'no driver: the CPU engine serves and the view says why');
	usleep(2_500_000);
	is(stat_of('gpu_retries'), '0', 'a machine without a driver is not tried again');
}

# 7. an engine whose device does not start yet: tried again, backing off, until it does
SKIP:
{
	skip 'the test engine is not installed (make install-test-engine)', 15
	  unless -e "$libdir/gpuidx_flaky_engine.so";
	unlink($node->data_dir . '/gpuidx_flaky_engine.ok');
	$node->append_conf('postgresql.conf', "gpuidx.engine_library = '\$libdir/gpuidx_flaky_engine'\n");
	my $log_from = -s $node->logfile;
	$node->restart;
	wait_serving('with a device that does not start');
	like(stat_of('engine || \': \' || engine_note'), qr/^cpu: .*flaky test device is busy.*trying again/,
		'the CPU engine stands in, and the view says it tries again');
	ok($node->poll_query_until('postgres', 'SELECT gpu_retries >= 2 FROM gpuidx_worker_stats'),
		'the device is tried again');
	my $log = substr(slurp_file($node->logfile), $log_from);
	my @cpu_lines = $log =~ /serves with the CPU engine\n[^\n]*DETAIL: +([^\n]*)/g;
	is(scalar(@cpu_lines), 1, 'the log says "serves with the CPU engine" once, however many tries');
	like($cpu_lines[0] // '', qr/did not start: the flaky test device is busy \(no [^)]*\); trying again$/,
		'with the reason as its detail, said once');
	unlike($log, qr/serves with the cpu engine|no device: the flaky/, 'not the engine\'s kind, nor its status twice');

	# EXPLAIN ANALYZE says which engine answered the scan's requests
	$node->safe_psql('postgres', q{
		CREATE TABLE ex (id int, body text);
		INSERT INTO ex SELECT g, 'alpha beta ' || g FROM generate_series(1, 2000) g;
		CREATE INDEX ex_idx ON ex USING gpuidx (body);
		VACUUM ex});
	my $explain = q{SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM ex WHERE body @@& 'alpha beta'};
	like($node->safe_psql('postgres', $explain),
		qr/Rounds on Worker: [1-9].*Worker Requests: [1-9]\n\s*Worker Engine: CPU engine\n/s,
		'EXPLAIN ANALYZE: the worker answered with the CPU engine');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM generate_series(1, 20) i WHERE check_generated(i, i + 40, i + 80) < 0'),
		'0', 'meanwhile the CPU engine answers');
	my $pid = stat_of('engine_pid');
	open(my $ok, '>', $node->data_dir . '/gpuidx_flaky_engine.ok') or die;
	close($ok);
	ok($node->poll_query_until('postgres', q{SELECT engine = 'flaky' FROM gpuidx_worker_stats}),
		'once the device starts, the engine process serves with it');
	is(stat_of('engine_pid'), $pid, 'in the same process, without a restart');
	like(slurp_file($node->logfile), qr/serves with the flaky engine now, after \d+ tries/, 'and the log says so');
	like($node->safe_psql('postgres', $explain), qr/Rounds on Worker: [1-9].*Worker Requests: [1-9]\n\s*Worker Engine: GPU\n/s,
		'and EXPLAIN ANALYZE says the GPU engine answered');

	# an engine whose answers are wrong: refused, answered on the CPU
	my $refused = stat_of('fallback_bad_answer');
	open(my $lie, '>', $node->data_dir . '/gpuidx_flaky_engine.lie') or die;
	close($lie);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM generate_series(1, 40) i WHERE check_generated(i, i + 40, i + 80) < 0'),
		'0', 'an engine answering wrong: every answer still the CPU\'s');
	cmp_ok(stat_of('fallback_bad_answer') - $refused, '>', 10,
		'its answers were refused: ' . (stat_of('fallback_bad_answer') - $refused));
	like(slurp_file($node->logfile), qr/returned an answer that does not check/, 'and the log says so');
	unlink($node->data_dir . '/gpuidx_flaky_engine.lie');
}

# 8. the GPU list cache forgets an index whose storage is rebuilt, emptied or dropped
$node->append_conf('postgresql.conf', "gpuidx.engine_library = '\$libdir/gpuidx_cuda'\n");
$node->restart;
wait_serving('for the list cache');
$node->safe_psql('postgres', q{
	CREATE TABLE cached AS SELECT g AS id, 'common word' || (g % 3) || ' other' || (g % 5) AS body
	FROM generate_series(1, 60000) g;
	CREATE INDEX cached_idx ON cached USING gpuidx (body);
	VACUUM cached;
	CREATE FUNCTION fill_cache() RETURNS bigint LANGUAGE plpgsql AS $$
	DECLARE n bigint;
	BEGIN
		PERFORM set_config('enable_seqscan', 'off', true);
		SELECT count(*) INTO n FROM cached WHERE body @@& 'common word1 other2';
		RETURN n;
	END $$;
});
sub cache_lists_after
{
	my ($sql) = @_;
	$node->safe_psql('postgres', $sql);
	return stat_of('cache_lists');
}
is($node->safe_psql('postgres', 'SELECT fill_cache()'), '4000', 'a count through the worker');
cmp_ok(stat_of('cache_lists'), '>', 0, 'puts the index\'s lists into the GPU cache');
cache_lists_after('REINDEX INDEX cached_idx');
ok($node->poll_query_until('postgres', 'SELECT cache_lists = 0 FROM gpuidx_worker_stats'),
	'REINDEX: the old storage\'s lists are forgotten');
$node->safe_psql('postgres', 'SELECT fill_cache()');
cmp_ok(stat_of('cache_lists'), '>', 0, 'the rebuilt index\'s lists are cached again');
$node->safe_psql('postgres', 'TRUNCATE cached; INSERT INTO cached SELECT g, \'common word\' || (g % 3) || \' other\' || (g % 5) FROM generate_series(1, 60000) g');
ok($node->poll_query_until('postgres', 'SELECT cache_lists = 0 FROM gpuidx_worker_stats'),
	'TRUNCATE: the emptied storage\'s lists are forgotten');
$node->safe_psql('postgres', 'VACUUM cached');
$node->safe_psql('postgres', 'SELECT fill_cache()');
cmp_ok(stat_of('cache_lists'), '>', 0, 'cached again');
is(cache_lists_after('DROP INDEX cached_idx'), '0', 'DROP INDEX: its lists are forgotten at once');

# 9. a 1 MB arena keeps its room: the same work three times, the same fallbacks
$node->append_conf('postgresql.conf', "gpuidx.worker_arena_size = '1MB'\n");
$node->restart;
wait_serving('with a 1 MB arena');
# (the share of requests that found no room: a pass may run more queries
# than the one before it as caches warm)
my (@full, @share);
for my $pass (1 .. 3)
{
	my $before = stat_of('fallback_arena_full');
	my $answered = stat_of('requests');
	finish_load(start_load($node, $script, 16, 3), "1 MB arena, pass $pass");
	my $full = stat_of('fallback_arena_full') - $before;
	my $tried = $full + stat_of('requests') - $answered;
	push @full, "$full of $tried";
	push @share, $full / ($tried || 1);
	ok($node->poll_query_until('postgres', 'SELECT slots_in_use = 0 AND arena_bytes_in_use = 0 FROM gpuidx_worker_stats'),
		"pass $pass: the arena is all free once idle");
}
diag('arena-full fallbacks by pass: ' . join(', ', @full));
cmp_ok($share[2], '<=', 2 * $share[0] + 0.05,
	'the third pass falls back no more often than the first (' . join(', ', @full) . ')');

$engine = stat_of('engine_pid');
$node->stop('fast');
wait_gone([$engine], 'a fast shutdown');
unlike(slurp_file($node->logfile), qr/PANIC/, 'no PANIC');
done_testing();
