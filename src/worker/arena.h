/*
 * arena.h
 *	  The allocator of the queue segment's arena: each slot's request is one
 *	  extent, placed first fit among the live extents (kept sorted by
 *	  offset).  Plain C, no lock (the caller holds one), no PostgreSQL
 *	  header, so the unit tests check it alone.
 *
 * Why not a DSA: its bookkeeping would live in the segment, where the
 * engine process could scribble on it and crash a backend; and its small
 * size classes each keep a superblock for good, which cost a small arena
 * most of its room after load.  Here the bookkeeping is in PostgreSQL's
 * shared memory, there are at most as many extents as slots, and freeing
 * the last one leaves the whole arena free.
 */
#ifndef GPX_WORKER_ARENA_H
#define GPX_WORKER_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct GpxArenaExtent
{
	uint64_t	offset;
	uint64_t	size;
} GpxArenaExtent;

typedef struct GpxArena
{
	uint64_t	capacity;		/* bytes */
	uint64_t	used;			/* bytes of the live extents */
	uint32_t	nlive;
	uint32_t	max_live;
	GpxArenaExtent live[];		/* sorted by offset */
} GpxArena;

/* bytes of a GpxArena for up to max_live extents */
extern size_t gpx_arena_struct_size(uint32_t max_live);
extern void gpx_arena_init(GpxArena *a, uint64_t capacity, uint32_t max_live);

/*
 * An extent of at least size bytes (GPX_QUEUE_ALIGN-aligned offset and
 * size): true with *offset set, false when no gap is large enough or
 * max_live extents are live.
 */
extern bool gpx_arena_alloc(GpxArena *a, uint64_t size, uint64_t *offset);

/* the extent at offset, freed; false when none starts there (nothing changes) */
extern bool gpx_arena_free(GpxArena *a, uint64_t offset);

/* the largest gap, for the statistics */
extern uint64_t gpx_arena_largest_free(const GpxArena *a);

#endif							/* GPX_WORKER_ARENA_H */
