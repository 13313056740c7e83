/*
 * rank.h
 *	  Ranked queries over a gpuidx index: the index-wide statistics BM25
 *	  needs (documents, their average length, each term's document
 *	  frequency), one document's score, and the top k documents by
 *	  block-max WAND (rank/wand.c) over every segment and the pending area.
 *
 * What counts: every document the index holds that VACUUM has not marked
 * dead, pending entries included.  A row deleted (or updated away) counts
 * until VACUUM removes it from the index, as it does for GIN's and
 * Lucene's statistics; see docs/RANKING.md.
 */
#ifndef GPUIDX_QUERY_RANK_H
#define GPUIDX_QUERY_RANK_H

#include "query/query.h"
#include "rank/wand.h"

typedef struct GqRank
{
	GqIndex    *gq;
	GpxLexemes	terms;			/* ranked terms: distinct, sorted */
	GpxLexemes	filter;			/* docs must have all of these (n 0: none) */
	bool		conjunctive;	/* filter == terms */
	/*
	 * Or docs must be candidates of this tree (NULL: none): its matches
	 * when tree_settled (the index's positions settle its phrases and
	 * weights), else its matches and those it leaves for the rows to decide
	 */
	const struct GqTree *tree;
	bool		tree_settled;
	double		k1;
	double		b;
	double		ndocs;			/* N */
	double		avgdl;
	uint64	   *df;				/* [terms.n] */
	double	   *idf;
	gpx_rank_query q;			/* the parts of it every segment shares */
	/* pending entries with a ranked term that pass the filter */
	int			npend;
	ItemPointerData *pend_tids;
	double	   *pend_scores;
	gpx_rank_stats stats;
	/* where the segments were ranked, over every top-k round (EXPLAIN ANALYZE) */
	uint32		rounds;			/* gq_rank_topk calls */
	uint64		cpu_segments;	/* segments ranked in this backend */
	uint64		worker_segments;	/* segments the GPU worker ranked */
	uint64		lists_cached;	/* lists ranked from the backend's copy (query/rankcache.c) */
} GqRank;

/*
 * Statistics given instead of the index's own: those of a collection the
 * index holds a part of (the sum over the shards of a table, see
 * docs/SCALING.md).  Integers, so that a sum over shards is exactly the
 * figure one index of all their documents has.
 */
typedef struct GqRankStats
{
	uint64		ndocs;			/* N */
	uint64		length;			/* the sum of the documents' lengths */
	const uint64 *df;			/* [terms->n] */
} GqRankStats;

/*
 * Statistics for ranking terms (and filtering by filter, NULL for none, or
 * by the candidates of a tree, NULL for none), the index's own or those
 * given.  ERROR if the index stores no frequencies.
 */
extern GqRank *gq_rank_begin(GqIndex *gq, const GpxLexemes *terms, const GpxLexemes *filter,
							 const struct GqTree *tree, double k1, double b, const GqRankStats *given);
/* does the index settle every candidate of tree (positions in every segment)? */
extern bool gq_rank_tree_settles(GqIndex *gq, const struct GqTree *tree);
/* a document's score from its lexemes (with tfs and length) */
extern double gq_rank_score(GqRank *r, const GpxLexemes *doc);
/*
 * The k best documents with a score above 0, best first, ties by TID:
 * returns how many (fewer than k: that is all of them).
 */
extern uint32 gq_rank_topk(GqRank *r, uint32 k, ItemPointerData *tids, double *scores);
extern void gq_rank_end(GqRank *r);

/* the TIDs of segment s's docs that are not dead, in doc id order; of the pending entries */
extern void gq_segment_tids(GqIndex *gq, int s, gq_tids_fn fn, void *arg);
extern void gq_pending_tids(GqIndex *gq, gq_tids_fn fn, void *arg);

/* the index's statistics alone (gpuidx_rank_stats) */
extern void gq_rank_totals(GqIndex *gq, double *ndocs, double *avgdl);
/* its documents and the sum of their lengths, as counted for N and avgdl */
extern void gq_rank_sums(GqIndex *gq, uint64 *ndocs, uint64 *length);
/* avgdl of ndocs documents whose lengths sum to length */
extern double gq_rank_avgdl(uint64 ndocs, uint64 length);

/*
 * Every term of the index with its document frequency (as ranking counts
 * it), bytewise in order, each once: fn(arg, term, len, df).
 */
typedef void (*gq_term_df_fn) (void *arg, const char *term, int len, uint64 df);
extern void gq_term_dfs(GqIndex *gq, gq_term_df_fn fn, void *arg);

/* ERROR unless the index stores frequencies */
extern void gq_rank_require(GqIndex *gq);

#endif							/* GPUIDX_QUERY_RANK_H */
