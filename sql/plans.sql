-- Plans of @@& and <=> whose query the planner cannot see (prepared
-- statements' generic plans, an outer query's column) and of LIMIT: with
-- default planner settings every shape keeps its index or custom scan on a
-- table where a sequential scan is a real alternative, the unknown query
-- estimated as the index's typical one, not as a flat fraction of the rows
SET client_min_messages = warning;
-- terms of every frequency: one in every document, one in half, one in a
-- tenth, and many in a few documents each, as words of real text are
CREATE TABLE pl (id int PRIMARY KEY, tsv tsvector, pad text) WITH (autovacuum_enabled = off);
INSERT INTO pl
SELECT g, to_tsvector('english', 'every ' || CASE WHEN g % 2 = 0 THEN 'half ' ELSE '' END ||
		CASE WHEN g % 10 = 0 THEN 'tenth ' ELSE '' END || 'r' || (g % 9973) || ' u' || (g % 997)),
	repeat('x', 60)
FROM generate_series(1, 100000) g;
CREATE INDEX pl_tsv ON pl USING gpuidx (tsv);
VACUUM ANALYZE pl;
CREATE TABLE pq (q text);
INSERT INTO pq VALUES ('r17 u17'), ('half r40'), ('every u5');
ANALYZE pq;

-- the rows a statement's plan expects
CREATE FUNCTION expected_rows(stmt text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || stmt INTO j;
	RETURN (j->0->'Plan'->>'Plan Rows')::float8;
END $$;

-- a cost of a statement's plan: its top node's key of EXPLAIN (FORMAT JSON)
CREATE FUNCTION plan_cost(stmt text, key text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || stmt INTO j;
	RETURN (j->0->'Plan'->>key)::float8;
END $$;

PREPARE n(text) AS SELECT count(*) FROM pl WHERE tsv @@& $1;
PREPARE e(text) AS SELECT EXISTS (SELECT 1 FROM pl WHERE tsv @@& $1);
PREPARE l(text) AS SELECT id FROM pl WHERE tsv @@& $1 LIMIT 10;
PREPARE i(text) AS SELECT id FROM pl WHERE tsv @@& $1;
PREPARE r(text) AS SELECT id FROM pl ORDER BY tsv <=> $1 LIMIT 10;
PREPARE ra(text) AS SELECT id FROM pl WHERE tsv @@& $1 ORDER BY tsv <=> $1 LIMIT 10;

-- generic plans: the typical query of this index is selective (a few rows,
-- not 0.5% of them), and no shape scans the table
SET plan_cache_mode = force_generic_plan;
SELECT expected_rows('EXECUTE i(''r17 u17'')') BETWEEN 1 AND 100 AS typical_is_selective;
EXPLAIN (COSTS OFF) EXECUTE n('r17 u17');
EXPLAIN (COSTS OFF) EXECUTE e('r17 u17');
EXPLAIN (COSTS OFF) EXECUTE l('r17 u17');
EXPLAIN (COSTS OFF) EXECUTE i('r17 u17');
EXPLAIN (COSTS OFF) EXECUTE r('r17 u17');
EXPLAIN (COSTS OFF) EXECUTE ra('r17 u17');
-- a ranking filtered by its own query starts at the filter's cost: it reads
-- the key's lists (and their frequencies) and never leaves its matches.
-- Priced higher, the plan that fetches every match, scores each row and
-- sorts them won for the few matches of the typical query, and took
-- seconds for a query that matches millions.
SELECT plan_cost('EXECUTE ra(''r17 u17'')', 'Startup Cost') <=
	plan_cost('EXECUTE i(''r17 u17'')', 'Startup Cost') + 1 AS ranked_starts_at_the_filter;
EXPLAIN (COSTS OFF)
SELECT id FROM pl WHERE tsv @@& (SELECT q FROM pq LIMIT 1) ORDER BY tsv <=> (SELECT q FROM pq LIMIT 1) LIMIT 10;
-- their answers are the query's
EXECUTE n('r17 u17');
EXECUTE e('r17 u17');
EXECUTE l('r17 u17');
EXECUTE r('r17 u17');
EXECUTE n('nosuchword');
EXECUTE e('nosuchword');

-- as a driver's statement cache runs them: the sixth execution may take the
-- generic plan, and keeps the index
SET plan_cache_mode = auto;
DEALLOCATE l;
PREPARE l(text) AS SELECT id FROM pl WHERE tsv @@& $1 LIMIT 10;
EXECUTE l('r1 u1'); EXECUTE l('r2 u2'); EXECUTE l('r3 u3'); EXECUTE l('r4 u4'); EXECUTE l('r5 u5');
EXPLAIN (COSTS OFF) EXECUTE l('r6 u6');
DEALLOCATE e;
PREPARE e(text) AS SELECT EXISTS (SELECT 1 FROM pl WHERE tsv @@& $1);
EXECUTE e('r1 u1'); EXECUTE e('r2 u2'); EXECUTE e('r3 u3'); EXECUTE e('r4 u4'); EXECUTE e('r5 u5');
EXPLAIN (COSTS OFF) EXECUTE e('r6 u6');

-- custom plans of rare queries: a LIMIT or EXISTS over a sequential scan
-- would read most of the table to find them
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE l('r17 u17');
EXPLAIN (COSTS OFF) EXECUTE e('r17 u17');
EXPLAIN (COSTS OFF) EXECUTE l('half r40');
EXPLAIN (COSTS OFF) EXECUTE e('half r40');
RESET plan_cache_mode;

-- a join on @@&: each row's query is the typical one, as the inner index
-- scan estimates it (here under a row each), not 0.1% of the pairs (300)
SELECT expected_rows('SELECT * FROM pq JOIN pl ON pl.tsv @@& pq.q') < 30 AS join_rows_from_index;
EXPLAIN (COSTS OFF) SELECT pq.q, pl.id FROM pq JOIN pl ON pl.tsv @@& pq.q;

-- the query from an outer query's row: the index for each row
EXPLAIN (COSTS OFF)
SELECT q, (SELECT count(*) FROM (SELECT id FROM pl WHERE tsv @@& pq.q LIMIT 10) s) FROM pq;
SELECT q, (SELECT count(*) FROM (SELECT id FROM pl WHERE tsv @@& pq.q LIMIT 10) s) FROM pq ORDER BY q;
EXPLAIN (COSTS OFF)
SELECT q, EXISTS (SELECT 1 FROM pl WHERE tsv @@& pq.q) FROM pq;

DEALLOCATE ALL;
DROP FUNCTION expected_rows;
DROP TABLE pl, pq;
