-- Plans of LIMIT, EXISTS and count(*) with default planner settings on a
-- table whose matches lie at its end: a sequential scan is priced at the
-- part of the table it reads before its k-th match (the index finds where
-- that is: doc ids follow the heap), not as if the matches were spread
-- evenly, so it is taken only where it truly reads less.  The rows of
-- "doc @@ tsquery" come from the index.
SET client_min_messages = warning;
SET gpuidx.text_config = 'english';
-- 'common' in every row; 'late' in the last 30,000 rows, 'lateb' in the
-- last 10,000: frequent terms, but none in the first 70,000 rows, which a
-- sequential scan under LIMIT or EXISTS reads first; 'tenth' in every tenth
-- row; a body text as well
CREATE TABLE pt (id int PRIMARY KEY, tsv tsvector, body text) WITH (autovacuum_enabled = off);
INSERT INTO pt (id, body)
SELECT g, 'common ' || CASE WHEN g % 10 = 0 THEN 'tenth ' ELSE '' END ||
	CASE WHEN g > 70000 THEN 'late ' ELSE '' END || CASE WHEN g > 90000 THEN 'lateb ' ELSE '' END ||
	'w' || (g % 997) || ' ' || repeat('x', 40)
FROM generate_series(1, 100000) g;
UPDATE pt SET tsv = to_tsvector('english', body);
VACUUM FULL pt;
CREATE INDEX pt_tsv ON pt USING gpuidx (tsv);
CREATE INDEX pt_body ON pt USING gpuidx (body);
CREATE INDEX pt_expr ON pt USING gpuidx (to_tsvector('english', body));
VACUUM ANALYZE pt;

-- the top node's key of EXPLAIN (FORMAT JSON), and whether any node is a sequential scan
CREATE FUNCTION pt_plan(stmt text, key text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || stmt INTO j;
	RETURN j->0->'Plan'->>key;
END $$;
CREATE FUNCTION pt_seqscan(stmt text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE j text;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || stmt INTO j;
	RETURN j LIKE '%"Seq Scan"%';
END $$;

-- the rows of @@ from the index: 'late & common' has 30,000, 'lateb & w5 & tenth' 1
SELECT pt_plan($$SELECT id FROM pt WHERE tsv @@ to_tsquery('late & common')$$, 'Plan Rows')::float8
	BETWEEN 15000 AND 60000 AS late_rows,
	pt_plan($$SELECT id FROM pt WHERE tsv @@ to_tsquery('lateb & w5 & tenth')$$, 'Plan Rows')::float8
	BETWEEN 1 AND 100 AS rare_rows;

-- matches at the end: no shape reads the table, whatever the operator and index
SELECT q, pt_seqscan(q) AS seqscan
FROM (VALUES ($$SELECT id FROM pt WHERE tsv @@ to_tsquery('late & common') LIMIT 10$$),
             ($$SELECT id FROM pt WHERE tsv @@ to_tsquery('common & (lateb | nosuch)') LIMIT 10$$),
             ($$SELECT id FROM pt WHERE to_tsquery('late & common') @@ tsv LIMIT 10$$),
             ($$SELECT id FROM pt WHERE body @@& 'common late' LIMIT 10$$),
             ($$SELECT id FROM pt WHERE to_tsvector('english', body) @@ plainto_tsquery('common late') LIMIT 10$$),
             ($$SELECT EXISTS (SELECT 1 FROM pt WHERE tsv @@ websearch_to_tsquery('common lateb'))$$),
             ($$SELECT EXISTS (SELECT 1 FROM pt WHERE tsv @@ websearch_to_tsquery('common zzqqxx'))$$),
             ($$SELECT EXISTS (SELECT 1 FROM pt WHERE body @@& 'lateb common')$$),
             ($$SELECT count(*) FROM pt WHERE tsv @@ to_tsquery('late & common')$$)) v(q);

-- matches from the first row on: the sequential scan reads the least, and is taken
SELECT pt_seqscan($$SELECT id FROM pt WHERE tsv @@ to_tsquery('common') LIMIT 10$$) AS seqscan_common,
	pt_seqscan($$SELECT id FROM pt WHERE body @@& 'common w1' LIMIT 10$$) AS seqscan_text;

-- a document parsed from long text for each row (an expression index):
-- PostgreSQL prices to_tsvector the same whatever the text, but parsing
-- takes time by its length, and a sequential scan under LIMIT parses each
-- row it reads (here 30 rows of 2 kB, about 1 ms, where the index takes
-- 0.03 ms); over a stored tsvector it parses nothing and is taken
CREATE TABLE lt (id int PRIMARY KEY, body text, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO lt (id, body)
SELECT g, CASE WHEN g % 3 = 0 THEN 'alpha ' ELSE '' END ||
	(SELECT string_agg(md5((g * 100 + i)::text), ' ') FROM generate_series(1, 60) i)
FROM generate_series(1, 3000) g;
UPDATE lt SET tsv = to_tsvector('english', body);
CREATE INDEX lt_expr ON lt USING gpuidx (to_tsvector('english', body));
CREATE INDEX lt_tsv ON lt USING gpuidx (tsv);
VACUUM ANALYZE lt;
SELECT pt_seqscan($$SELECT id FROM lt WHERE to_tsvector('english', body) @@ to_tsquery('alpha') LIMIT 10$$) AS seqscan_parsing,
	pt_seqscan($$SELECT id FROM lt WHERE tsv @@ to_tsquery('alpha') LIMIT 10$$) AS seqscan_stored;
DROP TABLE lt;

-- the answers: the last rows
SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM pt WHERE tsv @@ to_tsquery('lateb & common') LIMIT 5) s;
SELECT EXISTS (SELECT 1 FROM pt WHERE tsv @@ websearch_to_tsquery('common lateb'));

-- a prepared EXISTS whose generic plan does not know its query keeps the index:
-- the typical query's k-th match lies, on average, far into the table
PREPARE pe(text) AS SELECT EXISTS (SELECT 1 FROM pt WHERE tsv @@ websearch_to_tsquery($1));
PREPARE pl(text) AS SELECT id FROM pt WHERE tsv @@ websearch_to_tsquery($1) LIMIT 10;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pe('common zzqqxx');
EXPLAIN (COSTS OFF) EXECUTE pl('common zzqqxx');
EXECUTE pe('common zzqqxx');
EXECUTE pe('lateb');
RESET plan_cache_mode;
-- as a driver runs it: five custom plans, then the cheaper of a custom and
-- the generic one, the index all along
EXECUTE pe('late'); EXECUTE pe('lateb'); EXECUTE pe('w5 late'); EXECUTE pe('w7 late'); EXECUTE pe('nosuch');
EXPLAIN (COSTS OFF) EXECUTE pe('common zzqqxx');

-- a stored tsvector column where a quarter of the rows have none (NULL):
-- those are not in the index and match nothing, so 'common' (in every
-- document) keeps three rows in four; an "@@" the index does not estimate
-- alone (inside an OR) is estimated from the column's statistics as
-- PostgreSQL does (its most common lexemes: 'common' and 'w1' keep about
-- 15,500 of the 20,000 rows; without them 0.5% each, about 200)
CREATE TABLE pn (id int, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO pn SELECT g, CASE WHEN g % 4 <> 0 THEN to_tsvector('english', 'common w' || (g % 7)) END
FROM generate_series(1, 20000) g;
CREATE INDEX pn_tsv ON pn USING gpuidx (tsv);
ANALYZE pn;
SELECT pt_plan($$SELECT 1 FROM pn WHERE tsv @@ to_tsquery('common')$$, 'Plan Rows') AS common_rows,
	pt_plan($$SELECT 1 FROM pn WHERE to_tsquery('common') @@ tsv$$, 'Plan Rows') AS commuted_rows,
	pt_plan($$SELECT 1 FROM pn WHERE tsv @@ to_tsquery('common') OR tsv @@ to_tsquery('w1')$$, 'Plan Rows')::float8
	BETWEEN 14000 AND 17000 AS or_from_statistics,
	pt_plan($$SELECT 1 FROM pn WHERE tsv IS NULL$$, 'Plan Rows') AS null_rows;
SELECT count(*) FROM pn WHERE tsv @@ to_tsquery('common');
DROP TABLE pn;
-- the same for an expression index: "@@" inside an OR from the statistics
-- ANALYZE keeps of the index's expression ('common' is in every row)
SELECT pt_plan($$SELECT 1 FROM pt WHERE to_tsvector('english', body) @@ to_tsquery('common')
	OR to_tsvector('english', body) @@ to_tsquery('tenth')$$, 'Plan Rows')::float8 BETWEEN 80000 AND 100000
	AS expression_or_from_statistics;

DROP TABLE pt;
DROP FUNCTION pt_plan(text, text);
DROP FUNCTION pt_seqscan(text);
