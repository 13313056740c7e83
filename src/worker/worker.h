/*
 * worker.h
 *	  The GPU worker as backends see it: settings, whether it serves, and one
 *	  call that has it intersect a query's lists.
 *
 * Processes (docs/WORKER.md):
 *	- the supervisor, a background worker registered when gpuidx is in
 *	  shared_preload_libraries ("gpuidx worker" in pg_stat_activity): it owns
 *	  no device; it starts the engine process, restarts it when it dies,
 *	  reclaims what abandoned requests held, and stops it at shutdown;
 *	- the engine process, forked by the supervisor: it loads the engine
 *	  (CUDA, else the CPU engine), takes requests from the shared queue in
 *	  batches and answers them.  It is no postmaster child, so its death
 *	  (a driver fault, SIGKILL) restarts only it, never the cluster; it
 *	  takes no lock, only atomic slot states, so it can die anywhere.
 *	- backends submit a request into a slot, its lists' bytes into the shared
 *	  arena, and sleep on their latch until answered or timed out.
 */
#ifndef GPX_WORKER_H
#define GPX_WORKER_H

#include "postgres.h"

#include "gpuidx_engine.h"
#include "sched/placement.h"

/* gpuidx.device */
typedef enum GpxDevice
{
	GPX_DEVICE_AUTO,			/* the worker when its engine has a GPU */
	GPX_DEVICE_WORKER,			/* the worker whatever its engine (tests) */
	GPX_DEVICE_CPU				/* never the worker */
} GpxDevice;

extern int	gpx_device;
extern int	gpx_gpu_timeout_ms;
extern GpxPlacementConfig gpx_placement;

/* why a query that could have gone to the worker ran on the CPU */
typedef enum GpxFallback
{
	GPX_FALLBACK_ABSENT,		/* no engine process serving */
	GPX_FALLBACK_QUEUE_FULL,
	GPX_FALLBACK_ARENA_FULL,	/* no room for its lists in the arena */
	GPX_FALLBACK_TIMEOUT,
	GPX_FALLBACK_ENGINE_ERROR,
	GPX_FALLBACK_WORKER_LOST,	/* the engine process died with it */
	GPX_FALLBACK_CANCELLED,		/* the query was cancelled while waiting */
	GPX_NUM_FALLBACKS
} GpxFallback;

extern void gpx_worker_define_settings(void);

/*
 * The engine gpuidx.engine_library names, created with cfg; else the CPU
 * engine, with why (empty when the configured one runs).  path: the library
 * as resolved.  NULL only when even the CPU engine cannot be created (why
 * says so).  Plain C, no ERROR: the engine process calls it too.
 */
extern const gpuidx_engine_api *gpx_engine_open(const gpuidx_engine_config *cfg, gpuidx_engine **engine,
												char *path, size_t pathlen, char *why, size_t whylen);
extern void gpx_worker_register(void);

/*
 * Does this query go to the worker at all (setting, worker present and
 * serving, an engine worth it)?  Cheap: a few shared reads.
 */
extern bool gpx_worker_wanted(void);

/* is the worker preloaded (whatever its state), and not turned off by gpuidx.device? */
extern bool gpx_worker_present(void);

/*
 * Intersect lists (encoded bytes, header included) through the worker into
 * out (room for out_capacity ids, at least the shortest list's count).
 * Returns true with *count set when the worker answered; false when the
 * caller must answer on the CPU (the reason counted in the statistics).
 */
extern bool gpx_worker_intersect(const void *const *lists, const uint64 *lens, int n,
								 uint32 *out, uint32 out_capacity, uint32 *count);

/* this backend's share of the statistics, for EXPLAIN ANALYZE */
typedef struct GpxLocalStats
{
	uint64		requests;		/* answered by the worker */
	uint64		worker_rounds;
	uint64		backend_rounds;
	uint64		fallbacks;
	uint64		bytes_sent;
	uint64		wait_us;		/* submission to answer, summed */
} GpxLocalStats;

extern GpxLocalStats gpx_local_stats;

/* rounds the placement kept in the backend, and rounds the worker ran, for the statistics */
extern void gpx_count_backend_rounds(uint32 rounds);
extern void gpx_count_worker_rounds(uint32 rounds);

/*
 * Intersect views (a query's lists, any order) placing rounds by
 * gpx_placement: the shortest lists through the worker when it serves and
 * the placement says so, the rest on the CPU.  out has room for the shortest
 * list.  Returns the count; CPU_CORRUPT-style damage is the caller's to
 * report (returned as is).
 */
struct pl_view;
extern uint32 gpx_intersect_placed(const struct pl_view **views, const void *const *bytes,
								   const uint64 *lens, int n, uint32 *out, bool *used_worker);

#endif							/* GPX_WORKER_H */
