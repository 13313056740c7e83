/*
 * fuzz_common.h
 *	  Shared by the libFuzzer targets and the seed generator of test/fuzz:
 *	  input reading, checksum repair, id sets from bytes, plain reference set
 *	  operations and the accessor checks.
 */
#ifndef GPUIDX_FUZZ_COMMON_H
#define GPUIDX_FUZZ_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cpu/cpu.h"
#include "../reference.h"

/* a failed property: abort() so that libFuzzer keeps the input as a crash */
#define FUZZ_FAIL(...) \
	do { \
		fprintf(stderr, "fuzz check failed at %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		abort(); \
	} while (0)

#define FUZZ_CHECK(cond, ...) \
	do { if (!(cond)) FUZZ_FAIL(__VA_ARGS__); } while (0)

static const char *const fuzz_codec_names[] = {"raw", "ef", "lrc"};
static const char *const fuzz_method_names[] = {"auto", "merge", "skip"};

/*
 * Exactly n bytes (so ASan sees any overrun), never NULL: malloc's alignment
 * also gives pl_open the 4 bytes it needs.
 */
static inline void *
fuzz_alloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "fuzz: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

/* zeroed, so that what a failed decode left behind is deterministic */
static inline uint32_t *
fuzz_alloc_u32(size_t n)
{
	uint32_t   *p = calloc(n ? n : 1, sizeof(uint32_t));

	if (p == NULL)
	{
		fprintf(stderr, "fuzz: out of memory (%zu ids)\n", n);
		abort();
	}
	return p;
}

static inline uint8_t *
fuzz_copy(const uint8_t *data, size_t n)
{
	uint8_t    *p = fuzz_alloc(n);

	if (n > 0)
		memcpy(p, data, n);
	return p;
}

/*
 * Write the CRC-32C the header must carry, so random bytes get past the
 * checksum and reach the structure checks; lists shorter than a header have
 * no checksum field.
 */
static inline void
fuzz_fix_checksum(uint8_t *bytes, size_t len)
{
	uint32_t	crc;

	if (len < GPUIDX_HEADER_SIZE)
		return;
	crc = pl_list_checksum(bytes, len);
	memcpy(bytes + offsetof(gpuidx_list_header, checksum), &crc, sizeof(crc));
}

/* ------------------------------------------------------------------------
 * Reading an input: past its end every read gives zeros.
 */
typedef struct fuzz_in
{
	const uint8_t *p;
	size_t		n;
} fuzz_in;

static inline uint32_t
fuzz_u8(fuzz_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint32_t
fuzz_u16(fuzz_in *in)
{
	uint32_t	lo = fuzz_u8(in);

	return lo | (fuzz_u8(in) << 8);
}

static inline uint32_t
fuzz_u32(fuzz_in *in)
{
	uint32_t	lo = fuzz_u16(in);

	return lo | (fuzz_u16(in) << 16);
}

/* up to want bytes, fewer at the end of the input */
static inline const uint8_t *
fuzz_take(fuzz_in *in, size_t want, size_t *got)
{
	const uint8_t *p = in->p;

	*got = want < in->n ? want : in->n;
	in->p += *got;
	in->n -= *got;
	return p;
}

/* splitmix64: sampling positions and targets from the input's hash */
static inline uint64_t
fuzz_rand(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------------------
 * Id sets from bytes: a small byte code, so that short inputs make long
 * lists of every shape (runs, progressions, jumps up to 2^32 - 1).  'next' is
 * the smallest id the set may take next; ops:
 *
 *	 0x00-0x3f  skip b ids, emit one
 *	 0x40-0x7f  skip the next (b & 3) + 1 bytes' value (little-endian), emit one
 *	 0x80-0xbf  a run of ((b & 0x3f) << 8 | next byte) + 1 consecutive ids
 *	 0xc0-0xfe  ((b & 0x3f) + 1) * 8 ids in steps of (next byte) + 1
 *	 0xff       end of this set
 *
 * An id past 2^32 - 1 becomes 2^32 - 1 and fills the set; a full set skips
 * to its 0xff.  The seed generator writes real posting lists in this code.
 */
#define FUZZ_IDS_MAX	(1u << 15)
#define FUZZ_OP_END		0xff

/* append x (>= *next, clamped to 2^32 - 1); false once the set is full */
static inline bool
fuzz_ids_emit(uint32_t *v, uint32_t *n, uint64_t *next, uint64_t x)
{
	if (*n >= FUZZ_IDS_MAX || *next > UINT32_MAX)
		return false;
	if (x > UINT32_MAX)
		x = UINT32_MAX;
	v[(*n)++] = (uint32_t) x;
	*next = x + 1;
	return x < UINT32_MAX && *n < FUZZ_IDS_MAX;
}

/* one set into v (room for FUZZ_IDS_MAX): sorted and distinct by construction */
static inline uint32_t
fuzz_ids_read(fuzz_in *in, uint32_t *v)
{
	uint32_t	n = 0;
	uint64_t	next = 0;
	bool		open = true;

	while (in->n > 0)
	{
		uint32_t	b = fuzz_u8(in);

		if (b == FUZZ_OP_END)
			break;
		if (!open)
			continue;
		if (b < 0x40)
			open = fuzz_ids_emit(v, &n, &next, next + b);
		else if (b < 0x80)
		{
			uint64_t	skip = 0;

			for (uint32_t k = 0; k <= (b & 3); k++)
				skip |= (uint64_t) fuzz_u8(in) << (8 * k);
			open = fuzz_ids_emit(v, &n, &next, next + skip);
		}
		else if (b < 0xc0)
		{
			uint32_t	len = (((b & 0x3f) << 8) | fuzz_u8(in)) + 1;

			for (uint32_t k = 0; k < len && open; k++)
				open = fuzz_ids_emit(v, &n, &next, next);
		}
		else
		{
			uint32_t	len = ((b & 0x3f) + 1) * 8;
			uint32_t	step = fuzz_u8(in) + 1;

			/* the first id continues the set, the others keep the step */
			for (uint32_t k = 0; k < len && open; k++)
				open = fuzz_ids_emit(v, &n, &next, k == 0 ? next : next - 1 + step);
		}
	}
	return n;
}

/* ------------------------------------------------------------------------
 * Views.
 */

/* the k-th sampled position (n > 0): all of short lists in turn, random ones of long */
static inline uint32_t
fuzz_sample(uint64_t *rng, uint32_t k, uint32_t n, uint32_t samples)
{
	if (n <= samples)
		return k % n;
	if (k < 2)
		return k == 0 ? 0 : n - 1;
	return (uint32_t) (fuzz_rand(rng) % n);
}

/* a next_geq step: mostly small, sometimes a block or two, rarely huge */
static inline uint64_t
fuzz_step(uint64_t *rng)
{
	uint64_t	r = fuzz_rand(rng);

	switch (r & 7)
	{
		case 0:
			return 0;			/* the same target again */
		case 1:
		case 2:
		case 3:
			return 1 + ((r >> 8) & 3);
		case 4:
		case 5:
			return 1 + ((r >> 8) & 1023);
		case 6:
			return 1 + ((r >> 8) & 0xfffff);
		default:
			return 1 + ((r >> 8) & 0x3fffffff);
	}
}

/*
 * Every accessor of an opened view against the sorted distinct ids it must
 * hold: validate, full decode, blocks, random access, membership, block
 * search and three cursor walks.  Aborts on the first difference.
 */
static inline void
fuzz_check_accessors(const pl_view *view, const uint32_t *ref, uint32_t n,
					 uint64_t seed, const char *what)
{
	uint64_t	rng = seed;
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
	uint32_t   *all;
	uint32_t	cap = pl_block_capacity(view);
	pl_status	st;
	pl_cursor	cur;
	uint32_t	got;
	uint64_t	x;

	FUZZ_CHECK(view->count == n, "%s: count %u, want %u", what, view->count, n);
	FUZZ_CHECK(view->last == (n > 0 ? ref[n - 1] : 0), "%s: last %u", what, view->last);
	FUZZ_CHECK(view->nblocks == (n + cap - 1) / cap, "%s: %u blocks for %u ids", what, view->nblocks, n);
	st = pl_validate(view);
	FUZZ_CHECK(st == PL_OK, "%s: validate: %s", what, pl_status_message(st));

	all = fuzz_alloc_u32(n);
	st = pl_decode(view, all);
	FUZZ_CHECK(st == PL_OK && ref_same(all, n, ref, n), "%s: decode differs (%s)", what, pl_status_message(st));
	free(all);

	for (uint32_t b = 0; b < view->nblocks; b++)
	{
		uint32_t	len = n - b * cap < cap ? n - b * cap : cap;
		int			got_len = pl_decode_block(view, b, buf);

		FUZZ_CHECK(pl_block_len(view, b) == len, "%s: block %u length %u", what, b, pl_block_len(view, b));
		FUZZ_CHECK(pl_block_first(view, b) == ref[b * cap], "%s: block %u first", what, b);
		FUZZ_CHECK(got_len == (int) len && ref_same(buf, len, ref + b * cap, len),
				   "%s: block %u decodes differently", what, b);
	}

	for (uint32_t k = 0; k < 256 && k < n; k++)
	{
		uint32_t	i = fuzz_sample(&rng, k, n, 256);

		FUZZ_CHECK(pl_get(view, i) == ref[i], "%s: get(%u) = %u, want %u", what, i, pl_get(view, i), ref[i]);
	}

	/* members, their neighbours, the ends of the id space and random ids */
	for (uint32_t k = 0; k < 256; k++)
	{
		uint64_t	r = fuzz_rand(&rng);

		switch (k & 3)
		{
			case 0:
				x = n > 0 ? ref[fuzz_sample(&rng, k / 4, n, 64)] : r;
				break;
			case 1:
				x = n > 0 ? (uint64_t) ref[fuzz_sample(&rng, k / 4, n, 64)] + 1 : 0;
				break;
			case 2:
				x = n > 0 ? (uint64_t) ref[fuzz_sample(&rng, k / 4, n, 64)] - 1 : UINT32_MAX;
				break;
			default:
				x = k == 3 ? UINT32_MAX : k == 7 ? 0 : (uint32_t) r;
				break;
		}
		if (x > UINT32_MAX)
			continue;
		{
			bool		found;

			st = pl_contains(view, (uint32_t) x, &found);
			FUZZ_CHECK(st == PL_OK && found == ref_contains(ref, n, x),
					   "%s: contains(%llu) wrong (%s)", what, (unsigned long long) x, pl_status_message(st));
		}
		if (view->nblocks > 0)
		{
			/* the last block whose first id is <= x, searched from a random block */
			uint32_t	lo = (uint32_t) (r % view->nblocks);
			int64_t		want = -1;

			for (uint32_t b = lo; b < view->nblocks && ref[b * cap] <= x; b++)
				want = b;
			FUZZ_CHECK(pl_find_block(view, lo, (uint32_t) x) == want,
					   "%s: find_block(%u, %llu) wrong", what, lo, (unsigned long long) x);
		}
	}

	/* walk 1: every id in order */
	pl_cursor_init(&cur, view);
	x = 0;
	for (uint32_t i = 0; i <= n; i++)
	{
		bool		found = x <= UINT32_MAX && pl_cursor_next_geq(&cur, (uint32_t) x, &got);

		FUZZ_CHECK(found == (i < n) && cur.status == PL_OK, "%s: walk ends at %u of %u", what, i, n);
		if (!found)
			break;
		FUZZ_CHECK(got == ref[i], "%s: walk %u gives %u, want %u", what, i, got, ref[i]);
		x = (uint64_t) got + 1;
	}

	/* walk 2: increasing targets, with repeats, small and large steps */
	pl_cursor_init(&cur, view);
	x = n > 0 && (rng & 1) ? ref[0] : 0;
	for (uint32_t step = 0; step < 4 * 256 && x <= UINT32_MAX; step++)
	{
		uint32_t	k = ref_lower_bound(ref, n, x);
		bool		found = pl_cursor_next_geq(&cur, (uint32_t) x, &got);

		FUZZ_CHECK(found == (k < n) && cur.status == PL_OK, "%s: next_geq(%llu) found=%d", what,
				   (unsigned long long) x, found);
		FUZZ_CHECK(!found || got == ref[k], "%s: next_geq(%llu) = %u, want %u", what,
				   (unsigned long long) x, got, ref[k]);
		if (!found)
			break;
		/* sometimes jump to just past, or exactly to, a later id */
		if ((fuzz_rand(&rng) & 3) == 0 && k + 1 < n)
		{
			uint32_t	to = k + 1 + (uint32_t) (fuzz_rand(&rng) % (n - k - 1 < 300 ? n - k - 1 : 300));

			x = (uint64_t) ref[to] + (fuzz_rand(&rng) & 1);
		}
		else
			x += fuzz_step(&rng);
	}

	/* walk 3: a fresh cursor straight to the end and past it */
	pl_cursor_init(&cur, view);
	if (n > 0)
	{
		FUZZ_CHECK(pl_cursor_next_geq(&cur, ref[n - 1], &got) && got == ref[n - 1], "%s: next_geq(last)", what);
		FUZZ_CHECK(ref[n - 1] == UINT32_MAX || !pl_cursor_next_geq(&cur, ref[n - 1] + 1, &got),
				   "%s: next_geq(last + 1) found", what);
	}
	else
		FUZZ_CHECK(!pl_cursor_next_geq(&cur, 0, &got), "%s: next_geq on an empty list", what);
}

/*
 * The same calls on a view whose ids may be anything (it opened, but may not
 * validate).  Besides memory safety (the sanitizers), what the codec promises
 * of damaged bytes: a block or a whole list that decodes is strictly
 * increasing; a list that validates decodes; what membership and a cursor
 * answer on a list that decodes is the decoded list's, unless they report
 * PL_ERR_ORDER; a cursor only ever moves forward, giving each target a
 * posting >= it.  Loops are bounded, since a target may be anything.
 */
static inline void
fuzz_exercise_view(const pl_view *view, uint64_t seed)
{
	uint64_t	rng = seed;
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
	uint32_t   *all = fuzz_alloc_u32(view->count);
	pl_cursor	cur;
	uint32_t	got = 0;
	uint32_t	n = view->count;
	uint32_t	cap = pl_block_capacity(view);
	pl_status	decoded;
	pl_status	valid;
	volatile uint32_t sink = 0;

	valid = pl_validate(view);
	decoded = pl_decode(view, all);
	FUZZ_CHECK(decoded == PL_OK || decoded == PL_ERR_ORDER, "decode: %s", pl_status_message(decoded));
	FUZZ_CHECK(decoded != PL_OK || ref_sorted_distinct(all, n), "a list that decoded is out of order");
	FUZZ_CHECK(valid != PL_OK || decoded == PL_OK, "a list that validated does not decode");
	FUZZ_CHECK(valid == PL_OK || decoded != PL_OK || view->codec == GPUIDX_CODEC_LRC,
			   "a %s list decodes but does not validate: %s", fuzz_codec_names[view->codec],
			   pl_status_message(valid));
	for (uint32_t b = 0; b < view->nblocks; b++)
	{
		int			len = pl_decode_block(view, b, buf);

		sink += pl_block_first(view, b) + pl_block_len(view, b);
		FUZZ_CHECK(len < 0 || (len > 0 && (uint32_t) len == pl_block_len(view, b) && len <= (int) cap &&
							   ref_sorted_distinct(buf, (uint32_t) len) && buf[0] == pl_block_first(view, b) &&
							   buf[len - 1] <= pl_block_limit(view, b)),
				   "block %u decoded (%d postings) but is not a sorted run of the block", b, len);
	}
	for (uint32_t k = 0; k < 128 && k < n; k++)
		sink += pl_get(view, fuzz_sample(&rng, k, n, 128));
	for (uint32_t k = 0; k < 128; k++)
	{
		uint64_t	r = fuzz_rand(&rng);
		uint32_t	x;
		bool		found = false;
		pl_status	st;

		if (n > 0 && (k & 1))
			x = all[r % n] + (uint32_t) ((r >> 40) % 3) - 1;
		else
			x = k == 0 ? 0 : k == 2 ? UINT32_MAX : (uint32_t) (r >> 32);
		st = pl_contains(view, x, &found);
		FUZZ_CHECK(st == PL_OK || st == PL_ERR_ORDER, "contains: %s", pl_status_message(st));
		/* on a list that decoded, membership is the decode's, or damage is reported */
		if (decoded == PL_OK && st == PL_OK)
			FUZZ_CHECK(found == ref_contains(all, n, x), "contains(%u) wrong on a list that decodes", x);
		sink += found;
		if (view->nblocks > 0)
			sink += (uint32_t) pl_find_block(view, (uint32_t) (r % view->nblocks), x);
	}

	/* walk 1: id after id, as a merge-like consumer reads */
	pl_cursor_init(&cur, view);
	for (uint32_t i = 0, x = 0; i <= n + 1; i++)
	{
		if (!pl_cursor_next_geq(&cur, x, &got))
		{
			FUZZ_CHECK(cur.status == PL_OK || cur.status == PL_ERR_ORDER, "cursor: %s",
					   pl_status_message(cur.status));
			/* an LRC deviation past its bound may decode in order yet be reported here */
			FUZZ_CHECK(decoded != PL_OK || cur.status != PL_OK || i == n,
					   "walk of a list that decodes ends at %u of %u", i, n);
			break;
		}
		FUZZ_CHECK(got >= x && (decoded != PL_OK || got == all[i]), "walk %u: %u for target %u", i, got, x);
		if (got == UINT32_MAX)
			break;
		x = got + 1;
	}
	/* walk 2: increasing targets; walk 3: any targets, answers never going back */
	pl_cursor_init(&cur, view);
	for (uint64_t step = 0, x = 0; step < 512 && x <= UINT32_MAX; step++, x += fuzz_step(&rng))
	{
		if (!pl_cursor_next_geq(&cur, (uint32_t) x, &got))
			break;
		FUZZ_CHECK(got >= x, "next_geq(%llu) = %u", (unsigned long long) x, got);
	}
	pl_cursor_init(&cur, view);
	{
		bool		any = false;
		uint32_t	prev = 0;

		for (uint32_t step = 0; step < 128; step++)
		{
			uint64_t	r = fuzz_rand(&rng);
			uint32_t	x = n > 0 && (r & 1) ? all[(r >> 1) % n] : (uint32_t) (r >> 32);

			if (!pl_cursor_next_geq(&cur, x, &got))
				continue;
			FUZZ_CHECK(got >= x && (!any || got >= prev), "cursor went back: %u after %u (target %u)", got, prev, x);
			any = true;
			prev = got;
		}
	}
	(void) sink;
	free(all);
}

#endif							/* GPUIDX_FUZZ_COMMON_H */
