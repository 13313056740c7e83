/*
 * queue.c
 *	  A backend's requests to the GPU worker: a slot claimed, the request's
 *	  bytes in an arena extent of the queue segment, submitted, waited for,
 *	  and its answer checked before use; any failure answers on the CPU
 *	  (the reason counted).  The slot protocol is in gpuidx_queue.h.
 */
#include "gpuidx.h"

#include <math.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"

#include "worker/connection.h"
#include "worker/gpucache.h"
#include "worker/queue.h"
#include "worker/stats.h"

static int	my_slot = -1;		/* the slot this backend's request holds, for cleanup */

bool
gpx_worker_present(void)
{
	return gpx_queue != NULL && gpx_device != GPX_DEVICE_CPU;
}

bool
gpx_worker_wanted(void)
{
	if (!gpx_worker_present())
		return false;
	if (gpx_device == GPX_DEVICE_AUTO && !__atomic_load_n(&gpx_queue->is_gpu, __ATOMIC_RELAXED))
		return false;
	return true;
}

uint64
gpx_worker_arena_bytes(void)
{
	return gpx_control != NULL ? gpx_control_arena()->capacity : 0;
}

uint64
gpx_worker_rank_backlog(void)
{
	uint64		postings = 0;

	if (gpx_queue == NULL)
		return 0;
	for (uint32 i = 0; i < gpx_layout.nslots; i++)
	{
		uint32		st = GPX_SLOT_STATE(gpx_load_acquire32(&gpx_slot((int) i)->state));

		/* a slot's owner entry is its backend's; a stale read only errs one request's way */
		if (st == GPX_SLOT_SUBMITTED || st == GPX_SLOT_RUNNING)
			postings += gpx_control->owners[i].rank_postings;
	}
	return postings;
}

/* the estimates a ranking of this shape and size uses, the rest left 0 */
static void
rank_costs_read(GpxRankCosts *c, int shape, int b)
{
	memset(c, 0, sizeof(*c));
	c->local_ps[shape][b] = pg_atomic_read_u64(&gpx_control->rank_local_ps[shape][b]);
	c->worker_ps[b] = pg_atomic_read_u64(&gpx_control->rank_worker_ps[b]);
	c->queue_ps = pg_atomic_read_u64(&gpx_control->rank_queue_ps);
}

bool
gpx_worker_rank_prefers(bool every_term, uint64 postings, uint64 backlog)
{
	int			shape = every_term ? 1 : 0;
	int			b = gpx_rank_cost_bucket(postings);
	GpxRankCosts c;
	bool		worker;

	if (gpx_control == NULL || postings == 0)
		return false;
	rank_costs_read(&c, shape, b);
	worker = gpx_rank_prefers_worker(&c, every_term, postings, backlog);
	/* exploring only once both are known: until then the rule itself learns */
	if (c.local_ps[shape][b] != 0 && c.worker_ps[b] != 0)
	{
		pg_atomic_uint64 *explored = &gpx_control->rank_explored[shape][b];
		uint64		last = pg_atomic_read_u64(explored);
		TimestampTz now = GetCurrentTimestamp();

		if (now - (TimestampTz) last >= GPX_RANK_EXPLORE_US &&
			pg_atomic_compare_exchange_u64(explored, &last, (uint64) now))
			worker = !worker;
	}
	return worker;
}

void
gpx_worker_note_local_rank(bool every_term, uint64 postings, uint64 ns)
{
	int			shape = every_term ? 1 : 0;
	int			b = gpx_rank_cost_bucket(postings);
	GpxRankCosts c;

	if (gpx_control == NULL || postings == 0)
		return;
	rank_costs_read(&c, shape, b);
	gpx_rank_note_local(&c, every_term, postings, ns);
	pg_atomic_write_u64(&gpx_control->rank_local_ps[shape][b], c.local_ps[shape][b]);
}

void
gpx_worker_note_worker_rank(uint64 postings, uint64 backlog, uint64 ns)
{
	int			b = gpx_rank_cost_bucket(postings);
	GpxRankCosts c;

	if (gpx_control == NULL || postings == 0)
		return;
	rank_costs_read(&c, 0, b);
	gpx_rank_note_worker(&c, postings, backlog, ns);
	pg_atomic_write_u64(&gpx_control->rank_worker_ps[b], c.worker_ps[b]);
	pg_atomic_write_u64(&gpx_control->rank_queue_ps, c.queue_ps);
}

static bool
fall_back(GpxFallback why)
{
	gpx_local_stats.fallbacks++;
	gpx_count(GPX_STAT_FALLBACK_FIRST + why, 1);
	return false;
}

/* ---------------------------------------------------------------------------
 * Slots
 */

static GpxQueueSlot *
queue_slot(int i)
{
	return gpx_slot(i);
}

/* a FREE slot, CLAIMED; -1 when none is */
static int
slot_claim(void)
{
	uint32		n = gpx_layout.nslots;
	uint32		start = (uint32) MyProcNumber % n;

	/* backends start at different slots, not all at the first */
	for (uint32 k = 0; k < n; k++)
	{
		uint32		i = (start + k) % n;
		GpxQueueSlot *slot = queue_slot((int) i);

		if (gpx_load_acquire32(&slot->state) == GPX_SLOT_FREE &&
			gpx_cas32(&slot->state, GPX_SLOT_FREE, GPX_SLOT_CLAIMED))
			return (int) i;
	}
	return -1;
}

void
gpx_slot_release(int i)
{
	GpxSlotOwner *owner = &gpx_control->owners[i];
	GpxQueueSlot *slot = queue_slot(i);
	uint32		st = GPX_SLOT_STATE(gpx_load_acquire32(&slot->state));
	bool		answered = st == GPX_SLOT_DONE || st == GPX_SLOT_RECLAIM;

	if (owner->offset != GPX_NO_EXTENT)
	{
		/* the terms as this process wrote them; the engine wrote only their put statuses */
		const GpxRequest *req = (const GpxRequest *) (gpx_arena_base() + owner->offset);

		gpx_cache_detach(&owner->pins, answered ? req->terms : NULL,
						 answered && slot->status == GPUIDX_ENGINE_ERR_NOT_CACHED);
		LWLockAcquire(&gpx_control->arena_lock, LW_EXCLUSIVE);
		(void) gpx_arena_free(gpx_control_arena(), owner->offset);
		LWLockRelease(&gpx_control->arena_lock);
		owner->offset = GPX_NO_EXTENT;
	}
	else
		gpx_cache_detach(&owner->pins, NULL, false);
	owner->procno = -1;
	owner->rank_postings = 0;
	/* release: every read of the answer before another backend may claim it */
	gpx_store_release32(&slot->state, GPX_SLOT_FREE);
}

/*
 * Give up on a slot: take it back if no engine took it, leave it to the
 * supervisor (ABANDONED) if one runs it, free it if answered.
 */
static void
slot_withdraw(int i)
{
	GpxQueueSlot *slot = queue_slot(i);

	my_slot = -1;
	for (;;)
	{
		uint32		w = gpx_load_acquire32(&slot->state);

		switch (GPX_SLOT_STATE(w))
		{
			case GPX_SLOT_SUBMITTED:
				if (gpx_cas32(&slot->state, w, GPX_SLOT_CLAIMED))
				{
					gpx_slot_release(i);
					return;
				}
				break;			/* an engine took it meanwhile */
			case GPX_SLOT_RUNNING:
				if (gpx_cas32(&slot->state, w, GPX_SLOT_WORD(GPX_SLOT_ABANDONED, GPX_SLOT_GEN(w))))
					return;
				break;			/* answered or failed meanwhile */
			case GPX_SLOT_CLAIMED:
			case GPX_SLOT_DONE:
			case GPX_SLOT_FAILED:
				gpx_slot_release(i);
				return;
			default:
				return;			/* not this backend's any more */
		}
	}
}

static void
withdraw_at_exit(int code, Datum arg)
{
	if (my_slot >= 0 && gpx_queue != NULL)
		slot_withdraw(my_slot);
}

/* postings of a list, and its last id: its header, read from the bytes or given for a cached list */
static bool
list_bounds(const GpxWorkerList *l, uint64 *count, uint32 *last)
{
	const gpuidx_list_header *hdr = NULL;

	if (l->cacheable)
		hdr = &l->hdr;
	else if (l->bytes != NULL && l->len >= sizeof(gpuidx_list_header))
		hdr = (const gpuidx_list_header *) l->bytes;
	if (hdr == NULL)
		return false;
	*count = hdr->count;
	*last = hdr->last;
	return true;
}

/*
 * A request's parts attached to the cache and copied into a slot's arena
 * extent, with params_size bytes of parameters and out_size bytes of answer
 * after them: the slot (CLAIMED, this backend's) and its request (kind,
 * terms, offsets set; the rest the caller's), or -1 with the fallback
 * counted.
 */
static int
request_build(const GpxWorkerList *parts, int n, uint32 kind, Size params_size, Size out_size,
			  uint64 rank_postings, GpxRequest **req_out)
{
	static bool exit_registered = false;
	GpxRequestTerm terms[GPX_RANK_MAX_PARTS];
	GpxCachePins pins;
	GpxCacheCounts cached;
	GpxSlotOwner *owner;
	GpxQueueSlot *slot;
	GpxRequest *req;
	uint32		generation;
	uint32		conn;
	uint64		size;
	uint64		offset;
	uint64		work = 0;
	uint64		bytes = 0;
	char	   *base;
	bool		placed;
	int			i;

	Assert(n >= 1 && n <= GPX_RANK_MAX_PARTS);
	generation = gpx_serving_generation();
	if (generation == 0 || !gpx_conn_ready(generation, &conn))
	{
		fall_back(GPX_FALLBACK_ABSENT);
		return -1;
	}

	/* which parts go by key (pinned), which with their bytes (some to be cached) */
	if (!gpx_cache_attach(parts, n, terms, &pins, &cached))
	{
		fall_back(GPX_FALLBACK_CACHE_LOST);
		return -1;
	}
	gpx_count(GPX_STAT_CACHE_HITS, cached.hits);
	gpx_count(GPX_STAT_CACHE_MISSES, cached.misses);
	gpx_count(GPX_STAT_CACHE_EVICTIONS, cached.evictions);
	gpx_local_stats.cache_hits += cached.hits;

	i = slot_claim();
	if (i < 0)
	{
		gpx_cache_detach(&pins, NULL, false);
		fall_back(GPX_FALLBACK_QUEUE_FULL);
		return -1;
	}
	if (!exit_registered)
	{
		before_shmem_exit(withdraw_at_exit, (Datum) 0);
		exit_registered = true;
	}
	owner = &gpx_control->owners[i];
	owner->procno = MyProcNumber;
	owner->offset = GPX_NO_EXTENT;
	owner->rank_postings = rank_postings;
	memcpy(&owner->pins, &pins, sizeof(pins));
	my_slot = i;

	/* header, terms, parts sent (8-aligned), parameters, answer */
	size = MAXALIGN(offsetof(GpxRequest, terms) + n * sizeof(GpxRequestTerm));
	for (int t = 0; t < n; t++)
		size += TYPEALIGN(8, terms[t].len);
	size += MAXALIGN(params_size) + out_size;
	LWLockAcquire(&gpx_control->arena_lock, LW_EXCLUSIVE);
	placed = gpx_arena_alloc(gpx_control_arena(), size, &offset);
	LWLockRelease(&gpx_control->arena_lock);
	if (!placed)
	{
		my_slot = -1;
		gpx_slot_release(i);
		fall_back(GPX_FALLBACK_ARENA_FULL);
		return -1;
	}
	owner->offset = offset;

	base = gpx_arena_base() + offset;
	req = (GpxRequest *) base;
	memset(req, 0, offsetof(GpxRequest, terms));
	req->kind = kind;
	req->nterms = n;
	size = MAXALIGN(offsetof(GpxRequest, terms) + n * sizeof(GpxRequestTerm));
	for (int t = 0; t < n; t++)
	{
		uint64		count;
		uint32		last;

		req->terms[t] = terms[t];
		req->terms[t].offset = size;
		if (terms[t].len > 0)
		{
			memcpy(base + size, parts[t].bytes, terms[t].len);
			size += TYPEALIGN(8, terms[t].len);
			bytes += terms[t].len;
		}
		/* the batch's work in postings; the engine checks the lists itself */
		if (parts[t].kind == GPX_PART_LIST && list_bounds(&parts[t], &count, &last))
			work += count;
	}
	req->params_offset = size;
	size += MAXALIGN(params_size);
	req->out_offset = size;
	size += out_size;

	slot = queue_slot(i);
	slot->conn = conn;
	slot->offset = offset;
	slot->size = size;
	slot->work = work;
	slot->status = GPUIDX_ENGINE_ERR_INTERNAL;
	slot->out_count = 0;
	slot->batch_size = 0;
	gpx_count(GPX_STAT_BYTES_SENT, bytes);
	gpx_local_stats.bytes_sent += bytes;
	*req_out = req;
	return i;
}

/*
 * Submit a built request and wait for its answer: the slot's state word
 * when it ended (DONE or FAILED: the caller reads the answer, then
 * request_finish), or another when it gave up (time-out, engine lost).
 */
static uint32
request_submit(int i)
{
	GpxQueueSlot *slot = queue_slot(i);
	instr_time	start;
	instr_time	now;
	uint32		w;
	bool		lost = false;

	INSTR_TIME_SET_CURRENT(start);
	slot->submitted_ns = gpx_monotonic_ns();
	/* release: the request and the slot's fields before the engine sees SUBMITTED */
	gpx_store_release32(&slot->state, GPX_SLOT_SUBMITTED);
	if (!gpx_conn_notify())
		lost = true;

	PG_TRY();
	{
		for (;;)
		{
			double		waited_ms;
			long		wait_ms;

			w = gpx_load_acquire32(&slot->state);
			if (GPX_SLOT_STATE(w) == GPX_SLOT_DONE || GPX_SLOT_STATE(w) == GPX_SLOT_FAILED || lost)
				break;
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			waited_ms = INSTR_TIME_GET_MILLISEC(now);
			wait_ms = (long) ceil(gpx_gpu_timeout_ms - waited_ms);
			if (wait_ms <= 0)
				break;
			if (gpx_conn_wait(Min(wait_ms, 1000)) == GPX_WAIT_LOST)
				lost = true;
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

	gpx_count_wait(start);
	/* an engine gone after answering still answered */
	if (lost)
	{
		w = gpx_load_acquire32(&slot->state);
		if (GPX_SLOT_STATE(w) != GPX_SLOT_DONE)
			w = GPX_SLOT_WORD(GPX_SLOT_ABANDONED, 0);
	}
	return w;
}

/*
 * After the answer was read (answered) or not (refused: it did not check):
 * the slot freed or given up, the fallback counted.  Returns answered.
 */
static bool
request_finish(int i, uint32 w, bool answered, bool refused)
{
	GpxQueueSlot *slot = queue_slot(i);
	uint32		st = GPX_SLOT_STATE(w);
	int32		status = slot->status;

	if (answered)
	{
		gpx_local_stats.batched_with += Min(slot->batch_size, gpx_layout.nslots);
		if (slot->on_gpu)
			gpx_local_stats.gpu_requests++;
	}
	slot_withdraw(i);
	if (answered)
	{
		gpx_local_stats.requests++;
		return true;
	}
	return fall_back(refused ? GPX_FALLBACK_BAD_ANSWER :
					 st == GPX_SLOT_DONE && status == GPUIDX_ENGINE_ERR_NOT_CACHED ? GPX_FALLBACK_CACHE_LOST :
					 st == GPX_SLOT_DONE ? GPX_FALLBACK_ENGINE_ERROR :
					 st == GPX_SLOT_FAILED || st == GPX_SLOT_ABANDONED ? GPX_FALLBACK_WORKER_LOST :
					 GPX_FALLBACK_TIMEOUT);
}

/* an answer that does not check: counted, and said once a session in the log */
static bool
bad_answer(const char *what)
{
	static bool said = false;

	if (!said)
		ereport(LOG,
				(errmsg("gpuidx: the GPU worker's engine process returned an answer that does not check (%s); the query answers on the CPU",
						what),
				 errhidestmt(true)));
	said = true;
	return false;
}

bool
gpx_worker_intersect(const GpxWorkerList *lists, int n, uint32 result, uint32 *out,
					 uint32 out_capacity, uint32 *count, uint32 *total)
{
	return gpx_worker_setop(lists, n, GPUIDX_OP_AND, 0, result, out, out_capacity, count, total);
}

bool
gpx_worker_setop(const GpxWorkerList *lists, int n, uint32 op, uint32 nexclude, uint32 result,
				 uint32 *out, uint32 out_capacity, uint32 *count, uint32 *total)
{
	GpxQueueSlot *slot;
	GpxRequest *req;
	const char *answer;
	uint64		bound_count = op == GPUIDX_OP_OR ? 0 : PG_UINT64_MAX;
	uint32		bound_last = op == GPUIDX_OP_OR ? 0 : PG_UINT32_MAX;
	bool		bounded = true;
	uint32		w;
	uint32		c;
	uint32		t;
	int			i;
	bool		answered = false;
	bool		bad = false;

	Assert(n >= 1 && n <= GPUIDX_ENGINE_MAX_TERMS);
	Assert(op == GPUIDX_OP_AND ? nexclude < (uint32) n : op == GPUIDX_OP_OR && nexclude == 0);

	/*
	 * An AND is no longer than its shortest list not excluded and ends by
	 * the smallest last id of those; a union is no longer than its lists
	 * together and ends by their largest last id.
	 */
	for (int l = 0; l < n; l++)
	{
		uint64		lc;
		uint32		ll;

		if (op == GPUIDX_OP_AND && l + nexclude >= (uint32) n)
			break;
		if (!list_bounds(&lists[l], &lc, &ll))
			bounded = false;
		else if (op == GPUIDX_OP_OR)
		{
			bound_count += lc;
			bound_last = Max(bound_last, ll);
		}
		else
		{
			bound_count = Min(bound_count, lc);
			bound_last = Min(bound_last, ll);
		}
	}
	/* a union with a list of unknown bounds is bounded by nothing */
	if (op == GPUIDX_OP_OR && !bounded)
	{
		bound_count = PG_UINT64_MAX;
		bound_last = PG_UINT32_MAX;
	}
	i = request_build(lists, n, GPX_REQUEST_INTERSECT, 0, (Size) out_capacity * sizeof(uint32), 0, &req);
	if (i < 0)
		return false;
	req->op = op;
	req->nexclude = nexclude;
	req->result = result;
	req->out_capacity = out_capacity;
	/* where the answer is, taken now: the engine process can write the request */
	answer = (const char *) req + req->out_offset;
	w = request_submit(i);
	slot = queue_slot(i);
	if (GPX_SLOT_STATE(w) == GPX_SLOT_DONE && slot->status == GPUIDX_ENGINE_OK)
	{
		/* read once, into this process's memory, then checked */
		c = slot->out_count;
		t = req->total;
		if (c > out_capacity || c != gpuidx_result_wanted(result, t) || t > bound_count)
			bad = !bad_answer("its count is out of bounds");
		else
		{
			if (c > 0)
				memcpy(out, answer, (Size) c * sizeof(uint32));
			for (uint32 k = 0; k < c && !bad; k++)
				if ((k > 0 && out[k] <= out[k - 1]) || out[k] > bound_last)
					bad = !bad_answer("its ids are out of order or past the lists");
		}
		if (!bad)
		{
			*count = c;
			*total = t;
			answered = true;
		}
	}
	return request_finish(i, w, answered, bad);
}

bool
gpx_worker_rank(const GpxWorkerList *parts, const GpxRankParams *params, uint32 ndocs, uint64 postings,
				uint32 *docs, double *scores, uint32 *count, uint32 *matched)
{
	int			n = 1 + 2 * (int) params->nterms;
	GpxQueueSlot *slot;
	GpxRequest *req;
	GpxRankParams *p;
	const char *out;
	uint32		w;
	int			i;
	bool		answered = false;
	bool		bad = false;

	Assert(params->nterms >= 1 && params->nterms <= GPUIDX_ENGINE_MAX_TERMS);
	Assert(params->k >= 1 && params->k <= GPUIDX_RANK_MAX_K);
	i = request_build(parts, n, GPX_REQUEST_RANK, sizeof(GpxRankParams),
					  gpx_rank_docs_bytes(params->k) + (Size) params->k * sizeof(double), postings, &req);
	if (i < 0)
		return false;
	req->out_capacity = params->k;
	/* where the parameters and the answer are, taken now: the engine process can write the request */
	p = (GpxRankParams *) ((char *) req + req->params_offset);
	out = (const char *) req + req->out_offset;
	memcpy(p, params, sizeof(GpxRankParams));
	p->matched = 0;
	w = request_submit(i);
	slot = queue_slot(i);
	if (GPX_SLOT_STATE(w) == GPX_SLOT_DONE && slot->status == GPUIDX_ENGINE_OK)
	{
		uint32		c = slot->out_count;
		uint32		m = p->matched;

		if (m > ndocs || c != Min(params->k, m))
			bad = !bad_answer("its count is out of bounds");
		else
		{
			memcpy(docs, out, (Size) c * sizeof(uint32));
			memcpy(scores, out + gpx_rank_docs_bytes(params->k), (Size) c * sizeof(double));
			/* best first: higher score, then smaller doc id; so no doc twice */
			for (uint32 k = 0; k < c && !bad; k++)
				if (docs[k] >= ndocs || !isfinite(scores[k]) ||
					(k > 0 && (scores[k] > scores[k - 1] ||
							   (scores[k] == scores[k - 1] && docs[k] <= docs[k - 1]))))
					bad = !bad_answer("its documents are out of order or past the segment");
		}
		if (!bad)
		{
			*count = c;
			*matched = m;
			answered = true;
		}
	}
	return request_finish(i, w, answered, bad);
}
