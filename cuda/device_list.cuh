/*
 * device_list.cuh
 *	  A compressed list in device memory, and reading it on the device: bit
 *	  windows, skip entries, one posting, a search inside a block.  The layout is gpuidx_format.h's; the arithmetic is the CPU
 *	  codecs' (src/codec), so both give the same postings bit for bit.
 *
 * Only lists the host opened (pl_open: structure and checksum) come here,
 * so every EF block has fewer than 32 low bits and 32-bit shifts by l are
 * defined.  Unlike the CPU codecs, nothing here checks the order of what
 * it decodes: a list damaged behind a valid checksum is the host's to
 * reject before it is sent.
 */
#ifndef GPUIDX_DEVICE_LIST_CUH
#define GPUIDX_DEVICE_LIST_CUH

#include <stdint.h>

#include "gpuidx_format.h"

/*
 * Everything here also compiles for the host, so that tests without a GPU
 * (cuda/test_host.cu, run in CI) exercise the same code the kernels run.
 */
#define GPUIDX_DEV __host__ __device__ __forceinline__

#ifdef __CUDA_ARCH__
#define dev_load(p) __ldg(p)
/* a loop of a constant count unrolled, so the arrays it indexes stay in registers */
#define GPUIDX_UNROLL _Pragma("unroll")
#define dev_popc64(w) ((uint32_t) __popcll(w))
#define dev_ctz64(w) ((uint32_t) (__ffsll((long long) (w)) - 1))
#else
#define dev_load(p) (*(p))
#define GPUIDX_UNROLL
#define dev_popc64(w) ((uint32_t) __builtin_popcountll(w))
#define dev_ctz64(w) ((uint32_t) __builtin_ctzll(w))
#endif

/* where a list's parts are in device memory; built on the host from its header */
struct list_desc
{
	const uint32_t *block_first;	/* EF skip entries; raw: the values */
	const uint32_t *block_bitoff;	/* EF */
	const gpuidx_lrc_segment *segs; /* LRC */
	const uint64_t *data;			/* EF/LRC data area, 8-byte aligned */
	uint32_t	count;
	uint32_t	last;
	uint32_t	nblocks;
	uint32_t	codec;
};

#ifdef GPUIDX_CODEC_H
/*
 * Host side: where an opened list's parts are, relative to its first byte;
 * then, for a copy of the list at base (device or host memory), absolute.
 */
static inline list_desc
relative_desc(const pl_view *v, const uint8_t *bytes)
{
	list_desc	d;

	memset(&d, 0, sizeof(d));
	d.count = v->count;
	d.last = v->last;
	d.nblocks = v->nblocks;
	d.codec = (uint32_t) v->codec;
	if (v->codec == GPUIDX_CODEC_RAW)
		d.block_first = (const uint32_t *) ((const uint8_t *) v->values - bytes);
	else if (v->codec == GPUIDX_CODEC_EF)
	{
		d.block_first = (const uint32_t *) ((const uint8_t *) v->block_first - bytes);
		d.block_bitoff = (const uint32_t *) ((const uint8_t *) v->block_bitoff - bytes);
	}
	else
		d.segs = (const gpuidx_lrc_segment *) ((const uint8_t *) v->segs - bytes);
	if (v->codec != GPUIDX_CODEC_RAW)
		d.data = (const uint64_t *) (v->data - bytes);
	return d;
}

static inline list_desc
absolute_desc(const list_desc &rel, const uint8_t *base)
{
	list_desc	d = rel;

	d.block_first = rel.block_first ? (const uint32_t *) (base + (uintptr_t) rel.block_first) : NULL;
	d.block_bitoff = rel.block_bitoff ? (const uint32_t *) (base + (uintptr_t) rel.block_bitoff) : NULL;
	d.segs = rel.segs ? (const gpuidx_lrc_segment *) (base + (uintptr_t) rel.segs) : NULL;
	d.data = rel.data ? (const uint64_t *) (base + (uintptr_t) rel.data) : NULL;
	return d;
}
#endif

/* 64 bits from bit position pos (the guard word keeps word + 1 in bounds) */
GPUIDX_DEV uint64_t
dev_window(const uint64_t *data, uint64_t pos)
{
	uint64_t	word = pos >> 6;
	unsigned	shift = (unsigned) (pos & 63);
	uint64_t	lo = dev_load(&data[word]);

	if (shift == 0)
		return lo;
	return (lo >> shift) | (dev_load(&data[word + 1]) << (64 - shift));
}

GPUIDX_DEV uint32_t
dev_bits(const uint64_t *data, uint64_t pos, unsigned width)
{
	return (uint32_t) (dev_window(data, pos) & ((UINT64_C(1) << width) - 1));
}

GPUIDX_DEV uint32_t
dev_block_len(const list_desc &d, uint32_t b)
{
	return d.codec == GPUIDX_CODEC_LRC ? gpuidx_lrc_segment_len(d.count, b)
		: gpuidx_ef_block_len(d.count, b);
}

GPUIDX_DEV uint32_t
dev_block_first(const list_desc &d, uint32_t b)
{
	switch (d.codec)
	{
		case GPUIDX_CODEC_RAW:
			return dev_load(&d.block_first[(size_t) b * GPUIDX_EF_BLOCK]);
		case GPUIDX_CODEC_EF:
			return dev_load(&d.block_first[b]);
		default:
			return dev_load(&d.segs[b].first);
	}
}

/* one past the largest posting block b may hold (inclusive bound + 1, 64-bit) */
GPUIDX_DEV uint64_t
dev_block_end(const list_desc &d, uint32_t b)
{
	return b + 1 < d.nblocks ? (uint64_t) dev_block_first(d, b + 1) : (uint64_t) d.last + 1;
}

GPUIDX_DEV uint32_t
dev_lrc_value(const list_desc &d, const gpuidx_lrc_segment *seg, uint32_t i)
{
	int64_t		intercept = gpuidx_lrc_intercept(seg);
	uint64_t	slope = gpuidx_lrc_slope(seg);

	return (uint32_t) (gpuidx_lrc_line(intercept, slope, i) +
					   dev_bits(d.data, seg->bitoff + (uint64_t) i * seg->width, seg->width));
}

/* first i in [from, n) with line(i) + extra >= x: LRC's bounds on v_i */
GPUIDX_DEV uint32_t
dev_line_reaches(int64_t intercept, uint64_t slope, int64_t extra, uint32_t from, uint32_t n,
				 uint32_t x)
{
	uint32_t	lo = from;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (gpuidx_lrc_line(intercept, slope, mid) + extra >= (int64_t) x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* position just after the h-th (1-based) zero of [pos, pos + nbits), 0 for h == 0, or -1 */
GPUIDX_DEV int64_t
dev_after_zeros(const uint64_t *data, uint64_t pos, uint64_t nbits, uint64_t h)
{
	if (h == 0)
		return 0;
	for (uint64_t base = 0; base < nbits; base += 64)
	{
		uint64_t	avail = nbits - base < 64 ? nbits - base : 64;
		uint64_t	z = ~dev_window(data, pos + base);
		uint32_t	zeros;

		if (avail < 64)
			z &= (UINT64_C(1) << avail) - 1;
		zeros = dev_popc64(z);
		if (h <= zeros)
		{
			while (--h > 0)
				z &= z - 1;
			return (int64_t) (base + (uint64_t) dev_ctz64(z) + 1);
		}
		h -= zeros;
	}
	return -1;
}

/*
 * Is x in block b (x within the block's range, not its first posting)?
 * EF: select over the unary field to x's bucket, then compare the few
 * postings there; bitmap: one bit; LRC: binary search between the bounds
 * the line and the largest deviation give (Ao et al.'s range contraction);
 * raw: binary search.  Reads only what the answer needs.
 */
GPUIDX_DEV bool
dev_block_contains(const list_desc &d, uint32_t b, uint32_t x)
{
	uint32_t	n = dev_block_len(d, b);
	uint32_t	first = dev_block_first(d, b);

	if (d.codec == GPUIDX_CODEC_RAW)
	{
		const uint32_t *v = d.block_first + (size_t) b * GPUIDX_EF_BLOCK;
		uint32_t	lo = 0,
					hi = n;

		while (lo < hi)
		{
			uint32_t	mid = (lo + hi) / 2;

			if (dev_load(&v[mid]) < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < n && dev_load(&v[lo]) == x;
	}
	if (d.codec == GPUIDX_CODEC_LRC)
	{
		const gpuidx_lrc_segment *seg = &d.segs[b];
		int64_t		intercept = gpuidx_lrc_intercept(seg);
		uint64_t	slope = gpuidx_lrc_slope(seg);
		uint32_t	lo = dev_line_reaches(intercept, slope, seg->max_dev, 0, n, x);
		uint32_t	hi = dev_line_reaches(intercept, slope, 0, lo, n, x);

		while (lo < hi)
		{
			uint32_t	mid = (lo + hi) / 2;

			if (dev_lrc_value(d, seg, mid) < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < n && dev_lrc_value(d, seg, lo) == x;
	}
	{
		uint64_t	universe = dev_block_end(d, b) - first;
		uint64_t	pos = dev_load(&d.block_bitoff[b]);
		uint64_t	rel = (uint64_t) x - first;
		uint32_t	l;
		uint64_t	field;
		uint64_t	nbits;
		int64_t		start;
		uint32_t	j;

		switch (gpuidx_ef_block_kind(universe, n))
		{
			case GPUIDX_EF_RUN:
				return rel < n;
			case GPUIDX_EF_BITMAP:
				return rel < universe && ((dev_window(d.data, pos + rel) & 1) != 0);
			default:
				break;
		}
		l = gpuidx_ef_low_bits(universe, n);
		field = pos + (uint64_t) n * l;
		nbits = gpuidx_ef_high_bits(universe, n, l);
		start = dev_after_zeros(d.data, field, nbits, rel >> l);
		if (start < 0)
			return false;
		j = (uint32_t) ((uint64_t) start - (rel >> l));
		for (uint64_t base = (uint64_t) start; base < nbits && j < n; base += 64)
		{
			uint64_t	w = dev_window(d.data, field + base);

			if (nbits - base < 64)
				w &= (UINT64_C(1) << (nbits - base)) - 1;
			while (w != 0 && j < n)
			{
				uint32_t	p = (uint32_t) (base + (uint64_t) dev_ctz64(w));
				uint32_t	v = first + (((p - j) << l) | dev_bits(d.data, pos + (uint64_t) j * l, l));

				if (v >= x)
					return v == x;
				j++;
				w &= w - 1;
			}
		}
		return false;
	}
}

#endif							/* GPUIDX_DEVICE_LIST_CUH */
