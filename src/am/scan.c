/*
 * scan.c
 *	  Bitmap index scans: the query's lexemes under gpuidx.text_config, then
 *	  the executor (query/) over every segment and the pending area.  Matches
 *	  are exact, so no heap recheck is asked for.  A text index built under
 *	  another configuration than the current one cannot answer: the planner
 *	  is told so (cost.c), and if it is used anyway every heap page goes into
 *	  the bitmap as lossy, so the operator decides row by row.  A tsvector
 *	  index answers under any (its lexemes do not depend on it).
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/table.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "query/query.h"
#include "query/rank.h"
#include "am/rank.h"

/* top k first asked of a ranked scan, and the factor it grows by */
#define RANK_FIRST_K	32
#define RANK_GROWTH		8

typedef struct GpxScanOpaque
{
	MemoryContext cxt;			/* the bitmap scan's, per call */
	/* amgettuple: the scan's state, in rcxt */
	MemoryContext rcxt;
	bool		started;
	bool		empty;			/* no row can match */
	GpxLexemes	filter;			/* the keys' terms (ANDed) */
	bool		ranked;
	GqIndex    *gq;
	GqRank	   *rank;
	uint32		k;				/* top k computed */
	uint32		nres;
	uint32		rescap;			/* room in res */
	ItemPointerData *res;		/* best first (ranked) or in TID order */
	double	   *scores;
	uint32		pos;			/* next to return */
	uint64		returned;		/* ranked rows returned so far */
	bool		complete;		/* res holds every row with a score */
	bool		zeros;			/* res now holds the rows of score 0 */
} GpxScanOpaque;

typedef struct BitmapSink
{
	TIDBitmap  *tbm;
	int64		ntids;
} BitmapSink;

IndexScanDesc
gpx_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	GpxScanOpaque *so = palloc(sizeof(GpxScanOpaque));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx scan", ALLOCSET_DEFAULT_SIZES);
	so->rcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx ordered scan", ALLOCSET_DEFAULT_SIZES);
	so->started = false;
	so->gq = NULL;
	scan->opaque = so;
	/* the ORDER BY values the executor reads (ours to allocate) */
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(norderbys * sizeof(Datum));
		scan->xs_orderbynulls = palloc(norderbys * sizeof(bool));
		memset(scan->xs_orderbynulls, true, norderbys * sizeof(bool));
	}
	return scan;
}

static void
reset_tuple_scan(GpxScanOpaque *so)
{
	if (so->gq)
		gq_close(so->gq);
	so->gq = NULL;
	so->rank = NULL;
	so->started = false;
	MemoryContextReset(so->rcxt);
}

void
gpx_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));
	reset_tuple_scan(scan->opaque);
}

void
gpx_endscan(IndexScanDesc scan)
{
	GpxScanOpaque *so = scan->opaque;

	reset_tuple_scan(so);
	MemoryContextDelete(so->cxt);
	MemoryContextDelete(so->rcxt);
	pfree(so);
}

void
gpx_query_terms(Oid cfg, text *query, GpxLexemes *out)
{
	gpx_lexemes_of_text(cfg, VARDATA_ANY(query), VARSIZE_ANY_EXHDR(query), out);
}

static void
add_to_bitmap(void *arg, ItemPointerData *tids, int n)
{
	BitmapSink *sink = arg;

	tbm_add_tuples(sink->tbm, tids, n, false);
	sink->ntids += n;
}

int64
gpx_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	GpxScanOpaque *so = scan->opaque;
	MemoryContext old;
	Oid			cfg;
	GpxLexemes	terms = {0};
	BitmapSink	sink = {tbm, 0};

	MemoryContextReset(so->cxt);
	old = MemoryContextSwitchTo(so->cxt);
	cfg = gpx_current_config();

	/* the keys are ANDed: one set of terms */
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		GpxLexemes	q;

		if (key->sk_flags & SK_ISNULL)
			goto done;
		gpx_query_terms(cfg, DatumGetTextPP(key->sk_argument), &q);
		if (q.n == 0)
			goto done;			/* no lexemes: no row matches */
		if (i == 0)
			terms = q;
		else
		{
			GpxLexemes	u;

			gpx_lexemes_union(&terms, &q, &u);
			terms = u;
		}
	}

	if (!gpx_index_answers(scan->indexRelation, cfg))
	{
		/* bitmap scans get no heap relation: the executor has it locked */
		Relation	heap = table_open(scan->indexRelation->rd_index->indrelid, NoLock);
		BlockNumber nblocks = RelationGetNumberOfBlocks(heap);

		table_close(heap, NoLock);
		for (BlockNumber b = 0; b < nblocks; b++)
			tbm_add_page(tbm, b);
		sink.ntids = nblocks;
	}
	else if (terms.n > 0)
	{
		GqIndex    *gq = gq_open(scan->indexRelation);

		gq_execute(gq, &terms, add_to_bitmap, &sink);
		gq_close(gq);
	}
done:
	MemoryContextSwitchTo(old);
	MemoryContextReset(so->cxt);
	return sink.ntids;
}

/* ---------------------------------------------------------------------------
 * amgettuple: plain index scans (matches in TID order) and ordered scans
 * (doc <=> query: best first, ties by TID, then the rows of score 0 in TID
 * order).  The executor does not pass the LIMIT down: the top k grows by a
 * factor when the rows returned run out (rows the heap finds invisible
 * take places too), each time recomputed and continued where it was.
 */
static void
collect_tids(void *arg, ItemPointerData *tids, int n)
{
	GpxScanOpaque *so = arg;

	if ((uint64) so->nres + n > so->rescap)
	{
		so->rescap = (uint32) Min(Max((uint64) so->rescap * 2, (uint64) so->nres + n), (uint64) PG_UINT32_MAX);
		so->res = so->res ? repalloc_huge(so->res, (Size) so->rescap * sizeof(ItemPointerData))
			: palloc_extended((Size) so->rescap * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	}
	memcpy(so->res + so->nres, tids, n * sizeof(ItemPointerData));
	so->nres += n;
}

static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

static void
start_tuple_scan(IndexScanDesc scan)
{
	GpxScanOpaque *so = scan->opaque;
	Relation	index = scan->indexRelation;
	Oid			cfg = gpx_current_config();

	so->started = true;
	so->empty = false;
	so->filter.n = 0;
	so->ranked = scan->numberOfOrderBys > 0;
	so->res = NULL;
	so->rescap = 0;
	so->nres = 0;
	so->pos = 0;
	so->returned = 0;
	so->complete = false;
	so->zeros = false;
	so->scores = NULL;
	if (!gpx_index_answers(index, cfg))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" was built under text search configuration %s, not the current one",
						RelationGetRelationName(index), gpx_config_qualified_name(gpx_index_config(index))),
				 errhint("Set gpuidx.text_config to it, or plan the query again.")));
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		GpxLexemes	q;

		if (key->sk_flags & SK_ISNULL)
		{
			so->empty = true;
			return;
		}
		gpx_query_terms(cfg, DatumGetTextPP(key->sk_argument), &q);
		if (q.n == 0)
		{
			so->empty = true;	/* no lexemes: no row matches */
			return;
		}
		if (i == 0)
			so->filter = q;
		else
		{
			GpxLexemes	u;

			gpx_lexemes_union(&so->filter, &q, &u);
			so->filter = u;
		}
	}
	so->gq = gq_open(index);
	if (!so->ranked)
	{
		if (scan->numberOfKeys == 0)
			elog(ERROR, "gpuidx: an index scan needs a key or an ORDER BY");
		gq_execute(so->gq, &so->filter, collect_tids, so);
		qsort(so->res, so->nres, sizeof(ItemPointerData), tid_cmp);
		so->complete = true;
		return;
	}
	{
		ScanKey		ob = &scan->orderByData[0];
		Oid			bound;
		const char *q;
		int			qlen;
		GpxLexemes	terms;
		double		k1;
		double		b;

		if (ob->sk_flags & SK_ISNULL)
		{
			so->empty = true;
			return;
		}
		if (gpx_rank_query_parse(DatumGetTextPP(ob->sk_argument), &bound, &q, &qlen) &&
			bound != RelationGetRelid(index))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a ranked query bound to index \"%s\" cannot be answered by index \"%s\"",
							get_rel_name(bound), RelationGetRelationName(index))));
		gpx_rank_query_terms(index, q, qlen, &terms);
		gpx_index_bm25_params(index, &k1, &b);
		so->rank = gq_rank_begin(so->gq, &terms, scan->numberOfKeys > 0 ? &so->filter : NULL, k1, b);
		so->k = 0;
	}
}

/* the rows of score 0: those the keys match (or all), less the ranked ones */
static void
collect_zeros(GpxScanOpaque *so)
{
	ItemPointerData *ranked = palloc_extended(Max(so->nres, 1) * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	uint32		nranked = so->nres;
	uint32		k = 0;
	uint32		j = 0;

	memcpy(ranked, so->res, nranked * sizeof(ItemPointerData));
	qsort(ranked, nranked, sizeof(ItemPointerData), tid_cmp);
	so->nres = 0;
	if (so->filter.n > 0)
		gq_execute(so->gq, &so->filter, collect_tids, so);
	else
		gq_all_tids(so->gq, collect_tids, so);
	qsort(so->res, so->nres, sizeof(ItemPointerData), tid_cmp);
	for (uint32 i = 0; i < so->nres; i++)
	{
		while (j < nranked && ItemPointerCompare(&ranked[j], &so->res[i]) < 0)
			j++;
		if (j < nranked && ItemPointerEquals(&ranked[j], &so->res[i]))
			continue;
		so->res[k++] = so->res[i];
	}
	so->nres = k;
	so->pos = 0;
	so->zeros = true;
	pfree(ranked);
}

bool
gpx_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	GpxScanOpaque *so = scan->opaque;
	MemoryContext old = MemoryContextSwitchTo(so->rcxt);

	if (!so->started)
		start_tuple_scan(scan);
	scan->xs_recheck = false;
	scan->xs_recheckorderby = false;
	for (;;)
	{
		if (so->empty)
			break;
		if (so->pos < so->nres)
		{
			scan->xs_heaptid = so->res[so->pos];
			if (so->ranked)
			{
				double		score = so->zeros ? 0.0 : so->scores[so->pos];

				scan->xs_orderbyvals[0] = Float8GetDatum(score > 0.0 ? -score : 0.0);
				scan->xs_orderbynulls[0] = false;
				if (!so->zeros)
					so->returned++;
			}
			so->pos++;
			MemoryContextSwitchTo(old);
			return true;
		}
		if (!so->ranked || so->zeros)
			break;
		if (!so->complete)
		{
			/* the next, larger top k, continued after the rows returned */
			/* never more than the documents the index holds: that is all of them */
			so->k = so->k == 0 ? RANK_FIRST_K : (uint32) Min((uint64) so->k * RANK_GROWTH, (uint64) PG_INT32_MAX);
			so->k = (uint32) Min((double) so->k, Max(so->rank->ndocs, 1.0));
			if (so->res)
				pfree(so->res);
			if (so->scores)
				pfree(so->scores);
			so->res = palloc_extended((Size) so->k * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
			so->rescap = so->k;
			so->scores = palloc_extended((Size) so->k * sizeof(double), MCXT_ALLOC_HUGE);
			so->nres = gq_rank_topk(so->rank, so->k, so->res, so->scores);
			so->complete = so->nres < so->k || so->k >= so->rank->ndocs;
			so->pos = (uint32) Min(so->returned, (uint64) so->nres);
			continue;
		}
		collect_zeros(so);
	}
	MemoryContextSwitchTo(old);
	return false;
}
