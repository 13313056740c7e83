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
#include "pgstat.h"
#include "nodes/tidbitmap.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "gpuidx_engine.h"
#include "query/query.h"
#include "query/tsq.h"
#include "query/rank.h"
#include "am/rank.h"

static char *
config_name(Oid cfg)
{
	return DatumGetCString(DirectFunctionCall1(regconfigout, ObjectIdGetDatum(cfg)));
}

/* top k first asked of a ranked scan, and the factor it grows by */
#define RANK_FIRST_K	32
#define RANK_GROWTH		8
/* the largest first k a LIMIT sets: the GPU engine's largest */
#define RANK_FIRST_K_MAX GPUIDX_RANK_MAX_K

typedef struct GpxScanOpaque
{
	MemoryContext cxt;			/* the bitmap scan's, per call */
	/* amgettuple: the scan's state, in rcxt */
	MemoryContext rcxt;
	bool		started;
	bool		empty;			/* no row can match */
	GpxLexemes	filter;			/* the keys' terms (ANDed) */
	GqTree	   *tree;			/* or, with a tsquery key, the keys' tree */
	bool		recheck;		/* the rows are candidates: the executor checks them */
	bool		ranked;
	GqIndex    *gq;
	GqRank	   *rank;
	uint32		k;				/* top k computed */
	uint32		first_k;		/* the first round's, 0: RANK_FIRST_K (gpx_scan_set_first_k) */
	uint32		nres;
	uint32		rescap;			/* room in res */
	ItemPointerData *res;		/* best first (ranked) or in TID order */
	double	   *scores;
	uint32		pos;			/* next to return */
	uint64		returned;		/* ranked rows returned so far */
	bool		complete;		/* res holds every row with a score */
	bool		null_order;		/* ORDER BY doc <=> NULL: no row has a score */
	bool		zeros;			/* on to the rows of score 0 */
	/* the rows of score 0 of an unfiltered scan, merged in TID order */
	struct ZeroSource *zsrc;
	int			nzsrc;
	ItemPointerData *scored;	/* the rows with a score, in TID order */
	uint32		nscored;
	uint32		spos;
	/* then the rows the index does not hold (no document: <=> is NULL) */
	GpxNullScan *nulls;
	bool		nulls_done;
	uint64		nnulls;
} GpxScanOpaque;

/*
 * Rows of score 0 come in TID order from each segment, then merged: a
 * segment whose TIDs follow its doc ids (GPX_SEG_TID_ORDER, what builds and
 * most merges write) a doc map chunk at a time, as the scan goes, so a LIMIT
 * a few rows past the last scored one reads a chunk or two; other segments
 * and the pending area as a sorted array.
 */
typedef struct ZeroSource
{
	GpxSegment *seg;			/* streamed, or NULL */
	uint32		chunk;			/* the next chunk to read */
	ItemPointerData *tids;		/* a chunk's live TIDs, or the whole sorted array */
	uint32		n;
	uint32		pos;
} ZeroSource;

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
	so->nulls = NULL;
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
	if (so->nulls)
		gpx_nulls_end(so->nulls);
	so->nulls = NULL;
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
	/* pg_stat_*_indexes.idx_scan, as every index access method counts a scan */
	gpx_count_index_scan(scan);
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

GqTree *
gpx_keys_tree(ScanKey keys, int nkeys, Oid cfg)
{
	GqTree	   *tree;
	bool		any = false;

	for (int i = 0; i < nkeys; i++)
		any |= GPX_IS_TSQUERY_STRATEGY(keys[i].sk_strategy);
	if (!any)
		return NULL;
	tree = gq_tree_new();
	for (int i = 0; i < nkeys; i++)
	{
		ScanKey		key = &keys[i];

		if (key->sk_flags & SK_ISNULL)
			gq_tree_add_nothing(tree);
		else if (GPX_IS_TSQUERY_STRATEGY(key->sk_strategy))
			gq_tree_add_tsquery(tree, DatumGetTSQuery(key->sk_argument));
		else
		{
			GpxLexemes	q;

			gpx_query_terms(cfg, DatumGetTextPP(key->sk_argument), &q);
			if (q.n == 0)
				gq_tree_add_nothing(tree);	/* no lexemes: no row matches */
			else
				gq_tree_add_lexemes(tree, &q);
		}
	}
	return tree;
}

static void
add_to_bitmap(void *arg, ItemPointerData *tids, int n)
{
	BitmapSink *sink = arg;

	tbm_add_tuples(sink->tbm, tids, n, false);
	sink->ntids += n;
}

/* a tree's candidates: those the index cannot confirm are rechecked */
static void
add_to_bitmap_flagged(void *arg, ItemPointerData *tids, int n, bool recheck)
{
	BitmapSink *sink = arg;

	tbm_add_tuples(sink->tbm, tids, n, recheck);
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
	GqTree	   *tree;

	MemoryContextReset(so->cxt);
	old = MemoryContextSwitchTo(so->cxt);
	cfg = gpx_current_config();

	/* a tsquery: its tree (a tsvector index answers under any configuration) */
	tree = gpx_keys_tree(scan->keyData, scan->numberOfKeys, cfg);
	if (tree != NULL)
	{
		GqIndex    *gq = gq_open(scan->indexRelation);

		/* the bitmap marks the unsure candidates for the heap scan's recheck */
		tree->rows_checked = true;
		gq_tree_execute(gq, tree, add_to_bitmap_flagged, &sink);
		gq_close(gq);
		goto done;
	}

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
 * order, then, without a key, the rows the index does not hold, whose
 * value is NULL: nulls.c).  The executor does not pass the LIMIT down: the
 * top k grows by a factor when the rows returned run out (rows the heap
 * finds invisible take places too), each time recomputed and continued
 * where it was.
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

/* a plain index scan rechecks every row of a tree that has anything to check */
static void
collect_tids_flagged(void *arg, ItemPointerData *tids, int n, bool recheck)
{
	GpxScanOpaque *so = arg;

	so->recheck |= recheck;
	collect_tids(arg, tids, n);
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
	so->null_order = false;
	so->zeros = false;
	so->nulls_done = false;
	so->nnulls = 0;
	so->zsrc = NULL;
	so->nzsrc = 0;
	so->scores = NULL;
	so->recheck = false;
	so->tree = gpx_keys_tree(scan->keyData, scan->numberOfKeys, cfg);
	if (so->tree != NULL)
	{
		/*
		 * Ranked, a tsquery key narrows the ranking to the rows having the
		 * lexemes it requires, and the executor checks the keys on each
		 */
		so->recheck = so->tree->recheck || so->ranked;
		if (so->tree->root == NULL)
		{
			so->empty = true;
			return;
		}
		if (so->ranked)
			gq_tree_required_terms(so->tree, &so->filter);
		else
			so->tree->rows_checked = true;	/* all collected before the first row: one recheck flag */
	}
	if (!gpx_index_answers(index, cfg))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" was built under text search configuration %s, not the current one",
						RelationGetRelationName(index), gpx_config_qualified_name(gpx_index_config(index))),
				 errhint("Set gpuidx.text_config to it, or plan the query again.")));
	for (int i = 0; i < scan->numberOfKeys && so->tree == NULL; i++)
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
		if (so->tree != NULL)
			gq_tree_execute(so->gq, so->tree, collect_tids_flagged, so);
		else
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

		/*
		 * Under a tree with phrases or weights the ranking takes only the
		 * tree's candidates (the docs with its required lexemes, which a
		 * phrase's root does not name), and where the index's positions
		 * settle them, its matches alone: then no row is checked again
		 */
		const GqTree *rank_tree = so->tree != NULL && so->tree->recheck ? so->tree : NULL;

		if (ob->sk_flags & SK_ISNULL)
		{
			/* every row's value is NULL: all come, unordered, none ranked */
			so->null_order = true;
			so->complete = true;
			return;
		}
		if (ob->sk_strategy == GPX_STRATEGY_RANK_GIVEN)
		{
			/* the collection's statistics, given in the query (bm25query.c) */
			GpxBm25Query bq;
			GqRankStats given;

			gpx_bm25query_read(ob->sk_argument, &bq);
			if (gpx_index_info(index)->kind == GPX_KIND_TEXT && bq.config != gpx_index_config(index))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("the bm25query's text search configuration is not that of index \"%s\"",
								RelationGetRelationName(index)),
						 errdetail("Its documents are read under \"%s\", the query's under \"%s\".",
								   config_name(gpx_index_config(index)), config_name(bq.config))));
			given.ndocs = bq.ndocs;
			given.length = bq.length;
			given.df = bq.df;
			so->rank = gq_rank_begin(so->gq, &bq.terms, so->filter.n > 0 ? &so->filter : NULL,
									 rank_tree, bq.k1, bq.b, &given);
			so->recheck = so->recheck && !so->rank->tree_settled;
			so->k = 0;
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
		so->rank = gq_rank_begin(so->gq, &terms, so->filter.n > 0 ? &so->filter : NULL,
								 rank_tree, k1, b, NULL);
		so->recheck = so->recheck && !so->rank->tree_settled;
		so->k = 0;
	}
}

static void
sorted_array_source(ZeroSource *z, ItemPointerData *tids, uint32 n)
{
	qsort(tids, n, sizeof(ItemPointerData), tid_cmp);
	z->seg = NULL;
	z->tids = tids;
	z->n = n;
	z->pos = 0;
}

/* the rows of score 0: those the keys match (or all), less the ranked ones */
static void
start_zeros(GpxScanOpaque *so)
{
	GqIndex    *gq = so->gq;
	int			nseg = (int) gq->meta.nsegments;

	so->zeros = true;
	so->nscored = so->nres;
	so->scored = so->res;
	if (so->nscored > 0)
		qsort(so->scored, so->nscored, sizeof(ItemPointerData), tid_cmp);
	so->spos = 0;
	so->res = NULL;
	so->rescap = 0;
	so->nres = 0;
	so->pos = 0;
	if (so->rank != NULL && so->rank->conjunctive)
		return;					/* a row with every term has a score */
	if (so->tree != NULL || so->filter.n > 0)
	{
		/*
		 * The keys' matches, usually few: a tree's candidates (its matches
		 * alone where positions settle them), not every row; those the
		 * index cannot settle are checked
		 */
		if (so->tree != NULL)
			gq_tree_execute(gq, so->tree, collect_tids_flagged, so);
		else
			gq_execute(gq, &so->filter, collect_tids, so);
		so->zsrc = palloc(sizeof(ZeroSource));
		so->nzsrc = 1;
		sorted_array_source(&so->zsrc[0], so->res, so->nres);
		so->res = NULL;
		so->rescap = 0;
		so->nres = 0;
		return;
	}
	so->zsrc = palloc0((nseg + 1) * sizeof(ZeroSource));
	for (int s = 0; s < nseg; s++)
	{
		GpxSegment *seg = gq_segment(gq, s);
		ZeroSource *z = &so->zsrc[so->nzsrc++];

		if (seg->hdr->flags & GPX_SEG_TID_ORDER)
		{
			z->seg = seg;
			z->tids = palloc(GPX_DOCMAP_CHUNK * sizeof(ItemPointerData));
		}
		else
		{
			gq_segment_tids(gq, s, collect_tids, so);
			sorted_array_source(z, so->res, so->nres);
			so->res = NULL;
			so->rescap = 0;
			so->nres = 0;
		}
	}
	gq_pending_tids(gq, collect_tids, so);
	sorted_array_source(&so->zsrc[so->nzsrc++], so->res, so->nres);
	so->res = NULL;
	so->rescap = 0;
	so->nres = 0;
}

/* the source's current TID, reading its next chunk when needed; false when done */
static bool
zero_peek(ZeroSource *z, ItemPointer tid)
{
	while (z->pos == z->n)
	{
		ItemPointerData all[GPX_DOCMAP_CHUNK];
		uint32		len;

		if (z->seg == NULL || z->chunk >= z->seg->hdr->docmap_chunks)
			return false;
		len = gpx_seg_chunk(z->seg, z->chunk, all);
		z->n = 0;
		z->pos = 0;
		for (uint32 j = 0; j < len; j++)
			if (!gpx_seg_is_dead(z->seg, z->chunk * GPX_DOCMAP_CHUNK + j))
				z->tids[z->n++] = all[j];
		z->chunk++;
	}
	*tid = z->tids[z->pos];
	return true;
}

/* the next row of score 0, in TID order; false after the last */
static bool
next_zero(GpxScanOpaque *so, ItemPointer out)
{
	for (;;)
	{
		int			best = -1;
		ItemPointerData tid;
		ItemPointerData best_tid;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < so->nzsrc; i++)
			if (zero_peek(&so->zsrc[i], &tid) &&
				(best < 0 || ItemPointerCompare(&tid, &best_tid) < 0))
			{
				best = i;
				best_tid = tid;
			}
		if (best < 0)
			return false;
		so->zsrc[best].pos++;
		while (so->spos < so->nscored && ItemPointerCompare(&so->scored[so->spos], &best_tid) < 0)
			so->spos++;
		if (so->spos < so->nscored && ItemPointerEquals(&so->scored[so->spos], &best_tid))
			continue;			/* it has a score: returned already */
		*out = best_tid;
		return true;
	}
}

bool
gpx_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	GpxScanOpaque *so = scan->opaque;
	MemoryContext old = MemoryContextSwitchTo(so->rcxt);

	if (!so->started)
		start_tuple_scan(scan);
	scan->xs_recheck = so->recheck;
	scan->xs_recheckorderby = false;
	for (;;)
	{
		if (so->empty)
			break;
		if (so->nulls)
		{
			if (!gpx_nulls_next(so->nulls, &scan->xs_heaptid))
			{
				gpx_nulls_end(so->nulls);
				so->nulls = NULL;
				so->nulls_done = true;
				break;
			}
			so->nnulls++;
			scan->xs_orderbyvals[0] = (Datum) 0;
			scan->xs_orderbynulls[0] = true;
			MemoryContextSwitchTo(old);
			return true;
		}
		if (so->zeros)
		{
			if (!next_zero(so, &scan->xs_heaptid))
			{
				/*
				 * Every row the index holds came: then the rows it does not
				 * hold, whose value is NULL (a sort puts them last), unless
				 * a key excludes them (@@& is never true of NULL)
				 */
				if (so->nulls_done || scan->numberOfKeys > 0 ||
					!gpx_index_may_miss_rows(scan->heapRelation, scan->indexRelation))
					break;
				so->nulls = gpx_nulls_begin(scan->heapRelation, scan->indexRelation, scan->xs_snapshot);
				continue;
			}
			scan->xs_orderbyvals[0] = Float8GetDatum(0.0);
			scan->xs_orderbynulls[0] = so->null_order;
			MemoryContextSwitchTo(old);
			return true;
		}
		if (so->pos < so->nres)
		{
			scan->xs_heaptid = so->res[so->pos];
			if (so->ranked)
			{
				double		score = so->scores[so->pos];

				scan->xs_orderbyvals[0] = Float8GetDatum(score > 0.0 ? -score : 0.0);
				scan->xs_orderbynulls[0] = false;
				so->returned++;
			}
			so->pos++;
			MemoryContextSwitchTo(old);
			return true;
		}
		if (!so->ranked)
			break;
		if (!so->complete)
		{
			/* the next, larger top k, continued after the rows returned */
			/* never more than the documents the index holds: that is all of them */
			/*
			 * A LIMIT's k is the rows it takes unless a tsquery key's
			 * check on the rows (the ranking has only its required terms)
			 * may drop some: then no fewer than the default.
			 */
			if (so->k == 0 && so->first_k > 0)
				so->k = !so->recheck ? so->first_k : Max(so->first_k, RANK_FIRST_K);
			else if (so->k == 0)
				so->k = RANK_FIRST_K;
			else
				so->k = (uint32) Min((uint64) so->k * RANK_GROWTH, (uint64) PG_INT32_MAX);
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
		start_zeros(so);
	}
	MemoryContextSwitchTo(old);
	return false;
}

void
gpx_scan_set_first_k(IndexScanDesc scan, uint32 k)
{
	GpxScanOpaque *so = scan->opaque;

	so->first_k = Min(k, RANK_FIRST_K_MAX);
}

void
gpx_scan_rank_info(IndexScanDesc scan, GpxRankScanInfo *info)
{
	GpxScanOpaque *so = scan->opaque;
	GqRank	   *r = so->started && so->ranked ? so->rank : NULL;

	memset(info, 0, sizeof(*info));
	if (!so->started)
		return;
	info->nulls_read = so->nulls != NULL || so->nulls_done;
	info->nulls = so->nnulls;
	if (r == NULL)
		return;
	info->ranked = true;
	info->rounds = r->rounds;
	info->k = so->k;
	info->cpu_segments = r->cpu_segments;
	info->worker_segments = r->worker_segments;
	info->blocks_loaded = r->stats.blocks_loaded;
	info->blocks_skipped = r->stats.blocks_skipped;
	info->lists_cached = r->lists_cached;
	info->pending = (uint32) r->npend;
}
