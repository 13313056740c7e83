/*
 * placement.c
 *	  Which rounds of a query go to the device: see placement.h.
 */
#include "sched/placement.h"

int
gpx_place_rounds(const uint32_t *lens, int n, const GpxPlacementConfig *cfg)
{
	int			k = 1;

	if (n < 2 || lens[0] == 0 || lens[0] < cfg->gpu_min_postings)
		return 0;
	/* the ratio test in 64 bits: lens[i] >= threshold * lens[0] */
	while (k < n && (uint64_t) lens[k] < (uint64_t) cfg->cpu_ratio_threshold * lens[0])
		k++;
	return k >= 2 ? k : 0;
}
