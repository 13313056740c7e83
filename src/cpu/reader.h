/*
 * reader.h
 *	  A compressed list read one decoded block at a time, stepping over
 *	  blocks that lie wholly below a floor through the skip entries.
 */
#ifndef GPUIDX_CPU_READER_H
#define GPUIDX_CPU_READER_H

#include "cpu.h"

/* a block of a list, decoded */
typedef struct block_reader
{
	const pl_view *view;
	uint32_t	block;			/* block held in buf; nblocks at the end */
	uint32_t	len;
	uint32_t	pos;
	bool		corrupt;		/* a block decoded out of order */
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
} block_reader;

static inline void
reader_init(block_reader *r, const pl_view *view)
{
	r->view = view;
	r->corrupt = false;
}

/*
 * Load block b, or the last block whose first posting is <= floor when that
 * lies further on.  Returns false at the end of the list, and when the
 * block is damaged (r->corrupt is then set).
 */
static inline bool
reader_load(block_reader *r, uint32_t b, uint32_t floor, cpu_stats *stats)
{
	const pl_view *view = r->view;
	int			n;

	if (b + 1 < view->nblocks && pl_block_first(view, b + 1) <= floor)
		b = (uint32_t) pl_find_block(view, b + 1, floor);
	r->block = b;
	r->pos = 0;
	if (b >= view->nblocks)
		return false;
	n = pl_decode_block(view, b, r->buf);
	if (stats)
		stats->blocks_touched++;
	if (n < 0)
	{
		r->corrupt = true;
		r->block = view->nblocks;
		return false;
	}
	r->len = (uint32_t) n;
	return true;
}

#endif							/* GPUIDX_CPU_READER_H */
