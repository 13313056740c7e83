/*
 * worker.h
 *	  The GPU worker as backends see it: settings, whether it serves, and one
 *	  call that has it run a set operation (AND, AND NOT, OR) over a query's
 *	  lists, one that has it rank a segment.
 *
 * Processes (docs/WORKER.md):
 *	- the supervisor, a background worker registered when gpuidx is in
 *	  shared_preload_libraries ("gpuidx worker" in pg_stat_activity): it owns
 *	  no device; it execs the engine process, restarts it when it dies or
 *	  stalls, frees what abandoned requests held, and stops it at shutdown;
 *	- the engine process (src/engine_process, the program gpuidx_engine): it
 *	  loads the engine (CUDA, else the CPU engine), takes requests from the
 *	  queue in batches and answers them.  It maps only the queue segment
 *	  (gpuidx_queue.h), never PostgreSQL's shared memory, so its death (a
 *	  driver fault, SIGKILL) restarts only it, never the cluster;
 *	- backends submit a request into a slot, its lists into the segment's
 *	  arena (by key when the GPU list cache holds them, gpucache.h; else
 *	  their bytes), and wait on their latch and their socket to the engine
 *	  process until answered or timed out; they check the answer before
 *	  using it.
 */
#ifndef GPX_WORKER_H
#define GPX_WORKER_H

#include "postgres.h"

#include "pg_compat.h"

#include "gpuidx_engine.h"
#include "gpuidx_format.h"
#include "gpuidx_queue.h"
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
	GPX_FALLBACK_CACHE_LOST,	/* a list it named as cached was evicted or lost */
	GPX_FALLBACK_BAD_ANSWER,	/* the engine's answer did not check */
	GPX_NUM_FALLBACKS
} GpxFallback;

extern void gpx_worker_define_settings(void);

extern void gpx_worker_register(void);

/*
 * Does this query go to the worker at all (setting, worker present and
 * serving, an engine worth it)?  Cheap: a few shared reads.
 */
extern bool gpx_worker_wanted(void);

/* the bytes of the queue's arena (gpuidx.worker_arena_size): no request is larger */
extern uint64 gpx_worker_arena_bytes(void);

/* the bytes the worker's GPU cache holds (15/16 of gpuidx.gpu_cache_size; 0 without the worker) */
extern uint64 gpx_worker_cache_bytes(void);

/* is the worker preloaded (whatever its state), and not turned off by gpuidx.device? */
extern bool gpx_worker_present(void);

/*
 * A list of an index, known to the worker's GPU cache by where it is and
 * checked by its header.  Segments are immutable, so a key never goes stale
 * while its index lives; a relfilenode used again by a new index has its
 * old entries forgotten when the new one is built (gpx_cache_forget_index).
 */
typedef struct GpxListKey
{
	RelFileLocator node;		/* the index's */
	uint32		segment;		/* segment id */
	uint32		page;			/* where the list starts in the segment's lists */
	uint32		offset;
	uint32		kind;			/* GPX_PART_* */
} GpxListKey;

/* one list (or part) of a request to the worker */
typedef struct GpxWorkerList
{
	const void *bytes;			/* encoded list (header included); NULL when
								 * gpx_cache_holds said the cache has it */
	uint64		len;			/* 0 with bytes NULL: whatever length was cached
								 * (a segment's doc lengths, known by hdr) */
	bool		cacheable;		/* key and hdr are set */
	uint32		kind;			/* GPX_PART_* (gpuidx_queue.h) */
	GpxListKey	key;
	gpuidx_list_header hdr;		/* a part's identity: count, last, checksum */
} GpxWorkerList;

/* lists smaller than this go with every request: not worth a cache entry */
#define GPX_CACHE_MIN_BYTES 4096

/* does the worker's GPU cache hold this list now (its bytes need not be read)? */
extern bool gpx_cache_holds(const GpxListKey *key, const gpuidx_list_header *hdr, uint64 len);

/*
 * Not held: may this backend build it to send, or is another building it
 * (then the caller answers without the worker)?
 */
extern bool gpx_cache_claim_build(const GpxListKey *key, const gpuidx_list_header *hdr);

/*
 * The index stored in node is new (built, rebuilt, truncated) or gone:
 * whatever the GPU cache holds under node is forgotten and dropped from the
 * device.
 */
extern void gpx_cache_forget_index(RelFileLocator node);

/*
 * Intersect lists through the worker: 'result' says what comes back
 * (gpuidx_engine.h: every id, the first n, the count alone) into out (room
 * for out_capacity ids, at least what result asks of the shortest list).
 * Returns true with *count (ids in out) and *total (the intersection's
 * length) set when the worker answered; false when the caller must answer
 * on the CPU (the reason counted in the statistics).
 */
extern bool gpx_worker_intersect(const GpxWorkerList *lists, int n, uint32 result,
								 uint32 *out, uint32 out_capacity, uint32 *count, uint32 *total);

/*
 * The same for any set operation (gpuidx_engine.h gpuidx_query):
 *	- op GPUIDX_OP_AND: the intersection of lists[0 .. n - nexclude), less
 *	  each of the last nexclude lists ("a & b & !c" is lists a, b, c with
 *	  nexclude 1; nexclude < n); out_capacity at least what result asks of
 *	  the shortest list not excluded;
 *	- op GPUIDX_OP_OR: the union of the n lists, nexclude 0; out_capacity at
 *	  least what result asks of the sum of the lists' counts.
 * Returns as gpx_worker_intersect does, *total the result's length.
 * gpx_worker_intersect is this call with GPUIDX_OP_AND and nexclude 0.
 */
extern bool gpx_worker_setop(const GpxWorkerList *lists, int n, uint32 op, uint32 nexclude,
							 uint32 result, uint32 *out, uint32 out_capacity, uint32 *count,
							 uint32 *total);

/*
 * A ranked query over one segment through the worker (gpuidx_engine.h
 * gpuidx_rank_query): parts[0] the segment's doc lengths, then each term's
 * list and its tfs (GPX_PART_FREQS or GPX_PART_TFS), in the terms' order.
 * ndocs: the segment's docs; postings: its terms' postings (the request's
 * share of gpuidx.gpu_rank_backlog).
 * Returns true with the best *count (min(k, matched)) docs and their scores,
 * best first, and *matched; false when the caller must rank on the CPU.
 */
extern bool gpx_worker_rank(const GpxWorkerList *parts, const GpxRankParams *params, uint32 ndocs,
							uint64 postings, uint32 *docs, double *scores, uint32 *count, uint32 *matched);

/*
 * gpuidx.gpu_rank_backlog: the postings of ranked work (each ranked
 * request's terms' postings in its segment) the worker may hold at once
 * (0: no limit; -1: none, the costs decide), and what it holds now
 */
extern int	gpx_gpu_rank_backlog;
extern uint64 gpx_worker_rank_backlog(void);

/*
 * gpuidx.gpu_rank_backlog -1: does a ranked segment of this shape and
 * postings go to the worker, which holds backlog ranked postings?  By the
 * costs all backends measured (sched/placement.h, GpxRankCosts); once in
 * GPX_RANK_EXPLORE_US for each shape and size, one decision goes the other
 * way, so that neither estimate goes stale while the other way wins.  (By
 * time, not by count: where one way is fifty times the other, one decision
 * in 64 the slow way doubled the mean.)
 */
#define GPX_RANK_EXPLORE_US 1000000
extern bool gpx_worker_rank_prefers(bool every_term, uint64 postings, uint64 backlog);

/* what an eligible ranked segment took, ranked in this backend or through the worker */
extern void gpx_worker_note_local_rank(bool every_term, uint64 postings, uint64 ns);
extern void gpx_worker_note_worker_rank(uint64 postings, uint64 backlog, uint64 ns);

/* this backend's share of the statistics, for EXPLAIN ANALYZE */
typedef struct GpxLocalStats
{
	uint64		requests;		/* answered by the worker */
	uint64		gpu_requests;	/* of those, by its GPU engine */
	uint64		worker_rounds;
	uint64		backend_rounds;
	uint64		fallbacks;
	uint64		bytes_sent;
	uint64		cache_hits;		/* lists sent by key, their bytes on the GPU already */
	uint64		batched_with;	/* requests of the batches its requests ran in, summed */
	uint64		wait_us;		/* submission to answer, summed */
	uint64		list_blocks;	/* blocks of posting lists read in the backend */
} GpxLocalStats;

extern GpxLocalStats gpx_local_stats;

/* EXPLAIN ANALYZE: a scan's requests to the worker (both custom scans) */
struct ExplainState;
extern void gpx_explain_worker_requests(const GpxLocalStats *w, struct ExplainState *es);
/*
 * EXPLAIN ANALYZE of a scan that read lists and sent the worker none (its
 * rounds all kept in the backend, or none placed), where the worker was
 * wanted (gpuidx.device = worker, or auto with a GPU serving): a line that
 * says why
 */
extern void gpx_explain_worker_not_asked(const GpxLocalStats *w, struct ExplainState *es);

/* what this backend's counters gained since *since, added into *sum; *since then is now */
extern void gpx_local_stats_collect(GpxLocalStats *sum, GpxLocalStats *since);

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
