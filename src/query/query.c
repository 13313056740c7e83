/*
 * query.c
 *	  The query executor: term lookup per segment, SvS round planning,
 *	  rounds on the CPU, doc ids to TIDs, and the pending area.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/pg_bitutils.h"

#include "query/positions.h"
#include "query/query.h"
#include "query/tsq.h"
#include "store/pending.h"
#include "worker/worker.h"

#define TID_BATCH 1024

GqIndex *
gq_open(Relation index)
{
	GqIndex    *gq = palloc0(sizeof(GqIndex));

	gq->index = index;
	gpx_meta_read(index, &gq->meta);
	gq->segs = palloc0(Max(gq->meta.nsegments, 1) * sizeof(GpxSegment *));
	return gq;
}

void
gq_close(GqIndex *gq)
{
	for (uint32 i = 0; i < gq->meta.nsegments; i++)
		if (gq->segs[i])
			gpx_seg_close(gq->segs[i]);
	pfree(gq->segs);
	pfree(gq);
}

GpxSegment *
gq_segment(GqIndex *gq, int seg)
{
	if (gq->segs[seg] == NULL)
		gq->segs[seg] = gpx_seg_open(gq->index, &gq->meta.segments[seg]);
	return gq->segs[seg];
}

/* a query term in one segment: its dictionary entry, and its list once opened */
typedef struct GqTerm
{
	GpxTermRef	ref;
	GpxList		list;
	bool		opened;
} GqTerm;

/* terms by document frequency: an array of them, or of pointers to them */
static int
gqterm_df_cmp(const void *x, const void *y)
{
	const GqTerm *a = x;
	const GqTerm *b = y;

	return (a->ref.df > b->ref.df) - (a->ref.df < b->ref.df);
}

static int
term_df_cmp(const void *x, const void *y)
{
	return gqterm_df_cmp(*(const GqTerm *const *) x, *(const GqTerm *const *) y);
}

static void
close_terms(GqTerm *terms, int n)
{
	for (int i = 0; i < n; i++)
	{
		if (terms[i].opened)
			gpx_list_free(&terms[i].list);
		else if (terms[i].ref.payload)
			pfree(terms[i].ref.payload);
	}
}

/* a list that decodes out of order: where it is depends on whether it is inline */
static void
list_out_of_order(GpxSegment *seg, const GqTerm *t)
{
	if (t->ref.external)
		gpx_seg_corrupt(seg, GPX_STREAM_LISTS, t->ref.page, "list postings are out of order");
	gpx_seg_corrupt(seg, GPX_STREAM_LEAF, PG_UINT32_MAX, "inline list postings are out of order");
}

void
gq_device_list(GqIndex *gq, GpxSegment *seg, GpxTermRef *ref, GpxList *list, bool *opened,
			   GpxWorkerList *l, void **raw)
{
	memset(l, 0, sizeof(*l));
	*raw = NULL;
	/* a temporary index's relfilenode may be a permanent one's too: not cached */
	if (ref->external && ref->len >= GPX_CACHE_MIN_BYTES && !RelationUsesLocalBuffers(gq->index))
	{
		l->cacheable = true;
		l->key.node = gpx_rel_locator(gq->index);
		l->key.segment = seg->ref.id;
		l->key.page = ref->page;
		l->key.offset = ref->offset;
		l->key.kind = GPX_PART_LIST;
		l->len = ref->len;
		gpx_seg_list_header(seg, ref, &l->hdr);
		if (gpx_cache_holds(&l->key, &l->hdr, l->len))
			return;
		gpx_seg_list(seg, ref, list);
		*opened = true;
		l->bytes = list->mem;
		return;
	}
	gpx_seg_list(seg, ref, list);
	*opened = true;
	if (ref->external)
	{
		l->bytes = list->mem;
		l->len = ref->len;
		return;
	}
	l->len = pl_encoded_size(GPUIDX_CODEC_RAW, (const uint32 *) list->mem, list->df);
	*raw = palloc(l->len);
	pl_encode(GPUIDX_CODEC_RAW, (const uint32 *) list->mem, list->df, *raw);
	l->bytes = *raw;
}

/*
 * The rounds the placement gives the GPU worker (worker/worker.h): the
 * lists of the shortest terms, whole or by cache key, to the worker; their
 * intersection (what result asks of it, when the worker has every round;
 * else every id, for the rounds here) in docs, its ids in *k and its length
 * in *total.  Returns how many terms it covered; 0 when the query stays
 * here (no worker, the placement, or any failure: the CPU then does it all,
 * from the lists open now).
 */
static int
device_rounds(GqIndex *gq, GpxSegment *seg, GqTerm **order, int n, uint32 result, uint32 *docs,
			  uint32 *k, uint32 *total)
{
	uint32		dfs[GPUIDX_ENGINE_MAX_TERMS];
	GpxWorkerList lists[GPUIDX_ENGINE_MAX_TERMS];
	void	   *raw[GPUIDX_ENGINE_MAX_TERMS];
	int			ndev;
	bool		answered;

	if (n < 2 || n > GPUIDX_ENGINE_MAX_TERMS || !gpx_worker_wanted())
		return 0;
	for (int i = 0; i < n; i++)
		dfs[i] = order[i]->ref.df;
	ndev = gpx_place_rounds(dfs, n, &gpx_placement);
	if (ndev == 0)
	{
		gpx_count_backend_rounds(n - 1);
		return 0;
	}
	if (ndev < n)
		result = GPUIDX_RESULT_IDS;
	for (int i = 0; i < ndev; i++)
		gq_device_list(gq, seg, &order[i]->ref, &order[i]->list, &order[i]->opened, &lists[i], &raw[i]);
	answered = gpx_worker_intersect(lists, ndev, result, docs,
									gpuidx_result_wanted(result, order[0]->ref.df), k, total);
	for (int i = 0; i < ndev; i++)
		if (raw[i])
			pfree(raw[i]);
	if (!answered)
		return 0;
	gpx_count_worker_rounds(ndev - 1);
	if (ndev < n)
		gpx_count_backend_rounds(n - ndev);
	for (int i = 0; i < ndev; i++)
		if (order[i]->opened)
		{
			gpx_list_free(&order[i]->list);
			order[i]->opened = false;
		}
	return ndev;
}

/* a window of a segment's docs, [lo, hi); the whole segment is [0, ndocs) */
static bool
in_part(GpxSegment *seg, uint32 lo, uint32 hi)
{
	return lo > 0 || hi < seg->hdr->ndocs;
}

/*
 * A term's list opened for a round against candidates docs[0..n), all in
 * [lo, hi): a search reads the blocks they fall in, a merge those of the
 * window.
 */
static void
open_for_round(GpxSegment *seg, GqTerm *t, cpu_method method, const uint32 *docs, uint32 n,
			   uint32 lo, uint32 hi)
{
	if (method == CPU_METHOD_SKIP)
		gpx_seg_list_probed(seg, &t->ref, docs, n, false, &t->list);
	else
		gpx_seg_list_window(seg, &t->ref, lo, hi, &t->list);
	t->opened = true;
}

/* how many blocks of a list can hold postings of [lo, hi) */
static uint32
blocks_in_range(const pl_view *view, uint32 lo, uint32 hi)
{
	int64		first;
	int64		last;

	if (view->count == 0 || lo >= hi)
		return 0;
	first = pl_find_block(view, 0, lo);
	last = pl_find_block(view, (uint32) Max(first, 0), hi - 1);
	return last < 0 ? 0 : (uint32) (last - Max(first, 0) + 1);
}

/* the blocks a set operation on lists read, for EXPLAIN */
static inline void
count_list_blocks(const cpu_stats *cs)
{
	gpx_local_stats.list_blocks += cs->blocks_touched;
}

/* a term's docs in [lo, hi), decoded into docs (room for min(df, hi - lo)); returns how many */
static uint32
term_docs(GpxSegment *seg, GqTerm *t, uint32 lo, uint32 hi, uint32 *docs)
{
	uint32		n = t->ref.df;

	if (!t->opened)
		gpx_seg_list_window(seg, &t->ref, lo, hi, &t->list);
	t->opened = true;
	if (!in_part(seg, lo, hi))
	{
		if (pl_decode(&t->list.view, docs) != PL_OK)
			list_out_of_order(seg, t);
		gpx_local_stats.list_blocks += t->list.view.nblocks;
	}
	else
	{
		if ((n = pl_decode_range(&t->list.view, lo, hi, docs)) == PL_SEARCH_CORRUPT)
			list_out_of_order(seg, t);
		gpx_local_stats.list_blocks += blocks_in_range(&t->list.view, lo, hi);
	}
	gpx_list_free(&t->list);
	t->opened = false;
	t->ref.payload = NULL;
	return n;
}

/* room for a term's docs in [lo, hi) */
static uint32 *
alloc_term_docs(const GqTerm *t, uint32 lo, uint32 hi)
{
	return palloc_extended(Max((Size) Min(t->ref.df, hi - lo), 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
}

/*
 * The doc ids of one segment matching every term: returns how many are in
 * *docs, their whole number in *total.  'result' (gpuidx_engine.h) lets the
 * worker send back only what the caller needs, the count or the first n;
 * rounds on the CPU produce every id.  The dictionary first: a term the
 * segment lacks costs no list read.  Then shortest first: the shortest list
 * decoded whole, each next one opened only when its round comes, and only
 * as far as the round needs.  Only the docs of [lo, hi) when that is a part
 * of the segment: all on the CPU then, reading the lists' blocks there.
 */
static uint32
segment_matches(GqIndex *gq, int s, const GpxLexemes *q, uint32 result, uint32 lo, uint32 hi,
				uint32 **docs, uint32 *total)
{
	GpxSegment *seg = gq_segment(gq, s);
	GqTerm	   *terms = palloc0(q->n * sizeof(GqTerm));
	GqTerm	  **order = palloc(q->n * sizeof(GqTerm *));
	uint32		k;
	int			first;
	bool		all_on_device;

	*docs = NULL;
	*total = 0;
	for (int i = 0; i < q->n; i++)
	{
		if (!gpx_seg_find(seg, q->lex[i], q->len[i], &terms[i].ref))
		{
			close_terms(terms, i);
			return 0;
		}
		order[i] = &terms[i];
	}
	qsort(order, q->n, sizeof(GqTerm *), term_df_cmp);

	/* room for every round on the CPU; a count from the worker touches none of it */
	*docs = alloc_term_docs(order[0], lo, hi);
	first = in_part(seg, lo, hi) ? 0 : device_rounds(gq, seg, order, q->n, result, *docs, &k, total);
	all_on_device = first == q->n;
	if (first == 0)
	{
		k = term_docs(seg, order[0], lo, hi, *docs);
		first = 1;
	}
	for (int r = first; r < q->n && k > 0; r++)
	{
		GqTerm	   *t = order[r];
		cpu_method	method = cpu_pick_method(k, t->ref.df);
		cpu_stats	cs = {0};

		CHECK_FOR_INTERRUPTS();
		/* a search reaches only the blocks the candidates fall in: read those */
		if (!t->opened)			/* else opened for the worker, which did not answer */
			open_for_round(seg, t, method, *docs, k, lo, hi);
		k = cpu_intersect_array_list(*docs, k, &t->list.view, *docs, method, 0, &cs);
		count_list_blocks(&cs);
		if (k == CPU_CORRUPT)
			list_out_of_order(seg, t);
		gpx_list_free(&t->list);
		t->opened = false;
		t->ref.payload = NULL;
	}
	close_terms(terms, q->n);
	pfree(terms);
	pfree(order);
	/* the worker's answer has its own length; rounds here produced every id */
	if (!all_on_device)
		*total = k;
	return k;
}

uint64
gq_segment_count(GqIndex *gq, int s, const GpxLexemes *terms)
{
	GpxSegment *seg = gq_segment(gq, s);
	bool		has_dead = seg->ref.ndead > 0;
	uint32	   *docs;
	uint32		total;
	uint32		k;
	uint64		n;

	if (terms->n == 0)
		return 0;
	/* without dead docs the length is the answer: the worker need send no id */
	k = segment_matches(gq, s, terms, has_dead ? GPUIDX_RESULT_IDS : GPUIDX_RESULT_COUNT, 0, PG_UINT32_MAX,
						&docs, &total);
	n = has_dead ? 0 : total;
	for (uint32 i = 0; has_dead && i < k; i++)
		n += gpx_seg_is_live(seg, docs[i]);
	if (docs)
		pfree(docs);
	return n;
}

uint32
gq_segment_docs(GqIndex *gq, int s, const GpxLexemes *terms, uint32 **docs)
{
	uint32		total;

	*docs = NULL;
	if (terms->n == 0)
		return 0;
	return segment_matches(gq, s, terms, GPUIDX_RESULT_IDS, 0, PG_UINT32_MAX, docs, &total);
}

bool
gq_unchanged(GqIndex *gq)
{
	GpxMetaPageData *now = palloc(sizeof(GpxMetaPageData));
	bool		same;

	gpx_meta_read(gq->index, now);
	same = now->nsegments == gq->meta.nsegments;
	for (uint32 i = 0; same && i < now->nsegments; i++)
		same = now->segments[i].id == gq->meta.segments[i].id &&
			now->segments[i].ndead == gq->meta.segments[i].ndead;
	pfree(now);
	return same;
}

static void
map_and_emit(GpxSegment *seg, const uint32 *docs, uint32 n, gq_tids_fn fn, void *arg)
{
	ItemPointerData *tids = palloc(TID_BATCH * sizeof(ItemPointerData));

	for (uint32 i = 0; i < n; i += TID_BATCH)
	{
		uint32		k = gpx_seg_map(seg, docs + i, Min(TID_BATCH, n - i), tids);

		if (k > 0)
			fn(arg, tids, (int) k);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(tids);
}

/* do an entry's sorted lexemes include every (sorted) term? */
static bool
entry_matches(const GpxPendingReader *r, const GpxLexemes *terms)
{
	const uint8 *p = r->lex;
	int			t = 0;
	const char *lex;
	int			len;
	uint32		tf;

	if (r->nlex < (uint32) terms->n)
		return false;
	while (t < terms->n && gpx_pending_lexeme(&p, r->end, r->freqs, &lex, &len, &tf))
	{
		int			c = gpx_lexeme_cmp(lex, len, terms->lex[t], terms->len[t]);

		if (c == 0)
			t++;
		else if (c > 0)
			return false;
	}
	return t == terms->n;
}

/* the AND of the terms as a query tree, sampled as trees are */
void
gq_pending_sample(GqIndex *gq, const GpxLexemes *terms, uint32 max_pages, uint64 *entries,
				  uint64 *matches)
{
	GqTree	   *tree = gq_tree_new();

	if (terms->n == 0)
		gq_tree_add_nothing(tree);
	else
		gq_tree_add_lexemes(tree, terms);
	gq_pending_tree_sample(gq, tree, max_pages, entries, matches);
}

static void
pending_matches(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg)
{
	GpxPendingReader r;
	ItemPointerData tids[256];
	int			n = 0;

	if (gq_pending_lookup(gq, terms, fn, arg))
		return;
	gpx_pending_begin(&r, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&r))
	{
		if (!entry_matches(&r, terms))
			continue;
		tids[n++] = r.tid;
		if (n == lengthof(tids))
		{
			fn(arg, tids, n);
			n = 0;
		}
	}
	if (n > 0)
		fn(arg, tids, n);
	gpx_pending_end(&r);
}

void
gq_execute(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg)
{
	if (terms->n == 0)
		return;
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		uint32	   *docs;
		uint32		total;
		uint32		k;

		CHECK_FOR_INTERRUPTS();
		k = segment_matches(gq, s, terms, GPUIDX_RESULT_IDS, 0, PG_UINT32_MAX, &docs, &total);
		if (k > 0)
			map_and_emit(gq_segment(gq, s), docs, k, fn, arg);
		if (docs)
			pfree(docs);
	}
	pending_matches(gq, terms, fn, arg);
}

/* ---------------------------------------------------------------------------
 * A cursor: the same answer, one TID at a time, one segment's matches held
 */

static void
collect_pending(void *arg, ItemPointerData *tids, int n)
{
	GqCursor   *c = arg;

	if (c->npending + n > c->pending_cap)
	{
		c->pending_cap = Max(c->pending_cap * 2, c->npending + n);
		c->pending = c->pending ? repalloc_huge(c->pending, (Size) c->pending_cap * sizeof(ItemPointerData))
			: palloc_extended((Size) c->pending_cap * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	}
	memcpy(c->pending + c->npending, tids, n * sizeof(ItemPointerData));
	c->npending += n;
}

/* a tree's pending matches: the sure ones, and apart those to check */
static void
collect_pending_flagged(void *arg, ItemPointerData *tids, int n, bool recheck)
{
	GqCursor   *c = arg;

	if (!recheck)
	{
		collect_pending(arg, tids, n);
		return;
	}
	if (c->npending_unsure + n > c->pending_unsure_cap)
	{
		c->pending_unsure_cap = Max(c->pending_unsure_cap * 2, c->npending_unsure + n);
		c->pending_unsure = c->pending_unsure ?
			repalloc_huge(c->pending_unsure, (Size) c->pending_unsure_cap * sizeof(ItemPointerData)) :
			palloc_extended((Size) c->pending_unsure_cap * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	}
	memcpy(c->pending_unsure + c->npending_unsure, tids, n * sizeof(ItemPointerData));
	c->npending_unsure += n;
}

/* docs a cursor's first batch maps: under a limit, about as many as it */
static uint32
first_batch(uint32 limit)
{
	return limit > 0 ? Min(Max(limit, 16), TID_BATCH) : TID_BATCH;
}

GqCursor *
gq_cursor_begin(GqIndex *gq, const GpxLexemes *terms, uint32 limit)
{
	GqCursor   *c = palloc0(sizeof(GqCursor));

	c->gq = gq;
	c->terms = *terms;
	c->limit = limit;
	c->batch = first_batch(limit);
	c->tids = palloc(TID_BATCH * sizeof(ItemPointerData));
	c->done = terms->n == 0;
	return c;
}

static void pending_tree_matches(GqIndex *gq, const GqTree *tree, gq_tree_tids_fn fn, void *arg);
static bool segment_tree_split(GqIndex *gq, int s, const GqTree *tree, uint32 lo, uint32 hi, bool settle,
							   uint32 **sure, uint32 *nsure, uint32 **unsure, uint32 *nunsure);

int			gq_tree_window = 16384;

/*
 * A query tree's candidates, a segment's at a time; with a limit (rows the
 * query will likely take, 0: all), a window of a segment's docs at a time.
 */
GqCursor *
gq_cursor_begin_tree(GqIndex *gq, const GqTree *tree, uint32 limit)
{
	GqCursor   *c = palloc0(sizeof(GqCursor));

	c->gq = gq;
	c->tree = tree;
	c->limit = limit;
	c->batch = first_batch(limit);
	c->tids = palloc(TID_BATCH * sizeof(ItemPointerData));
	c->done = tree->root == NULL;
	return c;
}

/* the first index of docs[0..n) past doc (docs ascend) */
static uint32
docs_after(const uint32 *docs, uint32 n, uint32 doc)
{
	uint32		lo = 0;
	uint32		hi = n;

	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (docs[mid] <= doc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint32 bounded_window(GqIndex *gq, int s, const GqTree *tree, bool *rare);

/*
 * The segment s's matches into the cursor.  With a limit the worker sends
 * only the first ones; once those are used up (the query wanted more), the
 * segment is asked again for every id and goes on after the last one used.
 */
static void
cursor_segment(GqCursor *c, int s, bool again)
{
	uint32		last = again && c->tree == NULL ? c->docs[c->ndocs - 1] : 0;

	if (c->docs)
		pfree(c->docs);
	c->docs = NULL;
	if (c->tree != NULL)
	{
		uint32		ndocs = gq_segment(c->gq, s)->hdr->ndocs;
		uint32		lo = again ? c->win_hi : 0;

		/*
		 * With a limit, the docs of a window, each next one four times the
		 * last: a query that stops after a few rows reads a few blocks of
		 * each list, one that reads on costs little more than whole lists.
		 * A tree that can match only a few docs (its smallest operand is
		 * short) is read whole at once: windows would read each list's
		 * blocks window after window to find them.
		 */
		if (c->limit == 0 || gq_tree_window <= 0)
			c->win_size = gq_tree_bounded_window(c->gq, s, c->tree);
		else if (again)
			c->win_size = (uint32) Min((uint64) c->win_size * 4, PG_UINT32_MAX);
		else
		{
			bool		rare;
			uint32		whole = bounded_window(c->gq, s, c->tree, &rare);

			c->win_size = rare ? whole : (uint32) gq_tree_window;
		}
		c->win_hi = (uint32) Min((uint64) lo + c->win_size, ndocs);
		/*
		 * the sure candidates first, then those to check; with a limit, those
		 * the positions settle are settled a part at a time as rows are
		 * wanted (a LIMIT 10 of a phrase stops after its first matches)
		 */
		c->settle_later = segment_tree_split(c->gq, s, c->tree, lo, c->win_hi, c->limit == 0,
											 &c->docs, &c->ndocs, &c->unsure, &c->nunsure);
		c->unsure_pos = 0;
		c->settle_part = (uint32) Min(Max((uint64) c->limit * 2, 16), PG_UINT32_MAX);
		c->seg_more = c->win_hi < ndocs;
		if (lo > 0 || c->seg_more)
			c->windows++;
		c->seg_total = c->ndocs;
		c->docs_recheck = false;
		c->dpos = 0;
		return;
	}
	c->ndocs = segment_matches(c->gq, s, &c->terms,
							   again || c->limit == 0 ? GPUIDX_RESULT_IDS : c->limit, 0, PG_UINT32_MAX,
							   &c->docs, &c->seg_total);
	c->dpos = again ? docs_after(c->docs, c->ndocs, last) : 0;
}

bool
gq_cursor_next_batch(GqCursor *c, ItemPointerData **tids, int *ntids)
{
	while (!c->done)
	{
		if (c->docs != NULL && c->dpos < c->ndocs)
		{
			uint32		n = Min(c->batch, c->ndocs - c->dpos);

			/* under a limit the first batches are as small as it: a row needs its TID mapped */
			c->batch = Min((uint64) c->batch * 4, TID_BATCH);
			CHECK_FOR_INTERRUPTS();
			*ntids = (int) gpx_seg_map(gq_segment(c->gq, c->seg - 1), c->docs + c->dpos, n, c->tids);
			*tids = c->tids;
			c->batch_recheck = c->docs_recheck;
			c->dpos += n;
			if (*ntids > 0)
				return true;
			continue;
		}
		if (c->unsure != NULL && c->settle_later)
		{
			/* the next part of the candidates, settled by their positions */
			uint32		n = Min(c->settle_part, c->nunsure - c->unsure_pos);
			uint32	   *part = palloc(n * sizeof(uint32));

			memcpy(part, c->unsure + c->unsure_pos, n * sizeof(uint32));
			c->unsure_pos += n;
			c->settle_part = (uint32) Min((uint64) c->settle_part * 4, PG_UINT32_MAX);
			if (c->docs)
				pfree(c->docs);
			c->docs = NULL;
			c->ndocs = 0;
			gq_settle_by_positions(gq_segment(c->gq, c->seg - 1), c->tree, &c->docs, &c->ndocs, &part, &n);
			c->seg_total = c->ndocs;
			c->docs_recheck = false;
			c->dpos = 0;
			if (c->unsure_pos == c->nunsure)
			{
				pfree(c->unsure);
				c->unsure = NULL;
				c->nunsure = 0;
				c->settle_later = false;
			}
			continue;
		}
		if (c->unsure != NULL)
		{
			/* on to the segment's candidates that need the check */
			if (c->docs)
				pfree(c->docs);
			c->docs = c->unsure;
			c->ndocs = c->seg_total = c->nunsure;
			c->unsure = NULL;
			c->nunsure = 0;
			c->docs_recheck = true;
			c->dpos = 0;
			continue;
		}
		if ((c->docs != NULL && c->ndocs > 0 && c->ndocs < c->seg_total) || c->seg_more)
		{
			/* the rest of the segment: its next window, or every id the worker did not send */
			cursor_segment(c, c->seg - 1, true);
			continue;
		}
		if (c->seg < (int) c->gq->meta.nsegments)
		{
			CHECK_FOR_INTERRUPTS();
			cursor_segment(c, c->seg, false);
			c->seg++;
			continue;
		}
		if (c->docs)
		{
			pfree(c->docs);
			c->docs = NULL;
		}
		if (!c->pending_read)
		{
			if (c->tree != NULL)
				pending_tree_matches(c->gq, c->tree, collect_pending_flagged, c);
			else
				pending_matches(c->gq, &c->terms, collect_pending, c);
			c->pending_read = true;
			if (c->npending > 0)
			{
				*tids = c->pending;
				*ntids = c->npending;
				c->batch_recheck = false;
				return true;
			}
		}
		if (c->npending_unsure > 0)
		{
			*tids = c->pending_unsure;
			*ntids = c->npending_unsure;
			c->npending_unsure = 0;
			c->batch_recheck = true;
			return true;
		}
		c->done = true;
	}
	return false;
}

uint32
gq_cursor_take_unsure(GqCursor *c, ItemPointerData **tids)
{
	uint32		n;
	uint32		nmap;

	*tids = NULL;
	if (!c->docs_recheck || c->docs == NULL || c->dpos >= c->ndocs)
		return 0;
	n = c->ndocs - c->dpos;
	*tids = palloc_extended((Size) n * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	nmap = gpx_seg_map(gq_segment(c->gq, c->seg - 1), c->docs + c->dpos, n, *tids);
	c->dpos = c->ndocs;
	return nmap;
}

void
gq_cursor_skip_segments(GqCursor *c)
{
	if (c->unsure)
		pfree(c->unsure);
	c->unsure = NULL;
	c->nunsure = 0;
	if (c->docs)
		pfree(c->docs);
	c->docs = NULL;
	c->ndocs = c->dpos = 0;
	c->seg_more = false;
	c->seg = (int) c->gq->meta.nsegments;
}

void
gq_cursor_end(GqCursor *c)
{
	if (c->unsure)
		pfree(c->unsure);
	if (c->pending_unsure)
		pfree(c->pending_unsure);
	if (c->docs)
		pfree(c->docs);
	if (c->pending)
		pfree(c->pending);
	pfree(c->tids);
	pfree(c);
}

/* ---------------------------------------------------------------------------
 * Query trees (tsq.h): a segment's lists as the evaluator's source
 */

/* a segment's lists, or those of its docs in [lo, hi) (a part: the cursor's windows) */
typedef struct SegSource
{
	GqIndex    *gq;
	int			s;
	GpxSegment *seg;
	uint32		lo;
	uint32		hi;
	bool		left_to_rows;	/* a prefix was left to the rows (seg_rows_cheaper) */
} SegSource;

static uint32
seg_all_of(void *arg, const GpxLexemes *terms, uint32 **docs)
{
	SegSource  *ss = arg;
	uint32		total;

	return segment_matches(ss->gq, ss->s, terms, GPUIDX_RESULT_IDS, ss->lo, ss->hi, docs, &total);
}

/*
 * A union of lists: each list's docs of [lo, hi) decoded and set in a
 * bitmap of the window, then the bitmap listed.  Memory: a bit per doc of
 * the window and the longest list, however many lists.
 */
typedef struct DocUnion
{
	SegSource  *ss;
	uint64	   *bits;
	uint32	   *buf;
	uint32		bufcap;
} DocUnion;

static void
union_add(DocUnion *u, GqTerm *t)
{
	uint32		lo = u->ss->lo;
	uint32		span = u->ss->hi - lo;
	uint32		n;

	if (Min(t->ref.df, span) > u->bufcap)
	{
		u->bufcap = Max(Min(t->ref.df, span), 1024);
		u->buf = u->buf ? repalloc_huge(u->buf, (Size) u->bufcap * sizeof(uint32))
			: palloc_extended((Size) u->bufcap * sizeof(uint32), MCXT_ALLOC_HUGE);
	}
	n = term_docs(u->ss->seg, t, lo, u->ss->hi, u->buf);
	if (u->bits == NULL)
		u->bits = palloc_extended((Size) ((span + 63) / 64) * sizeof(uint64), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint32 i = 0; i < n; i++)
	{
		uint32		d = u->buf[i] - lo;

		if (u->buf[i] < lo || d >= span)
			gpx_seg_corrupt(u->ss->seg, GPX_STREAM_LISTS, t->ref.external ? t->ref.page : PG_UINT32_MAX,
							"list holds a doc past the segment");
		u->bits[d / 64] |= UINT64CONST(1) << (d % 64);
	}
}

/* the union's docs in *docs (NULL when none); returns how many */
static uint32
union_end(DocUnion *u, uint32 **docs)
{
	uint32		span = u->ss->hi - u->ss->lo;
	uint32		n = 0;

	*docs = NULL;
	if (u->buf)
		pfree(u->buf);
	if (u->bits == NULL)
		return 0;
	*docs = palloc_extended((Size) Max(span, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (uint32 w = 0; w < (span + 63) / 64; w++)
		for (uint64 b = u->bits[w]; b != 0; b &= b - 1)
			(*docs)[n++] = u->ss->lo + w * 64 + pg_rightmost_one_pos64(b);
	pfree(u->bits);
	return n;
}

/*
 * The docs of every term with a prefix: the dictionary read from where the
 * prefix would be to the first term past it, the lists unioned.
 */
static uint32
seg_prefix_docs(SegSource *ss, const char *lex, int len, uint32 **docs)
{
	DocUnion	u = {ss};
	GpxDictIter it;

	gpx_dict_iter_init(&it, ss->seg);
	gpx_dict_iter_seek(&it, lex, len);
	while (gpx_dict_iter_next_prefixed(&it, lex, len))
	{
		GqTerm		t = {0};

		gpx_dict_iter_list(&it, &t.list);
		t.opened = true;
		t.ref.df = it.df;
		t.ref.external = it.external;
		t.ref.page = it.external ? it.list_page : 0;
		union_add(&u, &t);
	}
	gpx_dict_iter_end(&it);
	return union_end(&u, docs);
}

/*
 * A whole union, or an AND with NOT terms, through the worker: the found
 * terms' lists (for AND the kept ones, then the excluded ones: nexclude)
 * sent as the worker takes them.  True with every id of the result in
 * *docs (palloc'd) and its length in *n when it answered; false when the
 * caller must answer on the CPU (no worker, the placement, any failure).
 */
static bool
device_setop(SegSource *ss, GqTerm *terms, int nterms, uint32 op, int nexclude, uint32 capacity,
			 uint32 **docs, uint32 *n)
{
	GpxWorkerList lists[GPUIDX_ENGINE_MAX_TERMS];
	void	   *raw[GPUIDX_ENGINE_MAX_TERMS];
	uint32		count;
	uint32		total;
	bool		answered;

	if (nterms < 2 || nterms > GPUIDX_ENGINE_MAX_TERMS)
		return false;
	for (int i = 0; i < nterms; i++)
		gq_device_list(ss->gq, ss->seg, &terms[i].ref, &terms[i].list, &terms[i].opened, &lists[i], &raw[i]);
	*docs = palloc_extended(Max((Size) capacity, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	answered = gpx_worker_setop(lists, nterms, op, (uint32) nexclude, GPUIDX_RESULT_IDS, *docs, capacity,
								&count, &total);
	for (int i = 0; i < nterms; i++)
		if (raw[i])
			pfree(raw[i]);
	if (!answered)
	{
		pfree(*docs);
		*docs = NULL;
		return false;
	}
	gpx_count_worker_rounds(nterms - 1);
	*n = count;
	return true;
}

/*
 * The docs having any of the terms: through the worker when it serves and
 * the lists are long enough to repay the trip, else a bitmap union here.
 */
static uint32
seg_any_of(void *arg, const GpxLexemes *terms, uint32 **docs)
{
	SegSource  *ss = arg;
	DocUnion	u = {ss};
	GqTerm	   *t = palloc0(Max(terms->n, 1) * sizeof(GqTerm));
	int			nt = 0;
	uint64		postings = 0;
	uint32		n;

	for (int i = 0; i < terms->n; i++)
		if (gpx_seg_find(ss->seg, terms->lex[i], terms->len[i], &t[nt].ref))
			postings += t[nt++].ref.df;
	if (nt >= 2 && !in_part(ss->seg, ss->lo, ss->hi) && postings >= gpx_placement.gpu_min_postings &&
		gpx_worker_wanted() && device_setop(ss, t, nt, GPUIDX_OP_OR, 0, (uint32) Min(postings, (uint64) ss->seg->hdr->ndocs), docs, &n))
	{
		close_terms(t, nt);
		pfree(t);
		return n;
	}
	for (int i = 0; i < nt; i++)
	{
		CHECK_FOR_INTERRUPTS();
		union_add(&u, &t[i]);
	}
	close_terms(t, nt);
	pfree(t);
	return union_end(&u, docs);
}

static uint32
seg_docs_of(void *arg, const GqNode *term, uint32 **docs)
{
	SegSource  *ss = arg;
	GqTerm		t = {0};

	*docs = NULL;
	if (term->prefix)
		return seg_prefix_docs(ss, term->lex, term->len, docs);
	if (!gpx_seg_find(ss->seg, term->lex, term->len, &t.ref))
		return 0;
	*docs = alloc_term_docs(&t, ss->lo, ss->hi);
	return term_docs(ss->seg, &t, ss->lo, ss->hi, *docs);
}

/*
 * Of docs[0..n), in place, those having the term when keep, else those
 * lacking it: its list searched for the docs (only the blocks they fall in
 * read) or merged with them, by the lengths.  Returns how many are left.
 */
static uint32
filter_by_list(SegSource *ss, GqTerm *t, bool keep, uint32 *docs, uint32 n)
{
	cpu_method	method = cpu_pick_method(n, t->ref.df);
	cpu_stats	cs = {0};
	uint32		k;

	open_for_round(ss->seg, t, method, docs, n, ss->lo, ss->hi);
	k = keep ? cpu_intersect_array_list(docs, n, &t->list.view, docs, method, 0, &cs)
		: cpu_difference_array_list(docs, n, &t->list.view, docs, method, &cs);
	count_list_blocks(&cs);
	if (k == CPU_CORRUPT)
		list_out_of_order(ss->seg, t);
	gpx_list_free(&t->list);
	t->opened = false;
	t->ref.payload = NULL;
	return k;
}

/*
 * The same for every term with a prefix: each term's list intersected with
 * the docs (searched at them when it is long, merged when it is not: a
 * short list costs its own postings, not the docs'), its hits marked, until
 * every doc has one.
 */
static uint32
filter_by_prefix(SegSource *ss, const GqNode *term, bool keep, uint32 *docs, uint32 n)
{
	bool	   *has = palloc0(n * sizeof(bool));
	uint32	   *hits = palloc_extended((Size) n * sizeof(uint32), MCXT_ALLOC_HUGE);
	uint32		nhas = 0;
	uint32		k = 0;
	GpxDictIter it;

	gpx_dict_iter_init(&it, ss->seg);
	gpx_dict_iter_seek(&it, term->lex, term->len);
	while (nhas < n && gpx_dict_iter_next_prefixed(&it, term->lex, term->len))
	{
		GqTerm		t = {0};
		cpu_method	method = cpu_pick_method(n, it.df);
		cpu_stats	cs = {0};
		uint32		nhits;
		uint32		at = 0;

		CHECK_FOR_INTERRUPTS();
		if (method == CPU_METHOD_SKIP)
			gpx_dict_iter_list_probed(&it, docs, n, false, &t.list);
		else
			gpx_dict_iter_list(&it, &t.list);
		t.opened = true;
		t.ref.df = it.df;
		t.ref.external = it.external;
		t.ref.page = it.external ? it.list_page : 0;
		nhits = cpu_intersect_array_list(docs, n, &t.list.view, hits, method, 0, &cs);
		count_list_blocks(&cs);
		if (nhits == CPU_CORRUPT)
			list_out_of_order(ss->seg, &t);
		/* the hits are some of the docs, in order */
		for (uint32 h = 0; h < nhits; h++)
		{
			at = pl_gallop(docs, at, n, hits[h]);
			if (!has[at])
				nhas++;
			has[at] = true;
		}
		gpx_list_free(&t.list);
	}
	gpx_dict_iter_end(&it);
	for (uint32 i = 0; i < n; i++)
		if (has[i] == keep)
			docs[k++] = docs[i];
	pfree(has);
	pfree(hits);
	return k;
}

/*
 * Searching a prefix at n docs walks every term it has in the dictionary
 * and looks each term's list up at the docs; a row check reads a heap row
 * and matches it (an expression index also makes the row's document).
 * Measured on Debian paths, a term's entry and short list cost about as
 * much as GQ_ROW_TERMS-th of a row; the rows are taken only when they
 * are cheaper by that margin again, as a row not in shared buffers costs
 * a read.
 */
#define GQ_ROW_TERMS 64

static bool
seg_rows_cheaper(void *arg, const GqNode *prefix, uint32 n)
{
	SegSource  *ss = arg;
	GpxPrefixStats ps;

	gpx_seg_prefix_stats(ss->seg, prefix->lex, prefix->len, &ps);
	return (double) n * GQ_ROW_TERMS * 2 < (double) ps.terms;
}

static uint32
seg_filter(void *arg, const GqNode *term, bool keep, uint32 *docs, uint32 n)
{
	SegSource  *ss = arg;
	GqTerm		t = {0};

	if (n == 0)
		return 0;
	if (term->prefix)
		return filter_by_prefix(ss, term, keep, docs, n);
	if (!gpx_seg_find(ss->seg, term->lex, term->len, &t.ref))
		return keep ? 0 : n;
	n = filter_by_list(ss, &t, keep, docs, n);
	close_terms(&t, 1);
	return n;
}

/* a term's document frequency in the segment; a prefix's terms' sum, counted up to cap */
static uint64
seg_frequency(void *arg, const GqNode *term, uint64 cap)
{
	SegSource  *ss = arg;
	GpxTermRef	ref;
	GpxPrefixStats ps;

	if (!term->prefix)
	{
		if (!gpx_seg_find(ss->seg, term->lex, term->len, &ref))
			return 0;
		if (ref.payload)
			pfree(ref.payload);
		return ref.df;
	}
	/* the whole sum, remembered: asked again by each step of the query and by its plan */
	gpx_seg_prefix_stats(ss->seg, term->lex, term->len, &ps);
	return ps.df;
}

/*
 * Of docs[0..*n), in place, those having every term of t[0..nt) (rarest
 * first, none rarer than the docs are many): the rounds the placement gives
 * the device go to the worker, the docs sent as their first list; the rest
 * stay here.  Returns how many terms the worker took (0: none, the docs as
 * they were), and the docs left in *n.
 */
static int
device_filter(SegSource *ss, GqTerm *t, int nt, uint32 *docs, uint32 *n)
{
	uint32		lens[GPUIDX_ENGINE_MAX_TERMS];
	GpxWorkerList lists[GPUIDX_ENGINE_MAX_TERMS];
	void	   *raw[GPUIDX_ENGINE_MAX_TERMS];
	int			ndev;
	uint32		count;
	uint32		total;
	bool		answered;

	if (nt < 1 || nt + 1 > GPUIDX_ENGINE_MAX_TERMS || in_part(ss->seg, ss->lo, ss->hi) ||
		*n > t[0].ref.df || !gpx_worker_wanted())
		return 0;
	lens[0] = *n;
	for (int i = 0; i < nt; i++)
		lens[i + 1] = t[i].ref.df;
	ndev = gpx_place_rounds(lens, nt + 1, &gpx_placement);
	if (ndev < 2)
	{
		gpx_count_backend_rounds(nt);
		return 0;
	}
	/* the docs as a raw list: never cached, sent with the request */
	memset(&lists[0], 0, sizeof(lists[0]));
	lists[0].len = pl_encoded_size(GPUIDX_CODEC_RAW, docs, *n);
	raw[0] = palloc_extended(lists[0].len, MCXT_ALLOC_HUGE);
	pl_encode(GPUIDX_CODEC_RAW, docs, *n, raw[0]);
	lists[0].bytes = raw[0];
	for (int i = 1; i < ndev; i++)
		gq_device_list(ss->gq, ss->seg, &t[i - 1].ref, &t[i - 1].list, &t[i - 1].opened, &lists[i], &raw[i]);
	answered = gpx_worker_intersect(lists, ndev, GPUIDX_RESULT_IDS, docs, *n, &count, &total);
	for (int i = 0; i < ndev; i++)
		if (raw[i])
			pfree(raw[i]);
	for (int i = 0; i < ndev - 1; i++)
		if (t[i].opened)
		{
			gpx_list_free(&t[i].list);
			t[i].opened = false;
		}
	if (!answered)
		return 0;
	gpx_count_worker_rounds(ndev - 1);
	if (ndev - 1 < nt)
		gpx_count_backend_rounds(nt - (ndev - 1));
	*n = count;
	return ndev - 1;
}

/*
 * Of docs[0..n), in place, those having every term: the terms searched
 * rarest first, here or through the worker
 */
static uint32
seg_filter_all(void *arg, const GpxLexemes *terms, uint32 *docs, uint32 n)
{
	SegSource  *ss = arg;
	GqTerm	   *t = palloc0(Max(terms->n, 1) * sizeof(GqTerm));
	int			nt = 0;
	int			first;

	for (int i = 0; i < terms->n && n > 0; i++)
	{
		if (!gpx_seg_find(ss->seg, terms->lex[i], terms->len[i], &t[nt].ref))
			n = 0;
		else
			nt++;
	}
	qsort(t, nt, sizeof(GqTerm), gqterm_df_cmp);
	first = n > 0 ? device_filter(ss, t, nt, docs, &n) : 0;
	for (int i = first; i < nt && n > 0; i++)
	{
		CHECK_FOR_INTERRUPTS();
		n = filter_by_list(ss, &t[i], true, docs, n);
	}
	close_terms(t, nt);
	pfree(t);
	return n;
}

/*
 * The docs having every term of pos and none of neg: through the worker in
 * one request when the placement gives it every AND round (as for @@&), with
 * the NOT lists short enough against the shortest kept one to be a round
 * there rather than a few searches here; the rest here.
 */
static uint32
seg_all_but(void *arg, const GpxLexemes *pos, const GpxLexemes *neg, uint32 **docs)
{
	SegSource  *ss = arg;
	GqTerm	   *t = palloc0((pos->n + neg->n) * sizeof(GqTerm));
	bool	   *done = palloc0(Max(neg->n, 1) * sizeof(bool));	/* NOT terms the worker took care of */
	int			nt = 0;
	uint32		n = 0;
	bool		answered = false;

	*docs = NULL;
	if (gpx_worker_wanted() && !in_part(ss->seg, ss->lo, ss->hi) && pos->n + neg->n <= GPUIDX_ENGINE_MAX_TERMS)
	{
		uint32		dfs[GPUIDX_ENGINE_MAX_TERMS];
		int			npos;
		bool		on_device;

		for (int i = 0; i < pos->n; i++)
			if (!gpx_seg_find(ss->seg, pos->lex[i], pos->len[i], &t[nt++].ref))
			{
				/* a kept term the segment lacks: nothing matches */
				close_terms(t, nt);
				pfree(t);
				pfree(done);
				return 0;
			}
		npos = nt;
		qsort(t, npos, sizeof(GqTerm), gqterm_df_cmp);
		for (int i = 0; i < npos; i++)
			dfs[i] = t[i].ref.df;
		on_device = npos >= 2 ? gpx_place_rounds(dfs, npos, &gpx_placement) == npos :
			dfs[0] >= gpx_placement.gpu_min_postings;
		/* a NOT list long against the candidates is a few searches here, not a round there */
		for (int i = 0; i < neg->n && on_device; i++)
		{
			GpxTermRef	ref;

			if (!gpx_seg_find(ss->seg, neg->lex[i], neg->len[i], &ref))
			{
				done[i] = true;		/* nothing to subtract */
				continue;
			}
			if (ref.df >= (uint64) dfs[0] * gpx_placement.cpu_ratio_threshold)
			{
				if (ref.payload)
					pfree(ref.payload);
				continue;
			}
			t[nt++].ref = ref;
			done[i] = true;
		}
		answered = on_device && nt >= 2 &&
			device_setop(ss, t, nt, GPUIDX_OP_AND, nt - npos, dfs[0], docs, &n);
		close_terms(t, nt);
	}
	pfree(t);
	if (!answered)
	{
		memset(done, 0, Max(neg->n, 1) * sizeof(bool));
		n = seg_all_of(arg, pos, docs);
	}
	/* the NOT terms left to subtract here */
	for (int i = 0; i < neg->n && n > 0; i++)
	{
		GqNode		x = {.kind = GQ_TERM,.exact = true,.lex = neg->lex[i],.len = neg->len[i]};

		if (!done[i])
			n = seg_filter(arg, &x, false, *docs, n);
	}
	pfree(done);
	return n;
}

/* segment s's lists as the evaluator's source, for its docs of [lo, hi) */
static void
segment_source(GqIndex *gq, int s, uint32 lo, uint32 hi, SegSource *ss, GqSource *src)
{
	ss->gq = gq;
	ss->s = s;
	ss->seg = gq_segment(gq, s);
	ss->hi = Min(hi, ss->seg->hdr->ndocs);
	ss->lo = Min(lo, ss->hi);
	ss->left_to_rows = false;
	memset(src, 0, sizeof(*src));
	src->arg = ss;
	src->lo = ss->lo;
	src->hi = ss->hi;
	src->all_of = seg_all_of;
	src->docs_of = seg_docs_of;
	src->filter = seg_filter;
	src->frequency = seg_frequency;
	src->filter_all = seg_filter_all;
	src->all_but = seg_all_but;
	src->any_of = seg_any_of;
}

/*
 * Bytes a doc of the window may take at once while a tree is evaluated:
 * the start's docs, the searches' copies of them, a prefix's bitmap.
 */
#define TREE_BYTES_PER_DOC 32

/*
 * A segment's matches of a tree are surely few when its bound is at most
 * this: so few that a window's own work (each list's skip entries and first
 * blocks) is most of what evaluating it costs.  At most the window of the
 * smallest work_mem, so such a tree is always evaluated whole.
 */
#define RARE_TREE_DOCS (2 * GPX_DOCMAP_CHUNK)

/* the window of docs a tree is evaluated over within work_mem; *rare (if asked): its matches surely few */
static uint32
bounded_window(GqIndex *gq, int s, const GqTree *tree, bool *rare)
{
	SegSource	ss;
	GqSource	src;
	uint64		budget = (uint64) work_mem * 1024 / TREE_BYTES_PER_DOC;
	uint64		bound;

	segment_source(gq, s, 0, PG_UINT32_MAX, &ss, &src);
	bound = gq_tree_bound(tree, &src);
	if (rare)
		*rare = bound <= RARE_TREE_DOCS;
	if (bound <= budget)
		return Max(ss.hi, 1);
	return (uint32) Max(budget, GPX_DOCMAP_CHUNK);
}

uint32
gq_tree_bounded_window(GqIndex *gq, int s, const GqTree *tree)
{
	return bounded_window(gq, s, tree, NULL);
}

void
gq_segment_tree_window(GqIndex *gq, int s, const GqTree *tree, uint32 lo, uint32 hi, uint32 **sure,
					   uint32 *nsure, uint32 **unsure, uint32 *nunsure)
{
	segment_tree_split(gq, s, tree, lo, hi, true, sure, nsure, unsure, nunsure);
}

/*
 * The tree's candidates among segment s's docs of [lo, hi).  Those its
 * positions can settle are settled (settle), or left unsure for the caller
 * to settle with gq_settle_by_positions: true then.
 */
static bool
segment_tree_split(GqIndex *gq, int s, const GqTree *tree, uint32 lo, uint32 hi, bool settle, uint32 **sure,
				   uint32 *nsure, uint32 **unsure, uint32 *nunsure)
{
	SegSource	ss;
	GqSource	src;

	segment_source(gq, s, lo, hi, &ss, &src);
	if (tree->rows_checked)
	{
		src.rows_cheaper = seg_rows_cheaper;
		src.left_to_rows = &ss.left_to_rows;
	}
	gq_tree_eval_split(tree, &src, sure, nsure, unsure, nunsure);
	/*
	 * phrases and weights, where the segment has the positions to settle
	 * them (not when a prefix was left to the rows: they settle it all)
	 */
	if (*nunsure > 0 && !ss.left_to_rows && (ss.seg->hdr->flags & GPX_SEG_POSITIONS) &&
		gq_tree_positions_settle(tree))
	{
		if (!settle)
			return true;
		gq_settle_by_positions(ss.seg, tree, sure, nsure, unsure, nunsure);
	}
	return false;
}

/* does the pending entry being read have the lexeme (or one with the prefix)? */
static bool
entry_has(void *arg, const char *lex, int len, bool prefix)
{
	const GpxPendingReader *r = arg;
	const uint8 *p = r->lex;
	const char *l;
	int			ll;
	uint32		tf;

	while (gpx_pending_lexeme(&p, r->end, r->freqs, &l, &ll, &tf))
	{
		int			c;

		if (prefix && ll >= len && memcmp(l, lex, len) == 0)
			return true;
		c = gpx_lexeme_cmp(l, ll, lex, len);
		if (c == 0)
			return true;
		if (c > 0)
			return false;		/* past it, and past every lexeme with the prefix */
	}
	return false;
}

GqAnswer
gq_pending_entry_answer(const GqTree *tree, GqPosMatch *pm, const GpxPendingReader *r)
{
	GqAnswer	a = gq_tree_answer(tree, entry_has, (void *) r);

	/* phrases and weights, from the entry's positions */
	if (a == GQ_MAYBE && pm != NULL)
		a = gq_pos_match_pending(pm, r->lex, r->end, r->freqs, r->positions_at, r->entry_end) ? GQ_YES : GQ_NO;
	return a;
}

static void
pending_tree_matches(GqIndex *gq, const GqTree *tree, gq_tree_tids_fn fn, void *arg)
{
	GpxPendingReader r;
	ItemPointerData tids[2][256];
	int			n[2] = {0, 0};
	bool		settle;
	GqPosMatch	pm;

	if (gq_pending_tree(gq, tree, fn, arg))
		return;
	/* entry by entry: the sure ones ([0]) and those to check ([1]) */
	settle = (gq->meta.flags & GPX_META_POSITIONS) && gq_tree_positions_settle(tree);
	if (settle)
		gq_pos_match_begin(&pm, tree);
	gpx_pending_begin(&r, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&r))
	{
		GqAnswer	a = gq_pending_entry_answer(tree, settle ? &pm : NULL, &r);
		int			k;

		if (a == GQ_NO)
			continue;
		k = a == GQ_YES ? 0 : 1;
		tids[k][n[k]++] = r.tid;
		if (n[k] == lengthof(tids[k]))
		{
			fn(arg, tids[k], n[k], k == 1);
			n[k] = 0;
		}
	}
	for (int k = 0; k < 2; k++)
		if (n[k] > 0)
			fn(arg, tids[k], n[k], k == 1);
	gpx_pending_end(&r);
	if (settle)
		gq_pos_match_end(&pm);
}

void
gq_flagged_tids(void *arg, ItemPointerData *tids, int n)
{
	GqFlaggedSink *f = arg;

	f->fn(f->arg, tids, n, f->recheck);
}

void
gq_tree_execute(GqIndex *gq, const GqTree *tree, gq_tree_tids_fn fn, void *arg)
{
	if (tree->root == NULL)
		return;
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		uint32		ndocs = gq_segment(gq, s)->hdr->ndocs;
		uint32		win = gq_tree_bounded_window(gq, s, tree);

		/* windows of the segment's docs, so that its sets stay within work_mem */
		for (uint64 lo = 0; lo < ndocs; lo += win)
		{
			uint32	   *sure;
			uint32	   *unsure;
			uint32		nsure;
			uint32		nunsure;
			GqFlaggedSink f = {fn, arg, false};

			CHECK_FOR_INTERRUPTS();
			segment_tree_split(gq, s, tree, (uint32) lo, (uint32) Min(lo + win, ndocs), true, &sure, &nsure,
							   &unsure, &nunsure);
			if (nsure > 0)
				map_and_emit(gq_segment(gq, s), sure, nsure, gq_flagged_tids, &f);
			f.recheck = true;
			if (nunsure > 0)
				map_and_emit(gq_segment(gq, s), unsure, nunsure, gq_flagged_tids, &f);
			if (sure)
				pfree(sure);
			if (unsure)
				pfree(unsure);
		}
	}
	pending_tree_matches(gq, tree, fn, arg);
}

static void
count_flagged(void *arg, ItemPointerData *tids, int n, bool recheck)
{
	*(uint64 *) arg += n;
}

void
gq_pending_tree_sample(GqIndex *gq, const GqTree *tree, uint32 max_pages, uint64 *entries,
					   uint64 *matches)
{
	GpxPendingReader r;

	*entries = *matches = 0;
	/* the backend's index of the pending area counts them all, reading only new pages */
	if (gq_pending_tree(gq, tree, count_flagged, matches))
	{
		*entries = gq->meta.pend_entries;
		return;
	}
	gpx_pending_begin(&r, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (r.pages_read <= max_pages && gpx_pending_next(&r))
	{
		(*entries)++;
		if (gq_tree_answer(tree, entry_has, &r) != GQ_NO)
			(*matches)++;
	}
	gpx_pending_end(&r);
}

/* ---------------------------------------------------------------------------
 * Where a tree's first matches lie (the planner's price of a sequential scan
 * under LIMIT or EXISTS)
 */

typedef struct MatchBlocks
{
	BlockNumber *blocks;
	uint32		n;
	uint32		cap;
} MatchBlocks;

static void
add_match_blocks(void *arg, ItemPointerData *tids, int n, bool recheck)
{
	MatchBlocks *mb = arg;

	if (mb->n + n > mb->cap)
	{
		mb->cap = Max(mb->cap * 2, mb->n + n);
		mb->blocks = repalloc_huge(mb->blocks, (Size) mb->cap * sizeof(BlockNumber));
	}
	for (int i = 0; i < n; i++)
		mb->blocks[mb->n++] = ItemPointerGetBlockNumber(&tids[i]);
}

static int
block_cmp(const void *x, const void *y)
{
	BlockNumber a = *(const BlockNumber *) x;
	BlockNumber b = *(const BlockNumber *) y;

	return (a > b) - (a < b);
}

/*
 * The first k candidates of each segment that lie in heap blocks up to
 * max_block (windows of its docs, the first of win docs, each next four
 * times larger, as a cursor under a limit reads them; none past a window
 * starting beyond max_block), and those of the pending area: their heap
 * blocks.
 */
static void
first_match_blocks(GqIndex *gq, const GqTree *tree, uint32 k, BlockNumber max_block, uint32 win,
				   MatchBlocks *mb)
{
	ItemPointerData *tids = palloc(TID_BATCH * sizeof(ItemPointerData));

	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		GpxSegment *seg = gq_segment(gq, s);
		uint32		ndocs = seg->hdr->ndocs;
		uint64		size = Max(win, 1);
		uint32		lo = 0;
		uint32		got = 0;

		while (lo < ndocs && got < k)
		{
			uint32		hi = (uint32) Min((uint64) lo + size, ndocs);
			uint32	   *sure;
			uint32	   *unsure;
			uint32		nsure;
			uint32		nunsure;
			uint32	   *both;
			uint32		nboth;
			uint32		first;

			CHECK_FOR_INTERRUPTS();
			/* a window whose first live doc lies past max_block holds none before it */
			if (gpx_seg_map(seg, &lo, 1, tids) == 1 && ItemPointerGetBlockNumber(&tids[0]) > max_block)
				break;
			segment_tree_split(gq, s, tree, lo, hi, true, &sure, &nsure, &unsure, &nunsure);
			/* the unsure ones may match too: both, in doc order */
			both = palloc(Max(nsure + nunsure, 1) * sizeof(uint32));
			nboth = cpu_merge_union(nsure ? sure : both, nsure, nunsure ? unsure : both, nunsure, both);
			for (first = 0; first < nboth && got < k; first += TID_BATCH)
			{
				uint32		n = gpx_seg_map(seg, both + first, Min(nboth - first, TID_BATCH), tids);
				uint32		kept = 0;

				for (uint32 i = 0; i < n && got + kept < k; i++)
					if (ItemPointerGetBlockNumber(&tids[i]) <= max_block)
						tids[kept++] = tids[i];
				add_match_blocks(mb, tids, (int) kept, false);
				got += kept;
			}
			pfree(both);
			if (sure)
				pfree(sure);
			if (unsure)
				pfree(unsure);
			lo = hi;
			size *= 4;
		}
	}
	pfree(tids);
	pending_tree_matches(gq, tree, add_match_blocks, mb);
}

bool
gq_kth_match_block(GqIndex *gq, const GqTree *tree, uint32 k, BlockNumber max_block, uint32 win,
				   BlockNumber *block)
{
	MatchBlocks mb = {0};
	bool		found;

	if (tree->root == NULL || k == 0)
		return false;
	mb.cap = Max(k, 16);
	mb.blocks = palloc_extended((Size) mb.cap * sizeof(BlockNumber), MCXT_ALLOC_HUGE);
	first_match_blocks(gq, tree, k, max_block, win, &mb);
	qsort(mb.blocks, mb.n, sizeof(BlockNumber), block_cmp);
	found = mb.n >= k && mb.blocks[k - 1] <= max_block;
	if (found)
		*block = mb.blocks[k - 1];
	pfree(mb.blocks);
	return found;
}
