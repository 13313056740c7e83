-- A parallel build (max_parallel_maintenance_workers, the table's
-- parallel_workers) cuts the table into ranges of blocks, one sorted run
-- each, merged in heap order: it writes the serial build's index, every page
-- but the metapage the same bytes past the page's LSN and checksum.
CREATE EXTENSION IF NOT EXISTS pageinspect;
CREATE FUNCTION bp_pages_differ(a regclass, b regclass) RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM generate_series(1, pg_relation_size(a) / 8192 - 1) blk
	WHERE substr(get_raw_page(a::text, blk), 11) IS DISTINCT FROM substr(get_raw_page(b::text, blk), 11)
$$;
CREATE FUNCTION bp_same(a regclass, b regclass) RETURNS TABLE (same_size boolean, pages_differ bigint)
LANGUAGE sql AS $$
	SELECT pg_relation_size(a) = pg_relation_size(b), bp_pages_differ(a, b)
$$;

CREATE TABLE bp (id int, body text, doc tsvector)
	WITH (autovacuum_enabled = off, parallel_workers = 3);
INSERT INTO bp SELECT g, b, to_tsvector('english', b)
FROM generate_series(1, 40000) g,
	LATERAL (SELECT 'row' || g || ' term' || (g % 1009) || ' word' || (g % 7919)
		|| CASE WHEN g % 3 = 0 THEN ' three threes' ELSE '' END
		|| CASE WHEN g % 1000 = 0 THEN repeat(' long', 50) ELSE '' END) v(b);
-- rows the build leaves out (dead) and rows it keeps (live)
DELETE FROM bp WHERE id % 11 = 0;

SET max_parallel_maintenance_workers = 0;
CREATE INDEX bp_serial ON bp USING gpuidx (body);
CREATE INDEX bp_serial_tsv ON bp USING gpuidx (doc) WITH (codec = ef);
CREATE INDEX bp_serial_expr ON bp USING gpuidx (to_tsvector('english', body));
CREATE INDEX bp_serial_part ON bp USING gpuidx (body) WHERE id % 2 = 0;
SET maintenance_work_mem = '1MB';
CREATE INDEX bp_serial_small ON bp USING gpuidx (body);
RESET maintenance_work_mem;

SET max_parallel_maintenance_workers = 3;
CREATE INDEX bp_parallel ON bp USING gpuidx (body);
CREATE INDEX bp_parallel_tsv ON bp USING gpuidx (doc) WITH (codec = ef);
CREATE INDEX bp_parallel_expr ON bp USING gpuidx (to_tsvector('english', body));
CREATE INDEX bp_parallel_part ON bp USING gpuidx (body) WHERE id % 2 = 0;
-- a quarter of 1 MB each: every range spills runs and merges them itself
SET maintenance_work_mem = '1MB';
CREATE INDEX bp_parallel_small ON bp USING gpuidx (body);
RESET maintenance_work_mem;

-- one run per range of the parallel builds (four ranges: three workers and
-- the leader), none spilled by the serial ones; more when the budget is small
SELECT i, s.build_runs
FROM unnest(ARRAY['bp_serial', 'bp_parallel', 'bp_parallel_tsv', 'bp_parallel_expr', 'bp_parallel_part']) i,
	gpuidx_index_stats(i::regclass) s;
SELECT build_runs > 4 AS spilled_in_ranges FROM gpuidx_index_stats('bp_parallel_small');

SELECT 'text' AS index, * FROM bp_same('bp_serial', 'bp_parallel')
UNION ALL SELECT 'tsvector', * FROM bp_same('bp_serial_tsv', 'bp_parallel_tsv')
UNION ALL SELECT 'expression', * FROM bp_same('bp_serial_expr', 'bp_parallel_expr')
UNION ALL SELECT 'partial', * FROM bp_same('bp_serial_part', 'bp_parallel_part')
UNION ALL SELECT '1MB', * FROM bp_same('bp_serial_small', 'bp_parallel_small');
SELECT i, gpuidx_verify(i::regclass) LIKE '%is sound%' AS sound
FROM unnest(ARRAY['bp_parallel', 'bp_parallel_tsv', 'bp_parallel_expr', 'bp_parallel_part', 'bp_parallel_small']) i;

-- the index answers as the table does
SELECT count(*) FROM bp WHERE body @@& 'three term7';
SET enable_seqscan = off;
SET gpuidx.enable_customscan = off;
DROP INDEX bp_serial, bp_serial_small, bp_parallel_small, bp_serial_part, bp_parallel_part;
EXPLAIN (COSTS OFF) SELECT count(*) FROM bp WHERE body @@& 'three term7';
SELECT count(*) FROM bp WHERE body @@& 'three term7';
SELECT count(*) FROM bp WHERE doc @@ to_tsquery('english', 'three & long');
SELECT count(*) FROM bp WHERE to_tsvector('english', body) @@ to_tsquery('english', 'term7 & !three');
RESET enable_seqscan;
RESET gpuidx.enable_customscan;

-- REINDEX and CREATE INDEX CONCURRENTLY build in parallel too
REINDEX INDEX bp_parallel;
SELECT build_runs FROM gpuidx_index_stats('bp_parallel');
CREATE INDEX CONCURRENTLY bp_concurrent ON bp USING gpuidx (body);
SELECT build_runs FROM gpuidx_index_stats('bp_concurrent');
SET max_parallel_maintenance_workers = 0;
CREATE INDEX bp_serial ON bp USING gpuidx (body);
SELECT * FROM bp_same('bp_serial', 'bp_concurrent');
SELECT * FROM bp_same('bp_serial', 'bp_parallel');

-- more ranges than blocks: the empty ones add nothing; an empty table
CREATE TABLE bp_tiny (body text) WITH (parallel_workers = 3);
INSERT INTO bp_tiny VALUES ('one row'), ('two rows');
SET max_parallel_maintenance_workers = 3;
CREATE INDEX bp_tiny_idx ON bp_tiny USING gpuidx (body);
SELECT build_runs, docs FROM gpuidx_index_stats('bp_tiny_idx');
SELECT gpuidx_verify('bp_tiny_idx') LIKE '%is sound%2 rows%' AS sound;
TRUNCATE bp_tiny;
REINDEX INDEX bp_tiny_idx;
SELECT build_runs, docs FROM gpuidx_index_stats('bp_tiny_idx');
RESET max_parallel_maintenance_workers;

-- a row this transaction updated in place (HOT): the build leaves the old
-- version out and the index must not serve older snapshots (indcheckxmin),
-- whichever participant scanned it (the update is in the last range)
CREATE TABLE bp_hot (id int, body text, n int) WITH (parallel_workers = 3, fillfactor = 50);
INSERT INTO bp_hot SELECT g, 'row' || g, 0 FROM generate_series(1, 20000) g;
BEGIN;
UPDATE bp_hot SET n = 1 WHERE id = 19999;
SET LOCAL max_parallel_maintenance_workers = 3;
CREATE INDEX bp_hot_idx ON bp_hot USING gpuidx (body);
COMMIT;
SELECT indcheckxmin FROM pg_index WHERE indexrelid = 'bp_hot_idx'::regclass;
SELECT build_runs, docs FROM gpuidx_index_stats('bp_hot_idx');

-- VACUUM FULL and CLUSTER rebuild the index in parallel too, into the new heap
CREATE TABLE bp_full (id int PRIMARY KEY, body text) WITH (parallel_workers = 3, autovacuum_enabled = off);
INSERT INTO bp_full SELECT g, 'row u' || g || ' tag' || (g % 13) FROM generate_series(1, 30000) g;
DELETE FROM bp_full WHERE id % 3 = 0;
SET max_parallel_maintenance_workers = 3;
CREATE INDEX bp_full_idx ON bp_full USING gpuidx (body);
VACUUM FULL bp_full;
SELECT build_runs, docs FROM gpuidx_index_stats('bp_full_idx');
CLUSTER bp_full USING bp_full_pkey;
SELECT build_runs, docs FROM gpuidx_index_stats('bp_full_idx');
RESET max_parallel_maintenance_workers;
SELECT gpuidx_verify('bp_full_idx') LIKE '%is sound%20000 rows%' AS sound;
SELECT count(*) FROM bp_full WHERE body @@& 'tag3';
-- the same from the table alone
SET gpuidx.enable_customscan = off;
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SELECT count(*) FROM bp_full WHERE body @@& 'tag3';
RESET gpuidx.enable_customscan;
RESET enable_bitmapscan;
RESET enable_indexscan;

DROP TABLE bp, bp_tiny, bp_hot, bp_full;
DROP FUNCTION bp_same(regclass, regclass);
DROP FUNCTION bp_pages_differ(regclass, regclass);
DROP EXTENSION pageinspect;
