/*
 * setops.c
 *	  Union and difference of a sorted array with a compressed list.
 */
#include "cpu.h"
#include "reader.h"

#include <string.h>

uint32_t
cpu_merge_union(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
				uint32_t *out)
{
	uint32_t	i = 0;
	uint32_t	j = 0;
	uint32_t	k = 0;

	while (i < na && j < nb)
	{
		uint32_t	x = a[i];
		uint32_t	y = b[j];

		out[k++] = x <= y ? x : y;
		i += (x <= y);
		j += (y <= x);
	}
	while (i < na)
		out[k++] = a[i++];
	while (j < nb)
		out[k++] = b[j++];
	return k;
}

uint32_t
cpu_merge_difference(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb, uint32_t *out)
{
	uint32_t	j = 0;
	uint32_t	k = 0;

	for (uint32_t i = 0; i < na; i++)
	{
		while (j < nb && b[j] < a[i])
			j++;
		if (j < nb && b[j] == a[i])
			continue;
		out[k++] = a[i];
	}
	return k;
}

uint32_t
cpu_union_array_list(const uint32_t *a, uint32_t na, const pl_view *b, uint32_t *out)
{
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
	uint32_t	i = 0;
	uint32_t	k = 0;

	for (uint32_t blk = 0; blk < b->nblocks; blk++)
	{
		int			n = pl_decode_block(b, blk, buf);
		uint32_t	upto;

		if (n < 0)
			return CPU_CORRUPT;
		/* a's postings up to this block's last one merge with it */
		upto = buf[n - 1] == UINT32_MAX ? na : pl_gallop(a, i, na, buf[n - 1] + 1);
		k += cpu_merge_union(a + i, upto - i, buf, (uint32_t) n, out + k);
		i = upto;
	}
	while (i < na)
		out[k++] = a[i++];
	return k;
}

static uint32_t
difference_merge(const uint32_t *a, uint32_t na, const pl_view *b, uint32_t *out,
				 cpu_stats *stats)
{
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
	uint32_t	i = 0;
	uint32_t	k = 0;
	uint32_t	blk = 0;

	while (i < na && blk < b->nblocks)
	{
		uint32_t	j = 0;
		int			n;

		if (blk + 1 < b->nblocks && pl_block_first(b, blk + 1) <= a[i])
			blk = (uint32_t) pl_find_block(b, blk + 1, a[i]);
		if (a[i] < pl_block_first(b, blk))
		{
			out[k++] = a[i++];
			continue;
		}
		n = pl_decode_block(b, blk, buf);
		if (stats)
			stats->blocks_touched++;
		if (n < 0)
			return CPU_CORRUPT;
		/* a's postings before the next block's first are decided by this one */
		while (i < na && (blk + 1 >= b->nblocks || a[i] < pl_block_first(b, blk + 1)))
		{
			j = pl_gallop(buf, j, (uint32_t) n, a[i]);
			if (j < (uint32_t) n && buf[j] == a[i])
				i++;
			else
				out[k++] = a[i++];
		}
		blk++;
	}
	while (i < na)
		out[k++] = a[i++];
	return k;
}

static uint32_t
difference_skip(const uint32_t *a, uint32_t na, const pl_view *b, uint32_t *out,
				cpu_stats *stats)
{
	pl_cursor	cur;
	uint32_t	k = 0;
	uint32_t	v;

	pl_cursor_init(&cur, b);
	for (uint32_t i = 0; i < na; i++)
	{
		uint32_t	x = a[i];

		if (!pl_cursor_next_geq(&cur, x, &v) || v != x)
			out[k++] = x;
	}
	if (stats)
		stats->blocks_touched += cur.blocks_touched;
	return cur.status != PL_OK ? CPU_CORRUPT : k;
}

uint32_t
cpu_difference_array_list(const uint32_t *a, uint32_t na, const pl_view *b,
						  uint32_t *out, cpu_method method, cpu_stats *stats)
{
	if (stats)
		stats->blocks_total += b->nblocks;
	if (method == CPU_METHOD_AUTO)
		method = cpu_pick_method(na, b->count);
	if (method == CPU_METHOD_SKIP)
		return difference_skip(a, na, b, out, stats);
	return difference_merge(a, na, b, out, stats);
}

pl_status
cpu_lists_equal(const pl_view *a, const pl_view *b, bool *equal)
{
	block_reader ra;
	block_reader rb;
	bool		more_a;
	bool		more_b;

	*equal = false;
	if (a->count != b->count || a->last != b->last)
		return PL_OK;
	reader_init(&ra, a);
	reader_init(&rb, b);
	more_a = reader_load(&ra, 0, 0, NULL);
	more_b = reader_load(&rb, 0, 0, NULL);
	while (more_a && more_b)
	{
		uint32_t	n = ra.len - ra.pos < rb.len - rb.pos ? ra.len - ra.pos : rb.len - rb.pos;

		if (memcmp(ra.buf + ra.pos, rb.buf + rb.pos, n * sizeof(uint32_t)) != 0)
			return PL_OK;
		ra.pos += n;
		rb.pos += n;
		if (ra.pos == ra.len)
			more_a = reader_load(&ra, ra.block + 1, 0, NULL);
		if (rb.pos == rb.len)
			more_b = reader_load(&rb, rb.block + 1, 0, NULL);
	}
	if (ra.corrupt || rb.corrupt)
		return PL_ERR_ORDER;
	*equal = more_a == more_b;
	return PL_OK;
}
