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
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "query/query.h"

typedef struct GpxScanOpaque
{
	MemoryContext cxt;
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
	scan->opaque = so;
	return scan;
}

void
gpx_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
}

void
gpx_endscan(IndexScanDesc scan)
{
	GpxScanOpaque *so = scan->opaque;

	MemoryContextDelete(so->cxt);
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
