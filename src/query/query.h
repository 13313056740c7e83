/*
 * query.h
 *	  The query executor of gpuidx, shared by the index scan and the custom
 *	  scan: per segment, look the query's terms up in the dictionary,
 *	  plan shortest-first (SvS) rounds by their document frequencies, open
 *	  each list only when its round comes (reading only the blocks a skewed
 *	  round can reach), stop at the first empty round, map doc ids to TIDs
 *	  skipping dead docs; then scan the pending area.
 *
 * The rounds the placement gives the GPU go to the worker (worker/worker.h)
 * as the lists' encoded bytes; the others run on the CPU (src/cpu) here.
 */
#ifndef GPUIDX_QUERY_H
#define GPUIDX_QUERY_H

#include "cpu/cpu.h"
#include "store/segment.h"
#include "text/tokenize.h"

typedef struct GqIndex
{
	Relation	index;
	GpxMetaPageData meta;		/* the metapage as the query found it */
	GpxSegment **segs;			/* opened on first use */
} GqIndex;

typedef void (*gq_tids_fn) (void *arg, ItemPointerData *tids, int n);

extern GqIndex *gq_open(Relation index);
extern void gq_close(GqIndex *gq);
extern GpxSegment *gq_segment(GqIndex *gq, int seg);

/* the whole query: every segment, then the pending area */
extern void gq_execute(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg);

/*
 * The same answer one TID at a time (the custom scan): one segment's matches
 * held at a time, then the pending area's.  No TID comes twice.
 */
typedef struct GqCursor
{
	GqIndex    *gq;
	GpxLexemes	terms;
	int			seg;			/* the next segment to query */
	uint32	   *docs;			/* the current segment's matches */
	uint32		ndocs;
	uint32		dpos;
	ItemPointerData *tids;		/* a batch of them mapped to TIDs */
	int			ntids;
	int			tpos;
	bool		pending_read;
	ItemPointerData *pending;	/* the pending area's matches */
	int			npending;
	int			pending_cap;
	int			ppos;
	bool		done;
} GqCursor;

extern GqCursor *gq_cursor_begin(GqIndex *gq, const GpxLexemes *terms);
extern bool gq_cursor_next(GqCursor *c, ItemPointer tid);
extern void gq_cursor_end(GqCursor *c);

/*
 * The pending area's entries and those matching every term, reading at
 * most max_pages of it (for estimates): the counts of what was read.
 */
extern void gq_pending_sample(GqIndex *gq, const GpxLexemes *terms, uint32 max_pages,
							  uint64 *entries, uint64 *matches);

#endif							/* GPUIDX_QUERY_H */
