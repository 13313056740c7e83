/*
 * rank.h
 *	  Ranked queries bound to the index whose statistics score them.
 */
#ifndef GPUIDX_AM_RANK_H
#define GPUIDX_AM_RANK_H

#include "postgres.h"

#include "utils/rel.h"

#include "text/tokenize.h"

/* a query bound by gpuidx_rank_query: its index and its text; false if unbound */
extern bool gpx_rank_query_parse(text *bound, Oid *index, const char **query, int *len);
/* a ranked query's lexemes: under a text index's configuration, else the current one */
extern void gpx_rank_query_terms(Relation index, const char *query, int len, GpxLexemes *terms);

#endif							/* GPUIDX_AM_RANK_H */
