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
#include "rank/bm25.h"
#include "store/rankdata.h"
#include "rank/wand.h"
#include "store/parse.h"

#include <math.h>
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

/* what a cache entry holds: a list, or ranking data (GPUIDX_DATA_*) */
#define CPU_KIND_LIST 0

/*
 * A cached entry: a copy of its bytes (malloc aligns them) and, for a list,
 * its opened view.  A query must name an entry of the kind it reads.
 */
typedef struct cpu_list
{
	lru_entry	entry;
	uint32_t	kind;			/* CPU_KIND_LIST or GPUIDX_DATA_* */
	pl_view		view;			/* lists only */
	uint8_t    *bytes;
	uint64_t	len;
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

/*
 * A copy of bytes for the cache, with 8 zero bytes past the end so that no
 * reader of a damaged-but-checked structure can run off the allocation.
 */
static cpu_list *
cache_entry_new(uint32_t kind, const void *bytes, uint64_t len)
{
	cpu_list   *l = calloc(1, sizeof(*l));

	if (l == NULL || (l->bytes = malloc(len + 8)) == NULL)
	{
		free(l);
		return NULL;
	}
	memcpy(l->bytes, bytes, len);
	memset(l->bytes + len, 0, 8);
	l->kind = kind;
	l->len = len;
	return l;
}

/* put a checked entry under key, replacing the key's entry and evicting the oldest for room */
static int
cache_insert(gpuidx_engine *e, uint64_t key, cpu_list *l, gpuidx_engine_error *error)
{
	lru_entry  *old;

	if ((old = lru_find(&e->cache, key)) != NULL)
	{
		lru_remove(&e->cache, old, 0);
		cpu_list_free((cpu_list *) old->data);
	}
	while (e->cache.stats.bytes_used + l->len > e->cache.stats.bytes_capacity)
	{
		lru_entry  *victim = lru_oldest(&e->cache);

		lru_remove(&e->cache, victim, 1);
		cpu_list_free((cpu_list *) victim->data);
	}
	l->entry.key = key;
	l->entry.bytes = l->len;
	l->entry.data = l;
	if (!lru_insert(&e->cache, &l->entry))
	{
		cpu_list_free(l);
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory caching key %llu",
			(unsigned long long) key);
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	return GPUIDX_ENGINE_OK;
}

static int
cpu_cache_put(gpuidx_engine *e, uint64_t key, const void *bytes, uint64_t len,
			  gpuidx_engine_error *error)
{
	cpu_list   *l;
	pl_status	st;

	if (len > e->cache.stats.bytes_capacity)
	{
		ERR(error, GPUIDX_ENGINE_ERR_TOO_LARGE, "list of %llu bytes is larger than the cache",
			(unsigned long long) len);
		return GPUIDX_ENGINE_ERR_TOO_LARGE;
	}
	if ((l = cache_entry_new(CPU_KIND_LIST, bytes, len)) == NULL)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory caching a list");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	st = pl_open(&l->view, l->bytes, len, PL_OPEN_VERIFY_CHECKSUM);
	if (st != PL_OK)
	{
		cpu_list_free(l);
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "list for key %llu: %s", (unsigned long long) key,
			pl_status_message(st));
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	return cache_insert(e, key, l, error);
}

/* what is wrong with ranking data of a kind, or NULL */
static const char *
rank_data_check(uint32_t kind, const void *bytes, uint64_t len)
{
	if (kind == GPUIDX_DATA_FREQS)
		return gpx_freq_record_check(bytes, len);
	return gpx_doclens_check(bytes, len);
}

static int
cpu_cache_put_data(gpuidx_engine *e, uint64_t key, uint32_t kind, const void *bytes,
				   uint64_t len, gpuidx_engine_error *error)
{
	cpu_list   *l;
	const char *problem;

	if (kind != GPUIDX_DATA_FREQS && kind != GPUIDX_DATA_DOCLENS)
	{
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "unknown kind of data %u for key %llu", kind,
			(unsigned long long) key);
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	if (bytes == NULL)
	{
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "no bytes for key %llu", (unsigned long long) key);
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	if (len > e->cache.stats.bytes_capacity)
	{
		ERR(error, GPUIDX_ENGINE_ERR_TOO_LARGE, "data of %llu bytes is larger than the cache",
			(unsigned long long) len);
		return GPUIDX_ENGINE_ERR_TOO_LARGE;
	}
	if ((l = cache_entry_new(kind, bytes, len)) == NULL)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory caching ranking data");
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	/* the copy is checked: what was checked is what queries read */
	if ((problem = rank_data_check(kind, l->bytes, len)) != NULL)
	{
		cpu_list_free(l);
		ERR(error, GPUIDX_ENGINE_ERR_INVALID, "%s for key %llu: %s",
			kind == GPUIDX_DATA_FREQS ? "frequency record" : "document lengths",
			(unsigned long long) key, problem);
		return GPUIDX_ENGINE_ERR_INVALID;
	}
	return cache_insert(e, key, l, error);
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

/*
 * A thread's memory for ranked queries, kept across the queries it takes
 * from one batch: a score and a term count per doc of the largest segment
 * seen (zero between queries: only the docs a query touched are cleared),
 * the touched docs, and the top-k heap.
 */
typedef struct rank_scratch
{
	double	   *acc;
	uint8_t    *count;
	uint32_t   *touched;
	uint32_t	ndocs;			/* room of acc, count and touched */
	double	   *top_score;
	uint64_t   *top_key;
	uint32_t	top_room;
} rank_scratch;

/* one term of a ranked query as resolve_ranked found it */
typedef struct rank_source
{
	pl_view		view;			/* a cached list's view */
	const uint8_t *list_bytes;	/* or inline bytes, opened by the query's thread */
	uint64_t	list_len;
	const uint8_t *freqs;		/* its frequency record (NULL: tfs inline) */
	uint64_t	freqs_len;
	int			freqs_inline;	/* not checked yet */
} rank_source;

/* a ranked query's segment data as resolve_ranked found it */
typedef struct rank_segment
{
	const uint8_t *doclens;
	uint64_t	doclens_len;
	int			doclens_inline; /* not checked yet */
} rank_segment;

/* one batch's work, shared by its threads */
typedef struct batch_work
{
	gpuidx_engine *engine;
	uint32_t	nqueries;
	/* runs query qi (plain or ranked) on the calling thread */
	void		(*run_one) (struct batch_work *w, uint32_t qi, rank_scratch *scratch);
	gpuidx_query *queries;
	pl_view    *views;			/* every query's lists, in query order */
	uint32_t   *first_view;		/* index into views (or sources) per query */
	gpuidx_rank_query *ranked;
	rank_source *sources;		/* every ranked query's terms, in query order */
	rank_segment *segments;		/* per ranked query */
	uint32_t	next;			/* next query to take (atomic) */
	uint32_t	merge_rounds;	/* atomic */
	uint32_t	search_rounds;	/* atomic */
} batch_work;

static cpu_method
round_method(const gpuidx_engine *e, uint64_t short_len, uint64_t long_len)
{
	return long_len >= short_len * e->skip_ratio ? CPU_METHOD_SKIP : CPU_METHOD_MERGE;
}

/* the most ids a query's result holds: what out must hold to compute it in place */
static uint64_t
query_bound(const gpuidx_query *q, const pl_view *views)
{
	uint64_t	counts[GPUIDX_ENGINE_MAX_TERMS];

	for (uint32_t t = 0; t < q->nterms; t++)
		counts[t] = views[t].count;
	return gpuidx_query_bound(q, counts);
}

/* the bound as a result length (an OR's sum of counts can pass UINT32_MAX) */
static uint32_t
capped_bound(const gpuidx_query *q, const pl_view *views)
{
	uint64_t	bound = query_bound(q, views);

	return bound < UINT32_MAX ? (uint32_t) bound : UINT32_MAX;
}

/* lists order[0..k) of views[0..k), by count: ascending, or descending */
static void
order_by_count(const pl_view *views, uint32_t k, bool descending, const pl_view **order)
{
	for (uint32_t i = 0; i < k; i++)
	{
		uint32_t	j = i;

		while (j > 0 && (descending ? order[j - 1]->count < views[i].count
						 : order[j - 1]->count > views[i].count))
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = &views[i];
	}
}

/*
 * AND: SvS, the initial set (or the shortest list) against each list not
 * excluded, shortest first, then each excluded list subtracted, longest
 * first (the most candidates gone soonest); each round searches or merges
 * by the length ratio.  In place in out (room: the bound).
 */
static uint32_t
and_query(batch_work *w, const gpuidx_query *q, const pl_view *views, uint32_t *out,
		  cpu_stats *stats)
{
	const pl_view *order[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	k = q->nterms - q->nexclude;
	uint32_t	n;
	uint32_t	r = 0;

	order_by_count(views, k, false, order);
	if (q->initial != NULL && k == 0)
	{
		memmove(out, q->initial, (size_t) q->ninitial * sizeof(uint32_t));
		n = q->ninitial;
	}
	else if (q->initial != NULL)
	{
		/* out may be smaller than the initial set: never copy it whole */
		n = cpu_intersect_array_list(q->initial, q->ninitial, order[0], out,
									 round_method(w->engine, q->ninitial, order[0]->count), 0, stats);
		r = 1;
	}
	else if (k == 1)
	{
		n = pl_decode(order[0], out) == PL_OK ? order[0]->count : CPU_CORRUPT;
		r = 1;
	}
	else
	{
		n = cpu_intersect_lists(order[0], order[1], out,
								round_method(w->engine, order[0]->count, order[1]->count), 0, stats);
		r = 2;
	}
	for (; r < k && n > 0 && n != CPU_CORRUPT; r++)
		n = cpu_intersect_array_list(out, n, order[r], out,
									 round_method(w->engine, n, order[r]->count), 0, stats);

	order_by_count(views + k, q->nexclude, true, order);
	for (r = 0; r < q->nexclude && n > 0 && n != CPU_CORRUPT; r++)
	{
		cpu_method	method = round_method(w->engine, n, order[r]->count);

		if (method == CPU_METHOD_SKIP)
			stats->rounds_skip++;
		else
			stats->rounds_merge++;
		n = cpu_difference_array_list(out, n, order[r], out, method, stats);
	}
	return n;
}

/*
 * OR: the lists merged into the result one by one, shortest first, so that
 * the long ones are merged the fewest times; out (room: the sum of the
 * counts) and tmp (the same) swap at each round.  Returns the union's
 * length, and in *result which of out and tmp holds it.
 */
static uint32_t
or_query(const gpuidx_query *q, const pl_view *views, uint32_t *out, uint32_t *tmp,
		 uint32_t **result, cpu_stats *stats)
{
	const pl_view *order[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	n;

	order_by_count(views, q->nterms, false, order);
	n = pl_decode(order[0], out) == PL_OK ? order[0]->count : CPU_CORRUPT;
	for (uint32_t r = 1; r < q->nterms && n != CPU_CORRUPT; r++)
	{
		uint32_t   *swap = out;

		n = cpu_union_array_list(out, n, order[r], tmp);
		out = tmp;
		tmp = swap;
		stats->rounds_merge++;
	}
	*result = out;
	return n;
}

/*
 * One query into q->out, or into scratch memory when the query asks for
 * fewer ids than its rounds need room for (a count, the first n), or is a
 * union (two buffers).
 */
static void
run_query(batch_work *w, uint32_t qi)
{
	gpuidx_query *q = &w->queries[qi];
	pl_view    *views = &w->views[w->first_view[qi]];
	size_t		room = (size_t) query_bound(q, views) + 1;
	uint32_t   *out = q->out;
	uint32_t   *scratch = NULL;
	uint32_t	n;
	cpu_stats	stats;

	memset(&stats, 0, sizeof(stats));
	if (q->op == GPUIDX_OP_OR || room > (size_t) q->out_capacity + 1 || out == NULL)
	{
		scratch = malloc((q->op == GPUIDX_OP_OR ? 2 : 1) * room * sizeof(uint32_t));
		if (scratch == NULL)
		{
			q->status = GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
			return;
		}
		out = scratch;
	}
	if (q->op == GPUIDX_OP_OR)
		n = or_query(q, views, scratch, scratch + room, &out, &stats);
	else
		n = and_query(w, q, views, out, &stats);
	/* a list whose postings decode out of order is invalid input */
	if (n == CPU_CORRUPT)
	{
		q->total = q->out_count = 0;
		q->status = GPUIDX_ENGINE_ERR_INVALID;
	}
	else if (gpuidx_result_wanted(q->result, n) > q->out_capacity)
	{
		/* a union longer than the room its caller gave it */
		q->total = q->out_count = 0;
		q->status = GPUIDX_ENGINE_ERR_INVALID;
	}
	else
	{
		q->total = n;
		q->out_count = gpuidx_result_wanted(q->result, n);
		if (out != q->out && q->out_count > 0)
			memcpy(q->out, out, (size_t) q->out_count * sizeof(uint32_t));
		q->status = GPUIDX_ENGINE_OK;
	}
	free(scratch);
	__atomic_fetch_add(&w->merge_rounds, stats.rounds_merge, __ATOMIC_RELAXED);
	__atomic_fetch_add(&w->search_rounds, stats.rounds_skip, __ATOMIC_RELAXED);
}

static void
run_listed_query(batch_work *w, uint32_t qi, rank_scratch *scratch)
{
	(void) scratch;
	if (w->queries[qi].status == GPUIDX_ENGINE_OK)
		run_query(w, qi);
}

static void
rank_scratch_free(rank_scratch *rs)
{
	free(rs->acc);
	free(rs->count);
	free(rs->touched);
	free(rs->top_score);
	free(rs->top_key);
	memset(rs, 0, sizeof(*rs));
}

static void *
batch_thread(void *arg)
{
	batch_work *w = arg;
	uint32_t	qi;
	rank_scratch scratch;

	memset(&scratch, 0, sizeof(scratch));
	while ((qi = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->nqueries)
		w->run_one(w, qi, &scratch);
	rank_scratch_free(&scratch);
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
	if (!gpuidx_query_shape_ok(q))
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
			if (((cpu_list *) entry->data)->kind != CPU_KIND_LIST)
			{
				q->status = GPUIDX_ENGINE_ERR_INVALID;
				return;
			}
			views[t] = ((cpu_list *) entry->data)->view;
			if (stats)
				stats->list_bytes += entry->bytes;
		}
	}
	/* a union's room is checked against the union itself (run_query) */
	if ((q->op != GPUIDX_OP_OR && gpuidx_result_wanted(q->result, capped_bound(q, views)) > q->out_capacity) ||
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
	w.run_one = run_listed_query;
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

/* ------------------------------------------------------------------------
 * Ranked queries: every matching doc scored (a dense accumulator per
 * segment), then the best k by a heap.  The CPU's answer to the bit, which
 * makes it the reference the GPU's ranking is checked against.
 */

/* a cached entry of the kind asked, or a query status saying why not */
static int
lookup_kind(gpuidx_engine *e, uint64_t key, uint32_t kind, cpu_list **out)
{
	lru_entry  *entry = lru_use(&e->cache, key);

	if (entry == NULL)
		return GPUIDX_ENGINE_ERR_NOT_CACHED;
	*out = (cpu_list *) entry->data;
	return (*out)->kind == kind ? GPUIDX_ENGINE_OK : GPUIDX_ENGINE_ERR_INVALID;
}

/*
 * Check a ranked query's arguments and find its cached data (the cache is
 * touched here, on the caller's thread); inline data is checked later, by
 * the thread that runs the query.  Sets the query's status.
 */
static void
resolve_ranked(gpuidx_engine *e, gpuidx_rank_query *q, rank_source *src, rank_segment *seg,
			   gpuidx_batch_stats *stats)
{
	int			st;
	cpu_list   *l = NULL;

	q->status = GPUIDX_ENGINE_OK;
	q->out_count = 0;
	q->matched = 0;
	memset(seg, 0, sizeof(*seg));
	/* written so that NaN fails every test */
	if (q->nterms == 0 || q->nterms > GPUIDX_ENGINE_MAX_TERMS || q->terms == NULL ||
		q->k == 0 || q->k > GPUIDX_RANK_MAX_K || q->k > q->out_capacity ||
		q->out_docs == NULL || q->out_scores == NULL ||
		!(q->k1 > 0.0 && isfinite(q->k1)) || !(q->b >= 0.0 && q->b <= 1.0) ||
		!(q->avgdl >= 0.0 && isfinite(q->avgdl)))
	{
		q->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const gpuidx_rank_term *term = &q->terms[t];

		memset(&src[t], 0, sizeof(src[t]));
		if (!(term->idf >= 0.0 && isfinite(term->idf)))
		{
			q->status = GPUIDX_ENGINE_ERR_INVALID;
			return;
		}
		if (term->list.bytes != NULL)
		{
			src[t].list_bytes = term->list.bytes;
			src[t].list_len = term->list.len;
		}
		else
		{
			if ((st = lookup_kind(e, term->list.key, CPU_KIND_LIST, &l)) != GPUIDX_ENGINE_OK)
			{
				q->status = st;
				return;
			}
			src[t].view = l->view;
		}
		if (stats)
			stats->list_bytes += term->list.bytes != NULL ? term->list.len : l->len;
		if (term->tfs != NULL)
			continue;
		if (term->freqs.bytes != NULL)
		{
			src[t].freqs = term->freqs.bytes;
			src[t].freqs_len = term->freqs.len;
			src[t].freqs_inline = 1;
		}
		else
		{
			if ((st = lookup_kind(e, term->freqs.key, GPUIDX_DATA_FREQS, &l)) != GPUIDX_ENGINE_OK)
			{
				q->status = st;
				return;
			}
			src[t].freqs = l->bytes;
			src[t].freqs_len = l->len;
		}
		if (stats)
			stats->list_bytes += src[t].freqs_len;
	}
	if (q->doclens.bytes != NULL)
	{
		seg->doclens = q->doclens.bytes;
		seg->doclens_len = q->doclens.len;
		seg->doclens_inline = 1;
	}
	else
	{
		if ((st = lookup_kind(e, q->doclens.key, GPUIDX_DATA_DOCLENS, &l)) != GPUIDX_ENGINE_OK)
		{
			q->status = st;
			return;
		}
		seg->doclens = l->bytes;
		seg->doclens_len = l->len;
	}
}

/* room for ndocs docs and a heap of k in a thread's scratch; false when out of memory */
static int
rank_scratch_reserve(rank_scratch *rs, uint32_t ndocs, uint32_t k)
{
	if (ndocs > rs->ndocs)
	{
		free(rs->acc);
		free(rs->count);
		free(rs->touched);
		rs->acc = calloc(ndocs, sizeof(double));
		rs->count = calloc(ndocs, sizeof(uint8_t));
		rs->touched = malloc((size_t) ndocs * sizeof(uint32_t));
		rs->ndocs = ndocs;
		if (rs->acc == NULL || rs->count == NULL || rs->touched == NULL)
		{
			free(rs->acc);
			free(rs->count);
			free(rs->touched);
			rs->acc = NULL;
			rs->count = NULL;
			rs->touched = NULL;
			rs->ndocs = 0;
			return 0;
		}
	}
	if (k > rs->top_room)
	{
		free(rs->top_score);
		free(rs->top_key);
		rs->top_score = malloc((size_t) k * sizeof(double));
		rs->top_key = malloc((size_t) k * sizeof(uint64_t));
		rs->top_room = k;
		if (rs->top_score == NULL || rs->top_key == NULL)
		{
			free(rs->top_score);
			free(rs->top_key);
			rs->top_score = NULL;
			rs->top_key = NULL;
			rs->top_room = 0;
			return 0;
		}
	}
	return 1;
}

/*
 * Add one term's contributions to its docs' scores: in the query's term
 * order, from 0.0, the very operations of gpx_rank_score (wand.c), so each
 * doc's sum has its bits.  *ntouched grows by the docs met first here.
 * INVALID on postings out of order or not below ndocs, or a tf of 0.
 */
static int
rank_add_term(const gpuidx_rank_query *q, uint32_t t, const pl_view *view, const uint8_t *freqs,
			  const uint8_t *doclens, uint32_t ndocs, rank_scratch *rs, uint32_t *ntouched)
{
	const gpuidx_rank_term *term = &q->terms[t];
	uint32_t	docs[GPUIDX_LRC_SEGMENT];
	uint8_t		block_tfs[GPX_RANK_BLOCK];
	uint32_t	tf_block = UINT32_MAX;
	uint32_t	pos = 0;
	int64_t		prev = -1;

	for (uint32_t blk = 0; blk < view->nblocks; blk++)
	{
		int			n = pl_decode_block(view, blk, docs);

		if (n < 0 || (uint64_t) pos + (uint32_t) n > view->count)
			return GPUIDX_ENGINE_ERR_INVALID;
		for (int j = 0; j < n; j++)
		{
			uint32_t	doc = docs[j];
			uint32_t	i = pos + (uint32_t) j;
			uint32_t	tf;
			uint32_t	len;

			if ((int64_t) doc <= prev || doc >= ndocs)
				return GPUIDX_ENGINE_ERR_INVALID;
			prev = doc;
			if (term->tfs != NULL)
				tf = term->tfs[i];
			else
			{
				if (i / GPX_RANK_BLOCK != tf_block)
				{
					tf_block = i / GPX_RANK_BLOCK;
					gpx_freq_block_tfs(freqs, view->count, tf_block, block_tfs);
				}
				tf = block_tfs[i % GPX_RANK_BLOCK];
			}
			if (tf == 0)
				return GPUIDX_ENGINE_ERR_INVALID;
			len = gpx_doclens_get(doclens, doc);
			if (len == 0)
				continue;		/* a dead doc (include/gpuidx_engine.h) */
			if (rs->count[doc]++ == 0)
				rs->touched[(*ntouched)++] = doc;
			rs->acc[doc] += gpx_bm25_term(term->idf, q->k1, tf, gpx_bm25_norm(q->k1, q->b, q->avgdl, len));
		}
		pos += (uint32_t) n;
	}
	return pos == view->count ? GPUIDX_ENGINE_OK : GPUIDX_ENGINE_ERR_INVALID;
}

/* check a ranked query's inline data, score its docs and keep the best k */
static void
run_ranked_query(batch_work *w, uint32_t qi, rank_scratch *rs)
{
	gpuidx_rank_query *q = &w->ranked[qi];
	const rank_source *src = &w->sources[w->first_view[qi]];
	const rank_segment *seg = &w->segments[qi];
	pl_view		views[GPUIDX_ENGINE_MAX_TERMS];
	gpuidx_doclens_header dh;
	uint32_t	ntouched = 0;
	uint32_t	matched = 0;
	int			st = GPUIDX_ENGINE_OK;
	gpx_topk	top;

	if (q->status != GPUIDX_ENGINE_OK)
		return;
	if (seg->doclens_inline && gpx_doclens_check(seg->doclens, seg->doclens_len) != NULL)
	{
		q->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}
	memcpy(&dh, seg->doclens, sizeof(dh));
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		if (src[t].list_bytes == NULL)
			views[t] = src[t].view;
		else if (pl_open(&views[t], src[t].list_bytes, src[t].list_len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK)
			st = GPUIDX_ENGINE_ERR_INVALID;
		if (st == GPUIDX_ENGINE_OK && views[t].count > 0 && views[t].last >= dh.ndocs)
			st = GPUIDX_ENGINE_ERR_INVALID;
		if (st == GPUIDX_ENGINE_OK && q->terms[t].tfs == NULL &&
			((src[t].freqs_inline && gpx_freq_record_check(src[t].freqs, src[t].freqs_len) != NULL) ||
			 gpx_freq_record_df(src[t].freqs) != views[t].count))
			st = GPUIDX_ENGINE_ERR_INVALID;
		if (st != GPUIDX_ENGINE_OK)
		{
			q->status = st;
			return;
		}
	}
	if (!rank_scratch_reserve(rs, dh.ndocs, q->k))
	{
		q->status = GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
		return;
	}
	for (uint32_t t = 0; t < q->nterms && st == GPUIDX_ENGINE_OK; t++)
		st = rank_add_term(q, t, &views[t], src[t].freqs, seg->doclens, dh.ndocs, rs, &ntouched);

	gpx_topk_init(&top, q->k, rs->top_score, rs->top_key);
	for (uint32_t i = 0; i < ntouched; i++)
	{
		uint32_t	doc = rs->touched[i];

		if (st == GPUIDX_ENGINE_OK && (!q->every_term || rs->count[doc] == q->nterms))
		{
			matched++;
			gpx_topk_offer(&top, rs->acc[doc], doc);
		}
		/* the scratch is all zero again for the thread's next query */
		rs->acc[doc] = 0.0;
		rs->count[doc] = 0;
	}
	q->status = st;
	if (st != GPUIDX_ENGINE_OK)
		return;
	gpx_topk_sort(&top);
	for (uint32_t i = 0; i < top.n; i++)
	{
		q->out_docs[i] = (uint32_t) top.key[i];
		q->out_scores[i] = top.score[i];
	}
	q->out_count = top.n;
	q->matched = matched;
}

static int
cpu_run_ranked(gpuidx_engine *e, gpuidx_rank_query *queries, uint32_t nqueries,
			   gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	batch_work	w;
	uint64_t	nsources = 0;
	double		start = now_seconds();

	if (stats)
		memset(stats, 0, sizeof(*stats));
	memset(&w, 0, sizeof(w));
	for (uint32_t i = 0; i < nqueries; i++)
		if (queries[i].nterms <= GPUIDX_ENGINE_MAX_TERMS)
			nsources += queries[i].nterms;
	w.engine = e;
	w.run_one = run_ranked_query;
	w.ranked = queries;
	w.nqueries = nqueries;
	w.sources = malloc((nsources + 1) * sizeof(rank_source));
	w.segments = malloc(((size_t) nqueries + 1) * sizeof(rank_segment));
	w.first_view = malloc(((size_t) nqueries + 1) * sizeof(uint32_t));
	if (w.sources == NULL || w.segments == NULL || w.first_view == NULL)
	{
		free(w.sources);
		free(w.segments);
		free(w.first_view);
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory for a batch of %u ranked queries",
			nqueries);
		return GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	nsources = 0;
	for (uint32_t i = 0; i < nqueries; i++)
	{
		w.first_view[i] = (uint32_t) nsources;
		resolve_ranked(e, &queries[i], &w.sources[nsources], &w.segments[i], stats);
		if (queries[i].nterms <= GPUIDX_ENGINE_MAX_TERMS)
			nsources += queries[i].nterms;
	}

	pool_run(&e->pool, &w);
	if (stats)
	{
		stats->queries = nqueries;
		stats->seconds = now_seconds() - start;
		stats->host_seconds = stats->seconds;
	}
	free(w.sources);
	free(w.segments);
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
	.cache_put_data = cpu_cache_put_data,
	.run_batch = cpu_run_batch,
	.run_ranked = cpu_run_ranked,
};

const gpuidx_engine_api *
cpu_engine_api(void)
{
	return &cpu_api;
}
