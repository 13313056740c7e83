/*
 * nulls.c
 *	  The rows a gpuidx index does not hold: those whose indexed value (the
 *	  column, or the index's expression) is NULL, among the rows of its
 *	  predicate when it is partial.  doc <=> query is NULL for them, so an
 *	  ordered scan returns them after every row the index holds, as a sort
 *	  puts NULLs last: a scan of the table under the scan's snapshot, which
 *	  gives each row the TID an index entry would have (the root of its HOT
 *	  chain), so that the executor's fetch finds it.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"

struct GpxNullScan
{
	TableScanDesc scan;
	TupleTableSlot *slot;
	EState	   *estate;			/* for the index's expression and predicate */
	IndexInfo  *info;
	ExprState  *predicate;		/* NULL: not partial */
	BlockNumber roots_block;	/* the heap block whose roots are in roots */
	OffsetNumber roots[MaxHeapTuplesPerPage];
};

bool
gpx_index_may_miss_rows(Relation heap, Relation index)
{
	AttrNumber	attno = index->rd_index->indkey.values[0];

	/* an expression may be NULL whatever the columns are */
	return attno == 0 || !TupleDescAttr(RelationGetDescr(heap), attno - 1)->attnotnull;
}

GpxNullScan *
gpx_nulls_begin(Relation heap, Relation index, Snapshot snapshot)
{
	GpxNullScan *ns = palloc0(sizeof(GpxNullScan));

	ns->info = BuildIndexInfo(index);
	ns->estate = CreateExecutorState();
	if (ns->info->ii_Predicate != NIL)
		ns->predicate = ExecPrepareQual(ns->info->ii_Predicate, ns->estate);
	ns->slot = table_slot_create(heap, NULL);
	/* heap order, from the first block (no synchronized scan): as the rows of score 0 */
	ns->scan = table_beginscan_strat(heap, snapshot, 0, NULL, true, false);
	ns->roots_block = InvalidBlockNumber;
	return ns;
}

/*
 * The TID an index entry of the row in the slot would have: its own, or
 * for a heap-only tuple (a HOT update, which changes no indexed value) the
 * root of its chain, which the fetch follows to the visible version.
 */
static void
entry_tid(GpxNullScan *ns, ItemPointer tid)
{
	TupleTableSlot *slot = ns->slot;
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
	BlockNumber block = ItemPointerGetBlockNumber(&slot->tts_tid);
	OffsetNumber offnum = ItemPointerGetOffsetNumber(&slot->tts_tid);

	*tid = slot->tts_tid;
	if (!TTS_IS_BUFFERTUPLE(slot) || !HeapTupleIsHeapOnly(bslot->base.tuple))
		return;
	if (block != ns->roots_block)
	{
		LockBuffer(bslot->buffer, BUFFER_LOCK_SHARE);
		heap_get_root_tuples(BufferGetPage(bslot->buffer), ns->roots);
		LockBuffer(bslot->buffer, BUFFER_LOCK_UNLOCK);
		ns->roots_block = block;
	}
	if (!OffsetNumberIsValid(ns->roots[offnum - 1]))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg_internal("failed to find parent tuple for heap-only tuple at (%u,%u) in table \"%s\"",
								 block, offnum, RelationGetRelationName(ns->scan->rs_rd))));
	ItemPointerSetOffsetNumber(tid, ns->roots[offnum - 1]);
}

bool
gpx_nulls_next(GpxNullScan *ns, ItemPointer tid)
{
	ExprContext *econtext = GetPerTupleExprContext(ns->estate);

	while (table_scan_getnextslot(ns->scan, ForwardScanDirection, ns->slot))
	{
		Datum		value;
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(ns->estate);
		econtext->ecxt_scantuple = ns->slot;
		if (ns->predicate != NULL && !ExecQual(ns->predicate, econtext))
			continue;
		FormIndexDatum(ns->info, ns->slot, ns->estate, &value, &isnull);
		if (!isnull)
			continue;
		entry_tid(ns, tid);
		return true;
	}
	return false;
}

void
gpx_nulls_end(GpxNullScan *ns)
{
	table_endscan(ns->scan);
	ExecDropSingleTupleTableSlot(ns->slot);
	FreeExecutorState(ns->estate);
	pfree(ns);
}
