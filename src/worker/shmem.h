/*
 * shmem.h
 *	  The GPU worker's memory, private to src/worker (made by setup.c): the
 *	  queue segment that the engine process shares (include/gpuidx_queue.h:
 *	  slots, requests' bytes, the drop ring, what the engine reports), and
 *	  the control block in PostgreSQL's own shared memory, which the engine
 *	  process cannot reach: who holds each slot, the arena's allocator, the
 *	  cache pins, the backends' counters.  Whatever the engine process can
 *	  write is checked before a PostgreSQL process trusts it.
 */
#ifndef GPX_WORKER_SHMEM_H
#define GPX_WORKER_SHMEM_H

#include "postgres.h"

#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "gpuidx_queue.h"
#include "worker/arena.h"
#include "worker/worker.h"

/* what a slot's request pins in the GPU cache directory */
typedef struct GpxCachePins
{
	uint32		n;
	int32		entry[GPX_RANK_MAX_PARTS];	/* directory entries; -1: none */
	bool		put[GPX_RANK_MAX_PARTS];	/* the entry is this request's load */
} GpxCachePins;

/* a slot as PostgreSQL's processes know it */
typedef struct GpxSlotOwner
{
	int			procno;			/* the backend that claimed it */
	uint64		offset;			/* its arena extent, GPX_NO_EXTENT: none yet */
	uint64		rank_postings;	/* a ranked request: its terms' postings; else 0 */
	GpxCachePins pins;
} GpxSlotOwner;

#define GPX_NO_EXTENT	PG_UINT64_MAX

/* the backends' and the supervisor's counters */
typedef enum GpxCounter
{
	GPX_STAT_GPU_ROUNDS,		/* rounds run by the worker's engine */
	GPX_STAT_CPU_ROUNDS,		/* rounds the placement kept in backends */
	GPX_STAT_BYTES_SENT,		/* list bytes copied into the arena */
	GPX_STAT_ENGINE_STARTS,
	GPX_STAT_ENGINE_STALLS,		/* engine processes killed for making no progress */
	GPX_STAT_CACHE_HITS,		/* lists sent by key */
	GPX_STAT_CACHE_MISSES,		/* cacheable lists sent with their bytes */
	GPX_STAT_CACHE_EVICTIONS,
	GPX_STAT_FALLBACK_FIRST,	/* then one per GpxFallback */
	GPX_NUM_COUNTERS = GPX_STAT_FALLBACK_FIRST + GPX_NUM_FALLBACKS
} GpxCounter;

#define GPX_WAIT_BUCKETS 32		/* wait times by powers of two of microseconds */

typedef struct GpxWorkerControl
{
	/* the supervisor */
	pid_t		supervisor_pid;
	int			supervisor_procno;
	pg_atomic_uint32 generation;	/* the engine started last (the cache directory's too) */
	pg_atomic_uint32 engine_pid;	/* 0: none */

	LWLock		arena_lock;		/* guards arena */
	int			arena_tranche;

	pg_atomic_uint64 counters[GPX_NUM_COUNTERS];
	pg_atomic_uint64 waits[GPX_WAIT_BUCKETS];
	/* the engine's counters at the last reset (the segment's are the engine's to write) */
	uint64		engine_base[GPX_ENGINE_NUM_COUNTERS];
	TimestampTz stats_reset;

	/*
	 * What ranked segments cost each way lately (GpxRankCosts's fields in
	 * order), for gpuidx.gpu_rank_backlog = -1: estimates, so backends
	 * update them without a lock and a lost update is only a lost sample
	 */
	pg_atomic_uint64 rank_local_ps[2][GPX_RANK_COST_BUCKETS];
	pg_atomic_uint64 rank_worker_ps[GPX_RANK_COST_BUCKETS];
	pg_atomic_uint64 rank_queue_ps;
	pg_atomic_uint64 rank_explored[2][GPX_RANK_COST_BUCKETS];	/* TimestampTz */

	Size		arena_offset;	/* of arena, from this struct's start */
	GpxSlotOwner owners[FLEXIBLE_ARRAY_MEMBER];	/* one per slot; then the GpxArena */
} GpxWorkerControl;

/* set up in every process by the postmaster (setup.c); NULL when gpuidx is not preloaded */
extern GpxQueueHeader *gpx_queue;

/*
 * The segment's layout as the postmaster made it, in each process's own
 * memory: never read back from the segment's header, which the engine
 * process can write.
 */
extern GpxQueueHeader gpx_layout;

static inline GpxQueueSlot *
gpx_slot(int i)
{
	return (GpxQueueSlot *) ((char *) gpx_queue + gpx_layout.slots_offset) + i;
}

static inline char *
gpx_arena_base(void)
{
	return (char *) gpx_queue + gpx_layout.arena_offset;
}

static inline uint64 *
gpx_drop_ring(void)
{
	return (uint64 *) ((char *) gpx_queue + gpx_layout.drops_offset);
}
extern GpxWorkerControl *gpx_control;
extern int	gpx_queue_fd;		/* the segment's memfd, for the engine process */

static inline GpxArena *
gpx_control_arena(void)
{
	return (GpxArena *) ((char *) gpx_control + gpx_control->arena_offset);
}

/* settings the supervisor and engine process use */
extern int	gpx_queue_slots_setting;
extern int	gpx_arena_kb;
extern int	gpx_gpu_cache_mb;
extern int	gpx_batch_window_us;
extern int	gpx_batch_max_work;
extern int	gpx_batch_max_requests;
extern int	gpx_engine_stall_ms;
extern char *gpuidx_engine_library;

/* setup.c */
extern void gpx_worker_publish_settings(void);
/* the engine library a new engine process loads ("" for none), resolved under $libdir */
extern void gpx_engine_library_path(char *path, size_t len);
/* the engine generation now serving requests, 0: none */
extern uint32 gpx_serving_generation(void);
/* CLOCK_MONOTONIC in nanoseconds, the engine process's clock too */
extern int64 gpx_monotonic_ns(void);

#endif							/* GPX_WORKER_SHMEM_H */
