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

bool
gpx_place_ranking(const uint64_t *dfs, int n, bool every_term, const GpxPlacementConfig *cfg)
{
	uint64_t	sum = 0,
				shortest = UINT64_MAX,
				longest = 0;

	for (int i = 0; i < n; i++)
	{
		sum += dfs[i];
		shortest = dfs[i] < shortest ? dfs[i] : shortest;
		longest = dfs[i] > longest ? dfs[i] : longest;
	}
	if (n == 0 || sum == 0)
		return false;
	if (!every_term || n == 1)
		return sum >= cfg->gpu_min_postings;
	/* as gpx_place_rounds(sorted dfs) == n; the product fits: dfs are doc counts */
	return shortest >= cfg->gpu_min_postings &&
		longest < (uint64_t) cfg->cpu_ratio_threshold * shortest;
}
