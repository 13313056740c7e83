/*
 * arena.c
 *	  First-fit extents in the queue segment's arena (arena.h says why).
 */
#include "worker/arena.h"

#include <string.h>

#include "gpuidx_queue.h"

size_t
gpx_arena_struct_size(uint32_t max_live)
{
	return offsetof(GpxArena, live) + (size_t) max_live * sizeof(GpxArenaExtent);
}

void
gpx_arena_init(GpxArena *a, uint64_t capacity, uint32_t max_live)
{
	a->capacity = capacity & ~(uint64_t) (GPX_QUEUE_ALIGN - 1);
	a->used = 0;
	a->nlive = 0;
	a->max_live = max_live;
}

bool
gpx_arena_alloc(GpxArena *a, uint64_t size, uint64_t *offset)
{
	uint64_t	start = 0;

	if (size == 0 || size > a->capacity || a->nlive >= a->max_live)
		return false;
	size = gpx_queue_align(size);
	/* the gap before live[i], then the one after the last */
	for (uint32_t i = 0; i <= a->nlive; i++)
	{
		uint64_t	end = i < a->nlive ? a->live[i].offset : a->capacity;

		if (end - start >= size)
		{
			memmove(&a->live[i + 1], &a->live[i], (a->nlive - i) * sizeof(GpxArenaExtent));
			a->live[i].offset = start;
			a->live[i].size = size;
			a->nlive++;
			a->used += size;
			*offset = start;
			return true;
		}
		if (i < a->nlive)
			start = a->live[i].offset + a->live[i].size;
	}
	return false;
}

bool
gpx_arena_free(GpxArena *a, uint64_t offset)
{
	uint32_t	lo = 0;
	uint32_t	hi = a->nlive;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (a->live[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= a->nlive || a->live[lo].offset != offset)
		return false;
	a->used -= a->live[lo].size;
	memmove(&a->live[lo], &a->live[lo + 1], (a->nlive - lo - 1) * sizeof(GpxArenaExtent));
	a->nlive--;
	return true;
}

uint64_t
gpx_arena_largest_free(const GpxArena *a)
{
	uint64_t	start = 0;
	uint64_t	best = 0;

	for (uint32_t i = 0; i <= a->nlive; i++)
	{
		uint64_t	end = i < a->nlive ? a->live[i].offset : a->capacity;

		if (end - start > best)
			best = end - start;
		if (i < a->nlive)
			start = a->live[i].offset + a->live[i].size;
	}
	return best;
}
