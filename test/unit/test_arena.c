/*
 * test_arena.c
 *	  The queue arena's allocator against a byte map of who owns what:
 *	  random allocations and frees never overlap, never leave the arena,
 *	  account their bytes, and once everything is freed the whole arena is
 *	  one gap again (a full-size request fits), however fragmented the load.
 */
#include <stdlib.h>

#include "gpuidx_queue.h"
#include "unit.h"
#include "worker/arena.h"

#define CAPACITY (1u << 20)
#define MAX_LIVE 256

static uint16_t owner[CAPACITY];	/* 0: free, else the extent's number + 1 */

static void
check_churn(uint64_t seed)
{
	GpxArena   *a = malloc(gpx_arena_struct_size(MAX_LIVE));
	uint64_t	offs[MAX_LIVE];
	uint64_t	sizes[MAX_LIVE];
	int			nlive = 0;
	long		refused_with_room = 0;

	unit_rng_state = seed;
	gpx_arena_init(a, CAPACITY, MAX_LIVE);
	memset(owner, 0, sizeof(owner));
	for (int step = 0; step < 200000; step++)
	{
		bool		grow = nlive == 0 || (nlive < MAX_LIVE && unit_rand64() % 100 < 55);

		if (grow)
		{
			/* small requests mostly, now and then one of a sizeable share of the arena */
			uint64_t	size = unit_rand64() % 10 == 0 ? 1 + unit_rand64() % (CAPACITY / 4)
				: 1 + unit_rand64() % 6000;
			uint64_t	off;

			if (!gpx_arena_alloc(a, size, &off))
			{
				if (a->nlive < a->max_live && gpx_arena_largest_free(a) >= gpx_queue_align(size))
					refused_with_room++;
				continue;
			}
			CHECK(off % GPX_QUEUE_ALIGN == 0, "offset %llu unaligned", (unsigned long long) off);
			CHECK(off + size <= CAPACITY, "extent past the arena");
			for (uint64_t b = off; b < off + size && b < CAPACITY; b++)
			{
				if (owner[b] != 0)
				{
					CHECK(false, "byte %llu given twice", (unsigned long long) b);
					break;
				}
				owner[b] = (uint16_t) (nlive + 1);
			}
			offs[nlive] = off;
			sizes[nlive] = size;
			nlive++;
		}
		else
		{
			int			victim = (int) (unit_rand64() % nlive);

			CHECK(gpx_arena_free(a, offs[victim]), "live extent not found");
			for (uint64_t b = offs[victim]; b < offs[victim] + sizes[victim]; b++)
				owner[b] = 0;
			/* the last extent takes the victim's place (renumber its bytes) */
			nlive--;
			if (victim != nlive)
			{
				offs[victim] = offs[nlive];
				sizes[victim] = sizes[nlive];
				for (uint64_t b = offs[victim]; b < offs[victim] + sizes[victim]; b++)
					owner[b] = (uint16_t) (victim + 1);
			}
		}
		CHECK(a->nlive == (uint32_t) nlive, "%u extents counted, %d live", a->nlive, nlive);
	}
	CHECK(refused_with_room == 0, "%ld requests refused although a gap fit them", refused_with_room);
	CHECK(!gpx_arena_free(a, 7), "an offset no extent starts at was freed");
	while (nlive > 0)
	{
		nlive--;
		CHECK(gpx_arena_free(a, offs[nlive]), "live extent not found at the end");
	}
	CHECK(a->used == 0 && a->nlive == 0, "%llu bytes still counted", (unsigned long long) a->used);
	CHECK(gpx_arena_largest_free(a) == CAPACITY, "the arena is not one gap after the load");
	{
		uint64_t	off;

		CHECK(gpx_arena_alloc(a, CAPACITY, &off) && off == 0, "a full-size request does not fit after the load");
	}
	free(a);
}

static void
check_limits(void)
{
	GpxArena   *a = malloc(gpx_arena_struct_size(2));
	uint64_t	off;

	gpx_arena_init(a, 4096, 2);
	CHECK(!gpx_arena_alloc(a, 0, &off), "a zero-byte extent");
	CHECK(!gpx_arena_alloc(a, 4097, &off), "an extent larger than the arena");
	CHECK(gpx_arena_alloc(a, 1, &off) && off == 0, "first extent");
	CHECK(gpx_arena_alloc(a, 1, &off) && off == GPX_QUEUE_ALIGN, "second extent, aligned");
	CHECK(!gpx_arena_alloc(a, 1, &off), "more extents than max_live");
	CHECK(gpx_arena_free(a, 0), "free the first");
	CHECK(gpx_arena_alloc(a, GPX_QUEUE_ALIGN, &off) && off == 0, "first fit reuses the first gap");
	free(a);
}

int
main(void)
{
	check_limits();
	for (uint64_t seed = 1; seed <= 3; seed++)
		check_churn(seed);
	return unit_report("test_arena");
}
