/*
 * ef.c
 *	  Partitioned Elias-Fano: 128-posting blocks, each coded as a run, a
 *	  bitmap or Elias-Fano low/high bits relative to its skip entry
 *	  (layout: include/gpuidx_format.h).
 */
#include "codec.h"
#include "bits.h"

#include <string.h>

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

uint32_t
ef_block_universe(const pl_view *view, uint32_t block)
{
	/* fits uint32 except for a last block spanning all 2^32 values */
	if (block + 1 < view->nblocks)
		return view->block_first[block + 1] - view->block_first[block];
	return (uint32_t) ((uint64_t) view->last - view->block_first[block] + 1);
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
		uint32_t	len = gpuidx_ef_block_len(n, b);
		uint64_t	universe = ef_universe_of(values, n, b);
		uint32_t	first = v[0];

		block_first[b] = first;
		block_bitoff[b] = (uint32_t) pos;
		switch (gpuidx_ef_block_kind(universe, len))
		{
			case GPUIDX_EF_RUN:
				break;
			case GPUIDX_EF_BITMAP:
				for (uint32_t j = 0; j < len; j++)
					bits_set(data, pos + (v[j] - first));
				break;
			default:
				{
					uint32_t	l = gpuidx_ef_low_bits(universe, len);
					uint64_t	high = pos + (uint64_t) len * l;

					for (uint32_t j = 0; j < len; j++)
					{
						uint32_t	x = v[j] - first;

						bits_put_at(data, pos + (uint64_t) j * l, x, l);
						bits_set(data, high + (x >> l) + j);
					}
				}
				break;
		}
		pos += gpuidx_ef_block_bits(universe, len);
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
		bits += gpuidx_ef_block_bits(universe, n);
		if (bits > UINT32_MAX)
			return PL_ERR_STRUCTURE;
	}
	area_bytes = len - (size_t) nb * 8;
	if (area_bytes != gpuidx_data_area_bytes(bits))
		return PL_ERR_LENGTH;
	/* the padding after the last block and the guard word must be zero */
	if (bits % 64 != 0 && (bits_window(view->data, bits) & ((UINT64_C(1) << (64 - bits % 64)) - 1)) != 0)
		return PL_ERR_STRUCTURE;
	if (bits_load64(view->data + area_bytes - 8) != 0)
		return PL_ERR_STRUCTURE;
	view->data_bits = bits;
	/* the final block must end on the header's last posting */
	if (nb > 0)
	{
		uint32_t	buf[GPUIDX_EF_BLOCK];
		int			n = ef_decode_block(view, nb - 1, buf);

		if (n < 0 || buf[n - 1] != view->last)
			return PL_ERR_STRUCTURE;
	}
	return PL_OK;
}

/* set bits of the bitmap field [pos, pos + nbits) as first + offset */
static int
ef_decode_bitmap(const uint8_t *data, uint64_t pos, uint64_t nbits,
				 uint32_t first, uint32_t n, uint32_t *out)
{
	uint32_t	j = 0;

	for (uint64_t base = 0; base < nbits && j < n; base += 64)
	{
		uint64_t	w = bits_window(data, pos + base);

		if (nbits - base < 64)
			w &= (UINT64_C(1) << (nbits - base)) - 1;
		while (w != 0 && j < n)
		{
			out[j++] = first + (uint32_t) (base + (uint64_t) bits_ctz64(w));
			w &= w - 1;
		}
	}
	return j == n ? (int) n : -1;
}

/* Elias-Fano: low bits fused with a scan of the unary high field */
static int
ef_decode_elias_fano(const uint8_t *data, uint64_t pos, uint64_t universe,
					 uint32_t first, uint32_t n, uint32_t *out)
{
	uint32_t	l = gpuidx_ef_low_bits(universe, n);
	uint64_t	low_mask = (UINT64_C(1) << l) - 1;
	uint64_t	high_pos = pos + (uint64_t) n * l;
	uint64_t	high_bits = gpuidx_ef_high_bits(universe, n, l);
	uint32_t	j = 0;

	for (uint64_t base = 0; base < high_bits && j < n; base += 64)
	{
		uint64_t	w = bits_window(data, high_pos + base);

		if (high_bits - base < 64)
			w &= (UINT64_C(1) << (high_bits - base)) - 1;
		while (w != 0 && j < n)
		{
			uint32_t	high = (uint32_t) (base + (uint64_t) bits_ctz64(w)) - j;
			uint32_t	low = (uint32_t) (bits_window(data, pos + (uint64_t) j * l) & low_mask);

			out[j] = first + ((high << l) | low);
			j++;
			w &= w - 1;
		}
	}
	return j == n ? (int) n : -1;
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
