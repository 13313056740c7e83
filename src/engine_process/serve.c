/*
 * serve.c
 *	  The engine process's batches: the main thread gathers the submitted
 *	  requests (PARA batching: a batch starts when its work, its number of
 *	  requests or the oldest one's wait says so), checks each against its
 *	  slot before the engine sees it, and hands the batch to the runner
 *	  thread, which has the engine run it (drops, puts, intersections,
 *	  rankings) and hands the answers back.  While the runner has batch k,
 *	  the main thread gathers batch k+1.
 */
#include "engine_process/engine_process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "gpuidx_format.h"

bool
serve_init(EngineProcess *e)
{
	uint32_t	nslots = e->hdr->nslots;

	for (int i = 0; i < 2; i++)
	{
		EngineBatch *b = &e->batches[i];

		memset(b, 0, sizeof(*b));
		b->queries = calloc(nslots, sizeof(gpuidx_query));
		b->ranked = calloc(nslots, sizeof(gpuidx_rank_query));
		b->rank_terms = calloc((size_t) nslots * GPUIDX_ENGINE_MAX_TERMS, sizeof(gpuidx_rank_term));
		b->terms = calloc((size_t) nslots * GPX_RANK_MAX_PARTS, sizeof(gpuidx_term_ref));
		b->taken = calloc(nslots, sizeof(int));
		b->index = calloc(nslots, sizeof(int));
		b->reqs = calloc(nslots, sizeof(GpxRequest *));
		if (b->queries == NULL || b->ranked == NULL || b->rank_terms == NULL || b->terms == NULL ||
			b->taken == NULL || b->index == NULL || b->reqs == NULL)
			return false;
	}
	return true;
}

/*
 * A slot answered (or refused): DONE, and its backend woken; or, when its
 * backend gave up meanwhile, RECLAIM for the supervisor to free.  req: its
 * checked request, for the intersection's length; or NULL.
 */
static void
finish_slot(EngineProcess *e, int i, GpxRequest *req, int status, uint32_t count, uint32_t total,
			uint32_t batch_size)
{
	GpxQueueSlot *slot = &e->slots[i];

	if (req != NULL)
		req->total = total;
	slot->batch_size = batch_size;
	slot->on_gpu = __atomic_load_n(&e->hdr->is_gpu, __ATOMIC_RELAXED);
	slot->status = status;
	slot->out_count = count;
	/* the CAS releases the answer written above to the backend's acquire */
	if (gpx_cas32(&slot->state, GPX_SLOT_WORD(GPX_SLOT_RUNNING, e->generation),
				  GPX_SLOT_WORD(GPX_SLOT_DONE, e->generation)))
		conns_answer(&e->conns, slot->conn, (uint32_t) i);
	else if (gpx_cas32(&slot->state, GPX_SLOT_WORD(GPX_SLOT_ABANDONED, e->generation),
					   GPX_SLOT_WORD(GPX_SLOT_RECLAIM, e->generation)))
		(void) send(e->control_fd, "r", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/*
 * A request's bytes, checked against its slot before the engine sees them,
 * into b's next place (request q): true when they hold.  Plain memory
 * reads: no engine call.
 */
static bool
request_take(EngineProcess *e, GpxQueueSlot *slot, EngineBatch *b, int q)
{
	uint64_t	arena_size = e->hdr->arena_size;
	gpuidx_term_ref *terms = &b->terms[(size_t) q * GPX_RANK_MAX_PARTS];
	GpxRequest *req;
	char	   *base;
	uint32_t	max_parts;

	if (slot->offset > arena_size || slot->size > arena_size - slot->offset ||
		slot->offset % 8 != 0 || slot->size < sizeof(GpxRequest))
		return false;
	base = e->arena + slot->offset;
	req = (GpxRequest *) base;
	if (req->kind != GPX_REQUEST_INTERSECT && req->kind != GPX_REQUEST_RANK)
		return false;
	max_parts = req->kind == GPX_REQUEST_RANK ? GPX_RANK_MAX_PARTS : GPUIDX_ENGINE_MAX_TERMS;
	if (req->nterms < 1 || req->nterms > max_parts ||
		sizeof(GpxRequest) + req->nterms * sizeof(GpxRequestTerm) > slot->size ||
		req->out_offset > slot->size)
		return false;
	for (uint32_t t = 0; t < req->nterms; t++)
	{
		GpxRequestTerm *rt = &req->terms[t];

		if (rt->offset > slot->size || rt->len > slot->size - rt->offset || rt->offset % 4 != 0 ||
			(rt->len == 0 && rt->key == 0))
			return false;
		terms[t].key = rt->key;
		terms[t].bytes = rt->len > 0 ? base + rt->offset : NULL;
		terms[t].len = rt->len;
	}
	b->reqs[q] = req;
	if (req->kind == GPX_REQUEST_INTERSECT)
	{
		gpuidx_query *qq = &b->queries[b->nplain];

		if (req->out_offset % 4 != 0 ||
			(uint64_t) req->out_capacity * sizeof(uint32_t) > slot->size - req->out_offset)
			return false;
		for (uint32_t t = 0; t < req->nterms; t++)
			if (req->terms[t].kind != GPX_PART_LIST)
				return false;
		memset(qq, 0, sizeof(*qq));
		qq->terms = terms;
		qq->nterms = req->nterms;
		qq->op = req->op;
		qq->nexclude = req->nexclude;
		qq->result = req->result;
		qq->out = req->out_capacity > 0 ? (uint32_t *) (base + req->out_offset) : NULL;
		qq->out_capacity = req->out_capacity;
		b->index[q] = b->nplain++;
	}
	else
	{
		gpuidx_rank_query *rq = &b->ranked[b->nranked];
		gpuidx_rank_term *rterms = &b->rank_terms[(size_t) b->nranked * GPUIDX_ENGINE_MAX_TERMS];
		GpxRankParams *params;
		uint64_t	docs_bytes;

		if (req->params_offset > slot->size || sizeof(GpxRankParams) > slot->size - req->params_offset ||
			req->params_offset % 8 != 0 || req->out_offset % 8 != 0)
			return false;
		params = (GpxRankParams *) (base + req->params_offset);
		docs_bytes = gpx_rank_docs_bytes(req->out_capacity);
		if (params->nterms < 1 || params->nterms > GPUIDX_ENGINE_MAX_TERMS ||
			req->nterms != 1 + 2 * params->nterms || req->out_capacity != params->k ||
			docs_bytes + (uint64_t) req->out_capacity * sizeof(double) > slot->size - req->out_offset ||
			req->terms[0].kind != GPX_PART_DOCLENS)
			return false;
		for (uint32_t t = 0; t < params->nterms; t++)
		{
			const GpxRequestTerm *list = &req->terms[1 + 2 * t];
			const GpxRequestTerm *tfs = &req->terms[2 + 2 * t];

			if (list->kind != GPX_PART_LIST ||
				(tfs->kind != GPX_PART_FREQS && !(tfs->kind == GPX_PART_TFS && tfs->len > 0)))
				return false;
			/* inline tfs come with their list's bytes, at least one a posting */
			if (tfs->kind == GPX_PART_TFS &&
				(list->len < sizeof(gpuidx_list_header) ||
				 ((const gpuidx_list_header *) (base + list->offset))->count > tfs->len))
				return false;
			memset(&rterms[t], 0, sizeof(rterms[t]));
			rterms[t].list = terms[1 + 2 * t];
			if (tfs->kind == GPX_PART_TFS)
				rterms[t].tfs = (const uint8_t *) terms[2 + 2 * t].bytes;
			else
				rterms[t].freqs = terms[2 + 2 * t];
			rterms[t].idf = params->idf[t];
		}
		memset(rq, 0, sizeof(*rq));
		rq->terms = rterms;
		rq->nterms = params->nterms;
		rq->every_term = params->every_term;
		rq->doclens = terms[0];
		rq->k1 = params->k1;
		rq->b = params->b;
		rq->avgdl = params->avgdl;
		rq->k = params->k;
		rq->out_capacity = req->out_capacity;
		rq->out_docs = (uint32_t *) (base + req->out_offset);
		rq->out_scores = (double *) (base + req->out_offset + docs_bytes);
		b->index[q] = b->nranked++;
	}
	return true;
}

int
serve_gather(EngineProcess *e, EngineBatch *b, bool runner_idle, int64_t *sleep_ns)
{
	GpxQueueHeader *hdr = e->hdr;
	const uint32_t submitted = GPX_SLOT_WORD(GPX_SLOT_SUBMITTED, 0);
	int64_t		now;
	int64_t		oldest = 0;
	uint64_t	work = 0;
	uint32_t	waiting = 0;
	int64_t		window = (int64_t) __atomic_load_n(&hdr->batch_window_us, __ATOMIC_RELAXED) * 1000;
	uint64_t	max_work = __atomic_load_n(&hdr->batch_max_work, __ATOMIC_RELAXED);
	uint32_t	max_requests = __atomic_load_n(&hdr->batch_max_requests, __ATOMIC_RELAXED);

	if (max_requests < 1)
		max_requests = 1;
	for (uint32_t i = 0; i < hdr->nslots; i++)
	{
		GpxQueueSlot *slot = &e->slots[i];

		/* acquire: the slot's fields as its backend wrote them before SUBMITTED */
		if (gpx_load_acquire32(&slot->state) != submitted)
			continue;
		waiting++;
		work += slot->work;
		if (oldest == 0 || slot->submitted_ns < oldest)
			oldest = slot->submitted_ns;
	}
	if (waiting == 0)
	{
		*sleep_ns = 100 * 1000 * 1000;
		return 0;
	}
	now = engine_now_ns();
	if (oldest > now)
		oldest = now;
	/*
	 * Hold the batch for company, unless it is one request that nothing is
	 * ahead of (the runner idle) and that came alone: none submitted in
	 * the window before it.  Such a request (one client, or a quiet server)
	 * has no company coming, and holding it only added the window to its
	 * latency; requests that come close together still wait for the window
	 * as they did, so batches under load are what they were.
	 */
	if (work < max_work && now - oldest < window && waiting < max_requests &&
		!(waiting == 1 && runner_idle && oldest - e->last_submitted_ns >= window))
	{
		*sleep_ns = window - (now - oldest);
		return 0;
	}
	b->nq = b->nplain = b->nranked = 0;
	for (uint32_t i = 0; i < hdr->nslots && (uint32_t) b->nq < max_requests; i++)
	{
		GpxQueueSlot *slot = &e->slots[i];

		if (gpx_load_acquire32(&slot->state) != submitted ||
			!gpx_cas32(&slot->state, submitted, GPX_SLOT_WORD(GPX_SLOT_RUNNING, e->generation)))
			continue;
		if (slot->submitted_ns > e->last_submitted_ns)
			e->last_submitted_ns = slot->submitted_ns;
		if (!request_take(e, slot, b, b->nq))
		{
			finish_slot(e, (int) i, NULL, GPUIDX_ENGINE_ERR_INVALID, 0, 0, 1);
			continue;
		}
		b->taken[b->nq++] = (int) i;
	}
	*sleep_ns = 0;
	return b->nq;
}

/* the next key the cache directory evicted, to drop from the device */
static bool
next_drop(EngineProcess *e, uint64_t *key)
{
	GpxQueueHeader *hdr = e->hdr;
	uint64_t	tail = hdr->drop_tail;
	uint64_t	head = gpx_load_acquire64(&hdr->drop_head);

	if (head == tail)
		return false;
	if (head - tail > hdr->ndrops)
	{
		/* cannot happen with sane backends; start over rather than read garbage */
		gpx_store_release64(&hdr->drop_tail, head);
		return false;
	}
	*key = gpx_queue_drops(hdr)[tail % hdr->ndrops];
	/* release: the entry is read before backends may write it again */
	gpx_store_release64(&hdr->drop_tail, tail + 1);
	return true;
}

/* the runner: drops, then the batch's puts, then the batch */
static void
run_batch(EngineProcess *e, EngineBatch *b)
{
	uint64_t	key;

	/*
	 * Lists the directory evicted leave the device before the puts: every
	 * drop the batch's backends made before submitting is in the ring by now.
	 */
	while (next_drop(e, &key))
		e->api->cache_remove(e->engine, key);
	for (int q = 0; q < b->nq; q++)
	{
		GpxRequest *req = b->reqs[q];
		gpuidx_term_ref *refs = &b->terms[(size_t) q * GPX_RANK_MAX_PARTS];

		for (uint32_t t = 0; t < req->nterms; t++)
		{
			GpxRequestTerm *rt = &req->terms[t];
			gpuidx_engine_error err;

			if (!(rt->flags & GPX_TERM_PUT) || rt->len == 0 || rt->key == 0 || rt->kind == GPX_PART_TFS)
				continue;
			if (rt->kind == GPX_PART_LIST)
				rt->put_status = e->api->cache_put(e->engine, rt->key, refs[t].bytes, rt->len, &err);
			else
				rt->put_status = e->api->cache_put_data(e->engine, rt->key, rt->kind, refs[t].bytes,
														rt->len, &err);
			/* cached now: the batch reads it from there; else the bytes go as they are */
			if (rt->put_status == GPUIDX_ENGINE_OK)
				refs[t].bytes = NULL;
		}
		/* a ranked query's terms were copied before the puts */
		if (req->kind == GPX_REQUEST_RANK)
		{
			gpuidx_rank_query *rq = &b->ranked[b->index[q]];
			gpuidx_rank_term *rterms = (gpuidx_rank_term *) rq->terms;

			rq->doclens = refs[0];
			for (uint32_t t = 0; t < rq->nterms; t++)
			{
				rterms[t].list = refs[1 + 2 * t];
				if (rterms[t].tfs == NULL)
					rterms[t].freqs = refs[2 + 2 * t];
			}
		}
	}
	memset(&b->err, 0, sizeof(b->err));
	memset(&b->rank_err, 0, sizeof(b->rank_err));
	memset(&b->stats, 0, sizeof(b->stats));
	memset(&b->rank_stats, 0, sizeof(b->rank_stats));
	b->status = b->rank_status = GPUIDX_ENGINE_OK;
	if (b->nplain > 0)
		b->status = e->api->run_batch(e->engine, b->queries, (uint32_t) b->nplain, &b->stats, &b->err);
	if (b->nranked > 0 && b->status != GPUIDX_ENGINE_ERR_DEVICE_LOST)
		b->rank_status = e->api->run_ranked(e->engine, b->ranked, (uint32_t) b->nranked, &b->rank_stats,
											&b->rank_err);
	else if (b->nranked > 0)
		b->rank_status = b->status;
}

/* the runner: a batch that ran, back to its backends; false when the device is lost */
static bool
hand_back(EngineProcess *e, EngineBatch *b)
{
	GpxQueueHeader *hdr = e->hdr;
	char		note[256];

	for (int q = 0; q < b->nq; q++)
	{
		GpxRequest *req = b->reqs[q];

		if (req->kind == GPX_REQUEST_INTERSECT)
		{
			gpuidx_query *qq = &b->queries[b->index[q]];
			int			qst = b->status != GPUIDX_ENGINE_OK ? b->status : qq->status;
			bool		ok = qst == GPUIDX_ENGINE_OK;

			/*
			 * a request the engine refused alone answers on the CPU: say why
			 * in the note (a key evicted meanwhile is counted, not an error)
			 */
			if (!ok && b->status == GPUIDX_ENGINE_OK && qst != GPUIDX_ENGINE_ERR_NOT_CACHED)
			{
				snprintf(note, sizeof(note), "a request failed: %s", engine_status_name(qst));
				engine_set_text(hdr->note, sizeof(hdr->note), note);
			}
			finish_slot(e, b->taken[q], req, qst, ok ? qq->out_count : 0, ok ? qq->total : 0, (uint32_t) b->nq);
		}
		else
		{
			gpuidx_rank_query *rq = &b->ranked[b->index[q]];
			int			qst = b->rank_status != GPUIDX_ENGINE_OK ? b->rank_status : rq->status;
			bool		ok = qst == GPUIDX_ENGINE_OK;

			((GpxRankParams *) ((char *) req + req->params_offset))->matched = ok ? rq->matched : 0;
			finish_slot(e, b->taken[q], req, qst, ok ? rq->out_count : 0, 0, (uint32_t) b->nq);
		}
	}
	gpx_add_relaxed64(&hdr->counters[GPX_ENGINE_BATCHES], 1);
	gpx_add_relaxed64(&hdr->counters[GPX_ENGINE_REQUESTS], (uint64_t) b->nq);
	gpx_add_relaxed64(&hdr->counters[GPX_ENGINE_HOST_US],
					  (uint64_t) ((b->stats.host_seconds + b->rank_stats.host_seconds) * 1e6));
	gpx_add_relaxed64(&hdr->counters[GPX_ENGINE_DEVICE_US],
					  (uint64_t) ((b->stats.device_seconds + b->rank_stats.device_seconds) * 1e6));
	gpx_add_relaxed64(&hdr->counters[GPX_ENGINE_RETURN_US],
					  (uint64_t) ((b->stats.return_seconds + b->rank_stats.return_seconds) * 1e6));
	gpx_add_relaxed64(&hdr->counters[GPX_ENGINE_BYTES_RETURNED],
					  b->stats.bytes_returned + b->rank_stats.bytes_returned);
	if (b->status != GPUIDX_ENGINE_OK)
	{
		snprintf(note, sizeof(note), "batch failed: %s: %s", engine_status_name(b->status), b->err.message);
		engine_set_text(hdr->note, sizeof(hdr->note), note);
	}
	else if (b->rank_status != GPUIDX_ENGINE_OK)
	{
		snprintf(note, sizeof(note), "ranked batch failed: %s: %s", engine_status_name(b->rank_status),
				 b->rank_err.message);
		engine_set_text(hdr->note, sizeof(hdr->note), note);
	}
	b->nq = b->nplain = b->nranked = 0;
	return b->status != GPUIDX_ENGINE_ERR_DEVICE_LOST && b->rank_status != GPUIDX_ENGINE_ERR_DEVICE_LOST;
}

void *
serve_runner_main(void *arg)
{
	EngineProcess *e = arg;
	int			next = 0;
	uint64_t	one = 1;

	pthread_mutex_lock(&e->lock);
	for (;;)
	{
		bool		lost;

		while (!e->stop && e->batches[next].state != BATCH_READY)
		{
			struct timespec ts;
			int64_t		wake;

			if (e->gpu_api == NULL || e->api == e->gpu_api)
			{
				pthread_cond_wait(&e->ready, &e->lock);
				continue;
			}
			/* idle while the CPU engine stands in: the GPU again when due */
			wake = e->gpu_next_try_ns;
			ts.tv_sec = wake / 1000000000;
			ts.tv_nsec = wake % 1000000000;
			if (pthread_cond_timedwait(&e->ready, &e->lock, &ts) != 0)
			{
				pthread_mutex_unlock(&e->lock);
				engine_retry_gpu(e);
				pthread_mutex_lock(&e->lock);
			}
		}
		if (e->batches[next].state != BATCH_READY)
			break;
		pthread_mutex_unlock(&e->lock);
		engine_retry_gpu(e);
		gpx_store_relaxed_i64(&e->hdr->batch_started_ns, engine_now_ns());
		run_batch(e, &e->batches[next]);
		lost = !hand_back(e, &e->batches[next]);
		gpx_store_relaxed_i64(&e->hdr->batch_started_ns, 0);
		pthread_mutex_lock(&e->lock);
		e->batches[next].state = BATCH_FREE;
		/*
		 * the main thread may be waiting for a free batch: an eventfd's
		 * write fails only when its count is full, and then it is awake
		 */
		if (write(e->freed_fd, &one, sizeof(one)) < 0)
		{
		}
		if (lost)
		{
			/* the main thread ends the process; the supervisor fails what is left */
			e->lost = true;
			break;
		}
		next ^= 1;
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}
