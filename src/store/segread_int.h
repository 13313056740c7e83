/*
 * segread_int.h
 *	  What the files that read a segment share (segread.c, segpos.c): a
 *	  structure's bytes at offsets of its own in a stream, read through one
 *	  page at a time, each page checked as it is read.
 */
#ifndef GPUIDX_STORE_SEGREAD_INT_H
#define GPUIDX_STORE_SEGREAD_INT_H

#include "store/segment.h"

typedef struct ListBytes
{
	GpxSegment *seg;
	int			stream;			/* LISTS, FREQS or POSITIONS */
	uint32		page;			/* where the structure starts in the stream */
	uint32		offset;
	uint32		len;			/* its bytes */
	uint32		held;			/* the stream page held, or UINT32_MAX */
	uint32		used;
	char	   *data;
} ListBytes;

extern void gpx_list_bytes_init(ListBytes *lb, GpxSegment *seg, int stream, uint32 page, uint32 offset,
								uint32 len);
/* bytes [from, from + n) of the structure into dst; past its length is damage */
extern void gpx_list_bytes_read(ListBytes *lb, uint32 from, uint32 n, void *dst);
extern uint32 gpx_list_bytes_u32(ListBytes *lb, uint32 at);

#endif							/* GPUIDX_STORE_SEGREAD_INT_H */
