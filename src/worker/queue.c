/*
 * queue.c
 *	  The backends' side of the GPU worker: its settings, its shared memory,
 *	  submitting a request and waiting for the answer, falling back to the
 *	  CPU, and the statistics view.
 */
#include "gpuidx.h"

#include <math.h>

#include "commands/explain.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "cpu/cpu.h"
#include "gpuidx_format.h"
#include "worker/gpucache.h"
#include "worker/queue.h"

GPUIDX_FUNCTION(gpuidx_worker_stats);
GPUIDX_FUNCTION(gpuidx_worker_stats_reset);

int			gpx_device = GPX_DEVICE_AUTO;
int			gpx_gpu_timeout_ms = 1000;
GpxPlacementConfig gpx_placement = {128, 16384};
int			gpx_queue_slots = 256;
int			gpx_arena_kb = 64 * 1024;
int			gpx_gpu_cache_mb = 1024;
int			gpx_batch_window_us = 100;
int			gpx_batch_max_work = 8 * 1024 * 1024;
int			gpx_batch_max_requests = 1024;

static int	cpu_ratio_threshold_setting = 128;
static int	gpu_min_postings_setting = 16384;
int			gpx_gpu_rank_backlog = 16 * 1024 * 1024;

GpxWorkerShared *gpx_worker_shared = NULL;
GpxLocalStats gpx_local_stats;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static dsa_area *arena_area = NULL;
static int	my_slot = -1;		/* the slot this backend waits on, for cleanup */

static const struct config_enum_entry device_options[] = {
	{"auto", GPX_DEVICE_AUTO, false},
	{"worker", GPX_DEVICE_WORKER, false},
	{"cpu", GPX_DEVICE_CPU, false},
	{NULL, 0, false}
};


static void
assign_ratio(int newval, void *extra)
{
	gpx_placement.cpu_ratio_threshold = (uint32) newval;
}

static void
assign_min_postings(int newval, void *extra)
{
	gpx_placement.gpu_min_postings = (uint32) newval;
}

static Size
shared_size(void)
{
	return add_size(MAXALIGN(add_size(offsetof(GpxWorkerShared, slots),
									  mul_size(gpx_queue_slots, sizeof(GpxSlot)))),
					mul_size((Size) gpx_arena_kb, 1024));
}

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(shared_size(), gpx_cache_shmem_size((uint64) gpx_gpu_cache_mb << 20)));
	gpx_cache_shmem_request();
}

static void
shmem_startup(void)
{
	bool		found;
	GpxWorkerShared *sh;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sh = ShmemInitStruct("gpuidx worker", shared_size(), &found);
	if (!found)
	{
		dsa_area   *area;

		memset(sh, 0, offsetof(GpxWorkerShared, slots));
		sh->nslots = gpx_queue_slots;
		sh->arena_size = (Size) gpx_arena_kb * 1024;
		sh->arena = (char *) sh + MAXALIGN(offsetof(GpxWorkerShared, slots) +
										   gpx_queue_slots * sizeof(GpxSlot));
		sh->arena_tranche = LWLockNewTrancheId();
		if (sem_init(&sh->wakeup, 1, 0) != 0)
			elog(FATAL, "gpuidx: could not create the worker's semaphore: %m");
		pg_atomic_init_u32(&sh->engine_pid, 0);
		pg_atomic_init_u32(&sh->engine_ready, 0);
		pg_atomic_init_u32(&sh->engine_is_gpu, 0);
		pg_atomic_init_u32(&sh->shutdown, 0);
		pg_atomic_init_u32(&sh->batch_window_us, (uint32) gpx_batch_window_us);
		pg_atomic_init_u64(&sh->batch_max_work, (uint64) gpx_batch_max_work);
		pg_atomic_init_u32(&sh->batch_max_requests, (uint32) gpx_batch_max_requests);
		for (int i = 0; i < GPX_NUM_COUNTERS; i++)
			pg_atomic_init_u64(&sh->counters[i], 0);
		for (int i = 0; i < GPX_WAIT_BUCKETS; i++)
			pg_atomic_init_u64(&sh->waits[i], 0);
		sh->stats_reset = GetCurrentTimestamp();
		for (int i = 0; i < sh->nslots; i++)
		{
			memset(&sh->slots[i], 0, sizeof(GpxSlot));
			pg_atomic_init_u32(&sh->slots[i].state, GPX_SLOT_FREE);
		}
		LWLockRegisterTranche(sh->arena_tranche, "gpuidx_arena");
		/* bounded: no segment beyond the one in place */
		area = dsa_create_in_place(sh->arena, sh->arena_size, sh->arena_tranche, NULL);
		dsa_set_size_limit(area, sh->arena_size);
		dsa_detach(area);
	}
	gpx_cache_shmem_init((uint64) gpx_gpu_cache_mb << 20);
	LWLockRelease(AddinShmemInitLock);
	gpx_worker_shared = sh;
}

void
gpx_worker_define_settings(void)
{
	DefineCustomEnumVariable("gpuidx.device",
							 "Where intersections run: the GPU worker or this backend's CPU.",
							 "auto: through the worker when its engine has a GPU; worker: through "
							 "the worker whatever its engine; cpu: always in the backend.",
							 &gpx_device, GPX_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.gpu_timeout",
							"How long a query waits for the GPU worker before answering on the CPU.",
							NULL, &gpx_gpu_timeout_ms, 1000, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.cpu_ratio_threshold",
							"Length ratio from which an intersection round runs on the CPU.",
							"A round intersecting a list this many times longer than the shortest "
							"list, and every round after it, runs in the backend.",
							&cpu_ratio_threshold_setting, 128, 1, 1 << 30,
							PGC_USERSET, 0, NULL, assign_ratio, NULL);
	DefineCustomIntVariable("gpuidx.gpu_min_postings",
							"Shortest list length from which a query's rounds may go to the GPU.",
							NULL, &gpu_min_postings_setting, 16384, 0, INT_MAX,
							PGC_USERSET, 0, NULL, assign_min_postings, NULL);
	DefineCustomIntVariable("gpuidx.gpu_rank_backlog",
							"Documents of ranked work the GPU worker may hold at once; past it, segments are ranked in the backend (0: no limit).",
							"A ranked request costs the device a sweep of its segment's documents: a busy worker "
							"would make every backend wait while their cores idle.",
							&gpx_gpu_rank_backlog, 16 * 1024 * 1024, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.batch_window",
							"Longest time, in microseconds, the GPU worker holds a request to batch it with others.",
							NULL, &gpx_batch_window_us, 100, 0, 1000000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.batch_max_work",
							"Postings from which the GPU worker launches a batch without waiting.",
							NULL, &gpx_batch_max_work, 8 * 1024 * 1024, 1, INT_MAX,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.batch_max_requests",
							"Most requests the GPU worker runs in one batch.",
							"1 runs every request alone (one launch per query).",
							&gpx_batch_max_requests, 1024, 1, 65536,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	/* the worker's shared memory is sized at server start: only when preloaded */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("gpuidx.worker_queue_slots",
							"Requests the GPU worker's queue holds at once.",
							NULL, &gpx_queue_slots, 256, 8, 65536,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.worker_arena_size",
							"Shared memory for the lists and results of queued requests.",
							"A request that does not fit runs on the CPU.",
							&gpx_arena_kb, 64 * 1024, 1024, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.gpu_cache_size",
							"Device memory for posting lists cached by the GPU worker.",
							NULL, &gpx_gpu_cache_mb, 1024, 1, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
}

/* from _PG_init, when loaded by shared_preload_libraries */
void
gpx_worker_register(void)
{
	BackgroundWorker bgw;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;

	memset(&bgw, 0, sizeof(bgw));
	/* a connection to no database: enough to show in pg_stat_activity */
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* hot standbys serve queries too */
	bgw.bgw_start_time = BgWorkerStart_ConsistentState;
	bgw.bgw_restart_time = 1;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "gpuidx");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "gpx_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "gpuidx worker");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "gpuidx worker");
	RegisterBackgroundWorker(&bgw);
}

void
gpx_worker_publish_settings(void)
{
	pg_atomic_write_u32(&gpx_worker_shared->batch_window_us, (uint32) gpx_batch_window_us);
	pg_atomic_write_u64(&gpx_worker_shared->batch_max_work, (uint64) gpx_batch_max_work);
	pg_atomic_write_u32(&gpx_worker_shared->batch_max_requests, (uint32) gpx_batch_max_requests);
}

void
gpx_count(GpxCounter c, uint64 n)
{
	if (gpx_worker_shared != NULL)
		pg_atomic_fetch_add_u64(&gpx_worker_shared->counters[c], n);
}

void
gpx_count_backend_rounds(uint32 rounds)
{
	gpx_local_stats.backend_rounds += rounds;
	gpx_count(GPX_STAT_CPU_ROUNDS, rounds);
}

void
gpx_count_worker_rounds(uint32 rounds)
{
	gpx_local_stats.worker_rounds += rounds;
	gpx_count(GPX_STAT_GPU_ROUNDS, rounds);
}

static void
arena_release(int code, Datum arg)
{
	dsa_on_shmem_exit_release_in_place(code, PointerGetDatum(gpx_worker_shared->arena));
}

/* this process's handle on the arena, attached on first use */
dsa_area *
gpx_worker_arena(void)
{
	if (arena_area == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		LWLockRegisterTranche(gpx_worker_shared->arena_tranche, "gpuidx_arena");
		arena_area = dsa_attach_in_place(gpx_worker_shared->arena, NULL);
		on_shmem_exit(arena_release, (Datum) 0);
		MemoryContextSwitchTo(old);
	}
	return arena_area;
}

bool
gpx_worker_present(void)
{
	return gpx_worker_shared != NULL && gpx_device != GPX_DEVICE_CPU;
}

bool
gpx_worker_wanted(void)
{
	GpxWorkerShared *sh = gpx_worker_shared;

	if (sh == NULL || gpx_device == GPX_DEVICE_CPU)
		return false;
	if (gpx_device == GPX_DEVICE_AUTO && !pg_atomic_read_u32(&sh->engine_is_gpu))
		return false;
	return true;
}

void
gpx_explain_worker_requests(const GpxLocalStats *w, ExplainState *es)
{
	ExplainPropertyUInteger("Worker Requests", NULL, w->requests, es);
	ExplainPropertyUInteger("Worker Fallbacks", NULL, w->fallbacks, es);
	ExplainPropertyUInteger("Bytes Sent", "bytes", w->bytes_sent, es);
	ExplainPropertyUInteger("Cache Hits", NULL, w->cache_hits, es);
	/* requests of the batches the scan's requests joined, on average */
	ExplainPropertyFloat("Batch Size", NULL, w->requests ? (double) w->batched_with / w->requests : 0, 1, es);
	if (es->timing)
		ExplainPropertyFloat("Worker Wait", "ms", w->wait_us / 1000.0, 3, es);
}

void
gpx_local_stats_collect(GpxLocalStats *sum, GpxLocalStats *since)
{
	const GpxLocalStats *now = &gpx_local_stats;

	sum->requests += now->requests - since->requests;
	sum->worker_rounds += now->worker_rounds - since->worker_rounds;
	sum->backend_rounds += now->backend_rounds - since->backend_rounds;
	sum->fallbacks += now->fallbacks - since->fallbacks;
	sum->bytes_sent += now->bytes_sent - since->bytes_sent;
	sum->cache_hits += now->cache_hits - since->cache_hits;
	sum->batched_with += now->batched_with - since->batched_with;
	sum->wait_us += now->wait_us - since->wait_us;
	*since = *now;
}

uint64
gpx_worker_rank_backlog(void)
{
	GpxWorkerShared *sh = gpx_worker_shared;
	uint64		docs = 0;

	if (sh == NULL)
		return 0;
	for (int i = 0; i < sh->nslots; i++)
	{
		uint32		state = pg_atomic_read_u32(&sh->slots[i].state);

		/* a slot's fields are its backend's; a stale read only errs one request's way */
		if (state == GPX_SLOT_SUBMITTED || state == GPX_SLOT_RUNNING)
			docs += sh->slots[i].rank_docs;
	}
	return docs;
}

uint64
gpx_worker_arena_bytes(void)
{
	return gpx_worker_shared != NULL ? (uint64) gpx_worker_shared->arena_size : 0;
}

/* ---------------------------------------------------------------------------
 * A request: submit, wait, withdraw
 */

void
gpx_slot_release(GpxSlot *slot)
{
	GpxRequest *req = (GpxRequest *) (gpx_worker_shared->arena + slot->offset);

	gpx_cache_detach(req->terms, req->nterms, slot->status == GPUIDX_ENGINE_ERR_NOT_CACHED);
	dsa_free(gpx_worker_arena(), slot->request);
	slot->request = InvalidDsaPointer;
	pg_atomic_write_u32(&slot->state, GPX_SLOT_FREE);
}

/*
 * Give up on a slot: take it back if the engine process has not started it,
 * leave it to the supervisor (ABANDONED) if it runs, free it if answered.
 */
static void
slot_withdraw(int i)
{
	GpxSlot    *slot = &gpx_worker_shared->slots[i];
	uint32		expected = GPX_SLOT_SUBMITTED;

	my_slot = -1;
	if (pg_atomic_compare_exchange_u32(&slot->state, &expected, GPX_SLOT_CLAIMED))
	{
		gpx_slot_release(slot);
		return;
	}
	expected = GPX_SLOT_RUNNING;
	if (pg_atomic_compare_exchange_u32(&slot->state, &expected, GPX_SLOT_ABANDONED))
		return;
	/* DONE or FAILED: ours to free */
	gpx_slot_release(slot);
}

static void
withdraw_at_exit(int code, Datum arg)
{
	if (my_slot >= 0 && gpx_worker_shared != NULL)
		slot_withdraw(my_slot);
}

static void
count_wait(TimestampTz since)
{
	long		secs;
	int			usecs;
	uint64		us;
	int			b = 0;

	TimestampDifference(since, GetCurrentTimestamp(), &secs, &usecs);
	us = (uint64) secs * 1000000 + usecs;
	gpx_local_stats.wait_us += us;
	while (b < GPX_WAIT_BUCKETS - 1 && (UINT64CONST(1) << b) <= us)
		b++;
	pg_atomic_fetch_add_u64(&gpx_worker_shared->waits[b], 1);
}

static bool
fall_back(GpxFallback why)
{
	gpx_local_stats.fallbacks++;
	gpx_count(GPX_STAT_FALLBACK_FIRST + why, 1);
	return false;
}

/* postings of a list: its header, read from the bytes or given for a cached list */
static uint64
list_postings(const GpxWorkerList *l)
{
	if (l->cacheable)
		return l->hdr.count;
	if (l->bytes != NULL && l->len >= sizeof(gpuidx_list_header))
		return ((const gpuidx_list_header *) l->bytes)->count;
	return 0;
}

/*
 * A request's parts attached to the cache and copied into the arena with
 * params_size bytes of parameters and out_size bytes of answer after them:
 * the request (kind, terms, offsets set; the rest the caller's), or NULL
 * with the fallback counted.
 */
static GpxRequest *
request_build(const GpxWorkerList *parts, int n, uint32 kind, Size params_size, Size out_size,
			  dsa_pointer *dp, uint64 *size_out, uint64 *work_out, uint64 *bytes_out)
{
	GpxWorkerShared *sh = gpx_worker_shared;
	GpxRequestTerm terms[GPX_RANK_MAX_PARTS];
	GpxCacheCounts cached;
	bool		attached;
	dsa_area   *area;
	GpxRequest *req;
	uint64		size;
	uint64		work = 0;
	uint64		bytes = 0;
	char	   *base;

	Assert(n >= 1 && n <= GPX_RANK_MAX_PARTS);
	if (!pg_atomic_read_u32(&sh->engine_ready))
	{
		fall_back(GPX_FALLBACK_ABSENT);
		return NULL;
	}
	/* which parts go by key (pinned), which with their bytes (some to be cached) */
	attached = gpx_cache_attach(parts, n, terms, &cached);
	gpx_count(GPX_STAT_CACHE_HITS, cached.hits);
	gpx_count(GPX_STAT_CACHE_MISSES, cached.misses);
	gpx_count(GPX_STAT_CACHE_EVICTIONS, cached.evictions);
	gpx_local_stats.cache_hits += cached.hits;
	if (!attached)
	{
		fall_back(GPX_FALLBACK_CACHE_LOST);
		return NULL;
	}

	/* header, terms, parts sent (8-aligned), parameters, answer */
	size = MAXALIGN(offsetof(GpxRequest, terms) + n * sizeof(GpxRequestTerm));
	for (int i = 0; i < n; i++)
		size += TYPEALIGN(8, terms[i].len);
	size += MAXALIGN(params_size) + out_size;
	area = gpx_worker_arena();
	*dp = InvalidDsaPointer;
	if (size <= sh->arena_size)
		*dp = dsa_allocate_extended(area, size, DSA_ALLOC_NO_OOM | DSA_ALLOC_HUGE);
	if (!DsaPointerIsValid(*dp))
	{
		gpx_cache_detach(terms, n, false);
		fall_back(GPX_FALLBACK_ARENA_FULL);
		return NULL;
	}
	base = dsa_get_address(area, *dp);
	req = (GpxRequest *) base;
	memset(req, 0, offsetof(GpxRequest, terms));
	req->kind = kind;
	req->nterms = n;
	size = MAXALIGN(offsetof(GpxRequest, terms) + n * sizeof(GpxRequestTerm));
	for (int i = 0; i < n; i++)
	{
		req->terms[i] = terms[i];
		req->terms[i].offset = size;
		if (terms[i].len > 0)
		{
			memcpy(base + size, parts[i].bytes, terms[i].len);
			size += TYPEALIGN(8, terms[i].len);
			bytes += terms[i].len;
		}
		/* the batch's work in postings; the engine checks the lists itself */
		if (parts[i].kind == GPX_PART_LIST)
			work += list_postings(&parts[i]);
	}
	req->params_offset = size;
	size += MAXALIGN(params_size);
	req->out_offset = size;
	size += out_size;
	*size_out = size;
	*work_out = work;
	*bytes_out = bytes;
	return req;
}

/*
 * Submit a built request and wait for its answer: the slot's final state
 * (DONE or FAILED: the caller reads the answer, then request_finish), or
 * another state when it gave up (timeout); -1 when no slot was free (the
 * request freed, the fallback counted).
 */
static int
request_submit(GpxRequest *req, dsa_pointer dp, uint64 size, uint64 work, uint64 rank_docs,
			   uint64 bytes, uint32 *state_out)
{
	static bool exit_registered = false;
	GpxWorkerShared *sh = gpx_worker_shared;
	GpxSlot    *slot = NULL;
	TimestampTz start;
	TimestampTz deadline;
	uint32		state;
	int			i;

	for (i = 0; i < sh->nslots; i++)
	{
		uint32		expected = GPX_SLOT_FREE;

		if (pg_atomic_read_u32(&sh->slots[i].state) == GPX_SLOT_FREE &&
			pg_atomic_compare_exchange_u32(&sh->slots[i].state, &expected, GPX_SLOT_CLAIMED))
		{
			slot = &sh->slots[i];
			break;
		}
	}
	if (slot == NULL)
	{
		gpx_cache_detach(req->terms, req->nterms, false);
		dsa_free(gpx_worker_arena(), dp);
		fall_back(GPX_FALLBACK_QUEUE_FULL);
		return -1;
	}
	if (!exit_registered)
	{
		before_shmem_exit(withdraw_at_exit, (Datum) 0);
		exit_registered = true;
	}
	slot->procno = MyProc->pgprocno;
	slot->request = dp;
	slot->offset = (uint64) ((char *) req - sh->arena);
	slot->size = size;
	slot->work = work;
	slot->rank_docs = rank_docs;
	start = GetCurrentTimestamp();
	slot->submitted = start;
	slot->status = GPUIDX_ENGINE_ERR_INTERNAL;
	slot->out_count = 0;
	slot->batch_size = 0;
	my_slot = i;
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, GPX_SLOT_SUBMITTED);
	gpx_count(GPX_STAT_BYTES_SENT, bytes);
	gpx_local_stats.bytes_sent += bytes;
	sem_post(&sh->wakeup);

	deadline = TimestampTzPlusMilliseconds(start, gpx_gpu_timeout_ms);
	PG_TRY();
	{
		for (;;)
		{
			long		secs;
			int			usecs;
			long		wait_ms;

			state = pg_atomic_read_u32(&slot->state);
			if (state == GPX_SLOT_DONE || state == GPX_SLOT_FAILED)
				break;
			TimestampDifference(GetCurrentTimestamp(), deadline, &secs, &usecs);
			wait_ms = secs * 1000 + (usecs + 999) / 1000;
			if (wait_ms <= 0)
				break;
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Min(wait_ms, 1000), PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		gpx_count(GPX_STAT_FALLBACK_FIRST + GPX_FALLBACK_CANCELLED, 1);
		gpx_local_stats.fallbacks++;
		slot_withdraw(i);
		PG_RE_THROW();
	}
	PG_END_TRY();

	count_wait(start);
	pg_read_barrier();
	*state_out = state;
	return i;
}

/*
 * After the answer was read (answered) or not: the slot freed or given up,
 * the fallback counted.  Returns answered.
 */
static bool
request_finish(int i, uint32 state, bool answered)
{
	GpxSlot    *slot = &gpx_worker_shared->slots[i];
	int32		status = slot->status;

	if (answered)
		gpx_local_stats.batched_with += slot->batch_size;
	if (state == GPX_SLOT_DONE || state == GPX_SLOT_FAILED)
	{
		my_slot = -1;
		gpx_slot_release(slot);
	}
	else
		slot_withdraw(i);
	if (answered)
	{
		gpx_local_stats.requests++;
		return true;
	}
	return fall_back(state == GPX_SLOT_DONE && status == GPUIDX_ENGINE_ERR_NOT_CACHED ? GPX_FALLBACK_CACHE_LOST :
					 state == GPX_SLOT_DONE ? GPX_FALLBACK_ENGINE_ERROR :
					 state == GPX_SLOT_FAILED ? GPX_FALLBACK_WORKER_LOST : GPX_FALLBACK_TIMEOUT);
}

bool
gpx_worker_intersect(const GpxWorkerList *lists, int n, uint32 result, uint32 *out,
					 uint32 out_capacity, uint32 *count, uint32 *total)
{
	GpxSlot    *slot;
	GpxRequest *req;
	dsa_pointer dp;
	uint64		size;
	uint64		work;
	uint64		bytes;
	uint32		state;
	int			i;
	bool		answered = false;

	Assert(n >= 1 && n <= GPUIDX_ENGINE_MAX_TERMS);
	req = request_build(lists, n, GPX_REQUEST_INTERSECT, 0, (Size) out_capacity * sizeof(uint32),
						&dp, &size, &work, &bytes);
	if (req == NULL)
		return false;
	req->result = result;
	req->out_capacity = out_capacity;
	i = request_submit(req, dp, size, work, 0, bytes, &state);
	if (i < 0)
		return false;
	slot = &gpx_worker_shared->slots[i];
	if (state == GPX_SLOT_DONE && slot->status == GPUIDX_ENGINE_OK && slot->out_count <= out_capacity &&
		slot->out_count == gpuidx_result_wanted(result, req->total))
	{
		*count = slot->out_count;
		*total = req->total;
		if (slot->out_count > 0)
			memcpy(out, (char *) req + req->out_offset, (Size) slot->out_count * sizeof(uint32));
		answered = true;
	}
	return request_finish(i, state, answered);
}

bool
gpx_worker_rank(const GpxWorkerList *parts, const GpxRankParams *params, uint32 ndocs,
				uint32 *docs, double *scores, uint32 *count, uint32 *matched)
{
	int			n = 1 + 2 * (int) params->nterms;
	GpxSlot    *slot;
	GpxRequest *req;
	GpxRankParams *p;
	dsa_pointer dp;
	uint64		size;
	uint64		work;
	uint64		bytes;
	uint32		state;
	int			i;
	bool		answered = false;

	Assert(params->nterms >= 1 && params->nterms <= GPUIDX_ENGINE_MAX_TERMS);
	Assert(params->k >= 1 && params->k <= GPUIDX_RANK_MAX_K);
	req = request_build(parts, n, GPX_REQUEST_RANK, sizeof(GpxRankParams),
						gpx_rank_docs_bytes(params->k) + (Size) params->k * sizeof(double), &dp, &size, &work, &bytes);
	if (req == NULL)
		return false;
	req->out_capacity = params->k;
	p = (GpxRankParams *) ((char *) req + req->params_offset);
	memcpy(p, params, sizeof(GpxRankParams));
	p->matched = 0;
	i = request_submit(req, dp, size, work, ndocs, bytes, &state);
	if (i < 0)
		return false;
	slot = &gpx_worker_shared->slots[i];
	if (state == GPX_SLOT_DONE && slot->status == GPUIDX_ENGINE_OK &&
		slot->out_count == Min(params->k, p->matched))
	{
		const char *out = (const char *) req + req->out_offset;

		*count = slot->out_count;
		*matched = p->matched;
		memcpy(docs, out, (Size) *count * sizeof(uint32));
		memcpy(scores, out + gpx_rank_docs_bytes(params->k), (Size) *count * sizeof(double));
		answered = true;
	}
	return request_finish(i, state, answered);
}

/* ---------------------------------------------------------------------------
 * Rounds placed between the worker and this backend
 */

typedef struct PlacedList
{
	const pl_view *view;
	const void *bytes;
	uint64		len;
} PlacedList;

static int
placed_cmp(const void *a, const void *b)
{
	uint32		x = ((const PlacedList *) a)->view->count;
	uint32		y = ((const PlacedList *) b)->view->count;

	return (x > y) - (x < y);
}

uint32
gpx_intersect_placed(const pl_view **views, const void *const *bytes, const uint64 *lens,
					 int n, uint32 *out, bool *used_worker)
{
	PlacedList *l = palloc(n * sizeof(PlacedList));
	uint32		counts[GPUIDX_ENGINE_MAX_TERMS];
	GpxWorkerList dev[GPUIDX_ENGINE_MAX_TERMS];
	uint32		total;
	int			k = 0;
	int			done = 0;
	uint32		c = 0;

	bool		placing = n >= 2 && n <= GPUIDX_ENGINE_MAX_TERMS && gpx_worker_wanted();

	*used_worker = false;
	for (int i = 0; i < n; i++)
	{
		l[i].view = views[i];
		l[i].bytes = bytes[i];
		l[i].len = lens[i];
	}
	qsort(l, n, sizeof(PlacedList), placed_cmp);
	if (placing)
	{
		for (int i = 0; i < n; i++)
			counts[i] = l[i].view->count;
		k = gpx_place_rounds(counts, n, &gpx_placement);
	}
	if (k >= 2)
	{
		/* values, not an index's lists: nothing to cache */
		memset(dev, 0, k * sizeof(GpxWorkerList));
		for (int i = 0; i < k; i++)
		{
			dev[i].bytes = l[i].bytes;
			dev[i].len = l[i].len;
		}
		if (gpx_worker_intersect(dev, k, GPUIDX_RESULT_IDS, out, l[0].view->count, &c, &total))
		{
			*used_worker = true;
			done = k;
			gpx_count_worker_rounds(k - 1);
		}
	}
	if (done == 0)
	{
		/* the whole query here, shortest first */
		const pl_view **order = palloc(n * sizeof(pl_view *));

		for (int i = 0; i < n; i++)
			order[i] = l[i].view;
		c = cpu_intersect_k(order, n, out, CPU_METHOD_AUTO, NULL);
		pfree(order);
		/* rounds the placement kept here (fallbacks are counted as such) */
		if (placing && k == 0)
			gpx_count_backend_rounds(n - 1);
	}
	else
	{
		/* the rest of the rounds here, from the worker's result */
		for (int i = done; i < n && c > 0 && c != CPU_CORRUPT; i++)
		{
			CHECK_FOR_INTERRUPTS();
			c = cpu_intersect_array_list(out, c, l[i].view, out,
										 cpu_pick_method(c, l[i].view->count), 0, NULL);
		}
		gpx_count_backend_rounds(n - done);
	}
	pfree(l);
	return c;
}

/* ---------------------------------------------------------------------------
 * gpuidx_worker_stats
 */

/* the upper bound in microseconds of the bucket holding quantile q */
static double
wait_quantile(const uint64 *buckets, uint64 total, double q)
{
	uint64		rank = (uint64) ceil(q * total);
	uint64		seen = 0;

	if (total == 0)
		return 0;
	for (int b = 0; b < GPX_WAIT_BUCKETS; b++)
	{
		seen += buckets[b];
		if (seen >= rank)
			return b == 0 ? 1.0 : (double) (UINT64CONST(1) << b);
	}
	return (double) (UINT64CONST(1) << (GPX_WAIT_BUCKETS - 1));
}

Datum
gpuidx_worker_stats(PG_FUNCTION_ARGS)
{
	GpxWorkerShared *sh = gpx_worker_shared;
	TupleDesc	tupdesc;
	Datum		values[32];
	bool		nulls[32];
	uint64		cache_lists;
	uint64		cache_bytes;
	uint64		cache_capacity;
	uint64		buckets[GPX_WAIT_BUCKETS];
	uint64		total = 0;
	uint32		busy = 0;
	int			v = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	memset(nulls, 0, sizeof(nulls));
	if (sh == NULL)
	{
		/* not preloaded: one row saying so */
		memset(nulls, true, sizeof(nulls));
		values[0] = BoolGetDatum(false);
		nulls[0] = false;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}
	for (int i = 0; i < GPX_WAIT_BUCKETS; i++)
	{
		buckets[i] = pg_atomic_read_u64(&sh->waits[i]);
		total += buckets[i];
	}
	for (int i = 0; i < sh->nslots; i++)
		if (pg_atomic_read_u32(&sh->slots[i].state) != GPX_SLOT_FREE)
			busy++;
	values[v++] = BoolGetDatum(pg_atomic_read_u32(&sh->engine_ready) != 0);
	if (pg_atomic_read_u32(&sh->engine_pid) != 0)
		values[v++] = Int32GetDatum((int32) pg_atomic_read_u32(&sh->engine_pid));
	else
		nulls[v++] = true;
	values[v++] = CStringGetTextDatum(sh->engine_kind);
	values[v++] = CStringGetTextDatum(sh->device_name);
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_ENGINE_STARTS]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_BATCHES]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_REQUESTS]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_GPU_ROUNDS]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_CPU_ROUNDS]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_BYTES_SENT]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_BYTES_RETURNED]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_CACHE_HITS]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_CACHE_MISSES]));
	values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_CACHE_EVICTIONS]));
	gpx_cache_usage(&cache_lists, &cache_bytes, &cache_capacity);
	values[v++] = Int64GetDatum((int64) cache_lists);
	values[v++] = Int64GetDatum((int64) cache_bytes);
	for (int f = 0; f < GPX_NUM_FALLBACKS; f++)
		values[v++] = Int64GetDatum((int64) pg_atomic_read_u64(&sh->counters[GPX_STAT_FALLBACK_FIRST + f]));
	values[v++] = Int32GetDatum((int32) busy);
	values[v++] = Float8GetDatum(wait_quantile(buckets, total, 0.50));
	values[v++] = Float8GetDatum(wait_quantile(buckets, total, 0.99));
	values[v++] = Float8GetDatum(pg_atomic_read_u64(&sh->counters[GPX_STAT_BATCH_HOST_US]) / 1000.0);
	values[v++] = Float8GetDatum(pg_atomic_read_u64(&sh->counters[GPX_STAT_BATCH_DEVICE_US]) / 1000.0);
	values[v++] = Float8GetDatum(pg_atomic_read_u64(&sh->counters[GPX_STAT_BATCH_RETURN_US]) / 1000.0);
	values[v++] = TimestampTzGetDatum(sh->stats_reset);
	Assert(v == tupdesc->natts);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
gpuidx_worker_stats_reset(PG_FUNCTION_ARGS)
{
	GpxWorkerShared *sh = gpx_worker_shared;

	if (sh == NULL)
		PG_RETURN_VOID();
	for (int i = 0; i < GPX_NUM_COUNTERS; i++)
		if (i != GPX_STAT_ENGINE_STARTS)
			pg_atomic_write_u64(&sh->counters[i], 0);
	for (int i = 0; i < GPX_WAIT_BUCKETS; i++)
		pg_atomic_write_u64(&sh->waits[i], 0);
	sh->stats_reset = GetCurrentTimestamp();
	PG_RETURN_VOID();
}
