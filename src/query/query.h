/*
 * query.h
 *	  The query executor of gpuidx, shared by the index scan and (later) the
 *	  custom scan: open the index, look up the query's terms, get each term's
 *	  compressed list per segment with its length, plan shortest-first (SvS)
 *	  rounds, run the rounds, map doc ids to TIDs skipping dead docs, and
 *	  scan the pending area.
 *
 * Rounds run on the CPU (src/cpu) here; a GPU path replaces gq_run_cpu
 * for the rounds its scheduler places on the GPU, with the same inputs
 * (pl_view lists) and output (sorted doc ids).
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

/* one round: intersect the running result with lists[list] */
typedef struct GqRound
{
	int			list;
	double		ratio;			/* |lists[list]| / |running result bound| */
} GqRound;

typedef struct GqPlan
{
	int			first;			/* the shortest list starts */
	int			nrounds;
	GqRound		rounds[FLEXIBLE_ARRAY_MEMBER];
} GqPlan;

typedef struct GqStats
{
	uint32		segments;		/* segments searched */
	uint32		segments_skipped;	/* a term absent: nothing to intersect */
	uint64		postings;		/* postings of the lists involved */
	uint64		results;		/* doc ids matched, dead ones included */
	uint64		pending_entries;	/* entries of the pending area read */
	cpu_stats	cpu;
} GqStats;

typedef void (*gq_tids_fn) (void *arg, ItemPointerData *tids, int n);

extern GqIndex *gq_open(Relation index);
extern void gq_close(GqIndex *gq);
extern GpxSegment *gq_segment(GqIndex *gq, int seg);

/* each term's list in one segment; false (nothing kept) if a term is absent */
extern bool gq_lookup(GqIndex *gq, int seg, const GpxLexemes *terms, GpxList *lists);
extern void gq_free_lists(GpxList *lists, int n);

/* shortest first: palloc'd plan over n lists */
extern GqPlan *gq_plan(const GpxList *lists, int n);

/* the rounds on the CPU; out has room for the shortest list; returns the count */
extern uint32 gq_run_cpu(const GqPlan *plan, const GpxList *lists, uint32 *out, cpu_stats *stats);

/* every match of the pending area */
extern void gq_pending(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg,
					   GqStats *stats);

/* the whole query: every segment, then the pending area */
extern void gq_execute(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg,
					   GqStats *stats);

#endif							/* GPUIDX_QUERY_H */
