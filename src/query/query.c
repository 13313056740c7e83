/*
 * query.c
 *	  The query executor: term lookup per segment, SvS round planning,
 *	  rounds on the CPU, doc ids to TIDs, and the pending area.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "query/query.h"
#include "store/pending.h"

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

void
gq_free_lists(GpxList *lists, int n)
{
	for (int i = 0; i < n; i++)
		gpx_list_free(&lists[i]);
}

bool
gq_lookup(GqIndex *gq, int seg, const GpxLexemes *terms, GpxList *lists)
{
	GpxSegment *s = gq_segment(gq, seg);
	GpxTermRef *refs = palloc(terms->n * sizeof(GpxTermRef));
	int			found = 0;

	/* the dictionary first: a term the segment lacks costs no list read */
	for (; found < terms->n; found++)
		if (!gpx_seg_find(s, terms->lex[found], terms->len[found], &refs[found]))
			break;
	if (found < terms->n)
	{
		for (int i = 0; i < found; i++)
			if (refs[i].payload)
				pfree(refs[i].payload);
		pfree(refs);
		return false;
	}
	for (int i = 0; i < terms->n; i++)
		gpx_seg_list(s, &refs[i], &lists[i]);
	pfree(refs);
	return true;
}

GqPlan *
gq_plan(const GpxList *lists, int n)
{
	GqPlan	   *plan = palloc(offsetof(GqPlan, rounds) + Max(n - 1, 1) * sizeof(GqRound));
	int		   *order = palloc(n * sizeof(int));
	double		bound;

	/* shortest first: insertion sort, n is small */
	for (int i = 0; i < n; i++)
	{
		int			j = i;

		while (j > 0 && lists[order[j - 1]].df > lists[i].df)
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	plan->first = order[0];
	plan->nrounds = n - 1;
	bound = lists[order[0]].df;
	for (int r = 0; r < n - 1; r++)
	{
		plan->rounds[r].list = order[r + 1];
		plan->rounds[r].ratio = lists[order[r + 1]].df / Max(bound, 1.0);
	}
	pfree(order);
	return plan;
}

uint32
gq_run_cpu(const GqPlan *plan, const GpxList *lists, uint32 *out, cpu_stats *stats)
{
	uint32		k;

	if (plan->nrounds == 0)
	{
		const pl_view *v = &lists[plan->first].view;

		if (stats)
			stats->blocks_touched += v->nblocks;
		if (pl_decode(v, out) != PL_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuidx posting list does not decode")));
		return v->count;
	}
	/* the method of each round follows the real lengths (cpu_pick_method) */
	k = cpu_intersect_lists(&lists[plan->first].view, &lists[plan->rounds[0].list].view,
							out, CPU_METHOD_AUTO, 0, stats);
	for (int r = 1; r < plan->nrounds && k > 0 && k != CPU_CORRUPT; r++)
	{
		CHECK_FOR_INTERRUPTS();
		k = cpu_intersect_array_list(out, k, &lists[plan->rounds[r].list].view, out,
									 CPU_METHOD_AUTO, 0, stats);
	}
	if (k == CPU_CORRUPT)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuidx posting list does not decode")));
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
gq_pending(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg, GqStats *stats)
{
	GpxPendingReader r;
	ItemPointerData tids[256];
	int			n = 0;

	gpx_pending_begin(&r, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&r))
	{
		if (stats)
			stats->pending_entries++;
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
gq_execute(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg, GqStats *stats)
{
	GpxList    *lists = palloc(Max(terms->n, 1) * sizeof(GpxList));

	if (terms->n == 0)
		return;
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		GqPlan	   *plan;
		uint32	   *docs;
		uint32		k;

		CHECK_FOR_INTERRUPTS();
		if (!gq_lookup(gq, s, terms, lists))
		{
			if (stats)
				stats->segments_skipped++;
			continue;
		}
		plan = gq_plan(lists, terms->n);
		docs = palloc_extended(Max((Size) lists[plan->first].df, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
		k = gq_run_cpu(plan, lists, docs, stats ? &stats->cpu : NULL);
		if (stats)
		{
			stats->segments++;
			stats->results += k;
			for (int i = 0; i < terms->n; i++)
				stats->postings += lists[i].df;
		}
		map_and_emit(gq_segment(gq, s), docs, k, fn, arg);
		pfree(docs);
		pfree(plan);
		gq_free_lists(lists, terms->n);
	}
	gq_pending(gq, terms, fn, arg, stats);
	pfree(lists);
}
