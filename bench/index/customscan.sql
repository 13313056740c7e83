-- The custom scan against the bitmap scan and GIN (bench/results/customscan.md): run after
-- bench/index/run.sh debian-paths-1m 1000000 ... has loaded bench_docs (psql -f, same server).
-- Default planner settings: each column is the plan the planner picks with the custom scan on
-- (custom) or off (bitmap), which for a frequent query may be a sequential scan.
CREATE INDEX IF NOT EXISTS bench_gpx ON bench_docs USING gpuidx (body);
CREATE INDEX IF NOT EXISTS bench_gin ON bench_docs USING gin (to_tsvector('english', body)) WITH (fastupdate = off);
VACUUM ANALYZE bench_docs;
CREATE OR REPLACE FUNCTION best_ms(sql text, reps int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; best float8 := 1e9; n bigint;
BEGIN
  FOR i IN 1..reps LOOP
    t0 := clock_timestamp();
    EXECUTE sql INTO n;
    best := least(best, extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP;
  RETURN round(best::numeric, 2);
END $$;
SELECT q, (SELECT count(*) FROM bench_docs WHERE body @@& q) AS rows,
  best_ms(format('SELECT count(*) FROM bench_docs WHERE body @@& %L', q), 5) AS custom_ms,
  (SELECT set_config('gpuidx.enable_customscan','off',false)) IS NOT NULL AND true AS x,
  best_ms(format('SELECT count(*) FROM bench_docs WHERE body @@& %L', q), 5) AS bitmap_ms,
  (SELECT set_config('gpuidx.enable_customscan','on',false)) IS NOT NULL AS y,
  best_ms(format('SELECT count(*) FROM bench_docs WHERE to_tsvector(''english'', body) @@ plainto_tsquery(''english'', %L)', q), 5) AS gin_ms
FROM unnest(ARRAY['usr share doc', 'usr share', 'usr lib', 'usr share man', 'python3 dist packages', 'usr share locale lc_messages']) q;

SET work_mem = '1MB';
SELECT 'custom' m, best_ms($$SELECT count(*) FROM bench_docs WHERE body @@& 'usr lib'$$, 3);
SELECT 'custom ids' m, best_ms($$SELECT count(id) FROM bench_docs WHERE body @@& 'usr lib'$$, 3);
SET gpuidx.enable_customscan = off;
SELECT 'bitmap' m, best_ms($$SELECT count(*) FROM bench_docs WHERE body @@& 'usr lib'$$, 3);
SELECT 'bitmap ids' m, best_ms($$SELECT count(id) FROM bench_docs WHERE body @@& 'usr lib'$$, 3);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(id) FROM bench_docs WHERE body @@& 'usr lib';
SELECT 'gin ids' m, best_ms($$SELECT count(id) FROM bench_docs WHERE to_tsvector('english', body) @@ plainto_tsquery('english', 'usr lib')$$, 3);
SET work_mem = '64MB';
SELECT 'bitmap ids 64MB' m, best_ms($$SELECT count(id) FROM bench_docs WHERE body @@& 'usr lib'$$, 3);
RESET gpuidx.enable_customscan;
SELECT 'custom ids 64MB' m, best_ms($$SELECT count(id) FROM bench_docs WHERE body @@& 'usr lib'$$, 3);
SELECT 'custom limit 10' m, best_ms($$SELECT count(*) FROM (SELECT id FROM bench_docs WHERE body @@& 'usr lib' LIMIT 10) x$$, 3);
SET gpuidx.enable_customscan = off;
SELECT 'bitmap limit 10' m, best_ms($$SELECT count(*) FROM (SELECT id FROM bench_docs WHERE body @@& 'usr lib' LIMIT 10) x$$, 3);
