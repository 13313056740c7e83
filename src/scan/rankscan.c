/*
 * rankscan.c
 *	  The gpuidx custom scan for ranked queries: ORDER BY doc <=> query, with
 *	  the doc @@& query keys the index takes, served by the index's ordered
 *	  scan (src/am/scan.c: top k by block-max WAND in this backend, or
 *	  segment by segment through the GPU worker), so that EXPLAIN ANALYZE
 *	  says where the ranking ran: segments ranked on the GPU worker and in
 *	  the backend, the top-k rounds, the blocks WAND decoded and skipped,
 *	  the worker's requests.  It takes the place of the ordered index path
 *	  it wraps (same order, same rows, cost 2% lower);
 *	  gpuidx.enable_customscan = off plans the index scan itself.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "am/gpuidx_am.h"
#include "scan/customscan.h"
#include "worker/worker.h"

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

static Plan *plan_rank_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							List *tlist, List *clauses, List *custom_plans);
static Node *create_rank_state(CustomScan *cscan);
static void begin_rank_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_rank_scan(CustomScanState *node);
static void end_rank_scan(CustomScanState *node);
static void rescan_rank_scan(CustomScanState *node);
static void explain_rank_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods rank_path_methods = {
	.CustomName = "gpuidx rank",
	.PlanCustomPath = plan_rank_path,
};

static const CustomScanMethods rank_plan_methods = {
	.CustomName = "gpuidx rank",
	.CreateCustomScanState = create_rank_state,
};

static const CustomExecMethods rank_exec_methods = {
	.CustomName = "gpuidx rank",
	.BeginCustomScan = begin_rank_scan,
	.ExecCustomScan = exec_rank_scan,
	.EndCustomScan = end_rank_scan,
	.ReScanCustomScan = rescan_rank_scan,
	.ExplainCustomScan = explain_rank_scan,
};

typedef struct RankScanState
{
	CustomScanState css;
	Oid			indexoid;
	Relation	index;
	ExprState  *order_query;	/* the query of ORDER BY doc <=> query */
	List	   *key_queries;	/* ExprStates: the queries of the doc @@& query keys */
	List	   *key_strategies; /* and their strategies (@@& or @@ tsquery) */
	StrategyNumber order_strategy;	/* <=> with a text query or a bm25query */
	uint32		first_k;		/* the first top-k round's k, 0: the scan's (limit_first_k) */
	ExprState  *keys_qual;		/* the keys themselves, for EvalPlanQual */
	int			nkeys;
	IndexScanDesc scan;
	bool		started;
	/* for EXPLAIN ANALYZE */
	uint64		recheck_removed;	/* rows the keys' check on the row dropped */
	GpxRankScanInfo info;		/* summed over rescans */
	GpxLocalStats worker_at_start;
	GpxLocalStats worker;
} RankScanState;

/* ---------------------------------------------------------------------------
 * Planning
 */

/*
 * Each ordered gpuidx index path of the relation (unparameterized, one
 * ORDER BY) gets a custom path beside it that runs it, with its order and
 * a cost 2% lower, so that the custom one is chosen where the index path
 * would have been.
 */
static void
add_rank_paths(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	List	   *ordered = NIL;
	ListCell   *lc;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (!gpx_enable_customscan)
		return;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (IsA(p, IndexPath) && ((IndexPath *) p)->indexinfo->amcostestimate == gpx_costestimate &&
			list_length(((IndexPath *) p)->indexorderbys) == 1 && p->param_info == NULL)
			ordered = lappend(ordered, p);
	}
	foreach(lc, ordered)
	{
		IndexPath  *ipath = lfirst(lc);
		CustomPath *cpath = makeNode(CustomPath);

		cpath->path.pathtype = T_CustomScan;
		cpath->path.parent = rel;
		cpath->path.pathtarget = rel->reltarget;
		cpath->path.param_info = NULL;
		cpath->path.parallel_aware = false;
		cpath->path.parallel_safe = false;
		cpath->path.parallel_workers = 0;
		cpath->path.rows = ipath->path.rows;
		/* below add_path's 1% fuzz: the index path is parallel-safe, this one not */
		cpath->path.startup_cost = ipath->path.startup_cost * 0.98;
		cpath->path.total_cost = ipath->path.total_cost * 0.98;
		/* disabled with it (enable_indexscan) */
		gpx_path_copy_disabled(&cpath->path, &ipath->path);
		cpath->path.pathkeys = ipath->path.pathkeys;
		/* it projects (no Result node above it: rankplan.c finds the junk score) */
		cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
		cpath->custom_paths = NIL;
		/* the index path is not freed when this one pushes it out of the list */
		cpath->custom_private = list_make1(ipath);
		cpath->methods = &rank_path_methods;
		add_path(rel, &cpath->path);
	}
	list_free(ordered);
}

/*
 * The first top-k round's k: the query's LIMIT (with its OFFSET) when the
 * scan's rows are the query's rows, in order (the only relation of its
 * query level, no condition left to check on the rows, no grouping: the
 * planner's limit_tuples is then known); else 0, the scan's default.  A
 * top 10 ranked as a top 10, not 32, prunes more (on debian-paths, a fifth
 * more any-term rankings a second).  Rows the table does not return (not
 * visible, or without a score) only take a next, larger round.
 */
static uint32
limit_first_k(PlannerInfo *root, RelOptInfo *rel, List *qual)
{
	if (root->limit_tuples < 1.0 || qual != NIL || bms_membership(root->all_baserels) != BMS_SINGLETON ||
		!bms_equal(root->all_baserels, rel->relids))
		return 0;
	return (uint32) Min(ceil(root->limit_tuples), (double) PG_INT32_MAX);
}

/*
 * custom_exprs: the ORDER BY expression (doc <=> query), then the keys
 * (doc @@& query, doc @@ tsquery) the index answers, so they leave the
 * qual (a tsquery's rows are checked against them when the index says);
 * custom_private: the index, the ORDER BY's strategy (<=> with a text
 * query or with a bm25query), the first top-k round's k (limit_first_k), then
 * each key's strategy.
 */
static Plan *
plan_rank_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	IndexPath  *ipath = linitial(best_path->custom_private);
	CustomScan *cscan = makeNode(CustomScan);
	List	   *keys = NIL;
	List	   *strategies = NIL;
	List	   *done = NIL;
	List	   *other = NIL;
	ListCell   *lc;
	int			order_strategy;
	Oid			lefttype;
	Oid			righttype;

	foreach(lc, ipath->indexclauses)
	{
		IndexClause *ic = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		foreach(lc2, ic->indexquals)
		{
			OpExpr	   *op = (OpExpr *) lfirst_node(RestrictInfo, lc2)->clause;

			keys = lappend(keys, op);
			strategies = lappend(strategies,
								 makeInteger(get_op_opfamily_strategy(op->opno, ipath->indexinfo->opfamily[0])));
		}
		if (!ic->lossy)
			done = lappend(done, ic->rinfo);
	}
	foreach(lc, clauses)
		if (!list_member_ptr(done, lfirst(lc)))
			other = lappend(other, lfirst(lc));
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(other, false);
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	cscan->custom_exprs = lcons(linitial(ipath->indexorderbys), keys);
	/* an ordering operator's strategy (get_op_opfamily_strategy knows search operators only) */
	get_op_opfamily_properties(((OpExpr *) linitial(ipath->indexorderbys))->opno, ipath->indexinfo->opfamily[0],
							   true, &order_strategy, &lefttype, &righttype);
	cscan->custom_private = lcons(makeInteger((int) ipath->indexinfo->indexoid),
								  lcons(makeInteger(order_strategy),
										lcons(makeInteger((int) limit_first_k(root, rel, cscan->scan.plan.qual)),
											  strategies)));
	cscan->methods = &rank_plan_methods;
	return &cscan->scan.plan;
}

bool
gpx_is_rank_scan(const Plan *plan)
{
	return IsA(plan, CustomScan) && ((const CustomScan *) plan)->methods == &rank_plan_methods;
}

/* ---------------------------------------------------------------------------
 * Execution
 */

static Node *
create_rank_state(CustomScan *cscan)
{
	RankScanState *s = palloc0(sizeof(RankScanState));

	NodeSetTag(s, T_CustomScanState);
	s->css.flags = cscan->flags;
	s->css.methods = &rank_exec_methods;
	s->indexoid = (Oid) intVal(linitial(cscan->custom_private));
	s->order_strategy = (StrategyNumber) intVal(lsecond(cscan->custom_private));
	s->first_k = (uint32) intVal(lthird(cscan->custom_private));
	s->key_strategies = list_copy_tail(cscan->custom_private, 3);
	return (Node *) s;
}

static void
begin_rank_scan(CustomScanState *node, EState *estate, int eflags)
{
	RankScanState *s = (RankScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	OpExpr	   *order = linitial_node(OpExpr, cscan->custom_exprs);
	List	   *keys = list_copy_tail(cscan->custom_exprs, 1);
	ListCell   *lc;

	/*
	 * Rows are fetched into a slot of the table AM's type, made the scan
	 * slot (customscan.c says why), the expressions compiled again for it.
	 */
	ExecInitScanTupleSlot(estate, &node->ss, RelationGetDescr(node->ss.ss_currentRelation),
						  table_slot_callbacks(node->ss.ss_currentRelation));
	ExecAssignScanProjectionInfoWithVarno(&node->ss, cscan->scan.scanrelid);
	node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);
	s->order_query = ExecInitExpr(lsecond(order->args), &node->ss.ps);
	foreach(lc, keys)
		s->key_queries = lappend(s->key_queries,
								 ExecInitExpr(lsecond(lfirst_node(OpExpr, lc)->args), &node->ss.ps));
	s->keys_qual = ExecInitQual(keys, &node->ss.ps);
	s->nkeys = list_length(keys);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	s->index = index_open(s->indexoid, AccessShareLock);
}

/* a query's value as a scan key of the index: its strategy, the value or NULL */
static void
make_key(ScanKey key, ExprState *query, ExprContext *econtext, StrategyNumber strategy, int flags)
{
	bool		isnull;
	Datum		value = ExecEvalExprSwitchContext(query, econtext, &isnull);

	/* the index reads the argument alone: no comparison function is called */
	ScanKeyEntryInitialize(key, flags | (isnull ? SK_ISNULL : 0), 1, strategy, InvalidOid,
						   InvalidOid, InvalidOid, value);
}

static void
start_rank_scan(RankScanState *s)
{
	EState	   *estate = s->css.ss.ps.state;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	ScanKey		keys = palloc0(Max(s->nkeys, 1) * sizeof(ScanKeyData));
	ScanKeyData order;
	int			i = 0;
	ListCell   *lc;
	ListCell   *ls;

	forboth(lc, s->key_queries, ls, s->key_strategies)
	{
		make_key(&keys[i], lfirst(lc), econtext, (StrategyNumber) intVal(lfirst(ls)), 0);
		i++;
	}
	make_key(&order, s->order_query, econtext, s->order_strategy, SK_ORDER_BY);
	if (s->scan == NULL)
	{
		s->scan = gpx_index_beginscan(s->css.ss.ss_currentRelation, s->index, estate->es_snapshot,
									  s->nkeys, 1);
		gpx_scan_set_first_k(s->scan, s->first_k);
	}
	index_rescan(s->scan, keys, s->nkeys, &order, 1);
	MemoryContextSwitchTo(old);
	s->worker_at_start = gpx_local_stats;
	s->started = true;
}

/* what the scan did since it started, into the totals */
static void
add_stats(RankScanState *s)
{
	GpxRankScanInfo now;

	if (!s->started || s->scan == NULL)
		return;
	gpx_scan_rank_info(s->scan, &now);
	s->info.ranked |= now.ranked;
	s->info.rounds += now.rounds;
	s->info.k = Max(s->info.k, now.k);
	s->info.cpu_segments += now.cpu_segments;
	s->info.worker_segments += now.worker_segments;
	s->info.blocks_loaded += now.blocks_loaded;
	s->info.blocks_skipped += now.blocks_skipped;
	s->info.lists_cached += now.lists_cached;
	s->info.pending += now.pending;
	s->info.nulls_read |= now.nulls_read;
	s->info.nulls += now.nulls;
	gpx_local_stats_collect(&s->worker, &s->worker_at_start);
}

static TupleTableSlot *
next_ranked(ScanState *ss)
{
	RankScanState *s = (RankScanState *) ss;

	if (!s->started)
		start_rank_scan(s);
	while (index_getnext_slot(s->scan, ForwardScanDirection, ss->ss_ScanTupleSlot))
	{
		ExprContext *econtext = ss->ps.ps_ExprContext;

		/* a tsquery key the index answers with candidates: the keys decide */
		if (!s->scan->xs_recheck)
			return ss->ss_ScanTupleSlot;
		econtext->ecxt_scantuple = ss->ss_ScanTupleSlot;
		if (ExecQualAndReset(s->keys_qual, econtext))
			return ss->ss_ScanTupleSlot;
		s->recheck_removed++;
		CHECK_FOR_INTERRUPTS();
	}
	return ExecClearTuple(ss->ss_ScanTupleSlot);
}

/* EvalPlanQual: a row updated concurrently must still have the keys' terms */
static bool
recheck_ranked(ScanState *ss, TupleTableSlot *slot)
{
	RankScanState *s = (RankScanState *) ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;

	econtext->ecxt_scantuple = slot;
	return ExecQualAndReset(s->keys_qual, econtext);
}

static TupleTableSlot *
exec_rank_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_ranked, recheck_ranked);
}

static void
rescan_rank_scan(CustomScanState *node)
{
	RankScanState *s = (RankScanState *) node;

	add_stats(s);
	s->started = false;
	ExecScanReScan(&node->ss);
}

static void
end_rank_scan(CustomScanState *node)
{
	RankScanState *s = (RankScanState *) node;

	if (s->scan)
		index_endscan(s->scan);
	s->scan = NULL;
	if (s->index)
		index_close(s->index, AccessShareLock);
}

static void
explain_rank_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	RankScanState *s = (RankScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);

	ExplainPropertyText("Index", get_rel_name(s->indexoid), es);
	ExplainPropertyText("Order By", deparse_expression(linitial(cscan->custom_exprs), context,
													   es->verbose, false), es);
	if (list_length(cscan->custom_exprs) > 1)
		ExplainPropertyText("Index Keys",
							deparse_expression((Node *) make_ands_explicit(list_copy_tail(cscan->custom_exprs, 1)),
											   context, es->verbose, false), es);
	if (!es->analyze)
		return;
	add_stats(s);
	ExplainPropertyUInteger("Top-K Rounds", NULL, s->info.rounds, es);
	ExplainPropertyUInteger("Last K", NULL, s->info.k, es);
	ExplainPropertyUInteger("Segments Ranked on Worker", NULL, s->info.worker_segments, es);
	ExplainPropertyUInteger("Segments Ranked in Backend", NULL, s->info.cpu_segments, es);
	ExplainPropertyUInteger("WAND Blocks Decoded", NULL, s->info.blocks_loaded, es);
	ExplainPropertyUInteger("WAND Blocks Skipped", NULL, s->info.blocks_skipped, es);
	/* as "Rows Removed by Filter": in text only when some were */
	if (s->info.lists_cached > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyUInteger("Lists From Backend Cache", NULL, s->info.lists_cached, es);
	ExplainPropertyUInteger("Pending Entries Scored", NULL, s->info.pending, es);
	/* as a plain index scan says it; none where the index settles the keys (positions) */
	if (s->recheck_removed > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyUInteger("Rows Removed by Index Recheck", NULL, s->recheck_removed, es);
	/* the table read for the rows without a document, when the index's ran out */
	if (s->info.nulls_read)
		ExplainPropertyUInteger("Rows Without Document", NULL, s->info.nulls, es);
	if (s->worker.requests + s->worker.fallbacks > 0)
		gpx_explain_worker_requests(&s->worker, es);
}

void
gpx_rankscan_init(void)
{
	RegisterCustomScanMethods(&rank_plan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = add_rank_paths;
}
