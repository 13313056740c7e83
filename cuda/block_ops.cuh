/*
 * block_ops.cuh
 *	  The steps of the kernels' block work: decoding a block as a warp does
 *	  it (Para-EF), the choice between merging and searching, the search and
 *	  merge tests of one candidate, and what a batch's jobs look like.  The
 *	  kernels glue the steps with warp shuffles; the host test
 *	  (cuda/test_host.cu) and the host-emulated device (host_ops.cu) glue
 *	  them with loops, so the same steps are checked on machines without a
 *	  GPU.
 */
#ifndef GPUIDX_BLOCK_OPS_CUH
#define GPUIDX_BLOCK_OPS_CUH

#include "gpuidx_engine.h"
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
 * One query of a batch as the intersect kernel sees it.  Its candidates come
 * from a source - its shortest list, or the initial set it was handed - one
 * work item per source block; a warp takes an item's candidates through
 * every other list of the query in turn, shortest first, without leaving
 * the kernel, and keeps the survivors.
 */
struct query_job
{
	int32_t		source;			/* desc index of the shortest list; -1: the initial set */
	uint32_t	first_term;		/* the other lists: descs[first_term, + nterms), shortest first */
	uint32_t	nterms;
	uint32_t	nexclude;		/* the last nexclude of them are subtracted, not intersected */
	uint32_t	query;			/* index of the query's total */
	uint64_t	initial_offset; /* source -1: its ninitial candidates at initial + initial_offset */
	uint32_t	ninitial;
	uint32_t	slot_len;		/* room per item: the source's largest block */
	uint64_t	slot_base;		/* survivors of item b at slots + slot_base + b * slot_len */
	uint64_t	result_base;	/* the ids it asks back, at results + result_base */
	uint32_t	result;			/* gpuidx_query.result */
	uint32_t	store;			/* 0: only the count is wanted, survivors are not written */
};

/* what the intersect and pack kernels read, device pointers */
struct batch_launch
{
	const query_job *jobs;
	const uint64_t *prefix;		/* items before each job; njobs + 1 entries */
	uint32_t	njobs;
	uint64_t	items;			/* prefix[njobs] */
	const list_desc *descs;
	const uint32_t *initial;
	uint32_t	skip_ratio;		/* local length ratio from which a step searches */
	/*
	 * A warp of the intersect kernel takes a unit: up to 'chunk' consecutive
	 * items of one job, so that it walks each other list forward from where
	 * the previous item left it, and a block decoded for one item serves the
	 * next.  unit_prefix: units before each job, njobs + 1 entries.
	 */
	const uint64_t *unit_prefix;
	uint64_t	units;
	uint32_t	chunk;
};

/* units of a job of n items */
GPUIDX_DEV uint64_t
dev_units(uint64_t n, uint32_t chunk)
{
	return (n + chunk - 1) / chunk;
}

/* counters the kernels keep for a batch, in device memory (zeroed by the upload) */
struct batch_status
{
	int32_t		bad;			/* a block failed to decode */
	uint32_t	unused;
	unsigned long long merged;	/* (item, list) steps merged block against block */
	unsigned long long searched;	/* (item, list) steps searched candidate by candidate */
};

/*
 * A small batch travels whole in the kernel's parameters (no upload), and
 * the intersect kernel's last block scans and packs it (no second launch):
 * one launch per batch, for the single queries whose latency is launches.
 */
#define SMALL_JOBS 8
#define SMALL_DESCS 40
#define SMALL_ITEMS 2047

struct small_launch
{
	batch_launch l;				/* its array pointers are set on the device */
	query_job	jobs[SMALL_JOBS];
	uint64_t	prefix[SMALL_JOBS + 1];
	uint64_t	unit_prefix[SMALL_JOBS + 1];
	list_desc	descs[SMALL_DESCS];
};

/* device memory the small path keeps between batches, zero between them */
struct small_state
{
	batch_status status;
	uint32_t	blocks_done;
};

/* most candidates one item holds, and per lane */
#define ITEM_MAX GPUIDX_LRC_SEGMENT
#define ITEM_PER_LANE (ITEM_MAX / 32)

/* source block b's candidates */
GPUIDX_DEV uint32_t
dev_source_len(const batch_launch &l, const query_job &job, uint32_t b)
{
	if (job.source < 0)
	{
		uint32_t	left = job.ninitial - b * GPUIDX_EF_BLOCK;

		return left < GPUIDX_EF_BLOCK ? left : GPUIDX_EF_BLOCK;
	}
	return dev_block_len(l.descs[job.source], b);
}

/*
 * The step's choice, made per item on the device: search each candidate
 * when the list holds many postings per candidate in the candidates' range
 * (about nblocks * GPUIDX_EF_BLOCK of them), else decode those blocks and
 * merge.  The same rule as the CPU's SvS rounds (Griffin's ratio), applied
 * to the stretch a warp works on rather than to whole lists.
 */
GPUIDX_DEV bool
dev_step_searches(uint32_t nblocks, uint32_t ncandidates, uint32_t skip_ratio)
{
	return (uint64_t) nblocks * GPUIDX_EF_BLOCK >= (uint64_t) ncandidates * skip_ratio;
}

/* last block of d in [lo, hi) whose first posting is <= x; lo - 1 if none */
GPUIDX_DEV int64_t
dev_find_block_in(const list_desc &d, uint32_t x, uint32_t lo, uint32_t hi)
{
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (dev_block_first(d, mid) <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64_t) lo - 1;
}

/*
 * Is x in d, knowing the blocks [lo, hi) cover it if anything does?  (The
 * search step's test: a binary search over those skip entries only.)
 */
GPUIDX_DEV bool
dev_search_in(const list_desc &d, uint32_t x, uint32_t lo, uint32_t hi)
{
	int64_t		b = dev_find_block_in(d, x, lo, hi);

	if (b < (int64_t) lo || x > d.last)
		return false;
	return dev_block_first(d, (uint32_t) b) == x || dev_block_contains(d, (uint32_t) b, x);
}

/* is x in the sorted v[0..n)? (the merge step's test, in shared memory) */
GPUIDX_DEV bool
dev_sorted_has(const uint32_t *v, uint32_t n, uint32_t x)
{
	uint32_t	lo = 0;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == x;
}

/* the job that work item 'item' belongs to: last j with prefix[j] <= item */
GPUIDX_DEV uint32_t
find_job(const uint64_t *prefix, uint32_t njobs, uint64_t item)
{
	uint32_t	lo = 0;
	uint32_t	hi = njobs;

	while (hi - lo > 1)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (prefix[mid] <= item)	/* plain load: may be kernel parameter space */
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* the items [*b0, *b1) of job *job that unit 'unit' of the intersect kernel takes */
GPUIDX_DEV void
dev_unit_items(const batch_launch &l, uint64_t unit, uint32_t *job, uint32_t *b0, uint32_t *b1)
{
	uint32_t	j = find_job(l.unit_prefix, l.njobs, unit);
	uint32_t	nitems = (uint32_t) (l.prefix[j + 1] - l.prefix[j]);

	*job = j;
	*b0 = (uint32_t) (unit - l.unit_prefix[j]) * l.chunk;
	*b1 = nitems - *b0 < l.chunk ? nitems : *b0 + l.chunk;
}

/*
 * Where an item's survivors go among its query's ids, pos being the
 * exclusive scan of the items' counts: its query's total, the item's offset
 * there, and how many of its survivors the query asks back (0 for a count).
 */
struct item_place
{
	uint32_t	job;
	uint32_t	b;				/* the item's index in its job */
	uint32_t	total;
	uint32_t	off;
	uint32_t	n;
};

GPUIDX_DEV item_place
dev_item_place(const batch_launch &l, uint64_t item, const uint32_t *pos)
{
	item_place	p;
	uint32_t	j = find_job(l.prefix, l.njobs, item);
	uint32_t	start = pos[l.prefix[j]];
	uint32_t	wanted;

	p.job = j;
	p.b = (uint32_t) (item - l.prefix[j]);
	p.total = pos[l.prefix[j + 1]] - start;
	p.off = pos[item] - start;
	p.n = pos[item + 1] - pos[item];
	wanted = gpuidx_result_wanted(l.jobs[j].result, p.total);
	if (!l.jobs[j].store || p.off >= wanted)
		p.n = 0;
	else if (p.n > wanted - p.off)
		p.n = wanted - p.off;
	return p;
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

/* the index the lane probes; false when it is past the stretch */
GPUIDX_DEV bool
warp_bound_at(const warp_bound &w, unsigned lane, uint32_t *at)
{
	uint64_t	i = w.lo + (uint64_t) lane * w.step;

	*at = (uint32_t) i;
	return i < w.hi;
}

/* is the lane's probe below x? */
GPUIDX_DEV bool
warp_bound_probe(const warp_bound &w, const uint32_t *a, uint64_t x, unsigned lane)
{
	uint32_t	at;

	return warp_bound_at(w, lane, &at) && (uint64_t) a[at] < x;
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

/*
 * A seek that starts at a cursor: the answer is known to be >= from, and
 * usually close to it (the next item's candidates follow the previous
 * item's), so the first step probes the 32 entries from 'from' one by one;
 * only when all of them are below does the warp search the rest.
 */
GPUIDX_DEV warp_bound
warp_seek_start(uint32_t from, uint32_t hi)
{
	warp_bound	w = {from, hi - from > WARP_LANES ? from + WARP_LANES : hi, 1};

	return w;
}

/* after warp_seek_start's step: true when w.lo is the answer, else w is the rest's search */
GPUIDX_DEV bool
warp_seek_next(warp_bound *w, uint32_t below, uint32_t hi)
{
	uint32_t	end = w->hi;

	if (below < WARP_LANES || end == hi)
	{
		w->lo += below;
		return true;
	}
	*w = warp_bound_start(end, hi);
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
