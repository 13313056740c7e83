/*
 * rowcheck.h
 *	  Rows the counting scan reads and checks (a phrase or a weight the
 *	  index cannot confirm), in this backend or, when there are many, in
 *	  parallel workers beside it (rowcheck.c).
 */
#ifndef GPX_ROWCHECK_H
#define GPX_ROWCHECK_H

#include "access/tableam.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/*
 * How a row is checked: its document made as the index makes it (its
 * expression, index_info) or read from the indexed column (attno), then the
 * operator's function decides.
 */
typedef struct GpxRowCheck
{
	Relation	heap;
	struct IndexInfo *index_info;	/* NULL: the column attno */
	AttrNumber	attno;
	FmgrInfo	match_fn;
	Datum		query;
	bool		query_null;
	EState	   *estate;			/* where the expression is evaluated */
	MemoryContext row_cxt;		/* a row's check, reset after it */
} GpxRowCheck;

/* what a check of rows did */
typedef struct GpxCheckCounts
{
	uint64		fetched;		/* rows read (visible to the snapshot or not) */
	uint64		matched;
	uint64		removed;		/* read, visible, and not matching */
	int			workers_planned;
	int			workers_launched;
} GpxCheckCounts;

/* rows at least for a check in parallel workers (gpuidx.parallel_check_rows; 0: never) */
extern int	gpx_parallel_check_rows;

extern bool gpx_row_matches(GpxRowCheck *rc, TupleTableSlot *slot);

/*
 * The rows of tids[0..n) visible to snapshot that match, counted into
 * *counts (added to it): in parallel workers and this backend when n is
 * large enough and the check may run in parallel, else here alone.
 * fetch and slot are this backend's, for the table.
 */
extern void gpx_check_rows(GpxRowCheck *rc, Relation index, const ItemPointerData *tids, uint32 n,
						   Snapshot snapshot, struct IndexFetchTableData *fetch, TupleTableSlot *slot,
						   GpxCheckCounts *counts);

#endif							/* GPX_ROWCHECK_H */
