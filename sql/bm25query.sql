-- Ranking with a collection's statistics (bm25query): a table split in two
-- parts, each with its own index, ranks as one table with one index when
-- each part is given the statistics of both; gpuidx_term_stats against a
-- count from the rows; the type's text form and its errors.
SET client_min_messages = warning;
CREATE TABLE bq_all (id int PRIMARY KEY, body text, tv tsvector);
INSERT INTO bq_all
SELECT i, string_agg('w' || ((i * 7919 + j * 104729) % 60)::text || CASE WHEN j % 4 = 0 THEN ' gpu' ELSE '' END, ' '),
       to_tsvector('english', string_agg('t' || ((i * 31 + j * 17) % 40)::text, ' '))
FROM generate_series(1, 3000) i, generate_series(1, 1 + i % 11) j GROUP BY i;
CREATE TABLE bq_a AS SELECT * FROM bq_all WHERE id % 2 = 0;
CREATE TABLE bq_b AS SELECT * FROM bq_all WHERE id % 2 = 1;
CREATE INDEX bq_all_body ON bq_all USING gpuidx (body);
CREATE INDEX bq_all_tv ON bq_all USING gpuidx (tv);
CREATE INDEX bq_a_body ON bq_a USING gpuidx (body);
CREATE INDEX bq_a_tv ON bq_a USING gpuidx (tv);
CREATE INDEX bq_b_body ON bq_b USING gpuidx (body);
CREATE INDEX bq_b_tv ON bq_b USING gpuidx (tv);
ANALYZE bq_all, bq_a, bq_b;
-- the statistics of the parts, as a coordinator reads them from its shards
CREATE VIEW bq_parts_body AS
  SELECT * FROM gpuidx_term_stats('bq_a_body') UNION ALL SELECT * FROM gpuidx_term_stats('bq_b_body');
CREATE VIEW bq_parts_tv AS
  SELECT * FROM gpuidx_term_stats('bq_a_tv') UNION ALL SELECT * FROM gpuidx_term_stats('bq_b_tv');

-- each lexeme's df: the index's, counted from the rows, and the parts' sum
CREATE FUNCTION bq_df_differences(tab regclass, idx regclass, parts regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; m bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((SELECT lexeme, documents FROM gpuidx_term_stats(%L) WHERE lexeme IS NOT NULL
      EXCEPT SELECT l, count(*) FROM %s, unnest(CASE WHEN %L LIKE ''%%body'' THEN to_tsvector(''english'', body) ELSE tv END) u(l) GROUP BY l)
    UNION ALL (SELECT l, count(*) FROM %s, unnest(CASE WHEN %L LIKE ''%%body'' THEN to_tsvector(''english'', body) ELSE tv END) u(l) GROUP BY l
      EXCEPT SELECT lexeme, documents FROM gpuidx_term_stats(%L) WHERE lexeme IS NOT NULL)) d',
    idx, tab, idx::text, tab, idx::text, idx) INTO n;
  EXECUTE format('SELECT count(*) FROM ((SELECT lexeme, documents, length FROM gpuidx_term_stats(%L)
      EXCEPT SELECT lexeme, sum(documents)::bigint, sum(length)::bigint FROM %s GROUP BY lexeme)
    UNION ALL (SELECT lexeme, sum(documents)::bigint, sum(length)::bigint FROM %s GROUP BY lexeme
      EXCEPT SELECT lexeme, documents, length FROM gpuidx_term_stats(%L))) d', idx, parts, parts, idx) INTO m;
  RETURN n + m;
END $$;
SELECT bq_df_differences('bq_all', 'bq_all_body', 'bq_parts_body') AS body_differences,
       bq_df_differences('bq_all', 'bq_all_tv', 'bq_parts_tv') AS tv_differences;
SELECT count(*) > 60 AS lexemes, count(*) FILTER (WHERE lexeme IS NULL) AS totals_rows,
       max(documents) FILTER (WHERE lexeme IS NULL) AS documents,
       max(config::text) AS config, max(k1) AS k1, max(b) AS b
FROM gpuidx_term_stats('bq_all_body');
SELECT config IS NULL AS tsvector_has_no_config FROM gpuidx_term_stats('bq_all_tv') WHERE lexeme IS NULL;

-- the query from the parts' statistics is the one from the whole table's
SELECT gpuidx_bm25query('gpu w7 w13 nothere', 'bq_parts_body');
CREATE VIEW bq_all_terms AS SELECT * FROM gpuidx_term_stats('bq_all_body');
SELECT gpuidx_bm25query('gpu w7 w13 nothere', 'bq_parts_body')::text =
       gpuidx_bm25query('gpu w7 w13 nothere', 'bq_all_terms')::text AS same_statistics;

-- the top k merged from the parts, each ranked by its index with the
-- statistics of both, against the whole table's index: the same scores to
-- the bit, and the same rows above the k-th score (rows tied with it are
-- taken in each index's TID order, which the parts do not share)
CREATE FUNCTION bq_same(whole text, merged text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE a text; b text; ka text; kb text;
BEGIN
  EXECUTE format('SELECT string_agg(float8send(s)::text, '' '' ORDER BY s DESC), min(s) FROM (%s) x', whole) INTO a;
  EXECUTE format('SELECT string_agg(float8send(s)::text, '' '' ORDER BY s DESC), min(s) FROM (%s) x', merged) INTO b;
  EXECUTE format('SELECT string_agg(id::text, '' '' ORDER BY id) FROM (%s) x WHERE s > (SELECT min(s) FROM (%s) y)', whole, whole) INTO ka;
  EXECUTE format('SELECT string_agg(id::text, '' '' ORDER BY id) FROM (%s) x WHERE s > (SELECT min(s) FROM (%s) y)', merged, merged) INTO kb;
  RETURN a IS NOT NULL AND a = b AND ka IS NOT DISTINCT FROM kb;
END $$;
CREATE FUNCTION bq_compare(q text, k int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE bq bm25query := gpuidx_bm25query(q, 'bq_parts_body');
        tsq tsquery := to_tsquery('english', replace(q, ' ', ' | '));
        tq bm25query := gpuidx_bm25query(to_tsquery('english', replace(q, ' ', ' | ')), 'bq_parts_tv');
        text_same boolean; tsvector_same boolean;
BEGIN
  text_same := bq_same(format('SELECT id, -(body <=> %L) s FROM bq_all ORDER BY body <=> %L LIMIT %s', q, q, k),
    format('SELECT id, s FROM ((SELECT id, -(body <=> %L::bm25query) s FROM bq_a ORDER BY body <=> %L::bm25query LIMIT %s)
      UNION ALL (SELECT id, -(body <=> %L::bm25query) s FROM bq_b ORDER BY body <=> %L::bm25query LIMIT %s)) u
      ORDER BY s DESC LIMIT %s', bq, bq, k, bq, bq, k, k));
  tsvector_same := bq_same(format('SELECT id, -(tv <=> %L::tsquery) s FROM bq_all ORDER BY tv <=> %L::tsquery LIMIT %s', tsq, tsq, k),
    format('SELECT id, s FROM ((SELECT id, -(tv <=> %L::bm25query) s FROM bq_a ORDER BY tv <=> %L::bm25query LIMIT %s)
      UNION ALL (SELECT id, -(tv <=> %L::bm25query) s FROM bq_b ORDER BY tv <=> %L::bm25query LIMIT %s)) u
      ORDER BY s DESC LIMIT %s', tq, tq, k, tq, tq, k, k));
  RETURN CASE WHEN text_same AND tsvector_same THEN 'same' ELSE 'DIFFERENT' END;
END $$;
SELECT q, k, bq_compare(q, k) FROM (VALUES ('gpu', 10), ('w7 w13', 10), ('w1 w2 w3 w4 gpu', 25), ('w59', 5), ('t3 t7', 10), ('t1 t39 w5', 30)) v(q, k);

-- the parts rank through their indexes, with the given statistics
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM bq_a ORDER BY body <=> 'config=pg_catalog.english k1=1.2 b=0.75 documents=10 length=50 terms=''gpu'':3'::bm25query LIMIT 3;
RESET enable_seqscan;
-- the row functions give the index's values
WITH q AS (SELECT gpuidx_bm25query('w7 gpu', 'bq_parts_body') q)
SELECT count(*) AS rows, count(*) FILTER (WHERE -(body <=> q) = gpuidx_bm25(body, q)) AS equal
FROM (SELECT id, body, q FROM bq_a, q ORDER BY body <=> q LIMIT 50) x;

-- pending rows, deletes, VACUUM: the same in the parts and the whole
INSERT INTO bq_all SELECT id + 10000, body || ' gpu w7', tv FROM bq_all WHERE id <= 40;
INSERT INTO bq_a SELECT id + 10000, body || ' gpu w7', tv FROM bq_all WHERE id <= 40 AND id % 2 = 0;
INSERT INTO bq_b SELECT id + 10000, body || ' gpu w7', tv FROM bq_all WHERE id <= 40 AND id % 2 = 1;
DELETE FROM bq_all WHERE id % 13 = 0;
DELETE FROM bq_a WHERE id % 13 = 0;
DELETE FROM bq_b WHERE id % 13 = 0;
SELECT bq_df_differences('bq_all', 'bq_all_body', 'bq_parts_body') <> 0 AS index_counts_deleted_rows_until_vacuum;
SELECT q, k, bq_compare(q, k) FROM (VALUES ('gpu w7', 20), ('w7 w13', 10), ('t3 t7', 10)) v(q, k);
VACUUM bq_all, bq_a, bq_b;
SELECT bq_df_differences('bq_all', 'bq_all_body', 'bq_parts_body') AS differences_after_vacuum;
SELECT q, k, bq_compare(q, k) FROM (VALUES ('gpu w7', 20), ('w7 w13', 10), ('t3 t7', 10)) v(q, k);

-- the text form: canonical (sorted lexemes, quotes doubled, qualified configuration)
SELECT 'config=english k1=2 b=0.5 documents=100 length=700 terms=''zeta'':4 ''it''''s'':2 ''alpha'':9'::bm25query;
SELECT 'config=simple k1=1.2 b=0.75 documents=0 length=0 terms='::bm25query;
SELECT 'config=english k1=1.2 b=0.75 documents=5 length=9 terms=''a'':6'::bm25query;
SELECT 'config=english k1=1.2 b=0.75 documents=5 length=9 terms=''a'':1 ''a'':2'::bm25query;
SELECT 'config=english k1=-1 b=0.75 documents=5 length=9 terms='::bm25query;
SELECT 'config=english k1=1 b=1.5 documents=5 length=9 terms='::bm25query;
SELECT 'config=nosuch k1=1 b=0.5 documents=5 length=9 terms='::bm25query;
SELECT 'config=english k1=1 b=0.5 documents=5 terms='::bm25query;
SELECT 'config=english k1=1 b=0.5 documents=5 length=9 terms=''a'''::bm25query;
SELECT 'config=english k1=1 b=0.5 documents=5 length=9 terms=''a:1'::bm25query;
-- a text index reads documents under its configuration: another one is refused
SET enable_seqscan = off;
SELECT id FROM bq_a ORDER BY body <=> 'config=simple k1=1.2 b=0.75 documents=10 length=50 terms=''gpu'':3'::bm25query LIMIT 1;
RESET enable_seqscan;
-- statistics without a totals row, or shards that disagree
CREATE TABLE bq_bad AS SELECT * FROM gpuidx_term_stats('bq_a_body') WHERE lexeme IS NOT NULL;
SELECT gpuidx_bm25query('gpu', 'bq_bad');
SELECT gpuidx_bm25query('gpu', 4294967295::oid::regclass);
ALTER INDEX bq_b_body SET (k1 = 2);
SELECT gpuidx_bm25query('gpu', 'bq_parts_body');
ALTER INDEX bq_b_body RESET (k1);
-- a role that may not read the table may not read its index's statistics
CREATE ROLE bq_reader;
SET ROLE bq_reader;
SELECT count(*) FROM gpuidx_term_stats('bq_a_body');
RESET ROLE;
DROP ROLE bq_reader;
DROP TABLE bq_all, bq_a, bq_b, bq_bad CASCADE;
DROP FUNCTION bq_df_differences, bq_compare, bq_same;
