/*
 * test_codec.c
 *	  Round trips, random access, next_geq and corruption detection for every
 *	  codec, on lists of every shape, against plain sorted arrays.
 */
#include "unit.h"
#include "../../src/codec/codec.h"
#include "../../src/codec/bits.h"

#include <stdbool.h>

static const char *const codec_names[] = {"raw", "ef", "lrc"};

/* reference lower bound: first index with a[i] >= x */
static uint32_t
ref_lower_bound(const uint32_t *a, uint32_t n, uint64_t x)
{
	uint32_t	lo = 0;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* encode into a buffer of exactly the announced size (so ASan sees overruns) */
static uint8_t *
encode_exact(int codec, const uint32_t *v, uint32_t n, size_t *len)
{
	size_t		size = pl_encoded_size(codec, v, n);
	uint8_t    *buf = unit_alloc(size);
	size_t		written = pl_encode(codec, v, n, buf);

	CHECK(written == size, "%s n=%u: wrote %zu, announced %zu", codec_names[codec], n, written, size);
	*len = size;
	return buf;
}

static void
check_cursor_walk(const pl_view *view, const uint32_t *v, uint32_t n, const char *what)
{
	pl_cursor	cur;
	uint64_t	x = 0;
	uint32_t	got;

	pl_cursor_init(&cur, view);
	while (x <= (uint64_t) UINT32_MAX)
	{
		uint32_t	k = ref_lower_bound(v, n, x);
		bool		found = pl_cursor_next_geq(&cur, (uint32_t) x, &got);

		CHECK(found == (k < n), "%s: cursor walk x=%llu found=%d", what, (unsigned long long) x, found);
		if (!found || k >= n)
			break;
		CHECK(got == v[k], "%s: cursor walk x=%llu got %u want %u", what, (unsigned long long) x, got, v[k]);
		/* next target: sometimes the same, sometimes just past, sometimes far */
		switch (unit_rand_below(4))
		{
			case 0:
				x = got;
				break;
			case 1:
				x = (uint64_t) got + 1;
				break;
			case 2:
				x = (uint64_t) got + unit_rand_below(300);
				break;
			default:
				x = (uint64_t) got + unit_rand_below(1 + (uint64_t) (view->last - got) / 8 + 1);
				break;
		}
	}
}

static void
check_list(const uint32_t *v, uint32_t n, const char *shape)
{
	size_t		sizes[GPUIDX_NUM_CODECS];
	char		what[128];

	for (int codec = 0; codec < GPUIDX_NUM_CODECS; codec++)
	{
		size_t		len;
		uint8_t    *buf = encode_exact(codec, v, n, &len);
		pl_view		view;
		pl_status	st = pl_open(&view, buf, len, PL_OPEN_VERIFY_CHECKSUM);
		uint32_t   *out;
		bool		small = n <= 3000;

		snprintf(what, sizeof(what), "%s/%s n=%u", shape, codec_names[codec], n);
		sizes[codec] = len;
		CHECK(st == PL_OK, "%s: open: %s", what, pl_status_message(st));
		if (st != PL_OK)
		{
			free(buf);
			continue;
		}
		CHECK(view.count == n && view.codec == codec, "%s: header", what);
		CHECK(view.last == (n ? v[n - 1] : 0), "%s: last", what);
		st = pl_validate(&view);
		CHECK(st == PL_OK, "%s: validate: %s", what, pl_status_message(st));

		out = unit_alloc((size_t) n * sizeof(uint32_t) + GPUIDX_LRC_SEGMENT * sizeof(uint32_t));
		CHECK(pl_decode(&view, out) == PL_OK, "%s: decode", what);
		CHECK(memcmp(out, v, (size_t) n * sizeof(uint32_t)) == 0, "%s: decode differs", what);

		for (uint32_t b = 0; b < view.nblocks; b++)
		{
			uint32_t	cap = pl_block_capacity(&view);

			CHECK(pl_block_first(&view, b) == v[(size_t) b * cap], "%s: block %u first", what, b);
			CHECK(pl_block_len(&view, b) == (n - b * cap < cap ? n - b * cap : cap), "%s: block %u len", what, b);
		}

		/* random access and membership: every posting, and its neighbours */
		for (uint32_t s = 0; s < (small ? n : 2000); s++)
		{
			uint32_t	i = small ? s : unit_rand_below(n);

			CHECK(pl_get(&view, i) == v[i], "%s: get(%u)", what, i);
			CHECK(pl_contains(&view, v[i]), "%s: contains(%u)", what, v[i]);
			if (v[i] < UINT32_MAX && (i + 1 == n || v[i + 1] != v[i] + 1))
				CHECK(!pl_contains(&view, v[i] + 1), "%s: !contains(%u)", what, v[i] + 1);
			if (v[i] > 0 && (i == 0 || v[i - 1] != v[i] - 1))
				CHECK(!pl_contains(&view, v[i] - 1), "%s: !contains(%u)", what, v[i] - 1);
		}

		/* next_geq from a fresh cursor: exhaustive over small ranges */
		if (n > 0 && small && (uint64_t) v[n - 1] - v[0] < 20000)
		{
			for (uint64_t x = v[0] > 2 ? v[0] - 2 : 0; x <= (uint64_t) v[n - 1] + 2 && x <= UINT32_MAX; x++)
			{
				pl_cursor	cur;
				uint32_t	got;
				uint32_t	k = ref_lower_bound(v, n, x);
				bool		found;

				pl_cursor_init(&cur, &view);
				found = pl_cursor_next_geq(&cur, (uint32_t) x, &got);
				CHECK(found == (k < n) && (!found || got == v[k]),
					  "%s: next_geq(%llu)", what, (unsigned long long) x);
				CHECK(pl_contains(&view, (uint32_t) x) == (k < n && v[k] == x),
					  "%s: contains(%llu)", what, (unsigned long long) x);
			}
		}
		for (int walk = 0; walk < (small ? 20 : 3); walk++)
			check_cursor_walk(&view, v, n, what);
		free(out);
		free(buf);
	}

	{
		int			chosen = pl_choose_codec(v, n);
		size_t		best = sizes[0];

		for (int c = 1; c < GPUIDX_NUM_CODECS; c++)
			if (sizes[c] < best)
				best = sizes[c];
		CHECK(sizes[chosen] == best, "%s n=%u: auto chose %s (%zu bytes), best is %zu",
			  shape, n, codec_names[chosen], sizes[chosen], best);
	}
}

/* every single-bit flip and every truncation must be caught by open */
static void
check_corruption_detected(const uint32_t *v, uint32_t n, int codec, const char *shape)
{
	size_t		len;
	uint8_t    *buf = encode_exact(codec, v, n, &len);
	uint8_t    *copy = unit_alloc(len);
	size_t		flips = len * 8 <= 4096 ? len * 8 : 4096;
	pl_view		view;

	for (size_t f = 0; f < flips; f++)
	{
		size_t		bit = len * 8 <= 4096 ? f : unit_rand_below(len * 8);

		memcpy(copy, buf, len);
		copy[bit / 8] ^= (uint8_t) (1u << (bit % 8));
		CHECK(pl_open(&view, copy, len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK,
			  "%s/%s: flip of bit %zu not detected", shape, codec_names[codec], bit);
	}
	for (size_t cut = 1; cut <= len && cut <= 64; cut++)
		CHECK(pl_open(&view, buf, len - cut, PL_OPEN_VERIFY_CHECKSUM) != PL_OK,
			  "%s/%s: truncation by %zu not detected", shape, codec_names[codec], cut);
	free(copy);
	free(buf);
}

static void
set_checksum(uint8_t *buf, size_t len)
{
	uint32_t	crc = pl_list_checksum(buf, len);

	memcpy(buf + 12, &crc, 4);
}

/*
 * Crafted bytes with a valid checksum: whatever they hold, opening, decoding
 * and searching must stay inside the buffer (run under AddressSanitizer), and
 * a list that validates must decode strictly increasing.
 */
static void
check_crafted(const uint32_t *v, uint32_t n, int codec, int rounds)
{
	size_t		len;
	uint8_t    *buf = encode_exact(codec, v, n, &len);
	uint8_t    *copy = unit_alloc(len);
	uint32_t   *out = unit_alloc(((size_t) n + GPUIDX_LRC_SEGMENT) * sizeof(uint32_t));
	long		opened = 0;

	for (int r = 0; r < rounds; r++)
	{
		pl_view		view;
		int			edits = 1 + unit_rand_below(4);

		memcpy(copy, buf, len);
		for (int e = 0; e < edits; e++)
		{
			size_t		at = GPUIDX_HEADER_SIZE + (len > GPUIDX_HEADER_SIZE ? unit_rand_below(len - GPUIDX_HEADER_SIZE) : 0);

			if (at < len)
				copy[at] = (uint8_t) unit_rand64();
		}
		set_checksum(copy, len);
		if (pl_open(&view, copy, len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK)
			continue;
		opened++;
		/* structurally sound: these must not read out of bounds */
		(void) pl_decode(&view, out);
		for (int q = 0; q < 32; q++)
		{
			pl_cursor	cur;
			uint32_t	got;

			(void) pl_contains(&view, (uint32_t) unit_rand64());
			if (n > 0)
				(void) pl_contains(&view, v[unit_rand_below(n)]);
			pl_cursor_init(&cur, &view);
			(void) pl_cursor_next_geq(&cur, (uint32_t) unit_rand64(), &got);
		}
		if (pl_validate(&view) == PL_OK)
		{
			CHECK(pl_decode(&view, out) == PL_OK, "crafted %s: validated but decode fails", codec_names[codec]);
			for (uint32_t i = 1; i < n; i++)
				CHECK(out[i] > out[i - 1], "crafted %s: validated list not increasing at %u", codec_names[codec], i);
			CHECK(n == 0 || out[n - 1] == view.last, "crafted %s: validated list wrong last", codec_names[codec]);
		}
	}
	(void) opened;
	free(out);
	free(copy);
	free(buf);
}

static void
check_header_fields(void)
{
	uint32_t	v[5] = {3, 9, 27, 81, 243};
	size_t		len;
	uint8_t    *buf = encode_exact(GPUIDX_CODEC_EF, v, 5, &len);
	uint8_t    *copy = unit_alloc(len + 4);
	pl_view		view;
	uint32_t	big = GPUIDX_MAX_POSTINGS + 1;

#define EXPECT_OPEN(mutation, status) \
	do { \
		memcpy(copy, buf, len); \
		mutation; \
		set_checksum(copy, len); \
		CHECK(pl_open(&view, copy, len, PL_OPEN_VERIFY_CHECKSUM) == (status), \
			  "header mutation %s", #mutation); \
	} while (0)

	EXPECT_OPEN((void) 0, PL_OK);
	EXPECT_OPEN(copy[0] = 2, PL_ERR_VERSION);
	EXPECT_OPEN(copy[1] = 3, PL_ERR_CODEC);
	EXPECT_OPEN(copy[2] = 1, PL_ERR_FLAGS);
	EXPECT_OPEN(memcpy(copy + 4, &big, 4), PL_ERR_TOO_MANY);
	EXPECT_OPEN(copy[4] = 6, PL_ERR_STRUCTURE);
	EXPECT_OPEN(copy[6] = 1, PL_ERR_LENGTH);
	EXPECT_OPEN(copy[8] = 244, PL_ERR_STRUCTURE);
	/* checksum not recomputed */
	memcpy(copy, buf, len);
	copy[8] ^= 1;
	CHECK(pl_open(&view, copy, len, PL_OPEN_VERIFY_CHECKSUM) == PL_ERR_CHECKSUM, "checksum");
	CHECK(pl_open(&view, copy, 7, PL_OPEN_VERIFY_CHECKSUM) == PL_ERR_TRUNCATED, "truncated header");
	/* unaligned bytes */
	memcpy(copy + 1, buf, len);
	CHECK(pl_open(&view, copy + 1, len, PL_OPEN_VERIFY_CHECKSUM) == PL_ERR_ALIGNMENT, "alignment");
	free(copy);
	free(buf);
#undef EXPECT_OPEN
}

/* block kinds of EF: a list that mixes runs, bitmaps and Elias-Fano blocks */
static uint32_t
gen_mixed(uint32_t *out, uint32_t n)
{
	uint64_t	v = unit_rand_below(1000);
	uint32_t	k = 0;

	while (k < n && v <= UINT32_MAX)
	{
		int			kind = unit_rand_below(3);
		uint32_t	len = 1 + unit_rand_below(400);

		for (uint32_t i = 0; i < len && k < n && v <= UINT32_MAX; i++)
		{
			out[k++] = (uint32_t) v;
			v += kind == 0 ? 1 : kind == 1 ? 1 + unit_rand_below(3) : 1 + unit_rand_below(5000);
		}
		v += unit_rand_below(1u << 20);
	}
	return k;
}

int
main(void)
{
	static const uint32_t lengths[] = {0, 1, 2, 3, 5, 17, 100, 127, 128, 129, 255, 256, 257,
	383, 384, 385, 511, 512, 513, 1000, 2047, 2048, 2049, 3000};
	uint32_t   *v = unit_alloc(4000000 * sizeof(uint32_t));

	CHECK(pl_crc32c(0, "123456789", 9) == 0xE3069283u, "crc32c check value");
	check_header_fields();

	for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++)
	{
		uint32_t	len = lengths[li];
		uint32_t	n;

		n = unit_gen_gaps(v, len, unit_rand_below(1000), 1);
		check_list(v, n, "run");
		n = unit_gen_gaps(v, len, UINT32_MAX - len + 1, 1);
		check_list(v, n, "run-to-max");
		n = unit_gen_gaps(v, len, 0, 3);
		check_list(v, n, "dense");
		n = unit_gen_gaps(v, len, unit_rand_below(100000), 100);
		check_list(v, n, "gaps-100");
		n = unit_gen_gaps(v, len, 0, 1u << 20);
		check_list(v, n, "gaps-1M");
		n = unit_gen_uniform(v, len, UINT64_C(1) << 32);
		if (len >= 2)
		{
			v[0] = 0;
			v[n - 1] = UINT32_MAX;
		}
		check_list(v, n, "uniform-0-max");
		n = unit_gen_gaps(v, len, 7, 1);
		for (uint32_t i = 0; i < n; i++)
			v[i] = 7 + i * 13;
		check_list(v, n, "stride-13");
		n = gen_mixed(v, len);
		check_list(v, n, "mixed");
		if (len == 1)
		{
			v[0] = 0;
			check_list(v, 1, "zero");
			v[0] = UINT32_MAX;
			check_list(v, 1, "max");
		}
	}
	/* random lengths and gap sizes */
	for (int r = 0; r < 200; r++)
	{
		uint32_t	n = unit_gen_gaps(v, unit_rand_below(3000), unit_rand_below(1u << 31),
									  1 + unit_rand_below(1u << unit_rand_below(28)));

		check_list(v, n, "random");
	}
	/* millions of postings */
	{
		uint32_t	n = unit_gen_gaps(v, 3000000, 0, 8);

		check_list(v, n, "3M-dense");
		n = unit_gen_uniform(v, 4000000, UINT64_C(1) << 32);
		check_list(v, n, "4M-uniform");
		n = gen_mixed(v, 2000000);
		check_list(v, n, "2M-mixed");
	}
	/* corruption: every bit flip and truncation detected; crafted bytes safe */
	for (int codec = 0; codec < GPUIDX_NUM_CODECS; codec++)
	{
		uint32_t	n = gen_mixed(v, 700);

		check_corruption_detected(v, n, codec, "mixed-700");
		n = unit_gen_gaps(v, 3, 5, 10);
		check_corruption_detected(v, n, codec, "tiny");
		check_corruption_detected(v, 0, codec, "empty");
		n = gen_mixed(v, 1500);
		check_crafted(v, n, codec, 3000);
		n = unit_gen_gaps(v, 300, 0, 4);
		check_crafted(v, n, codec, 3000);
	}
	free(v);
	return unit_report("test_codec");
}
