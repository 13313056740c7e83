/*
 * gpuidx_format.h
 *	  The one definition of the compressed posting-list format, shared by the
 *	  C codecs, the PostgreSQL type, the index and the CUDA kernels.
 *
 * Everything here is plain C99 that also compiles as CUDA (host and device).
 * docs/FORMAT.md describes the same layout in prose; keep the two in step and
 * bump GPUIDX_FORMAT_VERSION on any change to the bytes.
 *
 * An encoded list is a byte string:
 *
 *	 gpuidx_list_header (16 bytes) | codec payload
 *
 * All multi-byte fields are little-endian.  The payload of every codec only
 * needs 4-byte alignment; 64-bit quantities are read with unaligned loads.
 */
#ifndef GPUIDX_FORMAT_H
#define GPUIDX_FORMAT_H

#include <stdint.h>

#ifdef __CUDACC__
#define GPUIDX_HOSTDEV __host__ __device__ __forceinline__
#else
#define GPUIDX_HOSTDEV static inline
#endif

#define GPUIDX_FORMAT_VERSION	1

/* codec ids, stored in the header's codec byte */
#define GPUIDX_CODEC_RAW		0	/* uint32 values, for tiny lists */
#define GPUIDX_CODEC_EF			1	/* partitioned Elias-Fano, 128-posting blocks */
#define GPUIDX_CODEC_LRC		2	/* linear regression compression, 256-posting segments */
#define GPUIDX_NUM_CODECS		3

#define GPUIDX_EF_BLOCK			128
#define GPUIDX_LRC_SEGMENT		256
#define GPUIDX_LRC_SLOPE_SHIFT	16	/* slopes are unsigned Q48.16 fixed point */
#define GPUIDX_LRC_SLOPE_MAX	((UINT64_C(1) << 48) - 1)

/*
 * Most postings one list may hold: a decoded list must fit in one
 * PostgreSQL allocation (1 GB - 1), 4 bytes a posting.
 */
#define GPUIDX_MAX_POSTINGS		UINT32_C(0x0FFFFFFF)

typedef struct gpuidx_list_header
{
	uint8_t		version;		/* GPUIDX_FORMAT_VERSION */
	uint8_t		codec;			/* GPUIDX_CODEC_* */
	uint16_t	flags;			/* must be 0 in version 1 */
	uint32_t	count;			/* number of postings */
	uint32_t	last;			/* largest posting; 0 when count == 0 */
	uint32_t	checksum;		/* CRC-32C of the whole list with this field
								 * taken as 0 */
} gpuidx_list_header;

#define GPUIDX_HEADER_SIZE		16

/*
 * EF payload, for nb = ceil(count / 128) blocks:
 *
 *	 uint32 block_first[nb]    first posting of each block (skip entries)
 *	 uint32 block_bitoff[nb]   bit offset of each block's data in the data area
 *	 data area                 uint64 words: the blocks' bits, zero padding to
 *	                           a whole word, then one zero guard word
 *
 * Block b holds n = min(128, count - 128 b) postings, all in
 * [block_first[b], block_first[b] + U) where U ("the block universe") is
 * block_first[b+1] - block_first[b] for inner blocks and
 * last - block_first[b] + 1 for the final one.  U and n alone decide how the
 * block is coded (so no per-block tag is stored):
 *
 *	 RUN     U == n: the postings are first .. first+n-1; no bits.
 *	 BITMAP  U bits, bit x set for posting first+x; when that is no larger than EF.
 *	 EF      l = floor(log2(U / n)) low bits per posting (n*l bits), then the
 *	         high parts in unary: posting j with offset x_j = v_j - first sets
 *	         bit (x_j >> l) + j of a field of n + ((U - 1) >> l) bits.
 *
 * Bits are numbered little-endian: bit k of the data area is bit (k % 64) of
 * little-endian uint64 word k / 64.
 */
#define GPUIDX_EF_RUN			0
#define GPUIDX_EF_BITMAP		1
#define GPUIDX_EF_ELIAS_FANO	2

GPUIDX_HOSTDEV uint32_t
gpuidx_ef_block_count(uint32_t count)
{
	return (count + GPUIDX_EF_BLOCK - 1) / GPUIDX_EF_BLOCK;
}

GPUIDX_HOSTDEV uint32_t
gpuidx_ef_block_len(uint32_t count, uint32_t block)
{
	uint32_t	start = block * GPUIDX_EF_BLOCK;
	uint32_t	left = count - start;

	return left < GPUIDX_EF_BLOCK ? left : GPUIDX_EF_BLOCK;
}

/* floor(log2(U / n)) for U > n, else 0 */
GPUIDX_HOSTDEV uint32_t
gpuidx_ef_low_bits(uint64_t universe, uint32_t n)
{
	/* full blocks divide by a power of two */
	uint64_t	q = n == GPUIDX_EF_BLOCK ? universe / GPUIDX_EF_BLOCK : universe / n;

	if (q <= 1)
		return 0;
#ifdef __CUDA_ARCH__
	return 63 - (uint32_t) __clzll((long long) q);
#else
	return 63 - (uint32_t) __builtin_clzll(q);
#endif
}

GPUIDX_HOSTDEV uint64_t
gpuidx_ef_high_bits(uint64_t universe, uint32_t n, uint32_t l)
{
	return (uint64_t) n + ((universe - 1) >> l);
}

GPUIDX_HOSTDEV int
gpuidx_ef_block_kind(uint64_t universe, uint32_t n)
{
	uint32_t	l;

	if (universe == n)
		return GPUIDX_EF_RUN;
	l = gpuidx_ef_low_bits(universe, n);
	if (universe <= (uint64_t) n * l + gpuidx_ef_high_bits(universe, n, l))
		return GPUIDX_EF_BITMAP;
	return GPUIDX_EF_ELIAS_FANO;
}

/* size in bits of one block's data */
GPUIDX_HOSTDEV uint64_t
gpuidx_ef_block_bits(uint64_t universe, uint32_t n)
{
	uint32_t	l;

	switch (gpuidx_ef_block_kind(universe, n))
	{
		case GPUIDX_EF_RUN:
			return 0;
		case GPUIDX_EF_BITMAP:
			return universe;
		default:
			l = gpuidx_ef_low_bits(universe, n);
			return (uint64_t) n * l + gpuidx_ef_high_bits(universe, n, l);
	}
}

/*
 * LRC payload, for ns = ceil(count / 256) segments:
 *
 *	 gpuidx_lrc_segment seg[ns]   32 bytes each
 *	 data area                    uint64 words as for EF: the segments'
 *	                              deviations, zero padding, one zero guard word
 *
 * Posting i (0-based within segment s) is
 *
 *	 v_i = intercept + ((i * slope) >> 16) + dev_i
 *
 * evaluated in 64-bit integers, with dev_i the width-bit unsigned value at
 * bit bitoff + i * width of the data area.  Every dev_i <= max_dev, so
 * line(i) <= v_i <= line(i) + max_dev: a search contracts its range with that.
 * The 64-bit fields are split in 32-bit halves so the payload needs only
 * 4-byte alignment.
 */
typedef struct gpuidx_lrc_segment
{
	uint32_t	first;			/* v_0 of the segment (skip entry) */
	uint32_t	bitoff;			/* bit offset of dev_0 in the data area */
	uint32_t	intercept_lo;	/* int64 intercept, low half */
	uint32_t	intercept_hi;	/* int64 intercept, high half */
	uint32_t	slope_lo;		/* uint64 Q48.16 slope, low half */
	uint32_t	slope_hi;		/* high half; < 2^16 */
	uint32_t	max_dev;		/* largest dev_i of the segment */
	uint32_t	width;			/* bits per deviation, 0..32 */
} gpuidx_lrc_segment;

#define GPUIDX_LRC_SEGMENT_SIZE 32

GPUIDX_HOSTDEV uint32_t
gpuidx_lrc_segment_count(uint32_t count)
{
	return (count + GPUIDX_LRC_SEGMENT - 1) / GPUIDX_LRC_SEGMENT;
}

GPUIDX_HOSTDEV uint32_t
gpuidx_lrc_segment_len(uint32_t count, uint32_t seg)
{
	uint32_t	left = count - seg * GPUIDX_LRC_SEGMENT;

	return left < GPUIDX_LRC_SEGMENT ? left : GPUIDX_LRC_SEGMENT;
}

GPUIDX_HOSTDEV int64_t
gpuidx_lrc_intercept(const gpuidx_lrc_segment *s)
{
	return (int64_t) (((uint64_t) s->intercept_hi << 32) | s->intercept_lo);
}

GPUIDX_HOSTDEV uint64_t
gpuidx_lrc_slope(const gpuidx_lrc_segment *s)
{
	return ((uint64_t) s->slope_hi << 32) | s->slope_lo;
}

/* the regression line at index i, the lower bound of v_i */
GPUIDX_HOSTDEV int64_t
gpuidx_lrc_line(int64_t intercept, uint64_t slope, uint32_t i)
{
	return intercept + (int64_t) (((uint64_t) i * slope) >> GPUIDX_LRC_SLOPE_SHIFT);
}

/* bytes of a data area that holds nbits bits: whole words plus the guard word */
GPUIDX_HOSTDEV uint64_t
gpuidx_data_area_bytes(uint64_t nbits)
{
	return ((nbits + 63) / 64) * 8 + 8;
}

#endif							/* GPUIDX_FORMAT_H */
