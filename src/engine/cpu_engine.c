/*
 * cpu_engine.c
 *	  The CPU engine: src/cpu's intersections behind the engine table, with a
 *	  host-memory list cache and a thread per core for a batch.  It is the
 *	  fallback wherever the CUDA engine cannot run, the reference the GPU is
 *	  checked against, and the baseline the benchmarks measure it by.
 */
#include "engine.h"
#include "lru.h"
#include "cpu/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CPU_ENGINE_DEFAULT_CACHE (UINT64_C(1) << 30)

struct batch_work;

/* threads kept for the engine's life, woken for each batch */
typedef struct thread_pool
{
	pthread_mutex_t lock;
	pthread_cond_t work_ready;
	pthread_cond_t work_done;
	pthread_t  *tids;
	uint32_t	nthreads;		/* started; the caller's thread works too */
	struct batch_work *work;
	uint64_t	generation;		/* bumped per batch */
	uint32_t	busy;			/* pool threads still on the batch */
	int			stop;
} thread_pool;

struct gpuidx_engine
{
	lru_cache	cache;
	uint32_t	threads;
	uint32_t	skip_ratio;
	thread_pool pool;
};

/* a cached list: a copy of its bytes (malloc aligns them) and its opened view */
typedef struct cpu_list
{
	lru_entry	entry;
	pl_view		view;
	uint8_t    *bytes;
} cpu_list;

#define ERR(error, status, ...) engine_set_error((error), (status), __FILE__, __LINE__, __VA_ARGS__)

static void pool_start(thread_pool *pool, uint32_t threads);
static void pool_stop(thread_pool *pool);

static int
cpu_create(const gpuidx_engine_config *config, gpuidx_engine **out, gpuidx_engine_error *error)
{
	gpuidx_engine *e;

	if (config == NULL || config->struct_size < sizeof(gpuidx_engine_config))
	{
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "engine configuration of an unknown size");
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL || !lru_init(&e->cache, config->cache_bytes ? config->cache_bytes : CPU_ENGINE_DEFAULT_CACHE))
	{
		free(e);
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory creating the CPU engine");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	e->threads = config->threads ? config->threads : 1;
	e->skip_ratio = config->skip_ratio ? config->skip_ratio : CPU_SKIP_RATIO_DEFAULT;
	pool_start(&e->pool, e->threads);
	*out = e;
	return GPUIDX_ENGINE_OK;
}

static void
cpu_list_free(cpu_list *l)
{
	free(l->bytes);
	free(l);
}

static void
cpu_destroy(gpuidx_engine *e)
{
	lru_entry  *entry;

	if (e == NULL)
		return;
	while ((entry = lru_oldest(&e->cache)) != NULL)
	{
		lru_remove(&e->cache, entry, 0);
		cpu_list_free((cpu_list *) entry->data);
	}
	lru_free(&e->cache);
	pool_stop(&e->pool);
	free(e);
}

static int
cpu_get_info(gpuidx_engine *e, gpuidx_engine_info *info)
{
	memset(info, 0, sizeof(*info));
	strcpy(info->kind, "cpu");
	strcpy(info->device_name, "host CPU");
	info->device = -1;
	info->multiprocessors = e->threads;
	info->abi_version = GPUIDX_ENGINE_ABI_VERSION;
	return GPUIDX_ENGINE_OK;
}

static int
cpu_cache_put(gpuidx_engine *e, uint64_t key, const void *bytes, uint64_t len,
			  gpuidx_engine_error *error)
{
	cpu_list   *l;
	lru_entry  *old;
	pl_status	st;

	if (len > e->cache.stats.bytes_capacity)
	{
		ERR(error, GPUIDX_ENGINE_ERR_TOO_LARGE, "list of %llu bytes is larger than the cache",
			(unsigned long long) len);
		return GPUIDX_ENGINE_ERR_TOO_LARGE;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL || (l->bytes = malloc(len ? len : 1)) == NULL)
	{
		free(l);
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory caching a list");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	memcpy(l->bytes, bytes, len);
	st = pl_open(&l->view, l->bytes, len, PL_OPEN_VERIFY_CHECKSUM);
	if (st != PL_OK)
	{
		cpu_list_free(l);
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "list for key %llu: %s", (unsigned long long) key,
			pl_status_message(st));
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	if ((old = lru_find(&e->cache, key)) != NULL)
	{
		lru_remove(&e->cache, old, 0);
		cpu_list_free((cpu_list *) old->data);
	}
	while (e->cache.stats.bytes_used + len > e->cache.stats.bytes_capacity)
	{
		lru_entry  *victim = lru_oldest(&e->cache);

		lru_remove(&e->cache, victim, 1);
		cpu_list_free((cpu_list *) victim->data);
	}
	l->entry.key = key;
	l->entry.bytes = len;
	l->entry.data = l;
	if (!lru_insert(&e->cache, &l->entry))
	{
		cpu_list_free(l);
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory caching a list");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	return GPUIDX_ENGINE_OK;
}

static int
cpu_cache_contains(gpuidx_engine *e, uint64_t key)
{
	return lru_find(&e->cache, key) != NULL;
}

static int
cpu_cache_remove(gpuidx_engine *e, uint64_t key)
{
	lru_entry  *entry = lru_find(&e->cache, key);

	if (entry == NULL)
		return 0;
	lru_remove(&e->cache, entry, 0);
	cpu_list_free((cpu_list *) entry->data);
	return 1;
}

static void
cpu_cache_get_stats(gpuidx_engine *e, gpuidx_cache_stats *stats)
{
	*stats = e->cache.stats;
}

/* one batch's work, shared by its threads */
typedef struct batch_work
{
	gpuidx_engine *engine;
	gpuidx_query *queries;
	uint32_t	nqueries;
	pl_view    *views;			/* every query's lists, in query order */
	uint32_t   *first_view;		/* index into views per query */
	uint32_t	next;			/* next query to take (atomic) */
	uint32_t	merge_rounds;	/* atomic */
	uint32_t	search_rounds;	/* atomic */
} batch_work;

static cpu_method
round_method(const gpuidx_engine *e, uint64_t short_len, uint64_t long_len)
{
	return long_len >= short_len * e->skip_ratio ? CPU_METHOD_SKIP : CPU_METHOD_MERGE;
}

/* the length of a query's result before any round: what out must hold to compute it in place */
static uint32_t
query_bound(const gpuidx_query *q, const pl_view *views)
{
	uint64_t	bound = q->initial != NULL ? q->ninitial : UINT64_MAX;

	for (uint32_t t = 0; t < q->nterms; t++)
		if (views[t].count < bound)
			bound = views[t].count;
	return (uint32_t) bound;
}

/*
 * SvS: the initial set (or the shortest list) against each list, shortest
 * first, into q->out, or into scratch memory when the query asks for fewer
 * ids than the rounds need room for (a count, the first n).
 */
static void
run_query(batch_work *w, uint32_t qi)
{
	gpuidx_query *q = &w->queries[qi];
	pl_view    *views = &w->views[w->first_view[qi]];
	const pl_view *order[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	k = q->nterms;
	uint32_t	bound = query_bound(q, views);
	uint32_t   *out = q->out;
	uint32_t   *scratch = NULL;
	uint32_t	n;
	uint32_t	r = 0;
	cpu_stats	stats;

	memset(&stats, 0, sizeof(stats));
	if (bound > q->out_capacity || out == NULL)
	{
		scratch = malloc(((size_t) bound + 1) * sizeof(uint32_t));
		if (scratch == NULL)
		{
			q->status = GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
			return;
		}
		out = scratch;
	}
	for (uint32_t i = 0; i < k; i++)
	{
		uint32_t	j = i;

		while (j > 0 && order[j - 1]->count > views[i].count)
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = &views[i];
	}
	if (q->initial != NULL && k == 0)
	{
		memmove(out, q->initial, (size_t) q->ninitial * sizeof(uint32_t));
		n = q->ninitial;
	}
	else if (q->initial != NULL)
	{
		/* out may be smaller than the initial set: never copy it whole */
		n = cpu_intersect_array_list(q->initial, q->ninitial, order[0], out,
									 round_method(w->engine, q->ninitial, order[0]->count), 0, &stats);
		r = 1;
	}
	else
	{
		if (k == 1)
		{
			n = pl_decode(order[0], out) == PL_OK ? order[0]->count : CPU_CORRUPT;
			r = 1;
		}
		else
		{
			n = cpu_intersect_lists(order[0], order[1], out,
									round_method(w->engine, order[0]->count, order[1]->count),
									0, &stats);
			r = 2;
		}
	}
	for (; r < k && n > 0 && n != CPU_CORRUPT; r++)
		n = cpu_intersect_array_list(out, n, order[r], out,
									 round_method(w->engine, n, order[r]->count), 0, &stats);
	/* a list whose postings decode out of order is invalid input */
	if (n == CPU_CORRUPT)
	{
		q->total = q->out_count = 0;
		q->status = GPUIDX_ENGINE_ERR_INVALID;
	}
	else
	{
		q->total = n;
		q->out_count = gpuidx_result_wanted(q->result, n);
		if (scratch != NULL && q->out_count > 0)
			memcpy(q->out, scratch, (size_t) q->out_count * sizeof(uint32_t));
		q->status = GPUIDX_ENGINE_OK;
	}
	free(scratch);
	__atomic_fetch_add(&w->merge_rounds, stats.rounds_merge, __ATOMIC_RELAXED);
	__atomic_fetch_add(&w->search_rounds, stats.rounds_skip, __ATOMIC_RELAXED);
}

static void *
batch_thread(void *arg)
{
	batch_work *w = arg;
	uint32_t	qi;

	while ((qi = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->nqueries)
		if (w->queries[qi].status == GPUIDX_ENGINE_OK)
			run_query(w, qi);
	return NULL;
}

static void *
pool_thread(void *arg)
{
	thread_pool *pool = arg;
	uint64_t	seen = 0;

	pthread_mutex_lock(&pool->lock);
	for (;;)
	{
		batch_work *w;

		while (!pool->stop && pool->generation == seen)
			pthread_cond_wait(&pool->work_ready, &pool->lock);
		if (pool->stop)
			break;
		seen = pool->generation;
		w = pool->work;
		pthread_mutex_unlock(&pool->lock);
		batch_thread(w);
		pthread_mutex_lock(&pool->lock);
		if (--pool->busy == 0)
			pthread_cond_signal(&pool->work_done);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

static void
pool_start(thread_pool *pool, uint32_t threads)
{
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work_ready, NULL);
	pthread_cond_init(&pool->work_done, NULL);
	pool->tids = threads > 1 ? calloc(threads - 1, sizeof(pthread_t)) : NULL;
	/* a thread that fails to start leaves the others (and the caller) the work */
	while (pool->tids != NULL && pool->nthreads + 1 < threads &&
		   pthread_create(&pool->tids[pool->nthreads], NULL, pool_thread, pool) == 0)
		pool->nthreads++;
}

static void
pool_stop(thread_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stop = 1;
	pthread_cond_broadcast(&pool->work_ready);
	pthread_mutex_unlock(&pool->lock);
	for (uint32_t i = 0; i < pool->nthreads; i++)
		pthread_join(pool->tids[i], NULL);
	free(pool->tids);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->work_ready);
	pthread_cond_destroy(&pool->work_done);
}

/* the batch on every pool thread and the caller's, back when all are done */
static void
pool_run(thread_pool *pool, batch_work *w)
{
	if (pool->nthreads == 0 || w->nqueries < 2)
	{
		batch_thread(w);
		return;
	}
	pthread_mutex_lock(&pool->lock);
	pool->work = w;
	pool->busy = pool->nthreads;
	pool->generation++;
	pthread_cond_broadcast(&pool->work_ready);
	pthread_mutex_unlock(&pool->lock);
	batch_thread(w);
	pthread_mutex_lock(&pool->lock);
	while (pool->busy > 0)
		pthread_cond_wait(&pool->work_done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}

/* open every query's lists and check its output room; marks bad queries */
static void
resolve_query(gpuidx_engine *e, gpuidx_query *q, pl_view *views, gpuidx_batch_stats *stats)
{
	q->status = GPUIDX_ENGINE_OK;
	q->out_count = 0;
	q->total = 0;
	if ((q->nterms == 0 && q->initial == NULL) || q->nterms > GPUIDX_ENGINE_MAX_TERMS)
	{
		q->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const gpuidx_term_ref *ref = &q->terms[t];

		if (ref->bytes != NULL)
		{
			if (pl_open(&views[t], ref->bytes, ref->len, 0) != PL_OK)
			{
				q->status = GPUIDX_ENGINE_ERR_INVALID;
				return;
			}
			if (stats)
				stats->list_bytes += ref->len;
		}
		else
		{
			lru_entry  *entry = lru_use(&e->cache, ref->key);

			if (entry == NULL)
			{
				q->status = GPUIDX_ENGINE_ERR_NOT_CACHED;
				return;
			}
			views[t] = ((cpu_list *) entry->data)->view;
			if (stats)
				stats->list_bytes += entry->bytes;
		}
	}
	if (gpuidx_result_wanted(q->result, query_bound(q, views)) > q->out_capacity ||
		(q->out == NULL && q->out_capacity > 0))
		q->status = GPUIDX_ENGINE_ERR_INVALID;
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cpu_run_batch(gpuidx_engine *e, gpuidx_query *queries, uint32_t nqueries,
			  gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	batch_work	w;
	uint64_t	nviews = 0;
	double		start = now_seconds();

	if (stats)
		memset(stats, 0, sizeof(*stats));
	memset(&w, 0, sizeof(w));
	for (uint32_t i = 0; i < nqueries; i++)
		nviews += queries[i].nterms;
	w.engine = e;
	w.queries = queries;
	w.nqueries = nqueries;
	w.views = malloc((nviews + 1) * sizeof(pl_view));
	w.first_view = malloc(((size_t) nqueries + 1) * sizeof(uint32_t));
	if (w.views == NULL || w.first_view == NULL)
	{
		free(w.views);
		free(w.first_view);
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory for a batch of %u queries", nqueries);
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	nviews = 0;
	for (uint32_t i = 0; i < nqueries; i++)
	{
		w.first_view[i] = (uint32_t) nviews;
		resolve_query(e, &queries[i], &w.views[nviews], stats);
		nviews += queries[i].nterms;
	}

	pool_run(&e->pool, &w);
	if (stats)
	{
		stats->queries = nqueries;
		stats->merge_rounds = w.merge_rounds;
		stats->search_rounds = w.search_rounds;
		stats->rounds = w.merge_rounds + w.search_rounds;
		stats->seconds = now_seconds() - start;
		stats->host_seconds = stats->seconds;
	}
	free(w.views);
	free(w.first_view);
	return GPUIDX_ENGINE_OK;
}

static const gpuidx_engine_api cpu_api = {
	.abi_version = GPUIDX_ENGINE_ABI_VERSION,
	.struct_size = sizeof(gpuidx_engine_api),
	.create = cpu_create,
	.destroy = cpu_destroy,
	.get_info = cpu_get_info,
	.cache_put = cpu_cache_put,
	.cache_contains = cpu_cache_contains,
	.cache_remove = cpu_cache_remove,
	.cache_get_stats = cpu_cache_get_stats,
	.run_batch = cpu_run_batch,
};

const gpuidx_engine_api *
cpu_engine_api(void)
{
	return &cpu_api;
}
