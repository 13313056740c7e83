/*
 * clauses.c
 *	  Which WHERE clauses a gpuidx index answers ("doc @@& query", "doc @@
 *	  tsquery", their commuted forms), for the custom scan's paths and for
 *	  the estimates that price the scans beside them.
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"

#include "am/gpuidx_am.h"
#include "scan/clauses.h"

/* the indexed side of "doc op query", under any RelabelType */
Node *
gpx_clause_doc(OpExpr *op)
{
	Node	   *left = linitial(op->args);

	while (IsA(left, RelabelType))
		left = (Node *) ((RelabelType *) left)->arg;
	return left;
}

/* the Var of "Var op query" (NULL when the document is not a column), and the query */
Var *
gpx_clause_var(OpExpr *op, Node **query)
{
	Node	   *left = gpx_clause_doc(op);

	*query = lsecond(op->args);
	return IsA(left, Var) ? (Var *) left : NULL;
}

/*
 * Is the clause "column @@& query" or "column @@ tsquery" that the index
 * answers (*tsquery says which), or its commuted form ("tsquery @@
 * column")?  *qual: the clause with the document on the left, as the
 * index takes it (the commuted form commuted back, else rinfo itself).  The operator
 * is known as a search strategy of the index's operator family (or the
 * commutator of one), never by its name or its function's (any role can
 * create an operator or function of any name in its temporary schema); the
 * column is the index's, or the expression the index is on; the query is
 * free of the relation's Vars and of volatility.
 */
bool
gpx_match_clause(RestrictInfo *rinfo, Index relid, IndexOptInfo *ix, Node **query, bool *tsquery,
				 RestrictInfo **qual)
{
	OpExpr	   *op;
	Var		   *var;
	int			strategy;

	if (!IsA(rinfo->clause, OpExpr))
		return false;
	op = (OpExpr *) rinfo->clause;
	if (list_length(op->args) != 2)
		return false;
	*qual = rinfo;
	strategy = get_op_opfamily_strategy(op->opno, ix->opfamily[0]);
	if (strategy == 0)
	{
		/* "query op doc": its commutator "doc op query" may be one */
		Oid			comm = get_commutator(op->opno);

		if (!OidIsValid(comm) || !GPX_IS_TSQUERY_STRATEGY(get_op_opfamily_strategy(comm, ix->opfamily[0])))
			return false;
		*qual = commute_restrictinfo(rinfo, comm);
		op = (OpExpr *) (*qual)->clause;
		set_opfuncid(op);
		strategy = get_op_opfamily_strategy(comm, ix->opfamily[0]);
	}
	if (strategy != GPX_STRATEGY_MATCH && !GPX_IS_TSQUERY_STRATEGY(strategy))
		return false;
	*tsquery = strategy != GPX_STRATEGY_MATCH;
	var = gpx_clause_var(op, query);
	if (ix->indexkeys[0] == 0)
	{
		if (ix->indexprs == NIL || !equal(gpx_clause_doc(op), linitial(ix->indexprs)))
			return false;
	}
	else if (var == NULL || var->varno != relid || var->varlevelsup != 0 || var->varattno != ix->indexkeys[0])
		return false;
	/* constants and parameters only: the same query for the whole scan (or rescan) */
	return !contain_var_clause(*query) && !contain_volatile_functions(*query);
}
