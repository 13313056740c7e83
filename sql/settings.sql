-- The settings, the same with or without shared_preload_libraries =
-- 'gpuidx' (what differs is settings_load's)
SELECT 'a fox'::text @@& 'fox';
-- once the library is loaded, a configuration that does not exist is refused when set, and
-- so is a malformed one
SET gpuidx.text_config = 'no_such_config';
SET gpuidx.text_config = 'a.b.c';
SHOW gpuidx.text_config;
-- the prefix is reserved: a misspelt setting is an error
SET gpuidx.text_confg = 'english';

-- the GPU worker's session settings with their bounds (server ones: settings_load)
SHOW gpuidx.device;
SET gpuidx.device = cpu;
SET gpuidx.device = gpu;
RESET gpuidx.device;
SHOW gpuidx.gpu_timeout;
SET gpuidx.gpu_timeout = 0;
SET gpuidx.gpu_timeout = '250ms';
SHOW gpuidx.gpu_timeout;
RESET gpuidx.gpu_timeout;
SHOW gpuidx.cpu_ratio_threshold;
SET gpuidx.cpu_ratio_threshold = 0;
SHOW gpuidx.gpu_min_postings;
SET gpuidx.gpu_min_postings = -1;
SHOW gpuidx.gpu_rank_backlog;
SET gpuidx.gpu_rank_backlog = -2;
SET gpuidx.gpu_rank_backlog = 262144;
SET gpuidx.gpu_rank_backlog = 0;
RESET gpuidx.gpu_rank_backlog;
-- rows a count checks before it takes parallel workers too (0: never)
SHOW gpuidx.parallel_check_rows;
SET gpuidx.parallel_check_rows = -1;
SET gpuidx.parallel_check_rows = 0;
RESET gpuidx.parallel_check_rows;
-- what a query may ask of the worker that all share is a superuser's to change
CREATE ROLE regress_gpx_plain;
SET ROLE regress_gpx_plain;
SET gpuidx.gpu_min_postings = 0;
SET gpuidx.gpu_rank_backlog = 0;
SET gpuidx.cpu_ratio_threshold = 1000000;
SET gpuidx.gpu_timeout = '2s';
SET gpuidx.device = cpu;
RESET ROLE;
DROP ROLE regress_gpx_plain;
SET gpuidx.batch_window = 10;
SHOW gpuidx.engine_stall_timeout;
SHOW gpuidx.batch_window;
SHOW gpuidx.batch_max_requests;
SET gpuidx.batch_max_requests = 1;
-- placement, with the worker or without it (everything kept here): the same answer
SET gpuidx.device = worker;
SET gpuidx.gpu_min_postings = 0;
SELECT pl_length(pl_intersect(pl_range(0, 99999), pl_range(50000, 149999), pl_range(70000, 70009)));
RESET gpuidx.device;
RESET gpuidx.gpu_min_postings;
