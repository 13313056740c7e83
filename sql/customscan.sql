-- The gpuidx custom scan: "column @@& query" on a gpuidx-indexed column,
-- answered from the index one TID at a time; count(*) and EXISTS leave
-- all-visible heap pages unread; every answer equals a sequential scan's,
-- after deletes, updates and VACUUM
SET client_min_messages = warning;
CREATE TABLE cs (id int PRIMARY KEY, body text, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO cs
SELECT g, 'w' || (g % 7) || ' v' || (g % 13) || ' u' || g,
       to_tsvector('english', 'w' || (g % 7) || ' v' || (g % 13) || ' u' || g)
FROM generate_series(1, 20000) g;
CREATE INDEX cs_body ON cs USING gpuidx (body);
CREATE INDEX cs_tsv ON cs USING gpuidx (tsv);
VACUUM ANALYZE cs;

-- the same count three ways: the custom scan, a bitmap scan, row by row
CREATE FUNCTION counts(q text, OUT custom bigint, OUT bitmap bigint, OUT seq bigint)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	PERFORM set_config('gpuidx.enable_customscan', 'on', true);
	EXECUTE 'SELECT count(*) FROM cs WHERE body @@& $1' INTO custom USING q;
	PERFORM set_config('gpuidx.enable_customscan', 'off', true);
	EXECUTE 'SELECT count(*) FROM cs WHERE body @@& $1' INTO bitmap USING q;
	PERFORM set_config('enable_seqscan', 'on', true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	PERFORM set_config('enable_indexscan', 'off', true);
	EXECUTE 'SELECT count(*) FROM cs WHERE body @@& $1' INTO seq USING q;
END $$;

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5';
-- all-visible: the heap is not read at all
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5';
SELECT * FROM counts('w3 v5');
EXPLAIN (COSTS OFF) SELECT EXISTS (SELECT 1 FROM cs WHERE body @@& 'u77');
SELECT EXISTS (SELECT 1 FROM cs WHERE body @@& 'u77'), EXISTS (SELECT 1 FROM cs WHERE body @@& 'u77 w1');
-- a column needed: every row fetched; other conditions filter the rows (the
-- bitmap scan, which reads rows a page at a time, is cheaper here: off)
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM cs WHERE body @@& 'w3 v5' AND id % 2 = 0;
SELECT count(*), min(id), max(id) FROM cs WHERE body @@& 'w3 v5' AND id % 2 = 0;
RESET enable_bitmapscan;
-- LIMIT stops early
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT id FROM cs WHERE body @@& 'w3' LIMIT 3;
-- a tsvector column
EXPLAIN (COSTS OFF) SELECT count(*) FROM cs WHERE tsv @@& 'w3 v5';
SELECT count(*) FROM cs WHERE tsv @@& 'w3 v5';
-- no lexemes, no term in the index
SELECT count(*) FROM cs WHERE body @@& 'the';
SELECT count(*) FROM cs WHERE body @@& 'nosuchword';

-- deletes, updates (in the pending area), VACUUM: the same counts as row by row
DELETE FROM cs WHERE id % 10 = 0;
UPDATE cs SET body = body || ' edited', tsv = tsv || to_tsvector('english', 'edited') WHERE id % 10 = 1;
INSERT INTO cs SELECT g, 'w3 v5 fresh u' || g, to_tsvector('english', 'w3 v5 fresh u' || g) FROM generate_series(20001, 20100) g;
SELECT * FROM counts('w3 v5');
SELECT * FROM counts('edited w2');
SELECT * FROM counts('fresh');
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5';
VACUUM cs;
SELECT * FROM counts('w3 v5');
SELECT * FROM counts('edited w2');
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5';

-- a few pages not all-visible: the segment's doc map chunks whose rows
-- cannot lie on them are counted from the index without their TIDs, the
-- others' rows mapped, and read where the visibility map is in doubt
UPDATE cs SET body = 'w3 v5 u31 moved' WHERE id = 31;
INSERT INTO cs VALUES (30001, 'w3 v5 late', NULL);
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5';
SELECT * FROM counts('w3 v5');
SELECT * FROM counts('moved');
DELETE FROM cs WHERE id = 30001;
VACUUM cs;

-- another transaction's uncommitted rows are not counted, even on pages once all-visible
BEGIN;
INSERT INTO cs VALUES (30000, 'w3 v5 uncommitted', NULL);
SELECT * FROM counts('uncommitted');
ROLLBACK;
SELECT * FROM counts('uncommitted');

-- a prepared statement planned under one configuration, run under another:
-- the index cannot answer, every row is checked, the answer is right
SET plan_cache_mode = force_generic_plan;
PREPARE by_body(text) AS SELECT count(*) FROM cs WHERE body @@& $1;
EXECUTE by_body('w3 v5');
SET gpuidx.text_config = 'simple';
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) EXECUTE by_body('w3 v5');
EXECUTE by_body('w3 v5');
RESET gpuidx.text_config;
DEALLOCATE by_body;
RESET plan_cache_mode;

-- count(*) alone is counted inside the scan; anything more keeps the Aggregate
EXPLAIN (COSTS OFF) SELECT count(*) + 1 FROM cs WHERE body @@& 'w3 v5';
EXPLAIN (COSTS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5' HAVING count(*) > 1;
EXPLAIN (COSTS OFF) SELECT count(id) FROM cs WHERE body @@& 'w3 v5';
EXPLAIN (COSTS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5' AND now() < '2000-01-01';
SELECT count(*) + 1, (SELECT count(*) FROM cs WHERE body @@& 'w3 v5' AND now() < '2000-01-01')
FROM cs WHERE body @@& 'w3 v5';

-- a query from the outer row: the scan is run again for each
EXPLAIN (COSTS OFF) SELECT q, (SELECT count(*) FROM cs WHERE body @@& v.q) FROM (VALUES ('u5'), ('w3 v5'), ('the')) v(q);
SELECT q, (SELECT count(*) FROM cs WHERE body @@& v.q) FROM (VALUES ('u5'), ('w3 v5'), ('the')) v(q);

-- the rows' identity: ctid, tableoid, xmin (rows come in the table's own
-- slots), UPDATE, DELETE and FOR UPDATE through the custom scan
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT ctid, tableoid, xmin, id FROM cs WHERE body @@& 'u77';
SELECT c.ctid = s.ctid AS same_ctid, c.tableoid::regclass, c.xmin = s.xmin AS same_xmin
FROM (SELECT ctid, tableoid, xmin, id FROM cs WHERE body @@& 'u77') c
JOIN (SELECT ctid, xmin, id FROM cs WHERE id = 77) s USING (id);
EXPLAIN (COSTS OFF) UPDATE cs SET body = body || ' renamed' WHERE body @@& 'u77';
UPDATE cs SET body = body || ' renamed' WHERE body @@& 'u77' RETURNING id, body;
DELETE FROM cs WHERE body @@& 'u78' RETURNING id;
SELECT id FROM cs WHERE body @@& 'u79' FOR UPDATE;
SELECT * FROM counts('renamed');
SELECT * FROM counts('u78');
RESET enable_bitmapscan;

-- turned off: the index's bitmap scan
SET gpuidx.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5';
RESET gpuidx.enable_customscan;
-- under another configuration the text index is not chosen
SET gpuidx.text_config = 'simple';
EXPLAIN (COSTS OFF) SELECT count(*) FROM cs WHERE body @@& 'w3 v5';
RESET gpuidx.text_config;
RESET enable_seqscan;
DROP FUNCTION counts(text);
DROP TABLE cs;

-- a query taken from another table's rows: the bitmap path that stands in
-- for the plain index path is parameterized as that path was (it read the
-- other table's column against its own rows and crashed)
CREATE TABLE csd (id int, body text);
INSERT INTO csd SELECT g, 'kernel module ' || g FROM generate_series(1, 1000) g;
CREATE INDEX ON csd USING gpuidx (body);
CREATE TABLE csq (q text);
INSERT INTO csq VALUES ('kernel'), ('module'), ('17');
ANALYZE csd, csq;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM csd, csq WHERE csd.body @@& csq.q;
SELECT count(*) FROM csd, csq WHERE csd.body @@& csq.q;
SELECT q, (SELECT count(*) FROM csd WHERE body @@& csq.q) FROM csq ORDER BY q;
RESET enable_seqscan;
SET gpuidx.enable_customscan = off;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM csd, csq WHERE csd.body @@& csq.q;
RESET gpuidx.enable_customscan;
RESET enable_indexscan;
RESET enable_bitmapscan;
DROP TABLE csd, csq;

-- every scan of the index counts in pg_stat_*_indexes.idx_scan, so that a
-- DBA does not take it for unused: the custom scan, a bitmap scan, a ranked scan
CREATE TABLE css (id int, body text);
INSERT INTO css SELECT g, 'kernel module ' || g FROM generate_series(1, 1000) g;
CREATE INDEX css_idx ON css USING gpuidx (body);
VACUUM ANALYZE css;
SET enable_seqscan = off;
BEGIN;
SELECT count(*) FROM css WHERE body @@& 'kernel';
SELECT pg_stat_get_xact_numscans('css_idx'::regclass) AS idx_scans;
SET LOCAL gpuidx.enable_customscan = off;
SELECT count(*) FROM css WHERE body @@& 'module';
SELECT pg_stat_get_xact_numscans('css_idx'::regclass) AS idx_scans;
RESET gpuidx.enable_customscan;
SELECT id FROM css ORDER BY body <=> 'module 7' LIMIT 1;
SELECT pg_stat_get_xact_numscans('css_idx'::regclass) AS idx_scans;
COMMIT;
RESET enable_seqscan;
DROP TABLE css;
