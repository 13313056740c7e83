/*
 * rankplan.c
 *	  An index scan that ranks (ORDER BY doc <=> query, served by a gpuidx
 *	  index), or the rank custom scan running one, returns its rows in
 *	  order; PostgreSQL still puts the sort key
 *	  in the scan's target list as a junk column and computes it for every
 *	  row returned, which for BM25 means tokenizing each document again
 *	  (on gcide, 1 ms a row: ten times the ranking).  When nothing above the
 *	  scan reads that column (a Limit over it without WITH TIES, which ends
 *	  its query level, or the statement's top node: the executor's junk
 *	  filter drops it), the column is set to a constant.  A score the query
 *	  selects is not junk and is computed as written.
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "scan/customscan.h"

static ExecutorStart_hook_type prev_executor_start = NULL;

/* is the index a gpuidx index? */
static bool
is_gpuidx(Oid indexoid)
{
	Relation	index = index_open(indexoid, NoLock);
	bool		result = index->rd_indam->ambuild == gpx_build;

	index_close(index, NoLock);
	return result;
}

/* the junk copies of a ranked scan's ORDER BY expressions in its target list, made constants */
static void
drop_junk_scores(Plan *plan)
{
	List	   *orderby;
	ListCell   *lc;

	if (IsA(plan, IndexScan))
	{
		IndexScan  *scan = (IndexScan *) plan;

		if (scan->indexorderbyorig == NIL || !is_gpuidx(scan->indexid))
			return;
		orderby = scan->indexorderbyorig;
	}
	else if (gpx_is_rank_scan(plan))
		orderby = list_make1(linitial(((CustomScan *) plan)->custom_exprs));
	else
		return;
	foreach(lc, plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk && tle->ressortgroupref != 0 && list_member(orderby, tle->expr))
		{
			/* in the plan's own memory: a cached plan outlives this execution */
			MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(tle));

			tle->expr = (Expr *) makeConst(exprType((Node *) tle->expr), -1, InvalidOid, sizeof(float8),
										   Float8GetDatum(0.0), false, FLOAT8PASSBYVAL);
			MemoryContextSwitchTo(old);
		}
	}
}

/*
 * Every Limit (not WITH TIES) over a ranked index scan, anywhere in the
 * plan: a Limit ends its query level, so nothing above reads the level's
 * junk columns; then the top node of the statement if it is the scan.
 */
static void
walk_plan(Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	check_stack_depth();
	if (IsA(plan, Limit) && ((Limit *) plan)->limitOption != LIMIT_OPTION_WITH_TIES &&
		plan->lefttree != NULL)
		drop_junk_scores(plan->lefttree);
	walk_plan(plan->lefttree);
	walk_plan(plan->righttree);
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			walk_plan(lfirst(lc));
	else if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			walk_plan(lfirst(lc));
	else if (IsA(plan, SubqueryScan))
		walk_plan(((SubqueryScan *) plan)->subplan);
	else if (IsA(plan, CustomScan))
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			walk_plan(lfirst(lc));
}

static void
rank_executor_start(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;
	ListCell   *lc;

	if (stmt->commandType == CMD_SELECT && stmt->planTree != NULL)
	{
		walk_plan(stmt->planTree);
		foreach(lc, stmt->subplans)
			walk_plan(lfirst(lc));
		drop_junk_scores(stmt->planTree);
	}
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

void
gpx_rankplan_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = rank_executor_start;
}
