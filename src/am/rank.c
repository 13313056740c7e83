/*
 * rank.c
 *	  BM25 row by row: gpuidx_bm25(doc, query[, index]) and the ordering
 *	  operator doc <=> query (minus the score, so ascending is best first),
 *	  with the statistics of a gpuidx index.  A query names its index by
 *	  gpuidx_rank_query(query, index), which the planner writes for you
 *	  (gpuidx_rank_support) when the document is a column, or an indexed
 *	  expression, of a table with a gpuidx index: the same statistics, the
 *	  same operations, so the score of a row is the same bits whether the
 *	  index ranks it or the function does.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "parser/parse_relation.h"
#include "rewrite/rewriteManip.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "am/gpuidx_am.h"
#include "query/rank.h"
#include "query/tsq.h"
#include "am/rank.h"

/*
 * A query bound to an index: "[gpuidx index OID] " and the query, readable
 * where it shows (EXPLAIN, logs, the function's result).  Only that exact
 * form binds; anything else is an unbound query.
 */
#define GPX_BOUND_PREFIX "[gpuidx index "
#define GPX_BOUND_END "] "

bool
gpx_rank_query_parse(text *bound, Oid *index, const char **query, int *len)
{
	const char *p = VARDATA_ANY(bound);
	int			n = VARSIZE_ANY_EXHDR(bound);
	int			i = strlen(GPX_BOUND_PREFIX);
	int			digits;
	uint64		oid = 0;

	*index = InvalidOid;
	*query = p;
	*len = n;
	if (n < i || memcmp(p, GPX_BOUND_PREFIX, i) != 0)
		return false;
	for (digits = 0; i < n && p[i] >= '0' && p[i] <= '9' && oid <= PG_UINT32_MAX; digits++)
		oid = oid * 10 + (p[i++] - '0');
	if (digits == 0 || oid > PG_UINT32_MAX || n - i < (int) strlen(GPX_BOUND_END) ||
		memcmp(p + i, GPX_BOUND_END, strlen(GPX_BOUND_END)) != 0)
		return false;
	i += strlen(GPX_BOUND_END);
	*index = (Oid) oid;
	*query = p + i;
	*len = n - i;
	return true;
}

GPUIDX_FUNCTION(gpuidx_rank_query);
Datum
gpuidx_rank_query(PG_FUNCTION_ARGS)
{
	text	   *query = PG_GETARG_TEXT_PP(0);
	Oid			index = PG_GETARG_OID(1);
	StringInfoData s;
	const char *q;
	int			qlen;
	Oid			already;

	gpx_check_index_oid(index);
	/* binding twice keeps the first */
	if (gpx_rank_query_parse(query, &already, &q, &qlen))
		PG_RETURN_TEXT_P(query);
	initStringInfo(&s);
	appendStringInfo(&s, "%s%u%s", GPX_BOUND_PREFIX, index, GPX_BOUND_END);
	appendBinaryStringInfo(&s, VARDATA_ANY(query), VARSIZE_ANY_EXHDR(query));
	PG_RETURN_TEXT_P(cstring_to_text_with_len(s.data, s.len));
}

/* ---------------------------------------------------------------------------
 * Scoring rows: the index's statistics for the query, read once per
 * statement (the function's cache lives as long as its expression)
 */
typedef struct RankFnCache
{
	text	   *query;			/* as given, bound */
	Oid			index;
	uint32		kind;			/* the index's documents */
	Oid			doc_config;		/* a text document's configuration */
	GpxLexemes	terms;
	double	   *idf;
	gpx_rank_query q;
} RankFnCache;

void
gpx_rank_query_terms(Relation index, const char *query, int len, GpxLexemes *terms)
{
	const GpxIndexInfo *info = gpx_index_info(index);
	Oid			cfg = info->kind == GPX_KIND_TEXT ? gpx_index_config(index) : gpx_current_config();
	int			tag = strlen(GPX_TSQUERY_TAG);

	/* a tsquery (gpuidx_rank_text): its positive lexemes, as they are */
	if (len >= tag && memcmp(query, GPX_TSQUERY_TAG, tag) == 0)
	{
		char	   *s = pnstrdup(query + tag, len - tag);
		TSQuery		q = DatumGetTSQuery(DirectFunctionCall1(tsqueryin, CStringGetDatum(s)));

		gq_tsquery_positive_lexemes(q, terms);
		return;
	}
	gpx_lexemes_of_text(cfg, query, len, terms);
}

/*
 * The index's statistics tell which terms its table's documents hold: read
 * only by a role that may read the columns it indexes (the table, or each
 * of those columns), as gpuidx_index_stats and pg_stats require.
 */
void
gpx_check_index_read(Relation index)
{
	Oid			heapoid = index->rd_index->indrelid;
	Bitmapset  *cols = NULL;
	int			i = -1;

	if (pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
		return;
	for (int k = 0; k < index->rd_index->indnatts; k++)
		if (index->rd_index->indkey.values[k] != 0)
			cols = bms_add_member(cols, index->rd_index->indkey.values[k] - FirstLowInvalidHeapAttributeNumber);
	pull_varattnos((Node *) RelationGetIndexExpressions(index), 1, &cols);
	pull_varattnos((Node *) RelationGetIndexPredicate(index), 1, &cols);
	while ((i = bms_next_member(cols, i)) >= 0)
	{
		AttrNumber	attno = i + FirstLowInvalidHeapAttributeNumber;

		/* a whole-row reference reads every column */
		if (attno == InvalidAttrNumber)
		{
			if (pg_attribute_aclcheck_all(heapoid, GetUserId(), ACL_SELECT, ACLMASK_ALL) != ACLCHECK_OK)
				aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(heapoid));
		}
		else if (pg_attribute_aclcheck(heapoid, attno, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			aclcheck_error_col(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(heapoid),
							   get_attname(heapoid, attno, false));
	}
}

static RankFnCache *
rank_cache(FunctionCallInfo fcinfo, text *query, Oid index_arg)
{
	RankFnCache *c = fcinfo->flinfo->fn_extra;
	MemoryContext old;
	Oid			index;
	const char *q;
	int			qlen;
	Relation	rel;
	GqIndex    *gq;
	GqRank	   *r;
	double		k1;
	double		b;

	if (c != NULL && VARSIZE_ANY(c->query) == VARSIZE_ANY(query) &&
		memcmp(c->query, query, VARSIZE_ANY(query)) == 0)
		return c;
	if (!gpx_rank_query_parse(query, &index, &q, &qlen))
		index = index_arg;
	if (!OidIsValid(index))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("ranking needs the statistics of a gpuidx index"),
				 errhint("Rank a column (or indexed expression) that has a gpuidx index, or name the index: "
						 "gpuidx_bm25(doc, query, index) or doc <=> gpuidx_rank_query(query, index).")));
	gpx_check_index_oid(index);
	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	if (c == NULL)
		c = palloc0(sizeof(RankFnCache));
	c->query = (text *) pg_detoast_datum_copy((struct varlena *) query);
	c->index = index;
	rel = index_open(index, AccessShareLock);
	gpx_check_index(rel);
	gpx_check_index_read(rel);
	c->kind = gpx_index_info(rel)->kind;
	c->doc_config = c->kind == GPX_KIND_TEXT ? gpx_index_config(rel) : gpx_current_config();
	gpx_rank_query_terms(rel, q, qlen, &c->terms);
	gpx_index_bm25_params(rel, &k1, &b);
	gq = gq_open(rel);
	r = gq_rank_begin(gq, &c->terms, NULL, NULL, k1, b, NULL);
	c->idf = palloc(Max(c->terms.n, 1) * sizeof(double));
	memcpy(c->idf, r->idf, c->terms.n * sizeof(double));
	c->q = r->q;
	c->q.idf = c->idf;
	gq_rank_end(r);
	gq_close(gq);
	index_close(rel, AccessShareLock);
	MemoryContextSwitchTo(old);
	fcinfo->flinfo->fn_extra = c;
	return c;
}

double
gpx_score_lexemes(const gpx_rank_query *q, const GpxLexemes *terms, const GpxLexemes *doc)
{
	uint32	   *tf = palloc(Max(terms->n, 1) * sizeof(uint32));
	double		score;
	int			i = 0;
	int			j = 0;

	while (i < terms->n)
	{
		int			cmp = j < doc->n ? gpx_lexeme_cmp(doc->lex[j], doc->len[j], terms->lex[i], terms->len[i]) : 1;

		if (cmp < 0)
			j++;
		else
		{
			tf[i++] = cmp == 0 ? doc->tf[j] : 0;
			if (cmp == 0)
				j++;
		}
	}
	score = gpx_rank_score(q, tf, doc->dl);
	pfree(tf);
	return score;
}

static double
score_doc(RankFnCache *c, GpxLexemes *doc)
{
	return gpx_score_lexemes(&c->q, &c->terms, doc);
}

static double
text_score(FunctionCallInfo fcinfo, Oid index)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	RankFnCache *c = rank_cache(fcinfo, PG_GETARG_TEXT_PP(1), index);
	GpxLexemes	lex;

	gpx_lexemes_of_text(c->doc_config, VARDATA_ANY(doc), VARSIZE_ANY_EXHDR(doc), &lex);
	return score_doc(c, &lex);
}

static double
tsvector_score(FunctionCallInfo fcinfo, Oid index)
{
	TSVector	doc = PG_GETARG_TSVECTOR(0);
	RankFnCache *c = rank_cache(fcinfo, PG_GETARG_TEXT_PP(1), index);
	GpxLexemes	lex;

	gpx_lexemes_of_tsvector(doc, &lex);
	return score_doc(c, &lex);
}

Datum
gpx_rank_distance(double score)
{
	return Float8GetDatum(score > 0.0 ? -score : 0.0);
}

GPUIDX_FUNCTION(gpuidx_bm25_text);
Datum
gpuidx_bm25_text(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(text_score(fcinfo, PG_NARGS() > 2 ? PG_GETARG_OID(2) : InvalidOid));
}

GPUIDX_FUNCTION(gpuidx_bm25_tsvector);
Datum
gpuidx_bm25_tsvector(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(tsvector_score(fcinfo, PG_NARGS() > 2 ? PG_GETARG_OID(2) : InvalidOid));
}

GPUIDX_FUNCTION(gpuidx_rank_distance_text);
Datum
gpuidx_rank_distance_text(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(gpx_rank_distance(text_score(fcinfo, InvalidOid)));
}

GPUIDX_FUNCTION(gpuidx_rank_distance_tsvector);
Datum
gpuidx_rank_distance_tsvector(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(gpx_rank_distance(tsvector_score(fcinfo, InvalidOid)));
}

/* ---------------------------------------------------------------------------
 * Planning: bind the query to the index of the ranked column
 */

/*
 * A gpuidx index on the relation whose key is doc (varno's), preferring the
 * current configuration, and its ORDER BY operator for doc (its operator
 * family's, InvalidOid if it has none).
 */
static Oid
index_for(Oid relid, Index varno, Node *doc, Oid *rank_op)
{
	Relation	heap = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(heap);
	Oid			found = InvalidOid;
	Oid			cfg = gpx_current_config();
	ListCell   *lc;

	*rank_op = InvalidOid;
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		bool		same = false;

		if (index->rd_indam->ambuild == gpx_build &&
			index->rd_index->indnatts == 1 && index->rd_index->indisvalid &&
			RelationGetIndexPredicate(index) == NIL)
		{
			if (index->rd_index->indkey.values[0] != 0)
				same = IsA(doc, Var) && ((Var *) doc)->varattno == index->rd_index->indkey.values[0];
			else
			{
				Node	   *expr = copyObject(linitial(RelationGetIndexExpressions(index)));

				ChangeVarNodes(expr, 1, varno, 0);
				same = equal(expr, doc);
			}
		}
		if (same && (!OidIsValid(found) || gpx_index_answers(index, cfg)))
		{
			found = RelationGetRelid(index);
			*rank_op = get_opfamily_member(index->rd_opfamily[0], index->rd_opcintype[0], TEXTOID,
										   GPX_STRATEGY_RANK);
		}
		index_close(index, AccessShareLock);
	}
	table_close(heap, AccessShareLock);
	return found;
}

/*
 * The OID of gpuidx_rank_query: the function of the extension that owns
 * the support function being called whose code is gpuidx_rank_query.
 * Found among the extension's members (pg_depend) by its C entry point,
 * never by name: any role can create a function of that name where a
 * lookup by name could find it.  Cached until pg_proc changes.
 */
static Oid	rank_query_support = InvalidOid;	/* the cache is for this support function */
static Oid	rank_query_oid = InvalidOid;

static void
forget_rank_query_oid(Datum arg, int cacheid, uint32 hashvalue)
{
	rank_query_support = InvalidOid;
	rank_query_oid = InvalidOid;
}

static bool
is_rank_query_function(Oid func)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(func));
	bool		is_c;
	FmgrInfo	flinfo;

	if (!HeapTupleIsValid(tup))
		return false;
	is_c = ((Form_pg_proc) GETSTRUCT(tup))->prolang == ClanguageId;
	ReleaseSysCache(tup);
	if (!is_c)
		return false;
	fmgr_info(func, &flinfo);
	return flinfo.fn_addr == gpuidx_rank_query;
}

static Oid
rank_query_function(Oid support)
{
	static bool registered = false;
	Oid			ext;
	Relation	depend;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			found = InvalidOid;

	if (support == rank_query_support)
		return rank_query_oid;
	if (!registered)
	{
		CacheRegisterSyscacheCallback(PROCOID, forget_rank_query_oid, (Datum) 0);
		registered = true;
	}
	ext = getExtensionOfObject(ProcedureRelationId, support);
	if (!OidIsValid(ext))
		return InvalidOid;
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, key);
	while (!OidIsValid(found) && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->classid == ProcedureRelationId && dep->deptype == DEPENDENCY_EXTENSION &&
			is_rank_query_function(dep->objid))
			found = dep->objid;
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	rank_query_support = support;
	rank_query_oid = found;
	return found;
}

/* the table column a subquery's output column is, through nested subqueries */
static Var *
base_column(Query *sub, AttrNumber attno, RangeTblEntry **rte)
{
	for (int depth = 0; depth < 16; depth++)
	{
		TargetEntry *tle = get_tle_by_resno(sub->targetList, attno);
		Var		   *v;

		if (tle == NULL || !IsA(tle->expr, Var))
			return NULL;
		v = (Var *) tle->expr;
		if (v->varlevelsup != 0 || v->varno < 1 || v->varno > list_length(sub->rtable))
			return NULL;
		*rte = rt_fetch(v->varno, sub->rtable);
		if ((*rte)->rtekind == RTE_RELATION)
			return v;
		if ((*rte)->rtekind != RTE_SUBQUERY)
			return NULL;
		sub = (*rte)->subquery;
		attno = v->varattno;
	}
	return NULL;
}

/*
 * The Vars of this query level in a document expression, into *vars: true
 * (give up) at anything else a Var can hide in, an outer level's Var, an
 * aggregate, a window function, a placeholder (pull_var_clause would raise
 * an internal error for them).
 */
static bool
local_vars_walker(Node *node, List **vars)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		if (((Var *) node)->varlevelsup != 0)
			return true;
		*vars = lappend(*vars, node);
		return false;
	}
	if (IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, GroupingFunc) ||
		IsA(node, PlaceHolderVar) || IsA(node, SubLink))
		return true;
	return expression_tree_walker(node, local_vars_walker, (void *) vars);
}

GPUIDX_FUNCTION(gpuidx_rank_support);
Datum
gpuidx_rank_support(PG_FUNCTION_ARGS)
{
	Node	   *req = (Node *) PG_GETARG_POINTER(0);
	SupportRequestSimplify *simp;
	FuncExpr   *fc;
	Node	   *doc;
	Node	   *query;
	List	   *vars;
	Var		   *var;
	RangeTblEntry *rte;
	Oid			index;
	Oid			bind;
	List	   *args;
	Oid			rank_op;

	if (!IsA(req, SupportRequestSimplify))
		PG_RETURN_POINTER(NULL);
	simp = (SupportRequestSimplify *) req;
	fc = simp->fcall;
	if (simp->root == NULL || list_length(fc->args) != 2)
		PG_RETURN_POINTER(NULL);
	doc = linitial(fc->args);
	query = lsecond(fc->args);
	bind = rank_query_function(fcinfo->flinfo->fn_oid);
	if (!OidIsValid(bind) || (IsA(query, FuncExpr) && ((FuncExpr *) query)->funcid == bind))
		PG_RETURN_POINTER(NULL);

	/* the document's table: one relation of this query level */
	vars = NIL;
	if (local_vars_walker(doc, &vars) || vars == NIL)
		PG_RETURN_POINTER(NULL);
	var = linitial(vars);
	if (var->varlevelsup != 0)
		PG_RETURN_POINTER(NULL);
	{
		ListCell   *lc;

		foreach(lc, vars)
			if (((Var *) lfirst(lc))->varno != var->varno || ((Var *) lfirst(lc))->varlevelsup != 0)
				PG_RETURN_POINTER(NULL);
	}
	if (var->varno < 1 || var->varno > list_length(simp->root->parse->rtable))
		PG_RETURN_POINTER(NULL);
	rte = rt_fetch(var->varno, simp->root->parse->rtable);
	if (rte->rtekind == RTE_SUBQUERY && IsA(doc, Var))
	{
		/* a column of a subquery (one with a LIMIT, say): its table's */
		Var		   *base = base_column(rte->subquery, var->varattno, &rte);

		if (base == NULL)
			PG_RETURN_POINTER(NULL);
		index = index_for(rte->relid, base->varno, (Node *) base, &rank_op);
	}
	else if (rte->rtekind == RTE_RELATION)
		index = index_for(rte->relid, var->varno, doc, &rank_op);
	else
		PG_RETURN_POINTER(NULL);
	if (!OidIsValid(index))
		PG_RETURN_POINTER(NULL);

	args = list_make2(doc, makeFuncExpr(bind, TEXTOID,
										list_make2(query, makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid),
																	ObjectIdGetDatum(index), false, true)),
										InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL));
	if (OidIsValid(rank_op) && get_opcode(rank_op) == fc->funcid)
	{
		/* the index's ORDER BY operator stays an operator: the index's ORDER BY matches it */
		OpExpr	   *op = (OpExpr *) make_opclause(rank_op, FLOAT8OID, false, (Expr *) doc,
												  (Expr *) lsecond(args), InvalidOid, fc->inputcollid);

		op->opfuncid = fc->funcid;
		op->location = fc->location;
		PG_RETURN_POINTER(op);
	}
	fc = (FuncExpr *) copyObject(fc);
	fc->args = args;
	PG_RETURN_POINTER(fc);
}
