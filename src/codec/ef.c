/*
 * ef.c
 *	  Partitioned Elias-Fano: 128-posting blocks, each coded as a run, a
 *	  bitmap or Elias-Fano low/high bits relative to its skip entry
 *	  (layout: include/gpuidx_format.h).
 */
#include "codec.h"
#include "bits.h"

#include <stdbool.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* the universe of block b of n values */
static inline uint64_t
ef_universe_of(const uint32_t *values, uint32_t n, uint32_t block)
{
	uint32_t	start = block * GPUIDX_EF_BLOCK;
	uint32_t	len = gpuidx_ef_block_len(n, block);

	if (start + len < n)
		return (uint64_t) values[start + len] - values[start];
	return (uint64_t) values[n - 1] - values[start] + 1;
}

static inline uint64_t
ef_universe64(const pl_view *view, uint32_t block)
{
	if (block + 1 < view->nblocks)
		return (uint64_t) view->block_first[block + 1] - view->block_first[block];
	return (uint64_t) view->last - view->block_first[block] + 1;
}

static uint64_t
ef_data_bits(const uint32_t *values, uint32_t n)
{
	uint32_t	nb = gpuidx_ef_block_count(n);
	uint64_t	bits = 0;

	for (uint32_t b = 0; b < nb; b++)
		bits += gpuidx_ef_block_bits(ef_universe_of(values, n, b),
									 gpuidx_ef_block_len(n, b));
	return bits;
}

size_t
ef_encoded_size(const uint32_t *values, uint32_t n)
{
	uint32_t	nb = gpuidx_ef_block_count(n);

	return (size_t) nb * 8 + gpuidx_data_area_bytes(ef_data_bits(values, n));
}

uint64_t
ef_encode_block(const uint32_t *v, uint32_t n, uint64_t universe, uint8_t *data, uint64_t pos)
{
	uint32_t	first = v[0];

	switch (gpuidx_ef_block_kind(universe, n))
	{
		case GPUIDX_EF_RUN:
			break;
		case GPUIDX_EF_BITMAP:
			for (uint32_t j = 0; j < n; j++)
				bits_set(data, pos + (v[j] - first));
			break;
		default:
			{
				uint32_t	l = gpuidx_ef_low_bits(universe, n);
				uint64_t	high = pos + (uint64_t) n * l;

				for (uint32_t j = 0; j < n; j++)
				{
					uint32_t	x = v[j] - first;

					bits_put_at(data, pos + (uint64_t) j * l, x, l);
					bits_set(data, high + (x >> l) + j);
				}
			}
			break;
	}
	return gpuidx_ef_block_bits(universe, n);
}

size_t
ef_encode(const uint32_t *values, uint32_t n, uint8_t *payload)
{
	uint32_t	nb = gpuidx_ef_block_count(n);
	uint32_t   *block_first = (uint32_t *) payload;
	uint32_t   *block_bitoff = block_first + nb;
	uint8_t    *data = payload + (size_t) nb * 8;
	uint64_t	pos = 0;
	size_t		area_bytes = gpuidx_data_area_bytes(ef_data_bits(values, n));

	memset(data, 0, area_bytes);
	for (uint32_t b = 0; b < nb; b++)
	{
		const uint32_t *v = values + (size_t) b * GPUIDX_EF_BLOCK;

		block_first[b] = v[0];
		block_bitoff[b] = (uint32_t) pos;
		pos += ef_encode_block(v, gpuidx_ef_block_len(n, b), ef_universe_of(values, n, b), data, pos);
	}
	return (size_t) nb * 8 + area_bytes;
}

pl_status
ef_check(pl_view *view, const uint8_t *payload, size_t len)
{
	uint32_t	nb = gpuidx_ef_block_count(view->count);
	uint64_t	bits = 0;
	size_t		area_bytes;

	if (len < (size_t) nb * 8)
		return PL_ERR_LENGTH;
	view->nblocks = nb;
	view->block_first = (const uint32_t *) payload;
	view->block_bitoff = view->block_first + nb;
	view->data = payload + (size_t) nb * 8;

	for (uint32_t b = 0; b < nb; b++)
	{
		uint32_t	n = gpuidx_ef_block_len(view->count, b);
		uint32_t	first = view->block_first[b];
		uint64_t	universe;

		if (b + 1 < nb)
		{
			if (view->block_first[b + 1] <= first)
				return PL_ERR_STRUCTURE;
		}
		else if (view->last < first)
			return PL_ERR_STRUCTURE;
		universe = ef_universe64(view, b);
		if (universe < n || view->block_bitoff[b] != bits)
			return PL_ERR_STRUCTURE;
		/* 32 low bits (one posting in 2^32) would shift a uint32 by 32 */
		if (gpuidx_ef_block_kind(universe, n) == GPUIDX_EF_ELIAS_FANO &&
			gpuidx_ef_low_bits(universe, n) >= 32)
			return PL_ERR_STRUCTURE;
		bits += gpuidx_ef_block_bits(universe, n);
		if (bits > UINT32_MAX)
			return PL_ERR_STRUCTURE;
	}
	area_bytes = len - (size_t) nb * 8;
	if (area_bytes != gpuidx_data_area_bytes(bits))
		return PL_ERR_LENGTH;
	view->data_bits = bits;
	return ef_check_tail(view);
}

pl_status
ef_check_tail(const pl_view *view)
{
	uint64_t	bits = view->data_bits;
	size_t		area_bytes = gpuidx_data_area_bytes(bits);

	/* the padding after the last block and the guard word must be zero */
	if (bits % 64 != 0 && (bits_window(view->data, bits) & ((UINT64_C(1) << (64 - bits % 64)) - 1)) != 0)
		return PL_ERR_STRUCTURE;
	if (bits_load64(view->data + area_bytes - 8) != 0)
		return PL_ERR_STRUCTURE;
	/* the final block must end on the header's last posting */
	if (view->nblocks > 0)
	{
		uint32_t	buf[GPUIDX_EF_BLOCK];
		int			n = ef_decode_block(view, view->nblocks - 1, buf);

		if (n < 0 || buf[n - 1] != view->last)
			return PL_ERR_STRUCTURE;
	}
	return PL_OK;
}

/*
 * Unpack n l-bit values starting at bit pos.  Full blocks go through a copy
 * of the loop specialised for each l (the shifts become constants and the
 * loop unrolls), after the low-bit field is shifted to word alignment.
 */
static inline __attribute__((always_inline)) void
ef_unpack_fixed(const uint64_t *w, uint32_t *out, const unsigned l)
{
	const uint64_t mask = (UINT64_C(1) << l) - 1;

#pragma GCC unroll 64
	for (unsigned j = 0; j < 64; j++)
	{
		unsigned	bit = j * l;
		unsigned	word = bit >> 6;
		unsigned	shift = bit & 63;
		uint64_t	v = w[word] >> shift;

		if (shift + l > 64)
			v |= w[word + 1] << (64 - shift);
		out[j] = (uint32_t) (v & mask);
	}
}

#define EF_UNPACK_CASE(L) \
	case L: \
		ef_unpack_fixed(w, out, L); \
		ef_unpack_fixed(w + L, out + 64, L); \
		break

static void
ef_unpack_low(const uint8_t *data, uint64_t pos, uint32_t n, unsigned l, uint32_t *out)
{
	uint64_t	w[2 * 31 + 1];
	uint64_t	mask = (UINT64_C(1) << l) - 1;

	if (n != GPUIDX_EF_BLOCK)
	{
		for (uint32_t j = 0; j < n; j++)
			out[j] = (uint32_t) (bits_window(data, pos + (uint64_t) j * l) & mask);
		return;
	}
	for (unsigned k = 0; k < 2 * l; k++)
		w[k] = bits_window(data, pos + 64 * (uint64_t) k);
	w[2 * l] = 0;
	switch (l)
	{
		case 0:
			memset(out, 0, GPUIDX_EF_BLOCK * sizeof(uint32_t));
			break;
			EF_UNPACK_CASE(1); EF_UNPACK_CASE(2); EF_UNPACK_CASE(3); EF_UNPACK_CASE(4);
			EF_UNPACK_CASE(5); EF_UNPACK_CASE(6); EF_UNPACK_CASE(7); EF_UNPACK_CASE(8);
			EF_UNPACK_CASE(9); EF_UNPACK_CASE(10); EF_UNPACK_CASE(11); EF_UNPACK_CASE(12);
			EF_UNPACK_CASE(13); EF_UNPACK_CASE(14); EF_UNPACK_CASE(15); EF_UNPACK_CASE(16);
			EF_UNPACK_CASE(17); EF_UNPACK_CASE(18); EF_UNPACK_CASE(19); EF_UNPACK_CASE(20);
			EF_UNPACK_CASE(21); EF_UNPACK_CASE(22); EF_UNPACK_CASE(23); EF_UNPACK_CASE(24);
			EF_UNPACK_CASE(25); EF_UNPACK_CASE(26); EF_UNPACK_CASE(27); EF_UNPACK_CASE(28);
			EF_UNPACK_CASE(29); EF_UNPACK_CASE(30); EF_UNPACK_CASE(31);
	}
}

/*
 * Positions of the set bits of each byte value, and their number: the unary
 * high field is read a byte at a time, every byte giving up to eight
 * positions with one table load and one 16-byte store (no branch per bit).
 */
static uint16_t ef_byte_positions[256][8];
static uint8_t ef_byte_ones[256];

/* filled when the object is loaded, before any thread can decode */
__attribute__((constructor))
static void
ef_build_tables(void)
{
	for (int b = 0; b < 256; b++)
	{
		int			k = 0;

		for (int bit = 0; bit < 8; bit++)
			if (b & (1 << bit))
				ef_byte_positions[b][k++] = (uint16_t) bit;
		ef_byte_ones[b] = (uint8_t) k;
	}
}

/*
 * Positions of the set bits of the unary field [pos, pos + nbits) into
 * hp[0..n) (hp has 8 slots of slack for the table stores).  Returns -1
 * unless exactly n bits are set.
 */
static int
ef_high_positions(const uint8_t *data, uint64_t pos, uint64_t nbits, uint32_t n,
				  uint16_t *hp)
{
	uint32_t	j = 0;

	for (uint64_t base = 0; base < nbits; base += 64)
	{
		uint64_t	w = bits_window(data, pos + base);

		if (nbits - base < 64)
			w &= (UINT64_C(1) << (nbits - base)) - 1;
		for (int byte = 0; byte < 8 && w != 0; byte++, w >>= 8)
		{
			unsigned	b = (unsigned) (w & 0xff);
			uint16_t	offset = (uint16_t) (base + 8 * byte);

			if (j > n)
				return -1;
#ifdef __SSE2__
			_mm_storeu_si128((__m128i *) (hp + j),
							 _mm_add_epi16(_mm_loadu_si128((const __m128i *) ef_byte_positions[b]),
										   _mm_set1_epi16((short) offset)));
#else
			for (int k = 0; k < 8; k++)
				hp[j + k] = (uint16_t) (ef_byte_positions[b][k] + offset);
#endif
			j += ef_byte_ones[b];
		}
	}
	return j == n ? (int) n : -1;
}

/*
 * A bitmap block: the set bits' positions are the offsets from first, so
 * they increase and stay in the universe; the first must be the skip entry.
 */
static int
ef_decode_bitmap(const uint8_t *data, uint64_t pos, uint64_t universe,
				 uint32_t first, uint32_t n, uint32_t *out)
{
	uint16_t	hp[GPUIDX_EF_BLOCK + 8];

	if (ef_high_positions(data, pos, universe, n, hp) < 0 || hp[0] != 0)
		return -1;
	for (uint32_t j = 0; j < n; j++)
		out[j] = first + hp[j];
	return (int) n;
}

/* Elias-Fano: low bits, high bits, then one pass that joins them */
static int
ef_decode_elias_fano(const uint8_t *data, uint64_t pos, uint64_t universe,
					 uint32_t first, uint32_t n, uint32_t *out)
{
	uint32_t	l = gpuidx_ef_low_bits(universe, n);
	uint16_t	hp[GPUIDX_EF_BLOCK + 8];

	if (ef_high_positions(data, pos + (uint64_t) n * l,
						  gpuidx_ef_high_bits(universe, n, l), n, hp) < 0)
		return -1;
	ef_unpack_low(data, pos, n, l, out);
	{
		uint32_t	j = 0;

#ifdef __SSE2__
		__m128i		vfirst = _mm_set1_epi32((int) first);
		__m128i		vj = _mm_setr_epi32(0, 1, 2, 3);
		__m128i		shift = _mm_cvtsi32_si128((int) l);

		for (; j + 4 <= n; j += 4)
		{
			__m128i		h = _mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *) (hp + j)),
											   _mm_setzero_si128());
			__m128i		low = _mm_loadu_si128((const __m128i *) (out + j));

			h = _mm_sll_epi32(_mm_sub_epi32(h, vj), shift);
			_mm_storeu_si128((__m128i *) (out + j), _mm_add_epi32(vfirst, _mm_or_si128(h, low)));
			vj = _mm_add_epi32(vj, _mm_set1_epi32(4));
		}
#endif
		for (; j < n; j++)
			out[j] = first + ((((uint32_t) hp[j] - j) << l) | out[j]);
	}

	/*
	 * The high parts never decrease, but damaged low bits can break the
	 * order and a value can leave the universe (wrapping past 2^32 too):
	 * strictly increasing from the skip entry to first + U - 1, or damaged.
	 */
	if (out[0] != first || !bits_ascending_u32(out, n) || (uint64_t) out[n - 1] - first >= universe)
		return -1;
	return (int) n;
}

int
ef_decode_block(const pl_view *view, uint32_t block, uint32_t *out)
{
	uint32_t	n = gpuidx_ef_block_len(view->count, block);
	uint32_t	first = view->block_first[block];
	uint64_t	universe = ef_universe64(view, block);
	uint64_t	pos = view->block_bitoff[block];

	switch (gpuidx_ef_block_kind(universe, n))
	{
		case GPUIDX_EF_RUN:
			for (uint32_t j = 0; j < n; j++)
				out[j] = first + j;
			return (int) n;
		case GPUIDX_EF_BITMAP:
			return ef_decode_bitmap(view->data, pos, universe, first, n, out);
		default:
			return ef_decode_elias_fano(view->data, pos, universe, first, n, out);
	}
}

/*
 * Searching one block without decoding it: select over the unary field.
 * A next_geq probe into a block reads the high-bit words up to its bucket and
 * the low bits of the few postings it compares, not all 128 postings.
 */

/* position of the k-th (0-based) set bit of the field [pos, pos + nbits), or -1 */
static int64_t
ef_select1(const uint8_t *data, uint64_t pos, uint64_t nbits, uint32_t k)
{
	for (uint64_t base = 0; base < nbits; base += 64)
	{
		uint64_t	w = bits_window(data, pos + base);
		uint32_t	ones;

		if (nbits - base < 64)
			w &= (UINT64_C(1) << (nbits - base)) - 1;
		ones = (uint32_t) bits_popcount64(w);
		if (k < ones)
		{
			while (k-- > 0)
				w &= w - 1;
			return (int64_t) (base + (uint64_t) bits_ctz64(w));
		}
		k -= ones;
	}
	return -1;
}

/* position just after the h-th (1-based) zero of the field, or -1; 0 for h == 0 */
static int64_t
ef_after_zeros(const uint8_t *data, uint64_t pos, uint64_t nbits, uint64_t h)
{
	if (h == 0)
		return 0;
	for (uint64_t base = 0; base < nbits; base += 64)
	{
		uint64_t	avail = nbits - base < 64 ? nbits - base : 64;
		uint64_t	z = ~bits_window(data, pos + base);
		uint32_t	zeros;

		if (avail < 64)
			z &= (UINT64_C(1) << avail) - 1;
		zeros = (uint32_t) bits_popcount64(z);
		if (h <= zeros)
		{
			while (--h > 0)
				z &= z - 1;
			return (int64_t) (base + (uint64_t) bits_ctz64(z) + 1);
		}
		h -= zeros;
	}
	return -1;
}

uint32_t
ef_get(const pl_view *view, uint32_t i)
{
	uint32_t	b = i / GPUIDX_EF_BLOCK;
	uint32_t	j = i % GPUIDX_EF_BLOCK;
	uint32_t	n = gpuidx_ef_block_len(view->count, b);
	uint32_t	first = view->block_first[b];
	uint64_t	universe = ef_universe64(view, b);
	uint64_t	pos = view->block_bitoff[b];
	uint32_t	l;
	int64_t		p;

	switch (gpuidx_ef_block_kind(universe, n))
	{
		case GPUIDX_EF_RUN:
			return first + j;
		case GPUIDX_EF_BITMAP:
			p = ef_select1(view->data, pos, universe, j);
			return first + (uint32_t) (p < 0 ? 0 : p);
		default:
			l = gpuidx_ef_low_bits(universe, n);
			p = ef_select1(view->data, pos + (uint64_t) n * l,
						   gpuidx_ef_high_bits(universe, n, l), j);
			return first + ((((uint32_t) (p < 0 ? 0 : p) - j) << l) |
							bits_get(view->data, pos + (uint64_t) j * l, l));
	}
}

uint32_t
ef_block_lower_bound(const pl_view *view, uint32_t b, uint32_t from, uint32_t x,
					 uint32_t *value)
{
	uint32_t	n = gpuidx_ef_block_len(view->count, b);
	uint32_t	first = view->block_first[b];
	uint64_t	universe = ef_universe64(view, b);
	uint64_t	pos = view->block_bitoff[b];
	uint64_t	rel = x > first ? (uint64_t) x - first : 0;
	bool		bitmap = false;
	uint32_t	l = 0;
	uint64_t	field;
	uint64_t	nbits;
	uint64_t	start;
	uint32_t	j = 0;
	int64_t		after;

	switch (gpuidx_ef_block_kind(universe, n))
	{
		case GPUIDX_EF_RUN:
			j = rel > from ? (uint32_t) (rel < n ? rel : n) : from;
			if (j < n)
				*value = first + j;
			return j;
		case GPUIDX_EF_BITMAP:
			/* postings below x are the set bits before position rel */
			bitmap = true;
			field = pos;
			nbits = universe;
			start = rel;
			for (uint64_t base = 0; base < rel; base += 64)
			{
				uint64_t	w = bits_window(view->data, pos + base);

				if (rel - base < 64)
					w &= (UINT64_C(1) << (rel - base)) - 1;
				j += (uint32_t) bits_popcount64(w);
			}
			break;
		default:
			/* postings below x's bucket are the set bits before its (rel >> l)-th zero */
			l = gpuidx_ef_low_bits(universe, n);
			field = pos + (uint64_t) n * l;
			nbits = gpuidx_ef_high_bits(universe, n, l);
			after = ef_after_zeros(view->data, field, nbits, rel >> l);
			if (after < 0)
				return n;
			start = (uint64_t) after;
			j = (uint32_t) (start - (rel >> l));
			break;
	}
	/*
	 * Walk the set bits from start, comparing postings, until one reaches x.
	 * Each posting met must exceed the one before and stay in the block's
	 * universe; the first one of the block must be its skip entry.
	 */
	{
		/* what the next posting must exceed: first - 1 at j == 0, else first */
		int64_t		prev = (int64_t) first - (j == 0 ? 1 : 0);

		for (uint64_t base = start; base < nbits && j < n; base += 64)
		{
			uint64_t	w = bits_window(view->data, field + base);

			if (nbits - base < 64)
				w &= (UINT64_C(1) << (nbits - base)) - 1;
			while (w != 0 && j < n)
			{
				uint64_t	p = base + (uint64_t) bits_ctz64(w);
				uint64_t	off = bitmap ? p
					: (((p - j) << l) | bits_get(view->data, pos + (uint64_t) j * l, l));
				uint64_t	v = (uint64_t) first + off;

				if (off >= universe || (j == 0 && off != 0) || (int64_t) v <= prev)
					return PL_SEARCH_CORRUPT;
				if (j >= from && v >= x)
				{
					*value = (uint32_t) v;
					return j;
				}
				prev = (int64_t) v;
				j++;
				w &= w - 1;
			}
		}
	}
	return n;
}
