-- one method of bench.sql: build, size, latency (every query :reps times
-- after a warm-up), inserts; appended to bench_results.  Variable: method.
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;
-- default planner settings: uses_index says whether the plan is the method's index
SELECT ddl, pred FROM bench_methods WHERE method = :'method' \gset
-- gpuidx answers through its custom scan; gpuidx_bitmap through its bitmap scan
SELECT set_config('gpuidx.enable_customscan', (:'method' NOT LIKE '%\_bitmap')::text, false) AS customscan \gset
DROP INDEX IF EXISTS bench_idx;
CHECKPOINT;
SELECT bench_build(:'ddl') AS build_ms \gset
SELECT pg_relation_size('bench_idx') AS size \gset
-- the plan is the method's index
SELECT :'method' AS method, bench_uses_index(:'pred') AS uses_index, :build_ms AS build_ms, :size AS size;
DELETE FROM bench_times WHERE method = :'method';
-- warm-up, then the timed runs
SELECT bench_run(:'method', :'pred', 0) AS warm_up \gset
SELECT bench_run(:'method', :'pred', :reps) AS timed \gset
-- inserts: 10,000 rows one transaction each, then the same rows in one statement
SET synchronous_commit = off;
CALL bench_inserts(NULL) \gset
SELECT pg_relation_size('bench_idx') AS size_after_inserts \gset
DELETE FROM bench_docs WHERE id > :ndocs;
SELECT bench_build('INSERT INTO bench_docs SELECT * FROM bench_new') AS bulk_ms \gset
DELETE FROM bench_docs WHERE id > :ndocs;
INSERT INTO bench_results
SELECT :'corpus', :ndocs, :'method', :build_ms, :size,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms), percentile_cont(0.99) WITHIN GROUP (ORDER BY t.ms),
  percentile_cont(0.5) WITHIN GROUP (ORDER BY t.ms) FILTER (WHERE c.frequent >= 2),
  percentile_cont(0.99) WITHIN GROUP (ORDER BY t.ms) FILTER (WHERE c.frequent >= 2),
  sum(t.n) / :reps, :rows_s, :bulk_ms, :size_after_inserts
FROM bench_times t JOIN bench_qclass c USING (qid) WHERE t.method = :'method';
DROP INDEX bench_idx;
VACUUM bench_docs;
