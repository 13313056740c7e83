/*
 * estimates.c
 *	  What the planner learns from a gpuidx index about the relation it
 *	  indexes: how many rows "doc @@ tsquery" keeps, from the index's own
 *	  counts (PostgreSQL's estimator guesses from the column's statistics,
 *	  and takes 0.5% for a query it cannot see), and where the first matches
 *	  lie, so that a sequential scan under LIMIT or EXISTS is priced at the
 *	  part of the table it reads before them.  PostgreSQL prices that scan as
 *	  if the matches were spread evenly, which makes it look nearly free for
 *	  a query whose matches are few or lie late in the table; doc ids follow
 *	  the heap, so the index knows.  Relations without a gpuidx index keep
 *	  PostgreSQL's estimates.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_statistic.h"
#include "nodes/pathnodes.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "am/gpuidx_am.h"
#include "scan/clauses.h"
#include "scan/customscan.h"
#include "text/tokenize.h"

/*
 * The gpuidx index of the relation that answers the clause under the
 * current configuration, opened (NULL: none); *value its query when the
 * planner knows it (else NULL), *tsquery its kind.
 */
static Relation
clause_index(PlannerInfo *root, RelOptInfo *rel, RestrictInfo *rinfo, Const **value, bool *tsquery,
			 RestrictInfo **as_indexed)
{
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *ix = lfirst(lc);
		Node	   *query;
		RestrictInfo *qual;
		Relation	index;
		Node	   *known;

		/* a gpuidx index (known by its routine) on one column or expression, not partial */
		if (ix->amcostestimate != gpx_costestimate || ix->nkeycolumns != 1 || ix->indpred != NIL ||
			!gpx_match_clause(rinfo, rel->relid, ix, &query, tsquery, &qual))
			continue;
		index = index_open(ix->indexoid, NoLock);
		if (!gpx_index_answers(index, gpx_current_config()))
		{
			index_close(index, NoLock);
			continue;
		}
		known = estimate_expression_value(root, query);
		*value = IsA(known, Const) ? (Const *) known : NULL;
		if (as_indexed)
			*as_indexed = qual;
		return index;
	}
	return NULL;
}

/* does node hold an expression equal to key? */
static bool
holds_expression(Node *node, Node *key)
{
	if (node == NULL)
		return false;
	if (equal(node, key))
		return true;
	return expression_tree_walker(node, holds_expression, key);
}

/*
 * Every restriction of rel that names its column attnum (or, attnum 0, an
 * expression equal to key) is one a gpuidx index answers, whose selectivity
 * gpx_estimate_rel_rows replaces: the statistics of that column or
 * expression are then read for nothing but that.
 */
static bool
only_answered_uses(PlannerInfo *root, RelOptInfo *rel, AttrNumber attnum, Node *key)
{
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		Const	   *value;
		bool		tsquery;
		Relation	index;

		if (attnum != 0)
		{
			Bitmapset  *attrs = NULL;

			pull_varattnos((Node *) rinfo->clause, rel->relid, &attrs);
			if (!bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, attrs))
				continue;
		}
		else if (!holds_expression((Node *) rinfo->clause, key))
			continue;
		index = clause_index(root, rel, rinfo, &value, &tsquery, NULL);
		if (index == NULL)
			return false;
		index_close(index, NoLock);
	}
	return true;
}

/* the expression of rel's single-key index indexOid; NULL if it has none */
static Node *
index_expression(RelOptInfo *rel, Oid indexOid)
{
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *ix = lfirst(lc);

		if (ix->indexoid == indexOid && ix->nkeycolumns == 1 && ix->indexprs != NIL)
			return linitial(ix->indexprs);
	}
	return NULL;
}

static get_index_stats_hook_type prev_get_index_stats_hook = NULL;

/*
 * The statistics ANALYZE keeps of a gpuidx index's expression are left
 * unread where every restriction on the expression is one the index
 * estimates: "doc @@ q" on it has the rows the index counts (the clause's
 * selectivity is replaced, gpx_estimate_rel_rows), and reading them cost
 * each custom plan more than the rest of its planning: tsmatchsel detoasts
 * the 1,000 most common lexemes and sorts them every time (a quarter of a
 * short GCIDE query's instructions, planning and running it).  An
 * expression with another use (inside an OR, under NOT) keeps them.
 * Another index of the same expression (GIN) still gives its own; an index
 * made under another configuration, which the planner does not use for
 * the clause, is left alone.
 */
static bool
skip_index_stats(PlannerInfo *root, Oid indexOid, AttrNumber indexattnum, VariableStatData *vardata)
{
	Relation	index = index_open(indexOid, NoLock);
	bool		ours = index->rd_indam->amcostestimate == gpx_costestimate &&
		gpx_index_answers(index, gpx_current_config());
	Node	   *key;

	index_close(index, NoLock);
	if (ours && vardata->rel != NULL && (key = index_expression(vardata->rel, indexOid)) != NULL &&
		!only_answered_uses(root, vardata->rel, 0, key))
		ours = false;
	if (ours)
	{
		vardata->statsTuple = NULL;
		return true;
	}
	return prev_get_index_stats_hook != NULL &&
		prev_get_index_stats_hook(root, indexOid, indexattnum, vardata);
}

static get_relation_stats_hook_type prev_get_relation_stats_hook = NULL;

/*
 * Column attnum of relation relid (rel: its RelOptInfo, or, for a column
 * of a subquery's relation, the subquery's) is the key of a gpuidx index of
 * tsvectors, whole (not partial)
 */
static bool
column_indexed(RelOptInfo *rel, Oid relid, AttrNumber attnum)
{
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *ix = lfirst(lc);
		Relation	index;
		bool		ours;

		if (ix->amcostestimate != gpx_costestimate || ix->nkeycolumns != 1 || ix->indexkeys[0] != attnum ||
			ix->indpred != NIL)
			continue;
		index = index_open(ix->indexoid, NoLock);
		ours = index->rd_index->indrelid == relid && gpx_index_info(index)->kind == GPX_KIND_TSVECTOR;
		index_close(index, NoLock);
		if (ours)
			return true;
	}
	return false;
}

/*
 * The same for a stored tsvector column that a gpuidx index answers, where
 * every restriction on it is one the index estimates: the column's
 * statistics hold nothing but its most common lexemes (ts_typanalyze's)
 * and what any column has, and only tsmatchsel reads the lexemes, at the
 * same cost each plan.  So the planner gets a copy of the statistics
 * without them: the null fraction and the width stay.  (A restriction the
 * index does not estimate, "@@" inside an OR say, keeps them all.)  acl_ok
 * stays false: no value of the column is left in the copy for a leaky
 * function to see.
 */
static bool
skip_column_lexemes(PlannerInfo *root, RangeTblEntry *rte, AttrNumber attnum, VariableStatData *vardata)
{
	HeapTuple	stats;
	HeapTuple	copy;
	Form_pg_statistic form;

	if (rte->rtekind != RTE_RELATION || vardata->rel == NULL || attnum <= 0 || vardata->atttype != TSVECTOROID ||
		!column_indexed(vardata->rel, rte->relid, attnum) || !only_answered_uses(root, vardata->rel, attnum, NULL))
		return prev_get_relation_stats_hook != NULL &&
			prev_get_relation_stats_hook(root, rte, attnum, vardata);
	stats = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(rte->relid), Int16GetDatum(attnum),
							BoolGetDatum(rte->inh));
	if (!HeapTupleIsValid(stats))
		return true;
	copy = heap_copytuple(stats);
	ReleaseSysCache(stats);
	form = (Form_pg_statistic) GETSTRUCT(copy);
	/* the slots' kinds are consecutive, as get_attstatsslot reads them */
	for (int i = 0; i < STATISTIC_NUM_SLOTS; i++)
		if ((&form->stakind1)[i] == STATISTIC_KIND_MCELEM)
			(&form->stakind1)[i] = 0;
	vardata->statsTuple = copy;
	vardata->freefunc = heap_freetuple;
	vardata->acl_ok = false;
	return true;
}

void
gpx_estimates_init(void)
{
	prev_get_index_stats_hook = get_index_stats_hook;
	get_index_stats_hook = skip_index_stats;
	prev_get_relation_stats_hook = get_relation_stats_hook;
	get_relation_stats_hook = skip_column_lexemes;
}

/* every path's rows times factor (they all include the relation's restrictions) */
static void
scale_path_rows(List *paths, double factor)
{
	ListCell   *lc;

	foreach(lc, paths)
	{
		Path	   *p = lfirst(lc);

		p->rows = clamp_row_est(p->rows * factor);
	}
}

/*
 * "doc @@ tsquery" on a gpuidx-indexed document keeps the share of rows the
 * index counts (a parameter: its typical query's): the clause's cached
 * selectivity is replaced, and the relation's size and paths follow.
 * (@@& has the index's estimate from its own restriction estimator.)
 */
void
gpx_estimate_rel_rows(PlannerInfo *root, RelOptInfo *rel)
{
	double		old_rows = rel->rows;
	bool		changed = false;
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		Const	   *value;
		bool		tsquery;
		Relation	index = clause_index(root, rel, rinfo, &value, &tsquery, NULL);

		if (index == NULL)
			continue;
		if (tsquery)
		{
			rinfo->norm_selec = gpx_clause_selectivity(index, value, true, rel->tuples);
			changed = true;
		}
		index_close(index, NoLock);
	}
	if (!changed)
		return;
	set_baserel_size_estimates(root, rel);
	if (old_rows > 0)
	{
		scale_path_rows(rel->pathlist, rel->rows / old_rows);
		scale_path_rows(rel->partial_pathlist, rel->rows / old_rows);
	}
}

/*
 * The rows the query takes from the relation when it stops early (a LIMIT,
 * EXISTS): only for a query of this relation alone; 0 when unknown or all.
 */
static double
rows_wanted(PlannerInfo *root, RelOptInfo *rel)
{
	if (bms_membership(root->all_baserels) != BMS_SINGLETON || !bms_equal(root->all_baserels, rel->relids))
		return 0;
	if (root->limit_tuples > 0)
		return root->limit_tuples;
	if (root->tuple_fraction >= 1.0)
		return root->tuple_fraction;
	if (root->tuple_fraction > 0)
		return root->tuple_fraction * rel->rows;
	return 0;
}

/* what a LIMIT of k rows over the path costs, as PostgreSQL prices it */
static Cost
limit_cost(const Path *p, double k)
{
	return p->startup_cost + (p->total_cost - p->startup_cost) * Min(k / Max(p->rows, 1.0), 1.0);
}

static bool
is_seqscan(const Path *p)
{
	return p->pathtype == T_SeqScan && p->param_info == NULL;
}

/*
 * The sequential scan's startup cost made such that a LIMIT of k rows over
 * it costs what reading fraction of its pages and rows does, plus extra
 * for each of the tuples it reads there (what PostgreSQL does not price,
 * see parse_cost_per_row): PostgreSQL
 * adds (total - startup) * k / rows to the startup, so that is solved for
 * the startup.  Never lowered.
 */
static void
reprice_seqscan(Path *p, double k, double fraction, double tuples, Cost extra)
{
	double		share = Min(k / Max(p->rows, 1.0), 1.0);
	Cost		target = p->startup_cost + fraction * (p->total_cost - p->startup_cost) + fraction * tuples * extra;
	Cost		startup;

	if (share >= 1.0)
		return;
	startup = (target - p->total_cost * share) / (1.0 - share);
	if (startup > p->startup_cost)
		p->startup_cost = Min(startup, p->total_cost);
}

/*
 * Parsing a byte of text into lexemes, in cost units.  PostgreSQL prices a
 * function call the same whatever its argument (to_tsvector at 100 calls of
 * cpu_operator_cost, 0.25 a row), but parsing takes time by the text's
 * length: about 0.23 us a byte on the 2-core development machine, where a
 * sequential page read is some 3 us (GCIDE's 597-byte entries take 139 us
 * a row, 51 units, where PostgreSQL says 0.25).  Set below what was
 * measured: a sequential scan that parses as it reads is still taken where
 * it reads only a few rows.
 */
#define PARSE_COST_PER_BYTE 0.02

/*
 * What evaluating the clause costs a row beyond PostgreSQL's price when
 * its document is text parsed for each row (to_tsvector over a column, or
 * a text column that @@& tokenizes): the columns' average widths from
 * their statistics; 0 for a stored tsvector or without statistics.
 */
static Cost
parse_cost_per_row(PlannerInfo *root, RelOptInfo *rel, RestrictInfo *qual)
{
	Node	   *doc = gpx_clause_doc((OpExpr *) qual->clause);
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	List	   *vars;
	ListCell   *lc;
	int32		width = 0;

	if (doc == NULL || (exprType(doc) == TSVECTOROID && IsA(doc, Var)))
		return 0;
	vars = pull_var_clause(doc, PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS | PVC_RECURSE_PLACEHOLDERS);
	foreach(lc, vars)
	{
		Var		   *v = lfirst(lc);

		if (v->varno == rel->relid && v->varattno > 0 &&
			(v->vartype == TEXTOID || v->vartype == VARCHAROID || v->vartype == BPCHAROID))
			width += Max(get_attavgwidth(rte->relid, v->varattno), 0);
	}
	list_free(vars);
	return PARSE_COST_PER_BYTE * width;
}

/* a clause of the relation that a gpuidx index answers: the index, opened, and its query */
typedef struct IndexedClause
{
	Relation	index;
	Const	   *value;
	bool		tsquery;
} IndexedClause;

/*
 * Under a LIMIT or EXISTS, a sequential scan filtered by a clause a gpuidx
 * index answers reads the table up to the clause's k-th match: how far
 * that is, the index tells (the first matches of each segment, mapped to
 * their heap blocks; for a query the planner cannot see, where a typical
 * query's k-th match lies on average), and the scan's startup cost says
 * it.  Only when the scan would otherwise be chosen: finding the first
 * matches runs the query's first windows at planning time.
 */
void
gpx_price_seqscans(PlannerInfo *root, RelOptInfo *rel)
{
	double		k = rows_wanted(root, rel);
	Cost		seq = -1;
	Cost		other = -1;
	double		fraction = 0;
	double		max_fraction = 0;
	Cost		parse = 0;
	IndexedClause *clauses;
	int			nclauses = 0;
	ListCell   *lc;

	if (k <= 0 || k >= rel->rows)
		return;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);
		Cost		c;

		if (p->param_info != NULL)
			continue;
		c = limit_cost(p, k);
		if (is_seqscan(p))
			seq = seq < 0 ? c : Min(seq, c);
		else
			other = other < 0 ? c : Min(other, c);
	}
	/* no scan to price, or it loses already */
	if (seq < 0 || other < 0 || seq > other)
		return;
	/*
	 * The clauses a gpuidx index answers, and what parsing each row read
	 * costs beyond PostgreSQL's price: every such clause's document
	 */
	clauses = palloc(list_length(rel->baserestrictinfo) * sizeof(IndexedClause));
	foreach(lc, rel->baserestrictinfo)
	{
		IndexedClause *c = &clauses[nclauses];
		RestrictInfo *qual;

		c->index = clause_index(root, rel, lfirst_node(RestrictInfo, lc), &c->value, &c->tsquery, &qual);
		if (c->index == NULL)
			continue;
		parse += parse_cost_per_row(root, rel, qual);
		nclauses++;
	}
	/* past this share of the table the scan loses: no need to know farther */
	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (is_seqscan(p) && p->total_cost > p->startup_cost)
			max_fraction = Max(max_fraction, (other - p->startup_cost) /
							   (p->total_cost - p->startup_cost + rel->tuples * parse));
	}
	for (int i = 0; i < nclauses; i++)
	{
		/* every clause holds for a row the scan returns: the farthest k-th match */
		fraction = Max(fraction, gpx_scan_fraction(clauses[i].index, clauses[i].value, clauses[i].tsquery, k,
												   rel->pages, rel->tuples, Min(max_fraction, 1.0)));
		index_close(clauses[i].index, NoLock);
	}
	pfree(clauses);
	if (fraction <= 0)
		return;
	foreach(lc, rel->pathlist)
		if (is_seqscan(lfirst(lc)))
			reprice_seqscan(lfirst(lc), k, fraction, rel->tuples, parse);
	/* a parallel scan's workers read the same part of the table together */
	foreach(lc, rel->partial_pathlist)
	{
		Path	   *p = lfirst(lc);

		if (is_seqscan(p))
			reprice_seqscan(p, k * p->rows / Max(rel->rows, 1.0), fraction,
							rel->tuples * p->rows / Max(rel->rows, 1.0), parse);
	}
}
