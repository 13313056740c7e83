/*
 * customscan.c
 *	  The gpuidx custom scan: "column @@& query" on a column with a gpuidx
 *	  index, answered by the query executor (src/query, its rounds placed
 *	  between the GPU worker and this backend) one TID at a time, with no
 *	  TID bitmap.  Heap rows are fetched with their visibility checked; when
 *	  the query needs no column (count(*), EXISTS), a TID on a page the
 *	  visibility map marks all-visible is counted without reading the page,
 *	  as an index-only scan would.  LIMIT stops it early.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "storage/smgr.h"
#include "nodes/tidbitmap.h"
#include "catalog/index.h"
#include "catalog/pg_aggregate.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "am/gpuidx_am.h"
#include "query/query.h"
#include "query/tsq.h"
#include "scan/clauses.h"
#include "scan/customscan.h"
#include "scan/rowcheck.h"
#include "worker/worker.h"

bool		gpx_enable_customscan = true;

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

static void replace_plain_index_paths(PlannerInfo *root, RelOptInfo *rel);
static Plan *plan_custom_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							  List *tlist, List *clauses, List *custom_plans);
static Node *create_scan_state(CustomScan *cscan);
static void begin_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_scan(CustomScanState *node);
static void end_scan(CustomScanState *node);
static void rescan(CustomScanState *node);
static void explain_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static Plan *plan_count_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							 List *tlist, List *clauses, List *custom_plans);

static const CustomPathMethods path_methods = {
	.CustomName = "gpuidx",
	.PlanCustomPath = plan_custom_path,
};

static const CustomPathMethods count_path_methods = {
	.CustomName = "gpuidx count",
	.PlanCustomPath = plan_count_path,
};

static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

static const CustomScanMethods plan_methods = {
	.CustomName = "gpuidx",
	.CreateCustomScanState = create_scan_state,
};

static const CustomExecMethods exec_methods = {
	.CustomName = "gpuidx",
	.BeginCustomScan = begin_scan,
	.ExecCustomScan = exec_scan,
	.EndCustomScan = end_scan,
	.ReScanCustomScan = rescan,
	.ExplainCustomScan = explain_scan,
};

typedef struct GpxScanState
{
	CustomScanState css;
	Oid			indexoid;
	bool		count_only;		/* no column needed: all-visible pages unread */
	uint32		limit;			/* rows the query will likely take, 0: unknown */
	bool		aggregate;		/* count(*) itself: one row, the count */
	bool		agg_done;
	Oid			heap_oid;		/* aggregate: the table (locked by the executor already) */
	GpxRowCheck check;			/* the query, detoasted; aggregate: how a row is checked */
	Relation	heap;
	ExprState  *query_expr;
	ExprState  *match_qual;		/* the clause itself, for when the index cannot answer */
	struct TableScanDescData *seq;	/* then: every row, the clause evaluated */
	Relation	index;
	struct IndexFetchTableData *fetch;
	TupleTableSlot *fetch_slot; /* rows are fetched into it: the scan slot, or the aggregate's own */
	Buffer		vmbuffer;
	MemoryContext cxt;			/* the cursor's memory, reset on rescan */
	GqIndex    *gq;
	GqCursor   *cursor;
	bool		tsquery;		/* the clause is "tsvector @@ tsquery" */
	GqTree	   *tree;			/* then its query tree */
	bool		recheck;		/* some of its rows are candidates: the clause checks them */
	bool		batch_recheck;	/* the current batch's are */
	uint64		removed;		/* rows the check removed */
	bool		started;
	bool		skip_visible;	/* count_only, and nothing has changed the index since gq_open */
	ItemPointerData *batch;		/* the cursor's current batch of matches */
	int			nbatch;
	int			bpos;
	bool	   *unread;			/* which of them are on all-visible pages */
	int			unread_cap;
	/* for EXPLAIN ANALYZE */
	GpxLocalStats worker_at_start;	/* this backend's worker counters when the scan began */
	GpxLocalStats worker;		/* what the scan added to them */
	uint64		tids;
	uint64		windows;		/* windows of segments evaluated that were parts of one (ended cursors' too) */
	uint64		heap_fetches;
	uint64		visible_unread;
	uint64		counted_in_index;	/* of them, counted without their TIDs */
	int			check_workers_planned;	/* parallel workers for unsure rows */
	int			check_workers_launched;
} GpxScanState;

static void reset_cursor(GpxScanState *s);

/* ---------------------------------------------------------------------------
 * Planning
 */

/* no Var at all: the rows' contents are not needed (count(*), EXISTS) */
static bool
needs_no_column(List *tlist, List *quals)
{
	return !contain_var_clause((Node *) tlist) && !contain_var_clause((Node *) quals);
}

/*
 * How many rows the query will take from the scan, when LIMIT says so: the
 * relation is the query's only one, nothing filters or sorts its rows
 * before the LIMIT.  0 when unknown.  A hint only: the worker then sends
 * back no more ids than that, and more are fetched if they are needed.
 */
static uint32
limit_hint(PlannerInfo *root, RelOptInfo *rel, List *other_quals)
{
	if (root->limit_tuples <= 0 || root->limit_tuples >= (double) PG_UINT32_MAX ||
		root->query_pathkeys != NIL || other_quals != NIL || root->parse->hasAggs ||
		root->parse->distinctClause != NIL || root->parse->groupClause != NIL ||
		bms_membership(root->all_baserels) != BMS_SINGLETON)
		return 0;
	return (uint32) root->limit_tuples;
}

static void
add_custom_path(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *ix = lfirst(lc);
		int			answers = -1;	/* not asked yet */
		uint32		nsegments = 0;
		ListCell   *lc2;

		/* a gpuidx index (known by its routine) on one column or expression, not partial */
		if (ix->amcostestimate != gpx_costestimate || ix->nkeycolumns != 1 || ix->indpred != NIL)
			continue;
		foreach(lc2, rel->baserestrictinfo)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);
			Node	   *query;
			IndexClause *ic;
			IndexPath  *ipath;
			CustomPath *cpath;
			List	   *other = NIL;
			double		tuples;
			double		pages;
			double		T = Max(rel->pages, 1);
			bool		count_only;
			bool		lossy;
			double		factor;
			Cost		unchecked;
			QualCost	match_cost;
			BitmapHeapPath *bpath;
			ListCell   *lc3;
			bool		tsquery;
			uint32		limit;
			RestrictInfo *qual;

			if (!gpx_match_clause(rinfo, rti, ix, &query, &tsquery, &qual))
				continue;
			if (answers < 0)
			{
				Relation	index = index_open(ix->indexoid, NoLock);

				answers = gpx_index_answers(index, gpx_current_config());
				nsegments = answers ? gpx_index_segments(index) : 0;
				index_close(index, NoLock);
			}
			if (!answers)
				break;

			/* the index's own estimate, through its cost function */
			ic = makeNode(IndexClause);
			ic->rinfo = rinfo;
			ic->indexquals = list_make1(qual);
			ic->lossy = false;
			ic->indexcol = 0;
			ipath = create_index_path(root, ix, list_make1(ic), NIL, NIL, NIL,
									  ForwardScanDirection, false, NULL, 1.0, false);

			foreach(lc3, rel->baserestrictinfo)
				if (lfirst(lc3) != rinfo)
					other = lappend(other, lfirst(lc3));
			count_only = needs_no_column(rel->reltarget->exprs, extract_actual_clauses(other, false));

			/*
			 * Priced against the index's bitmap scan, as the planner prices
			 * that (measured on 1M Debian paths, bench/results/customscan.md):
			 * fetching rows or counting them costs about the same as the
			 * bitmap scan (the bitmap kept as the tie-break); but past work_mem
			 * the bitmap turns lossy and rechecks every row of its lossy pages
			 * (30 to 100 times slower there), which the custom scan never does.
			 */
			bpath = create_bitmap_heap_path(root, rel, (Path *) ipath, NULL, 1.0, 0);
			tuples = clamp_row_est(ipath->indexselectivity * rel->tuples);
			/*
			 * less the clause's check on every row fetched, which the bitmap
			 * scan's price includes (its recheck) and the custom scan never
			 * makes: the index answers exactly
			 */
			cost_qual_eval_node(&match_cost, (Node *) rinfo, root);
			unchecked = bpath->path.total_cost - gpx_cost_if_disabled(enable_bitmapscan) -
				tuples * match_cost.per_tuple;
			pages = Min(T, (2.0 * T * tuples) / (2.0 * T + tuples));
			lossy = pages > (double) tbm_calculate_entries((double) work_mem * 1024.0);
			limit = limit_hint(root, rel, other);
			/*
			 * Under a LIMIT the custom scan reads windows of the index and
			 * stops, the bitmap scan finds every match first: never dearer,
			 * even when the matches are expected to be as few as the LIMIT
			 * (a generic plan's typical query) and a query has thousands
			 */
			factor = lossy ? (count_only ? 0.2 : 0.6) : count_only ? 0.97 : limit > 0 ? 0.99 : 1.05;
			cpath = makeNode(CustomPath);
			cpath->path.pathtype = T_CustomScan;
			cpath->path.parent = rel;
			cpath->path.pathtarget = rel->reltarget;
			cpath->path.param_info = NULL;
			cpath->path.parallel_aware = false;
			cpath->path.parallel_safe = false;
			cpath->path.parallel_workers = 0;
			cpath->path.rows = rel->rows;
			cpath->path.pathkeys = NIL;
			/* its first row needs one segment's intersection, not every segment's */
			cpath->path.startup_cost = ipath->indextotalcost / Max(nsegments, 1);

			/*
			 * and under a LIMIT its first window (the query is read as a tree
			 * then): the lists' blocks there, the same share of the index's
			 * work, at least a page's
			 */
			if (limit > 0 && gq_tree_window > 0)
				cpath->path.startup_cost *= Max(Min((double) gq_tree_window * Max(nsegments, 1) /
													Max(rel->tuples, 1.0), 1.0),
												1.0 / Max((double) ix->pages, 1.0));
			/*
			 * priced as the bitmap scan would be when enabled (enable_bitmapscan
			 * is its own); a count reads no row on a page the visibility map
			 * marks all-visible, only counts it
			 */
			if (count_only)
				cpath->path.total_cost = ipath->indextotalcost + tuples * cpu_operator_cost +
					Max(unchecked - ipath->indextotalcost, 0) * (1.0 - rel->allvisfrac) * factor;
			else
				cpath->path.total_cost = unchecked * factor;
			cpath->path.total_cost = Max(cpath->path.total_cost, cpath->path.startup_cost);
			cpath->flags = 0;
			cpath->custom_paths = NIL;
			/* the clause (to leave the qual), then as the scan takes it: the document on the left */
			cpath->custom_private = lappend(list_make5(makeInteger(ix->indexoid), makeBoolean(count_only), rinfo,
													   makeInteger(limit), makeBoolean(tsquery)),
											qual->clause);
			cpath->methods = &path_methods;
			add_path(rel, &cpath->path);
		}
	}
}

static void
set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	replace_plain_index_paths(root, rel);
	if (rel->reloptkind == RELOPT_BASEREL && rel->baserestrictinfo != NIL && rel->indexlist != NIL)
		gpx_estimate_rel_rows(root, rel);
	if (!gpx_enable_customscan || rte->rtekind != RTE_RELATION || rte->inh ||
		rte->relkind != RELKIND_RELATION || rel->reloptkind != RELOPT_BASEREL ||
		rel->baserestrictinfo == NIL || rel->indexlist == NIL || !bms_is_empty(rel->lateral_relids))
		return;
	add_custom_path(root, rel, rti, rte);
	gpx_price_seqscans(root, rel);
}

/*
 * The times a path parameterized by outer is likely to run: the fewest
 * rows among the outer relations (the planner's own estimate is private to
 * indxpath.c).
 */
static double
outer_loop_count(PlannerInfo *root, Relids outer)
{
	double		loops = 0;
	int			relid = -1;

	while ((relid = bms_next_member(outer, relid)) >= 0)
	{
		RelOptInfo *orel = relid < root->simple_rel_array_size ? root->simple_rel_array[relid] : NULL;

		if (orel != NULL && orel->rows > 0 && (loops == 0 || orel->rows < loops))
			loops = orel->rows;
	}
	return loops > 0 ? loops : 1.0;
}

/*
 * The index scans a gpuidx index offers are for ranked queries (ORDER BY
 * doc <=> query); an unordered plain index scan of @@& would only fetch in
 * TID order what a bitmap heap scan (or the custom scan) fetches better,
 * and would take their place in plans.  Such paths become bitmap heap
 * scans of the same index path.
 */
static void
replace_plain_index_paths(PlannerInfo *root, RelOptInfo *rel)
{
	List	   *plain = NIL;
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (IsA(p, IndexPath) && ((IndexPath *) p)->indexinfo->amcostestimate == gpx_costestimate &&
			((IndexPath *) p)->indexorderbys == NIL)
			plain = lappend(plain, p);
	}
	foreach(lc, plain)
	{
		IndexPath  *ipath = lfirst(lc);

		rel->pathlist = list_delete_ptr(rel->pathlist, ipath);
		/*
		 * without a key it would be a scan of every indexed row: never; an
		 * index that cannot answer (disable_cost) is left to the bitmap
		 * paths the planner made already
		 */
		/* parameterized as the index path is: its keys may name other relations' columns */
		if (ipath->indexclauses != NIL && ipath->indextotalcost < disable_cost)
			add_path(rel, (Path *) create_bitmap_heap_path(root, rel, (Path *) ipath, PATH_REQ_OUTER((Path *) ipath),
														   outer_loop_count(root, PATH_REQ_OUTER((Path *) ipath)), 0));
	}
	/* what a removed path may have pushed out of the list */
	if (plain != NIL && rel->rtekind == RTE_RELATION)
		add_path(rel, create_seqscan_path(root, rel, rel->lateral_relids, 0));
	list_free(plain);
}

static Plan *
plan_custom_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				 List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	RestrictInfo *chosen = lthird(best_path->custom_private);
	OpExpr	   *clause = list_nth(best_path->custom_private, 5);
	List	   *other = NIL;
	ListCell   *lc;

	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		/* the index answers it exactly: no recheck */
		if (rinfo != chosen)
			other = lappend(other, rinfo);
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(other, false);
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	/* the query expression, where setrefs fixes its Params */
	cscan->custom_exprs = list_make2(lsecond(clause->args), clause);
	cscan->custom_private = list_make4(linitial(best_path->custom_private),
									   lsecond(best_path->custom_private),
									   lfourth(best_path->custom_private),
									   list_nth(best_path->custom_private, 4));
	cscan->methods = &plan_methods;
	return &cscan->scan.plan;
}

/*
 * count(*) itself into the scan: "SELECT count(*) FROM t WHERE col @@& q"
 * or "WHERE doc @@ tsquery" (doc the column or expression a tsvector index
 * is on) and nothing else (one table, that one condition, no grouping, no
 * HAVING, every output a plain count(*)) is answered by one custom scan that
 * counts the matches where they are instead of handing each to an Aggregate.
 */
static bool
is_plain_count(Node *node)
{
	Aggref	   *agg;

	if (!IsA(node, Aggref))
		return false;
	agg = (Aggref *) node;
	return agg->aggfnoid == F_COUNT_ && agg->aggstar && agg->args == NIL && agg->aggfilter == NULL &&
		agg->aggdistinct == NIL && agg->aggorder == NIL && agg->agglevelsup == 0 &&
		agg->aggkind == AGGKIND_NORMAL && agg->aggsplit == AGGSPLIT_SIMPLE;
}

static void
create_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
				   RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	CustomPath *scan = NULL;
	CustomPath *cpath;
	RestrictInfo *rinfo;
	OpExpr	   *clause;
	Var		   *var;
	Node	   *query;
	bool		tsquery;
	ListCell   *lc;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || !gpx_enable_customscan || input_rel->reloptkind != RELOPT_BASEREL ||
		parse->groupClause != NIL || parse->groupingSets != NIL || parse->havingQual != NULL ||
		parse->hasWindowFuncs || parse->hasTargetSRFs || !parse->hasAggs ||
		list_length(input_rel->baserestrictinfo) != 1 || output_rel->reltarget->exprs == NIL)
		return;
	foreach(lc, output_rel->reltarget->exprs)
		if (!is_plain_count(lfirst(lc)))
			return;
	foreach(lc, input_rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		/* a row scan that reads no column */
		if (IsA(p, CustomPath) && ((CustomPath *) p)->methods == &path_methods &&
			boolVal(lsecond(((CustomPath *) p)->custom_private)))
			scan = (CustomPath *) p;
	}
	if (scan == NULL)
		return;
	rinfo = lthird(scan->custom_private);
	if (rinfo != linitial(input_rel->baserestrictinfo) || rinfo->pseudoconstant)
		return;
	/* the scan path was made from this clause, which its index answers */
	tsquery = boolVal(list_nth(scan->custom_private, 4));
	clause = list_nth(scan->custom_private, 5);
	var = gpx_clause_var(clause, &query);

	/*
	 * @@& on an expression index is counted by an Aggregate: under another
	 * gpuidx.text_config every row is checked, by the operator on the
	 * column.  A tsvector index answers under any configuration; the rows a
	 * phrase or a weight leaves unsure are checked on the index's own
	 * expression.
	 */
	if (var == NULL && !tsquery)
		return;

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = output_rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_safe = false;
	cpath->path.rows = 1;
	cpath->path.startup_cost = scan->path.total_cost;
	/* the Aggregate's work on each row is not done */
	cpath->path.total_cost = scan->path.total_cost;
	cpath->flags = 0;
	cpath->custom_paths = NIL;
	cpath->custom_private = lappend(list_make5(linitial(scan->custom_private),
											   makeInteger(planner_rt_fetch(input_rel->relid, root)->relid),
											   makeInteger(var ? var->varattno : InvalidAttrNumber),
											   makeInteger(clause->opfuncid), query),
									makeBoolean(tsquery));
	cpath->methods = &count_path_methods;
	add_path(output_rel, &cpath->path);
}

static Plan *
plan_count_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *priv = best_path->custom_private;

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = 0;
	/* the counts, built by the scan: the target list reads them from here */
	cscan->custom_scan_tlist = tlist;
	cscan->custom_exprs = list_make1(list_nth(priv, 4));
	cscan->custom_private = lappend(list_make5(linitial(priv), makeBoolean(true), lsecond(priv), lthird(priv),
											   lfourth(priv)),
									list_nth(priv, 5));
	cscan->methods = &plan_methods;
	return &cscan->scan.plan;
}

/* ---------------------------------------------------------------------------
 * Execution
 */

static Node *
create_scan_state(CustomScan *cscan)
{
	GpxScanState *s = palloc0(sizeof(GpxScanState));

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &exec_methods;
	s->indexoid = intVal(linitial(cscan->custom_private));
	s->count_only = boolVal(lsecond(cscan->custom_private));
	/*
	 * a row scan: (index, count_only, limit, tsquery); the counting one:
	 * (index, true, table, column (0: an expression), function, tsquery)
	 */
	if (list_length(cscan->custom_private) == 4)
	{
		s->limit = (uint32) intVal(lthird(cscan->custom_private));
		s->tsquery = boolVal(lfourth(cscan->custom_private));
	}
	else
	{
		s->aggregate = true;
		/* the table by OID: the plan of an upper relation names no range table entry */
		s->heap_oid = intVal(lthird(cscan->custom_private));
		s->check.attno = intVal(lfourth(cscan->custom_private));
		fmgr_info(intVal(list_nth(cscan->custom_private, 4)), &s->check.match_fn);
		s->tsquery = boolVal(list_nth(cscan->custom_private, 5));
	}
	return (Node *) s;
}

static void
begin_scan(CustomScanState *node, EState *estate, int eflags)
{
	GpxScanState *s = (GpxScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	/*
	 * PostgreSQL 15 gives a custom scan a virtual scan slot.  Rows are
	 * fetched into a slot of the table AM's own type, which is made the
	 * scan slot (the projection and quals compiled again for it), so that
	 * WHERE CURRENT OF finds the row's TID there and rows are returned
	 * without a copy.  The aggregate's one row of counts is built in the
	 * virtual scan slot; it fetches rows into a slot of its own.
	 */
	s->query_expr = ExecInitExpr(linitial(cscan->custom_exprs), &node->ss.ps);
	if (!s->aggregate)
	{
		s->heap = node->ss.ss_currentRelation;
		ExecInitScanTupleSlot(estate, &node->ss, RelationGetDescr(s->heap), table_slot_callbacks(s->heap));
		ExecAssignScanProjectionInfoWithVarno(&node->ss, cscan->scan.scanrelid);
		node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);
		s->match_qual = ExecInitQual(list_make1(lsecond(cscan->custom_exprs)), &node->ss.ps);
	}
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	if (s->aggregate)
	{
		s->heap = table_open(s->heap_oid, AccessShareLock);
		s->check.heap = s->heap;
		s->check.row_cxt = AllocSetContextCreate(estate->es_query_cxt, "gpuidx row check",
												 ALLOCSET_DEFAULT_SIZES);
		s->fetch_slot = table_slot_create(s->heap, &estate->es_tupleTable);
	}
	else
		s->fetch_slot = node->ss.ss_ScanTupleSlot;
	s->index = index_open(s->indexoid, AccessShareLock);
	if (s->aggregate && s->tsquery)
	{
		/* a row a phrase or a weight leaves unsure: its document as the index makes it */
		s->check.index_info = BuildIndexInfo(s->index);
		s->check.estate = CreateExecutorState();
	}
	s->fetch = table_index_fetch_begin(s->heap);
	s->vmbuffer = InvalidBuffer;
	s->cxt = AllocSetContextCreate(estate->es_query_cxt, "gpuidx custom scan", ALLOCSET_DEFAULT_SIZES);
}

/* the query's terms, and the cursor over the index's answer */
static void
start(GpxScanState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	GpxLexemes	terms = {0};
	bool		isnull;
	Datum		q = ExecEvalExprSwitchContext(s->query_expr, econtext, &isnull);
	Oid			cfg = gpx_current_config();

	s->started = true;
	s->check.query = isnull ? (Datum) 0 : PointerGetDatum(PG_DETOAST_DATUM_COPY(q));
	s->check.query_null = isnull;
	if (!gpx_index_answers(s->index, cfg))
	{
		/*
		 * A plan made under another gpuidx.text_config (a prepared
		 * statement): the index's lexemes are not the query's, so every row
		 * is read and the operator decides, as a bitmap scan's lossy pages do.
		 */
		s->seq = table_beginscan(s->heap, s->css.ss.ps.state->es_snapshot, 0, NULL);
		MemoryContextSwitchTo(old);
		return;
	}
	if (s->tsquery)
	{
		s->tree = gq_tree_new();
		if (isnull)
			gq_tree_add_nothing(s->tree);
		else
			gq_tree_add_tsquery(s->tree, DatumGetTSQuery(s->check.query));
		s->recheck = s->tree->recheck;
		/* every unsure candidate's row is checked, batch by batch */
		s->tree->rows_checked = true;
	}
	else if (!isnull)
	{
		gpx_query_terms(cfg, DatumGetTextPP(q), &terms);
		/* under a LIMIT, as a tree: read by windows of the segments' docs, a few blocks of each list */
		if (s->limit > 0 && gq_tree_window > 0 && terms.n > 0)
		{
			s->tree = gq_tree_new();
			gq_tree_add_lexemes(s->tree, &terms);
		}
	}

	/*
	 * SERIALIZABLE: a lock on the whole index, as index_beginscan takes for
	 * an index without predicate locks of its own; an insert into the index
	 * then conflicts with this scan (index_insert checks it)
	 */
	PredicateLockRelation(s->index, s->css.ss.ps.state->es_snapshot);
	pgstat_count_index_scan(s->index);
	s->gq = gq_open(s->index);
	s->cursor = s->tree ? gq_cursor_begin_tree(s->gq, s->tree, s->limit) : gq_cursor_begin(s->gq, &terms, s->limit);
	s->skip_visible = s->count_only && IsMVCCSnapshot(s->css.ss.ps.state->es_snapshot);
	MemoryContextSwitchTo(old);
}

/*
 * The cursor's next batch of matches, and which of them lie on pages the
 * visibility map marks all-visible (only when counting).  Those are then
 * counted unread, as an index-only scan does, but only after the index is
 * seen unchanged since the scan read it: a row VACUUM removed in between
 * (marking its doc dead, then its page all-visible) would be counted
 * otherwise.  From the first change on, every row is fetched.
 */
static bool
next_batch(GpxScanState *s)
{
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	bool		more;
	bool		any_unread = false;

	/* what the cursor's step cost on the worker's side */
	s->worker_at_start = gpx_local_stats;
	more = gq_cursor_next_batch(s->cursor, &s->batch, &s->nbatch);
	s->batch_recheck = more && s->cursor->batch_recheck;
	gpx_local_stats_collect(&s->worker, &s->worker_at_start);
	if (more && s->nbatch > s->unread_cap)
	{
		s->unread_cap = Max(s->nbatch, 2 * s->unread_cap);
		s->unread = s->unread ? repalloc_huge(s->unread, s->unread_cap) :
			palloc_extended(s->unread_cap, MCXT_ALLOC_HUGE);
	}
	MemoryContextSwitchTo(old);
	if (!more)
		return false;
	s->bpos = 0;
	for (int i = 0; i < s->nbatch; i++)
	{
		/* a row checked is a row read */
		s->unread[i] = s->skip_visible && !s->batch_recheck &&
			VM_ALL_VISIBLE(s->heap, ItemPointerGetBlockNumber(&s->batch[i]), &s->vmbuffer);
		any_unread |= s->unread[i];
	}
	if (any_unread && !gq_unchanged(s->gq))
	{
		s->skip_visible = false;
		memset(s->unread, 0, s->nbatch);
	}
	return true;
}

/*
 * The next match visible to the scan's snapshot: true with the row in
 * fetch_slot, or with *unread set when it is counted without being read.
 */
static bool
next_match(GpxScanState *s, bool *unread)
{
	Snapshot	snapshot = s->css.ss.ps.state->es_snapshot;

	for (;;)
	{
		bool		call_again = false;
		bool		all_dead = false;
		int			i;

		if (s->bpos >= s->nbatch && !next_batch(s))
			return false;
		i = s->bpos++;
		s->tids++;
		*unread = s->unread[i];
		if (*unread)
		{
			/* a row not read is locked as if read: its page, as an index-only scan does */
			PredicateLockPage(s->heap, ItemPointerGetBlockNumber(&s->batch[i]), snapshot);
			s->visible_unread++;
			return true;
		}
		s->heap_fetches++;
		if (table_index_fetch_tuple(s->fetch, &s->batch[i], snapshot, s->fetch_slot, &call_again, &all_dead))
			return true;
		CHECK_FOR_INTERRUPTS();
	}
}

static TupleTableSlot *
next_tuple(ScanState *ss)
{
	GpxScanState *s = (GpxScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	bool		unread;

	if (!s->started)
		start(s);
	if (s->seq)
	{
		ExprContext *econtext = ss->ps.ps_ExprContext;

		while (table_scan_getnextslot(s->seq, ForwardScanDirection, slot))
		{
			s->heap_fetches++;
			econtext->ecxt_scantuple = slot;
			if (ExecQual(s->match_qual, econtext))
				return slot;
			ResetExprContext(econtext);
			CHECK_FOR_INTERRUPTS();
		}
		return ExecClearTuple(slot);
	}
	for (;;)
	{
		ExprContext *econtext = ss->ps.ps_ExprContext;

		if (!next_match(s, &unread))
			return ExecClearTuple(slot);
		if (!s->batch_recheck)
			break;
		/* a phrase or a weight: the clause decides (no row is unread then) */
		econtext->ecxt_scantuple = slot;
		if (ExecQualAndReset(s->match_qual, econtext))
			break;
		s->removed++;
		CHECK_FOR_INTERRUPTS();
	}
	if (unread)
	{
		/* no column is read, but WHERE CURRENT OF reads the row's TID */
		ExecStoreAllNullTuple(slot);
		slot->tts_tid = s->batch[s->bpos - 1];
		slot->tts_tableOid = RelationGetRelid(s->heap);
	}
	return slot;
}

/* EvalPlanQual: a row updated concurrently must still match */
static bool
recheck_tuple(ScanState *ss, TupleTableSlot *slot)
{
	GpxScanState *s = (GpxScanState *) ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;

	econtext->ecxt_scantuple = slot;
	return ExecQualAndReset(s->match_qual, econtext);
}

/*
 * The heap's blocks that the visibility map does not mark all-visible, as
 * a bitmap (bit b of (*words)[b / 64], palloc'd) of *nblocks blocks:
 * returns how many they are, or -1 when more than max.  Read from the
 * visibility map's pages a word at a time: 2 bits a heap block, the low
 * one all-visible (PostgreSQL's on-disk format since 9.6, which pg_upgrade
 * keeps), so a table of a million pages takes a few microseconds.  Called
 * after the scan read the index: the index's docs all lie in blocks below
 * the table's length read here.
 */
#define VM_MAP_BYTES		(BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define VM_BLOCKS_PER_PAGE	(VM_MAP_BYTES * 4)
#define VM_ALL_VISIBLE_BITS UINT64CONST(0x5555555555555555)

static int64
heap_not_all_visible(Relation heap, uint32 max, uint64 **words, BlockNumber *nblocks_out)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(heap);
	BlockNumber vm_pages;
	BlockNumber done = 0;
	SMgrRelation smgr = RelationGetSmgr(heap);
	uint64		n = 0;

	*words = NULL;
	*nblocks_out = nblocks;
	if (nblocks == 0)
		return 0;
	if (!smgrexists(smgr, VISIBILITYMAP_FORKNUM))
		return -1;
	vm_pages = smgrnblocks(smgr, VISIBILITYMAP_FORKNUM);
	/* the heap's blocks past the map's pages are not all-visible */
	if ((uint64) vm_pages * VM_BLOCKS_PER_PAGE + max < nblocks)
		return -1;
	*words = palloc0(((Size) nblocks + 63) / 64 * sizeof(uint64));
	for (BlockNumber p = 0; done < nblocks && n <= max; p++)
	{
		Buffer		buf;
		const uint8 *map;
		uint32		len = Min(nblocks - done, VM_BLOCKS_PER_PAGE);

		CHECK_FOR_INTERRUPTS();
		if (p >= vm_pages)
		{
			n += nblocks - done;
			for (; done < nblocks; done++)
				(*words)[done / 64] |= UINT64CONST(1) << (done % 64);
			break;
		}
		buf = ReadBufferExtended(heap, VISIBILITYMAP_FORKNUM, p, RBM_NORMAL, NULL);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		map = (const uint8 *) PageGetContents(BufferGetPage(buf));
		for (uint32 b = 0; b < len; b += 32)
		{
			uint64		w;
			uint64		missing;

			memcpy(&w, map + b / 4, sizeof(w));
#ifdef WORDS_BIGENDIAN
			/* block b + i's bits at 2 i: the map's bytes in little-endian order */
			w = pg_bswap64(w);
#endif
			/* a set bit for each block of the 32 that is not all-visible */
			missing = ~w & VM_ALL_VISIBLE_BITS;
			if (len - b < 32)
				missing &= (UINT64CONST(1) << (2 * (len - b))) - 1;
			while (missing != 0)
			{
				int			bit = pg_rightmost_one_pos64(missing);
				BlockNumber blk = done + b + bit / 2;

				(*words)[blk / 64] |= UINT64CONST(1) << (blk % 64);
				n++;
				missing &= missing - 1;
			}
		}
		UnlockReleaseBuffer(buf);
		done += len;
	}
	if (n > max)
	{
		pfree(*words);
		*words = NULL;
		return -1;
	}
	return (int64) n;
}

/* rows to check, counted: in parallel workers too when they are many (rowcheck.c) */
static int64
count_checked_tids(GpxScanState *s, const ItemPointerData *tids, uint32 n)
{
	GpxCheckCounts counts = {0};

	s->tids += n;
	gpx_check_rows(&s->check, s->index, tids, n, s->css.ss.ps.state->es_snapshot, s->fetch, s->fetch_slot,
				   &counts);
	s->heap_fetches += counts.fetched;
	s->removed += counts.removed;
	s->check_workers_planned += counts.workers_planned;
	s->check_workers_launched += counts.workers_launched;
	return (int64) counts.matched;
}

/* a batch to check, with the rest of its segment's docs to check: counted at once */
static int64
count_checked(GpxScanState *s)
{
	ItemPointerData *rest;
	uint32		nrest = gq_cursor_take_unsure(s->cursor, &rest);
	uint32		nbatch = (uint32) (s->nbatch - s->bpos);
	ItemPointerData *tids = palloc_extended(((Size) nbatch + nrest) * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	int64		n;

	memcpy(tids, s->batch + s->bpos, (Size) nbatch * sizeof(ItemPointerData));
	if (nrest > 0)
		memcpy(tids + nbatch, rest, (Size) nrest * sizeof(ItemPointerData));
	s->bpos = s->nbatch;
	n = count_checked_tids(s, tids, nbatch + nrest);
	pfree(tids);
	if (rest)
		pfree(rest);
	return n;
}

/* the rest of the cursor's matches, counted (those it flags checked on the row) */
static int64
count_cursor(GpxScanState *s)
{
	int64		n = 0;
	bool		unread;

	for (;;)
	{
		if (s->bpos >= s->nbatch && !next_batch(s))
			break;
		if (s->batch_recheck)
		{
			n += count_checked(s);
			continue;
		}
		if (!next_match(s, &unread))
			break;
		/* a row of a batch to check that next_match reached first (the rest at once, above) */
		if (s->batch_recheck && !unread && !gpx_row_matches(&s->check, s->fetch_slot))
			s->removed++;
		else
			n++;
	}
	return n;
}

/*
 * A segment's docs counted through their TIDs: each on a page the
 * visibility map marks all-visible counted unread, the others read (if
 * visible to the snapshot); with check, every one read and checked (a
 * tree's unsure docs), in parallel workers too when they are many
 * (rowcheck.c).  Returns the rows counted.
 */
static int64
count_docs_by_row(GpxScanState *s, GpxSegment *sg, const uint32 *docs, uint32 ndocs, bool check)
{
	Snapshot	snapshot = s->css.ss.ps.state->es_snapshot;
	ItemPointerData *tids = palloc_extended((Size) Max(ndocs, 1) * sizeof(ItemPointerData), MCXT_ALLOC_HUGE);
	uint32		nmap = gpx_seg_map(sg, docs, ndocs, tids);
	int64		n = 0;

	if (check)
	{
		n = count_checked_tids(s, tids, nmap);
		pfree(tids);
		return n;
	}
	s->tids += nmap;
	for (uint32 i = 0; i < nmap; i++)
	{
		bool		call_again = false;
		bool		all_dead = false;

		if (VM_ALL_VISIBLE(s->heap, ItemPointerGetBlockNumber(&tids[i]), &s->vmbuffer))
		{
			s->visible_unread++;
			n++;
			continue;
		}
		s->heap_fetches++;
		if (table_index_fetch_tuple(s->fetch, &tids[i], snapshot, s->fetch_slot, &call_again, &all_dead))
			n++;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(tids);
	return n;
}

/*
 * Of docs[0..k) (ascending, palloc'd: freed here), the matches of segment
 * sg whose doc map chunks are in dirty[0..ndirty) (their rows may lie on
 * pages not all-visible) are mapped to their TIDs and read where their page
 * is not all-visible, the others counted from the index; *d: where the
 * search of dirty is, for docs further on.  Returns the rows counted.
 */
static int64
count_docs_partly(GpxScanState *s, GpxSegment *sg, uint32 *docs, uint32 k, const uint32 *dirty,
				  uint32 ndirty, uint32 *d)
{
	uint32		nmap = 0;
	int64		n = 0;

	if (ndirty == 0 && sg->ref.ndead == 0)
	{
		/* every one counted where it is */
		n = k;
		s->counted_in_index += k;
	}
	else
	{
		/* the dirty chunks' docs move to the front of docs, in order */
		for (uint32 i = 0; i < k; i++)
		{
			uint32		chunk = docs[i] / GPX_DOCMAP_CHUNK;

			while (*d < ndirty && dirty[*d] < chunk)
				(*d)++;
			if (*d < ndirty && dirty[*d] == chunk)
				docs[nmap++] = docs[i];
			else if (sg->ref.ndead == 0 || gpx_seg_is_live(sg, docs[i]))
			{
				n++;
				s->counted_in_index++;
			}
			if (i % 8192 == 0)
				CHECK_FOR_INTERRUPTS();
		}
	}
	s->tids += n;
	s->visible_unread += n;
	n += count_docs_by_row(s, sg, docs, nmap, false);
	if (docs)
		pfree(docs);
	return n;
}

/*
 * The matches of segment seg, counted as count_docs_partly says; a tree's
 * over windows of the segment's docs (its sets within work_mem), its unsure
 * matches all read and checked.
 */
static int64
count_segment_partly(GpxScanState *s, int seg, const uint32 *dirty, uint32 ndirty)
{
	GpxSegment *sg = gq_segment(s->gq, seg);
	uint32	   *docs;
	uint32		k;
	uint32		d = 0;
	int64		n = 0;
	uint32		win;

	if (s->tree == NULL)
	{
		s->worker_at_start = gpx_local_stats;
		k = gq_segment_docs(s->gq, seg, &s->cursor->terms, &docs);
		gpx_local_stats_collect(&s->worker, &s->worker_at_start);
		return count_docs_partly(s, sg, docs, k, dirty, ndirty, &d);
	}
	win = gq_tree_bounded_window(s->gq, seg, s->tree);
	for (uint64 lo = 0; lo < sg->hdr->ndocs; lo += win)
	{
		uint32	   *unsure;
		uint32		nunsure;

		s->worker_at_start = gpx_local_stats;
		gq_segment_tree_window(s->gq, seg, s->tree, (uint32) lo, (uint32) Min(lo + win, sg->hdr->ndocs),
							   &docs, &k, &unsure, &nunsure);
		if (win < sg->hdr->ndocs)
			s->windows++;
		gpx_local_stats_collect(&s->worker, &s->worker_at_start);
		n += count_docs_partly(s, sg, docs, k, dirty, ndirty, &d);
		if (nunsure > 0)
		{
			n += count_docs_by_row(s, sg, unsure, nunsure, true);
			pfree(unsure);
		}
	}
	return n;
}

/*
 * At most this many heap blocks not all-visible for a count from the
 * index: past it, most chunks would be mapped anyway
 */
#define MAX_NOT_VISIBLE(nblocks)	Max(1024, (nblocks) / 8)

/* count(*) of the matches, every row counted where it is, none returned */
static int64
count_matches(GpxScanState *s)
{
	int64		n = 0;

	if (!s->started)
		start(s);
	if (s->seq)
	{
		/* the index cannot answer under this configuration: the operator decides */
		while (!s->check.query_null && table_scan_getnextslot(s->seq, ForwardScanDirection, s->fetch_slot))
		{
			s->heap_fetches++;
			if (gpx_row_matches(&s->check, s->fetch_slot))
				n++;
			CHECK_FOR_INTERRUPTS();
		}
		return n;
	}
	if (s->skip_visible && s->gq->meta.nsegments > 0)
	{
		uint64	   *blocks;
		BlockNumber nblocks;
		int64		unsure = heap_not_all_visible(s->heap,
												  MAX_NOT_VISIBLE(RelationGetNumberOfBlocks(s->heap)),
												  &blocks, &nblocks);

		if (unsure >= 0)
		{
			uint32	   *dirty = NULL;
			uint32		dirty_cap = 0;
			uint64		counters[5] = {s->tids, s->heap_fetches, s->visible_unread, s->counted_in_index, s->removed};

			/*
			 * Each segment counted where it is, but for the chunks of its
			 * doc map whose rows may lie on pages not all-visible, which
			 * are mapped to their TIDs and read.  The rows counted unread
			 * are not known, so the whole table is locked (SERIALIZABLE),
			 * as a sequential scan locks it.
			 */
			PredicateLockRelation(s->heap, s->css.ss.ps.state->es_snapshot);
			for (uint32 seg = 0; seg < s->gq->meta.nsegments; seg++)
			{
				uint32		ndirty = 0;

				CHECK_FOR_INTERRUPTS();
				if (unsure > 0)
				{
					const GqSegBlocks *sb = gq_segment_blocks(s->gq, seg);

					if (sb->nchunks > dirty_cap)
					{
						dirty_cap = sb->nchunks;
						dirty = dirty ? repalloc(dirty, dirty_cap * sizeof(uint32)) :
							palloc(dirty_cap * sizeof(uint32));
					}
					ndirty = gq_dirty_chunks(sb, blocks, nblocks, dirty);
				}
				if (ndirty == 0 && s->tree == NULL)
				{
					int64		k;

					s->worker_at_start = gpx_local_stats;
					k = (int64) gq_segment_count(s->gq, seg, &s->cursor->terms);
					gpx_local_stats_collect(&s->worker, &s->worker_at_start);
					n += k;
					s->tids += k;
					s->visible_unread += k;
					s->counted_in_index += k;
				}
				else
					n += count_segment_partly(s, seg, dirty, ndirty);
			}
			if (blocks)
				pfree(blocks);
			if (dirty)
				pfree(dirty);
			if (gq_unchanged(s->gq))
			{
				/* then the pending area's rows, as below */
				gq_cursor_skip_segments(s->cursor);
				return n + count_cursor(s);
			}
			/* changed meanwhile: counted again, every row read (rare) */
			reset_cursor(s);
			start(s);
			s->skip_visible = false;
			s->tids = counters[0];
			s->heap_fetches = counters[1];
			s->visible_unread = counters[2];
			s->counted_in_index = counters[3];
			s->removed = counters[4];
			n = 0;
		}
	}
	return count_cursor(s);
}

static TupleTableSlot *
next_count(ScanState *ss)
{
	GpxScanState *s = (GpxScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	int64		n;

	ExecClearTuple(slot);
	if (s->agg_done)
		return slot;
	n = count_matches(s);
	for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++)
	{
		slot->tts_values[i] = Int64GetDatum(n);
		slot->tts_isnull[i] = false;
	}
	s->agg_done = true;
	return ExecStoreVirtualTuple(slot);
}

static bool
recheck_count(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_scan(CustomScanState *node)
{
	if (((GpxScanState *) node)->aggregate)
		return ExecScan(&node->ss, next_count, recheck_count);
	return ExecScan(&node->ss, next_tuple, recheck_tuple);
}

static void
reset_cursor(GpxScanState *s)
{
	if (s->seq)
	{
		table_endscan(s->seq);
		s->seq = NULL;
	}
	else if (s->started)
	{
		s->windows += s->cursor->windows;
		gq_cursor_end(s->cursor);
		gq_close(s->gq);
	}
	s->started = false;
	s->tree = NULL;
	s->recheck = false;
	s->batch_recheck = false;
	s->batch = NULL;
	s->nbatch = s->bpos = 0;
	s->unread = NULL;
	s->unread_cap = 0;
	if (s->cxt)
		MemoryContextReset(s->cxt);
}

static void
end_scan(CustomScanState *node)
{
	GpxScanState *s = (GpxScanState *) node;

	if (s->index == NULL)
		return;					/* EXPLAIN only */
	reset_cursor(s);
	if (BufferIsValid(s->vmbuffer))
		ReleaseBuffer(s->vmbuffer);
	table_index_fetch_end(s->fetch);
	index_close(s->index, AccessShareLock);
	if (s->check.estate)
		FreeExecutorState(s->check.estate);
	if (s->aggregate)
		table_close(s->heap, AccessShareLock);
}

static void
rescan(CustomScanState *node)
{
	GpxScanState *s = (GpxScanState *) node;

	reset_cursor(s);
	table_index_fetch_reset(s->fetch);
	s->agg_done = false;
	ExecScanReScan(&node->ss);
}

static void
explain_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpxScanState *s = (GpxScanState *) node;

	ExplainPropertyText("Index", get_rel_name(s->indexoid), es);
	if (!s->aggregate)
	{
		/* the clause the index answers (the counting scan has no relation to name) */
		CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
		List	   *context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);

		ExplainPropertyText("Index Keys", deparse_expression(lsecond(cscan->custom_exprs), context,
															 es->verbose, false), es);
	}
	if (s->aggregate)
		ExplainPropertyText("Aggregate", "count(*) of the matches, counted in the scan", es);
	ExplainPropertyText("Heap", s->count_only ? "only pages not all-visible" : "every row", es);
	if (es->analyze && s->seq)
		ExplainPropertyText("Index Unused", "made under another gpuidx.text_config: every row checked", es);
	if (es->analyze)
	{
		ExplainPropertyUInteger("Index Matches", NULL, s->tids, es);
		ExplainPropertyUInteger("Heap Fetches", NULL, s->heap_fetches, es);
		if (s->recheck || s->removed > 0)
			ExplainPropertyUInteger("Rows Removed by Index Recheck", NULL, s->removed, es);
		/* a LIMIT's windows, or those that kept a segment's sets within work_mem */
		if (s->tree && (s->limit > 0 || s->windows + s->cursor->windows > 0))
			ExplainPropertyUInteger("Index Windows", NULL, s->windows + s->cursor->windows, es);
		if (s->count_only)
			ExplainPropertyUInteger("All-Visible Unread", NULL, s->visible_unread, es);
		if (s->aggregate)
			ExplainPropertyUInteger("Counted in Index", NULL, s->counted_in_index, es);
		if (s->check_workers_planned > 0)
		{
			ExplainPropertyInteger("Check Workers Planned", NULL, s->check_workers_planned, es);
			ExplainPropertyInteger("Check Workers Launched", NULL, s->check_workers_launched, es);
		}
		/* blocks of 128 (LRC: 256) postings decoded or searched in the backend */
		if (es->buffers)
			ExplainPropertyUInteger("List Blocks Read", NULL, s->worker.list_blocks, es);
		/* where the rounds ran, when the placement was asked */
		if (s->worker.worker_rounds + s->worker.backend_rounds + s->worker.fallbacks > 0)
		{
			ExplainPropertyUInteger("Rounds on Worker", NULL, s->worker.worker_rounds, es);
			ExplainPropertyUInteger("Rounds in Backend", NULL, s->worker.backend_rounds, es);
			gpx_explain_worker_requests(&s->worker, es);
		}
		gpx_explain_worker_not_asked(&s->worker, es);
	}
}

void
gpx_customscan_init(void)
{
	DefineCustomBoolVariable("gpuidx.enable_customscan",
							 "Lets the planner answer @@& and @@ tsquery on a gpuidx-indexed column or expression with the gpuidx custom scan.",
							 NULL, &gpx_enable_customscan, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.tree_window",
							"Documents of a segment a query tree under LIMIT is first evaluated over.",
							"Each next window of the segment is four times as large, so a query that "
							"stops after a few rows reads a few blocks of each list.  0: whole segments.",
							&gq_tree_window, 16384, 0, INT_MAX, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.pending_index_max_size",
							"The largest pending area a backend indexes by term; a larger one is read entry by entry.",
							"A developer's setting: 0 reads every pending area entry by entry.",
							&gq_pending_index_max_kb, 64 * 1024, 0, 1024 * 1024 - 1, PGC_USERSET,
							GUC_UNIT_KB | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.parallel_check_rows",
							"Rows a count must check (a phrase or a weight) from which it checks them in parallel workers too.",
							"As many workers as there are such numbers of rows, at most max_parallel_workers_per_gather.  "
							"0: always in the backend alone.",
							&gpx_parallel_check_rows, 2000, 0, INT_MAX, PGC_USERSET, 0, NULL, NULL, NULL);
	RegisterCustomScanMethods(&plan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = set_rel_pathlist;
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = create_upper_paths;
	gpx_estimates_init();
}
