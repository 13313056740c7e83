/*
 * rowcheck.c
 *	  The rows a count must read and check: a phrase or a weight leaves a
 *	  candidate unsure (the index keeps no positions), and computing each
 *	  row's document again decides.  That check is most of such a query's
 *	  time (a phrase of frequent words has thousands of candidates), and a
 *	  bitmap heap scan under a Gather spreads it over parallel workers, so
 *	  the counting scan does too: past gpuidx.parallel_check_rows candidates
 *	  it starts up to max_parallel_workers_per_gather workers, as a parallel
 *	  index build does, and every process takes the next 64 TIDs of the
 *	  shared array until none is left.  The decision is made when the
 *	  candidates are known, not when the plan is made: a prepared
 *	  statement's generic plan does not know whether its query has a phrase.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "port/atomics.h"
#include "storage/shm_toc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "scan/rowcheck.h"

int			gpx_parallel_check_rows = 2000;

/* TIDs a process takes from the shared array at a time */
#define CHECK_CLAIM 64

#define KEY_SHARED		UINT64CONST(0xB1D0000000000001)
#define KEY_TIDS		UINT64CONST(0xB1D0000000000002)
#define KEY_QUERY		UINT64CONST(0xB1D0000000000003)
#define KEY_BUFUSAGE	UINT64CONST(0xB1D0000000000004)
#define KEY_WALUSAGE	UINT64CONST(0xB1D0000000000005)

typedef struct CheckShared
{
	Oid			heap;
	Oid			index;
	Oid			match_fn;
	AttrNumber	attno;			/* the column, when the index has no expression */
	bool		by_expression;
	bool		query_null;
	uint64		ntids;
	pg_atomic_uint64 next;		/* the first TID no process has taken */
	pg_atomic_uint64 fetched;
	pg_atomic_uint64 matched;
	pg_atomic_uint64 removed;
} CheckShared;

PGDLLEXPORT void gpx_check_rows_worker(dsm_segment *seg, shm_toc *toc);

/*
 * Does the row in slot match?  The counting scan has no plan expression of
 * its own to evaluate: for a tsquery the document is made from the row as
 * the index makes it (its column or expression), then the operator's
 * function decides; for @@& the operator on the column.
 */
bool
gpx_row_matches(GpxRowCheck *rc, TupleTableSlot *slot)
{
	Datum		doc;
	bool		isnull;
	bool		match;

	MemoryContext old;

	if (rc->query_null)
		return false;
	/* what the document and the operator allocate goes with the row */
	old = MemoryContextSwitchTo(rc->row_cxt);
	if (rc->index_info == NULL)
		doc = slot_getattr(slot, rc->attno, &isnull);
	else
	{
		ExprContext *econtext = GetPerTupleExprContext(rc->estate);
		Datum		values[INDEX_MAX_KEYS];
		bool		nulls[INDEX_MAX_KEYS];

		econtext->ecxt_scantuple = slot;
		FormIndexDatum(rc->index_info, slot, rc->estate, values, nulls);
		doc = values[0];
		isnull = nulls[0];
	}
	match = !isnull && DatumGetBool(FunctionCall2(&rc->match_fn, doc, rc->query));
	MemoryContextSwitchTo(old);
	if (rc->estate)
		ResetPerTupleExprContext(rc->estate);
	MemoryContextReset(rc->row_cxt);
	return match;
}

static void
check_range(GpxRowCheck *rc, const ItemPointerData *tids, uint32 n, Snapshot snapshot,
			struct IndexFetchTableData *fetch, TupleTableSlot *slot, GpxCheckCounts *counts)
{
	for (uint32 i = 0; i < n; i++)
	{
		bool		call_again = false;
		bool		all_dead = false;
		ItemPointerData tid = tids[i];

		counts->fetched++;
		if (table_index_fetch_tuple(fetch, &tid, snapshot, slot, &call_again, &all_dead))
		{
			if (gpx_row_matches(rc, slot))
				counts->matched++;
			else
				counts->removed++;
		}
		CHECK_FOR_INTERRUPTS();
	}
}

/* this process's share: the next CHECK_CLAIM TIDs until none is left */
static void
check_shared(GpxRowCheck *rc, CheckShared *sh, const ItemPointerData *tids, Snapshot snapshot,
			 struct IndexFetchTableData *fetch, TupleTableSlot *slot)
{
	GpxCheckCounts c = {0};

	for (;;)
	{
		uint64		from = pg_atomic_fetch_add_u64(&sh->next, CHECK_CLAIM);

		if (from >= sh->ntids)
			break;
		check_range(rc, tids + from, (uint32) Min(CHECK_CLAIM, sh->ntids - from), snapshot, fetch, slot, &c);
	}
	pg_atomic_fetch_add_u64(&sh->fetched, c.fetched);
	pg_atomic_fetch_add_u64(&sh->matched, c.matched);
	pg_atomic_fetch_add_u64(&sh->removed, c.removed);
}

static bool
parallel_unsafe_function(Oid func, void *context)
{
	return func_parallel(func) != PROPARALLEL_SAFE;
}

/* does the expression call a function not marked PARALLEL SAFE? */
static bool
parallel_unsafe_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, parallel_unsafe_function, context))
		return true;
	return expression_tree_walker(node, parallel_unsafe_walker, context);
}

/*
 * Workers for n rows, 0 when they are checked here alone: too few rows,
 * parallel workers not allowed to the query (max_parallel_workers_per_gather
 * 0), already inside a parallel operation, a temporary table (workers
 * cannot read this backend's buffers), SERIALIZABLE (its predicate locks
 * are this backend's), a snapshot other than the active one (the one
 * workers get), or an expression or function not parallel-safe.
 */
static int
check_workers(GpxRowCheck *rc, uint32 n, Snapshot snapshot)
{
	int			workers;

	if (gpx_parallel_check_rows <= 0 || n < (uint32) gpx_parallel_check_rows ||
		max_parallel_workers_per_gather <= 0 || IsInParallelMode() || !IsUnderPostmaster ||
		RelationUsesLocalBuffers(rc->heap) || IsolationIsSerializable() ||
		!ActiveSnapshotSet() || snapshot != GetActiveSnapshot() ||
		func_parallel(rc->match_fn.fn_oid) != PROPARALLEL_SAFE ||
		(rc->index_info != NULL &&
		 parallel_unsafe_walker((Node *) rc->index_info->ii_Expressions, NULL)))
		return 0;
	/* one more worker for each gpuidx.parallel_check_rows rows */
	workers = (int) Min((uint64) n / (uint64) gpx_parallel_check_rows, (uint64) max_parallel_workers_per_gather);
	return Max(workers, 1);
}

void
gpx_check_rows(GpxRowCheck *rc, Relation index, const ItemPointerData *tids, uint32 n, Snapshot snapshot,
			   struct IndexFetchTableData *fetch, TupleTableSlot *slot, GpxCheckCounts *counts)
{
	int			workers = check_workers(rc, n, snapshot);
	ParallelContext *pcxt;
	CheckShared *sh;
	ItemPointerData *shared_tids;
	Size		query_len = rc->query_null ? 0 : VARSIZE_ANY(DatumGetPointer(rc->query));
	BufferUsage *bufusage;
	WalUsage   *walusage;

	if (workers == 0)
	{
		check_range(rc, tids, n, snapshot, fetch, slot, counts);
		return;
	}

	EnterParallelMode();
	pcxt = CreateParallelContext("gpuidx", "gpx_check_rows_worker", workers);
	shm_toc_estimate_chunk(&pcxt->estimator, sizeof(CheckShared));
	shm_toc_estimate_chunk(&pcxt->estimator, (Size) n * sizeof(ItemPointerData));
	shm_toc_estimate_chunk(&pcxt->estimator, Max(query_len, 1));
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(BufferUsage), pcxt->nworkers));
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(WalUsage), pcxt->nworkers));
	shm_toc_estimate_keys(&pcxt->estimator, 5);
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		/* no dynamic shared memory to be had: here alone */
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		check_range(rc, tids, n, snapshot, fetch, slot, counts);
		return;
	}

	sh = shm_toc_allocate(pcxt->toc, sizeof(CheckShared));
	sh->heap = RelationGetRelid(rc->heap);
	sh->index = RelationGetRelid(index);
	sh->match_fn = rc->match_fn.fn_oid;
	sh->attno = rc->attno;
	sh->by_expression = rc->index_info != NULL;
	sh->query_null = rc->query_null;
	sh->ntids = n;
	pg_atomic_init_u64(&sh->next, 0);
	pg_atomic_init_u64(&sh->fetched, 0);
	pg_atomic_init_u64(&sh->matched, 0);
	pg_atomic_init_u64(&sh->removed, 0);
	shm_toc_insert(pcxt->toc, KEY_SHARED, sh);
	shared_tids = shm_toc_allocate(pcxt->toc, (Size) n * sizeof(ItemPointerData));
	memcpy(shared_tids, tids, (Size) n * sizeof(ItemPointerData));
	shm_toc_insert(pcxt->toc, KEY_TIDS, shared_tids);
	{
		char	   *q = shm_toc_allocate(pcxt->toc, Max(query_len, 1));

		if (query_len > 0)
			memcpy(q, DatumGetPointer(rc->query), query_len);
		shm_toc_insert(pcxt->toc, KEY_QUERY, q);
	}
	/* the workers' buffer and WAL use, added to this backend's (EXPLAIN's BUFFERS) */
	bufusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(BufferUsage), pcxt->nworkers));
	shm_toc_insert(pcxt->toc, KEY_BUFUSAGE, bufusage);
	walusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(WalUsage), pcxt->nworkers));
	shm_toc_insert(pcxt->toc, KEY_WALUSAGE, walusage);

	LaunchParallelWorkers(pcxt);
	counts->workers_planned += pcxt->nworkers;
	counts->workers_launched += pcxt->nworkers_launched;
	/* this backend takes its share too; with no worker launched, all of it */
	check_shared(rc, sh, shared_tids, snapshot, fetch, slot);
	WaitForParallelWorkersToFinish(pcxt);
	for (int i = 0; i < pcxt->nworkers_launched; i++)
		InstrAccumParallelQuery(&bufusage[i], &walusage[i]);
	counts->fetched += pg_atomic_read_u64(&sh->fetched);
	counts->matched += pg_atomic_read_u64(&sh->matched);
	counts->removed += pg_atomic_read_u64(&sh->removed);
	DestroyParallelContext(pcxt);
	ExitParallelMode();
}

/* a parallel worker: the table and index locked by the leader (its lock group), the leader's snapshot */
void
gpx_check_rows_worker(dsm_segment *seg, shm_toc *toc)
{
	CheckShared *sh = shm_toc_lookup(toc, KEY_SHARED, false);
	const ItemPointerData *tids = shm_toc_lookup(toc, KEY_TIDS, false);
	char	   *query = shm_toc_lookup(toc, KEY_QUERY, false);
	BufferUsage *bufusage = shm_toc_lookup(toc, KEY_BUFUSAGE, false);
	WalUsage   *walusage = shm_toc_lookup(toc, KEY_WALUSAGE, false);
	GpxRowCheck rc = {0};
	Relation	index;
	struct IndexFetchTableData *fetch;
	TupleTableSlot *slot;

	InstrStartParallelQuery();
	rc.heap = table_open(sh->heap, AccessShareLock);
	rc.row_cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx row check", ALLOCSET_DEFAULT_SIZES);
	index = index_open(sh->index, AccessShareLock);
	rc.attno = sh->attno;
	rc.query_null = sh->query_null;
	rc.query = PointerGetDatum(query);
	fmgr_info(sh->match_fn, &rc.match_fn);
	if (sh->by_expression)
	{
		rc.index_info = BuildIndexInfo(index);
		rc.estate = CreateExecutorState();
	}
	fetch = table_index_fetch_begin(rc.heap);
	slot = table_slot_create(rc.heap, NULL);
	check_shared(&rc, sh, tids, GetActiveSnapshot(), fetch, slot);
	ExecDropSingleTupleTableSlot(slot);
	table_index_fetch_end(fetch);
	if (rc.estate)
		FreeExecutorState(rc.estate);
	index_close(index, AccessShareLock);
	table_close(rc.heap, AccessShareLock);
	InstrEndParallelQuery(&bufusage[ParallelWorkerNumber], &walusage[ParallelWorkerNumber]);
}
