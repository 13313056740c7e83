-- Long lists' ranking data kept by the backend between queries
-- (gpuidx.rank_cache_size): the same rows and scores as read afresh, copies
-- dropped when the index's storage changes, cursors unharmed by eviction
SET client_min_messages = warning;
SET extra_float_digits = 0;
CREATE TABLE rc (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off);
-- "common" in every row (a list and frequency record of tens of kB), "half"
-- in every other, "rare" in one row in a thousand, tfs and lengths varied
INSERT INTO rc SELECT g,
	repeat('common ', 1 + g % 3) || CASE WHEN g % 2 = 0 THEN 'half ' ELSE '' END ||
	CASE WHEN g % 1000 = 7 THEN 'rare ' ELSE '' END || repeat('pad' || (g % 17) || ' ', g % 5)
	FROM generate_series(1, 200000) g;
CREATE INDEX rc_body ON rc USING gpuidx (body);
ANALYZE rc;

CREATE FUNCTION rc_top(q text, k int, every bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
	IF every THEN
		SELECT string_agg(id || ':' || s, ',') INTO r FROM (SELECT id, -(body <=> q) AS s FROM rc
			WHERE body @@& q ORDER BY body <=> q LIMIT k) x;
	ELSE
		SELECT string_agg(id || ':' || s, ',') INTO r FROM (SELECT id, -(body <=> q) AS s FROM rc
			ORDER BY body <=> q LIMIT k) x;
	END IF;
	RETURN r;
END $$;
CREATE TEMP TABLE rc_q (q text);
INSERT INTO rc_q VALUES ('rare common'), ('common'), ('half rare'), ('common half'), ('pad3 rare common'),
	('common half pad16');

-- read afresh each time
SET gpuidx.rank_cache_size = 0;
CREATE TEMP TABLE fresh AS SELECT q, rc_top(q, 25, false) AS any_t, rc_top(q, 25, true) AS every_t FROM rc_q;
-- kept: the first query reads and keeps, the second ranks from the copy
RESET gpuidx.rank_cache_size;
CREATE TEMP TABLE kept1 AS SELECT q, rc_top(q, 25, false) AS any_t, rc_top(q, 25, true) AS every_t FROM rc_q;
CREATE TEMP TABLE kept2 AS SELECT q, rc_top(q, 25, false) AS any_t, rc_top(q, 25, true) AS every_t FROM rc_q;
-- a budget too small for "common": read each time, kept elsewhere
SET gpuidx.rank_cache_size = '40kB';
CREATE TEMP TABLE small AS SELECT q, rc_top(q, 25, false) AS any_t, rc_top(q, 25, true) AS every_t FROM rc_q;
RESET gpuidx.rank_cache_size;
SELECT count(*) AS queries,
	count(*) FILTER (WHERE f.any_t = a.any_t AND f.any_t = b.any_t AND f.any_t = c.any_t) AS same_any,
	count(*) FILTER (WHERE f.every_t IS NOT DISTINCT FROM a.every_t AND f.every_t IS NOT DISTINCT FROM b.every_t
					 AND f.every_t IS NOT DISTINCT FROM c.every_t) AS same_every,
	count(*) FILTER (WHERE f.every_t IS NOT NULL) AS every_nonempty
	FROM fresh f JOIN kept1 a USING (q) JOIN kept2 b USING (q) JOIN small c USING (q);

-- EXPLAIN ANALYZE says how many lists came from the copy
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rc ORDER BY body <=> 'rare common' LIMIT 3;
SET gpuidx.rank_cache_size = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rc ORDER BY body <=> 'rare common' LIMIT 3;
RESET gpuidx.rank_cache_size;

-- REINDEX writes new storage: nothing kept is used for it, and the first
-- ranking after it reads the lists again
REINDEX INDEX rc_body;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rc ORDER BY body <=> 'rare common' LIMIT 3;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
	SELECT id FROM rc ORDER BY body <=> 'rare common' LIMIT 3;
SELECT count(*) AS same FROM fresh f WHERE f.any_t = rc_top(f.q, 25, false);

-- new rows after TRUNCATE: the rankings are theirs
TRUNCATE rc;
INSERT INTO rc SELECT g, repeat('common ', 1 + g % 4) || repeat('beta ', 1 + g % 3) || repeat('gamma ', 1 + g % 2) ||
	CASE WHEN g % 500 = 3 THEN 'rare ' ELSE '' END
	FROM generate_series(1, 150000) g;
SELECT rc_top('rare common', 5, false) AS kept;
SET gpuidx.rank_cache_size = 0;
SELECT rc_top('rare common', 5, false) AS fresh;
RESET gpuidx.rank_cache_size;

-- a cursor's later rounds rank again while other queries evict what it
-- kept (room for two of the three frequent terms)
SET gpuidx.rank_cache_size = '150kB';
BEGIN;
DECLARE cur CURSOR FOR SELECT id, body <=> 'common rare' AS d FROM rc ORDER BY body <=> 'common rare';
CREATE TEMP TABLE from_cursor (n serial, id int, d float8);
CREATE FUNCTION fetch_some(k int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record; c refcursor := 'cur';
BEGIN
	FOR i IN 1..k LOOP
		FETCH c INTO r;
		INSERT INTO from_cursor (id, d) VALUES (r.id, r.d);
	END LOOP;
END $$;
SELECT fetch_some(40);
SELECT length(rc_top('beta gamma', 10, false)) > 0 AS other_query;
SELECT fetch_some(400);
SELECT length(rc_top('gamma rare', 10, true)) > 0 AS other_query;
SELECT length(rc_top('beta', 10, true)) > 0 AS other_query;
SELECT fetch_some(2000);
COMMIT;
RESET gpuidx.rank_cache_size;
SELECT count(*) AS rows, count(*) FILTER (WHERE c.id = o.id AND c.d = o.d) AS same
	FROM from_cursor c
	JOIN (SELECT row_number() OVER () AS n, id, d FROM
		  (SELECT id, body <=> 'common rare' AS d FROM rc ORDER BY body <=> 'common rare' LIMIT 2440) s) o USING (n);

DROP TABLE rc;
DROP FUNCTION rc_top(text, int, bool);
DROP FUNCTION fetch_some(int);
