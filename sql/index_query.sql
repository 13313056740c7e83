-- @@&: "the document contains every lexeme of the query", the same rows row
-- by row (no index), through a gpuidx index on text or on tsvector, and as
-- GIN answers to_tsvector(cfg, body) @@ plainto_tsquery(cfg, query)
SET client_min_messages = warning;
-- the index's own scans here (bitmap scans); the custom scan: customscan.sql
SET gpuidx.enable_customscan = off;

-- documents of words drawn with a skewed (Zipf-like) law, deterministically
CREATE TABLE words (n int PRIMARY KEY, w text);
INSERT INTO words
SELECT row_number() OVER (), w FROM unnest(string_to_array(
  'index posting list query engine database table row column vacuum replica ' ||
  'compress decode encode block page buffer cache worker kernel thread batch ' ||
  'search rank score term lexeme token parser stemmer dictionary segment merge ' ||
  'pending insert update delete commit abort crash recovery standby primary ' ||
  'gpu cpu memory disk network latency throughput bandwidth elias fano linear ' ||
  'regression skip galloping intersection union difference bitmap tuple heap ' ||
  'planner executor optimizer statistics histogram selectivity estimate cost', ' ')) w;
CREATE TABLE docs (id int PRIMARY KEY, body text, tsv tsvector) WITH (autovacuum_enabled = off);
INSERT INTO docs (id, body)
SELECT g, string_agg(w.w, ' ' ORDER BY k)
FROM generate_series(1, 2000) g, generate_series(1, 4 + g % 9) k,
     LATERAL (SELECT w FROM words
              WHERE n = 1 + floor(power(((g * 7919 + k * 104729) % 1000003) / 1000003.0, 2.5) * 84)::int) w
GROUP BY g;
UPDATE docs SET body = body || ' The Quick-Brown foxes were JUMPING, quickly!' WHERE id % 100 = 7;
INSERT INTO docs (id, body) VALUES (9001, NULL), (9002, ''), (9003, 'the and of a');
UPDATE docs SET tsv = to_tsvector('english', body);
CREATE INDEX docs_body ON docs USING gpuidx (body);
CREATE INDEX docs_tsv ON docs USING gpuidx (tsv);
CREATE INDEX docs_gin ON docs USING gin (to_tsvector('english', body));
ANALYZE docs;

-- the query set: single terms, pairs, triples, stop words, stemming, case
CREATE TABLE queries (q text);
INSERT INTO queries
SELECT w FROM words
UNION ALL SELECT a.w || ' ' || b.w FROM words a, words b WHERE a.n < b.n AND (a.n * 31 + b.n) % 29 = 0
UNION ALL SELECT a.w || ' ' || b.w || ' ' || c.w FROM words a, words b, words c
          WHERE a.n < b.n AND b.n < c.n AND (a.n * 131 + b.n * 17 + c.n) % 401 = 0
UNION ALL VALUES ('quick fox'), ('QUICK FOXES'), ('jumped'), ('quickly jumping brown'),
                 ('Index, postings!'), ('the index'), ('index index index'), ('no-such-word');

-- row by row, with no index at all
SET enable_bitmapscan = off;
SET enable_indexscan = off;
-- (each document against every query: documents outer, so each is parsed once)
CREATE TABLE seq_body AS SELECT q, array_agg(m.id ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL) ids
FROM queries LEFT JOIN (SELECT d.id, x.q AS mq FROM docs d,
                        LATERAL (SELECT q FROM queries WHERE d.body @@& q) x) m ON m.mq = q
GROUP BY q;
CREATE TABLE seq_tsv AS SELECT q, array_agg(m.id ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL) ids
FROM queries LEFT JOIN (SELECT d.id, x.q AS mq FROM docs d,
                        LATERAL (SELECT q FROM queries WHERE d.tsv @@& q) x) m ON m.mq = q
GROUP BY q;
RESET enable_bitmapscan;
RESET enable_indexscan;

-- the same through each index, one query at a time
CREATE FUNCTION ids_of(pred text, query text) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE r int[];
BEGIN
  SET LOCAL enable_seqscan = off;
  EXECUTE format('SELECT array_agg(id ORDER BY id) FROM docs WHERE %s', pred) INTO r USING query;
  RETURN r;
END $$;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE s.ids IS NOT DISTINCT FROM ids_of('body @@& $1', s.q)) AS gpuidx_text,
       count(*) FILTER (WHERE s.ids IS NOT DISTINCT FROM ids_of('tsv @@& $1', s.q)) AS gpuidx_tsvector,
       count(*) FILTER (WHERE s.ids IS NOT DISTINCT FROM
             ids_of('to_tsvector(''english'', body) @@ plainto_tsquery(''english'', $1)', s.q)) AS gin,
       count(*) FILTER (WHERE s.ids IS NOT DISTINCT FROM t.ids) AS seq_tsvector,
       count(*) FILTER (WHERE s.ids IS NOT NULL) AS with_rows
FROM seq_body s JOIN seq_tsv t USING (q);

-- the plans those were: bitmap scans of each index
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE body @@& 'vacuum replica';
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE tsv @@& 'vacuum replica';
RESET enable_seqscan;

-- semantics: stemming, case, punctuation, repeated words, stop words
SELECT id FROM docs WHERE body @@& 'QUICK FOXES' ORDER BY id LIMIT 5;
SELECT id FROM docs WHERE body @@& 'jumped quickly brown' ORDER BY id LIMIT 5;
SELECT count(*) FROM docs WHERE body @@& 'index index index';
SELECT count(*) FROM docs WHERE body @@& 'the index';
SELECT count(*) FROM docs WHERE body @@& 'index';
SELECT 'The Quick-Brown foxes'::text @@& 'quick brown fox' AS text_doc,
       to_tsvector('english', 'The Quick-Brown foxes') @@& 'quick brown fox' AS tsvector_doc,
       'a fox'::text @@& 'fox dog' AS missing_term;

-- a query without lexemes (empty, only stop words) matches no row: like
-- @@ with an empty tsquery, with or without an index
SELECT count(*) FROM docs WHERE body @@& '';
SELECT count(*) FROM docs WHERE body @@& 'the and of a';
SELECT count(*) FROM docs WHERE tsv @@& '  ,.;  ';
SET enable_seqscan = off;
SELECT count(*) FROM docs WHERE body @@& '';
SELECT count(*) FROM docs WHERE body @@& 'the and of a';
SELECT count(*) FROM docs WHERE tsv @@& '  ,.;  ';
RESET enable_seqscan;
SELECT count(*) FROM docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', 'the and of a');

-- NULL documents and NULL queries never match
SELECT count(*) FROM docs WHERE body IS NULL;
SELECT count(*) FROM docs WHERE NOT (body @@& 'index') IS NOT NULL;
SELECT count(*) FROM docs WHERE body @@& NULL;
SET enable_seqscan = off;
SELECT count(*) FROM docs WHERE body @@& NULL;
RESET enable_seqscan;

-- several @@& on one column are ANDed
SET enable_seqscan = off;
SELECT count(*) FROM docs WHERE body @@& 'index' AND body @@& 'vacuum';
RESET enable_seqscan;
SELECT count(*) FROM docs WHERE body @@& 'index vacuum';

-- the configuration is gpuidx.text_config: 'simple' does not stem; an index
-- built under 'english' cannot answer then (a prohibitive cost), and when
-- forced it still gives the right rows (every heap page, rechecked)
SET gpuidx.text_config = 'simple';
SELECT count(*) FROM docs WHERE body @@& 'foxes';
SELECT count(*) FROM docs WHERE body @@& 'fox';
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM docs WHERE body @@& 'foxes';
RESET enable_seqscan;
-- a plan made under 'english' and run under 'simple' uses the index anyway:
-- every heap page is rechecked row by row, so the rows are still right
RESET gpuidx.text_config;
SET plan_cache_mode = force_generic_plan;
PREPARE by_index(text) AS SELECT count(*) FROM docs WHERE body @@& $1;
EXPLAIN (COSTS OFF) EXECUTE by_index('foxes');
EXECUTE by_index('foxes');
SET gpuidx.text_config = 'simple';
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF) EXECUTE by_index('foxes');
EXECUTE by_index('foxes');
EXECUTE by_index('fox');
RESET gpuidx.text_config;
EXECUTE by_index('fox');
DEALLOCATE by_index;
RESET plan_cache_mode;

-- each index names its configuration (the option text_config, else the
-- setting when it was built, then written into its options): indexes in
-- several languages on one column, each query using the one of its
-- configuration; REINDEX keeps it whatever the setting.  A tsvector index
-- has none in its options (its documents are lexemes already): its stats
-- show the setting it was last built under
CREATE TABLE multi (id int, body text, tsv tsvector);
INSERT INTO multi VALUES
	(1, 'Die Häuser und die Katzen', NULL), (2, 'the houses and the cats', NULL),
	(3, 'ein Haus am See', NULL), (4, 'a house by the lake', NULL),
	(5, 'Häuser houses Katze cat', NULL);
UPDATE multi SET tsv = to_tsvector('german', body);
CREATE INDEX multi_de ON multi USING gpuidx (body) WITH (text_config = 'german');
CREATE INDEX multi_en ON multi USING gpuidx (body);
CREATE INDEX multi_simple ON multi USING gpuidx (body) WITH (text_config = simple);
CREATE INDEX multi_tsv ON multi USING gpuidx (tsv);
SELECT relname, reloptions, (gpuidx_index_stats(oid)).config FROM pg_class
WHERE relname LIKE 'multi\_%' ORDER BY 1;
SET enable_seqscan = off;
SET gpuidx.text_config = 'german';
EXPLAIN (COSTS OFF) SELECT id FROM multi WHERE body @@& 'Haus';
SELECT array_agg(id ORDER BY id) FROM multi WHERE body @@& 'Haus';
SET gpuidx.text_config = 'english';
EXPLAIN (COSTS OFF) SELECT id FROM multi WHERE body @@& 'house';
SELECT array_agg(id ORDER BY id) FROM multi WHERE body @@& 'house';
SET gpuidx.text_config = 'simple';
EXPLAIN (COSTS OFF) SELECT id FROM multi WHERE body @@& 'houses';
SELECT array_agg(id ORDER BY id) FROM multi WHERE body @@& 'houses';
-- a tsvector index answers under any configuration: only the query's
-- lexemes depend on it, as row by row
SET gpuidx.text_config = 'german';
EXPLAIN (COSTS OFF) SELECT id FROM multi WHERE tsv @@& 'Häuser';
SELECT array_agg(id ORDER BY id) FROM multi WHERE tsv @@& 'Häuser';
SET gpuidx.text_config = 'english';
EXPLAIN (COSTS OFF) SELECT id FROM multi WHERE tsv @@& 'katze';
SELECT array_agg(id ORDER BY id) FROM multi WHERE tsv @@& 'katze';
RESET enable_seqscan;
SELECT array_agg(id ORDER BY id) FROM multi WHERE tsv @@& 'katze';
-- REINDEX under another setting keeps each index's configuration
SET gpuidx.text_config = 'simple';
REINDEX TABLE multi;
SELECT relname, (gpuidx_index_stats(oid)).config FROM pg_class WHERE relname LIKE 'multi\_%' ORDER BY 1;
-- ALTER INDEX ... SET (text_config) takes effect at REINDEX: until then the
-- index answers under the configuration it was built with
ALTER INDEX multi_simple SET (text_config = 'german');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM multi WHERE body @@& 'houses';
SELECT array_agg(id ORDER BY id) FROM multi WHERE body @@& 'houses';
REINDEX INDEX multi_simple;
SELECT (gpuidx_index_stats('multi_simple')).config;
EXPLAIN (COSTS OFF) SELECT id FROM multi WHERE body @@& 'houses';
RESET enable_seqscan;
-- bad options
CREATE INDEX ON multi USING gpuidx (body) WITH (text_config = 'no_such_config');
CREATE INDEX ON multi USING gpuidx (body) WITH (text_config = 'a.b.c');
ALTER INDEX multi_de SET (text_config = 'no_such_config');
RESET gpuidx.text_config;
DROP TABLE multi;

-- the planner: an index scan for a selective query, and for one that most
-- rows match (82% here) too: a sequential scan checks @@& on every row,
-- which costs more than reading the index's exact answer
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE body @@& 'planner optimizer';
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE tsv @@& 'planner optimizer';
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE tsv @@& 'index';
-- row estimates come from the index's own term counts
CREATE FUNCTION plan_rows(query text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN ' || query LOOP
    RETURN (regexp_match(l, 'rows=(\d+)'))[1]::int;
  END LOOP;
END $$;
SELECT q, (SELECT count(*) FROM docs WHERE body @@& q) AS actual,
       plan_rows(format('SELECT * FROM docs WHERE body @@& %L', q)) AS estimated
FROM (VALUES ('index'), ('vacuum replica'), ('planner optimizer histogram'), ('no-such-word')) v(q);

-- rows still in the pending area count in the estimates (a sample of it is
-- read): an index whose rows are all pending is not taken for empty
CREATE TABLE pend (id int, body text) WITH (autovacuum_enabled = off);
CREATE INDEX pend_idx ON pend USING gpuidx (body) WITH (pending_list_limit = 2097151);
INSERT INTO pend SELECT g, 'row' || g || CASE WHEN g % 4 = 0 THEN ' quarter' ELSE '' END
	|| CASE WHEN g % 100 = 0 THEN ' hundredth' ELSE '' END FROM generate_series(1, 20000) g;
SELECT segments, pending_entries FROM gpuidx_index_stats('pend_idx');
SELECT q, (SELECT count(*) FROM pend WHERE body @@& q) AS actual,
       plan_rows(format('SELECT * FROM pend WHERE body @@& %L', q)) AS estimated
FROM (VALUES ('quarter'), ('hundredth'), ('quarter hundredth'), ('no-such-word')) v(q);

-- a query looks the pending area up by term in this backend's index of it:
-- built at the first query, extended with the entries appended since (only
-- their pages read), made again once a merge moves the area's head; the
-- same rows as row by row all along
CREATE FUNCTION pend_counts(q text, OUT indexed bigint, OUT row_by_row bigint) LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE 'EXECUTE pcount(' || quote_literal(q) || ')' INTO indexed;
	PERFORM set_config('enable_seqscan', 'on', true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	PERFORM set_config('gpuidx.enable_customscan', 'off', true);
	SELECT count(*) INTO row_by_row FROM pend WHERE body @@& q;
END $$;
SET enable_seqscan = off;
SET plan_cache_mode = force_generic_plan;
PREPARE pcount(text) AS SELECT count(*) FROM pend WHERE body @@& $1;
EXECUTE pcount('hundredth');
BEGIN;
SELECT pg_stat_get_xact_blocks_fetched('pend_idx'::regclass) AS fetched \gset
EXECUTE pcount('quarter');
SELECT pg_stat_get_xact_blocks_fetched('pend_idx'::regclass) - :fetched < 4 AS pending_pages_unread;
COMMIT;
-- new entries, one of them over several pages
INSERT INTO pend SELECT g, 'late quarter' || CASE WHEN g = 20005
	THEN (SELECT string_agg(' big' || i, '') FROM generate_series(1, 3000) i) ELSE '' END
	FROM generate_series(20001, 20010) g;
SELECT * FROM pend_counts('late quarter');
SELECT * FROM pend_counts('big2999 late');
SELECT * FROM pend_counts('quarter hundredth');
SELECT gpuidx_merge_pending('pend_idx') > 0 AS merged;
INSERT INTO pend VALUES (20011, 'after the merge quarter'), (20012, 'after the merge');
SELECT * FROM pend_counts('merge');
SELECT * FROM pend_counts('quarter');
DEALLOCATE pcount;
RESET plan_cache_mode;
RESET enable_seqscan;
DROP FUNCTION pend_counts;
DROP TABLE pend;

-- a skewed query reads of the long list only its skip entries and the
-- blocks the short list's postings fall in: the same rows as a sequential
-- scan, whichever blocks those are
CREATE TABLE skew (id int, body text) WITH (autovacuum_enabled = off);
INSERT INTO skew SELECT g, 'row' || g
	|| CASE WHEN (g::bigint * 7919) % 1000 < 300 THEN ' scattered' ELSE '' END
	|| CASE WHEN g % 10007 = 0 THEN ' rare' ELSE '' END
	|| CASE WHEN g % 997 = 0 OR g = 1 OR g = 400000 THEN ' edge' ELSE '' END FROM generate_series(1, 400000) g;
CREATE INDEX skew_idx ON skew USING gpuidx (body) WITH (codec = ef);
SET enable_seqscan = off;
SELECT count(*) AS rare_scattered, sum(id) FROM skew WHERE body @@& 'rare scattered';
SELECT count(*) AS edge_scattered, sum(id) FROM skew WHERE body @@& 'edge scattered';
SELECT count(*) AS rare_edge_scattered FROM skew WHERE body @@& 'rare edge scattered';
RESET enable_seqscan;
SET enable_bitmapscan = off;
SELECT count(*) AS rare_scattered, sum(id) FROM skew WHERE body @@& 'rare scattered';
SELECT count(*) AS edge_scattered, sum(id) FROM skew WHERE body @@& 'edge scattered';
SELECT count(*) AS rare_edge_scattered FROM skew WHERE body @@& 'rare edge scattered';
RESET enable_bitmapscan;
DROP TABLE skew;
-- a backend keeps a long list's checked skip entries for its later
-- queries; a table truncated in the transaction that made it rebuilds its
-- index in the same file, where new segments and lists take the old ones'
-- places: the queries after it see the new rows
BEGIN;
CREATE TABLE skew2 (id int, body text);
INSERT INTO skew2 SELECT g, 'row' || g
	|| CASE WHEN (g::bigint * 7919) % 1000 < 300 THEN ' scattered' ELSE '' END
	|| CASE WHEN g % 10007 = 0 THEN ' rare' ELSE '' END FROM generate_series(1, 400000) g;
CREATE INDEX skew2_idx ON skew2 USING gpuidx (body) WITH (codec = ef);
SET LOCAL enable_seqscan = off;
SELECT count(*) AS rare_scattered, sum(id) FROM skew2 WHERE body @@& 'rare scattered';
TRUNCATE skew2;
INSERT INTO skew2 SELECT g, 'row' || g
	|| CASE WHEN (g::bigint * 7919 + 500) % 1000 < 300 THEN ' scattered' ELSE '' END
	|| CASE WHEN g % 10007 = 3 THEN ' rare' ELSE '' END FROM generate_series(1, 400000) g;
SELECT gpuidx_merge_pending('skew2_idx') > 0 AS merged;
SELECT count(*) AS rare_scattered, sum(id) FROM skew2 WHERE body @@& 'rare scattered';
SET LOCAL enable_seqscan = on;
SET LOCAL enable_bitmapscan = off;
SET LOCAL gpuidx.enable_customscan = off;
SELECT count(*) AS rare_scattered, sum(id) FROM skew2 WHERE body @@& 'rare scattered';
ROLLBACK;

-- Web search syntax means nothing to @@& (every word is required): a
-- notice, once a statement, whether rows or the index answer; none for
-- words that merely hold a hyphen or the letters "or"
SET client_min_messages = notice;
CREATE TABLE ws (id int, body text);
INSERT INTO ws VALUES (1, 'json parser perl'), (2, 'json parser'), (3, 'parser json tools oregon');
CREATE INDEX ws_body ON ws USING gpuidx (body);
SELECT id FROM ws WHERE body @@& '"json parser" -perl' ORDER BY id;
SELECT id FROM ws WHERE body @@& 'json or perl' ORDER BY id;
SELECT id FROM ws WHERE body @@& 'json-parser oregon' ORDER BY id;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ws WHERE body @@& '"json parser" -perl';
SELECT id FROM ws WHERE body @@& '"json parser" -perl' ORDER BY id;
RESET enable_seqscan;
-- a text index built under another configuration than the session's is
-- passed over by the planner: a notice says why (none while another
-- gpuidx index of the table answers)
SET gpuidx.text_config = 'simple';
EXPLAIN (COSTS OFF) SELECT id FROM ws WHERE body @@& 'json';
CREATE INDEX ws_body_simple ON ws USING gpuidx (body);
EXPLAIN (COSTS OFF) SELECT id FROM ws WHERE body @@& 'json';
RESET gpuidx.text_config;
DROP TABLE ws;
SET client_min_messages = warning;
