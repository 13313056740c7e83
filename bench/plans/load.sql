-- bench/plans/run.sh: the first :rows documents of a corpus in plans_docs,
-- their tsvector stored, a gpuidx index and a GIN index on it; the first
-- :nq queries of 2 to 5 words in plans_queries.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP TABLE IF EXISTS plans_src, plans_docs, plans_queries;
CREATE UNLOGGED TABLE plans_src (id int, body text);
-- the documents come on psql's standard input (run.sh: head -n ROWS docs.tsv)
\copy plans_src FROM pstdin WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')
CREATE TABLE plans_docs (id int PRIMARY KEY, body text, tsv tsvector);
INSERT INTO plans_docs SELECT id, body, to_tsvector('english', body) FROM plans_src;
DROP TABLE plans_src;
CREATE UNLOGGED TABLE plans_src (qid int, q text);
\set load '\\copy plans_src FROM ' :'queries' ' WITH (FORMAT csv, DELIMITER E''\\t'', QUOTE E''\\x01'')'
:load
CREATE TABLE plans_queries AS
SELECT row_number() OVER (ORDER BY qid) AS n, q FROM plans_src
WHERE array_length(regexp_split_to_array(btrim(q), '\s+'), 1) BETWEEN 2 AND 5 ORDER BY qid LIMIT :nq;
CREATE UNIQUE INDEX ON plans_queries (n);
DROP TABLE plans_src;
SET maintenance_work_mem = '256MB';
CREATE INDEX plans_docs_gpuidx ON plans_docs USING gpuidx (tsv);
CREATE INDEX plans_docs_gin ON plans_docs USING gin (tsv);
VACUUM (FREEZE, ANALYZE) plans_docs;
SELECT format('COMMENT ON TABLE plans_docs IS %L', :'tag') \gexec
