-- The scans and the planner know gpuidx's operators and functions by their
-- operator family and OIDs, never by name: a role with LOGIN only creates
-- operators and functions named like gpuidx's in its temporary schema, and
-- every answer is the one of a plan without gpuidx's scans; the server stays up
SET client_min_messages = warning;
SET extra_float_digits = 0;
CREATE TABLE oi (id int PRIMARY KEY, body text, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO oi SELECT g, 'word' || (g % 50) || ' common', to_tsvector('simple', 'word' || (g % 50) || ' common')
	FROM generate_series(1, 20000) g;
CREATE INDEX oi_body ON oi USING gpuidx (body);
CREATE INDEX oi_tsv ON oi USING gpuidx (tsv);
VACUUM ANALYZE oi;
CREATE ROLE regress_gpuidx_login LOGIN;

SET ROLE regress_gpuidx_login;
-- a twin of @@&'s function that takes an integer query: planning never treats it as @@&
CREATE FUNCTION pg_temp.gpuidx_match(d text, q int) RETURNS bool LANGUAGE plpgsql IMMUTABLE
	AS 'BEGIN RETURN false; END';
CREATE OPERATOR pg_temp.!@@ (LEFTARG = text, RIGHTARG = int, FUNCTION = pg_temp.gpuidx_match);
-- no privilege on the table: refused, as for any operator
SELECT count(*) FROM oi WHERE body OPERATOR(pg_temp.!@@) 5;
-- nor may it read an index's statistics (which terms the documents hold)
SELECT gpuidx_bm25('word1', 'word1', 'oi_body');
SELECT 'word1' <=> gpuidx_rank_query('word1', 'oi_tsv');
RESET ROLE;
-- the indexed column is enough
GRANT SELECT (id, body) ON oi TO regress_gpuidx_login;
SET ROLE regress_gpuidx_login;
SELECT gpuidx_bm25('word1', 'word1', 'oi_body') > 0 AS scored;
SELECT id FROM oi ORDER BY body <=> 'word1', id LIMIT 2;
SELECT gpuidx_bm25('word1'::tsvector, 'word1', 'oi_tsv');
RESET ROLE;
GRANT SELECT ON oi TO regress_gpuidx_login;
SET ROLE regress_gpuidx_login;
EXPLAIN (COSTS OFF) SELECT count(*) FROM oi WHERE body OPERATOR(pg_temp.!@@) 5;
SELECT count(*) FROM oi WHERE body OPERATOR(pg_temp.!@@) 5;
SELECT id FROM oi WHERE body OPERATOR(pg_temp.!@@) 5 LIMIT 3;

-- a (text, text) twin that is always false: 0 rows through every plan
CREATE FUNCTION pg_temp.gpuidx_match(d text, q text) RETURNS bool LANGUAGE plpgsql IMMUTABLE
	AS 'BEGIN RETURN false; END';
CREATE OPERATOR pg_temp.!@@ (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_temp.gpuidx_match);
CREATE OPERATOR pg_temp.@@& (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_temp.gpuidx_match);
CREATE FUNCTION pg_temp.gpuidx_match(d tsvector, q text) RETURNS bool LANGUAGE plpgsql IMMUTABLE
	AS 'BEGIN RETURN false; END';
CREATE OPERATOR pg_temp.@@& (LEFTARG = tsvector, RIGHTARG = text, FUNCTION = pg_temp.gpuidx_match);
EXPLAIN (COSTS OFF) SELECT count(*) FROM oi WHERE body OPERATOR(pg_temp.!@@) 'word1';
SELECT count(*) FROM oi WHERE body OPERATOR(pg_temp.!@@) 'word1';
SELECT count(*) FROM oi WHERE body OPERATOR(pg_temp.@@&) 'word1';
SELECT count(*) FROM oi WHERE tsv OPERATOR(pg_temp.@@&) 'word1';
SELECT EXISTS (SELECT 1 FROM oi WHERE body OPERATOR(pg_temp.@@&) 'word1');
SELECT count(*) FROM (SELECT id FROM oi WHERE body OPERATOR(pg_temp.@@&) 'word1' LIMIT 5) s;
SET gpuidx.enable_customscan = off;
SELECT count(*) FROM oi WHERE body OPERATOR(pg_temp.@@&) 'word1';
RESET gpuidx.enable_customscan;
-- the real operator still goes through the custom scan
EXPLAIN (COSTS OFF) SELECT count(*) FROM oi WHERE body @@& 'word1';
SELECT count(*) FROM oi WHERE body @@& 'word1';

-- twins of the ranking operator and functions: the index never orders by
-- them, and ranked queries still bind gpuidx's own function
CREATE FUNCTION pg_temp.gpuidx_rank_distance(d text, q text) RETURNS float8 LANGUAGE sql IMMUTABLE
	AS 'SELECT length(d)::float8';
CREATE OPERATOR pg_temp.<=> (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_temp.gpuidx_rank_distance);
CREATE FUNCTION pg_temp.gpuidx_rank_distance(d text, q int) RETURNS float8 LANGUAGE sql IMMUTABLE
	AS 'SELECT q::float8';
CREATE OPERATOR pg_temp.<=> (LEFTARG = text, RIGHTARG = int, FUNCTION = pg_temp.gpuidx_rank_distance);
CREATE FUNCTION pg_temp.gpuidx_rank_query(q text, i regclass) RETURNS text LANGUAGE sql IMMUTABLE
	AS 'SELECT ''word7''';
CREATE FUNCTION pg_temp.gpuidx_bm25(d text, q text) RETURNS float8 LANGUAGE sql IMMUTABLE
	AS 'SELECT 1.0::float8';
EXPLAIN (COSTS OFF) SELECT id FROM oi ORDER BY body OPERATOR(pg_temp.<=>) 'word1', id LIMIT 3;
SELECT id FROM oi ORDER BY body OPERATOR(pg_temp.<=>) 'word1', id LIMIT 3;
SELECT id FROM oi ORDER BY body OPERATOR(pg_temp.<=>) 5, id LIMIT 3;
SELECT count(*), min(pg_temp.gpuidx_bm25(body, 'word1')) FROM oi WHERE id < 10;
EXPLAIN (COSTS OFF) SELECT id FROM oi ORDER BY body <=> 'word1' LIMIT 3;
SELECT id FROM oi ORDER BY body <=> 'word1' LIMIT 3;
SELECT id FROM oi ORDER BY body <=> gpuidx_rank_query('word2', 'oi_body') LIMIT 3;
SELECT id, gpuidx_bm25(body, 'word3') > 0 AS scored FROM oi WHERE id IN (3, 4) ORDER BY id;
SELECT id FROM oi ORDER BY tsv <=> 'word4' LIMIT 3;
-- the operator's function called by its name is the operator
EXPLAIN (COSTS OFF) SELECT id FROM oi ORDER BY gpuidx_rank_distance(body, 'word1') LIMIT 3;
SET enable_indexscan = off;
SELECT id FROM oi ORDER BY body <=> 'word1', ctid LIMIT 3;
RESET enable_indexscan;
DISCARD TEMP;
RESET ROLE;

-- a superuser's operator of another schema is no more @@& than a role's
CREATE SCHEMA regress_gpuidx_other;
CREATE FUNCTION regress_gpuidx_other.gpuidx_match(d text, q text) RETURNS bool LANGUAGE sql IMMUTABLE
	AS 'SELECT true';
CREATE OPERATOR regress_gpuidx_other.@@& (LEFTARG = text, RIGHTARG = text, FUNCTION = regress_gpuidx_other.gpuidx_match);
SELECT count(*) FROM oi WHERE body OPERATOR(regress_gpuidx_other.@@&) 'word1';
DROP SCHEMA regress_gpuidx_other CASCADE;

DROP TABLE oi;
DROP ROLE regress_gpuidx_login;
