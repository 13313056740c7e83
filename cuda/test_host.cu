/*
 * test_host.cu
 *	  The GPU kernels' list logic, run on the host: no GPU needed, so CI runs
 *	  it.  Every block of lists of every shape and codec is decoded the way a
 *	  warp does it (32 lanes simulated in turn), searched the way a search
 *	  thread does, and merged the way a warp's lanes walk the merge path, and
 *	  each is compared with the CPU codecs (src/codec); the warp's 32-way
 *	  lower bound is compared with a plain binary search.
 */
extern "C"
{
#include "codec/codec.h"
}
#include "block_ops.cuh"
#include "host_team.h"
#include "../test/unit/unit.h"

/* a list's device descriptor, pointing into host memory */
/* membership by the C codec (false also when it reports damage: these lists are sound) */
static bool
list_has(const pl_view *view, uint32_t x)
{
	bool		found = false;

	return pl_contains(view, x, &found) == PL_OK && found;
}

static list_desc
host_desc(const pl_view *v, const uint8_t *bytes)
{
	return absolute_desc(relative_desc(v, bytes), bytes);
}

static void
check_list(const uint32_t *v, uint32_t n, const char *shape)
{
	for (int codec = 0; codec < GPUIDX_NUM_CODECS; codec++)
	{
		size_t		len = pl_encoded_size(codec, v, n);
		uint8_t    *bytes = (uint8_t *) unit_alloc(len);
		pl_view		view;
		list_desc	d;
		uint32_t	got[GPUIDX_LRC_SEGMENT];
		uint32_t	want[GPUIDX_LRC_SEGMENT];
		uint32_t	a[4 * GPUIDX_LRC_SEGMENT];

		pl_encode(codec, v, n, bytes);
		CHECK(pl_open(&view, bytes, len, PL_OPEN_VERIFY_CHECKSUM) == PL_OK, "%s: open", shape);
		d = host_desc(&view, bytes);
		for (uint32_t b = 0; b < view.nblocks; b++)
		{
			int			nb = pl_decode_block(&view, b, want);
			uint64_t	end = dev_block_end(d, b);
			uint32_t	first = dev_block_first(d, b);
			uint32_t	m = 0;

			CHECK(host_warp_decode_block(d, b, got), "%s/%d block %u: warp decode refused", shape, codec, b);
			CHECK(memcmp(got, want, (size_t) nb * sizeof(uint32_t)) == 0,
				  "%s/%d block %u: warp decode differs", shape, codec, b);

			/* the merge step's test: ids inside the block's range, half of them in it */
			for (int i = 0; i < nb && m < 4 * GPUIDX_LRC_SEGMENT - 2; i++)
			{
				if (unit_rand_below(2))
					a[m++] = want[i];
				if (unit_rand_below(3) == 0)
					a[m++] = first + (uint32_t) (unit_rand64() % (end - first));
			}
			for (uint32_t i = 0; i < m; i++)
			{
				bool		in = bsearch(&a[i], want, nb, sizeof(uint32_t), unit_cmp_u32) != NULL;

				CHECK(dev_sorted_has(got, (uint32_t) nb, a[i]) == in, "%s/%d block %u: merge test of %u",
					  shape, codec, b, a[i]);
			}
		}
		/*
		 * the search step's test, given the blocks that may hold x as the
		 * intersect kernel finds them for a stretch [lo, hi] around x
		 */
		for (int r = 0; r < 2000 && n > 0; r++)
		{
			uint32_t	x = r % 2 ? v[unit_rand_below(n)] + unit_rand_below(3) : (uint32_t) unit_rand64();
			uint32_t	lo = x - std::min<uint32_t>(x, unit_rand_below(1u << unit_rand_below(24)));
			uint32_t	hi = x + std::min<uint32_t>(UINT32_MAX - x, unit_rand_below(1u << unit_rand_below(24)));
			uint32_t	bs = (uint32_t) (dev_find_block_in(d, lo, 0, d.nblocks) + 1);
			uint32_t	be = (uint32_t) (dev_find_block_in(d, hi, 0, d.nblocks) + 1);

			bs = bs > 0 ? bs - 1 : 0;
			CHECK(dev_search_in(d, x, bs, be) == list_has(&view, x), "%s/%d: search %u in blocks [%u, %u)",
				  shape, codec, x, bs, be);
		}
		/* search: every posting, its neighbours, and random ids (list_has: the codec's answer) */
		for (uint32_t i = 0; i < n; i++)
		{
			CHECK(dev_search_in(d, v[i], 0, d.nblocks), "%s/%d: search misses %u", shape, codec, v[i]);
			if (v[i] < UINT32_MAX)
				CHECK(dev_search_in(d, v[i] + 1, 0, d.nblocks) == list_has(&view, v[i] + 1),
					  "%s/%d: search %u", shape, codec, v[i] + 1);
		}
		for (int r = 0; r < 2000; r++)
		{
			uint32_t	x = n > 0 && r % 2 ? v[unit_rand_below(n)] - unit_rand_below(5) : (uint32_t) unit_rand64();

			CHECK(dev_search_in(d, x, 0, d.nblocks) == list_has(&view, x), "%s/%d: search %u", shape, codec, x);
		}
		free(bytes);
	}
}

/* the plain reference: first index in a[lo, hi) with a[i] >= x (x may be 2^32) */
static uint32_t
lower_bound64(const uint32_t *a, uint32_t lo, uint32_t hi, uint64_t x)
{
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if ((uint64_t) a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* the warp's 32-way lower bound against the plain one, x in and around a */
static void
check_warp_bounds(const uint32_t *a, uint32_t n)
{
	for (int r = 0; r < 200; r++)
	{
		uint32_t	lo = n > 0 ? unit_rand_below(n + 1) : 0;
		uint32_t	hi = lo + (n > lo ? unit_rand_below(n - lo + 1) : 0);
		uint64_t	x;

		switch (r % 4)
		{
			case 0:
				x = n > 0 ? a[unit_rand_below(n)] : 0;
				break;
			case 1:
				x = n > 0 ? (uint64_t) a[unit_rand_below(n)] + 1 : 1;
				break;
			case 2:
				x = r % 8 == 2 ? 0 : UINT64_C(1) << 32;
				break;
			default:
				x = unit_rand_below(UINT32_MAX);
				break;
		}
		CHECK(host_warp_lower_bound(a, lo, hi, x) == lower_bound64(a, lo, hi, x),
			  "warp lower bound of %llu in [%u, %u) of %u", (unsigned long long) x, lo, hi, n);
	}
}

/* the engine's host team: every part of every run done exactly once */
static void
check_host_team(void)
{
	static const uint32_t sizes[] = {1, 2, 4, 9};

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
	{
		host_team	team(sizes[si]);
		std::vector<std::atomic<int>> hits(100);

		for (int r = 0; r < 2000; r++)
		{
			uint32_t	n = unit_rand_below(100);

			for (uint32_t i = 0; i < n; i++)
				hits[i].store(0);
			team.run(n, [&](uint32_t part) { hits[part].fetch_add(1); });
			for (uint32_t i = 0; i < n; i++)
				CHECK(hits[i].load() == 1, "team of %u, run %d: part %u done %d times", sizes[si], r, i,
					  hits[i].load());
		}
	}
}

int
main(void)
{
	static const uint32_t lengths[] = {0, 1, 2, 5, 127, 128, 129, 255, 256, 257, 1000, 3000, 20000};
	uint32_t   *v = (uint32_t *) unit_alloc(200000 * sizeof(uint32_t));

	for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++)
	{
		uint32_t	len = lengths[li];
		uint32_t	n;

		n = unit_gen_gaps(v, len, unit_rand_below(1000), 1);
		check_list(v, n, "run");
		n = unit_gen_gaps(v, len, 0, 3);
		check_list(v, n, "dense");
		n = unit_gen_gaps(v, len, unit_rand_below(100000), 100);
		check_list(v, n, "gaps-100");
		n = unit_gen_gaps(v, len, 0, 1u << 20);
		check_list(v, n, "gaps-1M");
		n = unit_gen_uniform(v, len, UINT64_C(1) << 32);
		if (n >= 2)
		{
			v[0] = 0;
			v[n - 1] = UINT32_MAX;
		}
		check_list(v, n, "uniform-0-max");
		n = unit_gen_gaps(v, len, UINT32_MAX - len + 1, 1);
		check_list(v, n, "run-to-max");
	}
	for (int r = 0; r < 150; r++)
	{
		uint32_t	n = unit_gen_gaps(v, unit_rand_below(5000), unit_rand_below(1u << 31),
									  1 + unit_rand_below(1u << unit_rand_below(28)));

		check_list(v, n, "random");
	}
	for (int r = 0; r < 300; r++)
	{
		uint32_t	len = r < 100 ? (uint32_t) r : unit_rand_below(r < 290 ? 5000 : 200000);
		uint32_t	n = unit_gen_gaps(v, len, unit_rand_below(1000), 1 + unit_rand_below(1u << unit_rand_below(20)));

		check_warp_bounds(v, n);
	}
	check_host_team();
	free(v);
	return unit_report("test_host (GPU list logic on the host)");
}
