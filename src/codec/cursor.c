/*
 * cursor.c
 *	  next_geq over a compressed list: skip entries first, then one block.
 *
 * A block's first posting is its skip entry, so an answer that is a block's
 * first posting never reads the block.  EF blocks are decoded once into the
 * cursor's buffer; LRC segments are probed in place by random access with
 * range contraction; raw lists are searched directly.
 */
#include "codec.h"

void
pl_cursor_init(pl_cursor *cur, const pl_view *view)
{
	cur->view = view;
	cur->block = 0;
	cur->pos = 0;
	cur->decoded = UINT32_MAX;
	cur->len = 0;
	cur->blocks_touched = 0;
}

/* first k >= from in the current block with posting >= x (or the block length) */
static uint32_t
cursor_block_lower_bound(pl_cursor *cur, uint32_t from, uint32_t x)
{
	const pl_view *view = cur->view;
	uint32_t	b = cur->block;
	uint32_t	n = pl_block_len(view, b);

	if (cur->decoded != b)
	{
		cur->blocks_touched++;
		cur->decoded = b;
		cur->len = n;
		if (view->codec == GPUIDX_CODEC_EF && ef_decode_block(view, b, cur->buf) < 0)
		{
			/* unreachable for a view that opened with its checksum; end the scan */
			cur->decoded = UINT32_MAX;
			return n;
		}
	}
	switch (view->codec)
	{
		case GPUIDX_CODEC_RAW:
			return pl_gallop(view->values + (size_t) b * GPUIDX_EF_BLOCK, from, n, x);
		case GPUIDX_CODEC_LRC:
			return lrc_lower_bound(view, b, from, x);
		default:
			return pl_gallop(cur->buf, from, n, x);
	}
}

static uint32_t
cursor_value(const pl_cursor *cur)
{
	const pl_view *view = cur->view;

	if (cur->pos == 0)
		return pl_block_first(view, cur->block);
	switch (view->codec)
	{
		case GPUIDX_CODEC_RAW:
			return view->values[(size_t) cur->block * GPUIDX_EF_BLOCK + cur->pos];
		case GPUIDX_CODEC_LRC:
			return lrc_get(view, cur->block * GPUIDX_LRC_SEGMENT + cur->pos);
		default:
			return cur->buf[cur->pos];
	}
}

bool
pl_cursor_next_geq(pl_cursor *cur, uint32_t x, uint32_t *value)
{
	const pl_view *view = cur->view;
	uint32_t	k;

	if (cur->block >= view->nblocks)
		return false;
	if (x > view->last)
	{
		cur->block = view->nblocks;
		return false;
	}
	/* jump over whole blocks when x lies past the current one */
	if (cur->block + 1 < view->nblocks && pl_block_first(view, cur->block + 1) <= x)
	{
		cur->block = (uint32_t) pl_find_block(view, cur->block + 1, x);
		cur->pos = 0;
	}
	if (cur->pos == 0 && pl_block_first(view, cur->block) >= x)
	{
		*value = pl_block_first(view, cur->block);
		return true;
	}
	k = cursor_block_lower_bound(cur, cur->pos, x);
	if (k < pl_block_len(view, cur->block))
	{
		cur->pos = k;
		*value = cursor_value(cur);
		return true;
	}
	/* nothing >= x left in this block: the next block's first posting is the answer */
	cur->block++;
	cur->pos = 0;
	if (cur->block >= view->nblocks)
		return false;
	*value = pl_block_first(view, cur->block);
	return true;
}
