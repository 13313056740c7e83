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

struct GqTree;

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

/*
 * A found term's list as the worker takes it (worker/worker.h): by key when
 * the GPU cache holds it (only its header read), else its bytes (opened
 * into list, *opened set; an inline list raw-encoded into *raw, which the
 * caller frees).
 */
struct GpxWorkerList;
extern void gq_device_list(GqIndex *gq, GpxSegment *seg, GpxTermRef *ref, GpxList *list, bool *opened,
						   struct GpxWorkerList *l, void **raw);

/* the whole query: every segment, then the pending area */
extern void gq_execute(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg);

/*
 * The same answer in batches of TIDs (the custom scan): one segment's
 * matches held at a time, then the pending area's.  No TID comes twice.
 * limit: how many rows the query will likely take (0: unknown), so that the
 * worker sends back no more ids than that; more are fetched when needed.
 */
typedef struct GqCursor
{
	GqIndex    *gq;
	GpxLexemes	terms;
	const struct GqTree *tree;	/* or a query tree's candidates */
	bool		batch_recheck;	/* the batch returned needs the operator's check */
	uint32	   *unsure;			/* a tree: the segment's candidates to check, after docs */
	uint32		nunsure;
	bool		settle_later;	/* unsure are the positions' to settle, a part at a time */
	uint32		unsure_pos;		/* those settled so far */
	uint32		settle_part;	/* how many the next part settles */
	bool		docs_recheck;	/* docs are such candidates */
	ItemPointerData *pending_unsure;	/* and the pending area's */
	int			npending_unsure;
	int			pending_unsure_cap;
	uint32		limit;
	int			seg;			/* the next segment to query */
	uint32		win_hi;			/* a tree: the end of the window of the segment's docs read */
	uint32		win_size;
	bool		seg_more;		/* the segment has docs past the window */
	uint32		windows;		/* windows evaluated that were parts of a segment */
	uint32	   *docs;			/* the current segment's matches (or the first of them) */
	uint32		ndocs;
	uint32		seg_total;		/* how many the segment has */
	uint32		dpos;
	ItemPointerData *tids;		/* a batch of them mapped to TIDs */
	uint32		batch;			/* docs the next batch maps at most */
	bool		pending_read;
	ItemPointerData *pending;	/* the pending area's matches */
	int			npending;
	int			pending_cap;
	bool		done;
} GqCursor;

extern GqCursor *gq_cursor_begin(GqIndex *gq, const GpxLexemes *terms, uint32 limit);
extern GqCursor *gq_cursor_begin_tree(GqIndex *gq, const struct GqTree *tree, uint32 limit);

/* docs of a segment a tree's cursor with a limit reads first (gpuidx.tree_window; 0: whole segments) */
extern int	gq_tree_window;

/*
 * The largest pending area (kB) a backend indexes by term (pendindex.c);
 * a larger one is read entry by entry.  A developer's setting.
 */
extern int	gq_pending_index_max_kb;
extern bool gq_cursor_next_batch(GqCursor *c, ItemPointerData **tids, int *ntids);
/* on to the pending area (the segments were counted another way) */
extern void gq_cursor_skip_segments(GqCursor *c);
/*
 * After a batch that needs the check: the rest of the segment's docs to
 * check, mapped to TIDs into *tids (palloc'd, NULL when none), so that a
 * count checks them at once; returns how many.
 */
extern uint32 gq_cursor_take_unsure(GqCursor *c, ItemPointerData **tids);
extern void gq_cursor_end(GqCursor *c);

/*
 * count(*) of segment s without mapping a doc to its TID: the matches that
 * are not dead, for a heap whose pages are all all-visible.  Through the
 * worker it asks for the count alone when the segment has no dead doc.
 */
extern uint64 gq_segment_count(GqIndex *gq, int s, const GpxLexemes *terms);

/*
 * Every doc id of segment s matching every term (dead ones included), in
 * *docs (palloc'd, NULL when none): returns how many.
 */
extern uint32 gq_segment_docs(GqIndex *gq, int s, const GpxLexemes *terms, uint32 **docs);

/*
 * Where segment s's docs lie in the heap (docblocks.c): per chunk of its
 * doc map, the lowest and highest heap block of its docs in lo[c], hi[c];
 * then per group of GQ_CHUNK_GROUP chunks the same in lo[nchunks + g],
 * hi[nchunks + g].  Kept by the backend; never freed by the caller.
 */
#define GQ_CHUNK_GROUP 64

typedef struct GqSegBlocks
{
	uint32		nchunks;
	BlockNumber *lo;
	BlockNumber *hi;
} GqSegBlocks;

extern const GqSegBlocks *gq_segment_blocks(GqIndex *gq, int s);

/*
 * The chunks (ascending, into chunks[0..nchunks)) whose docs may lie on a
 * block of the set: bit b of words[b / 64] for the blocks below nblocks,
 * every block from nblocks on.  Returns how many.
 */
extern uint32 gq_dirty_chunks(const GqSegBlocks *sb, const uint64 *words, BlockNumber nblocks,
							  uint32 *chunks);

/*
 * Has VACUUM marked docs dead, or a merge replaced segments, since gq_open?
 * A scan that counts rows on all-visible pages without reading them checks
 * this after reading the visibility map: a row VACUUM removed in between
 * (and whose page it then marked all-visible) is dead in the index by then.
 */
extern bool gq_unchanged(GqIndex *gq);

/*
 * The pending area's entries matching every term, through this backend's
 * index of it (pendindex.c), extended first with the entries appended
 * since it last read it; false (nothing done) when the area is too large
 * to be indexed.
 */
extern bool gq_pending_lookup(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg);

/*
 * The pending area's entries and those matching every term, reading at
 * most max_pages of it (for estimates): the counts of what was read; all
 * of them when the backend's index of the pending area serves.
 */
extern void gq_pending_sample(GqIndex *gq, const GpxLexemes *terms, uint32 max_pages,
							  uint64 *entries, uint64 *matches);

/*
 * Query trees (tsq.h): the candidates of the tree over every segment, then
 * the pending area, each batch flagged when its rows need the operator's
 * check (a phrase or a weight the index cannot confirm); those of one
 * segment split so (dead docs included: palloc'd, NULL when none); of the
 * pending area through this backend's index of it (false: too large,
 * nothing done).
 */
typedef void (*gq_tree_tids_fn) (void *arg, ItemPointerData *tids, int n, bool recheck);

/* a gq_tree_tids_fn called as a gq_tids_fn (arg: the sink), one flag for every TID */
typedef struct GqFlaggedSink
{
	gq_tree_tids_fn fn;
	void	   *arg;
	bool		recheck;
} GqFlaggedSink;

extern void gq_flagged_tids(void *arg, ItemPointerData *tids, int n);

extern void gq_tree_execute(GqIndex *gq, const struct GqTree *tree, gq_tree_tids_fn fn, void *arg);
/*
 * segment s's candidates of the tree among its docs of [lo, hi): the sure
 * ones and those to check (dead docs included)
 */
extern void gq_segment_tree_window(GqIndex *gq, int s, const struct GqTree *tree, uint32 lo, uint32 hi,
								   uint32 **sure, uint32 *nsure, uint32 **unsure, uint32 *nunsure);

/*
 * The docs of segment s a tree is evaluated over at a time when all its
 * matches are wanted: the whole segment, unless the sets its evaluation
 * holds would outgrow work_mem, then windows within it.
 */
extern uint32 gq_tree_bounded_window(GqIndex *gq, int s, const struct GqTree *tree);
extern bool gq_pending_tree(GqIndex *gq, const struct GqTree *tree, gq_tree_tids_fn fn, void *arg);
/* as gq_pending_sample, for a tree */
extern void gq_pending_tree_sample(GqIndex *gq, const struct GqTree *tree, uint32 max_pages,
								   uint64 *entries, uint64 *matches);

/*
 * The heap block of the tree's k-th match in heap order (a phrase's or a
 * weight's unsure candidates counted as matches), if it lies at or before
 * max_block: from the first matches of each segment (windows of its docs,
 * the first of win docs) and the pending area's (doc ids follow the heap).
 * False when it lies past max_block or the tree has fewer matches.  What a
 * sequential scan reads before its k-th match, for the planner, which asks
 * only as far as it must know.
 */
extern bool gq_kth_match_block(GqIndex *gq, const struct GqTree *tree, uint32 k, BlockNumber max_block,
							   uint32 win, BlockNumber *block);

#endif							/* GPUIDX_QUERY_H */
