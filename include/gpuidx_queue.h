/*
 * gpuidx_queue.h
 *	  The GPU worker's queue segment: the only memory the engine process
 *	  shares with PostgreSQL's processes, and its layout.  Plain C, no
 *	  PostgreSQL header: the extension (src/worker) and the engine program
 *	  (src/engine_process) both include it.
 *
 * The postmaster creates the segment (a memfd) when it creates its own
 * shared memory, so every backend inherits it at the same address; the
 * supervisor hands its descriptor to each engine process it execs, which
 * maps nothing else of PostgreSQL's.  Backends treat whatever the engine
 * process wrote here as untrusted: they bound and check it before use.
 *
 * Layout: GpxQueueHeader, the slots, the ring of cache keys to drop, the
 * arena that requests' bytes live in (offsets only: each process maps the
 * segment where it likes).
 *
 * A slot's state moves by compare-and-swap only, so that any process can
 * die between two steps.  The states a running engine owns carry its
 * generation, so that a slot an old engine took can never be mistaken for
 * one a new engine took (the supervisor fails and frees only the slots of
 * an engine it knows is gone):
 *
 *	FREE -> CLAIMED				a backend takes it (bytes allocated, request written)
 *	CLAIMED -> SUBMITTED		the backend hands it over
 *	SUBMITTED -> CLAIMED		the backend withdraws it before an engine took it
 *	SUBMITTED -> RUNNING(g)		engine g takes it into a batch
 *	RUNNING(g) -> DONE(g)		engine g answered (status and count set)
 *	RUNNING(g) -> ABANDONED(g)	the backend gave up (time-out, cancel, exit, engine lost)
 *	ABANDONED(g) -> RECLAIM(g)	engine g finished it anyway
 *	RUNNING(g) -> FAILED(g)		the supervisor, once engine g is gone
 *	RECLAIM(g), ABANDONED(g) -> FREE	the supervisor (the latter once g is gone)
 *	DONE, FAILED -> FREE		the backend, after reading the answer
 */
#ifndef GPUIDX_QUEUE_H
#define GPUIDX_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuidx_engine.h"

#define GPX_QUEUE_MAGIC		0x51585047	/* "GPXQ" */
#define GPX_QUEUE_VERSION	2

/*
 * The engine process's listening socket, relative to the data directory:
 * every PostgreSQL process and the engine run there, and the directory
 * admits only the server's own user.
 */
#define GPX_ENGINE_SOCKET	"pg_stat_tmp/gpuidx_engine.sock"

/* the descriptors an engine process starts with */
#define GPX_ENGINE_FD_SEGMENT	3
#define GPX_ENGINE_FD_CONTROL	4	/* a socket to its supervisor */

/* ---------------------------------------------------------------------------
 * Atomics: GCC/Clang builtins with the ordering each use needs, so the
 * protocol holds on weakly ordered CPUs too.
 */
static inline uint32_t
gpx_load_acquire32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
gpx_store_release32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* acquire on success and failure, release on success */
static inline int
gpx_cas32(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static inline uint64_t
gpx_load_acquire64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
gpx_store_release64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline int64_t
gpx_load_relaxed_i64(const int64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void
gpx_store_relaxed_i64(int64_t *p, int64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline void
gpx_add_relaxed64(uint64_t *p, uint64_t n)
{
	__atomic_fetch_add(p, n, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------------
 * Slots
 */
#define GPX_SLOT_FREE		0
#define GPX_SLOT_CLAIMED	1
#define GPX_SLOT_SUBMITTED	2
#define GPX_SLOT_RUNNING	3
#define GPX_SLOT_DONE		4
#define GPX_SLOT_ABANDONED	5
#define GPX_SLOT_RECLAIM	6
#define GPX_SLOT_FAILED		7

/* a state word: the state in the low byte, an engine generation above it */
#define GPX_GENERATION_MASK		0xFFFFFFu
#define GPX_SLOT_WORD(state, gen)	((((uint32_t) (gen) & GPX_GENERATION_MASK) << 8) | (uint32_t) (state))
#define GPX_SLOT_STATE(word)	((word) & 0xFFu)
#define GPX_SLOT_GEN(word)		((word) >> 8)

/* generations run 1..GPX_GENERATION_MASK, then start again at 1 */
static inline uint32_t
gpx_next_generation(uint32_t gen)
{
	gen = (gen + 1) & GPX_GENERATION_MASK;
	return gen == 0 ? 1 : gen;
}

typedef struct GpxQueueSlot
{
	uint32_t	state;			/* GPX_SLOT_WORD */
	uint32_t	conn;			/* the submitting backend's connection to the engine */
	uint64_t	offset;			/* its request's bytes, from the arena's start */
	uint64_t	size;
	uint64_t	work;			/* postings of its lists */
	int64_t		submitted_ns;	/* CLOCK_MONOTONIC */
	/* set by the engine process before DONE */
	int32_t		status;			/* gpuidx_engine_status */
	uint32_t	out_count;
	uint32_t	batch_size;		/* requests in the batch it ran in */
	uint32_t	on_gpu;			/* answered by the GPU engine (else the CPU engine) */
	uint32_t	pad[2];
} GpxQueueSlot;

/* ---------------------------------------------------------------------------
 * A request's bytes in the arena: GpxRequest with its terms, the parts'
 * bytes (8-aligned), a ranked request's GpxRankParams, then room for the
 * answer.  A set operation's terms are its lists (gpuidx_query: op, and for
 * an AND the last nexclude subtracted); a ranked request's are the
 * segment's doc lengths, then each term's list and tfs.
 */
#define GPX_REQUEST_INTERSECT	0
#define GPX_REQUEST_RANK		1
#define GPX_RANK_MAX_PARTS		(1 + 2 * GPUIDX_ENGINE_MAX_TERMS)

/* what a part of a request is (GpxRequestTerm.kind) */
#define GPX_PART_LIST		0
#define GPX_PART_FREQS		GPUIDX_DATA_FREQS
#define GPX_PART_DOCLENS	GPUIDX_DATA_DOCLENS
#define GPX_PART_TFS		3		/* an inline list's tfs, one byte a posting: never cached */

#define GPX_TERM_PUT	1		/* cache the bytes under key (engine: cache_put) */

typedef struct GpxRequestTerm
{
	uint64_t	key;			/* the engine's cache key; 0: none */
	uint64_t	offset;			/* of the part's bytes from the request's start */
	uint64_t	len;			/* 0: no bytes, the engine has key cached */
	uint32_t	flags;			/* GPX_TERM_* */
	int32_t		put_status;		/* set by the engine for a put: gpuidx_engine_status */
	uint32_t	kind;			/* GPX_PART_* */
	uint32_t	pad;
} GpxRequestTerm;

typedef struct GpxRequest
{
	uint32_t	kind;			/* GPX_REQUEST_* */
	uint32_t	nterms;
	uint32_t	result;			/* gpuidx_query.result */
	uint32_t	out_capacity;	/* ids; ranked: docs, then as many doubles */
	uint32_t	total;			/* set by the engine: the result's length */
	uint32_t	op;				/* gpuidx_query.op */
	uint32_t	nexclude;		/* gpuidx_query.nexclude */
	uint32_t	pad;
	uint64_t	out_offset;		/* of the answer from the request's start */
	uint64_t	params_offset;	/* ranked: of its GpxRankParams */
	GpxRequestTerm terms[];
} GpxRequest;

/* a ranked request's parameters (gpuidx_rank_query) */
typedef struct GpxRankParams
{
	uint32_t	nterms;
	uint32_t	every_term;
	uint32_t	k;
	uint32_t	matched;		/* set by the engine */
	double		k1;
	double		b;
	double		avgdl;
	double		idf[GPUIDX_ENGINE_MAX_TERMS];
} GpxRankParams;

/* a ranked request's answer: k doc ids, then (8-aligned) k scores */
static inline uint64_t
gpx_rank_docs_bytes(uint32_t k)
{
	return ((uint64_t) k * sizeof(uint32_t) + 7) & ~(uint64_t) 7;
}

/* ---------------------------------------------------------------------------
 * The header
 */

/* what the engine process counts */
typedef enum GpxEngineCounter
{
	GPX_ENGINE_BATCHES,
	GPX_ENGINE_REQUESTS,		/* requests answered */
	GPX_ENGINE_HOST_US,			/* the engine's time: planning and staging */
	GPX_ENGINE_DEVICE_US,		/* uploads, kernels, their round trips */
	GPX_ENGINE_RETURN_US,		/* results back into the arena */
	GPX_ENGINE_BYTES_RETURNED,	/* result ids the engine copied back */
	GPX_ENGINE_GPU_RETRIES,		/* tries to start the GPU engine while the CPU engine stood in */
	GPX_ENGINE_NUM_COUNTERS
} GpxEngineCounter;

typedef struct GpxQueueHeader
{
	uint32_t	magic;
	uint32_t	version;
	uint32_t	nslots;
	uint32_t	ndrops;			/* entries of the drop ring */
	uint64_t	size;			/* of the whole segment */
	uint64_t	slots_offset;
	uint64_t	drops_offset;
	uint64_t	arena_offset;
	uint64_t	arena_size;

	/* written by the supervisor */
	uint32_t	generation;		/* of the engine it started last */
	uint32_t	batch_window_us;
	uint32_t	batch_max_requests;
	uint32_t	pad1;
	uint64_t	batch_max_work;

	/* written by the engine process */
	uint32_t	serving;		/* the generation serving requests; 0: none */
	uint32_t	engine_pid;
	uint32_t	is_gpu;
	uint32_t	gpu_failed;		/* the GPU engine did not start (yet): the CPU engine stands in */
	int64_t		heartbeat_ns;	/* the main loop's last turn, CLOCK_MONOTONIC */
	int64_t		batch_started_ns;	/* the batch in the engine since, 0: none */
	char		kind[16];
	char		device_name[96];
	char		note[256];		/* why the CPU engine, the last engine error */
	uint64_t	counters[GPX_ENGINE_NUM_COUNTERS];

	/*
	 * The keys the GPU cache directory evicted, for the engine to drop:
	 * backends push (under the directory's lock) and publish drop_head with
	 * release; the engine reads an entry after an acquire of drop_head and
	 * publishes drop_tail with release once it has read it.
	 */
	uint64_t	drop_head;
	uint64_t	drop_tail;
} GpxQueueHeader;

/* alignment of the segment's parts and of every request in the arena */
#define GPX_QUEUE_ALIGN		64

static inline uint64_t
gpx_queue_align(uint64_t n)
{
	return (n + GPX_QUEUE_ALIGN - 1) & ~(uint64_t) (GPX_QUEUE_ALIGN - 1);
}

/* the layout for nslots slots, ndrops ring entries and an arena of arena_size */
static inline void
gpx_queue_layout(GpxQueueHeader *h, uint32_t nslots, uint32_t ndrops, uint64_t arena_size)
{
	h->magic = GPX_QUEUE_MAGIC;
	h->version = GPX_QUEUE_VERSION;
	h->nslots = nslots;
	h->ndrops = ndrops;
	h->slots_offset = gpx_queue_align(sizeof(GpxQueueHeader));
	h->drops_offset = gpx_queue_align(h->slots_offset + (uint64_t) nslots * sizeof(GpxQueueSlot));
	h->arena_offset = gpx_queue_align(h->drops_offset + (uint64_t) ndrops * sizeof(uint64_t));
	h->arena_size = arena_size;
	h->size = h->arena_offset + arena_size;
}

/* does a header describe a segment of 'size' bytes (the engine checks what it maps)? */
static inline int
gpx_queue_layout_holds(const GpxQueueHeader *h, uint64_t size)
{
	GpxQueueHeader expect;

	if (h->magic != GPX_QUEUE_MAGIC || h->version != GPX_QUEUE_VERSION || h->nslots == 0 ||
		h->ndrops == 0 || h->arena_size > size)
		return 0;
	gpx_queue_layout(&expect, h->nslots, h->ndrops, h->arena_size);
	return expect.size == size && expect.size == h->size && expect.slots_offset == h->slots_offset &&
		expect.drops_offset == h->drops_offset && expect.arena_offset == h->arena_offset;
}

static inline GpxQueueSlot *
gpx_queue_slots(GpxQueueHeader *h)
{
	return (GpxQueueSlot *) ((char *) h + h->slots_offset);
}

static inline uint64_t *
gpx_queue_drops(GpxQueueHeader *h)
{
	return (uint64_t *) ((char *) h + h->drops_offset);
}

static inline char *
gpx_queue_arena(GpxQueueHeader *h)
{
	return (char *) h + h->arena_offset;
}

/* ---------------------------------------------------------------------------
 * The socket protocol (SOCK_SEQPACKET): the engine greets each connection
 * with a GpxEngineHello; a backend sends one byte after each submission;
 * the engine sends the uint32 index of each slot it answers.  Messages are
 * wake-ups only: the slots say what happened.
 */
typedef struct GpxEngineHello
{
	uint32_t	magic;			/* GPX_QUEUE_MAGIC */
	uint32_t	generation;		/* the engine's */
	uint32_t	conn;			/* this connection's id, for GpxQueueSlot.conn */
	uint32_t	pad;
} GpxEngineHello;

#endif							/* GPUIDX_QUEUE_H */
