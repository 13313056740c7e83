/*
 * test_codec.c
 *	  Round trips, random access, next_geq and corruption detection for every
 *	  codec, on lists of every shape, against plain sorted arrays.
 */
#include "unit.h"
#include "../../src/codec/codec.h"
#include "../../src/codec/bits.h"
#include "../reference.h"

#include <stdbool.h>

static const char *const codec_names[] = {"raw", "ef", "lrc"};

/* pl_contains as a plain answer: -1 when it reports damage */
static int
contains(const pl_view *view, uint32_t x)
{
	bool		found;

	if (pl_contains(view, x, &found) != PL_OK)
		return -1;
	return found ? 1 : 0;
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
			CHECK(contains(&view, v[i]) == 1, "%s: contains(%u)", what, v[i]);
			if (v[i] < UINT32_MAX && (i + 1 == n || v[i + 1] != v[i] + 1))
				CHECK(contains(&view, v[i] + 1) == 0, "%s: !contains(%u)", what, v[i] + 1);
			if (v[i] > 0 && (i == 0 || v[i - 1] != v[i] - 1))
				CHECK(contains(&view, v[i] - 1) == 0, "%s: !contains(%u)", what, v[i] - 1);
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
				CHECK(contains(&view, (uint32_t) x) == (k < n && v[k] == x),
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
 * and searching must stay inside the buffer (run under AddressSanitizer),
 * and nothing may hand out postings out of order: decoding either succeeds
 * with a strictly increasing list ending on the header's last posting, or
 * reports PL_ERR_ORDER; a cursor's answers never go backwards and never fall
 * below what was asked; membership agrees with the decoded list whenever
 * that decoded.  The counts make sure the crafting reached all of this.
 */
typedef struct crafted_counts
{
	long		rounds;
	long		opened;
	long		decoded;
	long		rejected_order;
} crafted_counts;

static void
check_crafted(const uint32_t *v, uint32_t n, int codec, int rounds, crafted_counts *counts)
{
	size_t		len;
	uint8_t    *buf = encode_exact(codec, v, n, &len);
	uint8_t    *copy = unit_alloc(len);
	uint32_t   *out = unit_alloc(((size_t) n + GPUIDX_LRC_SEGMENT) * sizeof(uint32_t));

	for (int r = 0; r < rounds; r++)
	{
		pl_view		view;
		pl_status	st;
		pl_status	decoded;
		bool		valid;
		int			edits = 1 + unit_rand_below(4);
		pl_cursor	cur;
		uint64_t	x = 0;
		uint32_t	got;
		uint32_t	prev = 0;
		bool		have_prev = false;

		counts->rounds++;
		memcpy(copy, buf, len);
		for (int e = 0; e < edits; e++)
		{
			size_t		at = GPUIDX_HEADER_SIZE + (len > GPUIDX_HEADER_SIZE ? unit_rand_below(len - GPUIDX_HEADER_SIZE) : 0);

			if (at < len)
				copy[at] = (uint8_t) unit_rand64();
		}
		set_checksum(copy, len);
		st = pl_open(&view, copy, len, PL_OPEN_VERIFY_CHECKSUM);
		/* raw values are searched in place, so their order is checked on opening */
		if (st == PL_ERR_ORDER)
			counts->rejected_order++;
		if (st != PL_OK)
			continue;
		counts->opened++;
		decoded = pl_decode(&view, out);
		CHECK(decoded == PL_OK || decoded == PL_ERR_ORDER, "crafted %s: decode status %d", codec_names[codec], decoded);
		if (decoded == PL_OK)
		{
			counts->decoded++;
			for (uint32_t i = 1; i < view.count; i++)
				CHECK(out[i] > out[i - 1], "crafted %s: decoded list not increasing at %u", codec_names[codec], i);
			CHECK(view.count == 0 || out[view.count - 1] == view.last, "crafted %s: wrong last", codec_names[codec]);
			/* LRC: deviations over max_dev decode in order but must not validate */
			if (codec != GPUIDX_CODEC_LRC)
				CHECK(pl_validate(&view) == PL_OK, "crafted %s: decodes but does not validate", codec_names[codec]);
		}
		else
			counts->rejected_order++;
		/* sound as a whole: decodes in order, every LRC deviation within max_dev */
		valid = pl_validate(&view) == PL_OK;
		CHECK(!valid || decoded == PL_OK, "crafted %s: validates but does not decode", codec_names[codec]);

		/* a cursor walk: answers never below the target nor going backwards */
		pl_cursor_init(&cur, &view);
		while (x <= UINT32_MAX && pl_cursor_next_geq(&cur, (uint32_t) x, &got))
		{
			CHECK(got >= x && (!have_prev || got >= prev), "crafted %s: next_geq(%llu) gave %u after %u",
				  codec_names[codec], (unsigned long long) x, got, prev);
			if (valid)
				CHECK(got == out[ref_lower_bound(out, view.count, x)], "crafted %s: next_geq(%llu) gave %u",
					  codec_names[codec], (unsigned long long) x, got);
			prev = got;
			have_prev = true;
			x = (uint64_t) got + 1 + unit_rand_below(1 + (view.last - got) / 16);
		}
		CHECK(cur.status == PL_OK || cur.status == PL_ERR_ORDER, "crafted %s: cursor status", codec_names[codec]);
		for (int q = 0; q < 32; q++)
		{
			uint32_t	probe = q % 2 ? (uint32_t) unit_rand64() : v[unit_rand_below(n)];
			int			c = contains(&view, probe);

			if (valid)
			{
				uint32_t	k = ref_lower_bound(out, view.count, probe);

				CHECK(c == (k < view.count && out[k] == probe), "crafted %s: contains(%u) is %d",
					  codec_names[codec], probe, c);
			}
		}
	}
	free(out);
	free(copy);
	free(buf);
}

/* the damaged values the review found, each rejected without undefined behaviour */
static void
check_known_damage(void)
{
	/* EF: one posting in a universe of 2^32 would need 32 low bits */
	static const uint8_t ef_u32[] = {
		0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x44, 0x60, 0x3d, 0x6e,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xff, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	uint32_t	v[256];
	uint32_t	out[256];
	uint8_t    *buf;
	size_t		len;
	pl_view		view;
	uint32_t	aligned[sizeof(ef_u32) / 4];
	gpuidx_lrc_segment seg;

	memcpy(aligned, ef_u32, sizeof(ef_u32));
	CHECK(pl_open(&view, aligned, sizeof(ef_u32), PL_OPEN_VERIFY_CHECKSUM) == PL_ERR_STRUCTURE,
		  "EF block of one posting in 2^32 is rejected");

	/* raw: one id set to 2^32 - 1 in the middle, checksum recomputed */
	for (uint32_t i = 0; i < 256; i++)
		v[i] = 10 + 3 * i;
	buf = encode_exact(GPUIDX_CODEC_RAW, v, 256, &len);
	memcpy(buf + GPUIDX_HEADER_SIZE + 100 * 4, &(uint32_t) {UINT32_MAX}, 4);
	set_checksum(buf, len);
	CHECK(pl_open(&view, buf, len, PL_OPEN_VERIFY_CHECKSUM) == PL_ERR_ORDER, "raw list out of order is rejected");
	free(buf);

	/* LRC: an intercept near INT64_MAX would overflow the line */
	buf = encode_exact(GPUIDX_CODEC_LRC, v, 256, &len);
	memcpy(&seg, buf + GPUIDX_HEADER_SIZE, sizeof(seg));
	seg.intercept_lo = 0xFFFFFFF0u;
	seg.intercept_hi = 0x7FFFFFFFu;
	memcpy(buf + GPUIDX_HEADER_SIZE, &seg, sizeof(seg));
	set_checksum(buf, len);
	CHECK(pl_open(&view, buf, len, PL_OPEN_VERIFY_CHECKSUM) == PL_ERR_STRUCTURE, "LRC intercept overflow is rejected");
	free(buf);

	/* EF: two low-bit fields swapped inside a block decode out of order */
	for (uint32_t i = 0; i < 256; i++)
		v[i] = 1000 + 37 * i + (i % 5);
	buf = encode_exact(GPUIDX_CODEC_EF, v, 256, &len);
	CHECK(pl_open(&view, buf, len, PL_OPEN_VERIFY_CHECKSUM) == PL_OK, "EF list opens");
	{
		uint32_t	l = gpuidx_ef_low_bits((uint64_t) v[128] - v[0], 128);
		uint8_t    *data = (uint8_t *) view.data;
		uint32_t	low1 = bits_get(data, 1 * l, l);
		uint32_t	low2 = bits_get(data, 2 * l, l);
		uint64_t	mask = ((UINT64_C(1) << l) - 1);

		CHECK(l > 0 && low1 != low2, "EF test list has distinct low bits");
		/* clear and write back the two fields swapped */
		for (uint32_t j = 1; j <= 2; j++)
			for (uint32_t b = 0; b < l; b++)
				data[(j * l + b) / 8] &= (uint8_t) ~(1u << ((j * l + b) % 8));
		bits_put_at(data, 1 * l, low2 & mask, l);
		bits_put_at(data, 2 * l, low1 & mask, l);
	}
	set_checksum(buf, len);
	CHECK(pl_open(&view, buf, len, PL_OPEN_VERIFY_CHECKSUM) == PL_OK, "EF list with swapped low bits still opens");
	CHECK(pl_decode_block(&view, 0, out) == -1 || (out[1] < out[2]), "EF block decode checks order");
	{
		pl_status	st = pl_decode(&view, out);
		bool		in_order = true;

		for (uint32_t i = 1; i < 256 && st == PL_OK; i++)
			in_order &= out[i] > out[i - 1];
		CHECK(st == PL_ERR_ORDER || in_order, "EF decode reports order violations (%d)", st);
	}
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

	crafted_counts crafted[GPUIDX_NUM_CODECS];

	memset(crafted, 0, sizeof(crafted));
	CHECK(pl_crc32c(0, "123456789", 9) == 0xE3069283u, "crc32c check value");
	check_header_fields();
	check_known_damage();

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
		check_crafted(v, n, codec, 3000, &crafted[codec]);
		n = unit_gen_gaps(v, 300, 0, 4);
		check_crafted(v, n, codec, 3000, &crafted[codec]);
		n = unit_gen_gaps(v, 2000, 100, 300);
		check_crafted(v, n, codec, 3000, &crafted[codec]);
	}
	for (int codec = 0; codec < GPUIDX_NUM_CODECS; codec++)
	{
		crafted_counts *c = &crafted[codec];

		printf("crafted %s: %ld rounds, %ld opened, %ld decoded in order, %ld rejected out of order\n",
			   codec_names[codec], c->rounds, c->opened, c->decoded, c->rejected_order);
		/*
		 * The crafting must reach the decoders (raw values rarely stay in
		 * order under random edits) and damage they reject.
		 */
		CHECK(c->opened >= c->rounds / (codec == GPUIDX_CODEC_RAW ? 100 : 4), "crafted %s: only %ld of %ld opened",
			  codec_names[codec], c->opened, c->rounds);
		CHECK(c->decoded > 0 && c->rejected_order > 0, "crafted %s: no damage reached the order checks",
			  codec_names[codec]);
	}
	free(v);
	return unit_report("test_codec");
}
