/*
 * query.c
 *	  The query executor: term lookup per segment, SvS round planning,
 *	  rounds on the CPU, doc ids to TIDs, and the pending area.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "query/query.h"
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

static int
term_df_cmp(const void *x, const void *y)
{
	const GqTerm *a = *(const GqTerm *const *) x;
	const GqTerm *b = *(const GqTerm *const *) y;

	return (a->ref.df > b->ref.df) - (a->ref.df < b->ref.df);
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

/*
 * The rounds the placement gives the GPU worker (worker/worker.h): the
 * lists of the shortest terms, whole, to the worker; their intersection in
 * docs and its length in *k.  Returns how many terms it covered; 0 when the
 * query stays here (no worker, the placement, or any failure: the CPU then
 * does it all).  Inline lists are sent raw-encoded.
 */
static int
device_rounds(GpxSegment *seg, GqTerm **order, int n, uint32 *docs, uint32 *k)
{
	uint32		dfs[GPUIDX_ENGINE_MAX_TERMS];
	const void *bytes[GPUIDX_ENGINE_MAX_TERMS];
	uint64		lens[GPUIDX_ENGINE_MAX_TERMS];
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
	for (int i = 0; i < ndev; i++)
	{
		GqTerm	   *t = order[i];
		bool		inline_list = !t->ref.external;

		gpx_seg_list(seg, &t->ref, &t->list);
		t->opened = true;
		raw[i] = NULL;
		if (inline_list)
		{
			/* decoded already: the worker takes it raw-encoded */
			const uint32 *ids = (const uint32 *) t->list.mem;

			lens[i] = pl_encoded_size(GPUIDX_CODEC_RAW, ids, t->list.df);
			raw[i] = palloc(lens[i]);
			pl_encode(GPUIDX_CODEC_RAW, ids, t->list.df, raw[i]);
			bytes[i] = raw[i];
		}
		else
		{
			bytes[i] = t->list.mem;
			lens[i] = t->list.view.total_bytes;
		}
	}
	answered = gpx_worker_intersect(bytes, lens, ndev, docs, order[0]->ref.df, k);
	for (int i = 0; i < ndev; i++)
		if (raw[i])
			pfree(raw[i]);
	if (!answered)
		return 0;				/* the CPU does it all, from the lists open now */
	gpx_count_worker_rounds(ndev - 1);
	if (ndev < n)
		gpx_count_backend_rounds(n - ndev);
	for (int i = 0; i < ndev; i++)
	{
		gpx_list_free(&order[i]->list);
		order[i]->opened = false;
	}
	return ndev;
}

/*
 * The doc ids of one segment matching every term, in *docs; returns how
 * many.  The dictionary first: a term the segment lacks costs no list read.
 * Then shortest first: the shortest list decoded whole, each next one
 * opened only when its round comes, and only as far as the round needs.
 */
static uint32
segment_matches(GqIndex *gq, int s, const GpxLexemes *q, uint32 **docs)
{
	GpxSegment *seg = gq_segment(gq, s);
	GqTerm	   *terms = palloc0(q->n * sizeof(GqTerm));
	GqTerm	  **order = palloc(q->n * sizeof(GqTerm *));
	uint32		k;
	int			first;

	*docs = NULL;
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

	*docs = palloc_extended(Max((Size) order[0]->ref.df, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	first = device_rounds(seg, order, q->n, *docs, &k);
	if (first == 0)
	{
		if (!order[0]->opened)
			gpx_seg_list(seg, &order[0]->ref, &order[0]->list);
		order[0]->opened = true;
		if (pl_decode(&order[0]->list.view, *docs) != PL_OK)
			list_out_of_order(seg, order[0]);
		k = order[0]->ref.df;
		first = 1;
	}
	for (int r = first; r < q->n && k > 0; r++)
	{
		GqTerm	   *t = order[r];
		cpu_method	method = cpu_pick_method(k, t->ref.df);

		CHECK_FOR_INTERRUPTS();
		/* a search reaches only the blocks the candidates fall in: read those */
		if (t->opened)
			;					/* opened for the worker, which did not answer */
		else if (method == CPU_METHOD_SKIP)
			gpx_seg_list_probed(seg, &t->ref, *docs, k, &t->list);
		else
			gpx_seg_list(seg, &t->ref, &t->list);
		t->opened = true;
		k = cpu_intersect_array_list(*docs, k, &t->list.view, *docs, method, 0, NULL);
		if (k == CPU_CORRUPT)
			list_out_of_order(seg, t);
		gpx_list_free(&t->list);
		t->opened = false;
		t->ref.payload = NULL;
	}
	close_terms(terms, q->n);
	pfree(terms);
	pfree(order);
	return k;
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

	if (r->nlex < (uint32) terms->n)
		return false;
	while (t < terms->n && gpx_pending_lexeme(&p, r->end, &lex, &len))
	{
		int			c = gpx_lexeme_cmp(lex, len, terms->lex[t], terms->len[t]);

		if (c == 0)
			t++;
		else if (c > 0)
			return false;
	}
	return t == terms->n;
}

void
gq_pending_sample(GqIndex *gq, const GpxLexemes *terms, uint32 max_pages, uint64 *entries,
				  uint64 *matches)
{
	GpxPendingReader r;

	*entries = *matches = 0;
	gpx_pending_begin(&r, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (r.pages_read <= max_pages && gpx_pending_next(&r))
	{
		(*entries)++;
		if (entry_matches(&r, terms))
			(*matches)++;
	}
	gpx_pending_end(&r);
}

static void
pending_matches(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg)
{
	GpxPendingReader r;
	ItemPointerData tids[256];
	int			n = 0;

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
		uint32		k;

		CHECK_FOR_INTERRUPTS();
		k = segment_matches(gq, s, terms, &docs);
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

GqCursor *
gq_cursor_begin(GqIndex *gq, const GpxLexemes *terms)
{
	GqCursor   *c = palloc0(sizeof(GqCursor));

	c->gq = gq;
	c->terms = *terms;
	c->tids = palloc(TID_BATCH * sizeof(ItemPointerData));
	c->done = terms->n == 0;
	return c;
}

bool
gq_cursor_next(GqCursor *c, ItemPointer tid)
{
	while (!c->done)
	{
		if (c->tpos < c->ntids)
		{
			*tid = c->tids[c->tpos++];
			return true;
		}
		if (c->docs != NULL && c->dpos < c->ndocs)
		{
			uint32		n = Min(TID_BATCH, c->ndocs - c->dpos);

			CHECK_FOR_INTERRUPTS();
			c->ntids = gpx_seg_map(gq_segment(c->gq, c->seg - 1), c->docs + c->dpos, n, c->tids);
			c->tpos = 0;
			c->dpos += n;
			continue;
		}
		if (c->docs)
		{
			pfree(c->docs);
			c->docs = NULL;
		}
		if (c->seg < (int) c->gq->meta.nsegments)
		{
			CHECK_FOR_INTERRUPTS();
			c->ndocs = segment_matches(c->gq, c->seg, &c->terms, &c->docs);
			c->dpos = 0;
			c->seg++;
			continue;
		}
		if (!c->pending_read)
		{
			pending_matches(c->gq, &c->terms, collect_pending, c);
			c->pending_read = true;
		}
		if (c->ppos < c->npending)
		{
			*tid = c->pending[c->ppos++];
			return true;
		}
		c->done = true;
	}
	return false;
}

void
gq_cursor_end(GqCursor *c)
{
	if (c->docs)
		pfree(c->docs);
	if (c->pending)
		pfree(c->pending);
	pfree(c->tids);
	pfree(c);
}
