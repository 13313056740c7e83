/*
 * placed.c
 *	  Intersections of posting-list values (pl_intersect, &) with their
 *	  rounds placed between the GPU worker and this backend, as the index's
 *	  queries place theirs (src/sched/placement.c).
 */
#include "gpuidx.h"

#include "miscadmin.h"

#include "cpu/cpu.h"
#include "worker/worker.h"

typedef struct PlacedList
{
	const pl_view *view;
	const void *bytes;
	uint64		len;
} PlacedList;

static int
placed_cmp(const void *a, const void *b)
{
	uint32		x = ((const PlacedList *) a)->view->count;
	uint32		y = ((const PlacedList *) b)->view->count;

	return (x > y) - (x < y);
}

uint32
gpx_intersect_placed(const pl_view **views, const void *const *bytes, const uint64 *lens,
					 int n, uint32 *out, bool *used_worker)
{
	PlacedList *l = palloc(n * sizeof(PlacedList));
	uint32		counts[GPUIDX_ENGINE_MAX_TERMS];
	GpxWorkerList dev[GPUIDX_ENGINE_MAX_TERMS];
	uint32		total;
	int			k = 0;
	int			done = 0;
	uint32		c = 0;

	bool		placing = n >= 2 && n <= GPUIDX_ENGINE_MAX_TERMS && gpx_worker_wanted();

	*used_worker = false;
	for (int i = 0; i < n; i++)
	{
		l[i].view = views[i];
		l[i].bytes = bytes[i];
		l[i].len = lens[i];
	}
	qsort(l, n, sizeof(PlacedList), placed_cmp);
	if (placing)
	{
		for (int i = 0; i < n; i++)
			counts[i] = l[i].view->count;
		k = gpx_place_rounds(counts, n, &gpx_placement);
	}
	if (k >= 2)
	{
		/* values, not an index's lists: nothing to cache */
		memset(dev, 0, k * sizeof(GpxWorkerList));
		for (int i = 0; i < k; i++)
		{
			dev[i].bytes = l[i].bytes;
			dev[i].len = l[i].len;
		}
		if (gpx_worker_intersect(dev, k, GPUIDX_RESULT_IDS, out, l[0].view->count, &c, &total))
		{
			*used_worker = true;
			done = k;
			gpx_count_worker_rounds(k - 1);
		}
	}
	if (done == 0)
	{
		/* the whole query here, shortest first */
		const pl_view **order = palloc(n * sizeof(pl_view *));

		for (int i = 0; i < n; i++)
			order[i] = l[i].view;
		c = cpu_intersect_k(order, n, out, CPU_METHOD_AUTO, NULL);
		pfree(order);
		/* rounds the placement kept here (fallbacks are counted as such) */
		if (placing && k == 0)
			gpx_count_backend_rounds(n - 1);
	}
	else
	{
		/* the rest of the rounds here, from the worker's result */
		for (int i = done; i < n && c > 0 && c != CPU_CORRUPT; i++)
		{
			CHECK_FOR_INTERRUPTS();
			c = cpu_intersect_array_list(out, c, l[i].view, out,
										 cpu_pick_method(c, l[i].view->count), 0, NULL);
		}
		gpx_count_backend_rounds(n - done);
	}
	pfree(l);
	return c;
}

