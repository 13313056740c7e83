-- Generated from README.md by scripts/readme_sql.sh: edit README.md, then
-- `make readme-sql`.  The README's SQL in order, in a database of its own.
SET client_min_messages = warning;
\set regress_db :DBNAME
DROP DATABASE IF EXISTS gpuidx_readme;
CREATE DATABASE gpuidx_readme TEMPLATE template0;
\c gpuidx_readme

-- README.md, SQL block 1
CREATE EXTENSION gpuidx;
CREATE TABLE docs (id int PRIMARY KEY, lang text, title text, body text);
INSERT INTO docs VALUES
  (1, 'en', 'GPU search', 'A GPU inverted index answers full-text queries in PostgreSQL'),
  (2, 'en', 'Indexes', 'PostgreSQL index access methods: btree, GIN and gpuidx'),
  (3, 'de', 'Katzen', 'Katzen und Hunde spielen im Garten');
CREATE INDEX docs_body_idx ON docs USING gpuidx (body);
SELECT id FROM docs WHERE body @@& 'gpu inverted index';   -- every term must occur: 1

-- README.md, SQL block 2
SELECT '{3,9,27,81}'::postinglist & '{1,3,9}'::postinglist;   -- {3,9}
SELECT pl_codec(p), pl_length(p), pg_column_size(p) FROM (SELECT pl_agg(g) AS p FROM generate_series(1, 1000000, 3) g) s;

-- README.md, SQL block 3
SELECT 'The Quick-Brown foxes'::text @@& 'quick fox';          -- true
SELECT to_tsvector('english', 'a fox') @@& 'fox dog';          -- false
-- docs_body_idx (above) indexes text: gpuidx_text_ops; a tsvector column, an expression, a part
ALTER TABLE docs ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED;
CREATE INDEX docs_tsv_idx ON docs USING gpuidx (tsv) WITH (codec = ef);    -- gpuidx_tsvector_ops
CREATE INDEX docs_title_idx ON docs USING gpuidx (lower(title)) WHERE lang = 'en';
SELECT id FROM docs WHERE tsv @@& 'postgresql index' ORDER BY id;          -- 1, 2
SELECT id FROM docs WHERE lower(title) @@& 'search' AND lang = 'en';       -- 1

-- a table of three rows is read whole; to see the index's plan on it:
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM docs WHERE body @@& 'postgresql index';
--  Custom Scan (gpuidx)
--    Index: docs_body_idx
--    Aggregate: count(*) of the matches, counted in the scan
--    Heap: only pages not all-visible

-- several languages on one column: each query uses the index of its configuration
CREATE INDEX docs_body_de_idx ON docs USING gpuidx (body) WITH (text_config = 'german');
SET gpuidx.text_config = 'german';
SELECT id FROM docs WHERE body @@& 'Katze';                     -- 3, with docs_body_de_idx
RESET gpuidx.text_config;

-- README.md, SQL block 4
CREATE INDEX docs_fts_idx ON docs USING gpuidx (to_tsvector('english', body));
SELECT id FROM docs WHERE to_tsvector('english', body) @@ websearch_to_tsquery('english', 'postgresql -gin');  -- 1
SELECT id FROM docs WHERE tsv @@ to_tsquery('english', 'index:* & !gpu');               -- 2
SELECT id FROM docs WHERE tsv @@ phraseto_tsquery('english', 'access methods');         -- 2
SELECT id FROM docs WHERE tsv @@ to_tsquery('english', 'postgresql')
  ORDER BY tsv <=> to_tsquery('english', 'gpu | index') LIMIT 2;                        -- 1, 2

-- README.md, SQL block 5
SELECT id FROM docs WHERE tsv @@ phraseto_tsquery('english', 'access methods');         -- 2
SELECT position_bytes IS NOT NULL AS has_positions FROM gpuidx_index_stats('docs_tsv_idx');    -- true
ALTER INDEX docs_tsv_idx SET (positions = off);
REINDEX INDEX docs_tsv_idx;                                     -- no positions from now on
SELECT position_bytes IS NULL AS no_positions FROM gpuidx_index_stats('docs_tsv_idx');    -- true
ALTER INDEX docs_tsv_idx RESET (positions);
REINDEX INDEX docs_tsv_idx;

-- README.md, SQL block 6
SELECT id, round(gpuidx_bm25(body, 'gpu index')::numeric, 3) AS score
FROM docs ORDER BY body <=> 'gpu index' LIMIT 10;          -- any term, best first: 1, 2, 3
SELECT id FROM docs WHERE body @@& 'gpu index'
ORDER BY body <=> 'gpu index' LIMIT 10;                    -- every term, ranked: 1

EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY body <=> 'gpu index' LIMIT 10;
--  Limit
--    ->  Custom Scan (gpuidx rank) on docs
--          Index: docs_body_idx
--          Order By: (body <=> gpuidx_rank_query('gpu index'::text, 'docs_body_idx'::regclass))

-- README.md, SQL block 7: answers not compared
\o /dev/null
-- postgresql.conf: shared_preload_libraries = 'gpuidx'   (restart)
SELECT serving, engine, device, batches, requests, worker_rounds, backend_rounds,
       cache_hits, cache_bytes, fallback_timeout, wait_p50_us, wait_p99_us
FROM gpuidx_worker_stats;          -- superusers and pg_monitor

EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM docs WHERE body @@& 'amd64 modules kernel lib';
--  Custom Scan (gpuidx) (actual time=0.812..0.815 rows=1 loops=1)
--    Index: docs_body_idx
--    Aggregate: count(*) of the matches, counted in the scan
--    Heap: only pages not all-visible
--    Index Matches: 36674
--    Heap Fetches: 0
--    All-Visible Unread: 36674
--    Rounds on Worker: 3
--    Rounds in Backend: 0
--    Worker Requests: 1
--    Worker Engine: GPU
--    Worker Fallbacks: 0
--    Bytes Sent: 0 bytes
--    Cache Hits: 4
--    Batch Size: 1.0
--    Worker Wait: 0.571 ms
--  Execution Time: 0.857 ms        (gpuidx on the CPU: 4.3 ms; GIN: 38.3 ms)

SET gpuidx.device = cpu;           -- this session off the worker
RESET gpuidx.device;
\o

\c :regress_db
DROP DATABASE gpuidx_readme;
