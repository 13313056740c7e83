-- tsvector @@ tsquery through a gpuidx index: the queries written for GIN,
-- unchanged.  Every answer is compared with a sequential scan's.
CREATE EXTENSION IF NOT EXISTS gpuidx;
SET gpuidx.text_config = 'english';

-- no autovacuum: the counts below through the cursor read pages that are not all-visible
CREATE TABLE tq (id int PRIMARY KEY, title text, body text, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO tq (id, title, body)
SELECT g,
       (ARRAY['Postgres indexes', 'GPU search', 'Data structures', 'Cooking'])[1 + g % 4],
       (ARRAY['the postgres database answers queries',
              'a gpu database engine searches posting lists',
              'sorted data in compressed lists',
              'apple pie with red cherries',
              'mysql or postgres: which database',
              'the the the',
              ''])[1 + g % 7] || ' w' || (g % 11)
FROM generate_series(1, 3000) g;
UPDATE tq SET tsv = setweight(to_tsvector('english', title), 'A') || to_tsvector('english', body);
INSERT INTO tq VALUES (3001, NULL, NULL, NULL);
-- without positions (indexes built before they were the default, or
-- positions = off): phrases and weights are checked on the row, as GIN
-- does (sql/positions.sql: the default index settles them itself)
CREATE INDEX tq_body ON tq USING gpuidx (to_tsvector('english', body)) WITH (positions = off);
CREATE INDEX tq_tsv ON tq USING gpuidx (tsv) WITH (positions = off);
ANALYZE tq;

-- the same rows as a sequential scan: every query of the table, through the index and without
CREATE TABLE tq_queries (qid serial, q tsquery);
INSERT INTO tq_queries (q) VALUES
  ('postgres & database'), ('postgres | gpu'), ('!postgres'), ('!postgres | gpu'),
  ('databas:*'), ('p:*'), ('w1:*'), ('!w1:*'), ('zzz:*'),
  ('gpu <-> databas'), ('databas <-> gpu'), ('postgr <2> answer'), ('!(gpu <-> databas)'),
  ('postgr:A'), ('postgr:D'), ('postgr:AB & databas'), ('gpu:*A'),
  ('(postgr | gpu) & !(mysql | engin)'), ('!w1 & !w2 & !w3'), ('postgr & !postgr'),
  ('!!postgr'), ('(!postgr <-> databas) | w5'), ('lists & !(sort & compress)'),
  ('nothing_here'), ('nothing_here | w7'), (''), ('!nothing_here');

CREATE FUNCTION tq_ids(col text, q tsquery) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE r int[];
BEGIN
  IF col = 'body' THEN
    SELECT array_agg(id ORDER BY id) INTO r FROM tq WHERE to_tsvector('english', body) @@ q;
  ELSE
    SELECT array_agg(id ORDER BY id) INTO r FROM tq WHERE tsv @@ q;
  END IF;
  RETURN coalesce(r, '{}');
END $$;

-- count(*) alone, counted in the custom scan (a phrase's or a weight's rows checked there)
CREATE FUNCTION tq_count(col text, q tsquery) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  IF col = 'body' THEN
    SELECT count(*) INTO n FROM tq WHERE to_tsvector('english', body) @@ q;
  ELSE
    SELECT count(*) INTO n FROM tq WHERE tsv @@ q;
  END IF;
  RETURN n;
END $$;

CREATE TEMP TABLE tq_ref (col text, qid int, ids int[]);
CREATE FUNCTION tq_compare(label text) RETURNS TABLE (what text, queries bigint, same bigint, nonempty bigint)
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE tq_ref;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_bitmapscan = off;
  SET LOCAL gpuidx.enable_customscan = off;
  INSERT INTO tq_ref SELECT c, qid, tq_ids(c, q) FROM tq_queries, unnest(ARRAY['body', 'tsv']) c;
  RESET enable_indexscan;
  RESET enable_bitmapscan;
  RESET gpuidx.enable_customscan;
  SET LOCAL enable_seqscan = off;
  -- the custom scan, its count(*), then bitmap scans
  RETURN QUERY
    SELECT label || ' custom scan', count(*), count(*) FILTER (WHERE r.ids = tq_ids(r.col, q.q)),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM tq_ref r JOIN tq_queries q USING (qid);
  RETURN QUERY
    SELECT label || ' counted in the scan', count(*),
           count(*) FILTER (WHERE coalesce(array_length(r.ids, 1), 0) = tq_count(r.col, q.q)),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM tq_ref r JOIN tq_queries q USING (qid);
  SET LOCAL gpuidx.enable_customscan = off;
  RETURN QUERY
    SELECT label || ' bitmap', count(*), count(*) FILTER (WHERE r.ids = tq_ids(r.col, q.q)),
           count(*) FILTER (WHERE r.ids <> '{}')
    FROM tq_ref r JOIN tq_queries q USING (qid);
END $$;

SELECT * FROM tq_compare('built');

-- the plans: the gpuidx custom scan, or a bitmap scan of the gpuidx index,
-- rechecking only phrases and weights
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE to_tsvector('english', body) @@ to_tsquery('english', 'postgres & !mysql');
SET gpuidx.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE to_tsvector('english', body) @@ to_tsquery('english', 'postgres & !mysql');
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE tsv @@ websearch_to_tsquery('english', '"gpu database" or postgres -mysql');
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE to_tsquery('english', 'data:*') @@ tsv;
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE tsv @@@ plainto_tsquery('english', 'sorted lists');
RESET gpuidx.enable_customscan;
RESET enable_seqscan;

-- the commuted forms (tsquery @@ doc, tsquery @@@ doc) take the same custom
-- scans, counting included, and count the same rows
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tq WHERE plainto_tsquery('english', 'gpu database') @@ tsv;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tq WHERE phraseto_tsquery('english', 'gpu database') @@ to_tsvector('english', body);
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE plainto_tsquery('english', 'sorted lists') @@@ tsv LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE plainto_tsquery('english', 'sorted lists') @@ tsv
ORDER BY tsv <=> plainto_tsquery('english', 'sorted lists') LIMIT 5;
SELECT (SELECT count(*) FROM tq WHERE plainto_tsquery('english', 'gpu database') @@ tsv) AS commuted,
       (SELECT count(*) FROM tq WHERE tsv @@ plainto_tsquery('english', 'gpu database')) AS plain,
       (SELECT count(*) FROM tq WHERE phraseto_tsquery('english', 'gpu database') @@ to_tsvector('english', body)) AS commuted_phrase,
       (SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ phraseto_tsquery('english', 'gpu database')) AS phrase;
RESET enable_bitmapscan;
RESET enable_seqscan;

-- rows the recheck removes show in EXPLAIN ANALYZE: "gpu <-> database" has candidates that are not phrases
CREATE FUNCTION tq_removed(q tsquery, custom bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := 'none';
BEGIN
  SET LOCAL enable_seqscan = off;
  PERFORM set_config('gpuidx.enable_customscan', custom::text, true);
  FOR line IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT id FROM tq WHERE tsv @@ %L::tsquery', q) LOOP
    IF line ~ 'Rows Removed by Index Recheck' THEN r := trim(line); END IF;
  END LOOP;
  RETURN r;
END $$;
SELECT custom, tq_removed('databas <-> gpu', custom) AS phrase, tq_removed('gpu <-> databas', custom) AS exact_phrase,
       tq_removed('postgr:A', custom) AS weight, tq_removed('postgr & databas', custom) AS plain
FROM unnest(ARRAY[false, true]) custom;
-- only the candidates the index cannot confirm are rechecked: with "| postgr",
-- the rows having postgr are sure, the others having gpu and databas are checked
SELECT custom, tq_removed('(databas <-> gpu) | postgr', custom) AS phrase_or_term
FROM unnest(ARRAY[false, true]) custom;
SET enable_seqscan = off;
SELECT count(*) FROM tq WHERE tsv @@ '(databas <-> gpu) | postgr';
-- count(*) alone is counted in the scan, the unsure rows checked there, on
-- the column or on the index's expression
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM tq WHERE tsv @@ '(databas <-> gpu) | postgr';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ '(databas <-> gpu) | postgr';
SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ '(databas <-> gpu) | postgr';
SELECT count(*) FROM tq WHERE tsv @@ 'postgr';
SELECT count(*) FROM tq WHERE tsv @@ 'databas & gpu & !postgr';
RESET enable_seqscan;
-- many unsure rows are checked in parallel workers too (from
-- gpuidx.parallel_check_rows of them): the same counts, each row read once;
-- the rows of a segment counted where they are (pages all-visible)
CREATE TABLE tq_vac AS SELECT * FROM tq;
CREATE INDEX ON tq_vac USING gpuidx (to_tsvector('english', body)) WITH (positions = off);
CREATE INDEX ON tq_vac USING gpuidx (tsv) WITH (positions = off);
VACUUM (ANALYZE) tq_vac;
CREATE FUNCTION tq_check(tbl regclass, doc text, q tsquery) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; r text := '';
BEGIN
  SET LOCAL enable_seqscan = off;
  FOR line IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT count(*) FROM %s WHERE %s @@ %L::tsquery',
                             tbl, doc, q) LOOP
    IF line ~ 'Heap Fetches|Rows Removed|Check Workers Planned' THEN r := r || trim(line) || '; '; END IF;
  END LOOP;
  RETURN r;
END $$;
CREATE FUNCTION tq_rows(tbl regclass, doc text, q tsquery) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  SET LOCAL enable_seqscan = off;
  EXECUTE format('SELECT count(*) FROM %s WHERE %s @@ %L::tsquery', tbl, doc, q) INTO n;
  RETURN n;
END $$;
SET gpuidx.parallel_check_rows = 0;
SELECT doc, q, tq_rows('tq_vac', doc, q) AS n, tq_check('tq_vac', doc, q)
FROM unnest(ARRAY['tsv', 'to_tsvector(''english'', body)']) doc,
     unnest(ARRAY['databas <-> gpu', 'gpu <-> databas', '(databas <-> gpu) | postgr', 'postgr:A']::tsquery[]) q
ORDER BY 1, 2;
SET gpuidx.parallel_check_rows = 1;
SELECT doc, q, tq_rows('tq_vac', doc, q) AS n, tq_check('tq_vac', doc, q)
FROM unnest(ARRAY['tsv', 'to_tsvector(''english'', body)']) doc,
     unnest(ARRAY['databas <-> gpu', 'gpu <-> databas', '(databas <-> gpu) | postgr', 'postgr:A']::tsquery[]) q
ORDER BY 1, 2;
-- and on a table whose pages are not all-visible (its rows read through the cursor)
SELECT doc, q, tq_rows('tq', doc, q) AS n, tq_check('tq', doc, q)
FROM unnest(ARRAY['tsv', 'to_tsvector(''english'', body)']) doc,
     unnest(ARRAY['gpu <-> databas', '(databas <-> gpu) | postgr', 'postgr:A']::tsquery[]) q
ORDER BY 1, 2;
-- the same counts with every row read by a sequential scan
SELECT count(*) FILTER (WHERE tsv @@ 'databas <-> gpu') AS phrase,
       count(*) FILTER (WHERE tsv @@ 'gpu <-> databas') AS exact_phrase,
       count(*) FILTER (WHERE to_tsvector('english', body) @@ 'gpu <-> databas') AS exact_phrase_body,
       count(*) FILTER (WHERE to_tsvector('english', body) @@ '(databas <-> gpu) | postgr') AS phrase_or,
       count(*) FILTER (WHERE tsv @@ 'postgr:A') AS weight
FROM tq_vac;
-- in this backend alone: SERIALIZABLE (its predicate locks are this
-- backend's), no parallel workers allowed, a temporary table
SET gpuidx.parallel_check_rows = 1;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT tq_rows('tq_vac', 'tsv', 'postgr:A'), tq_check('tq_vac', 'tsv', 'postgr:A');
COMMIT;
SET max_parallel_workers_per_gather = 0;
SELECT tq_rows('tq_vac', 'tsv', 'postgr:A'), tq_check('tq_vac', 'tsv', 'postgr:A');
RESET max_parallel_workers_per_gather;
CREATE TEMP TABLE tq_temp AS SELECT * FROM tq_vac;
CREATE INDEX ON tq_temp USING gpuidx (tsv) WITH (positions = off);
VACUUM tq_temp;
SELECT tq_rows('tq_temp', 'tsv', 'postgr:A'), tq_check('tq_temp', 'tsv', 'postgr:A');
DROP TABLE tq_temp;
RESET gpuidx.parallel_check_rows;
DROP FUNCTION tq_check, tq_rows;
DROP TABLE tq_vac;
SET enable_seqscan = off;
SELECT count(*) FROM tq WHERE tsv @@ 'databas <-> gpu';
SELECT count(*) FROM tq WHERE tsv @@ 'gpu <-> databas';
SELECT id FROM tq WHERE tsv @@ 'gpu <-> databas' ORDER BY id LIMIT 3;
RESET enable_seqscan;

-- every form of the query value: the functions, a parameter in a generic plan, a join column
SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ to_tsquery('english', 'postgres & database');
SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ plainto_tsquery('english', 'compressed lists');
SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ phraseto_tsquery('english', 'gpu database engine');
SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ websearch_to_tsquery('english', '"posting lists" or cherries -apple');
SELECT count(*) FROM tq WHERE tsv @@ websearch_to_tsquery('english', 'postgres -mysql');
SET plan_cache_mode = force_generic_plan;
PREPARE tq_by(tsquery) AS SELECT count(*) FROM tq WHERE tsv @@ $1;
EXPLAIN (COSTS OFF) EXECUTE tq_by('gpu');
EXECUTE tq_by('gpu & !engin');
EXECUTE tq_by('!gpu');
EXECUTE tq_by(NULL);
PREPARE tq_web(text) AS SELECT count(*) FROM tq WHERE to_tsvector('english', body) @@ websearch_to_tsquery('english', $1);
EXPLAIN (COSTS OFF) EXECUTE tq_web('postgres');
EXECUTE tq_web('"compressed lists" or mysql');
RESET plan_cache_mode;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT q.qid, count(tq.id)
FROM tq_queries q JOIN tq ON tq.tsv @@ q.q
WHERE q.qid IN (2, 3, 5, 10)
GROUP BY q.qid ORDER BY q.qid;
SELECT q.qid, count(tq.id)
FROM tq_queries q JOIN tq ON tq.tsv @@ q.q
WHERE q.qid IN (2, 3, 5, 10)
GROUP BY q.qid ORDER BY q.qid;
RESET enable_seqscan;
-- ranked, with a tsquery filter: the filter's rows, best first, as a sort of the filtered rows ranks them
CREATE FUNCTION tq_top(q tsquery, r text, by_index bool) RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE res float8[];
BEGIN
  IF NOT by_index THEN
    SET LOCAL enable_indexscan = off;
    SET LOCAL gpuidx.enable_customscan = off;
  END IF;
  SELECT array_agg(round(s::numeric, 9)::float8 ORDER BY s DESC) INTO res FROM
    (SELECT gpuidx_bm25(tsv, r) s FROM tq WHERE tsv @@ q ORDER BY tsv <=> r LIMIT 10) t;
  RETURN res;
END $$;
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE tsv @@ to_tsquery('english', 'postgres & !mysql') ORDER BY tsv <=> 'database queries' LIMIT 10;
SELECT q, tq_top(q, 'database queries', true) = tq_top(q, 'database queries', false) AS same,
       cardinality(tq_top(q, 'database queries', true)) AS n
FROM unnest(ARRAY['postgr & !mysql', 'gpu <-> databas', '!postgr', 'w1:* | cherri', 'postgr:A & queri']::tsquery[]) q;
DROP FUNCTION tq_top;

-- ranked by a tsquery: BM25 over its positive lexemes (not under a NOT, prefixes left out)
EXPLAIN (COSTS OFF) SELECT id FROM tq WHERE tsv @@ to_tsquery('english', 'postgres & !mysql')
ORDER BY tsv <=> to_tsquery('english', 'postgres & !mysql') LIMIT 10;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE tsv <=> to_tsquery('english', '(postgres | database) & !mysql & data:*')
                              = tsv <=> 'postgres database') AS same_as_text
FROM tq WHERE tsv IS NOT NULL;
SELECT gpuidx_bm25(tsv, to_tsquery('english', 'postgres <-> database')) = gpuidx_bm25(tsv, 'postgres database') AS same
FROM tq WHERE id = 5;
CREATE FUNCTION tq_ranked(q tsquery, by_index bool) RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE res float8[];
BEGIN
  IF NOT by_index THEN
    SET LOCAL enable_indexscan = off;
    SET LOCAL gpuidx.enable_customscan = off;
  END IF;
  SELECT array_agg(d ORDER BY d) INTO res FROM
    (SELECT tsv <=> q d FROM tq WHERE tsv @@ q ORDER BY tsv <=> q LIMIT 10) t;
  RETURN res;
END $$;
SELECT q, tq_ranked(q, true) = tq_ranked(q, false) AS same, cardinality(tq_ranked(q, true)) AS n
FROM unnest(ARRAY['postgr & !mysql', 'gpu <-> databas', 'w1:* | cherri', 'postgr:A & queri']::tsquery[]) q;
DROP FUNCTION tq_ranked;
-- a ranking whose LIMIT outlasts its rows checks only the query's
-- candidates, not every row of the table: the rows of score 0 come from
-- the query's tree; a phrase ranks only the docs with its lexemes
CREATE FUNCTION tq_rank_checked(q tsquery) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; removed text := '0'; got text;
BEGIN
  -- the index's ordered scan itself (a LIMIT of every row would otherwise sort the custom scan's rows)
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_bitmapscan = off;
  SET LOCAL gpuidx.enable_customscan = off;
  FOR line IN EXECUTE format('EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT id FROM tq WHERE tsv @@ %L::tsquery ORDER BY tsv <=> %L::tsquery LIMIT 100000', q, q) LOOP
    IF line ~ 'Rows Removed by Index Recheck' THEN removed := substring(line from '(\d+)$'); END IF;
    IF line ~ 'Index Scan using' THEN got := substring(line from 'rows=(\d+)'); END IF;
  END LOOP;
  RETURN got || ' rows, ' || removed || ' removed by the recheck';
END $$;
SELECT q, tq_rank_checked(q) AS ranked, (SELECT count(*) FROM tq WHERE tsv @@ q) AS matches,
       (SELECT count(*) FROM tq WHERE tsv @@ 'gpu & databas'::tsquery) AS phrase_candidates,
       (SELECT count(*) FROM tq) AS table_rows
FROM unnest(ARRAY['cherri | zzyzx', 'gpu <-> databas', '!gpu <-> databas']::tsquery[]) q;
DROP FUNCTION tq_rank_checked;

-- NULL and empty queries match nothing, as for GIN
SELECT count(*) FROM tq WHERE tsv @@ NULL::tsquery;
SELECT count(*) FROM tq WHERE tsv @@ to_tsquery('english', 'the');
-- an @@& key and a tsquery key together are ANDed
SET enable_seqscan = off;
SELECT count(*) FROM tq WHERE tsv @@& 'postgres' AND tsv @@ to_tsquery('english', '!mysql');
RESET enable_seqscan;

-- new rows in the pending area, updates and deletes, then VACUUM
INSERT INTO tq (id, title, body)
SELECT g, 'New', (ARRAY['postgres gpu database', 'data lists', 'red cherries'])[1 + g % 3]
FROM generate_series(3002, 3300) g;
UPDATE tq SET tsv = setweight(to_tsvector('english', title), 'A') || to_tsvector('english', body) WHERE id > 3001;
UPDATE tq SET body = 'mysql engine' WHERE id % 10 = 0;
DELETE FROM tq WHERE id % 17 = 0;
SELECT * FROM tq_compare('pending');
VACUUM tq;
SELECT * FROM tq_compare('vacuumed');
INSERT INTO tq (id, title, body, tsv)
SELECT g, 'Later', 'gpu lists', setweight(to_tsvector('english', 'Later'), 'A') || to_tsvector('english', 'gpu lists')
FROM generate_series(3301, 3400) g;
SELECT gpuidx_merge_pending('tq_body') AS merged, gpuidx_merge_pending('tq_tsv') AS merged;
SELECT * FROM tq_compare('merged');

-- the operator class holds @@ and @@@ by strategy
SELECT amopstrategy, amopopr::regoperator FROM pg_amop
WHERE amopfamily = (SELECT opcfamily FROM pg_opclass WHERE opcname = 'gpuidx_tsvector_ops')
ORDER BY amopstrategy;

DROP TABLE tq, tq_queries, tq_ref;
DROP FUNCTION tq_ids, tq_count, tq_compare, tq_removed;
RESET gpuidx.text_config;

-- under LIMIT the custom scan evaluates a tree a window of doc ids at a
-- time, reading long EF lists only in the blocks there: every row of a
-- LIMIT never reached, and the first few, against a sequential scan, for
-- windows that cut blocks anywhere (0: whole segments)
CREATE TABLE tw (id int, v tsvector);
INSERT INTO tw
SELECT i, to_tsvector('simple', concat_ws(' ', 'doc',
	CASE WHEN hashint4(i) % 2 = 0 THEN 'alpha' END,
	CASE WHEN hashint4(i * 7 + 1) % 3 = 0 THEN 'beta' END,
	CASE WHEN hashint4(i * 13 + 5) % 5 = 0 THEN 'gamma' END,
	CASE WHEN hashint4(i * 31 + 2) % 40 = 0 THEN 'alphabet' END))
FROM generate_series(1, 200000) i;
-- no ANALYZE: the row estimate is @@'s default, so that the plans below do not depend on a sample
CREATE INDEX tw_idx ON tw USING gpuidx (v) WITH (codec = ef);
CREATE TABLE tw_queries (q tsquery);
INSERT INTO tw_queries VALUES ('alpha | beta'), ('alpha & !beta'), ('!alpha'), ('!alpha | gamma'),
	('alpha & (beta | gamma) & !alphabet'), ('alph:*'), ('alph:* & !gamma'), ('beta <-> gamma'),
	('alpha:A | beta'), ('!(alpha & beta) & gamma'), ('nothere | alphabet');
CREATE FUNCTION tw_rows(q tsquery, lim int, seq bool) RETURNS TABLE (n bigint, h bigint, wrong bigint, once bool)
LANGUAGE plpgsql AS $$
BEGIN
	-- every setting each call (SET LOCAL lasts to the end of the transaction,
	-- past this call) and planned each call (a cached plan would not follow them)
	PERFORM set_config('enable_seqscan', seq::text, true), set_config('enable_indexscan', (NOT seq)::text, true),
		set_config('enable_bitmapscan', 'off', true), set_config('gpuidx.enable_customscan', (NOT seq)::text, true);
	RETURN QUERY EXECUTE 'SELECT count(*), sum(hashint4(x.id)), count(*) FILTER (WHERE NOT x.v @@ $1),
		count(*) = count(DISTINCT x.id) FROM (SELECT * FROM tw WHERE v @@ $1 LIMIT $2) x' USING q, lim;
END $$;
SELECT w, count(*) AS queries,
	count(*) FILTER (WHERE (a.n, a.h) = (r.n, r.h)) AS every_row_same,
	count(*) FILTER (WHERE f.n = least(r.n, 7) AND f.wrong = 0) AS first_seven_match
FROM tw_queries, unnest(ARRAY[0, 97, 1000, 70001]) w,
	LATERAL (SELECT set_config('gpuidx.tree_window', w::text, false)) s,
	LATERAL tw_rows(q, 100000000, false) a, LATERAL tw_rows(q, 100000000, true) r,
	LATERAL tw_rows(q, 7, false) f
GROUP BY w ORDER BY w;
SET gpuidx.tree_window = 1000;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM tw WHERE v @@ '!alpha | gamma' LIMIT 100000000;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT id FROM tw WHERE v @@ '!alpha | gamma' LIMIT 10;
-- under a LIMIT the candidates that a phrase's positions settle are settled
-- a part at a time as rows are wanted (twice the limit first, at least 16,
-- then 4 times the last part): LIMITs over several parts and windows get each row
-- once, each a match, as many as a sequential scan finds
SELECT w, lim, q, p.n = least(r.n, lim) AS rows_wanted, p.once, p.wrong
FROM (VALUES ('doc <3> gamma'::tsquery), ('doc <3> alphabet'), ('alpha <-> !beta'), ('beta <-> gamma')) v(q),
	unnest(ARRAY[0, 1000]) w, unnest(ARRAY[50, 3000]) lim,
	LATERAL (SELECT set_config('gpuidx.tree_window', w::text, false)) s,
	LATERAL tw_rows(q, 100000000, true) r, LATERAL tw_rows(q, lim, false) p
ORDER BY w, lim, q::text;
SET gpuidx.tree_window = 1000;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- under a LIMIT the planner prices the custom scan's start as the first
-- window's share of the index's work, not the whole tree's
CREATE FUNCTION tw_startup(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_bitmapscan = off;
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
	RETURN (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Startup Cost')::float8;
END $$;
SELECT tw_startup($$SELECT id FROM tw WHERE v @@ 'alphabet & gamma' LIMIT 10$$) AS windowed \gset
SET gpuidx.tree_window = 0;
SELECT tw_startup($$SELECT id FROM tw WHERE v @@ 'alphabet & gamma' LIMIT 10$$) AS whole \gset
RESET gpuidx.tree_window;
SELECT :windowed > 0 AND :windowed < 0.2 * :whole AS first_window_priced;
DROP TABLE tw, tw_queries;
DROP FUNCTION tw_rows, tw_startup;
