# The GPU worker on a machine without a GPU: it runs the CPU engine, so the
# queue, batching, placement and every fallback run for real.  32 clients
# intersect real lists (GCIDE's terms, its real queries) and generated ones,
# and every answer equals the backend's own CPU answer: while the engine
# process is killed with SIGKILL again and again (the cluster stays up, no
# query fails), when requests time out, when the queue is full, when a
# waiting query is cancelled or its backend terminated (no slot is kept),
# and when the GPU list cache is too small for the lists.  Counts (count
# mode) and first rows under LIMIT (first ids) through the worker equal the
# CPU's, before and after deletes and VACUUM.
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

my $data = $ENV{GPUIDX_DATA} // "$ENV{HOME}/.cache/gpuidx-data";
my $docs_file = "$data/gcide/docs.tsv";
my $queries_file = "$data/gcide/queries.tsv";
my $real = -r $docs_file && -r $queries_file;
BAIL_OUT("corpus gcide not found under $data, and GPUIDX_REQUIRE_CORPUS is set")
  if !$real && ($ENV{GPUIDX_REQUIRE_CORPUS} // '') eq '1';
diag("NOTICE: corpus 'gcide' not found under $data: generated lists only") unless $real;

my $node = PostgreSQL::Test::Cluster->new('worker');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'gpuidx'
gpuidx.device = worker
gpuidx.gpu_min_postings = 0
gpuidx.gpu_rank_backlog = 0
max_connections = 60
autovacuum = off
});
$node->start;

sub stats
{
	my $row = $node->safe_psql('postgres', q{
		SELECT serving, engine_pid, engine_starts, batches, requests, worker_rounds, backend_rounds,
		       fallback_absent, fallback_queue_full, fallback_timeout, fallback_worker_lost,
		       fallback_cancelled, slots_in_use
		FROM gpuidx_worker_stats});
	my @v = split /\|/, $row;
	my %s;
	@s{qw(serving pid starts batches requests worker_rounds backend_rounds absent queue_full
		  timeout lost cancelled slots)} = @v;
	return \%s;
}

$node->safe_psql('postgres', 'CREATE EXTENSION gpuidx');
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'gpuidx worker'}),
	'the worker is in pg_stat_activity as "gpuidx worker"');
$node->poll_query_until('postgres', 'SELECT serving FROM gpuidx_worker_stats') or die 'the worker never served';
is(stats()->{serving}, 't', 'its engine process serves');
like($node->safe_psql('postgres', 'SELECT engine FROM gpuidx_worker_stats'), qr/^cpu$/,
	'with the CPU engine, on a machine without a GPU');

# lists: generated ones of every shape, and GCIDE's terms with its real queries
$node->safe_psql('postgres', slurp_file('test/worker/lists.sql'));
my $nqueries = 0;
my $nindex = 0;
if ($real)
{
	$node->safe_psql('postgres', qq{
		CREATE TABLE src (id int, body text);
		COPY src FROM '$docs_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
		CREATE TABLE qsrc (id int, terms text);
		COPY qsrc FROM '$queries_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
	});
	$node->safe_psql('postgres', slurp_file('test/worker/gcide.sql'));
	# every other index query: the GPU machine's device
	# check (bench/worker/device_check.sh) runs them all
	$node->safe_psql('postgres', q{
		CREATE TABLE iq_half AS SELECT row_number() OVER (ORDER BY n)::int AS n, terms FROM iq WHERE n % 2 = 0;
		DROP TABLE iq;
		ALTER TABLE iq_half RENAME TO iq;
		CREATE UNIQUE INDEX ON iq (n);
	});
	$nindex = $node->safe_psql('postgres', 'SELECT count(*) FROM iq');
	my $before_idx = stats();
	is($node->safe_psql('postgres', 'SELECT count(*) FROM iq WHERE check_index(n) IS NULL'), '0',
		"$nindex real queries through the index: the worker's rows equal the CPU's");
	cmp_ok(stats()->{requests} - $before_idx->{requests}, '>', 100,
		'index queries reached the worker: ' . (stats()->{requests} - $before_idx->{requests}) . ' requests');
	my $sample = $node->safe_psql('postgres', 'SELECT count(*) FROM iq WHERE n % 63 = 0');
	is($node->safe_psql('postgres',
		q{SELECT count(*) FROM iq WHERE n % 63 = 0 AND count_by(terms, 'seq') <> count_by(terms, 'index')}),
		'0', "and $sample of them count through the worker as a sequential scan does");

	# EXPLAIN ANALYZE of the custom scan says where the rounds ran
	my $pair = $node->safe_psql('postgres',
		'SELECT string_agg(word, \' \') FROM (SELECT word FROM terms ORDER BY pl_length(l) DESC LIMIT 2) t');
	my $plan = $node->safe_psql('postgres', qq{SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM docs WHERE body @@& '$pair'});
	# and which engine answered, as the worker's view names it
	my $engine = $node->safe_psql('postgres', 'SELECT engine FROM gpuidx_worker_stats') eq 'cpu' ? 'CPU engine' : 'GPU';
	like($plan, qr/Custom Scan \(gpuidx\).*Index: docs_idx.*Rounds on Worker: [1-9].*Worker Requests: [1-9]\n\s*Worker Engine: $engine\n/s,
		"EXPLAIN ANALYZE of '$pair' shows its rounds on the worker, answered by its $engine");
	unlike($plan, qr/Worker Wait/, 'and no timing with TIMING OFF');
	unlike($plan, qr/not asked/, 'and no reason why the worker was not asked');
	# lists too short for the worker: EXPLAIN ANALYZE says why it was not asked
	my $nplan = $node->safe_psql('postgres', qq{SET gpuidx.gpu_min_postings = 1000000000; SET enable_seqscan = off;
		SET max_parallel_workers_per_gather = 0;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM docs WHERE body @@& '$pair'});
	like($nplan, qr/Rounds on Worker: 0\n.*Worker Requests: 0\n.*Worker: not asked: lists read in the backend \(shortest under gpuidx.gpu_min_postings, 1000000000,/s,
		"EXPLAIN ANALYZE of '$pair' with every list under gpu_min_postings says why the worker was not asked");

	# what a query asks back: the count alone, the first rows; the GPU list cache
	$node->safe_psql('postgres', 'VACUUM docs');
	my $before_cache = $node->safe_psql('postgres', 'SELECT cache_hits FROM gpuidx_worker_stats');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM iq WHERE check_count(n) IS NULL'), '0',
		"count(*) of the $nindex index queries through the worker (all-visible heap: counts only) equals the CPU's");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM iq WHERE check_limit(n, 7) IS NULL'), '0',
		'and their first 7 rows under LIMIT, the worker asked for the first ids only');
	cmp_ok($node->safe_psql('postgres', 'SELECT cache_hits FROM gpuidx_worker_stats') - $before_cache, '>', 100,
		'lists went to the worker by key, their bytes cached already');
	like($node->safe_psql('postgres', 'SELECT cache_lists > 0 AND cache_bytes > 0 FROM gpuidx_worker_stats'),
		qr/^t$/, 'the directory lists what the engine holds');
	my $cplan = $node->safe_psql('postgres', qq{SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM docs WHERE body @@& '$pair'});
	like($cplan, qr/Heap Fetches: 0.*All-Visible Unread: [1-9].*Cache Hits: [1-9].*Batch Size: \d/s,
		"count(*) of '$pair': nothing fetched, its lists cached on the worker");

	# ranked: the top k of ORDER BY body <=> q through the worker equal the CPU's
	my $before_rank = stats();
	my $nranked = $node->safe_psql('postgres', 'SELECT count(*) FROM iq WHERE n % 2 = 0');
	is($node->safe_psql('postgres',
		'SELECT count(*) FROM iq WHERE n % 2 = 0 AND (check_ranked(n, 1) IS NULL OR check_ranked(n, 10) IS NULL OR check_ranked(n, 100) IS NULL)'),
		'0', "$nranked real queries ranked through the worker, any term and every term, k = 1, 10, 100: the CPU's rows, order and scores");
	cmp_ok(stats()->{requests} - $before_rank->{requests}, '>', 100,
		'ranked segments reached the worker: ' . (stats()->{requests} - $before_rank->{requests}) . ' requests');
	my $rplan = $node->safe_psql('postgres', qq{SET enable_seqscan = off;
		EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM docs ORDER BY body <=> '$pair' LIMIT 10});
	like($rplan, qr/Custom Scan \(gpuidx rank\) on docs.*Index: docs_idx.*Segments Ranked on Worker: [1-9].*Segments Ranked in Backend: 0.*Worker Requests: [1-9]\n\s*Worker Engine: $engine\n/s,
		"EXPLAIN ANALYZE of ranked '$pair' shows its segments ranked on the worker");

	# by default the costs measured both ways place a ranked segment: the
	# first eligible ranking of a shape in the backend (nothing measured it
	# there yet: the worker's rankings above measured only the worker), then
	# whichever way is sooner, and once a second for each shape and size the
	# other way: 4 rounds of 20 rankings a second apart try it 4 times
	my $routed = $node->safe_psql('postgres', qq{
		SET enable_seqscan = off; SET gpuidx.gpu_rank_backlog = -1;
		CREATE TEMP TABLE placed (i int, worker bool);
		DO \$\$ DECLARE l text; BEGIN
			FOR i IN 1 .. 80 LOOP
				IF i % 20 = 1 AND i > 1 THEN PERFORM pg_sleep(1.1); END IF;
				FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) '
					'SELECT id FROM docs ORDER BY body <=> ''$pair'' LIMIT 10' LOOP
					IF l ~ 'Segments Ranked on Worker: [1-9]' THEN INSERT INTO placed VALUES (i, true); END IF;
					IF l ~ 'Segments Ranked in Backend: [1-9]' THEN INSERT INTO placed VALUES (i, false); END IF;
				END LOOP;
			END LOOP;
		END \$\$;
		SELECT (SELECT bool_or(worker) FROM placed WHERE i = 1), count(*) FILTER (WHERE worker),
			   count(*) FILTER (WHERE NOT worker), count(DISTINCT i)
		FROM placed});
	my ($first, $on_worker, $in_backend, $placed) = split /\|/, $routed;
	is($first, 'f', "placed by cost: the first ranking of '$pair' in the backend, to measure it there");
	is($placed, '80', 'each of 80 rankings placed somewhere');
	cmp_ok($on_worker, '>=', 3, "$on_worker of its segments on the worker");
	cmp_ok($in_backend, '>=', 3, "$in_backend in the backend: both ways kept measured");
	is($node->safe_psql('postgres', q{SELECT count(*) > 0 FROM gpuidx_rank_placement
		WHERE shape = 'any term' AND backend_ns_per_posting > 0 AND worker_ns_per_posting > 0
		  AND other_way_tried IS NOT NULL}), 't',
		'gpuidx_rank_placement shows an any-term size measured both ways, the other way tried');

	# every term, one list a thousand times the other's length: the backend's
	# WAND costs about the shorter list, the device both, so the backend
	# ranks it, unless the length-ratio threshold lets the worker have it
	my $skewed = $node->safe_psql('postgres', q{
		SELECT long.word || ' ' || short.word
		FROM (SELECT word, pl_length(l) AS n FROM terms ORDER BY pl_length(l) DESC, word LIMIT 1) long,
		LATERAL (SELECT word FROM terms WHERE pl_length(l) BETWEEN 20 AND long.n / 1000
				 ORDER BY pl_length(l) DESC, word LIMIT 1) short});
	isnt($skewed, '', "a skewed pair of real terms: '$skewed'");
	my $every = "SELECT id FROM docs WHERE body @@& '$skewed' ORDER BY body <=> '$skewed' LIMIT 10";
	my $explain = 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ';
	like($node->safe_psql('postgres', "SET enable_seqscan = off; $explain $every"),
		qr/Custom Scan \(gpuidx rank\).*Segments Ranked on Worker: 0\n\s*Segments Ranked in Backend: [1-9]/s,
		'every term of a skewed pair: ranked in the backend');
	like($node->safe_psql('postgres', "SET enable_seqscan = off; SET gpuidx.cpu_ratio_threshold = 1000000000; $explain $every"),
		qr/Custom Scan \(gpuidx rank\).*Segments Ranked on Worker: [1-9]\n\s*Segments Ranked in Backend: 0/s,
		'on the worker once the ratio threshold is raised');
	is($node->safe_psql('postgres', "SET enable_seqscan = off; SET gpuidx.cpu_ratio_threshold = 1000000000; $every"),
		$node->safe_psql('postgres', "SET enable_seqscan = off; $every"),
		'the same rows either way');

	# rows deleted: first ids that are not visible make the scan ask for more;
	# counts fetch what is not all-visible, then (VACUUMed) skip the dead docs
	$node->safe_psql('postgres', 'DELETE FROM docs WHERE id % 7 = 0');
	is($node->safe_psql('postgres',
		'SELECT count(*) FROM iq WHERE n % 3 = 0 AND (check_limit(n, 7) IS NULL OR check_count(n) IS NULL)'), '0',
		'after deleting every seventh row: first rows and counts through the worker equal the CPU\'s');
	$node->safe_psql('postgres', 'VACUUM docs');
	is($node->safe_psql('postgres',
		'SELECT count(*) FROM iq WHERE n % 3 = 1 AND (check_limit(n, 7) IS NULL OR check_count(n) IS NULL)'), '0',
		'and after VACUUM marked them dead in the index');
	is($node->safe_psql('postgres',
		'SELECT count(*) FROM iq WHERE n % 4 = 1 AND (check_ranked(n, 10) IS NULL OR check_ranked(n, 100) IS NULL)'), '0',
		'ranked through the worker after VACUUM (dead docs in the segment): the CPU\'s rows, order and scores');

	$nqueries = $node->safe_psql('postgres', 'SELECT count(*) FROM queries');
	cmp_ok($nqueries, '>=', 100, "$nqueries real GCIDE queries of 2 to 8 terms");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM queries WHERE check_query(n) IS NULL'), '0',
		'every real query answered by the worker as by the CPU, one at a time');
}

# A segment with more dead docs than the engine's largest k (65,536) is
# still ranked on the worker: the doc lengths it caches give dead docs length
# 0, and no engine scores a doc of length 0.  (VACUUM rewrites a segment
# past a fifth dead: 19% of 400,000 stay marked.)
$node->safe_psql('postgres', q{
	CREATE TABLE manydead (id int PRIMARY KEY, body text);
	INSERT INTO manydead
	SELECT g, 'alpha w' || (g % 997) || CASE WHEN g % 3 = 0 THEN ' beta' ELSE '' END || repeat(' pad', g % 5)
	FROM generate_series(1, 400000) g;
	CREATE INDEX manydead_idx ON manydead USING gpuidx (body);
	DELETE FROM manydead WHERE id % 100 < 19;
	VACUUM manydead;
});
my $ndead = $node->safe_psql('postgres', q{SELECT dead_docs FROM gpuidx_index_stats('manydead_idx')});
cmp_ok($ndead, '>', 65536, "$ndead dead docs in one segment");
for my $q ('alpha beta', 'beta w3', 'w10 pad', 'alpha')
{
	for my $k (10, 100)
	{
		my $top = "SELECT string_agg(id || ':' || s, ',') FROM (SELECT id, -(body <=> '$q') AS s FROM manydead "
		  . "ORDER BY body <=> '$q' LIMIT $k) x";
		my $cpu = $node->safe_psql('postgres', "SET enable_seqscan = off; SET gpuidx.device = cpu; $top");
		is($node->safe_psql('postgres', "SET enable_seqscan = off; SET gpuidx.device = worker; $top"), $cpu,
			"top $k of '$q' among $ndead dead docs: the worker's rows, order and scores are the CPU's");
		isnt($cpu, '', 'and it has rows');
	}
}
like($node->safe_psql('postgres', q{SET enable_seqscan = off;
	EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM manydead ORDER BY body <=> 'alpha beta' LIMIT 10}),
	qr/Segments Ranked on Worker: 1\n\s*Segments Ranked in Backend: 0/,
	'the segment ranked on the worker');

my $script = $node->basedir . '/check.sql';
open(my $fh, '>', $script) or die;
print $fh "\\set a random(1, 123)\n\\set b random(1, 123)\n\\set c random(1, 123)\n";
print $fh "SELECT check_generated(:a, :b, :c);\n";
if ($nqueries)
{
	print $fh "\\set q random(1, $nqueries)\nSELECT check_query(:q);\n";
	print $fh "\\set i random(1, $nindex)\nSELECT check_index(:i);\n";
	print $fh "\\set r random(1, $nindex)\nSELECT check_ranked(:r, 10);\n";
}
close($fh);

# 1. 32 clients, the engine process up
my $before = stats();
finish_load(start_load($node, $script, 32, 6), '32 clients');
my $after = stats();
cmp_ok($after->{requests} - $before->{requests}, '>', 1000, 'the worker answered requests: '
	  . ($after->{requests} - $before->{requests}));
cmp_ok(($after->{requests} - $before->{requests}) / (($after->{batches} - $before->{batches}) || 1), '>', 1.5,
	'requests of many backends were batched: '
	  . ($after->{requests} - $before->{requests}) . ' requests in '
	  . ($after->{batches} - $before->{batches}) . ' batches');
cmp_ok($after->{backend_rounds} - $before->{backend_rounds}, '>', 0,
	'rounds past the length-ratio threshold ran in the backends');

# 2. the engine process killed again and again under that load
$before = stats();
my $load = start_load($node, $script, 32, 8);
my $kills = 0;
for my $i (1 .. 6)
{
	usleep(900_000);
	my $pid = $node->safe_psql('postgres', 'SELECT engine_pid FROM gpuidx_worker_stats');
	next unless $pid;
	$kills++ if kill('KILL', $pid);
}
finish_load($load, "the engine process SIGKILLed $kills times");
cmp_ok($kills, '>=', 3, 'the engine process was killed at least 3 times');
$node->poll_query_until('postgres', 'SELECT serving FROM gpuidx_worker_stats') or die;
$after = stats();
cmp_ok($after->{starts} - $before->{starts}, '>=', $kills, 'and restarted each time: ' . ($after->{starts} - $before->{starts}));
cmp_ok(($after->{lost} - $before->{lost}) + ($after->{absent} - $before->{absent}), '>', 0,
	'queries in flight or arriving meanwhile answered on the CPU');
unlike(slurp_file($node->logfile), qr/terminating connection because of crash|server process .* was terminated/,
	'the cluster never restarted');

# 3. gpuidx.device = auto sends nothing to a worker without a GPU
$before = stats();
$node->safe_psql('postgres', q{SET gpuidx.device = auto;
	SELECT pl_length(pl_intersect(pl_range(0, 100000), pl_range(5, 90000)))});
is(stats()->{requests} - $before->{requests}, 0, 'device = auto: no request to a CPU-only worker');

# 4. time-outs: the worker holds batches for a second (requests come close
# together), queries wait 20 ms
$node->append_conf('postgresql.conf', "gpuidx.batch_window = 1000000\ngpuidx.batch_max_work = 2147483647\n");
$node->reload;
usleep(300_000);
$before = stats();
is($node->safe_psql('postgres', q{SET gpuidx.gpu_timeout = '20ms';
	SELECT count(*) FROM lists a, lists b WHERE a.id <= 5 AND b.id <= 5 AND check_lists(a.l, b.l) IS NULL}),
	'0', "answers that timed out are the CPU's, and right");
$after = stats();
cmp_ok($after->{timeout} - $before->{timeout}, '>=', 25, 'requests timed out: ' . ($after->{timeout} - $before->{timeout}));
$node->poll_query_until('postgres', 'SELECT slots_in_use = 0 FROM gpuidx_worker_stats')
  or fail('timed-out requests give their slots back');

# 4b. but a lone request after a quiet spell goes at once: nothing ahead of
# it, none submitted in the window before it, so no company is coming
usleep(1_500_000);
$before = stats();
my $lone_t0 = time();
my $lone = $node->safe_psql('postgres', q{SET gpuidx.gpu_timeout = '10s';
	SELECT pl_length(pl_intersect(pl_range(0, 100000), pl_range(5, 90000)))});
my $lone_s = time() - $lone_t0;
is($lone, $node->safe_psql('postgres', q{SET gpuidx.device = cpu;
	SELECT pl_length(pl_intersect(pl_range(0, 100000), pl_range(5, 90000)))}), 'a lone request: the right answer');
cmp_ok($lone_s, '<', 0.5, sprintf('a lone request is not held for the 1 s window (%.3f s)', $lone_s));
$after = stats();
is($after->{requests} - $before->{requests}, 1, '... it went to the worker');
is($after->{timeout} - $before->{timeout}, 0, '... and did not time out');

# 5. cancelled while waiting: statement_timeout, then pg_terminate_backend
$before = stats();
my ($ret, $out, $err) = $node->psql('postgres', q{SET gpuidx.gpu_timeout = '10s'; SET statement_timeout = '200ms';
	SELECT check_generated(1, 2, 3)}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/57014/, 'statement_timeout cancels a query waiting for the worker');
$node->poll_query_until('postgres', 'SELECT slots_in_use = 0 FROM gpuidx_worker_stats')
  or fail('the cancelled request gives its slot back');
cmp_ok(stats()->{cancelled} - $before->{cancelled}, '>=', 1, 'counted as cancelled');

my $psql = $node->background_psql('postgres');
my $pid = $psql->query_safe('SELECT pg_backend_pid()');
$psql->query_until(qr/started/, "\\echo started\nSET gpuidx.gpu_timeout = '10s';\nSELECT check_generated(4, 5, 6);\n");
$node->poll_query_until('postgres', 'SELECT slots_in_use > 0 FROM gpuidx_worker_stats') or die;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
eval { $psql->quit; };
$node->poll_query_until('postgres', 'SELECT slots_in_use = 0 FROM gpuidx_worker_stats')
  or fail('a terminated backend gives its slot back');
pass('a backend terminated while waiting gives its slot back');

# 6. a full queue: 8 slots, 32 clients, batches held 50 ms
$node->append_conf('postgresql.conf', "gpuidx.worker_queue_slots = 8\ngpuidx.batch_window = 50000\n");
$node->restart;
$node->poll_query_until('postgres', 'SELECT serving FROM gpuidx_worker_stats') or die;
$before = stats();
finish_load(start_load($node, $script, 32, 4), 'a queue of 8 slots, 32 clients');
$after = stats();
cmp_ok($after->{queue_full} - $before->{queue_full}, '>', 0,
	'requests finding the queue full ran on the CPU: ' . ($after->{queue_full} - $before->{queue_full}));
cmp_ok($after->{requests} - $before->{requests}, '>', 0, 'the others on the worker');

# 7. a GPU list cache far smaller than the lists: evictions, every answer still right
$node->append_conf('postgresql.conf', "gpuidx.worker_queue_slots = 256\ngpuidx.batch_window = 100\ngpuidx.gpu_cache_size = 1MB\n");
$node->restart;
$node->poll_query_until('postgres', 'SELECT serving FROM gpuidx_worker_stats') or die;
# 40 terms, each in a quarter of 400,000 rows (lists of some 35 kB): 1.4 MB of lists
$node->safe_psql('postgres', q{
	CREATE TABLE many AS SELECT g AS id,
		(SELECT string_agg('t' || k, ' ') FROM generate_series(0, 39) k WHERE hashint4(g * 41 + k) & 3 = 0) AS body
	FROM generate_series(1, 400000) g;
	CREATE INDEX many_idx ON many USING gpuidx (body);
	VACUUM many;
	CREATE FUNCTION many_differs(a int, b int) RETURNS boolean LANGUAGE plpgsql AS $$
	DECLARE q text := 't' || a || ' t' || b; x bigint; y bigint;
	BEGIN
		PERFORM set_config('enable_seqscan', 'off', true);
		PERFORM set_config('gpuidx.device', 'cpu', true);
		EXECUTE 'SELECT count(*) FROM many WHERE body @@& $1' INTO x USING q;
		PERFORM set_config('gpuidx.device', 'worker', true);
		EXECUTE 'SELECT count(*) FROM many WHERE body @@& $1' INTO y USING q;
		RETURN x IS DISTINCT FROM y OR x = 0;
	END $$;
});
my $ev0 = $node->safe_psql('postgres', 'SELECT cache_evictions FROM gpuidx_worker_stats');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM generate_series(0, 39) a, generate_series(0, 39) b WHERE a < b AND many_differs(a, b)'),
	'0', 'with a 1 MB GPU list cache, 780 counts over 1.4 MB of lists through the worker equal the CPU\'s');
cmp_ok($node->safe_psql('postgres', 'SELECT cache_evictions FROM gpuidx_worker_stats') - $ev0, '>', 0,
	'lists were evicted to make room: '
	  . ($node->safe_psql('postgres', 'SELECT cache_evictions FROM gpuidx_worker_stats') - $ev0));
cmp_ok($node->safe_psql('postgres', 'SELECT cache_bytes FROM gpuidx_worker_stats'), '<=', 1024 * 1024,
	'and the cache stays within gpuidx.gpu_cache_size');

# A segment's doc lengths (4 bytes a doc at most) go to the worker's cache only when they surely
# take at most half of it: the 400,000 docs of many might take 1.6 MB of the 1 MB cache, and
# their rankings stay in the backend; those of 50,000 docs (at most 200 kB) go to the worker.
$node->safe_psql('postgres', q{
	CREATE TABLE few AS SELECT id, body FROM many WHERE id <= 50000;
	CREATE INDEX few_idx ON few USING gpuidx (body);
	VACUUM few;
});
foreach my $case (['many', 0], ['few', 1])
{
	my ($table, $on_worker) = @$case;
	my $sql = "SELECT string_agg(id::text, ',') FROM (SELECT id FROM $table ORDER BY body <=> 't3 t7' LIMIT 10) s";
	my $r0 = stats()->{requests};
	my $worker = $node->safe_psql('postgres', "SET gpuidx.device = worker; $sql");
	my $sent = stats()->{requests} - $r0;
	is($worker, $node->safe_psql('postgres', "SET gpuidx.device = cpu; $sql"),
		"$table: the top 10 equals the backend's");
	is($sent, $on_worker, $on_worker ? "$table: its ranking went to the worker" : "$table: its ranking stayed in the backend");
}

# 8. a fast shutdown stops the engine process too
my $engine = stats()->{pid};
my $t0 = time();
$node->stop('fast');
cmp_ok(time() - $t0, '<', 10, 'a fast shutdown is quick');
ok(!kill(0, $engine), 'and leaves no engine process behind');
unlike(slurp_file($node->logfile), qr/terminated by signal|PANIC/, 'no backend crashed');
done_testing();
