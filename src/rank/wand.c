/*
 * wand.c
 *	  Block-max WAND (Ding and Suel, 2011) over one segment's posting lists,
 *	  a leapfrog join with block bounds for conjunctive queries, and the
 *	  top-k heap they fill.
 *
 * A cursor knows its block from the block metadata alone and holds either
 * its current posting (exact) or only a lower bound of it: moving past
 * blocks costs no decoding, and a block is loaded only when a doc in it
 * survived every bound.  Each block is loaded at most once per run.
 */
#include "wand.h"

#include <math.h>
#include <string.h>

/* a cursor past its last posting, and a filter past its last doc */
#define RANK_END UINT32_MAX

/*
 * Bounds are summed in cursor order from per-block maxima, scores in term
 * order from the exact tf and dl: each bound term is above its score term
 * in exact arithmetic, but the rounding of the division and of sums taken
 * in another order can put the computed bound a few ulps (relative 1e-16
 * per term) below the computed score.  A doc whose score equals the
 * threshold may still enter on its key, so a bound prunes only when it is
 * below the threshold by far more than any such rounding.
 */
#define RANK_BOUND_SLACK 1e-9

typedef struct rank_cursor
{
	const gpx_rank_list *list;
	int			term;			/* index in the query: the scoring order */
	double		idf;
	double		list_bound;		/* largest block bound of the list */
	uint32_t	doc;			/* the current posting if exact, else a lower
								 * bound of it; RANK_END when done */
	bool		exact;
	uint32_t	block;			/* first block whose last doc >= doc */
	bool		block_loaded;	/* docs and tfs hold that block */
	uint32_t	pos;			/* docs[pos] == doc when exact; a place to
								 * search from when not */
	uint32_t	count;
	bool		past_block;		/* prune_resume: taken past its block's end */
	uint32_t	bound_block;	/* block that block_bound and block_norm are of */
	double		block_bound;
	double		block_norm;		/* gpx_bm25_norm of the block's shortest doc */
	uint32_t	docs[GPX_RANK_BLOCK];
	uint8_t		tfs[GPX_RANK_BLOCK];
} rank_cursor;

typedef struct rank_run_state
{
	const gpx_rank_query *q;
	gpx_topk   *h;
	rank_cursor **order;		/* the present lists' cursors */
	int			ncursors;
	uint32_t   *tf;				/* [nterms], zero between docs */
	uint32_t	filter_pos;		/* filter docs before it are behind us */
	gpx_rank_stats stats;
} rank_run_state;

/* ------------------------------------------------------------------------
 * The top-k heap
 */

/* (sa, ka) ranks below (sb, kb) */
static inline bool
topk_worse(double sa, uint64_t ka, double sb, uint64_t kb)
{
	return sa < sb || (sa == sb && ka > kb);
}

static void
topk_sift_down(gpx_topk *h, uint64_t i, uint64_t n)
{
	double		score = h->score[i];
	uint64_t	key = h->key[i];

	for (;;)
	{
		uint64_t	child = 2 * i + 1;

		if (child >= n)
			break;
		if (child + 1 < n &&
			topk_worse(h->score[child + 1], h->key[child + 1], h->score[child], h->key[child]))
			child++;
		if (!topk_worse(h->score[child], h->key[child], score, key))
			break;
		h->score[i] = h->score[child];
		h->key[i] = h->key[child];
		i = child;
	}
	h->score[i] = score;
	h->key[i] = key;
}

void
gpx_topk_init(gpx_topk *h, uint32_t k, double *score_space, uint64_t *key_space)
{
	h->k = k;
	h->n = 0;
	h->score = score_space;
	h->key = key_space;
}

bool
gpx_topk_offer(gpx_topk *h, double score, uint64_t key)
{
	if (h->n < h->k)
	{
		uint32_t	i = h->n++;

		while (i > 0)
		{
			uint32_t	parent = (i - 1) / 2;

			if (!topk_worse(score, key, h->score[parent], h->key[parent]))
				break;
			h->score[i] = h->score[parent];
			h->key[i] = h->key[parent];
			i = parent;
		}
		h->score[i] = score;
		h->key[i] = key;
		return true;
	}
	if (h->k == 0 || !topk_worse(h->score[0], h->key[0], score, key))
		return false;
	h->score[0] = score;
	h->key[0] = key;
	topk_sift_down(h, 0, h->n);
	return true;
}

bool
gpx_topk_full(const gpx_topk *h)
{
	return h->n >= h->k;
}

double
gpx_topk_threshold(const gpx_topk *h)
{
	if (h->k == 0)
		return INFINITY;
	return h->n < h->k ? -INFINITY : h->score[0];
}

void
gpx_topk_sort(gpx_topk *h)
{
	/* heapsort: the worst goes last, the root's heap shrinks */
	for (uint32_t n = h->n; n > 1; n--)
	{
		double		score = h->score[0];
		uint64_t	key = h->key[0];

		h->score[0] = h->score[n - 1];
		h->key[0] = h->key[n - 1];
		h->score[n - 1] = score;
		h->key[n - 1] = key;
		topk_sift_down(h, 0, n - 1);
	}
}

/* ------------------------------------------------------------------------
 * Scores and bounds
 */

double
gpx_rank_score(const gpx_rank_query *q, const uint32_t *tf, uint32_t dl)
{
	double		norm = gpx_bm25_norm(q->k1, q->b, q->avgdl, dl);
	double		score = 0.0;

	for (int i = 0; i < q->nterms; i++)
		if (tf[i] > 0)
			score += gpx_bm25_term(q->idf[i], q->k1, tf[i], norm);
	return score;
}

/* no doc whose bound is ub can enter a heap whose threshold is thr */
static inline bool
rank_prunable(double ub, double thr)
{
	return ub * (1.0 + RANK_BOUND_SLACK) < thr;
}

/*
 * The most a term of idf adds to a doc of a block whose largest tf is
 * max_tf and whose shortest doc has length code dlcode, and the norm it
 * was scored with
 */
static double
code_bound(const gpx_rank_query *q, double idf, uint32_t max_tf, uint32_t dlcode, double *norm)
{
	*norm = gpx_bm25_norm(q->k1, q->b, q->avgdl, gpx_dl_floor(dlcode));
	return gpx_bm25_term(idf, q->k1, max_tf, *norm);
}

/* the bound of block b of c's list, and the norm it was scored with */
static double
block_bound(const gpx_rank_query *q, const rank_cursor *c, uint32_t b, double *norm)
{
	return code_bound(q, c->idf, c->list->block_max_tf[b], c->list->block_min_dlcode[b], norm);
}

/* the bound of the block c is in (c not done) */
static double
cursor_block_bound(const gpx_rank_query *q, rank_cursor *c)
{
	if (c->bound_block != c->block)
	{
		c->block_bound = block_bound(q, c, c->block, &c->block_norm);
		c->bound_block = c->block;
	}
	return c->block_bound;
}

/* ------------------------------------------------------------------------
 * Cursors
 */

/*
 * The first i in [from, n) with a[i] >= x (a increasing), n if none:
 * strides that double from 'from', then a binary search, so that passing m
 * entries costs about 2 log m reads (a long list skipped between a rare
 * term's docs, the filter between a list's).
 */
static uint64_t
gallop(const uint32_t *a, uint64_t from, uint64_t n, uint32_t x)
{
	uint64_t	lo = from,
				hi = from,
				step = 1;

	/* a[lo - 1] < x unless lo == from; a[hi] >= x or hi == n */
	while (hi < n && a[hi] < x)
	{
		lo = hi + 1;
		hi = from + step;
		step *= 2;
	}
	if (hi > n)
		hi = n;
	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
cursor_init(rank_cursor *c, const gpx_rank_query *q, int term)
{
	const gpx_rank_list *list = q->lists[term];

	c->list = list;
	c->term = term;
	c->idf = q->idf[term];
	c->list_bound = 0.0;

	/*
	 * The largest block bound.  A bound depends on the block's largest tf
	 * and its length code alone and grows with the tf, so the largest tf of
	 * each code is all it takes: one pass over the blocks without a
	 * division, then at most 256 bounds.
	 */
	{
		uint8_t		tf_of_code[256];
		uint32_t	lo = 255,
					hi = 0;

		memset(tf_of_code, 0, sizeof(tf_of_code));
		for (uint32_t b = 0; b < list->nblocks; b++)
		{
			uint8_t		code = list->block_min_dlcode[b];

			if (list->block_max_tf[b] > tf_of_code[code])
				tf_of_code[code] = list->block_max_tf[b];
			lo = code < lo ? code : lo;
			hi = code > hi ? code : hi;
		}
		for (uint32_t code = lo; list->nblocks > 0 && code <= hi; code++)
		{
			double		norm;
			double		ub;

			if (tf_of_code[code] == 0)
				continue;
			ub = code_bound(q, c->idf, tf_of_code[code], code, &norm);
			if (ub > c->list_bound)
				c->list_bound = ub;
		}
	}
	c->doc = list->nblocks > 0 ? 0 : RANK_END;
	c->exact = list->nblocks == 0;
	c->block = 0;
	c->block_loaded = false;
	c->pos = 0;
	c->count = 0;
	c->bound_block = UINT32_MAX;
}

/* leave the current block for block b, counting it if it was never loaded */
static void
cursor_leave_block(rank_run_state *st, rank_cursor *c, uint32_t b)
{
	st->stats.blocks_skipped += (b - c->block) - (c->block_loaded ? 1 : 0);
	c->block = b;
	c->block_loaded = false;
}

/* no posting of c below doc any more; loads nothing */
static void
cursor_skip_to(rank_run_state *st, rank_cursor *c, uint32_t doc)
{
	const gpx_rank_list *list = c->list;
	uint32_t	b = c->block;

	if (c->doc >= doc)
		return;
	if (doc == RANK_END)
		b = list->nblocks;
	else
		b = (uint32_t) gallop(list->block_last, b, list->nblocks, doc);
	if (b != c->block)
		cursor_leave_block(st, c, b);
	if (b == list->nblocks)
	{
		c->doc = RANK_END;
		c->exact = true;
		return;
	}
	c->doc = doc;
	c->exact = false;
}

/* make c's doc a posting: the first at or after its lower bound */
static void
cursor_materialize(rank_run_state *st, rank_cursor *c)
{
	const gpx_rank_list *list = c->list;

	while (!c->exact)
	{
		uint32_t	lo;
		uint32_t	hi;

		if (!c->block_loaded)
		{
			c->count = list->load(list->arg, c->block, c->docs, c->tfs);
			if (c->count > GPX_RANK_BLOCK)
				c->count = GPX_RANK_BLOCK;
			c->block_loaded = true;
			c->pos = 0;
			st->stats.blocks_loaded++;
		}
		lo = c->pos;
		hi = c->count;
		while (lo < hi)
		{
			uint32_t	mid = lo + (hi - lo) / 2;

			if (c->docs[mid] < c->doc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < c->count)
		{
			c->pos = lo;
			c->doc = c->docs[lo];
			c->exact = true;
			return;
		}

		/*
		 * The block ends below the doc although its last doc said otherwise:
		 * the postings disagree with the metadata.  Move on rather than loop.
		 */
		cursor_leave_block(st, c, c->block + 1);
		if (c->block == list->nblocks)
		{
			c->doc = RANK_END;
			c->exact = true;
		}
	}
}

/* past the current posting (exact) */
static void
cursor_step(rank_run_state *st, rank_cursor *c)
{
	if (c->block_loaded && c->pos + 1 < c->count && c->docs[c->pos + 1] > c->doc)
	{
		c->pos++;
		c->doc = c->docs[c->pos];
		return;
	}
	cursor_skip_to(st, c, c->doc + 1);
}

/* the blocks c never reached or never loaded */
static void
cursor_finish(rank_run_state *st, rank_cursor *c)
{
	if (c->block < c->list->nblocks)
		cursor_leave_block(st, c, c->list->nblocks);
}

/* the first filter doc >= doc, RANK_END if none; galloping from filter_pos */
static uint32_t
filter_seek(rank_run_state *st, uint32_t doc)
{
	uint64_t	at = gallop(st->q->filter, st->filter_pos, st->q->nfilter, doc);

	st->filter_pos = (uint32_t) at;
	return at < st->q->nfilter ? st->q->filter[at] : RANK_END;
}

/* ------------------------------------------------------------------------
 * Evaluation
 */

/*
 * doc is a match and at[0..nat) the cursors on it: offer it if it can
 * enter.  A bound from the exact tfs and the blocks' shortest docs spares
 * reading dl (and the liveness check) of docs that cannot.
 */
static void
rank_consider(rank_run_state *st, uint32_t doc, rank_cursor **at, int nat)
{
	const gpx_rank_query *q = st->q;
	double		thr = gpx_topk_threshold(st->h);
	double		score;

	st->stats.candidates++;
	if (gpx_topk_full(st->h))
	{
		double		ub = 0.0;

		for (int i = 0; i < nat; i++)
		{
			rank_cursor *c = at[i];

			cursor_block_bound(q, c);
			ub += gpx_bm25_term(c->idf, q->k1, c->tfs[c->pos], c->block_norm);
		}
		if (rank_prunable(ub, thr))
			return;
	}
	if (q->is_live != NULL && !q->is_live(q->arg, doc))
		return;

	for (int i = 0; i < nat; i++)
		st->tf[at[i]->term] = at[i]->tfs[at[i]->pos];
	score = gpx_rank_score(q, st->tf, q->doclen(q->arg, doc));
	for (int i = 0; i < nat; i++)
		st->tf[at[i]->term] = 0;
	st->stats.docs_scored++;

	if (score > 0.0 && score >= thr)
		gpx_topk_offer(st->h, score, q->key(q->arg, doc));
}

/*
 * Moves cursors[0..n) to doc, loading nothing, and sums the bounds of the
 * blocks they are then in: no doc from doc to the first of those blocks'
 * ends scores above it in these lists (prune_resume goes on from there).
 * *ndone: how many lists end before doc.
 */
static double
blocks_bound_at(rank_run_state *st, rank_cursor **cursors, int n, uint32_t doc, int *ndone)
{
	double		sum = 0.0;

	*ndone = 0;
	for (int i = 0; i < n; i++)
	{
		rank_cursor *c = cursors[i];

		cursor_skip_to(st, c, doc);
		if (c->doc == RANK_END)
		{
			(*ndone)++;
			continue;
		}
		sum += cursor_block_bound(st->q, c);
	}
	return sum;
}

/*
 * Where the walk resumes after the blocks that order[0..p] are in (at
 * pivot_doc or later) fell short of thr together.  Past a list's block end
 * only its list's bound holds (or none, after its last block), so the skip
 * goes on past the next block end for as long as the bounds, each list
 * past its block taken at its list's, stay short of thr.  A frequent term
 * has short blocks and a small bound: stopping at each of its block ends
 * walked its whole list between a rare term's docs.
 */
static uint32_t
prune_resume(const gpx_rank_query *q, rank_cursor **order, int p, uint32_t pivot_doc, double thr)
{
	uint32_t	resume = pivot_doc + 1;
	uint32_t	last;

	for (int i = 0; i <= p; i++)
		order[i]->past_block = false;
	for (;;)
	{
		rank_cursor *first = NULL;
		double		sum = 0.0;

		for (int i = 0; i <= p; i++)
		{
			rank_cursor *c = order[i];

			if (c->doc != RANK_END && !c->past_block &&
				(first == NULL || c->list->block_last[c->block] < first->list->block_last[first->block]))
				first = c;
		}
		if (first == NULL)
			return resume;
		last = first->list->block_last[first->block];
		if (last >= resume)
			resume = last == RANK_END ? RANK_END : last + 1;	/* RANK_END: a damaged list */
		first->past_block = true;
		for (int i = 0; i <= p; i++)
		{
			rank_cursor *c = order[i];

			if (c->doc == RANK_END)
				continue;
			if (!c->past_block)
				sum += cursor_block_bound(q, c);
			else if (c->block + 1 < c->list->nblocks)
				sum += c->list_bound;
		}
		if (!rank_prunable(sum, thr))
			return resume;
	}
}

/* insertion sort by current doc: few terms, nearly sorted between steps */
static void
sort_by_doc(rank_cursor **order, int n)
{
	for (int i = 1; i < n; i++)
	{
		rank_cursor *c = order[i];
		int			j = i;

		for (; j > 0 && order[j - 1]->doc > c->doc; j--)
			order[j] = order[j - 1];
		order[j] = c;
	}
}

/*
 * Docs with any term.  The pivot is the first doc that the lists' bounds,
 * taken in doc order, let reach the threshold: every doc before it is in
 * lists whose bounds together cannot.  Then the bounds of the blocks the
 * pivot falls in decide between skipping to the next block boundary and
 * loading.
 */
static void
rank_disjunctive(rank_run_state *st)
{
	const gpx_rank_query *q = st->q;
	rank_cursor **order = st->order;
	int			n = st->ncursors;

	for (;;)
	{
		double		thr = gpx_topk_threshold(st->h);
		double		acc = 0.0;
		double		block_sum;
		uint32_t	pivot_doc;
		uint32_t	next;
		int			ndone;
		int			p = -1;
		int			i;

		st->stats.steps++;
		sort_by_doc(order, n);
		for (i = 0; i < n && order[i]->doc != RANK_END; i++)
		{
			acc += order[i]->list_bound;
			if (!rank_prunable(acc, thr))
			{
				p = i;
				break;
			}
		}
		if (p < 0)
			break;
		pivot_doc = order[p]->doc;
		while (p + 1 < n && order[p + 1]->doc == pivot_doc)
			p++;

		if (q->filter != NULL)
		{
			uint32_t	f = filter_seek(st, pivot_doc);

			if (f != pivot_doc)
			{
				for (i = 0; i <= p; i++)
					cursor_skip_to(st, order[i], f);
				continue;
			}
		}

		block_sum = blocks_bound_at(st, order, p + 1, pivot_doc, &ndone);
		if (rank_prunable(block_sum, thr))
		{
			/*
			 * A doc before the next list's doc is only in these lists, and
			 * up to prune_resume they cannot lift it to the threshold.
			 */
			next = prune_resume(q, order, p, pivot_doc, thr);
			if (p + 1 < n && order[p + 1]->doc < next)
				next = order[p + 1]->doc;
			for (i = 0; i <= p; i++)
				cursor_skip_to(st, order[i], next);
			continue;
		}

		for (i = 0; i <= p; i++)
		{
			cursor_materialize(st, order[i]);
			if (order[i]->doc != pivot_doc)
				break;
		}
		if (i <= p)
			continue;
		rank_consider(st, pivot_doc, order, p + 1);
		for (i = 0; i <= p; i++)
			cursor_step(st, order[i]);
	}
}

/*
 * Docs with every term (and in the filter): a leapfrog from the shortest
 * list, which skips whole block ranges whose bounds together fall short
 * before loading any of them.
 */
static void
rank_conjunctive(rank_run_state *st)
{
	const gpx_rank_query *q = st->q;
	rank_cursor **order = st->order;
	int			n = st->ncursors;
	uint32_t	doc = 0;

	/* shortest first: the rarest list proposes, the others check */
	for (int i = 1; i < n; i++)
	{
		rank_cursor *c = order[i];
		int			j = i;

		for (; j > 0 && order[j - 1]->list->n > c->list->n; j--)
			order[j] = order[j - 1];
		order[j] = c;
	}

	while (doc != RANK_END)
	{
		double		thr = gpx_topk_threshold(st->h);
		double		block_sum;
		int			ndone;
		int			i;

		st->stats.steps++;
		if (q->filter != NULL)
		{
			doc = filter_seek(st, doc);
			if (doc == RANK_END)
				break;
		}
		block_sum = blocks_bound_at(st, order, n, doc, &ndone);
		if (ndone > 0)
			break;
		if (rank_prunable(block_sum, thr))
		{
			/* a doc has every term: up to prune_resume these blocks, then these lists, fall short */
			doc = prune_resume(q, order, n - 1, doc, thr);
			continue;
		}

		for (i = 0; i < n; i++)
		{
			cursor_materialize(st, order[i]);
			if (order[i]->doc != doc)
				break;
		}
		if (i < n)
		{
			doc = order[i]->doc;
			continue;
		}
		rank_consider(st, doc, order, n);
		for (i = 0; i < n; i++)
			cursor_step(st, order[i]);
		doc++;
	}
}

size_t
gpx_rank_scratch_size(int nterms)
{
	size_t		n = nterms > 0 ? (size_t) nterms : 0;

	return n * (sizeof(rank_cursor) + sizeof(rank_cursor *) + sizeof(uint32_t));
}

void
gpx_rank_run(const gpx_rank_query *q, gpx_topk *h, void *scratch, gpx_rank_stats *stats)
{
	rank_cursor *cursors = scratch;
	rank_run_state st;
	bool		missing = false;

	memset(&st, 0, sizeof(st));
	st.q = q;
	st.h = h;
	st.order = (rank_cursor **) (cursors + q->nterms);
	st.tf = (uint32_t *) (st.order + q->nterms);
	for (int i = 0; i < q->nterms; i++)
	{
		st.tf[i] = 0;
		if (q->lists[i] == NULL)
		{
			missing = true;
			continue;
		}
		cursor_init(&cursors[st.ncursors], q, i);
		st.order[st.ncursors] = &cursors[st.ncursors];
		st.ncursors++;
	}

	if (st.ncursors > 0 && h->k > 0 && !(q->conjunctive && missing))
	{
		if (q->conjunctive)
			rank_conjunctive(&st);
		else
			rank_disjunctive(&st);
	}

	for (int i = 0; i < st.ncursors; i++)
		cursor_finish(&st, &cursors[i]);
	if (stats != NULL)
	{
		stats->candidates += st.stats.candidates;
		stats->docs_scored += st.stats.docs_scored;
		stats->blocks_loaded += st.stats.blocks_loaded;
		stats->blocks_skipped += st.stats.blocks_skipped;
		stats->steps += st.stats.steps;
	}
}
