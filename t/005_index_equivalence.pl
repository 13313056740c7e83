# The core proof: on a real corpus (GCIDE's 203,641 dictionary entries, from
# the project's data fetcher) and 560 of its real queries, a gpuidx index
# (its custom scan, its bitmap scan, and count(*) alone), a
# sequential scan evaluating @@& row by row, and GIN answering
# to_tsvector('english', body) @@ plainto_tsquery('english', q) return the
# same rows for every query, before and after rounds of random inserts,
# updates, deletes, merges and VACUUMs.  Skipped, with a notice, when the
# corpus is not there (GPUIDX_DATA, default ~/.cache/gpuidx-data), unless
# GPUIDX_REQUIRE_CORPUS=1 (scripts/test.sh sets it) makes that a failure.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $data = $ENV{GPUIDX_DATA} // "$ENV{HOME}/.cache/gpuidx-data";
my $corpus = $ENV{GPUIDX_EQUIV_CORPUS} // 'gcide';
my $docs_file = "$data/$corpus/docs.tsv";
my $queries_file = "$data/$corpus/queries.tsv";
if (!-r $docs_file || !-r $queries_file)
{
	BAIL_OUT("corpus $corpus not found under $data, and GPUIDX_REQUIRE_CORPUS is set")
	  if ($ENV{GPUIDX_REQUIRE_CORPUS} // '') eq '1';
	diag("NOTICE: corpus '$corpus' not found under $data: run scripts/data/fetch $corpus");
	plan skip_all => "corpus $corpus not available under $data";
}

my $node = PostgreSQL::Test::Cluster->new('equivalence');
$node->init;
$node->append_conf('postgresql.conf', q{
autovacuum = off
shared_buffers = 256MB
maintenance_work_mem = 128MB
work_mem = 32MB
max_parallel_workers_per_gather = 2
max_wal_size = 2GB
jit = off
});
$node->start;

my $t0 = time;
sub elapsed { return sprintf('%.0fs', time - $t0); }

$node->safe_psql('postgres', qq{
	CREATE EXTENSION gpuidx;
	CREATE TABLE src (id int PRIMARY KEY, body text);
	COPY src FROM '$docs_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
	CREATE TABLE qsrc (id int, terms text);
	COPY qsrc FROM '$queries_file' WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01');
});
my $nsrc = $node->safe_psql('postgres', 'SELECT count(*) FROM src');
my $ndocs = int($nsrc * 0.93);
cmp_ok($ndocs, '>=', 100000, "$ndocs documents of $corpus to start with (" . elapsed() . ')');

# the queries: every 20th of the file, and 60 made of two queries each
$node->safe_psql('postgres', qq{
	CREATE TABLE docs (id int PRIMARY KEY, body text);
	INSERT INTO docs SELECT id, body FROM src ORDER BY id LIMIT $ndocs;
	CREATE TABLE qs (qid int PRIMARY KEY, q text) WITH (parallel_workers = 0);
	INSERT INTO qs SELECT id, terms FROM qsrc WHERE id % 20 = 0;
	INSERT INTO qs SELECT 100000 + a.id, a.terms || ' ' || b.terms
	FROM qsrc a JOIN qsrc b ON b.id = a.id + 1 WHERE a.id % 50 = 7 ORDER BY a.id LIMIT 60;
	ANALYZE;
});
my $lexemes = $node->safe_psql('postgres', q{
	SELECT string_agg(n || ':' || c, ' ' ORDER BY n) FROM (
		SELECT n, count(*) c FROM (SELECT array_length(tsvector_to_array(to_tsvector('english', q)), 1) n FROM qs) x
		GROUP BY n) y});
my $nq = $node->safe_psql('postgres', 'SELECT count(*) FROM qs');
cmp_ok($nq, '>=', 500, "$nq queries (lexemes:queries $lexemes)");

$node->safe_psql('postgres', q{
	CREATE INDEX docs_gin ON docs USING gin (to_tsvector('english', body));
	CREATE INDEX docs_gpx ON docs USING gpuidx (body) WITH (pending_list_limit = 1024);
});
note('indexes built (' . elapsed() . ')');

# each method's rows per query, as (count, md5 of the sorted ids)
$node->safe_psql('postgres', q{
	CREATE FUNCTION answers(method text) RETURNS TABLE (qid int, n bigint, h text) LANGUAGE plpgsql AS $$
	DECLARE r record; pred text;
	BEGIN
		pred := CASE WHEN method LIKE 'gpuidx%' THEN 'body @@& $1'
			ELSE 'to_tsvector(''english'', body) @@ plainto_tsquery(''english'', $1)' END;
		SET LOCAL enable_seqscan = off;
		-- gpuidx: the custom scan (the default plan); gpuidx_bitmap: the index's bitmap scan
		PERFORM set_config('gpuidx.enable_customscan', (method <> 'gpuidx_bitmap')::text, true);
		-- the custom scan fetching rows, even where the bitmap scan is cheaper
		PERFORM set_config('enable_bitmapscan', (method <> 'gpuidx')::text, true);
		SET LOCAL client_min_messages = warning;
		FOR r IN SELECT qs.qid, qs.q FROM qs ORDER BY qs.qid LOOP
			qid := r.qid;
			EXECUTE format('SELECT count(*), md5(coalesce(string_agg(id::text, '','' ORDER BY id), '''')) FROM docs WHERE %s', pred)
				INTO n, h USING r.q;
			RETURN NEXT;
		END LOOP;
	END $$;
	-- count(*) alone: the custom scan counts all-visible pages' matches unread
	CREATE FUNCTION counts() RETURNS TABLE (qid int, n bigint) LANGUAGE plpgsql AS $$
	DECLARE r record;
	BEGIN
		SET LOCAL enable_seqscan = off;
		FOR r IN SELECT qs.qid, qs.q FROM qs ORDER BY qs.qid LOOP
			qid := r.qid;
			EXECUTE 'SELECT count(*) FROM docs WHERE body @@& $1' INTO n USING r.q;
			RETURN NEXT;
		END LOOP;
	END $$;
});

sub differing
{
	my ($a, $b) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) || coalesce(' (first: ' || min(q) || ')', '')
		FROM $a x JOIN $b y USING (qid) JOIN qs USING (qid) WHERE x.h <> y.h OR x.n <> y.n});
}

sub compare
{
	my ($step, $with_seq) = @_;
	$node->safe_psql('postgres', q{
		SET client_min_messages = warning;
		DROP TABLE IF EXISTS res_gpuidx, res_bitmap, res_count, res_gin;
		CREATE TABLE res_gpuidx AS SELECT * FROM answers('gpuidx');
		CREATE TABLE res_bitmap AS SELECT * FROM answers('gpuidx_bitmap');
		CREATE TABLE res_count AS SELECT * FROM counts();
		CREATE TABLE res_gin AS SELECT * FROM answers('gin');
	});
	my ($rows, $with) = split /\|/, $node->safe_psql('postgres',
		'SELECT sum(n), count(*) FILTER (WHERE n > 0) FROM res_gpuidx');
	is(differing('res_gpuidx', 'res_gin'), '0', "$step: gpuidx = GIN on $nq queries ($with with rows, $rows rows in all)");
	is(differing('res_bitmap', 'res_gin'), '0', "$step: gpuidx's bitmap scan = GIN");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM res_count c JOIN res_gin g USING (qid) WHERE c.n <> g.n'),
		'0', "$step: gpuidx's count(*) = GIN's");
	if ($with_seq)
	{
		# row by row: each document against every query, in parallel
		$node->safe_psql('postgres', q{
			SET enable_bitmapscan = off;
			SET enable_indexscan = off;
			SET enable_material = off;
			SET parallel_setup_cost = 0;
			SET parallel_tuple_cost = 0;
			SET min_parallel_table_scan_size = 0;
			SET client_min_messages = warning;
			DROP TABLE IF EXISTS pairs, res_seq;
			CREATE UNLOGGED TABLE pairs AS
				SELECT d.id, x.qid FROM docs d CROSS JOIN LATERAL (SELECT qid FROM qs WHERE d.body @@& qs.q) x;
			CREATE TABLE res_seq AS
				SELECT qs.qid, count(p.id) n, md5(coalesce(string_agg(p.id::text, ',' ORDER BY p.id), '')) h
				FROM qs LEFT JOIN pairs p USING (qid) GROUP BY qs.qid;
		});
		is(differing('res_gpuidx', 'res_seq'), '0', "$step: gpuidx = row-by-row @@& (" . elapsed() . ')');
	}
	note("$step compared (" . elapsed() . ')');
}

# the plans compared are the ones meant
like($node->safe_psql('postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	EXPLAIN SELECT id FROM docs WHERE body @@& 'water vessel'}), qr/Custom Scan \(gpuidx\) on docs.*\n\s+Index: docs_gpx/,
	'the gpuidx answers come from the gpuidx custom scan on the gpuidx index');
like($node->safe_psql('postgres', q{SET enable_seqscan = off; SET gpuidx.enable_customscan = off;
	EXPLAIN SELECT id FROM docs WHERE body @@& 'water vessel'}), qr/Bitmap Index Scan on docs_gpx/,
	'and, the custom scan off, from its bitmap scan');
like($node->safe_psql('postgres', q{SET enable_seqscan = off;
	EXPLAIN SELECT count(*) FROM docs WHERE body @@& 'water vessel'}), qr/Heap: only pages not all-visible/,
	'count(*) reads only pages not all-visible');
like($node->safe_psql('postgres', q{SET enable_seqscan = off;
	EXPLAIN SELECT id FROM docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', 'water vessel')}),
	qr/Bitmap Index Scan on docs_gin/, 'the GIN answers come from GIN');

compare('after the build', 1);

# rounds of random writes: new documents, changed ones, deleted ones
my $next = $ndocs;
for my $round (1 .. 3)
{
	my $first = $next + 1;
	$next += 4000;
	$node->safe_psql('postgres', qq{
		SELECT setseed(0.$round);
		INSERT INTO docs SELECT id, body FROM src WHERE id BETWEEN $first AND $next;
		UPDATE docs d SET body = s.body || ' ' || d.body
		FROM (SELECT id, (SELECT body FROM src WHERE id = 1 + (d2.id * 7919) % $nsrc) body
			  FROM docs d2 WHERE random() < 0.008) s WHERE s.id = d.id;
		DELETE FROM docs WHERE random() < 0.012;
	});
	$node->safe_psql('postgres', 'VACUUM docs') if $round >= 2;
	my $state = $node->safe_psql('postgres',
		"SELECT segments || ' segments, ' || dead_docs || ' dead docs, ' || pending_entries || ' pending'
		 FROM gpuidx_index_stats('docs_gpx')");
	compare("round $round ($state)", $round == 3);
}

like($node->safe_psql('postgres', "SELECT gpuidx_verify('docs_gpx')"), qr/is sound/,
	'gpuidx_verify: the index matches the table (' . elapsed() . ')');
$node->stop;
done_testing();
