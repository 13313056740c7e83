-- the gpuidx access method: creating indexes, operator classes, reloptions,
-- what the index holds, and what it refuses
\set VERBOSITY default
SET client_min_messages = warning;

CREATE TABLE ddl (id int PRIMARY KEY, body text, tsv tsvector, n int, v varchar)
  WITH (autovacuum_enabled = off);
INSERT INTO ddl
SELECT g, 'document ' || g || ' about ' || (ARRAY['gpu','index','postgres','search','query'])[1 + g % 5],
       to_tsvector('english', 'vector ' || g), g, 'varchar ' || g
FROM generate_series(1, 100) g;
INSERT INTO ddl VALUES (101, NULL, NULL, NULL, NULL);

-- default operator classes for text and tsvector
CREATE INDEX ddl_body ON ddl USING gpuidx (body);
CREATE INDEX ddl_tsv ON ddl USING gpuidx (tsv);
SELECT c.relname, o.opcname, o.opcdefault
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_opclass o ON o.oid = i.indclass[0]
WHERE i.indrelid = 'ddl'::regclass AND c.relname LIKE 'ddl\_%' ORDER BY 1;
SELECT config, kind, segments, docs, dead_docs, terms, pending_entries FROM gpuidx_index_stats('ddl_body');
SELECT config, kind, segments, docs, terms FROM gpuidx_index_stats('ddl_tsv');
SELECT segment, docs, terms, postings, inline_lists + external_lists AS lists FROM gpuidx_segments('ddl_body');

-- expression, partial and binary-coercible (varchar) indexes
CREATE INDEX ddl_lower ON ddl USING gpuidx (lower(body)) WHERE id > 50;
CREATE INDEX ddl_varchar ON ddl USING gpuidx (v);
SELECT docs FROM gpuidx_index_stats('ddl_lower');
SELECT docs FROM gpuidx_index_stats('ddl_varchar');

-- reloptions: the codec of long lists and the pending area's size
CREATE INDEX ddl_ef ON ddl USING gpuidx (body) WITH (codec = ef);
CREATE INDEX ddl_lrc ON ddl USING gpuidx (body) WITH (codec = lrc, pending_list_limit = 64);
CREATE INDEX ddl_raw ON ddl USING gpuidx (body) WITH (codec = 'raw', pending_list_limit = 2097151);
SELECT relname, reloptions FROM pg_class WHERE relname IN ('ddl_ef', 'ddl_lrc', 'ddl_raw') ORDER BY 1;
ALTER INDEX ddl_ef SET (pending_list_limit = 128);
ALTER INDEX ddl_ef RESET (codec);
SELECT reloptions FROM pg_class WHERE relname = 'ddl_ef';
CREATE INDEX ddl_bad ON ddl USING gpuidx (body) WITH (codec = zstd);
CREATE INDEX ddl_bad ON ddl USING gpuidx (body) WITH (pending_list_limit = 63);
CREATE INDEX ddl_bad ON ddl USING gpuidx (body) WITH (pending_list_limit = 2147483648);
CREATE INDEX ddl_bad ON ddl USING gpuidx (body) WITH (pending_list_limit = 'lots');
CREATE INDEX ddl_bad ON ddl USING gpuidx (body) WITH (fillfactor = 50);
ALTER INDEX ddl_ef SET (codec = 'none');

-- what gpuidx does not do
CREATE INDEX ddl_bad ON ddl USING gpuidx (n);
CREATE INDEX ddl_bad ON ddl USING gpuidx (body, tsv);
CREATE INDEX ddl_bad ON ddl USING gpuidx (body) INCLUDE (n);
CREATE UNIQUE INDEX ddl_bad ON ddl USING gpuidx (body);
CREATE INDEX ddl_bad ON ddl USING gpuidx (body text_pattern_ops);
SELECT gpuidx_index_stats('ddl_pkey');
SELECT gpuidx_merge_pending('ddl');
SELECT gpuidx_verify('ddl_pkey');
SELECT gpuidx_verify(0);

-- the index records its configuration and depends on it (the schema given:
-- from PostgreSQL 17 an index is built with search_path = pg_catalog, pg_temp)
CREATE TEXT SEARCH CONFIGURATION ddl_cfg (COPY = simple);
SET gpuidx.text_config = 'public.ddl_cfg';
CREATE INDEX ddl_cfg_idx ON ddl USING gpuidx (body);
RESET gpuidx.text_config;
SELECT config FROM gpuidx_index_stats('ddl_cfg_idx');
DROP TEXT SEARCH CONFIGURATION ddl_cfg;
DROP TEXT SEARCH CONFIGURATION ddl_cfg CASCADE;
SELECT count(*) FROM pg_class WHERE relname = 'ddl_cfg_idx';

-- a setting naming no configuration is refused
SET gpuidx.text_config = 'no_such_config';
SET gpuidx.text_config = 'a.b.c';
SHOW gpuidx.text_config;

-- REINDEX, CREATE INDEX CONCURRENTLY, unlogged and temporary tables
REINDEX INDEX ddl_body;
SELECT docs, terms FROM gpuidx_index_stats('ddl_body');
CREATE INDEX CONCURRENTLY ddl_conc ON ddl USING gpuidx (body);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'ddl_conc'::regclass;
SELECT docs FROM gpuidx_index_stats('ddl_conc');
CREATE UNLOGGED TABLE ddl_unlogged (body text);
CREATE INDEX ON ddl_unlogged USING gpuidx (body);
INSERT INTO ddl_unlogged VALUES ('unlogged rows are indexed too');
CREATE TEMP TABLE ddl_temp (body text);
CREATE INDEX ddl_temp_idx ON ddl_temp USING gpuidx (body);
INSERT INTO ddl_temp SELECT 'temporary row ' || g FROM generate_series(1, 500) g;
SET enable_seqscan = off;
SELECT count(*) FROM ddl_unlogged WHERE body @@& 'indexed rows';
SELECT count(*) FROM ddl_temp WHERE body @@& 'temporary row';
SELECT gpuidx_verify('ddl_temp_idx') LIKE '%is sound%' AS sound;
RESET enable_seqscan;

-- the build stays within maintenance_work_mem: past it, sorted runs spill to
-- temporary files; the index does not depend on the budget
CREATE TABLE ddl_mem (body text) WITH (autovacuum_enabled = off);
INSERT INTO ddl_mem SELECT 'row' || g || ' term' || (g % 1009) || ' word' || (g % 7919) || ' common'
FROM generate_series(1, 60000) g;
SET maintenance_work_mem = '1MB';
CREATE INDEX ddl_mem_small ON ddl_mem USING gpuidx (body);
SET maintenance_work_mem = '64MB';
CREATE INDEX ddl_mem_large ON ddl_mem USING gpuidx (body);
SELECT build_runs > 1 AS spilled, build_peak_kb <= 1024 AS within_1mb FROM gpuidx_index_stats('ddl_mem_small');
SELECT build_runs AS runs_with_64mb FROM gpuidx_index_stats('ddl_mem_large');
RESET maintenance_work_mem;
SELECT (SELECT total_bytes FROM gpuidx_index_stats('ddl_mem_small')) =
       (SELECT total_bytes FROM gpuidx_index_stats('ddl_mem_large')) AS same_size;
SELECT gpuidx_verify('ddl_mem_small') LIKE '%is sound%60000 rows%' AS sound;
DROP TABLE ddl_mem;

-- long lists are encoded as their postings come, in every codec, past
-- 16 kB through temporary files: each list checked whole by gpuidx_verify,
-- and the index answers as a sequential scan does
CREATE TABLE ddl_long (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO ddl_long SELECT g, 'row' || g
	|| CASE WHEN g % 2 = 0 THEN ' even' ELSE '' END
	|| CASE WHEN (g::bigint * 7919) % 1000 < 300 THEN ' scattered' ELSE '' END
FROM generate_series(1, 150000) g;
SET maintenance_work_mem = '1MB';
CREATE INDEX ddl_long_ef ON ddl_long USING gpuidx (body) WITH (codec = ef);
CREATE INDEX ddl_long_lrc ON ddl_long USING gpuidx (body) WITH (codec = lrc);
CREATE INDEX ddl_long_raw ON ddl_long USING gpuidx (body) WITH (codec = raw);
RESET maintenance_work_mem;
SELECT i.name, s.external_lists > 0 AS external, s.postings
FROM (VALUES ('ddl_long_ef'), ('ddl_long_lrc'), ('ddl_long_raw')) i(name), gpuidx_segments(i.name::regclass) s;
SELECT name, gpuidx_verify(name::regclass) LIKE '%is sound%150000 rows%' AS sound
FROM (VALUES ('ddl_long_ef'), ('ddl_long_lrc'), ('ddl_long_raw')) i(name);
SET enable_seqscan = off;
SELECT count(*) AS scattered_even FROM ddl_long WHERE body @@& 'scattered even';
DROP INDEX ddl_long_ef;
SELECT count(*) AS scattered_even FROM ddl_long WHERE body @@& 'scattered even';
DROP INDEX ddl_long_lrc;
SELECT count(*) AS scattered_even FROM ddl_long WHERE body @@& 'scattered even';
RESET enable_seqscan;
SET enable_bitmapscan = off;
SELECT count(*) AS scattered_even FROM ddl_long WHERE body @@& 'scattered even';
RESET enable_bitmapscan;
DROP TABLE ddl_long;

-- memory follows the data, not the budget: the largest maintenance_work_mem
-- builds and vacuums a small table in a few hundred kB
CREATE TABLE ddl_huge_mem (body text) WITH (autovacuum_enabled = off);
INSERT INTO ddl_huge_mem SELECT 'row' || g || ' common' FROM generate_series(1, 1000) g;
SET maintenance_work_mem = '6GB';
CREATE INDEX ddl_huge_mem_6gb ON ddl_huge_mem USING gpuidx (body);
SET maintenance_work_mem = '2147483647kB';
CREATE INDEX ddl_huge_mem_max ON ddl_huge_mem USING gpuidx (body);
SELECT build_peak_kb < 2048 AS small_peak FROM gpuidx_index_stats('ddl_huge_mem_6gb');
SELECT build_peak_kb < 2048 AS small_peak FROM gpuidx_index_stats('ddl_huge_mem_max');
INSERT INTO ddl_huge_mem SELECT 'more' || g FROM generate_series(1, 100) g;
DELETE FROM ddl_huge_mem WHERE body LIKE 'row1%';
-- VACUUM removes the deleted rows once no snapshot from before the DELETE
-- is left: on a busy server (autovacuum analyzing the tables of the tests
-- before) wait for those to end first
CREATE PROCEDURE ddl_older_snapshots_ended() LANGUAGE plpgsql AS $$
DECLARE
  mark xid := xid(pg_current_xact_id());
BEGIN
  COMMIT;
  FOR i IN 1..600 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid <> pg_backend_pid()
                          AND (age(backend_xmin) >= age(mark) OR age(backend_xid) >= age(mark)));
    COMMIT;    -- a new transaction sees pg_stat_activity anew
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
CALL ddl_older_snapshots_ended();
DROP PROCEDURE ddl_older_snapshots_ended();
VACUUM ddl_huge_mem;
RESET maintenance_work_mem;
SELECT pending_entries, dead_docs FROM gpuidx_index_stats('ddl_huge_mem_max');
SELECT gpuidx_verify('ddl_huge_mem_max') LIKE '%is sound%' AS sound;
DROP TABLE ddl_huge_mem;

-- an empty table
CREATE TABLE ddl_empty (body text);
CREATE INDEX ddl_empty_idx ON ddl_empty USING gpuidx (body);
SELECT segments, docs, terms, pending_entries FROM gpuidx_index_stats('ddl_empty_idx');
SELECT gpuidx_verify('ddl_empty_idx');

-- a table created in this transaction is truncated in place: its index is
-- built again in the same file, its segment ids anew, and what lookups of
-- the old index remembered must not answer for the new one
BEGIN;
CREATE TABLE ddl_again (id int, body text);
CREATE INDEX ddl_again_idx ON ddl_again USING gpuidx (body);
INSERT INTO ddl_again SELECT g, 'alpha beta ' || g FROM generate_series(1, 30) g;
SELECT gpuidx_merge_pending('ddl_again_idx');
SELECT segment, docs FROM gpuidx_segments('ddl_again_idx');
SET LOCAL enable_seqscan = off;
SELECT count(*) FROM ddl_again WHERE body @@& 'alpha';
SELECT count(*) FROM ddl_again WHERE body @@& 'gamma';
TRUNCATE ddl_again;
INSERT INTO ddl_again SELECT g, 'gamma ' || g FROM generate_series(1, 30) g;
SELECT gpuidx_merge_pending('ddl_again_idx');
SELECT segment, docs FROM gpuidx_segments('ddl_again_idx');
SELECT count(*) FROM ddl_again WHERE body @@& 'alpha';
SELECT count(*) FROM ddl_again WHERE body @@& 'gamma';
COMMIT;
DROP TABLE ddl_again;

DROP TABLE ddl, ddl_unlogged, ddl_empty;
