/*
 * clauses.h
 *	  Which clauses a gpuidx index answers (clauses.c).
 */
#ifndef GPX_CLAUSES_H
#define GPX_CLAUSES_H

#include "nodes/pathnodes.h"
#include "nodes/primnodes.h"

/* the indexed side of "doc op query", under any RelabelType */
extern Node *gpx_clause_doc(OpExpr *op);
/* the Var of "Var op query" (NULL when the document is not a column), and the query */
extern Var *gpx_clause_var(OpExpr *op, Node **query);

/*
 * Is the clause "doc @@& query", "doc @@ tsquery" or a commuted form that
 * the gpuidx index ix answers?  *query: its query; *tsquery: which kind;
 * *qual: the clause as the index takes it (the document on the left).
 */
extern bool gpx_match_clause(RestrictInfo *rinfo, Index relid, IndexOptInfo *ix, Node **query,
							 bool *tsquery, RestrictInfo **qual);

#endif							/* GPX_CLAUSES_H */
