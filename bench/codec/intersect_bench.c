/*
 * intersect_bench.c
 *	  Intersection on the CPU: synthetic pairs over a range of length ratios
 *	  (where skipping starts to beat merging, and how few blocks it reads),
 *	  and the corpora's real queries through cpu_intersect_k.  Every result
 *	  is checked against a plain sorted-array intersection first.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

/* synthetic pairs: a long list of density 1/4, short lists half inside it */
#define SYN_UNIVERSE	6000000
#define SYN_LONG		1500000
#define SYN_SEED		UINT64_C(0x9E3779B97F4A7C15)

static const uint32_t syn_ratios[SYN_NRATIOS] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 1000, 10000};

/* splitmix64: small, deterministic, good enough for sampling */
static uint64_t
rng_next(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static uint32_t
rng_below(uint64_t *state, uint32_t bound)
{
	return (uint32_t) (((rng_next(state) >> 32) * (uint64_t) bound) >> 32);
}

/*
 * k of the n values from[0..n) (or of 0..n-1 when from is NULL), sorted:
 * selection sampling keeps each in turn with probability (wanted / left).
 */
static void
sample_sorted(uint64_t *state, const uint32_t *from, uint32_t n, uint32_t k, uint32_t *out)
{
	uint32_t	taken = 0;

	for (uint32_t i = 0; i < n && taken < k; i++)
		if (rng_below(state, n - i) < k - taken)
			out[taken++] = from ? from[i] : i;
}

typedef struct pair_job
{
	const pl_view *a;
	const pl_view *b;
	uint32_t   *out;
	cpu_method	method;
} pair_job;

static void
run_pair(void *arg)
{
	pair_job   *job = arg;

	bench_sink += cpu_intersect_lists(job->a, job->b, job->out, job->method, 0, NULL);
}

static void
check_result(const char *what, const uint32_t *got, uint32_t ngot,
			 const uint32_t *want, uint32_t nwant)
{
	if (ngot != nwant || memcmp(got, want, (size_t) nwant * sizeof(uint32_t)) != 0)
		bench_fail("%s: %u results where the reference has %u, or other values",
				   what, ngot, nwant);
}

void
bench_synthetic(synth_result *res)
{
	uint64_t	state = SYN_SEED;
	uint32_t   *longv = bench_alloc(SYN_LONG * sizeof(uint32_t));
	uint32_t   *inside = bench_alloc(SYN_LONG * sizeof(uint32_t));
	uint32_t   *outside = bench_alloc(SYN_LONG * sizeof(uint32_t));
	uint32_t   *shortv = bench_alloc(2 * SYN_LONG * sizeof(uint32_t));
	uint32_t   *want = bench_alloc(SYN_LONG * sizeof(uint32_t));
	uint32_t   *out = bench_alloc(SYN_LONG * sizeof(uint32_t));
	bench_list	long_list;
	const bench_list *long_ptr = &long_list;
	bench_encoded long_enc;

	sample_sorted(&state, NULL, SYN_UNIVERSE, SYN_LONG, longv);
	long_list.n = SYN_LONG;
	long_list.docs = longv;
	bench_encode(&long_enc, GPUIDX_CODEC_EF, &long_ptr, 1);

	for (int r = 0; r < SYN_NRATIOS; r++)
	{
		uint32_t	nshort = SYN_LONG / syn_ratios[r];
		uint32_t	nin = nshort / 2;
		bench_list	short_list;
		const bench_list *short_ptr = &short_list;
		bench_encoded short_enc;
		uint32_t	nwant;
		char		what[64];

		/* half the short list from the long one, half anywhere (a quarter of those match too) */
		sample_sorted(&state, longv, SYN_LONG, nin, inside);
		sample_sorted(&state, NULL, SYN_UNIVERSE, nshort - nin, outside);
		short_list.n = cpu_merge_union(inside, nin, outside, nshort - nin, shortv);
		short_list.docs = shortv;
		bench_encode(&short_enc, GPUIDX_CODEC_EF, &short_ptr, 1);
		nwant = ref_intersect(shortv, short_list.n, longv, SYN_LONG, want);

		res[r].ratio = syn_ratios[r];
		res[r].nlong = SYN_LONG;
		res[r].nshort = short_list.n;
		res[r].nresults = nwant;
		res[r].auto_pick = cpu_pick_method(short_list.n, SYN_LONG);
		for (cpu_method m = CPU_METHOD_AUTO; m <= CPU_METHOD_SKIP; m++)
		{
			pair_job	job = {&short_enc.views[0], &long_enc.views[0], out, m};
			cpu_stats	stats;
			uint32_t	n;

			snprintf(what, sizeof(what), "synthetic ratio %u, method %d", syn_ratios[r], (int) m);
			check_result(what, out, cpu_intersect_lists(job.a, job.b, out, job.method, 0, NULL),
						 want, nwant);
			/* the long list's blocks alone: the array form counts only those */
			memset(&stats, 0, sizeof(stats));
			n = cpu_intersect_array_list(shortv, short_list.n, job.b, out, job.method, 0, &stats);
			check_result(what, out, n, want, nwant);
			res[r].touched[m] = (double) stats.blocks_touched / job.b->nblocks;
			res[r].seconds[m] = bench_time_per_call(run_pair, &job, 0.02, 7);
		}
		fprintf(stderr, "synthetic: ratio %u done\n", syn_ratios[r]);
		bench_encoded_free(&short_enc);
	}
	bench_encoded_free(&long_enc);
	free(longv);
	free(inside);
	free(outside);
	free(shortv);
	free(want);
	free(out);
}

/* first ratio from which skip beats merge at every larger ratio; -1 if none */
int
synth_crossover(const synth_result *res)
{
	int			first = -1;

	for (int r = SYN_NRATIOS - 1; r >= 0; r--)
	{
		if (res[r].seconds[CPU_METHOD_SKIP] >= res[r].seconds[CPU_METHOD_MERGE])
			break;
		first = r;
	}
	return first;
}

void
print_synthetic_table(FILE *out, const synth_result *res)
{
	int			cross = synth_crossover(res);

	fprintf(out, "## Synthetic intersections (EF, `cpu_intersect_lists`, one core)\n\n");
	fprintf(out, "Long list: %u postings drawn from [0, %u); short list: long/ratio postings, "
			"half drawn from the long list, half from the universe.  Time: median of 7 samples of "
			">= 20 ms.  Blocks touched: share of the long list's EF blocks decoded "
			"(`cpu_intersect_array_list` stats).\n\n", SYN_LONG, SYN_UNIVERSE);
	fprintf(out, "| ratio | long | short | matches | merge µs | skip µs | auto µs (picks) | faster | "
			"merge: long blocks touched | skip: long blocks touched |\n");
	fprintf(out, "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
	for (int r = 0; r < SYN_NRATIOS; r++)
	{
		const synth_result *s = &res[r];

		fprintf(out, "| %u | %u | %u | %u | %.1f | %.1f | %.1f (%s) | %s | %.2f%% | %.2f%% |\n",
				s->ratio, s->nlong, s->nshort, s->nresults,
				s->seconds[CPU_METHOD_MERGE] * 1e6, s->seconds[CPU_METHOD_SKIP] * 1e6,
				s->seconds[CPU_METHOD_AUTO] * 1e6,
				s->auto_pick == CPU_METHOD_SKIP ? "skip" : "merge",
				s->seconds[CPU_METHOD_SKIP] < s->seconds[CPU_METHOD_MERGE] ? "skip" : "merge",
				100 * s->touched[CPU_METHOD_MERGE], 100 * s->touched[CPU_METHOD_SKIP]);
	}
	if (cross < 0)
		fprintf(out, "\nCrossover: skip never beats merge at the largest ratios measured.\n\n");
	else if (cross == 0)
		fprintf(out, "\nCrossover: skip beats merge at every ratio measured (from %u).\n\n",
				res[0].ratio);
	else
		fprintf(out, "\nCrossover: skip beats merge from ratio %u on (merge still wins at %u); "
				"`CPU_SKIP_RATIO_DEFAULT` is %d.\n\n",
				res[cross].ratio, res[cross - 1].ratio, CPU_SKIP_RATIO_DEFAULT);
}

const uint32_t sweep_ratios[NUM_SWEEP_RATIOS] = {4, 8, 16, 32, 64, 128, 256, 1024};

typedef struct query_job
{
	const bench_corpus *corpus;
	const bench_encoded *ef;
	const uint32_t *run;		/* indexes of the queries run */
	uint32_t	nrun;
	const pl_view **lists;		/* room for the most terms of a query */
	uint32_t   *out;
	cpu_method	method;
	uint32_t	skip_ratio;		/* nonzero: AUTO's rule at this ratio instead */
	cpu_stats  *stats;			/* NULL while timing */
} query_job;

static cpu_method
method_at_ratio(uint64_t short_len, uint64_t long_len, uint32_t ratio)
{
	return long_len >= short_len * ratio ? CPU_METHOD_SKIP : CPU_METHOD_MERGE;
}

/*
 * cpu_intersect_k's shortest-first SvS with AUTO's choice made at another
 * skip ratio, through the same public pairwise calls: what a different
 * CPU_SKIP_RATIO_DEFAULT would cost, without rebuilding the library.
 */
static int
cmp_view_count(const void *a, const void *b)
{
	uint32_t	x = (*(const pl_view *const *) a)->count;
	uint32_t	y = (*(const pl_view *const *) b)->count;

	return (x > y) - (x < y);
}

static uint32_t
intersect_k_at_ratio(const pl_view **lists, int k, uint32_t *out, uint32_t ratio)
{
	uint32_t	n;

	qsort(lists, (size_t) k, sizeof(lists[0]), cmp_view_count);
	n = cpu_intersect_lists(lists[0], lists[1], out,
							method_at_ratio(lists[0]->count, lists[1]->count, ratio), 0, NULL);
	for (int i = 2; i < k && n > 0; i++)
		n = cpu_intersect_array_list(out, n, lists[i], out,
									 method_at_ratio(n, lists[i]->count, ratio), 0, NULL);
	return n;
}

static uint32_t
run_query(query_job *job, const bench_query *q)
{
	for (uint32_t t = 0; t < q->nterms; t++)
		job->lists[t] = &job->ef->views[q->terms[t]];
	if (job->skip_ratio != 0)
		return intersect_k_at_ratio(job->lists, (int) q->nterms, job->out, job->skip_ratio);
	return cpu_intersect_k(job->lists, (int) q->nterms, job->out, job->method, job->stats);
}

static void
run_all_queries(void *arg)
{
	query_job  *job = arg;

	for (uint32_t i = 0; i < job->nrun; i++)
		bench_sink += run_query(job, &job->corpus->queries[job->run[i]]);
}

/*
 * The query's result from the source arrays, shortest list first, through
 * the buffers a and b; returns the one that holds it.
 */
static const uint32_t *
reference_query(const bench_corpus *c, const bench_query *q, uint32_t *a, uint32_t *b,
				uint32_t *nresult)
{
	uint32_t	first = 0;
	uint32_t	n;

	for (uint32_t t = 1; t < q->nterms; t++)
		if (c->lists[q->terms[t]].n < c->lists[q->terms[first]].n)
			first = t;
	n = c->lists[q->terms[first]].n;
	memcpy(a, c->lists[q->terms[first]].docs, (size_t) n * sizeof(uint32_t));
	for (uint32_t t = 0; t < q->nterms && n > 0; t++)
	{
		const bench_list *l = &c->lists[q->terms[t]];
		uint32_t   *swap;

		if (t == first)
			continue;
		n = ref_intersect(a, n, l->docs, l->n, b);
		swap = a;
		a = b;
		b = swap;
	}
	*nresult = n;
	return a;
}

/* run every query once and check it; returns the number of results */
static uint64_t
check_queries(query_job *job, uint32_t *bufa, uint32_t *bufb)
{
	const bench_corpus *c = job->corpus;
	uint64_t	nresults = 0;

	for (uint32_t i = 0; i < job->nrun; i++)
	{
		const bench_query *q = &c->queries[job->run[i]];
		uint32_t	n = run_query(job, q);
		uint32_t	nwant;
		const uint32_t *want = reference_query(c, q, bufa, bufb, &nwant);
		char		what[96];

		snprintf(what, sizeof(what), "%s query %u, method %d, skip ratio %u", c->name, q->id,
				 (int) job->method, job->skip_ratio);
		check_result(what, job->out, n, want, nwant);
		nresults += n;
	}
	return nresults;
}

void
bench_real_queries(const bench_corpus *c, const bench_encoded *ef, query_result *res)
{
	uint32_t   *run = bench_alloc(((size_t) c->nqueries + 1) * sizeof(uint32_t));
	uint32_t   *bufa = bench_alloc((size_t) c->max_list * sizeof(uint32_t));
	uint32_t   *bufb = bench_alloc((size_t) c->max_list * sizeof(uint32_t));
	uint32_t	max_terms = 1;
	query_job	job;

	memset(res, 0, sizeof(*res));
	for (uint32_t i = 0; i < c->nqueries; i++)
	{
		const bench_query *q = &c->queries[i];

		if (q->nlexemes < 2)
			res->nsingle++;
		else if (q->nterms < q->nlexemes)
			res->nmissing++;
		else
		{
			run[res->nrun++] = i;
			res->nlists += q->nterms;
			if (q->nterms > max_terms)
				max_terms = q->nterms;
		}
	}
	job.corpus = c;
	job.ef = ef;
	job.run = run;
	job.nrun = res->nrun;
	job.lists = bench_alloc(max_terms * sizeof(pl_view *));
	job.out = bench_alloc((size_t) c->max_list * sizeof(uint32_t));

	job.skip_ratio = 0;
	for (cpu_method m = CPU_METHOD_AUTO; m <= CPU_METHOD_SKIP; m++)
	{
		cpu_stats	stats;

		memset(&stats, 0, sizeof(stats));
		job.method = m;
		job.stats = &stats;
		res->nresults = check_queries(&job, bufa, bufb);
		res->touched[m] = stats.blocks_total ? (double) stats.blocks_touched / stats.blocks_total : 0;
		if (m == CPU_METHOD_AUTO)
		{
			res->rounds_skip = stats.rounds_skip;
			res->rounds_merge = stats.rounds_merge;
		}
		job.stats = NULL;
		res->seconds[m] = res->nrun ? bench_time_per_call(run_all_queries, &job, 0.2, 5) : 0;
	}
	/* real skewed pairs: the shortest list against each list 1000+ times longer */
	for (uint32_t i = 0; i < res->nrun; i++)
	{
		const bench_query *q = &c->queries[run[i]];
		const bench_list *shortest = &c->lists[q->terms[0]];

		for (uint32_t t = 1; t < q->nterms; t++)
			if (c->lists[q->terms[t]].n < shortest->n)
				shortest = &c->lists[q->terms[t]];
		for (uint32_t t = 0; t < q->nterms; t++)
		{
			const pl_view *other = &ef->views[q->terms[t]];
			cpu_stats	stats;

			if ((uint64_t) other->count < (uint64_t) shortest->n * 1000)
				continue;
			memset(&stats, 0, sizeof(stats));
			bench_sink += cpu_intersect_array_list(shortest->docs, shortest->n, other, job.out,
												   CPU_METHOD_SKIP, 0, &stats);
			res->skew_rounds++;
			res->skew_touched += stats.blocks_touched;
			res->skew_blocks += other->nblocks;
		}
	}
	for (int r = 0; r < NUM_SWEEP_RATIOS; r++)
	{
		job.skip_ratio = sweep_ratios[r];
		check_queries(&job, bufa, bufb);
		res->sweep_seconds[r] = res->nrun ? bench_time_per_call(run_all_queries, &job, 0.2, 5) : 0;
	}
	free(run);
	free(bufa);
	free(bufb);
	free(job.lists);
	free(job.out);
}
