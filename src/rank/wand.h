/*
 * wand.h
 *	  Top-k BM25 over one segment with block-max WAND: postings are decoded
 *	  only in blocks whose bounds can still beat the k-th best score, and
 *	  the result is exactly that of scoring every matching document.
 *
 * The caller runs gpx_rank_run once per segment with one gpx_topk for the
 * whole index, so later segments start from the threshold earlier ones
 * reached.  Scores are summed in the query's term order with bm25.h, the
 * same bits the row-by-row function and the GPU compute.  No PostgreSQL
 * header: unit tests and benchmarks include it too.
 */
#ifndef GPUIDX_RANK_WAND_H
#define GPUIDX_RANK_WAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bm25.h"

/*
 * One term's posting list in one segment.  Doc ids are the segment's local
 * ids, below UINT32_MAX.  The block metadata is read freely; postings only
 * through load, which is what pruning saves.  load may not return (an
 * error raised on damaged data): gpx_rank_run holds nothing that needs
 * releasing.
 */
typedef struct gpx_rank_list
{
	uint32_t	n;				/* postings */
	uint32_t	nblocks;		/* ceil(n / GPX_RANK_BLOCK) */
	const uint32_t *block_last; /* last doc id of each block (increasing) */
	const uint8_t *block_max_tf;	/* largest tf of each block */
	const uint8_t *block_min_dlcode;	/* gpx_dl_code of the shortest doc of
										 * each block */
	/* doc ids and tfs (1..GPX_MAX_TF) of block b, increasing; returns how many */
	uint32_t	(*load) (void *arg, uint32_t block, uint32_t *docs, uint8_t *tfs);
	void	   *arg;
} gpx_rank_list;

/*
 * A query against one segment.  idf belongs to the term across the whole
 * index (gpx_bm25_idf, computed once by the caller); lists to the segment.
 * The bounds hold for idf >= 0, k1 > 0 and 0 <= b <= 1: a term's score then
 * grows with tf and shrinks with dl.
 */
typedef struct gpx_rank_query
{
	int			nterms;			/* distinct terms, in bytewise order */
	const double *idf;			/* [nterms] */
	const gpx_rank_list *const *lists;	/* [nterms], NULL where the segment
										 * lacks the term */
	bool		conjunctive;	/* only docs that have every term */
	const uint32_t *filter;		/* if not NULL: only these docs (sorted,
								 * distinct) */
	uint32_t	nfilter;
	double		k1;
	double		b;
	double		avgdl;
	uint32_t	(*doclen) (void *arg, uint32_t doc);	/* dl of a doc */
	bool		(*is_live) (void *arg, uint32_t doc);	/* NULL: every doc is */
	uint64_t	(*key) (void *arg, uint32_t doc);	/* order among equal scores:
													 * smaller first */
	void	   *arg;
} gpx_rank_query;

/*
 * The k best (score, key) pairs offered so far, best = higher score, then
 * smaller key: a binary heap with the worst at the root, in arrays of k the
 * caller provides.
 */
typedef struct gpx_topk
{
	uint32_t	k;
	uint32_t	n;
	double	   *score;
	uint64_t   *key;
} gpx_topk;

extern void gpx_topk_init(gpx_topk *h, uint32_t k, double *score_space, uint64_t *key_space);
/* true if (score, key) entered, pushing out the worst when full */
extern bool gpx_topk_offer(gpx_topk *h, double score, uint64_t key);
extern bool gpx_topk_full(const gpx_topk *h);

/*
 * The score a doc needs to enter (on a tie with it, the key decides): the
 * worst held when full, -infinity before, +infinity when k is 0.
 */
extern double gpx_topk_threshold(const gpx_topk *h);

/* in place, best first; the heap is no longer usable afterwards */
extern void gpx_topk_sort(gpx_topk *h);

/* added to by gpx_rank_run (one set of counters may span segments) */
typedef struct gpx_rank_stats
{
	uint64_t	candidates;		/* docs that matched and reached the bounds */
	uint64_t	docs_scored;	/* of those, docs whose length was read */
	uint64_t	blocks_loaded;
	uint64_t	blocks_skipped; /* never loaded: loaded + skipped = all blocks */
	uint64_t	steps;			/* places the walk weighed (pivots, or leapfrog docs) */
} gpx_rank_stats;

/* scratch bytes (aligned as malloc's) gpx_rank_run needs for nterms terms */
extern size_t gpx_rank_scratch_size(int nterms);

/*
 * Offers h every doc of the segment that can enter it, with the same result
 * as scoring all matching live docs (score > 0; in the filter if any).
 * key() is called only for docs whose score reaches h's threshold, doclen()
 * only for docs scored, is_live() before doclen().  stats may be NULL.
 */
extern void gpx_rank_run(const gpx_rank_query *q, gpx_topk *h, void *scratch,
						 gpx_rank_stats *stats);

/*
 * One doc's score from its tfs (tf[i] = 0 where the doc lacks term i): the
 * one definition of the sum that everything else must match bit for bit.
 * Uses nterms, idf, k1, b and avgdl of q only.
 */
extern double gpx_rank_score(const gpx_rank_query *q, const uint32_t *tf, uint32_t dl);

#endif							/* GPUIDX_RANK_WAND_H */
