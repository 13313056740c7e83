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

#endif							/* GPX_PLACEMENT_H */
