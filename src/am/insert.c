/*
 * insert.c
 *	  INSERT and UPDATE: a new row's lexemes are appended to the pending
 *	  area, which is cheap and touches two pages.  Past the index's
 *	  pending_list_limit the inserting backend merges the pending area into a
 *	  new segment, unless another backend is merging already; queries never
 *	  merge (they read the pending area as it is).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "am/gpuidx_am.h"
#include "store/pending.h"

bool
gpx_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	const GpxIndexInfo *info;
	MemoryContext cxt;
	MemoryContext old;
	GpxLexemes	lex;
	uint64		pending;

	if (isnull[0])
		return false;
	info = gpx_index_info(index);
	/* one context for all the rows of the statement, emptied after each */
	cxt = (MemoryContext) indexInfo->ii_AmCache;
	if (cxt == NULL)
	{
		cxt = AllocSetContextCreate(indexInfo->ii_Context, "gpuidx insert", ALLOCSET_DEFAULT_SIZES);
		indexInfo->ii_AmCache = cxt;
	}
	old = MemoryContextSwitchTo(cxt);
	gpx_document_lexemes(info->kind, info->kind == GPX_KIND_TEXT ? gpx_index_config(index) : InvalidOid,
						 values[0], &lex);
	pending = gpx_pending_insert(index, ht_ctid, &lex);
	MemoryContextSwitchTo(old);
	MemoryContextReset(cxt);

	if (pending > gpx_pending_limit(index) && gpx_merge_trylock(index))
	{
		Size		budget = (Size) work_mem * 1024;

		gpx_merge_step(index, budget);
		gpx_merge_unlock(index);
	}
	return false;
}
