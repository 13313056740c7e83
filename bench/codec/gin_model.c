/*
 * gin_model.c
 *	  A model of the bytes PostgreSQL 15's GIN spends on one posting list:
 *	  the encoding of ginCompressPostingList (ginpostinglist.c), rewritten
 *	  from the format's description (bench/README.md states it).
 *
 * GIN turns a heap TID into the integer block << 11 | offset, stores the
 * first item of a segment whole (a 6-byte ItemPointer) and the others as
 * varbyte deltas, 7 bits a byte, and closes a segment when the next delta
 * would overflow GinPostingListSegmentMaxSize.  Page headers, entry tuples
 * and posting-tree inner pages are not counted.
 */
#include "bench.h"

#define GIN_OFFSET_BITS			11	/* MaxHeapTuplesPerPageBits */
#define GIN_SEGMENT_MAX_SIZE	384 /* GinPostingListSegmentMaxSize */
#define GIN_SEGMENT_HEADER		8	/* ItemPointerData first + uint16 nbytes */
#define GIN_SHORTALIGN(x)		(((x) + 1) & ~(uint64_t) 1)
#define GIN_SHORTALIGN_DOWN(x)	((x) & ~(uint64_t) 1)

uint64_t
gin_item_from_tid(uint64_t tid)
{
	return ((tid >> 16) << GIN_OFFSET_BITS) | (tid & 0xFFFF);
}

static unsigned
varbyte_len(uint64_t v)
{
	unsigned	n = 1;

	while (v > 0x7F)
	{
		v >>= 7;
		n++;
	}
	return n;
}

uint64_t
gin_posting_list_bytes(const uint64_t *items, uint32_t n)
{
	/* delta bytes a segment holds after its header */
	const uint64_t room = GIN_SHORTALIGN_DOWN(GIN_SEGMENT_MAX_SIZE) - GIN_SEGMENT_HEADER;
	uint64_t	total = 0;
	uint32_t	i = 0;

	while (i < n)
	{
		uint64_t	prev = items[i++];
		uint64_t	nbytes = 0;

		while (i < n)
		{
			unsigned	len = varbyte_len(items[i] - prev);

			if (nbytes + len > room)
				break;
			nbytes += len;
			prev = items[i++];
		}
		total += GIN_SEGMENT_HEADER + GIN_SHORTALIGN(nbytes);
	}
	return total;
}
