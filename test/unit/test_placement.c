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

	/* ranked segments by their measured costs */
	{
		GpxRankCosts c = {{0, 0}, 0, 0};

		CHECK(!gpx_rank_prefers_worker(&c, false, 200000, 0), "nothing measured: rank here, to learn its cost");
		gpx_rank_note_local(&c, false, 200000, 400000);
		CHECK(c.local_ps[0] == 2000 && c.local_ps[1] == 0, "400 us for 200,000 postings: 2,000 ps a posting, any term only");
		CHECK(!gpx_rank_prefers_worker(&c, true, 200000, 0), "every term still unmeasured: here");
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 5000000), "the worker unmeasured: it takes the request, however busy");

		/* a lone request: the round trip; one behind others: the rate of a queued posting */
		gpx_rank_note_worker(&c, 200000, 0, 200000);
		CHECK(c.worker_ns == 200000 && c.worker_ps == 0, "a lone 200 us request: the round trip, %llu ns",
			  (unsigned long long) c.worker_ns);
		gpx_rank_note_worker(&c, 200000, 800000, 400000);
		CHECK(c.worker_ps == 200, "400 us behind 800,000 postings: 200 ps a posting, got %llu",
			  (unsigned long long) c.worker_ps);
		gpx_rank_note_worker(&c, 200000, 0, 240000);
		CHECK(c.worker_ns == 200000, "a lone request of 240 us, 40 of them its postings': the round trip stays, %llu",
			  (unsigned long long) c.worker_ns);

		/* local 400 us; the worker 200 us and 200 ps a posting queued */
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 0), "idle worker: 240 us against 400");
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 700000), "700,000 queued: 380 us against 400");
		CHECK(!gpx_rank_prefers_worker(&c, false, 200000, 800000), "800,000 queued: 400 us is not sooner");
		CHECK(!gpx_rank_prefers_worker(&c, false, 200000, 1000000), "1,000,000 queued: 440 us against 400");

		/* every term, cheaper here: a lone request is slower through the worker */
		gpx_rank_note_local(&c, true, 200000, 130000);
		CHECK(!gpx_rank_prefers_worker(&c, true, 200000, 0), "every term: 130 us here against 240");
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 0), "any term unchanged by every term's samples");

		/* running means: an eighth of each sample */
		gpx_rank_note_local(&c, false, 200000, 1200000);
		CHECK(c.local_ps[0] == 2000 - 250 + 750, "local 2,000 then a sample of 6,000: %llu",
			  (unsigned long long) c.local_ps[0]);
		gpx_rank_note_local(&c, false, 0, 1000);
		CHECK(c.local_ps[0] == 2500, "no postings: no sample");
	}
	{
		GpxRankCosts c = {{0, 0}, 0, 0};

		/* a sample of 0 still counts as measured */
		gpx_rank_note_worker(&c, 1000, 0, 0);
		CHECK(c.worker_ns == 1, "an instant round trip is 1 ns, known");
		/* huge values neither overflow nor flip the answer */
		c.local_ps[0] = UINT64_MAX / 2;
		c.worker_ps = UINT64_MAX / 4;
		c.worker_ns = UINT64_MAX / 4;
		CHECK(gpx_rank_prefers_worker(&c, false, UINT64_MAX / 2, 0), "huge: worker 2^62 ns + 2^125 ps against 2^126");
		gpx_rank_note_local(&c, false, 1, UINT64_MAX);
		CHECK(c.local_ps[0] > UINT64_MAX / 2, "a saturated sample raises the mean");
	}
	for (int t = 0; t < 100000; t++)
	{
		GpxRankCosts c;
		uint64_t	postings = unit_rand64() >> (40 + unit_rand64() % 24);
		uint64_t	backlog = unit_rand64() % 3 == 0 ? 0 : unit_rand64() >> (36 + unit_rand64() % 28);
		bool		every = unit_rand64() & 1;
		double		worker,
					local;

		c.local_ps[0] = unit_rand64() >> (44 + unit_rand64() % 20);
		c.local_ps[1] = unit_rand64() >> (44 + unit_rand64() % 20);
		c.worker_ns = unit_rand64() >> (40 + unit_rand64() % 24);
		c.worker_ps = unit_rand64() >> (48 + unit_rand64() % 16);
		worker = (double) c.worker_ns * 1000.0 + ((double) backlog + (double) postings) * (double) c.worker_ps;
		local = (double) postings * (double) c.local_ps[every];
		CHECK(gpx_rank_prefers_worker(&c, every, postings, backlog) ==
			  (c.local_ps[every] != 0 && ((c.worker_ns == 0 && c.worker_ps == 0) || worker < local)),
			  "random ranking %d: the worker's estimate against the backend's", t);
	}
	return unit_report("test_placement");
}
