/*
 * bits.h
 *	  Little-endian bit-stream reading and writing over uint64 words that may
 *	  sit at any 4-byte aligned address (inside a varlena, for instance).
 *
 * Readers may touch the word after the last one holding wanted bits: every
 * data area ends with a zero guard word (gpuidx_format.h), so they never
 * leave it.
 */
#ifndef GPUIDX_BITS_H
#define GPUIDX_BITS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpuidx's codecs assume a little-endian host"
#endif

static inline uint64_t
bits_load64(const uint8_t *p)
{
	uint64_t	w;

	memcpy(&w, p, sizeof(w));
	return w;
}

static inline uint32_t
bits_load32(const uint8_t *p)
{
	uint32_t	w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/* 64 bits starting at bit position pos of the area */
static inline uint64_t
bits_window(const uint8_t *area, uint64_t pos)
{
	uint64_t	word = pos >> 6;
	unsigned	shift = (unsigned) (pos & 63);
	uint64_t	lo = bits_load64(area + word * 8);

	if (shift == 0)
		return lo;
	return (lo >> shift) | (bits_load64(area + word * 8 + 8) << (64 - shift));
}

/* width (0..32) bits at bit position pos */
static inline uint32_t
bits_get(const uint8_t *area, uint64_t pos, unsigned width)
{
	uint64_t	mask = (UINT64_C(1) << width) - 1;

	return (uint32_t) (bits_window(area, pos) & mask);
}

static inline int
bits_ctz64(uint64_t w)
{
	return __builtin_ctzll(w);
}

static inline int
bits_popcount64(uint64_t w)
{
	return __builtin_popcountll(w);
}

/* number of bits needed for v (0 for 0) */
static inline unsigned
bits_width(uint64_t v)
{
	return v == 0 ? 0 : 64 - (unsigned) __builtin_clzll(v);
}

/*
 * Writer into a zeroed area of uint64 words.  Each put ORs bits in, so the
 * area must start as zeros (the encoders memset it).
 */
typedef struct bits_writer
{
	uint8_t    *area;
	uint64_t	pos;
} bits_writer;

static inline void
bits_or64(uint8_t *p, uint64_t v)
{
	uint64_t	w;

	memcpy(&w, p, sizeof(w));
	w |= v;
	memcpy(p, &w, sizeof(w));
}

/* put the low width (0..32) bits of v at bit position pos */
static inline void
bits_put_at(uint8_t *area, uint64_t pos, uint64_t v, unsigned width)
{
	uint64_t	word = pos >> 6;
	unsigned	shift = (unsigned) (pos & 63);

	if (width == 0)
		return;
	v &= (UINT64_C(1) << width) - 1;
	bits_or64(area + word * 8, v << shift);
	if (shift + width > 64)
		bits_or64(area + word * 8 + 8, v >> (64 - shift));
}

static inline void
bits_set(uint8_t *area, uint64_t pos)
{
	area[pos >> 3] |= (uint8_t) (1u << (pos & 7));
}

/*
 * Is v[0..n) strictly increasing?  Decoders call it on every block, so it
 * runs four comparisons at a time where SSE2 is there (unsigned, through
 * flipping the sign bits).
 */
static inline bool
bits_ascending_u32(const uint32_t *v, uint32_t n)
{
	uint32_t	i = 1;
	uint32_t	bad = 0;

#ifdef __SSE2__
	__m128i		sign = _mm_set1_epi32((int) 0x80000000u);
	__m128i		acc = _mm_setzero_si128();

	for (; i + 4 <= n; i += 4)
	{
		__m128i		prev = _mm_xor_si128(_mm_loadu_si128((const __m128i *) (v + i - 1)), sign);
		__m128i		cur = _mm_xor_si128(_mm_loadu_si128((const __m128i *) (v + i)), sign);

		/* a lane where cur > prev does not hold */
		acc = _mm_or_si128(acc, _mm_andnot_si128(_mm_cmpgt_epi32(cur, prev), _mm_set1_epi32(-1)));
	}
	bad = (uint32_t) _mm_movemask_epi8(acc);
#endif
	for (; i < n; i++)
		bad |= v[i] <= v[i - 1];
	return bad == 0;
}

#endif							/* GPUIDX_BITS_H */
