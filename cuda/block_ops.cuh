/*
 * block_ops.cuh
 *	  The per-lane steps of the kernels' block work: decoding a block as a
 *	  warp does it (Para-EF), and one lane's stretch of a merge-path
 *	  intersection.  The kernels glue the steps with warp shuffles; the host
 *	  test (cuda/test_host.cu) glues them with loops over 32 lanes, so the
 *	  same steps are checked on machines without a GPU.
 */
#ifndef GPUIDX_BLOCK_OPS_CUH
#define GPUIDX_BLOCK_OPS_CUH

#include "device_list.cuh"

#define WARP_LANES 32

/* what every lane needs to know about the block it decodes */
struct block_shape
{
	uint32_t	n;				/* postings */
	uint32_t	first;
	uint32_t	l;				/* EF low bits */
	int			kind;			/* GPUIDX_EF_* for EF lists; -1 for raw and LRC */
	uint64_t	pos;			/* bit offset of the block's data */
	uint64_t	field;			/* unary field (EF) or bitmap, bit offset */
	uint64_t	nbits;			/* its length; at most 64 * WARP_LANES for a valid list */
};

GPUIDX_DEV block_shape
dev_block_shape(const list_desc &d, uint32_t b)
{
	block_shape s;

	s.n = dev_block_len(d, b);
	s.first = dev_block_first(d, b);
	s.l = 0;
	s.kind = -1;
	s.pos = s.field = s.nbits = 0;
	if (d.codec == GPUIDX_CODEC_EF)
	{
		uint64_t	universe = dev_block_end(d, b) - s.first;

		s.kind = gpuidx_ef_block_kind(universe, s.n);
		s.pos = s.field = dev_load(&d.block_bitoff[b]);
		s.nbits = universe;
		if (s.kind == GPUIDX_EF_ELIAS_FANO)
		{
			s.l = gpuidx_ef_low_bits(universe, s.n);
			s.field = s.pos + (uint64_t) s.n * s.l;
			s.nbits = gpuidx_ef_high_bits(universe, s.n, s.l);
		}
	}
	return s;
}

/* does the block need the unary-field steps (EF and bitmap blocks)? */
GPUIDX_DEV bool
dev_block_has_field(const block_shape &s)
{
	return s.kind == GPUIDX_EF_ELIAS_FANO || s.kind == GPUIDX_EF_BITMAP;
}

/*
 * The field is cut into 32 equal spans of at most 64 bits, one per lane, so
 * that an EF block's ~2n-bit field keeps every lane busy (a lane per 64-bit
 * word would leave 28 of 32 lanes idle and 4 lanes walking 32 bits each).
 */
GPUIDX_DEV uint32_t
dev_field_span(const block_shape &s)
{
	return s.nbits == 0 ? 1 : (uint32_t) ((s.nbits + WARP_LANES - 1) / WARP_LANES);
}

/* step 1: the lane's span of the field, low bit first; 0 past its end */
GPUIDX_DEV uint64_t
dev_field_word(const list_desc &d, const block_shape &s, unsigned lane)
{
	uint32_t	span = dev_field_span(s);
	uint64_t	base = (uint64_t) lane * span;
	uint64_t	avail;
	uint64_t	w;

	if (base >= s.nbits)
		return 0;
	avail = s.nbits - base < span ? s.nbits - base : span;
	w = dev_window(d.data, s.field + base);
	if (avail < 64)
		w &= (UINT64_C(1) << avail) - 1;
	return w;
}

/*
 * step 2: once the lanes know how many set bits come before their span (a
 * prefix sum over the lanes), each writes its bits' positions to hp
 */
GPUIDX_DEV void
dev_field_positions(uint64_t w, unsigned lane, uint32_t span, uint32_t before, uint16_t *hp)
{
	for (uint32_t k = before; w != 0; k++)
	{
		hp[k] = (uint16_t) (lane * span + dev_ctz64(w));
		w &= w - 1;
	}
}

/* step 3: posting j of the block, from hp for EF and bitmap blocks */
GPUIDX_DEV uint32_t
dev_block_posting(const list_desc &d, uint32_t b, const block_shape &s, const uint16_t *hp,
				  uint32_t j)
{
	switch (s.kind)
	{
		case GPUIDX_EF_RUN:
			return s.first + j;
		case GPUIDX_EF_BITMAP:
			return s.first + hp[j];
		case GPUIDX_EF_ELIAS_FANO:
			return s.first + ((((uint32_t) hp[j] - j) << s.l) |
							  dev_bits(d.data, s.pos + (uint64_t) j * s.l, s.l));
		default:
			if (d.codec == GPUIDX_CODEC_RAW)
				return dev_load(&d.block_first[(size_t) b * GPUIDX_EF_BLOCK + j]);
			return dev_lrc_value(d, &d.segs[b], j);
	}
}

/*
 * One lane's stretch of the merge path of a[0..m) and b[0..n): the merged
 * order is cut into lanes equal stretches; the lane finds where its stretch
 * starts by binary search on its diagonal, then walks it.  Ties go to a, so a
 * match is seen exactly once, when a's element is taken: flags[i] = 1.
 */
GPUIDX_DEV void
dev_merge_path_lane(const uint32_t *a, uint32_t m, const uint32_t *bv, uint32_t n,
					unsigned lane, unsigned lanes, uint32_t *flags)
{
	uint32_t	total = m + n;
	uint32_t	chunk = (total + lanes - 1) / lanes;
	uint32_t	diag = lane * chunk;
	uint32_t	lo,
				hi,
				i,
				k,
				steps;

	if (diag >= total)
		return;
	lo = diag > n ? diag - n : 0;
	hi = diag < m ? diag : m;
	while (lo < hi)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (a[mid] <= bv[diag - mid - 1])
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;
	k = diag - lo;
	steps = total - diag < chunk ? total - diag : chunk;
	for (uint32_t step = 0; step < steps; step++)
	{
		if (i < m && (k >= n || a[i] <= bv[k]))
		{
			if (k < n && a[i] == bv[k])
				flags[i] = 1;
			i++;
		}
		else
			k++;
	}
}

/*
 * A unit of a round for one query.  Decode and merge jobs walk the blocks of
 * list 'desc'; search and keep jobs walk the query's current elements.
 */
struct round_job
{
	uint32_t	a_offset;		/* the query's current elements in A */
	uint32_t	a_count;
	int32_t		desc;			/* index into the batch's list_desc array; -1: keep all */
	uint32_t	out_offset;		/* decode jobs: where the list's postings go */
};

/* per-launch arrays, device pointers */
struct round_launch
{
	const round_job *jobs;
	const uint64_t *prefix;		/* work items before each job; njobs + 1 entries */
	uint32_t	njobs;
	uint64_t	items;			/* prefix[njobs] */
};

/* the job that work item 'item' belongs to: last j with prefix[j] <= item */
GPUIDX_DEV uint32_t
find_job(const uint64_t *prefix, uint32_t njobs, uint64_t item)
{
	uint32_t	lo = 0;
	uint32_t	hi = njobs;

	while (hi - lo > 1)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (dev_load(&prefix[mid]) <= item)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* the job of work item 'item' and the item's index inside the job */
GPUIDX_DEV round_job
locate_item(const round_launch &l, uint64_t item, uint32_t *index)
{
	uint32_t	j = find_job(l.prefix, l.njobs, item);

	*index = (uint32_t) (item - l.prefix[j]);
	return l.jobs[j];
}

/*
 * A warp's lower bound in a sorted array: each step probes 32 evenly spaced
 * elements of [lo, hi) at once and keeps the stretch between the last probe
 * below x and the first one not below it, so a million elements take 4
 * dependent loads rather than 20.  These are the per-lane steps; the kernel
 * counts the probes below x with a ballot, the host with a loop.
 */
struct warp_bound
{
	uint32_t	lo;
	uint32_t	hi;
	uint32_t	step;			/* 1 in the final step, over at most 32 elements */
};

GPUIDX_DEV warp_bound
warp_bound_start(uint32_t lo, uint32_t hi)
{
	warp_bound	w = {lo, hi, 1};

	if (hi - lo > WARP_LANES)
		w.step = (uint32_t) (((uint64_t) hi - lo + WARP_LANES - 1) / WARP_LANES);
	return w;
}

/* is the lane's probe below x? */
GPUIDX_DEV bool
warp_bound_probe(const warp_bound &w, const uint32_t *a, uint64_t x, unsigned lane)
{
	uint64_t	at = w.lo + (uint64_t) lane * w.step;

	return at < w.hi && (uint64_t) a[at] < x;
}

/* narrow to the stretch 'below' probes tell; true when w.lo is the answer */
GPUIDX_DEV bool
warp_bound_next(warp_bound *w, uint32_t below)
{
	uint64_t	lo = w->lo;

	if (w->step == 1)
	{
		w->lo += below;
		return true;
	}
	/* a[lo + (below-1)*step] < x <= a[lo + below*step] */
	w->hi = (uint32_t) (lo + (uint64_t) below * w->step < w->hi ? lo + (uint64_t) below * w->step : w->hi);
	w->lo = below == 0 ? w->lo : (uint32_t) (lo + (uint64_t) (below - 1) * w->step + 1);
	*w = warp_bound_start(w->lo, w->hi);
	return false;
}

/* Host only: the warp's lower bound with its 32 lanes taken in turn */
static inline uint32_t
host_warp_lower_bound(const uint32_t *a, uint32_t lo, uint32_t hi, uint64_t x)
{
	warp_bound	w = warp_bound_start(lo, hi);

	for (;;)
	{
		uint32_t	below = 0;

		for (unsigned lane = 0; lane < WARP_LANES; lane++)
			below += warp_bound_probe(w, a, x, lane);
		if (warp_bound_next(&w, below))
			return w.lo;
	}
}

/*
 * The search kernel's test for one element: is x in list d?  Skip entries
 * first; a block's first posting is answered by them alone.
 */
GPUIDX_DEV bool
dev_search_one(const list_desc &d, uint32_t x)
{
	int64_t		b;

	if (d.count == 0 || x > d.last || (b = dev_find_block(d, x)) < 0)
		return false;
	if (dev_block_first(d, (uint32_t) b) == x)
		return true;
	return dev_block_contains(d, (uint32_t) b, x);
}

/*
 * Host only: decode block b as a warp does, its 32 lanes taken in turn (the
 * host test and the host-emulated device use it).  False where the warp
 * would report bad bits.
 */
static inline bool
host_warp_decode_block(const list_desc &d, uint32_t b, uint32_t *out)
{
	block_shape s = dev_block_shape(d, b);
	uint16_t	hp[GPUIDX_EF_BLOCK + 32];

	if (dev_block_has_field(s))
	{
		uint64_t	words[WARP_LANES];
		uint32_t	before[WARP_LANES];
		uint32_t	total = 0;

		for (unsigned lane = 0; lane < WARP_LANES; lane++)
		{
			words[lane] = dev_field_word(d, s, lane);
			before[lane] = total;
			total += dev_popc64(words[lane]);
		}
		if (total != s.n || s.nbits > 64 * WARP_LANES)
			return false;
		for (unsigned lane = 0; lane < WARP_LANES; lane++)
			dev_field_positions(words[lane], lane, dev_field_span(s), before[lane], hp);
	}
	for (unsigned lane = 0; lane < WARP_LANES; lane++)
		for (uint32_t j = lane; j < s.n; j += WARP_LANES)
			out[j] = dev_block_posting(d, b, s, hp, j);
	return true;
}

#endif							/* GPUIDX_BLOCK_OPS_CUH */
