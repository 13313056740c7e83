/*
 * test_placement.c
 *	  Round placement: which shortest lists go to the device, on hand-made
 *	  cases and against the rule written out plainly on random queries.
 */
#include "unit.h"
#include "sched/placement.h"

/* the rule, one round at a time: round i (i >= 1) is a device round if every
 * round before it is and |list i| < threshold * |list 0|; the device takes a
 * query only for two lists or more, and only if the shortest is long enough */
static int
reference_place(const uint32_t *lens, int n, const GpxPlacementConfig *cfg)
{
	int			k = 1;

	if (n < 2 || lens[0] == 0 || lens[0] < cfg->gpu_min_postings)
		return 0;
	for (int i = 1; i < n; i++)
	{
		double		ratio = (double) lens[i] / (double) lens[0];

		if (ratio >= (double) cfg->cpu_ratio_threshold)
			break;
		k = i + 1;
	}
	return k >= 2 ? k : 0;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return (x > y) - (x < y);
}

int
main(void)
{
	GpxPlacementConfig cfg = {128, 1000};

	{
		uint32_t	l[] = {5000, 6000, 7000};

		CHECK(gpx_place_rounds(l, 3, &cfg) == 3, "similar lengths: all on the device");
		CHECK(gpx_place_rounds(l, 1, &cfg) == 0, "one list: nothing to intersect");
	}
	{
		uint32_t	l[] = {999, 2000};

		CHECK(gpx_place_rounds(l, 2, &cfg) == 0, "a shortest list under gpu_min_postings: CPU");
	}
	{
		uint32_t	l[] = {1000, 127999, 128000, 200000};

		CHECK(gpx_place_rounds(l, 4, &cfg) == 2, "ratio 127.999 on the device, 128 on the CPU");
	}
	{
		uint32_t	l[] = {1000, 128000};

		CHECK(gpx_place_rounds(l, 2, &cfg) == 0, "a first round at the threshold: the whole query on the CPU");
	}
	{
		/* threshold times the shortest past 32 bits must not wrap */
		GpxPlacementConfig big = {1u << 30, 1};
		uint32_t	l[] = {8, 4000000000u};

		CHECK(gpx_place_rounds(l, 2, &big) == 2, "ratio test in 64 bits");
	}
	{
		GpxPlacementConfig never = {1, 1};
		uint32_t	l[] = {10, 10};

		CHECK(gpx_place_rounds(l, 2, &never) == 0, "threshold 1: every round on the CPU");
	}
	{
		uint32_t	l[] = {0, 0};
		GpxPlacementConfig any = {128, 0};

		CHECK(gpx_place_rounds(l, 2, &any) == 0, "empty lists stay on the CPU");
	}

	for (int t = 0; t < 200000; t++)
	{
		uint32_t	lens[8];
		int			n = 1 + (int) (unit_rand64() % 8);
		GpxPlacementConfig c;
		int			got;
		int			want;

		c.cpu_ratio_threshold = 1 + (uint32_t) (unit_rand64() % 512);
		c.gpu_min_postings = (uint32_t) (unit_rand64() % 5000);
		for (int i = 0; i < n; i++)
			lens[i] = (uint32_t) (unit_rand64() >> (40 + unit_rand64() % 24));
		qsort(lens, n, sizeof(uint32_t), cmp_u32);
		got = gpx_place_rounds(lens, n, &c);
		want = reference_place(lens, n, &c);
		CHECK(got == want, "random query %d: placed %d, the rule says %d", t, got, want);
	}

	/* rankings: any term by the postings together, every term as its rounds */
	{
		uint64_t	l[] = {600, 500};

		CHECK(gpx_place_ranking(l, 2, false, &cfg), "any term: 1,100 postings together reach 1,000");
		CHECK(!gpx_place_ranking(l, 2, true, &cfg), "every term: the shortest, 500, does not");
		CHECK(!gpx_place_ranking(l, 0, false, &cfg), "no list found: nothing to rank");
	}
	{
		uint64_t	l[] = {127999, 1000};
		uint64_t	far[] = {1000, 128000};

		CHECK(gpx_place_ranking(l, 2, true, &cfg), "every term, ratio 127.999: the device");
		CHECK(!gpx_place_ranking(far, 2, true, &cfg), "every term, ratio 128: WAND in the backend");
		CHECK(gpx_place_ranking(far, 2, false, &cfg), "any term, ratio 128: the device scores both");
	}
	for (int t = 0; t < 200000; t++)
	{
		uint64_t	dfs[8];
		uint32_t	sorted[8];
		int			n = 1 + (int) (unit_rand64() % 8);
		GpxPlacementConfig c;
		uint64_t	sum = 0;

		c.cpu_ratio_threshold = 1 + (uint32_t) (unit_rand64() % 512);
		c.gpu_min_postings = (uint32_t) (unit_rand64() % 5000);
		for (int i = 0; i < n; i++)
		{
			sorted[i] = (uint32_t) (unit_rand64() >> (40 + unit_rand64() % 24));
			dfs[i] = sorted[i];
			sum += dfs[i];
		}
		qsort(sorted, n, sizeof(uint32_t), cmp_u32);
		CHECK(gpx_place_ranking(dfs, n, false, &c) == (sum > 0 && sum >= c.gpu_min_postings),
			  "random any-term ranking %d", t);
		/* every term: whole on the device exactly when every round would be */
		CHECK(gpx_place_ranking(dfs, n, true, &c) ==
			  (n == 1 ? sorted[0] > 0 && sorted[0] >= c.gpu_min_postings : reference_place(sorted, n, &c) == n),
			  "random every-term ranking %d", t);
	}
	return unit_report("test_placement");
}
