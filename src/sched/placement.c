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

int
gpx_rank_cost_bucket(uint64_t postings)
{
	int			b = 0;

	while (postings > 1 && b < GPX_RANK_COST_BUCKETS - 1)
	{
		postings >>= 1;
		b++;
	}
	return b;
}

bool
gpx_rank_prefers_worker(const GpxRankCosts *c, bool every_term, uint64_t postings, uint64_t backlog)
{
	int			b = gpx_rank_cost_bucket(postings);
	double		local = (double) c->local_ps[every_term ? 1 : 0][b];

	if (postings == 0 || local == 0)
		return false;
	if (c->worker_ps[b] == 0)
		return backlog == 0;
	/* in doubles: postings times picoseconds can pass 2^64 */
	return (double) postings * (double) c->worker_ps[b] + (double) backlog * (double) c->queue_ps <
		(double) postings * local;
}

/*
 * A running mean; a sample of 0 counts as 1, so that the estimate is
 * known.  It falls fast and rises slowly: a sample below the mean takes
 * half the gap, one above it 1/GPX_RANK_COST_WEIGHT of it, counted as at
 * most GPX_RANK_COST_CLIP times the mean.  A cold first sample (lists and
 * doc lengths uploaded to be cached, pages read) or one stall must not keep
 * a way off for the many samples a slow fall would take, when the other
 * way wins and samples come only from exploring (one a second).
 */
static uint64_t
cost_mean(uint64_t mean, uint64_t sample)
{
	sample = sample > 0 ? sample : 1;
	if (mean == 0)
		return sample;
	if (sample < mean)
		return mean - (mean - sample) / 2;
	if (sample / GPX_RANK_COST_CLIP > mean)
		sample = mean * GPX_RANK_COST_CLIP;
	return mean + (sample - mean) / GPX_RANK_COST_WEIGHT;
}

/* ns * 1000 / n, saturating: a posting's share of a time, in picoseconds */
static uint64_t
per_posting_ps(uint64_t ns, uint64_t n)
{
	if (n == 0)
		return 0;
	if (ns > UINT64_MAX / 1000)
		return UINT64_MAX / n;
	return ns * 1000 / n;
}

void
gpx_rank_note_local(GpxRankCosts *c, bool every_term, uint64_t postings, uint64_t ns)
{
	uint64_t   *rate = &c->local_ps[every_term ? 1 : 0][gpx_rank_cost_bucket(postings)];

	if (postings > 0)
		*rate = cost_mean(*rate, per_posting_ps(ns, postings));
}

void
gpx_rank_note_worker(GpxRankCosts *c, uint64_t postings, uint64_t backlog, uint64_t ns)
{
	uint64_t   *rate = &c->worker_ps[gpx_rank_cost_bucket(postings)];
	double		own;			/* ns */

	if (postings == 0)
		return;
	if (backlog == 0)
	{
		*rate = cost_mean(*rate, per_posting_ps(ns, postings));
		return;
	}
	if (*rate == 0)
		return;
	own = (double) postings * (double) *rate / 1000.0;
	c->queue_ps = cost_mean(c->queue_ps, per_posting_ps((double) ns > own ? ns - (uint64_t) own : 0, backlog));
}
