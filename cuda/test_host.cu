/*
 * test_host.cu
 *	  The GPU kernels' list logic, run on the host: no GPU needed, so CI runs
 *	  it.  Every block of lists of every shape and codec is decoded the way a
 *	  warp does it (32 lanes simulated in turn), searched the way a search
 *	  thread does, and merged the way a warp's lanes walk the merge path, and
 *	  each is compared with the CPU codecs (src/codec); the warp's 32-way
 *	  lower bound is compared with a plain binary search.  Ranking's device
 *	  reads (tfs from frequency records, doc lengths) are compared with
 *	  rankdata.h's, and its radix select with a sort.
 */
extern "C"
{
#include "codec/codec.h"
#include "store/rankdata.h"
}
#include <algorithm>
#include <vector>

#include "block_ops.cuh"
#include "rank_ops.cuh"
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


/* tfs read from a frequency record and lengths from a doclens blob, as the device reads them */
static void
check_rank_reads(void)
{
	for (int r = 0; r < 300; r++)
	{
		uint32_t	n = r < 20 ? (uint32_t) r * 13 : unit_rand_below(r % 10 == 0 ? 100000 : 3000);
		uint32_t   *docs = (uint32_t *) unit_alloc((size_t) n * 4 + 4);
		uint8_t    *tfs = (uint8_t *) unit_alloc(n + 1);
		uint32_t	top = 1 + unit_rand_below(1u << unit_rand_below(9));	/* widths 0..8 */
		uint64_t	len;
		uint8_t    *rec;
		uint8_t    *copy;

		for (uint32_t i = 0; i < n; i++)
		{
			docs[i] = i * 3;
			tfs[i] = (uint8_t) std::min<uint32_t>(255, 1 + unit_rand_below(top));
		}
		rec = gpx_freq_record_build(docs, tfs, n, &len);
		CHECK(gpx_freq_record_check(rec, len) == NULL, "record of %u", n);
		/* an exact-size copy: a read past the record would show under a sanitizer */
		copy = (uint8_t *) unit_alloc(len);
		memcpy(copy, rec, len);
		for (uint32_t i = 0; i < n; i++)
		{
			uint32_t	got = dev_freq_tf(copy, n, i);

			CHECK(got == gpx_freq_record_tf(rec, i) && got == tfs[i], "tf %u of %u: %u, want %u", i, n, got, tfs[i]);
		}
		free(copy);
		free(rec);
		free(docs);
		free(tfs);
	}
	for (int r = 0; r < 200; r++)
	{
		uint32_t	ndocs = r < 10 ? (uint32_t) r * 50 : unit_rand_below(r % 10 == 0 ? 300000 : 5000);
		uint32_t   *lens = (uint32_t *) unit_alloc((size_t) ndocs * 4 + 4);
		uint32_t	bits = unit_rand_below(33);
		uint64_t	len;
		uint8_t    *blob;
		const gpuidx_doclens_header *h;

		for (uint32_t i = 0; i < ndocs; i++)
			lens[i] = bits == 0 ? 0 : (uint32_t) (unit_rand64() >> (64 - bits)) >> unit_rand_below(3);
		blob = gpx_doclens_from_lengths(lens, ndocs, &len);
		CHECK(gpx_doclens_check(blob, len) == NULL, "doclens of %u", ndocs);
		h = (const gpuidx_doclens_header *) blob;
		for (uint32_t i = 0; i < ndocs; i++)
		{
			uint32_t	got = dev_doclens_get(blob, h->nchunks, i);

			CHECK(got == gpx_doclens_get(blob, i) && got == lens[i], "length of doc %u of %u: %u, want %u", i,
				  ndocs, got, lens[i]);
		}
		free(blob);
		free(lens);
	}
}

/* better: a higher score, then a smaller doc */
static bool
rank_better(double sa, uint32_t da, double sb, uint32_t db)
{
	return sa != sb ? sa > sb : da < db;
}

/*
 * The composite key orders as rank_better does, a doc's slot in a hashed
 * table is found again, and the radix select (histogram, pick, collect:
 * the host emulation's loops) keeps exactly the best min(k, matched)
 * candidates of a dense or a hashed table.
 */
static void
check_rank_select(void)
{
	uint32_t	bound_selections = 0;
	uint32_t	bound_overflows = 0;
	static const double specials[] = {0.0, 4.9e-324, 2.2e-308, 1e-300, 0.5, 1.0, 1.0000000000000002, 3.0, 1e300,
		INFINITY};

	for (int r = 0; r < 20000; r++)
	{
		double		sa = unit_rand_below(2) ? specials[unit_rand_below(10)] : unit_rand64() % 1000 / 7.0;
		double		sb = unit_rand_below(3) == 0 ? sa : (unit_rand_below(2) ? specials[unit_rand_below(10)] : unit_rand64() % 1000 / 7.0);
		uint32_t	da = unit_rand_below(3) == 0 ? UINT32_MAX - 1 - unit_rand_below(3) : unit_rand_below(1000);
		uint32_t	db = unit_rand_below(2) ? da : unit_rand_below(1000);

		if (sa == sb && da == db)
			continue;
		CHECK((rank_key_of(sa, da) > rank_key_of(sb, db)) == rank_better(sa, da, sb, db),
			  "key order of (%g, %u) and (%g, %u)", sa, da, sb, db);
	}
	for (int r = 0; r < 400; r++)
	{
		/* every other table hashed: candidates spread over a large segment, fewer slots than docs */
		bool		hashed = r % 2 == 1;
		uint32_t	ndocs = 1 + unit_rand_below(r % 10 == 0 ? 50000 : 3000);
		uint32_t	nterms = 1 + unit_rand_below(3);
		uint32_t	k = r % 4 == 0 ? 1 + unit_rand_below(ndocs + 10) : 1 + unit_rand_below(20);
		uint32_t	log2_slots = 6;
		uint32_t	nslots;
		std::vector<rank_slot> slots;
		std::vector<uint32_t> hist(RANK_BINS, 0);
		std::vector<uint32_t> out_docs(k);
		std::vector<double> out_scores(k);
		std::vector<std::pair<double, uint32_t>> want;
		std::vector<uint32_t> docs;
		rank_select sel;
		rank_job	q;
		uint32_t	levels = 1 + unit_rand_below(r % 3 == 0 ? 3 : 1000);

		/* the docs with a term: all of a dense table's; distinct random ids, and UINT32_MAX - 1, in a hashed one */
		for (uint32_t d = 0; d < ndocs; d++)
			docs.push_back(hashed ? (d == 0 ? UINT32_MAX - 2 : (uint32_t) (unit_rand64() >> 34) * 2 + d % 2) : d);
		if (hashed)
		{
			std::sort(docs.begin(), docs.end());
			docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
			while ((1u << log2_slots) < 2 * docs.size())
				log2_slots++;
		}
		nslots = hashed ? 1u << log2_slots : ndocs;
		slots.assign(nslots, rank_slot());
		memset(&sel, 0, sizeof(sel));
		memset(&q, 0, sizeof(q));
		q.ndocs = hashed ? UINT32_MAX : ndocs;
		q.nterms = nterms;
		q.every_term = unit_rand_below(2);
		q.k = k;
		q.slots = slots.data();
		q.hashed = hashed;
		q.nslots = nslots;
		q.hash_shift = hashed ? 32 - log2_slots : 0;
		q.hist = hist.data();
		q.sel = &sel;
		q.out_docs = out_docs.data();
		q.out_scores = out_scores.data();
		for (uint32_t doc : docs)
		{
			uint8_t		c = (uint8_t) unit_rand_below(nterms + 1);
			uint32_t	s;

			if (hashed && c == 0)
				continue;		/* a hashed table holds only docs with a term */
			s = rank_slot_of(q, doc);
			CHECK(s < nslots && (!hashed || slots[s].key == doc + 1) && slots[s].count == 0,
				  "doc %u's slot %u of %u", doc, s, nslots);
			CHECK(rank_slot_of(q, doc) == s && rank_slot_doc(q, s) == doc, "doc %u found again in slot %u", doc, s);
			slots[s].count = c;
			slots[s].sum = c == 0 ? 0.0 : unit_rand_below(levels) / 3.0;
			if (rank_candidate(q, s))
				want.push_back({slots[s].sum, doc});
		}
		std::sort(want.begin(), want.end(), [](const std::pair<double, uint32_t> &a, const std::pair<double, uint32_t> &b) {
			return rank_better(a.first, a.second, b.first, b.second);
		});
		for (uint32_t pass = 0; pass < RANK_PASSES && !sel.done; pass++)
		{
			for (uint32_t s = 0; s < nslots; s++)
			{
				uint32_t	digit;

				if (rank_slot_digit(q, sel, pass, s, &digit))
					hist[digit]++;
			}
			host_rank_pick(q, pass);
		}
		CHECK(sel.done && sel.matched == want.size(), "select: done %u, matched %u of %zu", sel.done,
			  sel.matched, want.size());
		for (uint32_t s = 0; s < nslots; s++)
			if (rank_slot_selected(q, sel, s))
			{
				if (sel.taken < k)
				{
					out_docs[sel.taken] = rank_slot_doc(q, s);
					out_scores[sel.taken] = slots[s].sum;
				}
				sel.taken++;
			}
		CHECK(sel.taken == std::min<size_t>(k, want.size()), "selected %u, want %zu", sel.taken,
			  std::min<size_t>(k, want.size()));
		std::sort(out_docs.begin(), out_docs.begin() + std::min(sel.taken, k));
		{
			std::vector<uint32_t> best;

			for (size_t i = 0; i < std::min<size_t>(k, want.size()); i++)
				best.push_back(want[i].second);
			std::sort(best.begin(), best.end());
			CHECK(std::equal(best.begin(), best.end(), out_docs.begin()), "selected docs differ (%s, ndocs %u, k %u)",
				  hashed ? "hashed" : "dense", ndocs, k);
		}
		CHECK(std::count(hist.begin(), hist.end(), 0u) == (long) RANK_BINS, "histogram left nonzero");

		/* the same table through the bound: the same docs, or an overflow the radix passes take */
		{
			std::vector<uint64_t> best(2 * (size_t) rank_nparts(q), 0);
			std::vector<uint32_t> surv_docs(RANK_SURVIVORS);
			std::vector<double> surv_scores(RANK_SURVIVORS);
			std::vector<uint32_t> got;
			std::vector<uint32_t> want_docs;

			memset(&sel, 0, sizeof(sel));
			q.best = best.data();
			q.surv_docs = surv_docs.data();
			q.surv_scores = surv_scores.data();
			for (uint32_t s0 = 0; s0 < nslots; s0 += RANK_SLOT_CHUNK)
				host_rank_best(q, s0, std::min(nslots, s0 + RANK_SLOT_CHUNK));
			CHECK(sel.matched == want.size(), "bound: matched %u of %zu", sel.matched, want.size());
			host_rank_bound(q);
			if (rank_bound(sel) != 0)
			{
				size_t		at_or_above = 0;

				for (const std::pair<double, uint32_t> &w : want)
					at_or_above += rank_key_of(w.first, w.second) >= rank_bound(sel);
				CHECK(at_or_above >= k, "bound above the k-th best: %zu candidates at or above it, k %u",
					  at_or_above, k);
			}
			for (uint32_t s0 = 0; s0 < nslots; s0 += RANK_SLOT_CHUNK)
				host_rank_gather(q, s0, std::min(nslots, s0 + RANK_SLOT_CHUNK));
			host_rank_final(q);
			if (sel.overflow)
			{
				CHECK(sel.survivors > RANK_SURVIVORS || (rank_bound(sel) == 0 && sel.matched > RANK_SURVIVORS),
					  "overflow with %u survivors", sel.survivors);
				bound_overflows++;
				continue;
			}
			bound_selections++;
			CHECK(sel.done && sel.taken == std::min<size_t>(k, want.size()), "bound: selected %u, want %zu",
				  sel.taken, std::min<size_t>(k, want.size()));
			got.assign(out_docs.begin(), out_docs.begin() + std::min(sel.taken, k));
			std::sort(got.begin(), got.end());
			for (size_t i = 0; i < std::min<size_t>(k, want.size()); i++)
				want_docs.push_back(want[i].second);
			std::sort(want_docs.begin(), want_docs.end());
			CHECK(got == want_docs, "bound: selected docs differ (%s, ndocs %u, k %u, %u survivors)",
				  hashed ? "hashed" : "dense", ndocs, k, sel.survivors);
		}
	}
	CHECK(bound_selections > 0 && bound_overflows > 0, "bound: %u selections, %u overflows: both paths taken",
		  bound_selections, bound_overflows);
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
	check_rank_reads();
	check_rank_select();
	free(v);
	return unit_report("test_host (GPU list logic on the host)");
}
