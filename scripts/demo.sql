-- gpuidx demo: posting lists as values; a real corpus indexed by gpuidx and
-- by GIN side by side (size, build time, a query and its plan); then the
-- corpus's posting lists as values and their size against int4[].
\pset footer off
\timing off
CREATE EXTENSION gpuidx;

\echo '--- posting lists as values'
SELECT '{3,9,27,81}'::postinglist & '{1,3,9}'::postinglist AS "intersection (&)",
       '{3,9}'::postinglist | '{1,2}'::postinglist AS "union (|)",
       '{3,9,27}'::postinglist - '{9}'::postinglist AS "difference (-)",
       '{3,9,27}'::postinglist @> 27::bigint AS "contains (@>)";
SELECT pl_codec(p), pl_length(p), pg_column_size(p) AS bytes
FROM (VALUES ('{1,5,9}'::postinglist), (pl_range(1, 1000000)), ((SELECT pl_agg(g * 7) FROM generate_series(1, 100000) g))) v(p);

\echo '--- a real corpus:' :docs
CREATE TABLE docs (id int PRIMARY KEY, body text);
-- (\copy does not expand variables, so the command is built first)
\set load_docs '\\copy docs FROM ' :'docs' ' WITH (FORMAT csv, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:load_docs
SELECT count(*) AS documents, pg_size_pretty(pg_relation_size('docs')) AS heap FROM docs;

\echo '--- full-text AND search: a gpuidx index and a GIN index on the same column'
CREATE TABLE builds (index text, seconds numeric);
DO $$
DECLARE t0 timestamptz;
BEGIN
  t0 := clock_timestamp();
  CREATE INDEX docs_gpuidx ON docs USING gpuidx (body);
  INSERT INTO builds VALUES ('docs_gpuidx', round(extract(epoch FROM clock_timestamp() - t0)::numeric, 2));
  t0 := clock_timestamp();
  CREATE INDEX docs_gin ON docs USING gin (to_tsvector('english', body));
  INSERT INTO builds VALUES ('docs_gin', round(extract(epoch FROM clock_timestamp() - t0)::numeric, 2));
END $$;
VACUUM ANALYZE docs;
SELECT index, pg_size_pretty(pg_relation_size(index::regclass)) AS size, seconds AS build_seconds,
       round(pg_relation_size(index::regclass)::numeric / pg_relation_size('docs_gin'), 2) AS size_vs_gin
FROM builds;
SELECT segments, docs, terms, postings, pg_size_pretty(dictionary_bytes) AS dictionary,
       pg_size_pretty(list_bytes) AS lists, pg_size_pretty(docmap_bytes) AS doc_map
FROM gpuidx_index_stats('docs_gpuidx');

\echo '--- a query: every package whose description has all of "python library json"'
SELECT id, left(body, 70) AS description FROM docs WHERE body @@& 'python library json' ORDER BY id LIMIT 5;
SELECT count(*) AS gpuidx FROM docs WHERE body @@& 'python library json';
SELECT count(*) AS gin FROM docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', 'python library json');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM docs WHERE body @@& 'python library json';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', 'python library json');
\echo '--- ranked search: the 5 best packages for "python library json" (BM25, any term), served by the index'
EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY body <=> 'python library json' LIMIT 5;
SELECT id, round(gpuidx_bm25(body, 'python library json')::numeric, 3) AS bm25, left(body, 60) AS description
FROM docs ORDER BY body <=> 'python library json' LIMIT 5;
\echo '--- ranked among the packages with every term'
SELECT id, round(gpuidx_bm25(body, 'python library json')::numeric, 3) AS bm25, left(body, 60) AS description
FROM docs WHERE body @@& 'python library json' ORDER BY body <=> 'python library json' LIMIT 3;
\echo '--- gpuidx_verify: the index checked against its table'
SELECT gpuidx_verify('docs_gpuidx');

-- one posting list per lexeme of to_tsvector('english', body)
CREATE TABLE terms AS
SELECT t.lexeme AS term, pl_agg(d.id) AS postings, array_agg(d.id ORDER BY d.id) AS ids
FROM docs d, unnest(to_tsvector('english', d.body)) t
GROUP BY t.lexeme;

\echo '--- all posting lists: postinglist against int4[]'
SELECT count(*) AS terms, sum(pl_length(postings)) AS postings,
       pg_size_pretty(sum(pg_column_size(postings))) AS postinglist,
       pg_size_pretty(sum(pg_column_size(ids))) AS "int4[]",
       round(sum(pg_column_size(ids))::numeric / sum(pg_column_size(postings)), 1) AS ratio
FROM terms;

\echo '--- the 5 longest lists'
SELECT term, pl_length(postings) AS postings, s.codec, s.bytes, round(s.bits_per_posting::numeric, 2) AS bits_per_posting,
       pg_column_size(ids) AS int4_bytes
FROM terms, pl_stats(postings) s
ORDER BY pl_length(postings) DESC LIMIT 5;

\echo '--- codecs chosen (auto: the smallest per list)'
SELECT pl_codec(postings) AS codec, count(*) AS lists, sum(pl_length(postings)) AS postings,
       pg_size_pretty(sum(pg_column_size(postings))) AS size
FROM terms GROUP BY 1 ORDER BY 1;

\echo '--- an AND query on the lists: documents with every term of "package manager for python"'
SELECT pl_length(pl_intersect(VARIADIC array_agg(postings))) AS documents,
       (pl_intersect(VARIADIC array_agg(postings))::int[])[1:10] AS first_ids
FROM terms WHERE term = ANY (tsvector_to_array(to_tsvector('english', 'package manager for python')));
