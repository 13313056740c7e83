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
/*
 * A tsquery as a ranked query (gpuidx_rank_text): this tag, then the
 * tsquery's text; it ranks by the tsquery's positive lexemes, as they are
 */
#define GPX_TSQUERY_TAG "[tsquery] "

/*
 * A ranked query's lexemes: under a text index's configuration, else the
 * current one; a tagged tsquery's as they are
 */
extern void gpx_rank_query_terms(Relation index, const char *query, int len, GpxLexemes *terms);

#endif							/* GPUIDX_AM_RANK_H */
