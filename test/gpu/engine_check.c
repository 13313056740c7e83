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
#include "codec/codec.h"
#include "cpu/cpu.h"
#include "engine/engine.h"

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

/* the plain reference: sorted arrays, shortest first */
static void
plain_answer(gpuidx_query *q, const uint32_t *const *values, const uint32_t *counts)
{
	uint32_t	order[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	n;
	uint32_t	t0 = 0;

	q->status = GPUIDX_ENGINE_OK;
	for (uint32_t i = 0; i < q->nterms; i++)
	{
		uint32_t	j = i;

		while (j > 0 && counts[order[j - 1]] > counts[i])
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	if (q->initial != NULL && q->nterms == 0)
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
	for (uint32_t t = t0; t < q->nterms; t++)
		n = cpu_merge_intersect(q->out, n, values[order[t]], counts[order[t]], q->out, UINT32_MAX);
	q->out_count = n;
	q->total = n;
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
				fprintf(stderr, "DIFFERENCE %s, query %u of %u: status %d vs %d, count %u vs %u, %u terms%s\n",
						what, i, b->n, x->status, y->status, x->out_count, y->out_count, x->nterms,
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
	bound = UINT32_MAX;
	for (uint32_t t = 0; t < k; t++)
		bound = b->counts[i][t] < bound ? b->counts[i][t] : bound;
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
		bound = n < bound ? n : bound;
		if (unit_rand_below(3) == 0)
			q->nterms = 0;		/* the initial set alone */
		if (q->nterms == 0)
			bound = n;
	}
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
			uint32_t	bound = UINT32_MAX;
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
				bound = p.counts[li] < bound ? p.counts[li] : bound;
			}
			if (!batch_out(b, bound, &to, &ro))
			{
				if (b->n == 0)
					harness_fail("%s: query %u needs more output room than a batch has", p.name, qi);
				run_and_compare(s, b, p.name);
				qi--;
				continue;
			}
			memset(q, 0, sizeof(*q));
			q->terms = b->terms[i];
			q->nterms = k;
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

int
main(int argc, char **argv)
{
	const char *engine = "cpu";
	const char *reference = "cpu";
	long		nqueries = 100000;
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
		if (skip_no_device && st == GPUIDX_ENGINE_ERR_NO_DEVICE)
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
	check_random(s, b, nqueries, max_len);
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
