/*
 * queue.h
 *	  The shared memory between backends, the supervisor and the engine
 *	  process: request slots, the arena their bytes live in, the engine's
 *	  state and the statistics.  Private to src/worker.
 *
 * A slot's state moves by compare-and-swap only, so that the engine process
 * (which takes no lock) can die between any two steps:
 *
 *	FREE -> CLAIMED			a backend takes it (and fills it)
 *	CLAIMED -> SUBMITTED	the backend hands it over
 *	SUBMITTED -> RUNNING	the engine process takes it into a batch
 *	SUBMITTED -> CLAIMED	the backend withdraws it before that (then FREE)
 *	RUNNING -> DONE			answered (status and count set)
 *	RUNNING -> ABANDONED	the backend gave up while it ran
 *	ABANDONED -> RECLAIM	the engine process finished it anyway
 *	RUNNING -> FAILED		the engine process died with it (the supervisor)
 *	RECLAIM, ABANDONED(dead engine) -> FREE		the supervisor frees its bytes
 *	DONE, FAILED -> FREE	the backend, after reading the answer
 */
#ifndef GPX_WORKER_QUEUE_H
#define GPX_WORKER_QUEUE_H

#include "postgres.h"

#include <semaphore.h>

#include "port/atomics.h"
#include "utils/dsa.h"
#include "utils/timestamp.h"

#include "worker/gpucache.h"
#include "worker/worker.h"

typedef enum GpxSlotState
{
	GPX_SLOT_FREE = 0,
	GPX_SLOT_CLAIMED,
	GPX_SLOT_SUBMITTED,
	GPX_SLOT_RUNNING,
	GPX_SLOT_DONE,
	GPX_SLOT_ABANDONED,
	GPX_SLOT_RECLAIM,
	GPX_SLOT_FAILED
} GpxSlotState;

typedef struct GpxSlot
{
	pg_atomic_uint32 state;
	int			procno;			/* the submitting backend's PGPROC number */
	dsa_pointer request;		/* its bytes, for freeing */
	uint64		offset;			/* the same, from the arena's start */
	uint64		size;
	uint64		work;			/* postings of its lists */
	uint64		rank_docs;		/* a ranked request: its segment's docs; else 0 */
	TimestampTz submitted;
	/* set by the engine process before DONE */
	int32		status;			/* gpuidx_engine_status */
	uint32		out_count;
	uint32		batch_size;		/* requests in the batch it ran in */
} GpxSlot;

/*
 * A request's bytes in the arena: this header, the terms (gpucache.h), the
 * parts' bytes, a ranked request's GpxRankParams, out.  An intersection's
 * terms are its lists; a ranked request's are its parts (worker.h
 * gpx_worker_rank), at most GPX_RANK_MAX_PARTS.
 */
#define GPX_REQUEST_INTERSECT	0
#define GPX_REQUEST_RANK		1
#define GPX_RANK_MAX_PARTS		(1 + 2 * GPUIDX_ENGINE_MAX_TERMS)

/* a ranked request's answer: k doc ids, then (8-aligned) k scores */
static inline uint64
gpx_rank_docs_bytes(uint32 k)
{
	return MAXALIGN((uint64) k * sizeof(uint32));
}

typedef struct GpxRequest
{
	uint32		kind;			/* GPX_REQUEST_* */
	uint32		nterms;
	uint32		result;			/* gpuidx_query.result */
	uint32		out_capacity;	/* ids; ranked: docs, then as many doubles */
	uint32		total;			/* set by the engine: the intersection's length */
	uint32		pad;
	uint64		out_offset;		/* of the result from the request's start */
	uint64		params_offset;	/* ranked: of its GpxRankParams */
	GpxRequestTerm terms[FLEXIBLE_ARRAY_MEMBER];
} GpxRequest;

/* statistics: plain counters, added to with atomics */
typedef enum GpxCounter
{
	GPX_STAT_REQUESTS,			/* requests the worker answered */
	GPX_STAT_BATCHES,
	GPX_STAT_GPU_ROUNDS,		/* rounds run by the worker's engine */
	GPX_STAT_CPU_ROUNDS,		/* rounds the placement kept in backends */
	GPX_STAT_BYTES_SENT,		/* list bytes copied into the arena */
	GPX_STAT_ENGINE_STARTS,
	GPX_STAT_CACHE_HITS,		/* lists sent by key */
	GPX_STAT_CACHE_MISSES,		/* cacheable lists sent with their bytes */
	GPX_STAT_CACHE_EVICTIONS,
	GPX_STAT_BYTES_RETURNED,	/* result ids the engine copied back */
	GPX_STAT_BATCH_HOST_US,		/* the engine's time: planning and staging */
	GPX_STAT_BATCH_DEVICE_US,	/* uploads, kernels, their round trips */
	GPX_STAT_BATCH_RETURN_US,	/* results back into the arena */
	GPX_STAT_FALLBACK_FIRST,	/* then one per GpxFallback */
	GPX_NUM_COUNTERS = GPX_STAT_FALLBACK_FIRST + GPX_NUM_FALLBACKS
} GpxCounter;

#define GPX_WAIT_BUCKETS 32		/* wait times by powers of two of microseconds */

typedef struct GpxWorkerShared
{
	int			arena_tranche;
	int			nslots;
	Size		arena_size;
	char	   *arena;			/* the in-place DSA area, same address in every process */

	sem_t		wakeup;			/* posted by backends, waited on by the engine process */

	/* the supervisor and the engine process */
	pid_t		supervisor_pid;
	int			supervisor_procno;
	pg_atomic_uint32 engine_pid;	/* 0: none */
	pg_atomic_uint32 engine_ready;	/* serving requests */
	pg_atomic_uint32 engine_is_gpu;
	pg_atomic_uint32 shutdown;
	char		engine_kind[16];
	char		device_name[96];
	char		engine_note[256];	/* why the CPU engine, the last engine error */

	/* settings the engine process reads (it reloads no configuration) */
	pg_atomic_uint32 batch_window_us;
	pg_atomic_uint64 batch_max_work;
	pg_atomic_uint32 batch_max_requests;

	pg_atomic_uint64 counters[GPX_NUM_COUNTERS];
	pg_atomic_uint64 waits[GPX_WAIT_BUCKETS];
	TimestampTz stats_reset;

	GpxSlot		slots[FLEXIBLE_ARRAY_MEMBER];
} GpxWorkerShared;

extern GpxWorkerShared *gpx_worker_shared;

/* settings the supervisor and engine process use */
extern int	gpx_queue_slots;
extern int	gpx_arena_kb;
extern int	gpx_gpu_cache_mb;
extern int	gpx_batch_window_us;
extern int	gpx_batch_max_work;
extern int	gpx_batch_max_requests;
extern char *gpuidx_engine_library;

extern dsa_area *gpx_worker_arena(void);
/* a slot's request freed (its cache pins and loads settled), the slot FREE */
extern void gpx_slot_release(GpxSlot *slot);
extern void gpx_worker_publish_settings(void);
extern void gpx_count(GpxCounter c, uint64 n);

/* worker.c */
PGDLLEXPORT void gpx_worker_main(Datum arg);

#endif							/* GPX_WORKER_QUEUE_H */
