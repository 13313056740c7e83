/*
 * rankcache.h
 *	  A backend's copies of long lists' ranking data: the list, its
 *	  frequency record and its blocks' bounds, read and checked once and
 *	  ranked from again by later queries (rankcache.c says why it is safe).
 */
#ifndef GPUIDX_QUERY_RANKCACHE_H
#define GPUIDX_QUERY_RANKCACHE_H

#include "store/segment.h"
#include "utils/palloc.h"

/* what block-max WAND reads of one term's list in one segment */
typedef struct GqTermData
{
	GpxList		list;
	GpxFreqs	freqs;
	uint32	   *block_last;		/* [nblocks] */
	uint8	   *block_max_tf;
	uint8	   *block_min_dlcode;
	MemoryContext cxt;			/* not kept: the context holding it, for the
								 * caller to delete (NULL: free the parts) */
} GqTermData;

/* fills d from the segment, in CurrentMemoryContext */
typedef void (*gq_term_reader) (GpxSegment *seg, GpxTermRef *ref, GqTermData *d);

/*
 * A new ranking of one segment starts: what the previous one used may be
 * evicted again.  Call before gq_rank_cache_get.
 */
extern void gq_rank_cache_begin(void);

/* where a term's data came from */
typedef enum GqTermSource
{
	GQ_TERM_READ,				/* read for this ranking alone: the caller frees it */
	GQ_TERM_KEPT,				/* read, and now the backend's copy */
	GQ_TERM_CACHED				/* the backend's copy, read by an earlier query */
} GqTermSource;

/*
 * The term's data into d: the backend's copy when it holds one (or now
 * takes one: an external list of at least GQ_RANK_CACHE_MIN_BYTES, while
 * gpuidx.rank_cache_size has room), else read by read.  A copy stays valid
 * until the next gq_rank_cache_begin; GQ_TERM_READ data is the caller's to
 * free (d->cxt, or its parts).
 */
extern GqTermSource gq_rank_cache_get(GpxSegment *seg, GpxTermRef *ref, gq_term_reader read,
									  GqTermData *d);

/* drops every copy (an index built by this backend may reuse a relfilenode) */
extern void gq_rank_cache_forget(void);

extern void gq_rank_cache_define_settings(void);

/* lists shorter than this (list and frequency record) are read each time */
#define GQ_RANK_CACHE_MIN_BYTES (16 * 1024)

#endif							/* GPUIDX_QUERY_RANKCACHE_H */
