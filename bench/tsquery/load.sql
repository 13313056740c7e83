-- bench/tsquery/run.sh: the documents on psql's standard input (the first
-- ROWS lines of docs.tsv) into two tables of the same rows in the same heap
-- order, docs_gpx and docs_gin, one for each index.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP TABLE IF EXISTS tsq_load, docs_gpx, docs_gin, tsq_meta;
CREATE UNLOGGED TABLE tsq_load (id int, body text);
\copy tsq_load FROM pstdin WITH (FORMAT csv, DELIMITER E'\t', QUOTE E'\x01')
CREATE TABLE docs_gpx (id int, body text);
CREATE TABLE docs_gin (id int, body text);
INSERT INTO docs_gpx SELECT id, body FROM tsq_load ORDER BY id;
INSERT INTO docs_gin SELECT id, body FROM tsq_load ORDER BY id;
DROP TABLE tsq_load;
-- what was loaded and how long each index took to build (run.sh fills it)
CREATE TABLE tsq_meta (k text PRIMARY KEY, v text);
