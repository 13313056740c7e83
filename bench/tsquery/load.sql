-- bench/tsquery/run.sh: the documents on psql's standard input (the first
-- ROWS lines of docs.tsv) into two tables of the same rows in the same heap
-- order for each layout of :layouts, one table for each index:
--   expr    docs_gpx, docs_gin (id, body): the index on to_tsvector('english', body)
--   column  docs_gpx_tsv, docs_gin_tsv (id, body, tsv): a stored tsvector
--           column, tsv = to_tsvector('english', body), and the index on tsv
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET synchronize_seqscans = off;   -- every copy in heap order from its first page
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP TABLE IF EXISTS tsq_load, docs_gpx, docs_gin, docs_gpx_tsv, docs_gin_tsv, tsq_meta;
SELECT 'expr' = ANY (string_to_array(:'layouts', ' ')) AS expr,
       'column' = ANY (string_to_array(:'layouts', ' ')) AS col \gset
CREATE UNLOGGED TABLE tsq_load (id int, body text);
\copy tsq_load FROM pstdin WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')
\if :expr
CREATE TABLE docs_gpx (id int, body text);
CREATE TABLE docs_gin (id int, body text);
INSERT INTO docs_gpx SELECT id, body FROM tsq_load ORDER BY id;
INSERT INTO docs_gin SELECT id, body FROM tsq_load ORDER BY id;
\endif
\if :col
CREATE TABLE docs_gpx_tsv (id int, body text, tsv tsvector);
CREATE TABLE docs_gin_tsv (id int, body text, tsv tsvector);
INSERT INTO docs_gpx_tsv SELECT id, body, to_tsvector('english', body) FROM tsq_load ORDER BY id;
INSERT INTO docs_gin_tsv SELECT id, body, tsv FROM docs_gpx_tsv;
\endif
DROP TABLE tsq_load;
-- what was loaded and how long each index took to build (run.sh fills it)
CREATE TABLE tsq_meta (k text PRIMARY KEY, v text);
