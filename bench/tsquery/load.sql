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
CREATE UNLOGGED TABLE tsq_load_tsv AS SELECT id, body, to_tsvector('english', body) AS tsv FROM tsq_load;
CREATE TABLE docs_gpx_tsv (id int, body text, tsv tsvector);
CREATE TABLE docs_gin_tsv (id int, body text, tsv tsvector);
INSERT INTO docs_gpx_tsv SELECT id, body, tsv FROM tsq_load_tsv ORDER BY id;
INSERT INTO docs_gin_tsv SELECT id, body, tsv FROM tsq_load_tsv ORDER BY id;
DROP TABLE tsq_load_tsv;
\endif
DROP TABLE tsq_load;
-- both tables of a layout alike, row for row: the same rows inserted in the
-- same order land in the same places (a short row may fill an earlier
-- page's free space, so a heap's order is id order only nearly, and the
-- two layouts' heaps differ: their rows are of other lengths)
CREATE FUNCTION pg_temp.tsq_same_heap(a regclass, b regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	differ bool;
BEGIN
	EXECUTE format('SELECT true FROM %s x FULL JOIN %s y ON x.ctid = y.ctid WHERE x.id IS DISTINCT FROM y.id LIMIT 1', a, b)
		INTO differ;
	IF differ THEN
		RAISE EXCEPTION '% and % differ in their heap order', a, b;
	END IF;
END $$;
\if :expr
SELECT pg_temp.tsq_same_heap('docs_gpx', 'docs_gin') \gset
\endif
\if :col
SELECT pg_temp.tsq_same_heap('docs_gpx_tsv', 'docs_gin_tsv') \gset
\endif
-- what was loaded and how long each index took to build (run.sh fills it)
CREATE TABLE tsq_meta (k text PRIMARY KEY, v text);
