/*
 * test_wand.c
 *	  Block-max WAND top-k (src/rank/wand.c) against scoring every doc:
 *	  random segments fed in sequence into one heap, disjunctive and
 *	  conjunctive, with filters, dead docs and heavy score ties, compared
 *	  bit for bit; the callbacks check what they are called for, the
 *	  loader that no block is decoded twice; and the bounds must prune.
 */
#include "unit.h"
#include "../../src/rank/wand.h"

#include <math.h>
#include <stdbool.h>

#define MAX_TERMS		6
#define MAX_SEGMENTS	4

typedef struct test_list
{
	gpx_rank_list pub;
	uint32_t   *docs;
	uint8_t    *tfs;
	uint32_t   *block_last;
	uint8_t    *block_max_tf;
	uint8_t    *block_min_dlcode;
	uint32_t   *loads;			/* per block, in the current run */
	uint32_t	garbage_below;	/* not 0: load returns random docs below it */
} test_list;

typedef struct test_segment
{
	uint32_t	ndocs;
	int			nterms;
	test_list  *lists[MAX_TERMS];	/* NULL: the term is not in the segment */
	const gpx_rank_list *pub[MAX_TERMS];
	uint8_t    *tf;				/* [doc * nterms + term] */
	uint32_t   *dl;
	bool	   *dead;			/* NULL: all live */
	uint64_t   *key;
	bool		has_filter;
	uint32_t   *filter;
	uint32_t	nfilter;
	bool	   *in_filter;

	/* the run in progress, for the callbacks' checks */
	bool		checking;
	const gpx_rank_query *q;
	gpx_topk   *h;
	uint8_t    *scored;
	uint32_t	last_live;
	uint64_t	ndoclen;
	uint64_t	nkey;
} test_segment;

static uint32_t
rand_range(uint32_t lo, uint32_t hi)
{
	return lo + unit_rand_below((uint64_t) hi - lo + 1);
}

static double
rand_unit(void)
{
	return (double) (unit_rand64() >> 11) / 9007199254740992.0;
}

/* ------------------------------------------------------------------------
 * Segments
 */

static bool
seg_matches(const test_segment *s, uint32_t doc, bool conjunctive)
{
	int			have = 0;

	for (int t = 0; t < s->nterms; t++)
		have += s->tf[(size_t) doc * s->nterms + t] > 0;
	return conjunctive ? have == s->nterms : have > 0;
}

/* a doc the run may score: matches, in the filter, live */
static bool
seg_eligible(const test_segment *s, uint32_t doc)
{
	return seg_matches(s, doc, s->q->conjunctive) &&
		(!s->has_filter || s->in_filter[doc]) &&
		(s->dead == NULL || !s->dead[doc]);
}

static double
seg_score(const test_segment *s, const gpx_rank_query *q, uint32_t doc)
{
	uint32_t	tf[MAX_TERMS];

	for (int t = 0; t < s->nterms; t++)
		tf[t] = s->tf[(size_t) doc * s->nterms + t];
	return gpx_rank_score(q, tf, s->dl[doc]);
}

static uint32_t
seg_doclen(void *arg, uint32_t doc)
{
	test_segment *s = arg;

	if (!s->checking)
		return doc < s->ndocs ? s->dl[doc] : 0;
	CHECK(doc < s->ndocs && seg_eligible(s, doc), "doclen of doc %u, no live match", doc);
	CHECK(s->dead == NULL || s->last_live == doc, "doclen of doc %u before is_live", doc);
	if (doc < s->ndocs)
		CHECK(s->scored[doc]++ == 0, "doc %u scored twice", doc);
	s->ndoclen++;
	return doc < s->ndocs ? s->dl[doc] : 0;
}

static bool
seg_is_live(void *arg, uint32_t doc)
{
	test_segment *s = arg;

	if (!s->checking)
		return doc < s->ndocs && !s->dead[doc];
	CHECK(doc < s->ndocs && seg_matches(s, doc, s->q->conjunctive) &&
		  (!s->has_filter || s->in_filter[doc]), "is_live of doc %u, no match", doc);
	s->last_live = doc;
	return doc < s->ndocs && !s->dead[doc];
}

static uint64_t
seg_key(void *arg, uint32_t doc)
{
	test_segment *s = arg;

	if (!s->checking)
		return doc;
	s->nkey++;
	CHECK(doc < s->ndocs && seg_eligible(s, doc), "key of doc %u, no live match", doc);
	if (doc < s->ndocs)
	{
		double		score = seg_score(s, s->q, doc);

		CHECK(score > 0.0 && score >= gpx_topk_threshold(s->h),
			  "key of doc %u, which cannot enter (%.17g)", doc, score);
		return s->key[doc];
	}
	return 0;
}

static uint32_t
list_load(void *arg, uint32_t block, uint32_t *docs, uint8_t *tfs)
{
	test_list  *l = arg;
	uint32_t	start = block * GPX_RANK_BLOCK;
	uint32_t	n;

	CHECK(block < l->pub.nblocks, "load of block %u of %u", block, l->pub.nblocks);
	if (block >= l->pub.nblocks)
		return 0;
	CHECK(l->loads[block]++ == 0, "block %u loaded twice", block);
	if (l->garbage_below > 0)
	{
		n = unit_rand_below(GPX_RANK_BLOCK + 1);
		for (uint32_t i = 0; i < n; i++)
		{
			docs[i] = unit_rand_below(l->garbage_below);
			tfs[i] = (uint8_t) unit_rand_below(GPX_MAX_TF + 1);
		}
		return n;
	}
	n = l->pub.n - start < GPX_RANK_BLOCK ? l->pub.n - start : GPX_RANK_BLOCK;
	memcpy(docs, l->docs + start, n * sizeof(uint32_t));
	memcpy(tfs, l->tfs + start, n);
	return n;
}

/* the postings of term t in s, with block maxima as the index keeps them */
static test_list *
list_build(const test_segment *s, int t)
{
	test_list  *l = unit_alloc(sizeof(test_list));
	uint32_t	n = 0;

	for (uint32_t d = 0; d < s->ndocs; d++)
		n += s->tf[(size_t) d * s->nterms + t] > 0;
	if (n == 0)
	{
		free(l);
		return NULL;
	}
	memset(l, 0, sizeof(*l));
	l->docs = unit_alloc(n * sizeof(uint32_t));
	l->tfs = unit_alloc(n);
	n = 0;
	for (uint32_t d = 0; d < s->ndocs; d++)
	{
		uint8_t		tf = s->tf[(size_t) d * s->nterms + t];

		if (tf > 0)
		{
			l->docs[n] = d;
			l->tfs[n++] = tf;
		}
	}
	l->pub.n = n;
	l->pub.nblocks = (n + GPX_RANK_BLOCK - 1) / GPX_RANK_BLOCK;
	l->block_last = unit_alloc(l->pub.nblocks * sizeof(uint32_t));
	l->block_max_tf = unit_alloc(l->pub.nblocks);
	l->block_min_dlcode = unit_alloc(l->pub.nblocks);
	l->loads = unit_alloc(l->pub.nblocks * sizeof(uint32_t));
	memset(l->loads, 0, l->pub.nblocks * sizeof(uint32_t));
	for (uint32_t b = 0; b < l->pub.nblocks; b++)
	{
		uint32_t	end = (b + 1) * GPX_RANK_BLOCK < n ? (b + 1) * GPX_RANK_BLOCK : n;
		uint8_t		max_tf = 0;
		uint32_t	min_dl = UINT32_MAX;

		for (uint32_t i = b * GPX_RANK_BLOCK; i < end; i++)
		{
			if (l->tfs[i] > max_tf)
				max_tf = l->tfs[i];
			if (s->dl[l->docs[i]] < min_dl)
				min_dl = s->dl[l->docs[i]];
		}
		l->block_last[b] = l->docs[end - 1];
		l->block_max_tf[b] = max_tf;
		l->block_min_dlcode[b] = (uint8_t) gpx_dl_code(min_dl);
	}
	l->pub.block_last = l->block_last;
	l->pub.block_max_tf = l->block_max_tf;
	l->pub.block_min_dlcode = l->block_min_dlcode;
	l->pub.load = list_load;
	l->pub.arg = l;
	return l;
}

static void
list_free(test_list *l)
{
	if (l == NULL)
		return;
	free(l->docs);
	free(l->tfs);
	free(l->block_last);
	free(l->block_max_tf);
	free(l->block_min_dlcode);
	free(l->loads);
	free(l);
}

/* the lists from the tfs and lengths (again, after a change by hand) */
static void
seg_rebuild_lists(test_segment *s)
{
	for (int t = 0; t < s->nterms; t++)
	{
		list_free(s->lists[t]);
		s->lists[t] = list_build(s, t);
		s->pub[t] = s->lists[t] ? &s->lists[t]->pub : NULL;
	}
}

/* how a query's segments are drawn */
typedef struct gen_params
{
	int			nterms;
	double		density[MAX_TERMS]; /* share of docs that have the term */
	bool		tf_ones;		/* every tf 1 */
	bool		few_lengths;	/* doc lengths from a handful of values */
	double		dead_share;
	double		filter_share;	/* < 0: no filter */
	double		absent_share;	/* chance a term is missing from a segment */
} gen_params;

static uint8_t
gen_tf(const gen_params *g)
{
	uint32_t	r = unit_rand_below(100);

	if (g->tf_ones || r < 70)
		return 1;
	if (r < 95)
		return (uint8_t) rand_range(2, 4);
	if (r < 99)
		return (uint8_t) rand_range(5, 20);
	return (uint8_t) rand_range(21, GPX_MAX_TF);
}

static uint32_t
gen_dl(const gen_params *g, const uint32_t *few)
{
	uint32_t	r = unit_rand_below(1000);

	if (g->few_lengths)
		return few[r % 3];
	if (r < 20)
		return 0;
	if (r < 30)
		return 1000000;
	if (r < 32)
		return rand_range(1000000, UINT32_MAX);
	return rand_range(1, 2000);
}

static void
seg_generate(test_segment *s, const gen_params *g, uint32_t ndocs)
{
	uint32_t	few[3];

	memset(s, 0, sizeof(*s));
	s->ndocs = ndocs;
	s->nterms = g->nterms;
	s->tf = unit_alloc((size_t) ndocs * g->nterms);
	s->dl = unit_alloc(ndocs * sizeof(uint32_t));
	s->key = unit_alloc(ndocs * sizeof(uint64_t));
	s->scored = unit_alloc(ndocs);
	s->in_filter = unit_alloc(ndocs * sizeof(bool));
	s->filter = unit_alloc(ndocs * sizeof(uint32_t));
	few[0] = rand_range(0, 3);
	few[1] = rand_range(4, 60);
	few[2] = rand_range(61, 5000);

	for (int t = 0; t < g->nterms; t++)
	{
		bool		absent = rand_unit() < g->absent_share;

		for (uint32_t d = 0; d < ndocs; d++)
			s->tf[(size_t) d * g->nterms + t] =
				!absent && rand_unit() < g->density[t] ? gen_tf(g) : 0;
	}
	for (uint32_t d = 0; d < ndocs; d++)
		s->dl[d] = gen_dl(g, few);
	if (g->dead_share > 0.0)
	{
		s->dead = unit_alloc(ndocs * sizeof(bool));
		for (uint32_t d = 0; d < ndocs; d++)
			s->dead[d] = rand_unit() < g->dead_share;
	}
	s->has_filter = g->filter_share >= 0.0;
	for (uint32_t d = 0; d < ndocs; d++)
	{
		s->in_filter[d] = s->has_filter && rand_unit() < g->filter_share;
		if (s->in_filter[d])
			s->filter[s->nfilter++] = d;
	}
	seg_rebuild_lists(s);
}

static void
seg_free(test_segment *s)
{
	for (int t = 0; t < s->nterms; t++)
		list_free(s->lists[t]);
	free(s->tf);
	free(s->dl);
	free(s->dead);
	free(s->key);
	free(s->scored);
	free(s->in_filter);
	free(s->filter);
}

/* ------------------------------------------------------------------------
 * Running and checking
 */

typedef struct scored_doc
{
	double		score;
	uint64_t	key;
} scored_doc;

static int
cmp_best_first(const void *a, const void *b)
{
	const scored_doc *x = a;
	const scored_doc *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static void
query_for(gpx_rank_query *q, test_segment *s, const double *idf, bool conjunctive,
		  double k1, double b, double avgdl)
{
	memset(q, 0, sizeof(*q));
	q->nterms = s->nterms;
	q->idf = idf;
	q->lists = s->pub;
	q->conjunctive = conjunctive;
	q->filter = s->has_filter ? s->filter : NULL;
	q->nfilter = s->nfilter;
	q->k1 = k1;
	q->b = b;
	q->avgdl = avgdl;
	q->doclen = seg_doclen;
	q->is_live = s->dead ? seg_is_live : NULL;
	q->key = seg_key;
	q->arg = s;
}

/* one segment's run with every callback and the loader checked */
static void
run_checked(test_segment *s, const gpx_rank_query *q, gpx_topk *h, gpx_rank_stats *total,
			const char *what)
{
	size_t		scratch_size = gpx_rank_scratch_size(q->nterms);
	void	   *scratch = unit_alloc(scratch_size);
	gpx_rank_stats stats = {0};
	uint64_t	nblocks = 0;
	uint64_t	nloads = 0;

	/* nothing may be read from the scratch before it is written */
	memset(scratch, 0xA5, scratch_size);
	memset(s->scored, 0, s->ndocs);
	for (int t = 0; t < s->nterms; t++)
		if (s->lists[t])
			memset(s->lists[t]->loads, 0, s->lists[t]->pub.nblocks * sizeof(uint32_t));
	s->checking = true;
	s->q = q;
	s->h = h;
	s->ndoclen = 0;
	s->last_live = UINT32_MAX;

	gpx_rank_run(q, h, scratch, &stats);

	for (int t = 0; t < s->nterms; t++)
		if (s->lists[t])
		{
			nblocks += s->lists[t]->pub.nblocks;
			for (uint32_t b = 0; b < s->lists[t]->pub.nblocks; b++)
				nloads += s->lists[t]->loads[b];
		}
	CHECK(stats.blocks_loaded == nloads, "%s: %llu loads counted, %llu done", what,
		  (unsigned long long) stats.blocks_loaded, (unsigned long long) nloads);
	CHECK(stats.blocks_loaded + stats.blocks_skipped == nblocks, "%s: %llu + %llu blocks of %llu",
		  what, (unsigned long long) stats.blocks_loaded,
		  (unsigned long long) stats.blocks_skipped, (unsigned long long) nblocks);
	CHECK(stats.docs_scored == s->ndoclen && stats.docs_scored <= stats.candidates,
		  "%s: scored %llu, doclen %llu, candidates %llu", what,
		  (unsigned long long) stats.docs_scored, (unsigned long long) s->ndoclen,
		  (unsigned long long) stats.candidates);
	total->candidates += stats.candidates;
	total->docs_scored += stats.docs_scored;
	total->blocks_loaded += stats.blocks_loaded;
	total->blocks_skipped += stats.blocks_skipped;
	total->steps += stats.steps;
	free(scratch);
}

/*
 * The top k of the segments' live matches by brute force against one heap
 * fed segment after segment; returns the matches there were.
 */
static uint32_t
check_query(test_segment *segs, int nseg, const double *idf, bool conjunctive, double k1,
			double b, double avgdl, uint32_t k, gpx_rank_stats *total, const char *what)
{
	uint64_t	nall = 0;
	uint32_t	nref = 0;
	scored_doc *ref;
	double	   *heap_score = unit_alloc((k ? k : 1) * sizeof(double));
	uint64_t   *heap_key = unit_alloc((k ? k : 1) * sizeof(uint64_t));
	gpx_topk	h;
	uint32_t	nwant;
	bool		same = true;

	for (int i = 0; i < nseg; i++)
		nall += segs[i].ndocs;
	ref = unit_alloc(nall * sizeof(scored_doc));
	for (int i = 0; i < nseg; i++)
	{
		test_segment *s = &segs[i];
		gpx_rank_query q;

		query_for(&q, s, idf, conjunctive, k1, b, avgdl);
		s->q = &q;
		for (uint32_t d = 0; d < s->ndocs; d++)
		{
			double		score;

			if (!seg_eligible(s, d))
				continue;
			score = seg_score(s, &q, d);
			if (score > 0.0)
			{
				ref[nref].score = score;
				ref[nref++].key = s->key[d];
			}
		}
	}
	qsort(ref, nref, sizeof(scored_doc), cmp_best_first);

	gpx_topk_init(&h, k, heap_score, heap_key);
	for (int i = 0; i < nseg; i++)
	{
		gpx_rank_query q;

		query_for(&q, &segs[i], idf, conjunctive, k1, b, avgdl);
		run_checked(&segs[i], &q, &h, total, what);
	}
	gpx_topk_sort(&h);

	nwant = nref < k ? nref : k;
	CHECK(h.n == nwant, "%s: %u results, want %u", what, h.n, nwant);
	for (uint32_t i = 0; i < nwant && i < h.n && same; i++)
	{
		same = memcmp(&h.score[i], &ref[i].score, sizeof(double)) == 0 && h.key[i] == ref[i].key;
		CHECK(same, "%s: result %u is (%.17g, %llu), want (%.17g, %llu)", what, i,
			  h.score[i], (unsigned long long) h.key[i], ref[i].score,
			  (unsigned long long) ref[i].key);
	}
	free(ref);
	free(heap_score);
	free(heap_key);
	return nref;
}

/* idf over all the segments, as the index would weigh the terms */
static void
global_idf(const test_segment *segs, int nseg, int nterms, double *idf)
{
	double		ndocs = 0;

	for (int i = 0; i < nseg; i++)
		ndocs += segs[i].ndocs;
	for (int t = 0; t < nterms; t++)
	{
		double		df = 0;

		for (int i = 0; i < nseg; i++)
			df += segs[i].lists[t] ? segs[i].lists[t]->pub.n : 0;
		idf[t] = gpx_bm25_idf(ndocs, df);
	}
}

/* keys across all segments: a permutation, or the doc ids in segment order */
static void
assign_keys(test_segment *segs, int nseg, bool permuted)
{
	uint64_t	nall = 0;
	uint64_t   *perm;
	uint64_t	at = 0;

	for (int i = 0; i < nseg; i++)
		nall += segs[i].ndocs;
	perm = unit_alloc(nall * sizeof(uint64_t));
	for (uint64_t i = 0; i < nall; i++)
		perm[i] = i;
	if (permuted)
		for (uint64_t i = nall; i > 1; i--)
		{
			uint64_t	j = unit_rand64() % i;
			uint64_t	x = perm[i - 1];

			perm[i - 1] = perm[j];
			perm[j] = x;
		}
	for (int i = 0; i < nseg; i++)
		for (uint32_t d = 0; d < segs[i].ndocs; d++)
			segs[i].key[d] = perm[at++];
	free(perm);
}

/* one random query over random segments */
static void
random_case(uint64_t seed, gpx_rank_stats *total)
{
	static const double densities[] = {0.95, 0.6, 0.2, 0.03, 0.003};
	static const double filter_shares[] = {0.5, 0.05, 0.002, 0.0};
	static const uint32_t ks[] = {0, 1, 10, 100, 1000};
	gen_params g;
	test_segment segs[MAX_SEGMENTS];
	int			nseg;
	uint32_t	size_class;
	uint32_t	k;
	double		idf[MAX_TERMS];
	double		k1 = GPX_BM25_K1_DEFAULT;
	double		b = GPX_BM25_B_DEFAULT;
	double		avgdl = 0;
	uint64_t	nall = 0;
	bool		conjunctive;
	uint32_t	nmatch;
	char		what[64];

	unit_rng_state = seed;
	memset(&g, 0, sizeof(g));
	g.nterms = (int) rand_range(1, MAX_TERMS);
	nseg = (int) rand_range(1, MAX_SEGMENTS);
	size_class = unit_rand_below(100);
	for (int t = 0; t < g.nterms; t++)
		g.density[t] = densities[unit_rand_below(5)];
	g.tf_ones = unit_rand_below(10) < 3;
	g.few_lengths = unit_rand_below(10) < 4;
	g.dead_share = unit_rand_below(2) ? 0.0 : (unit_rand_below(2) ? 0.1 : 0.6);
	g.filter_share = unit_rand_below(10) < 6 ? -1.0 : filter_shares[unit_rand_below(4)];
	g.absent_share = unit_rand_below(10) < 2 ? 0.3 : 0.0;
	conjunctive = unit_rand_below(3) == 0;

	for (int i = 0; i < nseg; i++)
	{
		uint32_t	ndocs = size_class < 25 ? rand_range(1, 64) :
			size_class < 80 ? rand_range(65, 4000) :
			size_class < 97 ? rand_range(4001, 20000) : rand_range(60000, 120000);

		/* a rare term stays rare but present in a small segment */
		seg_generate(&segs[i], &g, ndocs);
		nall += ndocs;
	}
	for (int i = 0; i < nseg; i++)
		for (uint32_t d = 0; d < segs[i].ndocs; d++)
			avgdl += segs[i].dl[d];
	avgdl /= (double) nall;
	switch (unit_rand_below(10))
	{
		case 0:
			avgdl = 0.0;		/* no lengths known: ratio 1 */
			break;
		case 1:
			k1 = 0.3 + 2.7 * rand_unit();
			b = unit_rand_below(3) == 0 ? 0.0 : unit_rand_below(2) ? 1.0 : rand_unit();
			break;
		default:
			break;
	}
	assign_keys(segs, nseg, unit_rand_below(10) < 7);
	global_idf(segs, nseg, g.nterms, idf);
	/* equal weights and equal lengths: scores tie, keys decide */
	if (g.tf_ones && g.few_lengths && unit_rand_below(2))
		for (int t = 0; t < g.nterms; t++)
			idf[t] = 1.5;

	k = ks[unit_rand_below(5)];
	snprintf(what, sizeof(what), "seed %llu k %u", (unsigned long long) seed, k);
	nmatch = check_query(segs, nseg, idf, conjunctive, k1, b, avgdl, k, total, what);
	/* and with room for every match */
	snprintf(what, sizeof(what), "seed %llu all", (unsigned long long) seed);
	check_query(segs, nseg, idf, conjunctive, k1, b, avgdl, nmatch + 3, total, what);

	for (int i = 0; i < nseg; i++)
		seg_free(&segs[i]);
}

/* ------------------------------------------------------------------------
 * Directed cases
 */

/* two terms of a generated segment, densities as given */
static void
two_terms(test_segment *s, uint32_t ndocs, double dense, double rare)
{
	gen_params	g;

	memset(&g, 0, sizeof(g));
	g.nterms = 2;
	g.density[0] = dense;
	g.density[1] = rare;
	g.filter_share = -1.0;
	seg_generate(s, &g, ndocs);
}

/* a frequent and a rare term, k small: the frequent list's blocks are skipped */
static void
test_bounds_prune(void)
{
	test_segment s;
	double		idf[2];

	unit_rng_state = 77;
	two_terms(&s, 100000, 0.9, 0.0005);
	assign_keys(&s, 1, true);
	global_idf(&s, 1, 2, idf);
	for (int conj = 0; conj < 2; conj++)
	{
		gpx_rank_stats st = {0};

		check_query(&s, 1, idf, conj, 1.2, 0.75, 500.0, 10, &st, conj ? "prune and" : "prune or");
		CHECK(st.blocks_skipped > st.blocks_loaded,
			  "%s: %llu blocks loaded, only %llu skipped", conj ? "and" : "or",
			  (unsigned long long) st.blocks_loaded, (unsigned long long) st.blocks_skipped);
		CHECK(st.docs_scored < 2000, "%s: %llu docs scored", conj ? "and" : "or",
			  (unsigned long long) st.docs_scored);
		printf("test_wand: frequent %s rare, k 10: %llu blocks loaded, %llu skipped, %llu docs scored, %llu steps\n",
			   conj ? "and" : "or", (unsigned long long) st.blocks_loaded,
			   (unsigned long long) st.blocks_skipped, (unsigned long long) st.docs_scored,
			   (unsigned long long) st.steps);
	}
	seg_free(&s);
}

/*
 * A rare term's short docs early and its long docs one in a hundred after,
 * a frequent term in nine docs of ten: once the early docs set the
 * threshold, no later doc reaches it, and over each of the rare term's
 * later blocks (their bounds, with the frequent list's, fall short) the
 * walk jumps the frequent list's blocks rather than stepping from block
 * end to block end.
 */
static void
test_frequent_list_jumped(void)
{
	test_segment s;
	double		idf[2];
	gpx_rank_stats st = {0};

	unit_rng_state = 79;
	two_terms(&s, 100000, 0.9, 0.0);
	for (uint32_t d = 0; d < s.ndocs; d++)
	{
		bool		early = d < 100 && d % 5 == 0;
		bool		late = d % 100 == 50;

		s.tf[d * 2] = s.tf[d * 2] > 0 ? 1 : 0;
		s.tf[d * 2 + 1] = early || late ? 1 : 0;
		s.dl[d] = early ? 10 : late ? 5000 : 100;
	}
	seg_rebuild_lists(&s);
	assign_keys(&s, 1, true);
	global_idf(&s, 1, 2, idf);
	check_query(&s, 1, idf, false, 1.2, 0.75, 100.0, 5, &st, "frequent list jumped");
	CHECK(st.steps < 250, "frequent list jumped: %llu steps over %llu blocks", (unsigned long long) st.steps,
		  (unsigned long long) (st.blocks_loaded + st.blocks_skipped));
	printf("test_wand: frequent list between rare docs: %llu blocks loaded, %llu skipped, %llu steps\n",
		   (unsigned long long) st.blocks_loaded, (unsigned long long) st.blocks_skipped,
		   (unsigned long long) st.steps);
	seg_free(&s);
}

/*
 * Two frequent terms, tf 1 but in a few early docs: each list's bound
 * alone reaches the threshold those docs set, so only block bounds prune.
 */
static void
test_block_bounds_prune(void)
{
	test_segment s;
	double		idf[2] = {1.0, 1.0};
	gpx_rank_stats st = {0};

	unit_rng_state = 78;
	two_terms(&s, 100000, 0.5, 0.5);
	for (uint32_t d = 0; d < s.ndocs; d++)
	{
		for (int t = 0; t < 2; t++)
			if (s.tf[d * 2 + t] > 0)
				s.tf[d * 2 + t] = d < 2000 && d % 97 == 0 ? 50 : 1;
		s.dl[d] = 100;
	}
	seg_rebuild_lists(&s);
	assign_keys(&s, 1, true);
	check_query(&s, 1, idf, false, 1.2, 0.75, 100.0, 5, &st, "block bounds");
	CHECK(st.blocks_skipped > 10 * st.blocks_loaded, "block bounds: %llu loaded, %llu skipped",
		  (unsigned long long) st.blocks_loaded, (unsigned long long) st.blocks_skipped);
	printf("test_wand: two frequent terms, k 5: %llu blocks loaded, %llu skipped, %llu docs scored\n",
		   (unsigned long long) st.blocks_loaded, (unsigned long long) st.blocks_skipped,
		   (unsigned long long) st.docs_scored);
	seg_free(&s);
}

/*
 * The best docs right at block edges, behind blocks the bounds skip: a skip
 * must land on the first doc of the next block, not past it.
 */
static void
test_block_edges(void)
{
	static const uint32_t best[] = {0, 2 * GPX_RANK_BLOCK, 3 * GPX_RANK_BLOCK - 1, 5 * GPX_RANK_BLOCK};
	test_segment s;
	double		idf[2] = {1.0, 2.0};

	unit_rng_state = 80;
	two_terms(&s, 8 * GPX_RANK_BLOCK, 1.0, 1.0);
	for (uint32_t d = 0; d < s.ndocs; d++)
	{
		s.tf[d * 2] = s.tf[d * 2 + 1] = 1;
		s.dl[d] = 10;
		s.key[d] = s.ndocs - d;
	}
	for (int i = 0; i < 4; i++)
		s.tf[best[i] * 2] = s.tf[best[i] * 2 + 1] = 50;
	seg_rebuild_lists(&s);
	for (uint32_t k = 1; k <= 4; k++)
		for (int conj = 0; conj < 2; conj++)
		{
			gpx_rank_stats st = {0};

			check_query(&s, 1, idf, conj, 1.2, 0.75, 10.0, k, &st, conj ? "edges and" : "edges or");
			CHECK(st.blocks_skipped > 0, "block edges, k %u: nothing skipped", k);
		}
	seg_free(&s);
}

/*
 * A heap already full from an earlier segment above every bound of the next
 * one: that segment loads nothing and scores nothing.
 */
static void
test_threshold_carries(void)
{
	test_segment s;
	double		idf[2];
	double		score[3];
	uint64_t	key[3];
	gpx_topk	h;
	gpx_rank_query q;
	gpx_rank_stats st = {0};

	unit_rng_state = 79;
	two_terms(&s, 5000, 0.5, 0.1);
	assign_keys(&s, 1, false);
	global_idf(&s, 1, 2, idf);
	gpx_topk_init(&h, 3, score, key);
	for (int i = 0; i < 3; i++)
		gpx_topk_offer(&h, 1000.0, 1000000 + i);
	query_for(&q, &s, idf, false, 1.2, 0.75, 300.0);
	run_checked(&s, &q, &h, &st, "carried threshold");
	CHECK(st.blocks_loaded == 0 && st.docs_scored == 0 && s.nkey == 0,
		  "carried threshold: %llu loaded, %llu scored", (unsigned long long) st.blocks_loaded,
		  (unsigned long long) st.docs_scored);
	q.conjunctive = true;
	run_checked(&s, &q, &h, &st, "carried threshold and");
	CHECK(st.blocks_loaded == 0 && st.docs_scored == 0, "carried threshold and: %llu loaded",
		  (unsigned long long) st.blocks_loaded);
	seg_free(&s);
}

/*
 * A bound computed a rounding below the score it bounds: with k1 = 0.9 and
 * norm 0 (b = 1, dl = 0), tf 1 scores 1.9 and tf 3 1.8999999999999997.
 * Block 1's bound (max tf 3) is then below its doc 128 (tf 1), which ties
 * the threshold from block 0 and wins on its key: only the slack keeps it.
 */
static void
test_rounded_bound(void)
{
	test_segment s;
	gen_params	g;
	double		idf[1] = {1.0};
	gpx_rank_stats st = {0};

	memset(&g, 0, sizeof(g));
	g.nterms = 1;
	g.density[0] = 1.0;
	g.filter_share = -1.0;
	seg_generate(&s, &g, 2 * GPX_RANK_BLOCK);
	for (uint32_t d = 0; d < s.ndocs; d++)
	{
		s.tf[d] = d <= GPX_RANK_BLOCK ? 1 : 3;
		s.dl[d] = 0;
		s.key[d] = d == GPX_RANK_BLOCK ? 5 : 1000 + d;
	}
	seg_rebuild_lists(&s);
	check_query(&s, 1, idf, false, 0.9, 1.0, 10.0, 1, &st, "rounded bound");
	CHECK(gpx_bm25_term(1.0, 0.9, 3, 0.0) < gpx_bm25_term(1.0, 0.9, 1, 0.0),
		  "tf 3 no longer scores below tf 1: the case tests nothing");
	seg_free(&s);
}

/* postings that disagree with their metadata: the run ends, nothing overflows */
static void
test_damaged_lists(void)
{
	for (uint64_t seed = 1; seed <= 60; seed++)
	{
		gen_params	g;
		test_segment s;
		double		idf[MAX_TERMS];
		double		score[20];
		uint64_t	key[20];
		gpx_topk	h;
		gpx_rank_query q;
		void	   *scratch;

		unit_rng_state = 9000 + seed;
		memset(&g, 0, sizeof(g));
		g.nterms = (int) rand_range(1, 4);
		for (int t = 0; t < g.nterms; t++)
			g.density[t] = 0.3;
		g.filter_share = seed % 3 == 0 ? 0.2 : -1.0;
		g.dead_share = seed % 2 ? 0.2 : 0.0;
		seg_generate(&s, &g, rand_range(1, 3000));
		assign_keys(&s, 1, true);
		global_idf(&s, 1, g.nterms, idf);
		for (int t = 0; t < g.nterms; t++)
			if (s.lists[t])
			{
				s.lists[t]->garbage_below = s.ndocs * 2;
				if (seed % 4 == 0)
					for (uint32_t b = 0; b < s.lists[t]->pub.nblocks; b++)
						s.lists[t]->block_last[b] = unit_rand_below(s.ndocs * 2);
				/* a block end at the largest doc id: the walk must end, not wrap */
				if (seed % 7 == 0)
					s.lists[t]->block_last[unit_rand_below(s.lists[t]->pub.nblocks)] = UINT32_MAX;
			}
		query_for(&q, &s, idf, seed % 5 == 0, 1.2, 0.75, 100.0);
		gpx_topk_init(&h, (uint32_t) (seed % 20), score, key);
		scratch = unit_alloc(gpx_rank_scratch_size(q.nterms));
		s.checking = false;
		gpx_rank_run(&q, &h, scratch, NULL);
		CHECK(h.n <= h.k, "damaged seed %llu: %u results", (unsigned long long) seed, h.n);
		free(scratch);
		seg_free(&s);
	}
}

/* the score is the documented sum, term order, nothing else */
static void
test_score_formula(void)
{
	double		idf[4] = {0.3, 2.5, 7.25, 1.0};
	gpx_rank_query q;

	memset(&q, 0, sizeof(q));
	q.nterms = 4;
	q.idf = idf;
	q.k1 = 1.2;
	q.b = 0.75;
	q.avgdl = 37.5;
	for (int i = 0; i < 2000; i++)
	{
		uint32_t	tf[4];
		uint32_t	dl = unit_rand_below(5) ? rand_range(0, 3000) : unit_rand64() >> 32;
		double		norm = gpx_bm25_norm(q.k1, q.b, q.avgdl, dl);
		double		want = 0.0;
		double		got;

		for (int t = 0; t < 4; t++)
		{
			tf[t] = unit_rand_below(3) ? 0 : rand_range(1, GPX_MAX_TF);
			if (tf[t] > 0)
				want += idf[t] * (((double) tf[t] * (q.k1 + 1.0)) / ((double) tf[t] + norm));
		}
		got = gpx_rank_score(&q, tf, dl);
		CHECK(memcmp(&got, &want, sizeof(double)) == 0, "score %.17g, want %.17g", got, want);
	}
}

/* the heap alone: ties by key, k = 1, sorting */
static void
test_topk(void)
{
	double		score[4];
	uint64_t	key[4];
	gpx_topk	h;
	static const double want_score[4] = {3.0, 2.0, 2.0, 2.0};
	static const uint64_t want_key[4] = {9, 1, 4, 5};

	gpx_topk_init(&h, 4, score, key);
	CHECK(gpx_topk_threshold(&h) == -INFINITY, "threshold of an empty heap");
	CHECK(gpx_topk_offer(&h, 2.0, 5) && gpx_topk_offer(&h, 1.0, 0), "first offers");
	CHECK(gpx_topk_offer(&h, 2.0, 7) && gpx_topk_offer(&h, 3.0, 9), "offers until full");
	CHECK(gpx_topk_full(&h) && gpx_topk_threshold(&h) == 1.0, "full at 1.0");
	CHECK(gpx_topk_offer(&h, 2.0, 4), "beats 1.0");
	CHECK(!gpx_topk_offer(&h, 2.0, 8), "same score, larger key than the worst (7)");
	CHECK(gpx_topk_offer(&h, 2.0, 1), "same score, smaller key than the worst (7)");
	CHECK(!gpx_topk_offer(&h, 2.0, 5), "the same pair as the worst");
	gpx_topk_sort(&h);
	for (int i = 0; i < 4; i++)
		CHECK(score[i] == want_score[i] && key[i] == want_key[i], "sorted %d: (%g, %llu)", i,
			  score[i], (unsigned long long) key[i]);

	gpx_topk_init(&h, 0, score, key);
	CHECK(!gpx_topk_offer(&h, 5.0, 0) && gpx_topk_threshold(&h) == INFINITY, "k = 0");
}

/* the one-byte length floor: a monotone lower bound within 1/8 */
static void
test_dl_code(void)
{
	uint32_t	prev_code = 0;

	for (uint32_t dl = 0; dl < 200000; dl++)
	{
		uint32_t	code = gpx_dl_code(dl);
		uint32_t	floor_dl = gpx_dl_floor(code);

		CHECK(code <= 255 && code >= prev_code, "code of %u: %u after %u", dl, code, prev_code);
		CHECK(floor_dl <= dl && (uint64_t) floor_dl * 9 >= (uint64_t) dl * 8,
			  "floor of %u: %u", dl, floor_dl);
		prev_code = code;
	}
	for (int i = 0; i < 200000; i++)
	{
		uint32_t	a = (uint32_t) unit_rand64();
		uint32_t	b = i % 2 ? (uint32_t) unit_rand64() : a + unit_rand_below(1000);
		uint32_t	lo = a < b ? a : b;
		uint32_t	hi = a < b ? b : a;

		CHECK(gpx_dl_code(lo) <= gpx_dl_code(hi), "code(%u) > code(%u)", lo, hi);
		CHECK(gpx_dl_floor(gpx_dl_code(a)) <= a && gpx_dl_code(a) <= 255, "floor of %u", a);
	}
	CHECK(gpx_dl_floor(gpx_dl_code(UINT32_MAX)) <= UINT32_MAX && gpx_dl_code(UINT32_MAX) <= 255,
		  "code of UINT32_MAX");
	for (uint32_t c = 0; c <= gpx_dl_code(UINT32_MAX); c++)
	{
		CHECK(gpx_dl_code(gpx_dl_floor(c)) == c, "code %u does not round-trip", c);
		CHECK(c == 0 || gpx_dl_floor(c) > gpx_dl_floor(c - 1), "floor not increasing at %u", c);
	}
}

int
main(int argc, char **argv)
{
	int			ncases = argc > 1 ? atoi(argv[1]) : 800;
	gpx_rank_stats total = {0};

	test_dl_code();
	test_topk();
	test_score_formula();
	test_bounds_prune();
	test_frequent_list_jumped();
	test_block_bounds_prune();
	test_threshold_carries();
	test_rounded_bound();
	test_block_edges();
	test_damaged_lists();
	for (int i = 0; i < ncases; i++)
		random_case(1000 + i, &total);
	printf("test_wand: %d random queries: %llu candidates, %llu scored, %llu blocks loaded, "
		   "%llu skipped\n", ncases, (unsigned long long) total.candidates,
		   (unsigned long long) total.docs_scored, (unsigned long long) total.blocks_loaded,
		   (unsigned long long) total.blocks_skipped);
	return unit_report("test_wand");
}
