/*
 * rank.h
 *	  Ranked queries bound to the index whose statistics score them.
 */
#ifndef GPUIDX_AM_RANK_H
#define GPUIDX_AM_RANK_H

#include "postgres.h"

#include "utils/rel.h"

#include "rank/wand.h"
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

/*
 * ERROR unless the role may read what the index holds (the table, or each
 * column it indexes): its statistics tell which terms the documents have
 */
extern void gpx_check_index_read(Relation index);

/* <=>'s value for a score: best first when ascending (0, not -0, for no term) */
extern Datum gpx_rank_distance(double score);

/* a document's score for terms (sorted, distinct) whose idf q holds */
extern double gpx_score_lexemes(const gpx_rank_query *q, const GpxLexemes *terms, const GpxLexemes *doc);

/*
 * A bm25query (bm25query.c): a ranked query that carries the statistics
 * it is scored with, those of all the shards of a table
 */
typedef struct GpxBm25Query
{
	Oid			config;			/* of text documents (and of the query's words) */
	double		k1;
	double		b;
	uint64		ndocs;			/* N */
	uint64		length;			/* the sum of the documents' lengths */
	GpxLexemes	terms;			/* sorted, distinct */
	uint64	   *df;				/* [terms.n] */
} GpxBm25Query;

extern void gpx_bm25query_read(Datum value, GpxBm25Query *q);

#endif							/* GPUIDX_AM_RANK_H */
