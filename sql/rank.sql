-- Ranked search: gpuidx_bm25, the <=> ordering operator and its index scans
SET client_min_messages = warning;
SET extra_float_digits = 0;
CREATE TABLE rk (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
INSERT INTO rk VALUES
	(1, 'gpu index database'), (2, 'gpu gpu gpu'), (3, 'database systems for the gpu era'),
	(4, 'nothing here'), (5, NULL), (6, 'index index of the index'), (7, 'gpu'), (8, '');
INSERT INTO rk SELECT g, 'filler text number ' || g || CASE WHEN g % 10 = 0 THEN ' gpu' ELSE '' END
	FROM generate_series(9, 2000) g;
CREATE INDEX rk_body ON rk USING gpuidx (body);
ANALYZE rk;

-- the index serves ORDER BY doc <=> query, bound to it by the planner
EXPLAIN (COSTS OFF) SELECT id FROM rk ORDER BY body <=> 'gpu index' LIMIT 5;
SELECT id, round((-(body <=> 'gpu index'))::numeric, 6) AS score FROM rk ORDER BY body <=> 'gpu index' LIMIT 6;
-- the operator's value is minus the function's, to the last bit
SELECT bool_and(-(body <=> 'gpu index') = gpuidx_bm25(body, 'gpu index')) AS same_bits
	FROM (SELECT body FROM rk ORDER BY body <=> 'gpu index' LIMIT 50) s;
-- the same rows, order and values without the index (ties by heap order: ctid)
CREATE TEMP TABLE by_index AS
	SELECT row_number() OVER () AS n, id, body <=> 'gpu index' AS d FROM (SELECT id, body FROM rk ORDER BY body <=> 'gpu index' LIMIT 300) s;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM rk ORDER BY body <=> 'gpu index', ctid LIMIT 5;
CREATE TEMP TABLE by_seq AS
	SELECT row_number() OVER () AS n, id, body <=> 'gpu index' AS d FROM (SELECT id, body FROM rk ORDER BY body <=> 'gpu index', ctid LIMIT 300) s;
RESET enable_indexscan;
SELECT count(*) AS rows, count(*) FILTER (WHERE i.id = s.id AND i.d = s.d) AS same FROM by_index i JOIN by_seq s USING (n);
-- every row comes back: those without a query term after the scored ones
-- (score 0), the NULL document last
SELECT count(*), count(*) FILTER (WHERE d = 0) AS zero, count(*) FILTER (WHERE d IS NULL) AS no_doc FROM (SELECT body <=> 'gpu index' AS d FROM rk ORDER BY body <=> 'gpu index') s;
-- the index orders: the junk sort key is not computed again for each row
-- (a constant in the scan's output), a selected score is; WITH TIES keeps it
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM rk ORDER BY body <=> 'gpu index' LIMIT 5;
EXPLAIN (VERBOSE, COSTS OFF) SELECT id, body <=> 'gpu index' AS d FROM rk ORDER BY body <=> 'gpu index' LIMIT 5;
SELECT count(*) FROM (SELECT id FROM rk ORDER BY body <=> 'gpu index' FETCH FIRST 6 ROWS WITH TIES) s;
-- a prepared statement's plan is cached: run it past the custom plans, into the generic one
PREPARE ranked(text) AS SELECT id FROM rk ORDER BY body <=> $1 LIMIT 2;
EXECUTE ranked('gpu index'); EXECUTE ranked('gpu index'); EXECUTE ranked('gpu index'); EXECUTE ranked('gpu index');
EXECUTE ranked('gpu index'); EXECUTE ranked('gpu index'); EXECUTE ranked('gpu index'); EXECUTE ranked('gpu index');
DEALLOCATE ranked;
-- with @@&: only rows with every term, ranked
EXPLAIN (COSTS OFF) SELECT id FROM rk WHERE body @@& 'gpu index' ORDER BY body <=> 'gpu index' LIMIT 5;
SELECT id FROM rk WHERE body @@& 'gpu index' ORDER BY body <=> 'gpu index' LIMIT 5;
SELECT id FROM rk WHERE body @@& 'gpu' ORDER BY body <=> 'database' LIMIT 3;
-- a query without lexemes scores 0; NULLs are NULL
SELECT gpuidx_bm25('gpu index', 'the of', 'rk_body'), gpuidx_bm25(NULL::text, 'gpu', 'rk_body') IS NULL AS null_doc;
SELECT count(*) FROM (SELECT id FROM rk ORDER BY body <=> 'the of' LIMIT 10) s;

-- new rows count at once (pending area), deleted ones until VACUUM; rows
-- without lexemes too (their length is 0)
INSERT INTO rk VALUES (3001, 'gpu index pending row'), (3002, ''), (3003, 'the of');
-- pending rows with only some of the terms count in the frequencies of a
-- ranking restricted by @@&: the index's order is that of the scores
-- ('hello index': made frequent, 'index' weighs less than 'gpu', so
-- 'gpu gpu index' ranks above 'gpu index index')
INSERT INTO rk SELECT 3100 + g, 'hello index ' || g FROM generate_series(1, 400) g;
INSERT INTO rk VALUES (3601, 'gpu index index'), (3602, 'gpu gpu index');
SELECT id, round((-(body <=> 'gpu index'))::numeric, 6) AS score
	FROM rk WHERE body @@& 'gpu index' ORDER BY body <=> 'gpu index' LIMIT 3;
SELECT id FROM rk ORDER BY body <=> 'gpu index' LIMIT 3;
SELECT gpuidx_bm25(body, 'gpu index') > 0 AS scored FROM rk WHERE id = 3001;
CREATE TEMP TABLE before_delete AS SELECT gpuidx_bm25(body, 'gpu') AS s FROM rk WHERE id = 7;
DELETE FROM rk WHERE id BETWEEN 100 AND 1500;
SELECT (SELECT gpuidx_bm25(body, 'gpu') FROM rk WHERE id = 7) = s AS unchanged_before_vacuum FROM before_delete;
VACUUM rk;
SELECT (SELECT gpuidx_bm25(body, 'gpu') FROM rk WHERE id = 7) < s AS lower_after_vacuum FROM before_delete;
SELECT gpuidx_verify('rk_body') LIKE '%is sound%' AS sound;

-- live document frequencies once VACUUM marked docs dead: a short list's
-- dead docs found by testing its docs in the bitmap ('rare', 'w5'), a long
-- one's by reading every dead doc ('common', 'half'), both then remembered
-- by the backend for that count of dead docs (a long list's by every
-- backend, when gpuidx is preloaded); every score is the one an index built
-- on the live rows gives, on the first query, the second (what was
-- remembered), in a new connection, and after more deletes and VACUUM
CREATE TABLE rd (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO rd SELECT g, 'common ' || CASE WHEN g % 2 = 0 THEN 'half ' ELSE '' END ||
	CASE WHEN g % 100 = 0 THEN 'rare ' ELSE '' END || 'w' || (g % 997) FROM generate_series(1, 20000) g;
CREATE INDEX rd_body ON rd USING gpuidx (body);
CREATE FUNCTION rd_top(tab regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	top text;
BEGIN
	SET LOCAL enable_seqscan = off;
	EXECUTE format('SELECT string_agg(id || '':'' || s, '','' ORDER BY s DESC, id) FROM
		(SELECT id, -(body <=> ''common half rare w5'') AS s FROM %s ORDER BY body <=> ''common half rare w5'' LIMIT 300) x', tab)
		INTO top;
	RETURN top;
END $$;
DELETE FROM rd WHERE id % 101 = 0;
VACUUM rd;
CREATE TABLE rd_live AS SELECT * FROM rd ORDER BY id;
CREATE INDEX rd_live_body ON rd_live USING gpuidx (body);
SELECT rd_top('rd') = rd_top('rd_live') AS first_query_live_scores,
	rd_top('rd') = rd_top('rd_live') AS remembered_live_scores;
-- a new connection remembers nothing itself; with gpuidx preloaded it finds
-- the long lists' counts ('common', 'half') that the last one shared
\c -
SELECT rd_top('rd') = rd_top('rd_live') AS new_connection_live_scores;
DELETE FROM rd WHERE id % 7 = 0 OR id % 1000 = 0;
VACUUM rd;
DROP TABLE rd_live;
CREATE TABLE rd_live AS SELECT * FROM rd ORDER BY id;
CREATE INDEX rd_live_body ON rd_live USING gpuidx (body);
SELECT rd_top('rd') = rd_top('rd_live') AS after_more_dead_live_scores,
	(SELECT dead_docs FROM gpuidx_index_stats('rd_body')) AS dead_docs;
DROP TABLE rd, rd_live;
DROP FUNCTION rd_top(regclass);

-- k1 and b are index options, taken at the next query
SELECT round(gpuidx_bm25(body, 'gpu')::numeric, 6) FROM rk WHERE id = 2;
ALTER INDEX rk_body SET (k1 = 2.0, b = 0.0);
SELECT round(gpuidx_bm25(body, 'gpu')::numeric, 6) FROM rk WHERE id = 2;
ALTER INDEX rk_body RESET (k1, b);
ALTER INDEX rk_body SET (b = 1.5);

-- naming the index explicitly; ranking needs one
SELECT round(gpuidx_bm25('gpu gpu', 'gpu', 'rk_body')::numeric, 6);
SELECT gpuidx_bm25('gpu', 'gpu');
-- an index without frequencies answers @@& but cannot rank
CREATE TABLE rk2 (body text);
INSERT INTO rk2 VALUES ('gpu index'), ('index');
CREATE INDEX rk2_body ON rk2 USING gpuidx (body) WITH (freqs = off);
SET enable_seqscan = off;
SELECT count(*) FROM rk2 WHERE body @@& 'index';
SELECT body FROM rk2 ORDER BY body <=> 'gpu' LIMIT 1;
RESET enable_seqscan;
ALTER INDEX rk2_body SET (freqs = on);
REINDEX INDEX rk2_body;
SELECT body FROM rk2 ORDER BY body <=> 'gpu' LIMIT 1;

-- the rank custom scan runs the index's ordered scan: the same rows, order
-- and values as the index scan itself, rescanned with a new query each
-- time (a subquery per outer row), and EXPLAIN ANALYZE says where it ranked
SET enable_seqscan = off;
CREATE TEMP TABLE outer_q (q text);
INSERT INTO outer_q VALUES ('gpu'), ('index database'), ('gpu index'), ('nothing');
CREATE TEMP TABLE by_custom AS
	SELECT q, (SELECT array_agg(id::text || ':' || s) FROM
			   (SELECT id, -(body <=> o.q) AS s FROM rk ORDER BY body <=> o.q LIMIT 4) x) AS top
	FROM outer_q o;
EXPLAIN (COSTS OFF) SELECT q, (SELECT array_agg(id) FROM (SELECT id FROM rk ORDER BY body <=> o.q LIMIT 4) x) FROM outer_q o;
SET gpuidx.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM rk ORDER BY body <=> 'gpu' LIMIT 4;
SELECT count(*) AS differing FROM by_custom c
WHERE c.top IS DISTINCT FROM (SELECT array_agg(id::text || ':' || s) FROM
			   (SELECT id, -(body <=> c.q) AS s FROM rk ORDER BY body <=> c.q LIMIT 4) x);
RESET gpuidx.enable_customscan;
SELECT count(*) AS rescanned FROM by_custom WHERE top IS NOT NULL;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rk WHERE body @@& 'gpu' ORDER BY body <=> 'gpu' LIMIT 2;

-- the first top-k round is the LIMIT (with its OFFSET) when the scan's rows
-- are the query's; rows the table does not return (deleted, not yet
-- vacuumed) take a next, larger round: the same rows as the index scan
-- (customscan off), which ranks a top 32 first
CREATE TEMP TABLE lim_q (q text, lim int, off int);
INSERT INTO lim_q VALUES ('gpu', 3, 0), ('gpu', 10, 5), ('gpu index', 1, 0), ('index database', 7, 2),
	('gpu index', 40, 0), ('nothing here', 5, 0), ('gpu', 2000, 0);
CREATE FUNCTION lim_top(q text, lim int, off int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
	EXECUTE format('SELECT string_agg(id || '':'' || s, '','') FROM (SELECT id, -(body <=> %L) AS s FROM rk
		ORDER BY body <=> %L LIMIT %s OFFSET %s) x', q, q, lim, off) INTO r;
	RETURN r;
END $$;
CREATE TEMP TABLE lim_custom AS SELECT q, lim, off, lim_top(q, lim, off) AS top FROM lim_q;
SET gpuidx.enable_customscan = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE top = lim_top(q, lim, off)) AS same FROM lim_custom;
RESET gpuidx.enable_customscan;
-- (the index scan costs about as much on this small table: kept out)
SET enable_indexscan = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rk ORDER BY body <=> 'gpu index' LIMIT 3 OFFSET 2;
RESET enable_indexscan;
-- the best rows deleted: the first round (k 2) finds them gone, a second
-- one ranks further
BEGIN;
DELETE FROM rk WHERE id IN (SELECT id FROM rk ORDER BY body <=> 'gpu' LIMIT 6);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rk ORDER BY body <=> 'gpu' LIMIT 2;
CREATE TEMP TABLE lim_deleted AS SELECT lim_top('gpu', 2, 0) AS top;
SET LOCAL gpuidx.enable_customscan = off;
SELECT top = lim_top('gpu', 2, 0) AS same FROM lim_deleted;
ROLLBACK;
-- a condition the index does not take, a LIMIT the plan does not know, a
-- join: the scan's own first round
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rk WHERE id % 2 = 0 ORDER BY body <=> 'gpu' LIMIT 3;
PREPARE lim_param(int) AS SELECT id FROM rk ORDER BY body <=> 'gpu' LIMIT $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) EXECUTE lim_param(3);
RESET plan_cache_mode;
DEALLOCATE lim_param;
SELECT count(*) AS rows FROM (SELECT r.id FROM rk r JOIN outer_q o ON true ORDER BY r.body <=> 'gpu' LIMIT 3) x;
DROP FUNCTION lim_top(text, int, int);
RESET enable_seqscan;

-- tsvector documents
CREATE TABLE rkv (id int, doc tsvector);
INSERT INTO rkv VALUES (1, to_tsvector('english', 'gpu gpu index')), (2, 'gpu index'::tsvector), (3, to_tsvector('english', 'database'));
CREATE INDEX rkv_doc ON rkv USING gpuidx (doc);
SELECT id, -(doc <=> 'gpu') = gpuidx_bm25(doc, 'gpu') AS same FROM rkv ORDER BY doc <=> 'gpu';
-- a document that is another query level's column, an aggregate or a window
-- function names no index of this level: an error that says so, not an
-- internal one
SELECT (SELECT r.doc <=> 'gpu') IS NOT NULL FROM rkv r LIMIT 1;
SELECT gpuidx_bm25(max(doc::text), 'gpu') FROM rkv;
SELECT gpuidx_bm25(string_agg(doc::text, ' ') OVER (), 'gpu') FROM rkv LIMIT 1;
DROP TABLE rk, rk2, rkv;
