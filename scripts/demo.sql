-- gpuidx demo: posting lists as values, then real posting lists built from a
-- corpus with PostgreSQL's own text search, and their size against int4[].
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
