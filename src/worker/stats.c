/*
 * stats.c
 *	  The GPU worker's statistics: the counters of backends and the
 *	  supervisor (PostgreSQL's shared memory), the engine process's (the
 *	  queue segment, read as untrusted), the view gpuidx_worker_stats, and
 *	  each backend's share for EXPLAIN ANALYZE.
 */
#include "gpuidx.h"

#include <math.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "worker/gpucache.h"
#include "worker/stats.h"

GPUIDX_FUNCTION(gpuidx_worker_stats);
GPUIDX_FUNCTION(gpuidx_worker_stats_reset);
GPUIDX_FUNCTION(gpuidx_rank_placement);

GpxLocalStats gpx_local_stats;

void
gpx_count(GpxCounter c, uint64 n)
{
	if (gpx_control != NULL)
		pg_atomic_fetch_add_u64(&gpx_control->counters[c], n);
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

void
gpx_count_wait(instr_time since)
{
	instr_time	now;
	uint64		us;
	int			b = 0;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, since);
	us = INSTR_TIME_GET_MICROSEC(now);
	gpx_local_stats.wait_us += us;
	while (b < GPX_WAIT_BUCKETS - 1 && (UINT64CONST(1) << b) <= us)
		b++;
	pg_atomic_fetch_add_u64(&gpx_control->waits[b], 1);
}

void
gpx_explain_worker_requests(const GpxLocalStats *w, ExplainState *es)
{
	ExplainPropertyUInteger("Worker Requests", NULL, w->requests, es);
	/* which engine answered them, as the engine process reported it */
	if (w->requests > 0)
		ExplainPropertyText("Worker Engine",
							w->gpu_requests == w->requests ? "GPU" :
							w->gpu_requests == 0 ? "CPU engine" : "GPU and CPU engine", es);
	ExplainPropertyUInteger("Worker Fallbacks", NULL, w->fallbacks, es);
	ExplainPropertyUInteger("Bytes Sent", "bytes", w->bytes_sent, es);
	ExplainPropertyUInteger("Cache Hits", NULL, w->cache_hits, es);
	/* requests of the batches the scan's requests joined, on average */
	ExplainPropertyFloat("Batch Size", NULL, w->requests ? (double) w->batched_with / w->requests : 0, 1, es);
	if (es->timing)
		ExplainPropertyFloat("Worker Wait", "ms", w->wait_us / 1000.0, 3, es);
}

void
gpx_explain_worker_not_asked(const GpxLocalStats *w, ExplainState *es)
{
	if (w->list_blocks == 0 || w->requests + w->worker_rounds + w->fallbacks > 0 ||
		gpx_device == GPX_DEVICE_CPU || (gpx_device == GPX_DEVICE_AUTO && !gpx_worker_wanted()))
		return;
	if (!gpx_worker_present())
		ExplainPropertyText("Worker", "not asked: no GPU worker is serving (gpuidx is not in shared_preload_libraries, "
							"or its engine process is starting)", es);
	else
		ExplainPropertyText("Worker",
							psprintf("not asked: lists read in the backend (shortest under gpuidx.gpu_min_postings, %u, "
									 "or lengths %u times apart, gpuidx.cpu_ratio_threshold, or more)",
									 gpx_placement.gpu_min_postings, gpx_placement.cpu_ratio_threshold), es);
}

void
gpx_local_stats_collect(GpxLocalStats *sum, GpxLocalStats *since)
{
	const GpxLocalStats *now = &gpx_local_stats;

	sum->requests += now->requests - since->requests;
	sum->gpu_requests += now->gpu_requests - since->gpu_requests;
	sum->worker_rounds += now->worker_rounds - since->worker_rounds;
	sum->backend_rounds += now->backend_rounds - since->backend_rounds;
	sum->fallbacks += now->fallbacks - since->fallbacks;
	sum->bytes_sent += now->bytes_sent - since->bytes_sent;
	sum->cache_hits += now->cache_hits - since->cache_hits;
	sum->batched_with += now->batched_with - since->batched_with;
	sum->wait_us += now->wait_us - since->wait_us;
	sum->list_blocks += now->list_blocks - since->list_blocks;
	*since = *now;
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

void
gpx_engine_text(char *dst, const char *src, size_t size)
{
	size_t		n = 0;

	for (; n < size && src[n] != '\0'; n++)
		dst[n] = (src[n] >= 0x20 && src[n] < 0x7f) ? src[n] : '?';
	dst[n] = '\0';
}

static Datum
engine_text(const char *src, size_t size)
{
	char	   *s = palloc(size + 1);

	gpx_engine_text(s, src, size);
	return CStringGetTextDatum(s);
}

/* an engine process's counter since the last reset */
static int64
engine_counter(GpxEngineCounter c)
{
	uint64		v = __atomic_load_n(&gpx_queue->counters[c], __ATOMIC_RELAXED);

	return v >= gpx_control->engine_base[c] ? (int64) (v - gpx_control->engine_base[c]) : 0;
}

static int64
counter(GpxCounter c)
{
	return (int64) pg_atomic_read_u64(&gpx_control->counters[c]);
}

Datum
gpuidx_worker_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[40];
	bool		nulls[40];
	uint64		cache_lists;
	uint64		cache_bytes;
	uint64		cache_capacity;
	uint64		buckets[GPX_WAIT_BUCKETS];
	uint64		total = 0;
	uint64		arena_used;
	uint32		busy = 0;
	uint32		pid;
	int			v = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	Assert(tupdesc->natts <= lengthof(values));
	memset(nulls, 0, sizeof(nulls));
	if (gpx_queue == NULL)
	{
		/* not preloaded: one row saying so */
		memset(nulls, true, sizeof(nulls));
		values[0] = BoolGetDatum(false);
		nulls[0] = false;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}
	for (int i = 0; i < GPX_WAIT_BUCKETS; i++)
	{
		buckets[i] = pg_atomic_read_u64(&gpx_control->waits[i]);
		total += buckets[i];
	}
	for (uint32 i = 0; i < gpx_layout.nslots; i++)
		if (gpx_load_acquire32(&gpx_slot((int) i)->state) != GPX_SLOT_FREE)
			busy++;
	LWLockAcquire(&gpx_control->arena_lock, LW_SHARED);
	arena_used = gpx_control_arena()->used;
	LWLockRelease(&gpx_control->arena_lock);

	values[v++] = BoolGetDatum(gpx_serving_generation() != 0);
	pid = pg_atomic_read_u32(&gpx_control->engine_pid);
	if (pid != 0)
		values[v++] = Int32GetDatum((int32) pid);
	else
		nulls[v++] = true;
	values[v++] = engine_text(gpx_queue->kind, sizeof(gpx_queue->kind));
	values[v++] = engine_text(gpx_queue->device_name, sizeof(gpx_queue->device_name));
	values[v++] = engine_text(gpx_queue->note, sizeof(gpx_queue->note));
	values[v++] = Int64GetDatum(counter(GPX_STAT_ENGINE_STARTS));
	values[v++] = Int64GetDatum(counter(GPX_STAT_ENGINE_STALLS));
	values[v++] = Int64GetDatum(engine_counter(GPX_ENGINE_GPU_RETRIES));
	values[v++] = Int64GetDatum(engine_counter(GPX_ENGINE_BATCHES));
	values[v++] = Int64GetDatum(engine_counter(GPX_ENGINE_REQUESTS));
	values[v++] = Int64GetDatum(counter(GPX_STAT_GPU_ROUNDS));
	values[v++] = Int64GetDatum(counter(GPX_STAT_CPU_ROUNDS));
	values[v++] = Int64GetDatum(counter(GPX_STAT_BYTES_SENT));
	values[v++] = Int64GetDatum(engine_counter(GPX_ENGINE_BYTES_RETURNED));
	values[v++] = Int64GetDatum(counter(GPX_STAT_CACHE_HITS));
	values[v++] = Int64GetDatum(counter(GPX_STAT_CACHE_MISSES));
	values[v++] = Int64GetDatum(counter(GPX_STAT_CACHE_EVICTIONS));
	gpx_cache_usage(&cache_lists, &cache_bytes, &cache_capacity);
	values[v++] = Int64GetDatum((int64) cache_lists);
	values[v++] = Int64GetDatum((int64) cache_bytes);
	for (int f = 0; f < GPX_NUM_FALLBACKS; f++)
		values[v++] = Int64GetDatum(counter(GPX_STAT_FALLBACK_FIRST + f));
	values[v++] = Int32GetDatum((int32) busy);
	values[v++] = Int64GetDatum((int64) arena_used);
	values[v++] = Float8GetDatum(wait_quantile(buckets, total, 0.50));
	values[v++] = Float8GetDatum(wait_quantile(buckets, total, 0.99));
	values[v++] = Float8GetDatum(engine_counter(GPX_ENGINE_HOST_US) / 1000.0);
	values[v++] = Float8GetDatum(engine_counter(GPX_ENGINE_DEVICE_US) / 1000.0);
	values[v++] = Float8GetDatum(engine_counter(GPX_ENGINE_RETURN_US) / 1000.0);
	values[v++] = TimestampTzGetDatum(gpx_control->stats_reset);
	Assert(v == tupdesc->natts);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
gpuidx_worker_stats_reset(PG_FUNCTION_ARGS)
{
	if (gpx_queue == NULL)
		PG_RETURN_VOID();
	for (int i = 0; i < GPX_NUM_COUNTERS; i++)
		if (i != GPX_STAT_ENGINE_STARTS)
			pg_atomic_write_u64(&gpx_control->counters[i], 0);
	for (int i = 0; i < GPX_WAIT_BUCKETS; i++)
		pg_atomic_write_u64(&gpx_control->waits[i], 0);
	for (int c = 0; c < GPX_ENGINE_NUM_COUNTERS; c++)
		gpx_control->engine_base[c] = __atomic_load_n(&gpx_queue->counters[c], __ATOMIC_RELAXED);
	gpx_control->stats_reset = GetCurrentTimestamp();
	PG_RETURN_VOID();
}

/* a picosecond-a-posting estimate in nanoseconds, NULL when none */
static Datum
rate_ns(uint64 ps, bool *isnull)
{
	*isnull = ps == 0;
	return Float8GetDatum(ps / 1000.0);
}

/*
 * gpuidx_rank_placement: the costs that place ranked segments
 * (gpuidx.gpu_rank_backlog = -1; sched/placement.h), one row for each shape
 * and size measured either way; none when gpuidx is not preloaded
 */
Datum
gpuidx_rank_placement(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	static const char *const shapes[2] = {"any term", "every term"};

	InitMaterializedSRF(fcinfo, 0);
	if (gpx_control == NULL)
		return (Datum) 0;
	for (int shape = 0; shape < 2; shape++)
		for (int b = 0; b < GPX_RANK_COST_BUCKETS; b++)
		{
			uint64		local = pg_atomic_read_u64(&gpx_control->rank_local_ps[shape][b]);
			uint64		worker = pg_atomic_read_u64(&gpx_control->rank_worker_ps[b]);
			uint64		tried = pg_atomic_read_u64(&gpx_control->rank_explored[shape][b]);
			Datum		values[7];
			bool		nulls[7] = {0};

			if (local == 0 && worker == 0)
				continue;
			values[0] = CStringGetTextDatum(shapes[shape]);
			values[1] = Int64GetDatum((int64) 1 << b);
			if (b < GPX_RANK_COST_BUCKETS - 1)
				values[2] = Int64GetDatum(((int64) 2 << b) - 1);
			else
				nulls[2] = true;
			values[3] = rate_ns(local, &nulls[3]);
			values[4] = rate_ns(worker, &nulls[4]);
			values[5] = rate_ns(pg_atomic_read_u64(&gpx_control->rank_queue_ps), &nulls[5]);
			values[6] = TimestampTzGetDatum((TimestampTz) tried);
			nulls[6] = tried == 0;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	return (Datum) 0;
}
