/*
 * placement.h
 *	  Where each round of a query's intersection runs: on the device (through
 *	  the GPU worker) or on the CPU in the backend.  Pure logic, no PostgreSQL
 *	  header, so the unit tests run it as the server does.
 *
 * A query intersects its lists shortest first (SvS).  Round i intersects the
 * current result (at most as long as the shortest list) with list i.  After
 * Griffin (Ao et al.'s hand-off): a round whose length ratio
 * |list i| / |current| reaches the threshold is a few searches into a long
 * list, which the CPU does in the backend faster than a round trip; so are
 * rounds over lists too short to repay a launch.  The rounds before the
 * first such round go to the device together (one request); the rest run on
 * the CPU from the device's intermediate result.
 */
#ifndef GPX_PLACEMENT_H
#define GPX_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct GpxPlacementConfig
{
	uint32_t	cpu_ratio_threshold;	/* a round at this length ratio or more: CPU */
	uint32_t	gpu_min_postings;	/* a shortest list below this: the whole query on the CPU */
} GpxPlacementConfig;

/*
 * lens: the query's list lengths, sorted ascending, n of them.  Returns how
 * many of the shortest lists the device intersects (a prefix, at least 2),
 * or 0 when the whole query stays on the CPU.  The current result of a round
 * is bounded by lens[0], so the ratio is taken against lens[0]: the real
 * ratio can only be larger, never pulling a CPU round onto the device.
 */
extern int	gpx_place_rounds(const uint32_t *lens, int n, const GpxPlacementConfig *cfg);

/*
 * Does a segment's ranking go to the device?  dfs: the found terms' list
 * lengths in the segment, n of them, in any order.  The device scores every
 * posting of every list, so a ranking of any term goes once its postings
 * together reach gpu_min_postings.  A ranking of every term costs the
 * backend's WAND about its shortest list (the others are searched, block by
 * block), so it goes only as an intersection would go whole: the shortest
 * list at least gpu_min_postings and every list under cpu_ratio_threshold
 * times it.  A ranking of one term is both.
 */
extern bool gpx_place_ranking(const uint64_t *dfs, int n, bool every_term, const GpxPlacementConfig *cfg);

/*
 * Where an eligible ranked segment runs, by what each way has cost lately
 * (gpuidx.gpu_rank_backlog = -1).  Rates are per posting of the ranking
 * (its terms' postings in the segment), kept for each size (a bucket by the
 * postings' highest bit): the device scores every posting, but a request's
 * round trip weighs more on a small one, and the backend's WAND skips more
 * of longer lists, so one rate for all sizes would make large rankings
 * look dear in the backend and send exactly them to the device.  Through
 * the worker a request costs what one of its size cost alone, plus the
 * ranked postings queued before it at the rate a queued posting delays it:
 *		worker = postings * worker_ps[bucket] + backlog * queue_ps
 * in the backend, what rankings of its shape and size cost there:
 *		local = postings * local_ps[shape][bucket]
 * and it goes where the estimate is shorter.  All are wall times as the
 * backends see them: under load the cores' contention is in local_ps.
 * Each estimate is a running mean that falls fast and rises slowly
 * (placement.c, cost_mean); 0: none yet.
 */
#define GPX_RANK_COST_WEIGHT 8		/* a rise: this share of the gap */
#define GPX_RANK_COST_CLIP 4		/* a sample counts as at most this many times the mean */
#define GPX_RANK_COST_BUCKETS 32	/* by the postings' highest bit; the last takes the rest */

typedef struct GpxRankCosts
{
	/* picoseconds a posting, ranked in a backend: [any term, every term][bucket] */
	uint64_t	local_ps[2][GPX_RANK_COST_BUCKETS];
	/* ... through the worker with nothing queued before it, by bucket */
	uint64_t	worker_ps[GPX_RANK_COST_BUCKETS];
	/* the delay of a ranked posting queued before a request */
	uint64_t	queue_ps;
} GpxRankCosts;

/* the bucket of a ranking of 'postings' (> 0) */
extern int	gpx_rank_cost_bucket(uint64_t postings);

/*
 * Does the worker answer sooner?  Until a backend has ranked this shape
 * and size it ranks it, and until the worker has answered one of this size
 * alone an idle worker takes it (each to learn what it costs; a busy
 * worker's answer would not say).  every_term: the ranking's shape;
 * postings: its terms' postings in the segment (> 0); backlog: the ranked
 * postings the worker holds now.
 */
extern bool gpx_rank_prefers_worker(const GpxRankCosts *c, bool every_term, uint64_t postings,
									uint64_t backlog);

/* the estimates after a ranking of 'postings' in a backend took ns */
extern void gpx_rank_note_local(GpxRankCosts *c, bool every_term, uint64_t postings, uint64_t ns);

/*
 * ... after one through the worker took ns, with backlog postings queued
 * before it: a request with none ahead updates its size's rate, one behind
 * others (its size's rate known) the rate of a queued posting
 */
extern void gpx_rank_note_worker(GpxRankCosts *c, uint64_t postings, uint64_t backlog, uint64_t ns);

#endif							/* GPX_PLACEMENT_H */
