/*
 * worker.c
 *	  The GPU worker: the supervisor (a background worker) and the engine
 *	  process it forks, which owns the device and answers the queue in
 *	  batches.  See worker.h for why they are two processes, queue.h for the
 *	  slot protocol.
 */
#include "gpuidx.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/fork_process.h"
#include "postmaster/interrupt.h"
#include "tcop/tcopprot.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/ps_status.h"

#include "engine/engine.h"
#include "worker/gpucache.h"
#include "worker/queue.h"

/* ---------------------------------------------------------------------------
 * The engine process: plain C over shared memory, no lock, no PostgreSQL
 * error handling; any failure ends it and the supervisor starts another.
 */

static volatile sig_atomic_t engine_stop = false;

static void
engine_sigterm(SIGNAL_ARGS)
{
	engine_stop = true;
}

static void
note(GpxWorkerShared *sh, const char *fmt,...) pg_attribute_printf(2, 3);

static void
note(GpxWorkerShared *sh, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(sh->engine_note, sizeof(sh->engine_note), fmt, args);
	va_end(args);
}

/* the configured engine, else the CPU engine (the reason noted); the API in *api */
static gpuidx_engine *
engine_start(GpxWorkerShared *sh, const gpuidx_engine_api **api)
{
	gpuidx_engine_config cfg = {sizeof(cfg), 0, (uint64) gpx_gpu_cache_mb << 20, 0, 1, 0};
	gpuidx_engine *engine;
	gpuidx_engine_info info;
	char		path[MAXPGPATH];

	*api = gpx_engine_open(&cfg, &engine, path, sizeof(path), sh->engine_note, sizeof(sh->engine_note));
	if (*api == NULL)
		return NULL;
	(*api)->get_info(engine, &info);
	strlcpy(sh->engine_kind, info.kind, sizeof(sh->engine_kind));
	strlcpy(sh->device_name, info.device_name, sizeof(sh->device_name));
	pg_atomic_write_u32(&sh->engine_is_gpu, strcmp(info.kind, "cpu") != 0);
	return engine;
}

static void
wake_backend(const GpxSlot *slot)
{
	SetLatch(&GetPGProcByNumber(slot->procno)->procLatch);
}

/*
 * A slot answered (or failed): DONE, or RECLAIM when its backend gave up.
 * req: its checked request, for the intersection's length; or NULL.
 */
static void
finish_slot(GpxWorkerShared *sh, GpxSlot *slot, GpxRequest *req, int status, uint32 count,
			uint32 total, uint32 batch_size)
{
	uint32		expected = GPX_SLOT_RUNNING;

	if (req != NULL)
		req->total = total;
	slot->batch_size = batch_size;
	slot->status = status;
	slot->out_count = count;
	pg_write_barrier();
	if (pg_atomic_compare_exchange_u32(&slot->state, &expected, GPX_SLOT_DONE))
		wake_backend(slot);
	else
	{
		/* ABANDONED: the supervisor frees it */
		pg_atomic_write_u32(&slot->state, GPX_SLOT_RECLAIM);
		SetLatch(&GetPGProcByNumber(sh->supervisor_procno)->procLatch);
	}
}

/*
 * The pipeline's batches (see below): requests of both kinds side by side,
 * each kind in its own array for its engine call.
 */
typedef enum
{
	BATCH_FREE,
	BATCH_READY					/* gathered: the runner's */
} BatchState;

typedef struct EngineBatch
{
	BatchState	state;
	int			nq;				/* requests */
	int			nplain;			/* of them intersections, in queries */
	int			nranked;		/* ranked, in ranked */
	gpuidx_query *queries;
	gpuidx_rank_query *ranked;
	gpuidx_rank_term *rank_terms;	/* GPUIDX_ENGINE_MAX_TERMS per ranked query */
	gpuidx_term_ref *terms;		/* GPX_RANK_MAX_PARTS per request */
	int		   *taken;			/* each request's slot */
	int		   *index;			/* its place in queries or ranked */
	GpxRequest **reqs;
	int			status;			/* run_batch's */
	int			rank_status;	/* run_ranked's */
	gpuidx_batch_stats stats;
	gpuidx_batch_stats rank_stats;
	gpuidx_engine_error err;
	gpuidx_engine_error rank_err;
} EngineBatch;

/*
 * A request's bytes, checked against its slot before the engine sees them,
 * into b's next place (request q): true when they hold.  Plain memory
 * reads: no engine call.
 */
static bool
request_take(GpxWorkerShared *sh, GpxSlot *slot, EngineBatch *b, int q)
{
	GpxRequest *req;
	char	   *base;
	gpuidx_term_ref *terms = &b->terms[(size_t) q * GPX_RANK_MAX_PARTS];
	uint32		max_parts;

	if (slot->offset > sh->arena_size || slot->size > sh->arena_size - slot->offset ||
		slot->size < offsetof(GpxRequest, terms))
		return false;
	base = sh->arena + slot->offset;
	req = (GpxRequest *) base;
	if (req->kind != GPX_REQUEST_INTERSECT && req->kind != GPX_REQUEST_RANK)
		return false;
	max_parts = req->kind == GPX_REQUEST_RANK ? GPX_RANK_MAX_PARTS : GPUIDX_ENGINE_MAX_TERMS;
	if (req->nterms < 1 || req->nterms > max_parts ||
		offsetof(GpxRequest, terms) + req->nterms * sizeof(GpxRequestTerm) > slot->size ||
		req->out_offset > slot->size)
		return false;
	for (uint32 t = 0; t < req->nterms; t++)
	{
		GpxRequestTerm *rt = &req->terms[t];

		if (rt->offset > slot->size || rt->len > slot->size - rt->offset ||
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

		if ((uint64) req->out_capacity * sizeof(uint32) > slot->size - req->out_offset)
			return false;
		for (uint32 t = 0; t < req->nterms; t++)
			if (req->terms[t].kind != GPX_PART_LIST)
				return false;
		memset(qq, 0, sizeof(*qq));
		qq->terms = terms;
		qq->nterms = req->nterms;
		qq->result = req->result;
		qq->out = req->out_capacity > 0 ? (uint32 *) (base + req->out_offset) : NULL;
		qq->out_capacity = req->out_capacity;
		b->index[q] = b->nplain++;
	}
	else
	{
		gpuidx_rank_query *rq = &b->ranked[b->nranked];
		gpuidx_rank_term *rterms = &b->rank_terms[(size_t) b->nranked * GPUIDX_ENGINE_MAX_TERMS];
		GpxRankParams *params;
		uint64		docs_bytes;

		if (req->params_offset > slot->size || sizeof(GpxRankParams) > slot->size - req->params_offset ||
			req->params_offset % 8 != 0 || req->out_offset % 8 != 0)
			return false;
		params = (GpxRankParams *) (base + req->params_offset);
		docs_bytes = gpx_rank_docs_bytes(req->out_capacity);
		if (params->nterms < 1 || params->nterms > GPUIDX_ENGINE_MAX_TERMS ||
			req->nterms != 1 + 2 * params->nterms || req->out_capacity != params->k ||
			docs_bytes + (uint64) req->out_capacity * sizeof(double) > slot->size - req->out_offset ||
			req->terms[0].kind != GPX_PART_DOCLENS)
			return false;
		for (uint32 t = 0; t < params->nterms; t++)
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

static void
sleep_until(GpxWorkerShared *sh, uint64 usecs)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += usecs / 1000000;
	ts.tv_nsec += (long) (usecs % 1000000) * 1000;
	if (ts.tv_nsec >= 1000000000L)
	{
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	(void) sem_timedwait(&sh->wakeup, &ts);
	while (sem_trywait(&sh->wakeup) == 0)
		;
}

static bool
engine_should_stop(GpxWorkerShared *sh, pid_t supervisor)
{
	return engine_stop || pg_atomic_read_u32(&sh->shutdown) != 0 || getppid() != supervisor;
}

/*
 * The engine process runs batches as a pipeline of two threads, so that a
 * batch costs its engine time alone: while the runner thread has batch k in
 * the engine (puts, the intersections, the results written into the
 * arena) and then hands it back, the main thread gathers batch k+1 from the
 * queue; the runner goes from k to k+1 without waiting.  Only the runner
 * calls the engine.  Neither thread calls PostgreSQL but for SetLatch,
 * which touches only the latch in shared memory and sends a signal (it is
 * safe in signal handlers for the same reason).
 */
typedef struct EnginePipe
{
	pthread_mutex_t lock;
	pthread_cond_t ready;		/* a batch is READY, or stop */
	pthread_cond_t freed;		/* a batch is FREE again */
	EngineBatch batches[2];
	bool		stop;
	bool		lost;			/* the device failed: the process must end */
	GpxWorkerShared *sh;
	const gpuidx_engine_api *api;
	gpuidx_engine *engine;
} EnginePipe;

/* the runner: drops, then the batch's puts, then the batch */
static void
run_batch(EnginePipe *p, EngineBatch *b)
{
	uint64		key;

	/*
	 * Lists the directory evicted leave the device before the puts: every
	 * drop the batch's backends made before submitting is in the ring by now.
	 */
	while (gpx_cache_next_drop(&key))
		p->api->cache_remove(p->engine, key);
	for (int q = 0; q < b->nq; q++)
	{
		GpxRequest *req = b->reqs[q];

		for (uint32 t = 0; t < req->nterms; t++)
		{
			GpxRequestTerm *rt = &req->terms[t];
			gpuidx_term_ref *ref = &b->terms[(size_t) q * GPX_RANK_MAX_PARTS + t];
			gpuidx_engine_error err;

			if (!(rt->flags & GPX_TERM_PUT) || rt->len == 0 || rt->key == 0 || rt->kind == GPX_PART_TFS)
				continue;
			if (rt->kind == GPX_PART_LIST)
				rt->put_status = p->api->cache_put(p->engine, rt->key, ref->bytes, rt->len, &err);
			else
				rt->put_status = p->api->cache_put_data(p->engine, rt->key, rt->kind, ref->bytes,
														rt->len, &err);
			/* cached now: the batch reads it from there; else the bytes go as they are */
			if (rt->put_status == GPUIDX_ENGINE_OK)
				ref->bytes = NULL;
		}
		/* a ranked query's terms were copied before the puts */
		if (req->kind == GPX_REQUEST_RANK)
		{
			gpuidx_rank_query *rq = &b->ranked[b->index[q]];
			gpuidx_rank_term *rterms = (gpuidx_rank_term *) rq->terms;
			gpuidx_term_ref *refs = &b->terms[(size_t) q * GPX_RANK_MAX_PARTS];

			rq->doclens = refs[0];
			for (uint32 t = 0; t < rq->nterms; t++)
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
		b->status = p->api->run_batch(p->engine, b->queries, b->nplain, &b->stats, &b->err);
	if (b->nranked > 0 && b->status != GPUIDX_ENGINE_ERR_DEVICE_LOST)
		b->rank_status = p->api->run_ranked(p->engine, b->ranked, b->nranked, &b->rank_stats,
											&b->rank_err);
	else if (b->nranked > 0)
		b->rank_status = b->status;
}

/* the runner: a batch that ran, back to its backends; false when the device is lost */
static bool
hand_back(GpxWorkerShared *sh, EngineBatch *b)
{
	for (int q = 0; q < b->nq; q++)
	{
		GpxRequest *req = b->reqs[q];
		GpxSlot    *slot = &sh->slots[b->taken[q]];

		if (req->kind == GPX_REQUEST_INTERSECT)
		{
			gpuidx_query *qq = &b->queries[b->index[q]];
			int			qst = b->status != GPUIDX_ENGINE_OK ? b->status : qq->status;
			bool		ok = qst == GPUIDX_ENGINE_OK;

			finish_slot(sh, slot, req, qst, ok ? qq->out_count : 0, ok ? qq->total : 0, (uint32) b->nq);
		}
		else
		{
			gpuidx_rank_query *rq = &b->ranked[b->index[q]];
			int			qst = b->rank_status != GPUIDX_ENGINE_OK ? b->rank_status : rq->status;
			bool		ok = qst == GPUIDX_ENGINE_OK;

			((GpxRankParams *) ((char *) req + req->params_offset))->matched = ok ? rq->matched : 0;
			finish_slot(sh, slot, req, qst, ok ? rq->out_count : 0, 0, (uint32) b->nq);
		}
	}
	pg_atomic_fetch_add_u64(&sh->counters[GPX_STAT_BATCHES], 1);
	pg_atomic_fetch_add_u64(&sh->counters[GPX_STAT_REQUESTS], b->nq);
	pg_atomic_fetch_add_u64(&sh->counters[GPX_STAT_BATCH_HOST_US],
							(uint64) ((b->stats.host_seconds + b->rank_stats.host_seconds) * 1e6));
	pg_atomic_fetch_add_u64(&sh->counters[GPX_STAT_BATCH_DEVICE_US],
							(uint64) ((b->stats.device_seconds + b->rank_stats.device_seconds) * 1e6));
	pg_atomic_fetch_add_u64(&sh->counters[GPX_STAT_BATCH_RETURN_US],
							(uint64) ((b->stats.return_seconds + b->rank_stats.return_seconds) * 1e6));
	pg_atomic_fetch_add_u64(&sh->counters[GPX_STAT_BYTES_RETURNED],
							b->stats.bytes_returned + b->rank_stats.bytes_returned);
	if (b->status != GPUIDX_ENGINE_OK)
		note(sh, "batch failed: %s: %s", engine_status_name(b->status), b->err.message);
	else if (b->rank_status != GPUIDX_ENGINE_OK)
		note(sh, "ranked batch failed: %s: %s", engine_status_name(b->rank_status), b->rank_err.message);
	b->nq = b->nplain = b->nranked = 0;
	return b->status != GPUIDX_ENGINE_ERR_DEVICE_LOST && b->rank_status != GPUIDX_ENGINE_ERR_DEVICE_LOST;
}

static void *
runner_main(void *arg)
{
	EnginePipe *p = arg;
	int			next = 0;

	pthread_mutex_lock(&p->lock);
	for (;;)
	{
		bool		lost;

		while (!p->stop && p->batches[next].state != BATCH_READY)
			pthread_cond_wait(&p->ready, &p->lock);
		if (p->batches[next].state != BATCH_READY)
			break;
		pthread_mutex_unlock(&p->lock);
		run_batch(p, &p->batches[next]);
		lost = !hand_back(p->sh, &p->batches[next]);
		pthread_mutex_lock(&p->lock);
		p->batches[next].state = BATCH_FREE;
		pthread_cond_signal(&p->freed);
		if (lost)
		{
			/* the main thread ends the process; the supervisor fails what is left */
			p->lost = true;
			sem_post(&p->sh->wakeup);
			break;
		}
		next ^= 1;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * The main thread: the submitted requests into batch b once their work,
 * their number or the oldest one's wait says so (PARA batching).  Returns
 * how many; 0 while it waits (it sleeps for the rest of the window, or
 * until woken).
 */
static int
gather(GpxWorkerShared *sh, EngineBatch *b)
{
	TimestampTz now;
	TimestampTz oldest = 0;
	uint64		work = 0;
	int			waiting = 0;
	uint64		window = pg_atomic_read_u32(&sh->batch_window_us);
	uint32		max_requests = pg_atomic_read_u32(&sh->batch_max_requests);

	for (int i = 0; i < sh->nslots; i++)
	{
		GpxSlot    *slot = &sh->slots[i];

		if (pg_atomic_read_u32(&slot->state) != GPX_SLOT_SUBMITTED)
			continue;
		pg_read_barrier();
		waiting++;
		work += slot->work;
		if (oldest == 0 || slot->submitted < oldest)
			oldest = slot->submitted;
	}
	if (waiting == 0)
	{
		sleep_until(sh, 100000);
		return 0;
	}
	now = GetCurrentTimestamp();
	if (oldest > now)
		oldest = now;
	if (work < pg_atomic_read_u64(&sh->batch_max_work) && now - oldest < (TimestampTz) window &&
		(uint32) waiting < max_requests)
	{
		sleep_until(sh, window - (now - oldest));
		return 0;
	}
	b->nq = b->nplain = b->nranked = 0;
	for (int i = 0; i < sh->nslots && (uint32) b->nq < max_requests; i++)
	{
		GpxSlot    *slot = &sh->slots[i];
		uint32		expected = GPX_SLOT_SUBMITTED;

		if (pg_atomic_read_u32(&slot->state) != GPX_SLOT_SUBMITTED ||
			!pg_atomic_compare_exchange_u32(&slot->state, &expected, GPX_SLOT_RUNNING))
			continue;
		pg_read_barrier();
		if (!request_take(sh, slot, b, b->nq))
		{
			finish_slot(sh, slot, NULL, GPUIDX_ENGINE_ERR_INVALID, 0, 0, 1);
			continue;
		}
		b->taken[b->nq++] = i;
	}
	return b->nq;
}

static void engine_process_main(GpxWorkerShared *sh, pid_t supervisor) pg_attribute_noreturn();

static void
engine_process_main(GpxWorkerShared *sh, pid_t supervisor)
{
	EnginePipe	p;
	pthread_t	runner;
	sigset_t	all,
				old;
	int			fill = 0;
	bool		lost = false;

	memset(&p, 0, sizeof(p));
	p.sh = sh;
	for (int i = 0; i < 2; i++)
	{
		EngineBatch *b = &p.batches[i];

		b->queries = malloc(sh->nslots * sizeof(gpuidx_query));
		b->ranked = malloc(sh->nslots * sizeof(gpuidx_rank_query));
		b->rank_terms = malloc((size_t) sh->nslots * GPUIDX_ENGINE_MAX_TERMS * sizeof(gpuidx_rank_term));
		b->terms = malloc((size_t) sh->nslots * GPX_RANK_MAX_PARTS * sizeof(gpuidx_term_ref));
		b->taken = malloc(sh->nslots * sizeof(int));
		b->index = malloc(sh->nslots * sizeof(int));
		b->reqs = malloc(sh->nslots * sizeof(GpxRequest *));
		if (b->queries == NULL || b->ranked == NULL || b->rank_terms == NULL || b->terms == NULL ||
			b->taken == NULL || b->index == NULL || b->reqs == NULL)
			_exit(2);
	}
	p.engine = engine_start(sh, &p.api);
	if (p.engine == NULL)
		_exit(2);
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.ready, NULL);
	pthread_cond_init(&p.freed, NULL);
	/* signals go to the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&runner, NULL, runner_main, &p) != 0)
		_exit(2);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* this device holds none of what the cache directory lists */
	gpx_cache_new_generation();
	pg_atomic_write_u32(&sh->engine_ready, 1);

	while (!engine_should_stop(sh, supervisor))
	{
		bool		busy;

		pthread_mutex_lock(&p.lock);
		lost = p.lost;
		busy = p.batches[fill].state != BATCH_FREE;
		if (busy && !lost)
		{
			/* both batches with the runner: wait for one, a while at most (to see a stop) */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000 * 1000;
			if (ts.tv_nsec >= 1000000000L)
			{
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&p.freed, &p.lock, &ts);
		}
		pthread_mutex_unlock(&p.lock);
		if (lost)
			break;
		if (busy || gather(sh, &p.batches[fill]) == 0)
			continue;
		pthread_mutex_lock(&p.lock);
		p.batches[fill].state = BATCH_READY;
		pthread_cond_signal(&p.ready);
		pthread_mutex_unlock(&p.lock);
		fill ^= 1;
	}
	pg_atomic_write_u32(&sh->engine_ready, 0);
	pthread_mutex_lock(&p.lock);
	p.stop = true;
	pthread_cond_signal(&p.ready);
	pthread_mutex_unlock(&p.lock);
	/* the runner finishes (and hands back) what it holds; the supervisor fails the rest */
	pthread_join(runner, NULL);
	lost |= p.lost;
	p.api->destroy(p.engine);
	/* a lost device: only a new process can use it again */
	_exit(lost ? 3 : 0);
}

/* ---------------------------------------------------------------------------
 * The supervisor
 */

static pid_t engine_pid = 0;

/*
 * The engine process is gone (confirmed by waitpid): what it held is
 * answered as failed so that its backends answer on the CPU at once, what
 * was abandoned is freed.
 */
static void
engine_gone(GpxWorkerShared *sh)
{
	pg_atomic_write_u32(&sh->engine_ready, 0);
	pg_atomic_write_u32(&sh->engine_pid, 0);
	engine_pid = 0;
	for (int i = 0; i < sh->nslots; i++)
	{
		GpxSlot    *slot = &sh->slots[i];
		uint32		expected = GPX_SLOT_RUNNING;

		if (pg_atomic_compare_exchange_u32(&slot->state, &expected, GPX_SLOT_FAILED))
		{
			wake_backend(slot);
			continue;
		}
		expected = GPX_SLOT_SUBMITTED;
		if (pg_atomic_compare_exchange_u32(&slot->state, &expected, GPX_SLOT_FAILED))
		{
			wake_backend(slot);
			continue;
		}
		expected = GPX_SLOT_ABANDONED;
		if (pg_atomic_compare_exchange_u32(&slot->state, &expected, GPX_SLOT_RECLAIM))
			continue;
	}
}

/* free the bytes of requests whose backends gave up */
static void
reclaim(GpxWorkerShared *sh)
{
	for (int i = 0; i < sh->nslots; i++)
	{
		GpxSlot    *slot = &sh->slots[i];

		if (pg_atomic_read_u32(&slot->state) == GPX_SLOT_RECLAIM)
			gpx_slot_release(slot);
	}
}

static void
engine_launch(GpxWorkerShared *sh)
{
	pid_t		pid;

	pid = fork_process();
	if (pid == 0)
	{
		/* the engine process: none of the supervisor's exit callbacks */
		MyProcPid = getpid();
		on_exit_reset();
		pqsignal(SIGTERM, engine_sigterm);
		pqsignal(SIGHUP, SIG_IGN);
		pqsignal(SIGINT, SIG_IGN);
		pqsignal(SIGUSR1, SIG_IGN);
		pqsignal(SIGUSR2, SIG_IGN);
		pqsignal(SIGQUIT, SIG_DFL);
		pqsignal(SIGCHLD, SIG_DFL);
		set_ps_display("engine");
		engine_process_main(sh, sh->supervisor_pid);
	}
	if (pid < 0)
	{
		ereport(LOG, (errmsg("gpuidx worker could not fork its engine process: %m")));
		return;
	}
	engine_pid = pid;
	pg_atomic_write_u32(&sh->engine_pid, (uint32) pid);
	pg_atomic_fetch_add_u64(&sh->counters[GPX_STAT_ENGINE_STARTS], 1);
}

static void
engine_stop_and_wait(GpxWorkerShared *sh)
{
	pg_atomic_write_u32(&sh->shutdown, 1);
	if (engine_pid > 0)
	{
		int			status;

		kill(engine_pid, SIGTERM);
		sem_post(&sh->wakeup);
		for (int i = 0; i < 50; i++)
		{
			if (waitpid(engine_pid, &status, WNOHANG) == engine_pid)
			{
				engine_gone(sh);
				return;
			}
			pg_usleep(100000);
		}
		kill(engine_pid, SIGKILL);
		(void) waitpid(engine_pid, &status, 0);
		engine_gone(sh);
	}
}

/* on the supervisor's exit (shutdown, pg_terminate_backend, FATAL): its engine process too */
static void
supervisor_exit(int code, Datum arg)
{
	engine_stop_and_wait(gpx_worker_shared);
	reclaim(gpx_worker_shared);
}

void
gpx_worker_main(Datum arg)
{
	GpxWorkerShared *sh = gpx_worker_shared;
	TimestampTz next_start = 0;
	TimestampTz started = 0;
	long		backoff_ms = 100;
	bool		was_ready = false;

	/*
	 * die(): a shutdown or pg_terminate_backend ends it with FATAL (exit 1),
	 * so the postmaster starts it again unless the server is stopping
	 */
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGCHLD, SIG_DFL);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	if (sh == NULL)
		ereport(ERROR, (errmsg("gpuidx worker started without its shared memory")));

	/* an engine process of an earlier supervisor ends by itself: wait for it */
	for (int i = 0; i < 50 && pg_atomic_read_u32(&sh->engine_pid) != 0; i++)
	{
		if (kill((pid_t) pg_atomic_read_u32(&sh->engine_pid), 0) != 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	engine_gone(sh);
	sh->supervisor_pid = MyProcPid;
	sh->supervisor_procno = MyProc->pgprocno;
	pg_atomic_write_u32(&sh->shutdown, 0);
	gpx_worker_publish_settings();
	(void) gpx_worker_arena();
	before_shmem_exit(supervisor_exit, (Datum) 0);

	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			gpx_worker_publish_settings();
		}
		if (engine_pid > 0)
		{
			int			status;

			if (waitpid(engine_pid, &status, WNOHANG) == engine_pid)
			{
				/* quick deaths back off, up to 10 s between starts */
				if (TimestampDifferenceExceeds(started, now, 10000))
					backoff_ms = 100;
				else
					backoff_ms = Min(backoff_ms * 2, 10000);
				ereport(LOG,
						(errmsg("gpuidx engine process %d %s; restarting it in %ld ms",
								(int) engine_pid,
								WIFSIGNALED(status) ? "was killed by a signal" : "exited",
								backoff_ms),
						 WIFSIGNALED(status) ? errdetail("Signal %d.", WTERMSIG(status)) :
						 errdetail("Exit code %d.", WEXITSTATUS(status))));
				engine_gone(sh);
				was_ready = false;
				next_start = TimestampTzPlusMilliseconds(now, backoff_ms);
			}
		}
		if (engine_pid == 0 && now >= next_start)
		{
			engine_launch(sh);
			started = now;
			if (engine_pid == 0)
				next_start = TimestampTzPlusMilliseconds(now, 1000);
		}
		if (!was_ready && pg_atomic_read_u32(&sh->engine_ready))
		{
			was_ready = true;
			ereport(LOG,
					(errmsg("gpuidx engine process %d serves with the %s engine%s%s",
							(int) engine_pid, sh->engine_kind,
							sh->device_name[0] ? " on " : "", sh->device_name),
					 sh->engine_note[0] ? errdetail("%s", sh->engine_note) : 0));
		}
		reclaim(sh);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* cancels, terminations and ProcSignalBarriers (DROP DATABASE waits on them) */
		CHECK_FOR_INTERRUPTS();
	}
}
