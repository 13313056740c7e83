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
	CHECK(gpx_rank_cost_bucket(1) == 0 && gpx_rank_cost_bucket(2) == 1 && gpx_rank_cost_bucket(3) == 1 &&
		  gpx_rank_cost_bucket(200000) == 17 && gpx_rank_cost_bucket((uint64_t) 1 << 31) == 31 &&
		  gpx_rank_cost_bucket((uint64_t) 1 << 40) == 31 && gpx_rank_cost_bucket(UINT64_MAX) == 31,
		  "size buckets by the highest bit, the last taking the rest");
	{
		GpxRankCosts c;
		const int	b = 17;			/* 200,000 postings */

		memset(&c, 0, sizeof(c));
		CHECK(!gpx_rank_prefers_worker(&c, false, 200000, 0), "nothing measured: rank here, to learn its cost");
		gpx_rank_note_local(&c, false, 200000, 400000);
		CHECK(c.local_ps[0][b] == 2000 && c.local_ps[1][b] == 0, "400 us for 200,000 postings: 2,000 ps a posting, any term only");
		CHECK(!gpx_rank_prefers_worker(&c, true, 200000, 0), "every term still unmeasured: here");
		CHECK(!gpx_rank_prefers_worker(&c, false, 2000000, 0), "2,000,000 postings, another size, unmeasured: here");
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 0), "the worker unmeasured at this size: an idle one takes the request");
		CHECK(!gpx_rank_prefers_worker(&c, false, 200000, 1), "but not a busy one");

		/* behind others before any lone request of the size: nothing to learn the queue from */
		gpx_rank_note_worker(&c, 200000, 800000, 400000);
		CHECK(c.worker_ps[b] == 0 && c.queue_ps == 0, "a queued request of an unmeasured size teaches nothing");
		/* a lone request: its size's rate; one behind others: the rate of a queued posting */
		gpx_rank_note_worker(&c, 200000, 0, 240000);
		CHECK(c.worker_ps[b] == 1200, "a lone 240 us request of 200,000 postings: 1,200 ps a posting, got %llu",
			  (unsigned long long) c.worker_ps[b]);
		gpx_rank_note_worker(&c, 200000, 800000, 400000);
		CHECK(c.queue_ps == 200, "400 us behind 800,000 postings, 240 of them its own: 200 ps a queued posting, got %llu",
			  (unsigned long long) c.queue_ps);
		gpx_rank_note_worker(&c, 200000, 800000, 100000);
		CHECK(c.queue_ps == 200 - 199 / 2, "sooner than alone: a queued posting's sample is 1 ps, half the gap taken: %llu",
			  (unsigned long long) c.queue_ps);
		c.queue_ps = 200;

		/* local 400 us; the worker 240 us alone and 200 ps a posting queued */
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 0), "idle worker: 240 us against 400");
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 700000), "700,000 queued: 380 us against 400");
		CHECK(!gpx_rank_prefers_worker(&c, false, 200000, 800000), "800,000 queued: 400 us is not sooner");
		CHECK(!gpx_rank_prefers_worker(&c, false, 200000, 1000000), "1,000,000 queued: 440 us against 400");

		/* every term, cheaper here: a lone request is slower through the worker */
		gpx_rank_note_local(&c, true, 200000, 130000);
		CHECK(!gpx_rank_prefers_worker(&c, true, 200000, 0), "every term: 130 us here against 240");
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 0), "any term unchanged by every term's samples");

		/* running means: a rise takes an eighth of the gap, a fall half */
		gpx_rank_note_local(&c, false, 200000, 1200000);
		CHECK(c.local_ps[0][b] == 2000 - 250 + 750, "local 2,000 then a sample of 6,000: %llu",
			  (unsigned long long) c.local_ps[0][b]);
		gpx_rank_note_local(&c, false, 0, 1000);
		CHECK(c.local_ps[0][b] == 2500, "no postings: no sample");
		gpx_rank_note_local(&c, false, 200000, 200000000);
		CHECK(c.local_ps[0][b] == 2500 + (10000 - 2500) / 8,
			  "a stall of 1,000,000 ps a posting counts as 4 times the mean: %llu", (unsigned long long) c.local_ps[0][b]);
		gpx_rank_note_local(&c, false, 200000, 100000);
		CHECK(c.local_ps[0][b] == 3437 - (3437 - 500) / 2, "a sample of 500 takes half the gap: %llu",
			  (unsigned long long) c.local_ps[0][b]);
		c.local_ps[0][b] = 2500;

		/* WAND skips more of longer lists: a larger ranking's rates are its own */
		gpx_rank_note_local(&c, false, 2000000, 400000);
		gpx_rank_note_worker(&c, 2000000, 0, 600000);
		CHECK(c.local_ps[0][20] == 200 && c.local_ps[0][b] == 2500 && c.worker_ps[20] == 300 && c.worker_ps[b] == 1200,
			  "2,000,000 postings: 400 us here, 600 us alone through the worker, in their bucket; 200,000's unchanged");
		CHECK(gpx_rank_prefers_worker(&c, false, 200000, 0), "200,000 postings: the worker's 240 us against 500");
		CHECK(!gpx_rank_prefers_worker(&c, false, 2000000, 0), "2,000,000: the worker's 600 us against 400");
	}
	{
		GpxRankCosts c;

		memset(&c, 0, sizeof(c));
		/* a sample of 0 still counts as measured */
		gpx_rank_note_worker(&c, 1000, 0, 0);
		CHECK(c.worker_ps[9] == 1, "an instant round trip is 1 ps a posting, known");
		/* huge values neither overflow nor flip the answer */
		c.local_ps[0][31] = UINT64_MAX / 2;
		c.worker_ps[31] = UINT64_MAX / 4;
		c.queue_ps = UINT64_MAX / 4;
		CHECK(gpx_rank_prefers_worker(&c, false, UINT64_MAX / 2, UINT64_MAX / 4), "huge: 2^125 + 2^124 ps against 2^126");
		CHECK(!gpx_rank_prefers_worker(&c, false, UINT64_MAX / 2, UINT64_MAX), "huge: 2^125 + 2^126 ps against 2^126");
		gpx_rank_note_local(&c, false, 1, UINT64_MAX);
		CHECK(c.local_ps[0][0] == UINT64_MAX, "a saturated sample of one posting: the largest rate");
	}
	for (int t = 0; t < 100000; t++)
	{
		GpxRankCosts c;
		uint64_t	postings = unit_rand64() >> (40 + unit_rand64() % 24);
		uint64_t	backlog = unit_rand64() % 3 == 0 ? 0 : unit_rand64() >> (36 + unit_rand64() % 28);
		bool		every = unit_rand64() & 1;
		int			b = gpx_rank_cost_bucket(postings);
		double		worker,
					local;

		memset(&c, 0, sizeof(c));
		c.local_ps[0][b] = unit_rand64() >> (44 + unit_rand64() % 20);
		c.local_ps[1][b] = unit_rand64() >> (44 + unit_rand64() % 20);
		c.worker_ps[b] = unit_rand64() >> (44 + unit_rand64() % 20);
		c.queue_ps = unit_rand64() >> (48 + unit_rand64() % 16);
		worker = (double) postings * (double) c.worker_ps[b] + (double) backlog * (double) c.queue_ps;
		local = (double) postings * (double) c.local_ps[every][b];
		CHECK(gpx_rank_prefers_worker(&c, every, postings, backlog) ==
			  (postings > 0 && local != 0 && (c.worker_ps[b] == 0 ? backlog == 0 : worker < local)),
			  "random ranking %d: the worker's estimate against the backend's", t);
	}
	return unit_report("test_placement");
}
