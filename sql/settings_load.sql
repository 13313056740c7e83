-- What depends on shared_preload_libraries = 'gpuidx' (expected/
-- settings_load.out without it, settings_load_1.out with it).
--
-- Settings made before the library is loaded in a session (this file's
-- first statements: without the preload nothing has loaded it yet) are
-- checked when it loads: a configuration that does not exist is an error at
-- every use, never a quiet fall back to the default.  Preloaded, the SET
-- itself is refused.
SET gpuidx.text_config = 'no_such_config';
SELECT 'a fox'::text @@& 'fox';
SHOW gpuidx.text_config;
CREATE TABLE settings_load_t (body text);
CREATE INDEX ON settings_load_t USING gpuidx (body);
RESET gpuidx.text_config;
SELECT 'a fox'::text @@& 'fox';
DROP TABLE settings_load_t;
-- the worker's server settings exist only when gpuidx is preloaded
SHOW gpuidx.worker_queue_slots;
SHOW gpuidx.gpu_cache_size;
-- without the worker, its view says nothing serves (t/010 checks it with one)
SELECT current_setting('shared_preload_libraries') ~ '\mgpuidx\M' AS preloaded \gset
-- and, the GPU engine running only in the worker's engine process, never
-- in a backend, the CPU engine answers in the session
\if :preloaded
\else
SELECT serving, engine, requests, slots_in_use FROM gpuidx_worker_stats;
SELECT count(*) AS placement_rows FROM gpuidx_rank_placement;
SELECT engine, device, fallback_reason FROM gpuidx_engine_info();
\endif
