-- the intersection engine: the GPU when one is there, else the CPU, and
-- always the same answers; a missing or broken engine library is no error
SELECT engine IN ('cpu', 'cuda') AS known_engine, fallback_reason IS NOT NULL AS explained
FROM gpuidx_engine_info();

-- same answers as pl_intersect, every codec, skewed and similar lengths
SELECT gpuidx_engine_intersect(pl_range(0, 100), '{5,50,500}') = pl_intersect(pl_range(0, 100), '{5,50,500}') AS same;
SELECT c, gpuidx_engine_intersect(pl_encode(a, c), b, pl_range(0, 900000)) = pl_intersect(a, b, pl_range(0, 900000)) AS same,
       pl_length(gpuidx_engine_intersect(pl_encode(a, c), b)) AS n
FROM (SELECT pl_agg(g * 3) AS a, pl_agg(g * 5) FILTER (WHERE g % 2 = 0) AS b FROM generate_series(0, 300000) g) s,
     unnest(ARRAY['raw', 'ef', 'lrc']) c
ORDER BY c;
SELECT gpuidx_engine_intersect('{}', '{1}'), gpuidx_engine_intersect('{1,2}', NULL), gpuidx_engine_intersect(VARIADIC ARRAY[]::postinglist[]);

-- the GPU engine runs only in the GPU worker's engine process, never in a
-- backend (without the worker: settings_load)

-- the engine library is the server's, installed under $libdir
SET gpuidx.engine_library = '$libdir/gpuidx_cuda';
ALTER SYSTEM SET gpuidx.engine_library = '/nonexistent/gpuidx_cuda.so';
ALTER SYSTEM SET gpuidx.engine_library = '$libdir/../../../tmp/evil';
ALTER SYSTEM SET gpuidx.engine_library = '$libdir/';

-- the engine's functions are not every role's: gpuidx_engine_info (the
-- device, the library's path, the engine's errors) is pg_monitor's, as the
-- worker's counters are; gpuidx_engine_intersect, which sends any lists to
-- the shared worker, superusers' and whom they grant it
CREATE ROLE gpx_engine_nobody;
SET ROLE gpx_engine_nobody;
SELECT engine FROM gpuidx_engine_info();
SELECT gpuidx_engine_intersect('{1,2}', '{2}');
RESET ROLE;
GRANT pg_monitor TO gpx_engine_nobody;
SET ROLE gpx_engine_nobody;
SELECT engine IN ('cpu', 'cuda') AS known_engine FROM gpuidx_engine_info();
RESET ROLE;
DROP ROLE gpx_engine_nobody;
