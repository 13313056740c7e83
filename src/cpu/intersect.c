/*
 * intersect.c
 *	  Intersection of compressed posting lists on the CPU.
 *
 * Similar lengths: both sides are streamed block by block through a
 * branch-free merge, and a block that lies wholly below the other side's
 * current posting is stepped over through the skip entries without decoding.
 * Skewed lengths: the shorter side drives next_geq on the longer one, which
 * decodes only the blocks that can hold a match.
 */
#include "cpu.h"
#include "reader.h"

cpu_method
cpu_pick_method(uint64_t short_len, uint64_t long_len)
{
	return long_len >= short_len * CPU_SKIP_RATIO_DEFAULT ? CPU_METHOD_SKIP : CPU_METHOD_MERGE;
}

uint32_t
cpu_merge_intersect(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
					uint32_t *out, uint32_t cap)
{
	uint32_t	i = 0;
	uint32_t	j = 0;
	uint32_t	k = 0;

	while (i < na && j < nb && k < cap)
	{
		uint32_t	x = a[i];
		uint32_t	y = b[j];

		out[k] = x;
		k += (x == y);
		i += (x <= y);
		j += (y <= x);
	}
	return k;
}

/* b[0..nb) searched for in a[0..na) (nb much shorter), as cpu_merge_intersect */
static uint32_t
gallop_intersect(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb, uint32_t *out,
				 uint32_t cap)
{
	uint32_t	i = 0;
	uint32_t	k = 0;

	for (uint32_t j = 0; j < nb && i < na && k < cap; j++)
	{
		i = pl_gallop(a, i, na, b[j]);
		if (i < na && a[i] == b[j])
			out[k++] = b[j];
	}
	return k;
}

/* how many more results fit: the limit, or no bound */
static uint32_t
room_left(uint32_t k, uint32_t limit)
{
	return limit == 0 ? UINT32_MAX : limit - k;
}

static uint32_t
intersect_array_list_merge(const uint32_t *a, uint32_t na, const pl_view *b,
						   uint32_t *out, uint32_t limit, cpu_stats *stats)
{
	block_reader r;
	uint32_t	i = 0;
	uint32_t	k = 0;

	reader_init(&r, b);
	if (na == 0 || !reader_load(&r, 0, a[0], stats))
		return r.corrupt ? CPU_CORRUPT : 0;
	for (;;)
	{
		/* a's postings below this block cannot match */
		uint32_t	from = pl_gallop(a, i, na, r.buf[0]);

		/* a block that ends on 2^32 - 1 is the last */
		i = r.buf[r.len - 1] == UINT32_MAX ? na : pl_gallop(a, from, na, r.buf[r.len - 1] + 1);
		/*
		 * a's postings in the block's range merged with it; where they are
		 * many more than its postings, each posting searched for instead
		 * (a short list over a long array costs its own postings)
		 */
		if (i - from > 8 * (uint32_t) r.len)
			k += gallop_intersect(a + from, i - from, r.buf, r.len, out + k, room_left(k, limit));
		else
			k += cpu_merge_intersect(a + from, i - from, r.buf, r.len, out + k, room_left(k, limit));
		if (i >= na || (limit != 0 && k >= limit) ||
			!reader_load(&r, r.block + 1, a[i], stats))
			break;
	}
	return r.corrupt ? CPU_CORRUPT : k;
}

static uint32_t
intersect_array_list_skip(const uint32_t *a, uint32_t na, const pl_view *b,
						  uint32_t *out, uint32_t limit, cpu_stats *stats)
{
	pl_cursor	cur;
	uint32_t	i = 0;
	uint32_t	k = 0;
	uint32_t	v;

	pl_cursor_init(&cur, b);
	while (i < na && pl_cursor_next_geq(&cur, a[i], &v))
	{
		if (v == a[i])
		{
			out[k++] = v;
			i++;
			if (limit != 0 && k >= limit)
				break;
		}
		else
			i = pl_gallop(a, i + 1, na, v);
	}
	if (stats)
		stats->blocks_touched += cur.blocks_touched;
	return cur.status != PL_OK ? CPU_CORRUPT : k;
}

static cpu_method
resolve_method(cpu_method method, uint64_t short_len, uint64_t long_len, cpu_stats *stats)
{
	if (method == CPU_METHOD_AUTO)
		method = cpu_pick_method(short_len, long_len);
	if (stats)
	{
		if (method == CPU_METHOD_SKIP)
			stats->rounds_skip++;
		else
			stats->rounds_merge++;
	}
	return method;
}

uint32_t
cpu_intersect_array_list(const uint32_t *a, uint32_t na, const pl_view *b,
						 uint32_t *out, cpu_method method, uint32_t limit,
						 cpu_stats *stats)
{
	if (stats)
		stats->blocks_total += b->nblocks;
	if (na == 0 || b->count == 0)
		return 0;
	if (resolve_method(method, na, b->count, stats) == CPU_METHOD_SKIP)
		return intersect_array_list_skip(a, na, b, out, limit, stats);
	return intersect_array_list_merge(a, na, b, out, limit, stats);
}

/* both sides compressed, streamed block by block */
static uint32_t
intersect_lists_merge(const pl_view *a, const pl_view *b, uint32_t *out,
					  uint32_t limit, cpu_stats *stats)
{
	block_reader ra;
	block_reader rb;
	uint32_t	k = 0;

	reader_init(&ra, a);
	reader_init(&rb, b);
	if (!reader_load(&ra, 0, 0, stats) || !reader_load(&rb, 0, ra.buf[0], stats))
		return ra.corrupt || rb.corrupt ? CPU_CORRUPT : 0;
	for (;;)
	{
		uint32_t	i = ra.pos;
		uint32_t	j = rb.pos;
		uint32_t	cap = limit == 0 ? UINT32_MAX : limit;

		while (i < ra.len && j < rb.len && k < cap)
		{
			uint32_t	x = ra.buf[i];
			uint32_t	y = rb.buf[j];

			out[k] = x;
			k += (x == y);
			i += (x <= y);
			j += (y <= x);
		}
		ra.pos = i;
		rb.pos = j;
		if (limit != 0 && k >= limit)
			break;
		if (i == ra.len &&
			!reader_load(&ra, ra.block + 1, j < rb.len ? rb.buf[j] : 0, stats))
			break;
		if (rb.pos == rb.len &&
			!reader_load(&rb, rb.block + 1, ra.buf[ra.pos], stats))
			break;
	}
	return ra.corrupt || rb.corrupt ? CPU_CORRUPT : k;
}

/* walk the shorter list's blocks, next_geq on the longer */
static uint32_t
intersect_lists_skip(const pl_view *shorter, const pl_view *longer, uint32_t *out,
					 uint32_t limit, cpu_stats *stats)
{
	block_reader r;
	pl_cursor	cur;
	uint32_t	k = 0;
	bool		more;

	reader_init(&r, shorter);
	pl_cursor_init(&cur, longer);
	more = reader_load(&r, 0, 0, stats);
	while (more)
	{
		uint32_t	i = 0;
		uint32_t	v = 0;

		while (i < r.len && (more = pl_cursor_next_geq(&cur, r.buf[i], &v)))
		{
			if (v == r.buf[i])
			{
				out[k++] = v;
				i++;
				if (limit != 0 && k >= limit)
					goto done;
			}
			else
				i = pl_gallop(r.buf, i + 1, r.len, v);
		}
		/* the shorter side's blocks wholly below v cannot match */
		if (more)
			more = reader_load(&r, r.block + 1, v, stats);
	}
done:
	if (stats)
		stats->blocks_touched += cur.blocks_touched;
	return r.corrupt || cur.status != PL_OK ? CPU_CORRUPT : k;
}

uint32_t
cpu_intersect_lists(const pl_view *a, const pl_view *b, uint32_t *out,
					cpu_method method, uint32_t limit, cpu_stats *stats)
{
	const pl_view *shorter = a->count <= b->count ? a : b;
	const pl_view *longer = a->count <= b->count ? b : a;

	if (stats)
		stats->blocks_total += a->nblocks + b->nblocks;
	if (shorter->count == 0)
		return 0;
	if (resolve_method(method, shorter->count, longer->count, stats) == CPU_METHOD_SKIP)
		return intersect_lists_skip(shorter, longer, out, limit, stats);
	return intersect_lists_merge(shorter, longer, out, limit, stats);
}

uint32_t
cpu_intersect_k(const pl_view **lists, int k, uint32_t *out, cpu_method method,
				cpu_stats *stats)
{
	uint32_t	n;

	/* shortest first: insertion sort, k is small */
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && lists[j]->count < lists[j - 1]->count; j--)
		{
			const pl_view *t = lists[j];

			lists[j] = lists[j - 1];
			lists[j - 1] = t;
		}
	if (k == 0)
		return 0;
	if (k == 1)
		return pl_decode(lists[0], out) == PL_OK ? lists[0]->count : CPU_CORRUPT;
	n = cpu_intersect_lists(lists[0], lists[1], out, method, 0, stats);
	for (int i = 2; i < k && n > 0 && n != CPU_CORRUPT; i++)
		n = cpu_intersect_array_list(out, n, lists[i], out, method, 0, stats);
	return n;
}
