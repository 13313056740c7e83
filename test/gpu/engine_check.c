/*
 * engine_check.c
 *	  Runs an engine (the CUDA engine, or the CPU engine) against a reference
 *	  on randomized lists of every shape and on real corpus packs, and fails
 *	  on any difference, bit for bit: statuses, counts and every id.
 *
 *	  engine_check [--engine cpu|PATH] [--reference cpu|plain] [--queries N]
 *	               [--max-len N] [--threads N] [--seed N] [--pack FILE]...
 *	               [--batch-bytes N] [--skip-ratio N] [--skip-if-no-device]
 *
 * The reference "plain" decodes the lists and intersects sorted arrays; "cpu"
 * is the CPU engine on every core (itself checked against plain arrays by
 * test/unit/test_engine.c), fast enough for tens of millions of queries.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "../unit/unit.h"
#include "../reference.h"
#include "codec/codec.h"
#include "cpu/cpu.h"
#include "engine/engine.h"
#include "rank/bm25.h"
#include "store/rankdata.h"
#include "rank/wand.h"

#include <math.h>
#include <stdbool.h>
#include <unistd.h>

#define POOL_LISTS 600
#define MAX_BATCH 4096

typedef struct list_pool
{
	uint32_t	n;
	uint64_t	epoch;
	uint8_t    *bytes[POOL_LISTS];
	uint64_t	lens[POOL_LISTS];
	uint32_t	counts[POOL_LISTS];
	uint32_t   *values[POOL_LISTS];
	uint32_t	by_count[POOL_LISTS];	/* indexes sorted by count */
} list_pool;

typedef struct check_state
{
	engine_handle test;
	engine_handle ref;
	bool		plain;
	long		queries;
	long		batches;
	long		differences;
	long		deferred;		/* TOO_LARGE: left to the caller's CPU, as the ABI says */
	long		by_status[16];
	double		test_seconds;
	double		ref_seconds;
	gpuidx_batch_stats totals;
} check_state;

static uint32_t
log_uniform(uint32_t max)
{
	double		x = exp((double) (unit_rand64() % 1000000) / 1000000.0 * log((double) max + 1));

	return (uint32_t) x - 1 <= max ? (uint32_t) x - 1 : max;
}

/* one random list: many shapes, sometimes drawn from another list */
static uint32_t
gen_list(uint32_t *v, uint32_t len, const list_pool *pool)
{
	int			shape = (int) unit_rand_below(8);
	uint32_t	n;

	switch (shape)
	{
		case 0:
			return unit_gen_gaps(v, len, unit_rand_below(1000), 1);
		case 1:
			return unit_gen_gaps(v, len, 0, 3);
		case 2:
			return unit_gen_gaps(v, len, unit_rand_below(1 << 20), 1 + unit_rand_below(200));
		case 3:
			n = unit_gen_uniform(v, len, UINT64_C(1) << 32);
			if (n >= 2)
			{
				v[0] = 0;
				v[n - 1] = UINT32_MAX;
			}
			return n;
		case 4:
			n = unit_gen_gaps(v, len, 5, 1);
			for (uint32_t i = 0; i < n; i++)
				v[i] = 5 + i * 11;
			return n;
		case 5:
			return unit_gen_uniform(v, len, (uint64_t) len * (1 + unit_rand_below(64)) + 1);
		default:
			/* a subset of a pool list plus noise: intersections that are not empty */
			if (pool->n > 0)
			{
				uint32_t	src = unit_rand_below(pool->n);
				uint32_t	k = 0;
				uint32_t	keep = 1 + unit_rand_below(8);

				for (uint32_t i = 0; i < pool->counts[src] && k < len; i++)
					if (unit_rand_below(keep) == 0)
						v[k++] = pool->values[src][i];
				for (uint32_t i = 0; k > 0 && i < k / 4; i++)
					v[k + i] = (uint32_t) (unit_rand64() % ((uint64_t) pool->values[src][pool->counts[src] - 1] + 1));
				k += k / 4;
				qsort(v, k, sizeof(uint32_t), unit_cmp_u32);
				n = 0;
				for (uint32_t i = 0; i < k; i++)
					if (n == 0 || v[i] != v[n - 1])
						v[n++] = v[i];
				return n;
			}
			return unit_gen_gaps(v, len, 0, 10);
	}
}

static int
cmp_by_count(const void *a, const void *b, void *arg)
{
	const list_pool *pool = arg;
	uint32_t	x = pool->counts[*(const uint32_t *) a];
	uint32_t	y = pool->counts[*(const uint32_t *) b];

	return x < y ? -1 : x > y;
}

static void
put_everywhere(check_state *s, uint64_t key, const uint8_t *bytes, uint64_t len)
{
	gpuidx_engine_error err;
	int			st = s->test.api->cache_put(s->test.engine, key, bytes, len, &err);

	if (st != GPUIDX_ENGINE_OK)
		harness_fail("cache_put on the engine under test: %s: %s", engine_status_name(st), err.message);
	if (!s->plain)
	{
		st = s->ref.api->cache_put(s->ref.engine, key, bytes, len, &err);
		if (st != GPUIDX_ENGINE_OK)
			harness_fail("cache_put on the reference: %s: %s", engine_status_name(st), err.message);
	}
}

static void
pool_build(check_state *s, list_pool *pool, uint32_t max_len)
{
	uint32_t   *tmp = harness_alloc(((size_t) max_len + 1) * 2 * sizeof(uint32_t));

	pool->epoch++;
	for (uint32_t i = 0; i < pool->n; i++)
	{
		s->test.api->cache_remove(s->test.engine, (pool->epoch - 1) << 32 | i);
		if (!s->plain)
			s->ref.api->cache_remove(s->ref.engine, (pool->epoch - 1) << 32 | i);
		free(pool->bytes[i]);
		free(pool->values[i]);
	}
	pool->n = 0;
	for (uint32_t i = 0; i < POOL_LISTS; i++)
	{
		uint32_t	len = i % 50 == 0 ? max_len : log_uniform(max_len);
		uint32_t	n = gen_list(tmp, len, pool);
		int			codec = unit_rand_below(4) == 0 ? pl_choose_codec(tmp, n) : (int) unit_rand_below(GPUIDX_NUM_CODECS);
		size_t		size = pl_encoded_size(codec, tmp, n);

		pool->bytes[i] = harness_alloc(size);
		pool->lens[i] = pl_encode(codec, tmp, n, pool->bytes[i]);
		pool->values[i] = harness_alloc(((size_t) n + 1) * sizeof(uint32_t));
		memcpy(pool->values[i], tmp, (size_t) n * sizeof(uint32_t));
		pool->counts[i] = n;
		pool->by_count[i] = i;
		pool->n = i + 1;
		put_everywhere(s, pool->epoch << 32 | i, pool->bytes[i], pool->lens[i]);
	}
	qsort_r(pool->by_count, pool->n, sizeof(uint32_t), cmp_by_count, pool);
	free(tmp);
}

/* a pool list whose length is near target */
static uint32_t
pool_near(const list_pool *pool, uint64_t target)
{
	uint32_t	lo = 0,
				hi = pool->n;

	while (lo < hi)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (pool->counts[pool->by_count[mid]] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= pool->n)
		lo = pool->n - 1;
	return pool->by_count[lo];
}

/*
 * The plain reference, on sorted arrays: an AND's lists intersected
 * shortest first, then the excluded ones subtracted; an OR's merged in the
 * order given.
 */
static void
plain_answer(gpuidx_query *q, const uint32_t *const *values, const uint32_t *counts)
{
	uint32_t	order[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	npos = q->nterms - q->nexclude;
	uint32_t	n;
	uint32_t	t0 = 0;

	q->status = GPUIDX_ENGINE_OK;
	if (q->op == GPUIDX_OP_OR)
	{
		uint32_t   *tmp = harness_alloc(((size_t) q->out_capacity + 1) * sizeof(uint32_t));

		n = 0;
		for (uint32_t t = 0; t < q->nterms; t++)
		{
			n = ref_union(q->out, n, values[t], counts[t], tmp);
			memcpy(q->out, tmp, (size_t) n * sizeof(uint32_t));
		}
		free(tmp);
		q->out_count = q->total = n;
		return;
	}
	for (uint32_t i = 0; i < npos; i++)
	{
		uint32_t	j = i;

		while (j > 0 && counts[order[j - 1]] > counts[i])
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	if (q->initial != NULL && npos == 0)
	{
		memcpy(q->out, q->initial, (size_t) q->ninitial * sizeof(uint32_t));
		n = q->ninitial;
	}
	else if (q->initial != NULL)
	{
		n = cpu_merge_intersect(q->initial, q->ninitial, values[order[0]], counts[order[0]],
								q->out, UINT32_MAX);
		t0 = 1;
	}
	else
	{
		memcpy(q->out, values[order[0]], (size_t) counts[order[0]] * sizeof(uint32_t));
		n = counts[order[0]];
		t0 = 1;
	}
	for (uint32_t t = t0; t < npos; t++)
		n = cpu_merge_intersect(q->out, n, values[order[t]], counts[order[t]], q->out, UINT32_MAX);
	for (uint32_t t = npos; t < q->nterms; t++)
		n = ref_difference(q->out, n, values[t], counts[t], q->out);
	q->out_count = n;
	q->total = n;
}

/* the room a query's result needs (gpuidx_query_bound), or UINT32_MAX past it */
static uint32_t
result_bound(const gpuidx_query *q, const uint32_t *counts)
{
	uint64_t	c[GPUIDX_ENGINE_MAX_TERMS];
	uint64_t	bound;

	for (uint32_t t = 0; t < q->nterms; t++)
		c[t] = counts[t];
	bound = gpuidx_query_bound(q, c);
	return bound < UINT32_MAX ? (uint32_t) bound : UINT32_MAX;
}

/* a random set operation for a query of k terms: AND (most), AND with exclusions, OR */
static void
pick_random_op(gpuidx_query *q, uint32_t k, bool initial)
{
	uint32_t	shape = unit_rand_below(10);

	q->op = GPUIDX_OP_AND;
	q->nexclude = 0;
	if (shape < 2 && !initial)
		q->op = GPUIDX_OP_OR;
	else if (shape < 4 && (k >= 2 || (initial && k >= 1)))
		q->nexclude = 1 + unit_rand_below(initial ? k : k - 1 < 3 ? k - 1 : 3);
}

typedef struct batch
{
	uint32_t	n;
	gpuidx_query test[MAX_BATCH];
	gpuidx_query ref[MAX_BATCH];
	gpuidx_term_ref terms[MAX_BATCH][8];
	const uint32_t *values[MAX_BATCH][8];	/* for the plain reference */
	uint32_t	counts[MAX_BATCH][8];
	uint32_t   *out_test;
	uint32_t   *out_ref;
	uint64_t	out_used;
	uint64_t	out_cap;
} batch;

static void
batch_reset(batch *b)
{
	b->n = 0;
	b->out_used = 0;
}

/* room for one query's output in both arenas; false when the arena is full */
static bool
batch_out(batch *b, uint32_t room, uint32_t **t, uint32_t **r)
{
	if (b->out_used + room > b->out_cap)
		return false;
	*t = b->out_test + b->out_used;
	*r = b->out_ref + b->out_used;
	b->out_used += room;
	return true;
}

static void
run_and_compare(check_state *s, batch *b, const char *what)
{
	gpuidx_engine_error err;
	gpuidx_batch_stats st;
	double		t0 = harness_now();
	int			rc = s->test.api->run_batch(s->test.engine, b->test, b->n, &st, &err);

	s->test_seconds += harness_now() - t0;
	if (rc != GPUIDX_ENGINE_OK)
		harness_fail("%s: run_batch on the engine under test: %s (%s:%d): %s", what,
					 engine_status_name(rc), err.file, err.line, err.message);
	s->totals.launches += st.launches;
	s->totals.rounds += st.rounds;
	s->totals.merge_rounds += st.merge_rounds;
	s->totals.search_rounds += st.search_rounds;
	s->totals.list_bytes += st.list_bytes;
	s->totals.bytes_uploaded += st.bytes_uploaded;
	/*
	 * The engine's split of its time: three parts, each measured between
	 * clock reads that end one phase and start the next, so they add up to
	 * the whole; a phase left unmeasured (or counted twice) shows.  The CPU
	 * engine runs everything on the host.
	 */
	CHECK(st.host_seconds >= 0 && st.device_seconds >= 0 && st.return_seconds >= 0 &&
		  st.seconds >= 0 && st.seconds <= harness_now() - t0 + 1e-6 &&
		  fabs(st.host_seconds + st.device_seconds + st.return_seconds - st.seconds) <= 1e-9,
		  "%s: time split %g + %g + %g of %g s", what, st.host_seconds, st.device_seconds,
		  st.return_seconds, st.seconds);
	if (strcmp(s->test.info.kind, "cpu") == 0)
		CHECK(st.device_seconds == 0 && st.return_seconds == 0 && st.host_seconds == st.seconds,
			  "%s: the CPU engine reports device or return time", what);
	if (strcmp(s->test.info.kind, "cpu") != 0)
		for (uint32_t i = 0; i < b->n; i++)
			if (b->test[i].status == GPUIDX_ENGINE_OK)
			{
				CHECK(st.device_seconds > 0, "%s: the GPU engine ran queries but reports no device time", what);
				break;
			}
	t0 = harness_now();
	if (s->plain)
		for (uint32_t i = 0; i < b->n; i++)
			plain_answer(&b->ref[i], b->values[i], b->counts[i]);
	else if ((rc = s->ref.api->run_batch(s->ref.engine, b->ref, b->n, NULL, &err)) != GPUIDX_ENGINE_OK)
		harness_fail("%s: run_batch on the reference: %s: %s", what, engine_status_name(rc), err.message);
	s->ref_seconds += harness_now() - t0;
	for (uint32_t i = 0; i < b->n; i++)
	{
		const gpuidx_query *x = &b->test[i];
		const gpuidx_query *y = &b->ref[i];
		/* the reference returns every id; the query under test what its result mode asks */
		bool		same = x->status == y->status &&
			(x->status != GPUIDX_ENGINE_OK ||
			 (y->out_count == y->total && x->total == y->total &&
			  x->out_count == gpuidx_result_wanted(x->result, y->total) &&
			  (x->out_count == 0 ||
			   memcmp(x->out, y->out, (size_t) x->out_count * sizeof(uint32_t)) == 0)));

		s->by_status[x->status & 15]++;
		if (x->status == GPUIDX_ENGINE_ERR_TOO_LARGE && y->status == GPUIDX_ENGINE_OK)
		{
			s->deferred++;
			continue;
		}
		if (!same)
		{
			s->differences++;
			if (s->differences <= 10)
				fprintf(stderr, "DIFFERENCE %s, query %u of %u: status %d vs %d, count %u vs %u, %s of %u terms (%u excluded)%s\n",
						what, i, b->n, x->status, y->status, x->out_count, y->out_count,
						x->op == GPUIDX_OP_OR ? "OR" : "AND", x->nterms, x->nexclude,
						x->initial ? " + initial" : "");
		}
	}
	s->queries += b->n;
	s->batches++;
	batch_reset(b);
}

/*
 * The query under test asks for all ids, the first n, or the count alone,
 * with just the room that needs (its reference, copied before, for all).
 */
static void
ask_random_result(gpuidx_query *q, uint32_t bound)
{
	switch (unit_rand_below(5))
	{
		case 0:
			q->result = GPUIDX_RESULT_COUNT;
			q->out_capacity = 0;
			if (unit_rand_below(2))
				q->out = NULL;
			break;
		case 1:
			q->result = 1 + unit_rand_below(bound < 200 ? bound + 5 : 200);
			q->out_capacity = gpuidx_result_wanted(q->result, bound);
			break;
		default:
			q->result = GPUIDX_RESULT_IDS;
	}
}

/* one random query into the batch; false when its output does not fit */
/* queries of cached lists only, without initial sets */
static bool cached_only;

static bool
add_random_query(batch *b, const list_pool *pool)
{
	uint32_t	i = b->n;
	uint32_t	k = 1 + unit_rand_below(8);
	uint32_t	short_list = pool->by_count[unit_rand_below(pool->n)];
	uint32_t	bound;
	uint32_t   *to,
			   *ro;
	gpuidx_query *q = &b->test[i];
	bool		initial = !cached_only && unit_rand_below(10) == 0;

	if (k == 1 && !initial && unit_rand_below(2))
		k = 2;
	for (uint32_t t = 0; t < k; t++)
	{
		uint32_t	li;

		if (t == 0)
			li = short_list;
		else if (unit_rand_below(2))
		{
			/* a length ratio from 1 to 100,000 against the first list */
			double		r = exp((double) (unit_rand64() % 1000000) / 1000000.0 * log(100000.0));

			li = pool_near(pool, (uint64_t) ((pool->counts[short_list] + 1) * r));
		}
		else
			li = unit_rand_below(pool->n);
		b->terms[i][t].key = pool->epoch << 32 | li;
		b->terms[i][t].bytes = !cached_only && unit_rand_below(10) < 3 ? pool->bytes[li] : NULL;
		b->terms[i][t].len = pool->lens[li];
		b->values[i][t] = pool->values[li];
		b->counts[i][t] = pool->counts[li];
	}
	memset(q, 0, sizeof(*q));
	q->terms = b->terms[i];
	q->nterms = k;
	pick_random_op(q, k, initial);
	if (initial)
	{
		/* every other id of a pool list, as an earlier round's result */
		uint32_t	src = unit_rand_below(pool->n);
		uint32_t	n = (pool->counts[src] + 1) / 2;
		uint32_t   *init;

		/* both engines read the same initial set; neither writes it */
		if (!batch_out(b, n, &init, &ro))
			return false;
		for (uint32_t j = 0; j < n; j++)
			init[j] = pool->values[src][2 * j];
		q->initial = init;
		q->ninitial = n;
		if (unit_rand_below(3) == 0)
		{
			q->nterms = 0;		/* the initial set alone */
			q->nexclude = 0;
		}
	}
	bound = result_bound(q, b->counts[i]);
	if (!batch_out(b, bound, &to, &ro))
		return false;
	q->out = to;
	q->out_capacity = bound;
	b->ref[i] = *q;
	b->ref[i].out = ro;
	ask_random_result(q, bound);
	b->n++;
	return true;
}

static void
check_random(check_state *s, batch *b, long nqueries, uint32_t max_len)
{
	long		small = 0;
	list_pool  *pool = calloc(1, sizeof(list_pool));
	static const uint32_t sizes[] = {1, 3, 16, 100, 256, 1024, 4096};
	long		done = 0;
	double		start = harness_now();
	long		per_pool = nqueries / 20 > 50000 ? nqueries / 20 : 50000;

	if (pool == NULL)
		harness_fail("out of memory");
	while (done < nqueries)
	{
		uint32_t	want = sizes[unit_rand_below(sizeof(sizes) / sizeof(sizes[0]))];

		if (pool->n == 0 || done / per_pool != (done - (long) want) / per_pool)
			pool_build(s, pool, max_len);
		while (b->n < want && add_random_query(b, pool))
			;
		done += b->n;
		run_and_compare(s, b, "random");
		if (isatty(2))
			fprintf(stderr, "\r%ld queries, %ld differences", done, s->differences);
	}
	/*
	 * then batches of 1 to 8 queries of cached lists alone: the CUDA engine
	 * runs these in one launch, with the batch in the kernel's parameters
	 */
	cached_only = true;
	while (pool->n > 0 && small < nqueries / 10)
	{
		uint32_t	want = 1 + unit_rand_below(8);

		while (b->n < want && add_random_query(b, pool))
			;
		small += b->n;
		run_and_compare(s, b, "random, small batches of cached lists");
	}
	cached_only = false;
	if (isatty(2))
		fputc('\n', stderr);
	printf("random: %ld queries in %.1f s (%ld of them in batches of 1-8 cached), %ld differences\n",
		   done + small, harness_now() - start, small, s->differences);
	for (uint32_t i = 0; i < pool->n; i++)
	{
		free(pool->bytes[i]);
		free(pool->values[i]);
	}
	free(pool);
}

static void
check_pack(check_state *s, batch *b, const char *path)
{
	pack		p;
	long		before = s->differences;
	long		nq = 0;

	pack_load(&p, path);
	for (uint32_t i = 0; i < p.nlists; i++)
		put_everywhere(s, UINT64_C(0xFFFF) << 48 | i, p.lists[i], p.lens[i]);
	for (int inline_pass = 0; inline_pass < 2; inline_pass++)
		for (uint32_t qi = 0; qi < p.nqueries; qi++)
		{
			uint32_t	i;
			gpuidx_query *q;
			uint32_t	bound;
			uint32_t	k = p.query_nterms[qi] <= 8 ? p.query_nterms[qi] : 8;
			uint32_t   *to,
					   *ro;

			if (b->n == MAX_BATCH)
				run_and_compare(s, b, p.name);
			i = b->n;
			q = &b->test[i];
			for (uint32_t t = 0; t < k; t++)
			{
				uint32_t	li = p.terms[p.query_first[qi] + t];

				b->terms[i][t].key = UINT64_C(0xFFFF) << 48 | li;
				b->terms[i][t].bytes = inline_pass ? p.lists[li] : NULL;
				b->terms[i][t].len = p.lens[li];
				b->counts[i][t] = p.counts[li];
				b->values[i][t] = NULL;
			}
			/* the real terms intersected, or some of them excluded, or their union */
			memset(q, 0, sizeof(*q));
			q->nterms = k;
			pick_random_op(q, k, false);
			bound = result_bound(q, b->counts[i]);
			if (!batch_out(b, bound, &to, &ro))
			{
				if (b->n == 0)
					harness_fail("%s: query %u needs more output room than a batch has", p.name, qi);
				run_and_compare(s, b, p.name);
				qi--;
				continue;
			}
			q->terms = b->terms[i];
			q->out = to;
			q->out_capacity = bound;
			b->ref[i] = *q;
			b->ref[i].out = ro;
			ask_random_result(q, bound);
			b->n++;
			nq++;
		}
	if (b->n > 0)
		run_and_compare(s, b, p.name);
	printf("%s: %ld real queries (cached, then inline), %ld differences\n", p.name, nq,
		   s->differences - before);
	for (uint32_t i = 0; i < p.nlists; i++)
	{
		s->test.api->cache_remove(s->test.engine, UINT64_C(0xFFFF) << 48 | i);
		if (!s->plain)
			s->ref.api->cache_remove(s->ref.engine, UINT64_C(0xFFFF) << 48 | i);
	}
	pack_free(&p);
}

/* the cache: eviction order, NOT_CACHED, TOO_LARGE, INVALID */
static void
check_cache(const char *spec, uint32_t threads)
{
	gpuidx_engine_config cfg = {sizeof(cfg), 0, 1 << 20, 0, threads, 0};
	engine_handle h;
	char		err[512];
	uint32_t   *v = harness_alloc(400000 * sizeof(uint32_t));
	uint8_t    *lists[12];
	uint64_t	lens[12];
	gpuidx_engine_error e;
	gpuidx_cache_stats st;
	gpuidx_term_ref ref[2];
	gpuidx_query q;
	uint32_t	out[70000];

	if (engine_open(&h, spec, &cfg, err, sizeof(err)) != GPUIDX_ENGINE_OK)
		harness_fail("cache check: %s", err);
	for (int i = 0; i < 12; i++)
	{
		uint32_t	n = unit_gen_gaps(v, 60000, (uint32_t) i, 40);	/* about 110 kB as raw */

		lens[i] = pl_encoded_size(GPUIDX_CODEC_RAW, v, n / 2);
		lists[i] = harness_alloc(lens[i]);
		pl_encode(GPUIDX_CODEC_RAW, v, n / 2, lists[i]);
		CHECK(h.api->cache_put(h.engine, 100 + i, lists[i], lens[i], &e) == GPUIDX_ENGINE_OK,
			  "cache_put %d: %s", i, e.message);
	}
	h.api->cache_get_stats(h.engine, &st);
	CHECK(st.evictions > 0 && st.bytes_used <= st.bytes_capacity, "a 1 MiB cache evicted (%llu)",
		  (unsigned long long) st.evictions);
	CHECK(!h.api->cache_contains(h.engine, 100) && h.api->cache_contains(h.engine, 111),
		  "least recently used went first");
	memset(&q, 0, sizeof(q));
	ref[0].key = 100;
	ref[0].bytes = NULL;
	ref[1].key = 111;
	ref[1].bytes = NULL;
	q.terms = ref;
	q.nterms = 2;
	q.out = out;
	q.out_capacity = 70000;
	CHECK(h.api->run_batch(h.engine, &q, 1, NULL, &e) == GPUIDX_ENGINE_OK, "batch runs");
	CHECK(q.status == GPUIDX_ENGINE_ERR_NOT_CACHED, "evicted key gives NOT_CACHED (%d)", q.status);
	ref[0].key = 110;
	CHECK(h.api->run_batch(h.engine, &q, 1, NULL, &e) == GPUIDX_ENGINE_OK && q.status == GPUIDX_ENGINE_OK,
		  "cached keys answer");
	q.out_capacity = 5;
	CHECK(h.api->run_batch(h.engine, &q, 1, NULL, &e) == GPUIDX_ENGINE_OK && q.status == GPUIDX_ENGINE_ERR_INVALID,
		  "too small an output buffer is INVALID");
	{
		/* set operations' shapes and rooms (gpuidx_query) */
		uint32_t	n110 = (uint32_t) ((const gpuidx_list_header *) lists[10])->count;
		uint32_t	n111 = (uint32_t) ((const gpuidx_list_header *) lists[11])->count;
		uint32_t	init[3] = {1, 2, 3};
		uint32_t	nunion;
		struct
		{
			uint32_t	op;
			uint32_t	nexclude;
			bool		initial;
			uint32_t	room;
			int			status;
			const char *what;
		}			shapes[] = {
			{GPUIDX_OP_OR, 0, false, n110 + n111, GPUIDX_ENGINE_OK, "a union with room for both lists"},
			{GPUIDX_OP_OR, 0, false, 0, GPUIDX_ENGINE_OK, "a union with room for itself (less than both lists)"},
			{GPUIDX_OP_OR, 0, false, 0, GPUIDX_ENGINE_ERR_INVALID, "a union with less room than itself"},
			{GPUIDX_OP_OR, 1, false, n110 + n111, GPUIDX_ENGINE_ERR_INVALID, "a union with an excluded list"},
			{GPUIDX_OP_OR, 0, true, n110 + n111, GPUIDX_ENGINE_ERR_INVALID, "a union with an initial set"},
			{GPUIDX_OP_AND, 1, false, n110, GPUIDX_ENGINE_OK, "one list less another, room for the first"},
			{GPUIDX_OP_AND, 1, false, n110 - 1, GPUIDX_ENGINE_ERR_INVALID, "one list less another, less room than the first"},
			{GPUIDX_OP_AND, 2, false, 70000, GPUIDX_ENGINE_ERR_INVALID, "every list excluded"},
			{GPUIDX_OP_AND, 2, true, 3, GPUIDX_ENGINE_OK, "an initial set less every list"},
			{GPUIDX_OP_AND, 3, true, 3, GPUIDX_ENGINE_ERR_INVALID, "more lists excluded than named"},
			{2, 0, false, 70000, GPUIDX_ENGINE_ERR_INVALID, "an unknown operation"},
		};

		/* the union's length, then room for exactly it, and for one id less */
		q.op = GPUIDX_OP_OR;
		q.out_capacity = n110 + n111;
		CHECK(h.api->run_batch(h.engine, &q, 1, NULL, &e) == GPUIDX_ENGINE_OK && q.status == GPUIDX_ENGINE_OK &&
			  q.total < n110 + n111, "the lists overlap: their union (%u) is shorter than both (%u)", q.total,
			  n110 + n111);
		nunion = q.total;
		shapes[1].room = nunion;
		shapes[2].room = nunion - 1;
		for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		{
			q.op = shapes[i].op;
			q.nexclude = shapes[i].nexclude;
			q.initial = shapes[i].initial ? init : NULL;
			q.ninitial = shapes[i].initial ? 3 : 0;
			q.out_capacity = shapes[i].room;
			CHECK(h.api->run_batch(h.engine, &q, 1, NULL, &e) == GPUIDX_ENGINE_OK && q.status == shapes[i].status,
				  "%s: status %d, not %d", shapes[i].what, q.status, shapes[i].status);
		}
		q.op = GPUIDX_OP_AND;
		q.nexclude = 0;
		q.initial = NULL;
		q.ninitial = 0;
	}
	{
		/* known answers: a = {1 3 5 7 9}, b = {3 4 5 9}, c = {5 6}, inline */
		static const uint32_t va[] = {1, 3, 5, 7, 9};
		static const uint32_t vb[] = {3, 4, 5, 9};
		static const uint32_t vc[] = {5, 6};
		const uint32_t *vals[3] = {va, vb, vc};
		const uint32_t counts[3] = {5, 4, 2};
		uint8_t    *bytes[3];
		gpuidx_term_ref abc[3];
		struct
		{
			uint32_t	op;
			uint32_t	nexclude;
			uint32_t	result;
			uint32_t	total;
			uint32_t	n;
			uint32_t	ids[8];
			const char *what;
		}			known[] = {
			{GPUIDX_OP_AND, 0, GPUIDX_RESULT_IDS, 1, 1, {5}, "a & b & c"},
			{GPUIDX_OP_AND, 1, GPUIDX_RESULT_IDS, 2, 2, {3, 9}, "a & b & !c"},
			{GPUIDX_OP_AND, 2, GPUIDX_RESULT_IDS, 2, 2, {1, 7}, "a & !b & !c"},
			{GPUIDX_OP_OR, 0, GPUIDX_RESULT_IDS, 7, 7, {1, 3, 4, 5, 6, 7, 9}, "a | b | c"},
			{GPUIDX_OP_OR, 0, 3, 7, 3, {1, 3, 4}, "the first 3 of a | b | c"},
			{GPUIDX_OP_OR, 0, GPUIDX_RESULT_COUNT, 7, 0, {0}, "the count of a | b | c"},
		};

		for (int t = 0; t < 3; t++)
		{
			size_t		len = pl_encoded_size(GPUIDX_CODEC_RAW, vals[t], counts[t]);

			bytes[t] = harness_alloc(len);
			pl_encode(GPUIDX_CODEC_RAW, vals[t], counts[t], bytes[t]);
			abc[t].key = 0;
			abc[t].bytes = bytes[t];
			abc[t].len = len;
		}
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		{
			memset(&q, 0, sizeof(q));
			q.terms = abc;
			q.nterms = 3;
			q.op = known[i].op;
			q.nexclude = known[i].nexclude;
			q.result = known[i].result;
			q.out = out;
			q.out_capacity = 11;
			CHECK(h.api->run_batch(h.engine, &q, 1, NULL, &e) == GPUIDX_ENGINE_OK &&
				  q.status == GPUIDX_ENGINE_OK && q.total == known[i].total && q.out_count == known[i].n &&
				  memcmp(out, known[i].ids, known[i].n * sizeof(uint32_t)) == 0,
				  "%s: status %d, %u ids of %u", known[i].what, q.status, q.out_count, q.total);
		}
		for (int t = 0; t < 3; t++)
			free(bytes[t]);
	}
	{
		uint32_t	n = unit_gen_gaps(v, 400000, 0, 2);
		size_t		len = pl_encoded_size(GPUIDX_CODEC_RAW, v, n);
		uint8_t    *big = harness_alloc(len);

		pl_encode(GPUIDX_CODEC_RAW, v, n, big);
		CHECK(h.api->cache_put(h.engine, 999, big, len, &e) == GPUIDX_ENGINE_ERR_TOO_LARGE,
			  "a list larger than the cache is TOO_LARGE");
		big[20] ^= 1;
		CHECK(h.api->cache_put(h.engine, 998, big, 1000, &e) == GPUIDX_ENGINE_ERR_INVALID,
			  "damaged bytes are INVALID");
		free(big);
	}
	CHECK(h.api->cache_remove(h.engine, 111) == 1 && !h.api->cache_contains(h.engine, 111), "remove");
	engine_close(&h);
	for (int i = 0; i < 12; i++)
		free(lists[i]);
	free(v);
}

/* ------------------------------------------------------------------------
 * Ranked queries (run_ranked): random segments, lists, tfs and queries,
 * against scoring every matching doc here with gpx_rank_score (wand.c, the
 * one definition of a score) or against the CPU engine: statuses, counts,
 * docs and scores compared bit for bit.
 */

#define RANK_LISTS 72
#define RANK_BATCH 64
#define RANK_QUERIES_PER_SEGMENT 150

/* keys of a segment's data: epoch, then what it is (0 list, 1 freqs, 2 doclens), then which */
#define RANK_KEY(epoch, what, i) \
	(UINT64_C(0xA) << 60 | (uint64_t) (epoch) << 20 | (uint64_t) (what) << 16 | (uint64_t) (i))

typedef struct rank_segment_pool
{
	uint64_t	epoch;
	uint32_t	ndocs;
	uint32_t   *lens;
	double		mean_len;
	uint8_t    *doclens;
	uint64_t	doclens_len;
	uint32_t	n;				/* lists */
	uint32_t   *values[RANK_LISTS];
	uint32_t	counts[RANK_LISTS];
	uint8_t    *tfs[RANK_LISTS];
	uint8_t    *bytes[RANK_LISTS];
	uint64_t	len[RANK_LISTS];
	uint8_t    *freqs[RANK_LISTS];
	uint64_t	freqs_len[RANK_LISTS];
} rank_segment_pool;

typedef struct rank_batch
{
	uint32_t	n;
	gpuidx_rank_query test[RANK_BATCH];
	gpuidx_rank_query ref[RANK_BATCH];
	gpuidx_rank_term terms[RANK_BATCH][GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	lists[RANK_BATCH][GPUIDX_ENGINE_MAX_TERMS];	/* pool list of each term */
} rank_batch;

/* the plain reference's memory: a flag per doc and the matched docs */
typedef struct rank_candidate
{
	double		score;
	uint32_t	doc;
} rank_candidate;

typedef struct rank_ref_scratch
{
	uint32_t	ndocs;
	uint8_t    *seen;
	rank_candidate *cand;
} rank_ref_scratch;

typedef struct rank_totals
{
	long		queries;
	long		batches;
	long		differences;
	long		matched;
	long		returned;
	long		ties;			/* neighbours in a result with equal scores */
	long		by_status[16];
	double		test_seconds;
	double		ref_seconds;
} rank_totals;

static uint8_t
rank_random_tf(void)
{
	/* mostly 1, so that many frequency blocks have width 0 */
	switch (unit_rand_below(10))
	{
		case 0:
			return (uint8_t) (1 + unit_rand_below(GPX_MAX_TF));
		case 1:
		case 2:
			return (uint8_t) (1 + unit_rand_below(3));
		default:
			return 1;
	}
}

static void
put_data_everywhere(check_state *s, uint64_t key, uint32_t kind, const uint8_t *bytes, uint64_t len)
{
	gpuidx_engine_error err;
	int			st = s->test.api->cache_put_data(s->test.engine, key, kind, bytes, len, &err);

	if (st != GPUIDX_ENGINE_OK)
		harness_fail("cache_put_data on the engine under test: %s: %s", engine_status_name(st), err.message);
	if (!s->plain)
	{
		st = s->ref.api->cache_put_data(s->ref.engine, key, kind, bytes, len, &err);
		if (st != GPUIDX_ENGINE_OK)
			harness_fail("cache_put_data on the reference: %s: %s", engine_status_name(st), err.message);
	}
}

static void
remove_everywhere(check_state *s, uint64_t key)
{
	s->test.api->cache_remove(s->test.engine, key);
	if (!s->plain)
		s->ref.api->cache_remove(s->ref.engine, key);
}

static void
rank_segment_free(check_state *s, rank_segment_pool *seg)
{
	for (uint32_t i = 0; i < seg->n; i++)
	{
		remove_everywhere(s, RANK_KEY(seg->epoch, 0, i));
		remove_everywhere(s, RANK_KEY(seg->epoch, 1, i));
		free(seg->values[i]);
		free(seg->tfs[i]);
		free(seg->bytes[i]);
		free(seg->freqs[i]);
	}
	if (seg->doclens != NULL)
		remove_everywhere(s, RANK_KEY(seg->epoch, 2, 0));
	free(seg->lens);
	free(seg->doclens);
	seg->n = 0;
	seg->lens = NULL;
	seg->doclens = NULL;
}

/* doc lengths with heavy repeats (equal scores are common), of every width */
static void
rank_gen_lengths(uint32_t *lens, uint32_t ndocs)
{
	int			shape = (int) unit_rand_below(7);
	uint32_t	same = 1 + unit_rand_below(40);
	static const uint32_t few[] = {3, 5, 8, 13};

	for (uint32_t d = 0; d < ndocs; d++)
		switch (shape)
		{
			case 0:
				lens[d] = same;
				break;
			case 1:
				lens[d] = few[unit_rand_below(4)];
				break;
			case 2:
				lens[d] = 1 + unit_rand_below(1000);
				break;
			case 3:
				/* some very long documents: wide chunks */
				lens[d] = unit_rand_below(50) == 0 ? 1 + (uint32_t) (unit_rand64() % UINT32_MAX) : 1 + unit_rand_below(30);
				break;
			case 4:
				/* runs of empty documents: chunks of width 0 */
				lens[d] = (d / GPUIDX_DOCLENS_CHUNK) % 3 == 1 ? 0 : 1 + unit_rand_below(6);
				break;
			case 5:
				/* dead docs here and there (length 0: not scored) */
				lens[d] = unit_rand_below(4) == 0 ? 0 : 1 + unit_rand_below(20);
				break;
			default:
				lens[d] = 1 + log_uniform(1 << 16);
				break;
		}
}

/* one list of the segment: dense, a run, sparse, or a subset of an earlier list */
static uint32_t
rank_gen_list(uint32_t *v, const rank_segment_pool *seg, uint32_t max_len)
{
	uint32_t	ndocs = seg->ndocs;
	uint32_t	cap = max_len < ndocs ? max_len : ndocs;
	uint32_t	len = 1 + log_uniform(cap - 1);
	uint32_t	n = 0;

	switch (unit_rand_below(8))
	{
		case 0:
			/* every doc (as far as max_len goes) */
			for (n = 0; n < cap; n++)
				v[n] = n;
			return n;
		case 1:
			{
				/* consecutive docs from anywhere */
				uint32_t	start = unit_rand_below(ndocs - len + 1);

				for (n = 0; n < len; n++)
					v[n] = start + n;
				return n;
			}
		case 2:
		case 3:
			if (seg->n > 0)
			{
				uint32_t	src = unit_rand_below(seg->n);
				uint32_t	keep = 1 + unit_rand_below(4);

				for (uint32_t i = 0; i < seg->counts[src] && n < cap; i++)
					if (unit_rand_below(keep) == 0)
						v[n++] = seg->values[src][i];
				if (n > 0)
					return n;
			}
			/* FALLTHROUGH */
		default:
			return unit_gen_uniform(v, len, ndocs);
	}
}

static void
rank_segment_build(check_state *s, rank_segment_pool *seg, uint32_t max_len)
{
	uint32_t   *tmp;
	double		sum = 0;

	rank_segment_free(s, seg);
	seg->epoch++;
	seg->ndocs = unit_rand_below(4) == 0 ? max_len : 1 + log_uniform(max_len - 1);
	if (unit_rand_below(10) == 0)
		seg->ndocs = 1 + unit_rand_below(3);
	seg->lens = harness_alloc((size_t) seg->ndocs * sizeof(uint32_t));
	rank_gen_lengths(seg->lens, seg->ndocs);
	for (uint32_t d = 0; d < seg->ndocs; d++)
		sum += seg->lens[d];
	seg->mean_len = sum / seg->ndocs;
	seg->doclens = gpx_doclens_from_lengths(seg->lens, seg->ndocs, &seg->doclens_len);
	if (seg->doclens == NULL)
		harness_fail("out of memory");
	put_data_everywhere(s, RANK_KEY(seg->epoch, 2, 0), GPUIDX_DATA_DOCLENS, seg->doclens, seg->doclens_len);

	tmp = harness_alloc(((size_t) seg->ndocs + 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < RANK_LISTS; i++)
	{
		uint32_t	n = rank_gen_list(tmp, seg, max_len);
		int			codec = unit_rand_below(4) == 0 ? pl_choose_codec(tmp, n) : (int) unit_rand_below(GPUIDX_NUM_CODECS);
		bool		all_ones = unit_rand_below(4) == 0;

		seg->values[i] = harness_alloc((size_t) n * sizeof(uint32_t));
		memcpy(seg->values[i], tmp, (size_t) n * sizeof(uint32_t));
		seg->counts[i] = n;
		seg->bytes[i] = harness_alloc(pl_encoded_size(codec, tmp, n));
		seg->len[i] = pl_encode(codec, tmp, n, seg->bytes[i]);
		seg->tfs[i] = harness_alloc(n);
		for (uint32_t j = 0; j < n; j++)
			seg->tfs[i][j] = all_ones ? 1 : rank_random_tf();
		seg->freqs[i] = gpx_freq_record_build(tmp, seg->tfs[i], n, &seg->freqs_len[i]);
		if (seg->freqs[i] == NULL)
			harness_fail("out of memory");
		seg->n = i + 1;
		put_everywhere(s, RANK_KEY(seg->epoch, 0, i), seg->bytes[i], seg->len[i]);
		put_data_everywhere(s, RANK_KEY(seg->epoch, 1, i), GPUIDX_DATA_FREQS, seg->freqs[i], seg->freqs_len[i]);
	}
	free(tmp);
}

/* one random query over the segment, its outputs malloc'd */
static void
rank_add_query(rank_batch *b, const rank_segment_pool *seg)
{
	uint32_t	i = b->n++;
	gpuidx_rank_query *q = &b->test[i];
	uint32_t	nterms = unit_rand_below(20) == 0 ? 1 + unit_rand_below(GPUIDX_ENGINE_MAX_TERMS)
		: 1 + unit_rand_below(6);
	uint32_t	order[RANK_LISTS];
	static const uint32_t ks[] = {1, 10, 32, 100, 256, 2048};
	static const double idfs[] = {0.0, 0.25, 1.0, 2.5};

	if (nterms > seg->n)
		nterms = seg->n;
	/* distinct lists, as a query's distinct lexemes */
	for (uint32_t j = 0; j < seg->n; j++)
		order[j] = j;
	for (uint32_t j = 0; j < nterms; j++)
	{
		uint32_t	r = j + unit_rand_below(seg->n - j);
		uint32_t	x = order[j];

		order[j] = order[r];
		order[r] = x;
	}
	memset(q, 0, sizeof(*q));
	for (uint32_t t = 0; t < nterms; t++)
	{
		gpuidx_rank_term *term = &b->terms[i][t];
		uint32_t	l = order[t];

		memset(term, 0, sizeof(*term));
		b->lists[i][t] = l;
		term->list.key = RANK_KEY(seg->epoch, 0, l);
		if (unit_rand_below(4) == 0)
			term->list.bytes = seg->bytes[l];
		term->list.len = seg->len[l];
		switch (unit_rand_below(3))
		{
			case 0:
				term->tfs = seg->tfs[l];
				break;
			case 1:
				term->freqs.key = RANK_KEY(seg->epoch, 1, l);
				break;
			default:
				term->freqs.bytes = seg->freqs[l];
				term->freqs.len = seg->freqs_len[l];
				break;
		}
		/* equal idfs often: equal scores */
		term->idf = unit_rand_below(2) ? idfs[unit_rand_below(4)]
			: (double) (unit_rand64() % 1000000) / 100000.0;
	}
	q->terms = b->terms[i];
	q->nterms = nterms;
	q->every_term = unit_rand_below(3) == 0;
	q->doclens.key = RANK_KEY(seg->epoch, 2, 0);
	if (unit_rand_below(4) == 0)
	{
		q->doclens.bytes = seg->doclens;
		q->doclens.len = seg->doclens_len;
	}
	if (unit_rand_below(2))
	{
		q->k1 = GPX_BM25_K1_DEFAULT;
		q->b = GPX_BM25_B_DEFAULT;
		q->avgdl = seg->mean_len;
	}
	else
	{
		q->k1 = 0.01 + (double) (unit_rand64() % 300) / 100.0;
		q->b = unit_rand_below(4) == 0 ? (double) unit_rand_below(2) : (double) (unit_rand64() % 1001) / 1000.0;
		q->avgdl = unit_rand_below(8) == 0 ? 0.0 : (double) (unit_rand64() % 200000) / 100.0;
	}
	q->k = ks[unit_rand_below(sizeof(ks) / sizeof(ks[0]))];
	if (unit_rand_below(10) == 0)
	{
		/* more than can match */
		uint64_t	k = (uint64_t) seg->ndocs + 1 + unit_rand_below(100);

		q->k = k < GPUIDX_RANK_MAX_K ? (uint32_t) k : GPUIDX_RANK_MAX_K;
	}
	q->out_capacity = q->k + (unit_rand_below(4) == 0 ? unit_rand_below(10) : 0);
	b->ref[i] = *q;
	q->out_docs = harness_alloc((size_t) q->out_capacity * sizeof(uint32_t));
	q->out_scores = harness_alloc((size_t) q->out_capacity * sizeof(double));
	b->ref[i].out_docs = harness_alloc((size_t) q->out_capacity * sizeof(uint32_t));
	b->ref[i].out_scores = harness_alloc((size_t) q->out_capacity * sizeof(double));
	/* what the engine leaves unwritten must not pass for an answer */
	memset(q->out_docs, 0xA5, (size_t) q->out_capacity * sizeof(uint32_t));
	memset(q->out_scores, 0xA5, (size_t) q->out_capacity * sizeof(double));
}

static int
rank_candidate_cmp(const void *a, const void *b)
{
	const rank_candidate *x = a;
	const rank_candidate *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->doc < y->doc ? -1 : x->doc > y->doc;
}

/* put the k best of c[0..n) first, in any order (quickselect; k < n) */
static void
rank_select(rank_candidate *c, uint32_t n, uint32_t k)
{
	uint32_t	lo = 0,
				hi = n;			/* the k-th best is in c[lo..hi) */

	while (hi - lo > 1)
	{
		rank_candidate pivot = c[lo + unit_rand_below(hi - lo)];
		uint32_t	store = lo;
		rank_candidate x;

		/* better than the pivot first, then the pivot, then the rest */
		for (uint32_t i = lo; i < hi; i++)
			if (rank_candidate_cmp(&c[i], &pivot) < 0)
			{
				x = c[i];
				c[i] = c[store];
				c[store++] = x;
			}
		for (uint32_t i = store; i < hi; i++)
			if (rank_candidate_cmp(&c[i], &pivot) == 0)
			{
				x = c[i];
				c[i] = c[store];
				c[store] = x;
				break;
			}
		if (store == k - 1 || store == k)
			return;
		if (store > k)
			hi = store;
		else
			lo = store + 1;
	}
}

/* the plain reference: every matching doc of nonzero length scored by gpx_rank_score, sorted, the first k */
static void
rank_brute_force(gpuidx_rank_query *q, const uint32_t *lists, const rank_segment_pool *seg,
				 rank_ref_scratch *rs)
{
	gpx_rank_query rq;
	double		idf[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	tf[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	pos[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	m = 0;

	if (seg->ndocs > rs->ndocs)
	{
		free(rs->seen);
		free(rs->cand);
		rs->seen = calloc(seg->ndocs, 1);
		rs->cand = harness_alloc((size_t) seg->ndocs * sizeof(rank_candidate));
		if (rs->seen == NULL)
			harness_fail("out of memory");
		rs->ndocs = seg->ndocs;
	}
	memset(&rq, 0, sizeof(rq));
	rq.nterms = (int) q->nterms;
	rq.idf = idf;
	rq.k1 = q->k1;
	rq.b = q->b;
	rq.avgdl = q->avgdl;
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		idf[t] = q->terms[t].idf;
		pos[t] = 0;
		for (uint32_t i = 0; i < seg->counts[lists[t]]; i++)
			rs->seen[seg->values[lists[t]][i]] = 1;
	}
	for (uint32_t d = 0; d < seg->ndocs; d++)
	{
		uint32_t	have = 0;

		if (!rs->seen[d])
			continue;
		rs->seen[d] = 0;
		for (uint32_t t = 0; t < q->nterms; t++)
		{
			uint32_t	l = lists[t];

			tf[t] = 0;
			if (pos[t] < seg->counts[l] && seg->values[l][pos[t]] == d)
			{
				tf[t] = seg->tfs[l][pos[t]++];
				have++;
			}
		}
		/* a doc of length 0 is not scored (the caller's dead docs) */
		if (seg->lens[d] != 0 && (q->every_term ? have == q->nterms : have > 0))
		{
			rs->cand[m].score = gpx_rank_score(&rq, tf, seg->lens[d]);
			rs->cand[m].doc = d;
			m++;
		}
	}
	q->matched = m;
	q->out_count = m < q->k ? m : q->k;
	if (q->out_count < m)
		rank_select(rs->cand, m, q->out_count);
	qsort(rs->cand, q->out_count, sizeof(rank_candidate), rank_candidate_cmp);
	for (uint32_t i = 0; i < q->out_count; i++)
	{
		q->out_docs[i] = rs->cand[i].doc;
		q->out_scores[i] = rs->cand[i].score;
	}
	q->status = GPUIDX_ENGINE_OK;
}

static void
rank_batch_free(rank_batch *b)
{
	for (uint32_t i = 0; i < b->n; i++)
	{
		free(b->test[i].out_docs);
		free(b->test[i].out_scores);
		free(b->ref[i].out_docs);
		free(b->ref[i].out_scores);
	}
	b->n = 0;
}

static void
rank_run_and_compare(check_state *s, rank_batch *b, const rank_segment_pool *seg,
					 rank_ref_scratch *rs, rank_totals *tot)
{
	gpuidx_engine_error err;
	gpuidx_batch_stats st;
	double		t0 = harness_now();
	int			rc = s->test.api->run_ranked(s->test.engine, b->test, b->n, &st, &err);

	tot->test_seconds += harness_now() - t0;
	if (rc != GPUIDX_ENGINE_OK)
		harness_fail("ranked: run_ranked on the engine under test: %s (%s:%d): %s",
					 engine_status_name(rc), err.file, err.line, err.message);
	CHECK(st.queries == b->n, "ranked: stats count %u queries of %u", st.queries, b->n);
	CHECK(st.host_seconds >= 0 && st.device_seconds >= 0 && st.return_seconds >= 0 &&
		  st.seconds >= 0 && st.seconds <= harness_now() - t0 + 1e-6 &&
		  fabs(st.host_seconds + st.device_seconds + st.return_seconds - st.seconds) <= 1e-9,
		  "ranked: time split %g + %g + %g of %g s", st.host_seconds, st.device_seconds,
		  st.return_seconds, st.seconds);
	t0 = harness_now();
	if (s->plain)
		for (uint32_t i = 0; i < b->n; i++)
			rank_brute_force(&b->ref[i], b->lists[i], seg, rs);
	else if ((rc = s->ref.api->run_ranked(s->ref.engine, b->ref, b->n, NULL, &err)) != GPUIDX_ENGINE_OK)
		harness_fail("ranked: run_ranked on the reference: %s: %s", engine_status_name(rc), err.message);
	tot->ref_seconds += harness_now() - t0;
	for (uint32_t i = 0; i < b->n; i++)
	{
		const gpuidx_rank_query *x = &b->test[i];
		const gpuidx_rank_query *y = &b->ref[i];
		bool		same = x->status == y->status &&
			(x->status != GPUIDX_ENGINE_OK ||
			 (x->out_count == y->out_count && x->matched == y->matched &&
			  memcmp(x->out_docs, y->out_docs, (size_t) x->out_count * sizeof(uint32_t)) == 0 &&
			  memcmp(x->out_scores, y->out_scores, (size_t) x->out_count * sizeof(double)) == 0));

		tot->by_status[x->status & 15]++;
		if (y->status == GPUIDX_ENGINE_OK)
		{
			tot->matched += y->matched;
			tot->returned += y->out_count;
			for (uint32_t j = 1; j < y->out_count; j++)
				tot->ties += y->out_scores[j] == y->out_scores[j - 1];
		}
		/* a query whose scratch alone passes the batch memory: the caller's CPU ranks it */
		if (x->status == GPUIDX_ENGINE_ERR_TOO_LARGE && y->status == GPUIDX_ENGINE_OK)
		{
			s->deferred++;
			continue;
		}
		if (!same)
		{
			tot->differences++;
			s->differences++;
			if (tot->differences <= 10)
			{
				uint32_t	j = 0;
				uint32_t	n = x->out_count < y->out_count ? x->out_count : y->out_count;

				while (j < n && x->out_docs[j] == y->out_docs[j] &&
					   memcmp(&x->out_scores[j], &y->out_scores[j], sizeof(double)) == 0)
					j++;
				fprintf(stderr, "RANKED DIFFERENCE query %u of %u (%u terms%s, k %u, ndocs %u): "
						"status %d vs %d, count %u vs %u, matched %u vs %u",
						i, b->n, x->nterms, x->every_term ? ", every term" : "", x->k, seg->ndocs,
						x->status, y->status, x->out_count, y->out_count, x->matched, y->matched);
				if (j < n)
					fprintf(stderr, "; first at %u: doc %u score %.17g vs doc %u score %.17g", j,
							x->out_docs[j], x->out_scores[j], y->out_docs[j], y->out_scores[j]);
				fputc('\n', stderr);
			}
		}
	}
	tot->queries += b->n;
	tot->batches++;
	rank_batch_free(b);
}

/* false (with a clear message) when the engine lacks ranked queries */
static bool
engine_ranks(const engine_handle *h, const char *what)
{
	if (h->api->run_ranked != NULL && h->api->cache_put_data != NULL)
		return true;
	printf("FAILED: %s engine (%s) has no %s: ABI %u ranked queries are not implemented\n", what,
		   h->info.kind, h->api->run_ranked == NULL ? "run_ranked" : "cache_put_data",
		   GPUIDX_ENGINE_ABI_VERSION);
	unit_failures++;
	return false;
}

static void
check_ranked(check_state *s, long nqueries, uint32_t max_len)
{
	rank_segment_pool *seg = calloc(1, sizeof(rank_segment_pool));
	rank_batch *b = calloc(1, sizeof(rank_batch));
	rank_ref_scratch rs;
	rank_totals tot;
	static const uint32_t sizes[] = {1, 3, 16, 64};
	long		on_segment = 0;
	double		start = harness_now();

	if (seg == NULL || b == NULL)
		harness_fail("out of memory");
	if (!engine_ranks(&s->test, "the engine under test") || (!s->plain && !engine_ranks(&s->ref, "the reference")))
	{
		free(seg);
		free(b);
		return;
	}
	memset(&rs, 0, sizeof(rs));
	memset(&tot, 0, sizeof(tot));
	if (max_len < 2)
		max_len = 2;
	while (tot.queries < nqueries)
	{
		uint32_t	want = sizes[unit_rand_below(sizeof(sizes) / sizeof(sizes[0]))];

		if (seg->n == 0 || on_segment >= RANK_QUERIES_PER_SEGMENT)
		{
			rank_segment_build(s, seg, max_len);
			on_segment = 0;
		}
		while (b->n < want)
			rank_add_query(b, seg);
		on_segment += b->n;
		rank_run_and_compare(s, b, seg, &rs, &tot);
		if (isatty(2))
			fprintf(stderr, "\r%ld ranked queries, %ld differences", tot.queries, tot.differences);
	}
	if (isatty(2))
		fputc('\n', stderr);
	printf("ranked: %ld queries in %ld batches, %.1f s (engine %.2f s, reference %.2f s), %ld differences; "
		   "%ld docs matched, %ld returned, %ld of them tied with the one before; statuses: ok %ld, other %ld\n",
		   tot.queries, tot.batches, harness_now() - start, tot.test_seconds, tot.ref_seconds,
		   tot.differences, tot.matched, tot.returned, tot.ties, tot.by_status[GPUIDX_ENGINE_OK],
		   tot.queries - tot.by_status[GPUIDX_ENGINE_OK]);
	rank_segment_free(s, seg);
	free(rs.seen);
	free(rs.cand);
	free(seg);
	free(b);
}

/* one ranked query's status, alone in a batch */
static int
rank_status(engine_handle *h, gpuidx_rank_query *q)
{
	gpuidx_engine_error e;
	int			rc = h->api->run_ranked(h->engine, q, 1, NULL, &e);

	CHECK(rc == GPUIDX_ENGINE_OK, "ranked error checks: the batch runs (%s: %s)", engine_status_name(rc), e.message);
	return q->status;
}

/* the ranked queries' errors: kinds, missing keys, damaged data, bad arguments */
static void
check_ranked_errors(const char *spec, uint32_t threads)
{
	gpuidx_engine_config cfg = {sizeof(cfg), 0, 16 << 20, 0, threads, 0};
	engine_handle h;
	char		err[512];
	gpuidx_engine_error e;
	uint32_t	lens[300];
	uint32_t	docs[200];
	uint8_t		tfs[200];
	uint64_t	dl_len,
				fr_len,
				fr_short_len,
				dl_short_len;
	uint8_t    *dl,
			   *fr,
			   *fr_short,
			   *dl_short;
	size_t		list_len;
	uint8_t    *list;
	gpuidx_rank_term terms[2];
	gpuidx_rank_query q,
				good;
	uint32_t	out_docs[16];
	double		out_scores[16];

	if (engine_open(&h, spec, &cfg, err, sizeof(err)) != GPUIDX_ENGINE_OK)
		harness_fail("ranked error checks: %s", err);
	if (!engine_ranks(&h, "the engine under test"))
	{
		engine_close(&h);
		return;
	}
	for (uint32_t i = 0; i < 300; i++)
		lens[i] = 1 + i % 7;
	for (uint32_t i = 0; i < 200; i++)
	{
		docs[i] = i + 50;		/* the last doc is 249 */
		tfs[i] = (uint8_t) (1 + i % 3);
	}
	dl = gpx_doclens_from_lengths(lens, 300, &dl_len);
	dl_short = gpx_doclens_from_lengths(lens, 249, &dl_short_len);	/* posting 249 is not below it */
	fr = gpx_freq_record_build(docs, tfs, 200, &fr_len);
	fr_short = gpx_freq_record_build(docs, tfs, 199, &fr_short_len);	/* another df */
	list_len = pl_encoded_size(GPUIDX_CODEC_EF, docs, 200);
	list = harness_alloc(list_len);
	pl_encode(GPUIDX_CODEC_EF, docs, 200, list);
	if (dl == NULL || dl_short == NULL || fr == NULL || fr_short == NULL)
		harness_fail("out of memory");

	CHECK(h.api->cache_put(h.engine, 1, list, list_len, &e) == GPUIDX_ENGINE_OK, "put list: %s", e.message);
	CHECK(h.api->cache_put_data(h.engine, 2, GPUIDX_DATA_FREQS, fr, fr_len, &e) == GPUIDX_ENGINE_OK,
		  "put freqs: %s", e.message);
	CHECK(h.api->cache_put_data(h.engine, 3, GPUIDX_DATA_DOCLENS, dl, dl_len, &e) == GPUIDX_ENGINE_OK,
		  "put doclens: %s", e.message);
	CHECK(h.api->cache_put_data(h.engine, 4, GPUIDX_DATA_FREQS, fr_short, fr_short_len, &e) == GPUIDX_ENGINE_OK,
		  "put the other freqs: %s", e.message);
	CHECK(h.api->cache_put_data(h.engine, 5, GPUIDX_DATA_DOCLENS, dl_short, dl_short_len, &e) == GPUIDX_ENGINE_OK,
		  "put the short doclens: %s", e.message);
	CHECK(h.api->cache_put_data(h.engine, 6, 7, fr, fr_len, &e) == GPUIDX_ENGINE_ERR_INVALID,
		  "an unknown kind of data is INVALID");
	CHECK(h.api->cache_put_data(h.engine, 6, GPUIDX_DATA_DOCLENS, fr, fr_len, &e) == GPUIDX_ENGINE_ERR_INVALID,
		  "a frequency record put as document lengths is INVALID");
	CHECK(h.api->cache_put_data(h.engine, 6, GPUIDX_DATA_FREQS, list, list_len, &e) == GPUIDX_ENGINE_ERR_INVALID,
		  "a list put as a frequency record is INVALID");
	/* a flipped byte anywhere: refused on the way in */
	for (int rep = 0; rep < 40; rep++)
	{
		uint64_t	at = unit_rand_below(dl_len);
		uint8_t		flip = (uint8_t) (1 + unit_rand_below(255));

		dl[at] ^= flip;
		CHECK(h.api->cache_put_data(h.engine, 6, GPUIDX_DATA_DOCLENS, dl, dl_len, &e) == GPUIDX_ENGINE_ERR_INVALID,
			  "document lengths with byte %llu changed are INVALID", (unsigned long long) at);
		dl[at] ^= flip;
		at = unit_rand_below(fr_len);
		fr[at] ^= flip;
		CHECK(h.api->cache_put_data(h.engine, 6, GPUIDX_DATA_FREQS, fr, fr_len, &e) == GPUIDX_ENGINE_ERR_INVALID,
			  "a frequency record with byte %llu changed is INVALID", (unsigned long long) at);
		fr[at] ^= flip;
	}
	CHECK(!h.api->cache_contains(h.engine, 6), "nothing refused was cached");

	/* a sound query: the others each change one thing */
	memset(terms, 0, sizeof(terms));
	terms[0].list.key = 1;
	terms[0].freqs.key = 2;
	terms[0].idf = 1.5;
	terms[1].list.key = 1;
	terms[1].tfs = tfs;
	terms[1].idf = 0.5;
	memset(&good, 0, sizeof(good));
	good.terms = terms;
	good.nterms = 1;
	good.doclens.key = 3;
	good.k1 = 1.2;
	good.b = 0.75;
	good.avgdl = 4;
	good.k = 10;
	good.out_capacity = 16;
	good.out_docs = out_docs;
	good.out_scores = out_scores;
	q = good;
	CHECK(rank_status(&h, &q) == GPUIDX_ENGINE_OK && q.out_count == 10 && q.matched == 200,
		  "a sound query answers (%d, %u of %u)", q.status, q.out_count, q.matched);
	q = good;
	q.nterms = 2;
	q.every_term = 1;
	CHECK(rank_status(&h, &q) == GPUIDX_ENGINE_OK && q.matched == 200, "tfs inline and by key (%d)", q.status);

#define EXPECT(want, what) \
	CHECK(rank_status(&h, &q) == (want), "%s: status %d, not %d", what, q.status, want)

	q = good;
	terms[0].list.key = 3;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "document lengths named as a list");
	terms[0].list.key = 2;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a frequency record named as a list");
	terms[0].list.key = 1;
	terms[0].freqs.key = 1;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a list named as a frequency record");
	terms[0].freqs.key = 3;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "document lengths named as a frequency record");
	terms[0].freqs.key = 2;
	q.doclens.key = 1;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a list named as document lengths");
	q.doclens.key = 2;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a frequency record named as document lengths");
	q.doclens.key = 3;
	{
		/* ranking data named in a plain query */
		gpuidx_term_ref ref = {2, NULL, 0};
		gpuidx_query pq;
		uint32_t	out[256];

		memset(&pq, 0, sizeof(pq));
		pq.terms = &ref;
		pq.nterms = 1;
		pq.out = out;
		pq.out_capacity = 256;
		CHECK(h.api->run_batch(h.engine, &pq, 1, NULL, &e) == GPUIDX_ENGINE_OK &&
			  pq.status == GPUIDX_ENGINE_ERR_INVALID, "a frequency record named in run_batch is INVALID (%d)",
			  pq.status);
	}

	terms[0].list.key = 99;
	EXPECT(GPUIDX_ENGINE_ERR_NOT_CACHED, "a list not cached");
	terms[0].list.key = 1;
	terms[0].freqs.key = 99;
	EXPECT(GPUIDX_ENGINE_ERR_NOT_CACHED, "a frequency record not cached");
	terms[0].freqs.key = 2;
	q.doclens.key = 99;
	EXPECT(GPUIDX_ENGINE_ERR_NOT_CACHED, "document lengths not cached");
	q.doclens.key = 3;

	terms[0].freqs.key = 4;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a frequency record of another df");
	terms[0].freqs.key = 0;
	terms[0].freqs.bytes = fr_short;
	terms[0].freqs.len = fr_short_len;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "an inline frequency record of another df");
	terms[0].freqs.bytes = fr;
	terms[0].freqs.len = fr_len;
	EXPECT(GPUIDX_ENGINE_OK, "an inline frequency record");
	fr[fr_len - 1] ^= 0x10;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a damaged inline frequency record");
	fr[fr_len - 1] ^= 0x10;
	terms[0].freqs.bytes = NULL;
	terms[0].freqs.key = 2;

	q.doclens.key = 5;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a posting not below the segment's docs");
	q.doclens.bytes = dl_short;
	q.doclens.len = dl_short_len;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a posting not below the inline segment's docs");
	q.doclens.bytes = dl;
	q.doclens.len = dl_len;
	EXPECT(GPUIDX_ENGINE_OK, "inline document lengths");
	dl[dl_len / 2] ^= 0x01;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "damaged inline document lengths");
	dl[dl_len / 2] ^= 0x01;
	q.doclens.bytes = NULL;
	q.doclens.key = 3;

	terms[0].list.bytes = list;
	terms[0].list.len = list_len;
	EXPECT(GPUIDX_ENGINE_OK, "an inline list");
	list[list_len - 1] ^= 0x40;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "a damaged inline list");
	list[list_len - 1] ^= 0x40;
	terms[0].list.bytes = NULL;

	q.k = 0;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "k = 0");
	q.k = 17;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "k above out_capacity");
	q.k = GPUIDX_RANK_MAX_K + 1;
	q.out_capacity = GPUIDX_RANK_MAX_K + 1;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "k above GPUIDX_RANK_MAX_K");
	q = good;
	q.out_docs = NULL;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "no out_docs");
	q = good;
	q.out_scores = NULL;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "no out_scores");
	q = good;
	q.nterms = 0;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "no term");
	q.nterms = GPUIDX_ENGINE_MAX_TERMS + 1;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "too many terms");
	q = good;
	q.k1 = 0;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "k1 = 0");
	q = good;
	q.b = 1.5;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "b above 1");
	q.b = -0.25;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "b below 0");
	q = good;
	q.avgdl = -1;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "avgdl below 0");
	q = good;
	terms[0].idf = -1;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "idf below 0");
	terms[0].idf = NAN;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "idf NaN");
	terms[0].idf = INFINITY;
	EXPECT(GPUIDX_ENGINE_ERR_INVALID, "idf infinite");
	terms[0].idf = 1.5;
#undef EXPECT

	{
		/* errors are the query's: the sound one beside them answers */
		gpuidx_rank_query batch[3];
		uint32_t	docs2[16];
		double		scores2[16];

		batch[0] = good;
		batch[0].k = 0;
		batch[1] = good;
		batch[1].out_docs = docs2;
		batch[1].out_scores = scores2;
		batch[2] = good;
		batch[2].doclens.key = 99;
		CHECK(h.api->run_ranked(h.engine, batch, 3, NULL, &e) == GPUIDX_ENGINE_OK &&
			  batch[0].status == GPUIDX_ENGINE_ERR_INVALID && batch[1].status == GPUIDX_ENGINE_OK &&
			  batch[1].out_count == 10 && batch[2].status == GPUIDX_ENGINE_ERR_NOT_CACHED,
			  "a batch with bad queries: %d %d %d", batch[0].status, batch[1].status, batch[2].status);
	}
	engine_close(&h);
	free(dl);
	free(dl_short);
	free(fr);
	free(fr_short);
	free(list);
}

int
main(int argc, char **argv)
{
	const char *engine = "cpu";
	const char *reference = "cpu";
	long		nqueries = 100000;
	long		nranked = 2000;
	uint32_t	max_len = 2000000;
	uint32_t	threads = (uint32_t) sysconf(_SC_NPROCESSORS_ONLN);
	const char *packs[16];
	int			npacks = 0;
	bool		skip_no_device = false;
	check_state *s = calloc(1, sizeof(check_state));
	batch	   *b = calloc(1, sizeof(batch));
	/* 4 threads: the GPU engine copies large results with several (copy_pieces) */
	gpuidx_engine_config cfg = {sizeof(cfg), 0, UINT64_C(4) << 30, 0, 4, 0};
	char		err[512];
	int			st;

	if (s == NULL || b == NULL)
		harness_fail("out of memory");
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
			engine = argv[++i];
		else if (strcmp(argv[i], "--reference") == 0 && i + 1 < argc)
			reference = argv[++i];
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			nqueries = atol(argv[++i]);
		else if (strcmp(argv[i], "--ranked") == 0 && i + 1 < argc)
			nranked = atol(argv[++i]);
		else if (strcmp(argv[i], "--max-len") == 0 && i + 1 < argc)
			max_len = (uint32_t) atol(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = (uint32_t) atol(argv[++i]);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			unit_rng_state = (uint64_t) atoll(argv[++i]);
		else if (strcmp(argv[i], "--pack") == 0 && i + 1 < argc && npacks < 16)
			packs[npacks++] = argv[++i];
		else if (strcmp(argv[i], "--batch-bytes") == 0 && i + 1 < argc)
			cfg.batch_bytes = (uint64_t) atoll(argv[++i]);
		else if (strcmp(argv[i], "--skip-ratio") == 0 && i + 1 < argc)
			cfg.skip_ratio = (uint32_t) atoll(argv[++i]);
		else if (strcmp(argv[i], "--skip-if-no-device") == 0)
			skip_no_device = true;
		else
			harness_fail("unknown argument %s (see the file header for usage)", argv[i]);
	}
	st = engine_open(&s->test, engine, &cfg, err, sizeof(err));
	if (st != GPUIDX_ENGINE_OK)
	{
		if (skip_no_device && (st == GPUIDX_ENGINE_ERR_NO_DEVICE || st == GPUIDX_ENGINE_ERR_NO_DRIVER))
		{
			printf("engine %s: not available here (%s); GPU check skipped\n", engine, err);
			return 0;
		}
		harness_fail("engine %s: %s", engine, err);
	}
	s->plain = strcmp(reference, "plain") == 0;
	if (s->plain && npacks > 0)
		harness_fail("packs need the CPU engine as reference (--reference cpu)");
	if (!s->plain)
	{
		gpuidx_engine_config rcfg = cfg;

		rcfg.threads = threads;
		if (engine_open(&s->ref, "cpu", &rcfg, err, sizeof(err)) != GPUIDX_ENGINE_OK)
			harness_fail("reference CPU engine: %s", err);
	}
	printf("engine under test: %s (%s, %s), reference: %s\n", engine, s->test.info.kind,
		   s->test.info.device_name, s->plain ? "plain sorted arrays" : "CPU engine");
	b->out_cap = UINT64_C(16) << 20;
	b->out_test = harness_alloc(b->out_cap * sizeof(uint32_t));
	b->out_ref = harness_alloc(b->out_cap * sizeof(uint32_t));

	check_cache(engine, 1);
	if (nranked > 0)
		check_ranked_errors(engine, 1);
	check_random(s, b, nqueries, max_len);
	if (nranked > 0)
		check_ranked(s, nranked, max_len);
	for (int i = 0; i < npacks; i++)
		check_pack(s, b, packs[i]);

	printf("total: %ld queries in %ld batches, %ld differences; statuses: ok %ld, invalid %ld, not cached %ld, "
		   "too large for the engine (left to the CPU) %ld\n",
		   s->queries, s->batches, s->differences, s->by_status[GPUIDX_ENGINE_OK],
		   s->by_status[GPUIDX_ENGINE_ERR_INVALID], s->by_status[GPUIDX_ENGINE_ERR_NOT_CACHED],
		   s->deferred);
	printf("engine under test: %.2f s (%u launches, %u rounds: %u merge, %u search); reference: %.2f s\n",
		   s->test_seconds, s->totals.launches, s->totals.rounds, s->totals.merge_rounds,
		   s->totals.search_rounds, s->ref_seconds);
	engine_close(&s->test);
	engine_close(&s->ref);
	free(b->out_test);
	free(b->out_ref);
	free(b);
	if (s->differences > 0 || unit_failures > 0)
	{
		printf("FAILED: %ld differences, %ld failed checks\n", s->differences, unit_failures);
		free(s);
		return 1;
	}
	free(s);
	return unit_report("engine_check");
}
