/*
 * cursor.c
 *	  next_geq over a compressed list: skip entries first, then one block.
 *
 * A block's first posting is its skip entry, so an answer that is a block's
 * first posting never reads the block.  An EF block is searched in place by
 * select on its first probe and decoded into the cursor's buffer only when
 * probed again (a merge-like walk); LRC segments are probed in place by
 * random access with range contraction; raw lists are searched directly.
 */
#include "codec.h"

void
pl_cursor_init(pl_cursor *cur, const pl_view *view)
{
	cur->view = view;
	cur->block = 0;
	cur->pos = 0;
	cur->touched = UINT32_MAX;
	cur->decoded = UINT32_MAX;
	cur->blocks_touched = 0;
	cur->answer = 0;
	cur->answered = false;
	cur->status = PL_OK;
}

/*
 * First k >= from in the current block with posting >= x, its posting in
 * *value; the block length when there is none; PL_SEARCH_CORRUPT when the
 * block's postings are out of order.
 */
static uint32_t
cursor_block_lower_bound(pl_cursor *cur, uint32_t from, uint32_t x, uint32_t *value)
{
	const pl_view *view = cur->view;
	uint32_t	b = cur->block;
	uint32_t	n = pl_block_len(view, b);
	bool		again = cur->touched == b;
	uint32_t	k;

	if (!again)
	{
		cur->blocks_touched++;
		cur->touched = b;
	}
	switch (view->codec)
	{
		case GPUIDX_CODEC_RAW:
			k = pl_gallop(view->values + (size_t) b * GPUIDX_EF_BLOCK, from, n, x);
			if (k < n)
				*value = view->values[(size_t) b * GPUIDX_EF_BLOCK + k];
			return k;
		case GPUIDX_CODEC_LRC:
			return lrc_lower_bound(view, b, from, x, value);
		default:
			if (!again)
				return ef_block_lower_bound(view, b, from, x, value);
			if (cur->decoded != b)
			{
				if (ef_decode_block(view, b, cur->buf) < 0)
					return PL_SEARCH_CORRUPT;
				cur->decoded = b;
			}
			k = pl_gallop(cur->buf, from, n, x);
			if (k < n)
				*value = cur->buf[k];
			return k;
	}
}

/* the cursor's answers never go backwards: one that does is damage */
static bool
cursor_answer(pl_cursor *cur, uint32_t v, uint32_t *value)
{
	if (cur->answered && v < cur->answer)
	{
		cur->status = PL_ERR_ORDER;
		cur->block = cur->view->nblocks;
		return false;
	}
	cur->answer = v;
	cur->answered = true;
	*value = v;
	return true;
}

bool
pl_cursor_next_geq(pl_cursor *cur, uint32_t x, uint32_t *value)
{
	const pl_view *view = cur->view;
	uint32_t	k;
	uint32_t	v = 0;

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
		return cursor_answer(cur, pl_block_first(view, cur->block), value);
	k = cursor_block_lower_bound(cur, cur->pos, x, &v);
	if (k == PL_SEARCH_CORRUPT || (k < pl_block_len(view, cur->block) && v < x))
	{
		cur->status = PL_ERR_ORDER;
		cur->block = view->nblocks;
		return false;
	}
	if (k < pl_block_len(view, cur->block))
	{
		cur->pos = k;
		return cursor_answer(cur, v, value);
	}
	/* nothing >= x left in this block: the next block's first posting is the answer */
	cur->block++;
	cur->pos = 0;
	if (cur->block >= view->nblocks)
		return false;
	return cursor_answer(cur, pl_block_first(view, cur->block), value);
}
