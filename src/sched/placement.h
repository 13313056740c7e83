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

#endif							/* GPX_PLACEMENT_H */
