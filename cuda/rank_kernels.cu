/*
 * rank_kernels.cu
 *	  Ranked queries on the device: term passes into accumulator tables, then
 *	  each query's best k from the candidates at or above a bound, or by a
 *	  radix select over its whole table when they overflow (rank_ops.cuh has the steps and
 *	  why the sums are the CPU's to the bit; this file must be compiled with
 *	  -fmad=false).
 */
#include <cub/block/block_scan.cuh>

#include "gpuidx_engine.h"
#include "rank_kernels.cuh"
#include "warp_decode.cuh"

#define RANK_TERM_WARPS 8
#define RANK_SELECT_THREADS 256
#define RANK_PICK_PER_THREAD (RANK_BINS / RANK_SELECT_THREADS)

/*
 * A warp per work item: block b of the pass's term of one query, decoded
 * into shared memory, then each lane adds its postings RANK_LANE_POSTINGS
 * at a time (rank_add_postings).  Within a launch a doc is in one item of
 * a query at most, so the plain read-add-write of its slot races with
 * nothing.
 */
__global__ void __launch_bounds__(RANK_TERM_WARPS * 32)
rank_term_kernel(rank_launch l, rank_pass p)
{
	__shared__ uint32_t vals[RANK_TERM_WARPS][ITEM_MAX];
	__shared__ uint16_t hp[RANK_TERM_WARPS][GPUIDX_EF_BLOCK + 32];
	unsigned	lane = threadIdx.x & 31;
	unsigned	warp = threadIdx.x / 32;
	uint64_t	nwarps = (uint64_t) gridDim.x * RANK_TERM_WARPS;

	for (uint64_t item = (uint64_t) blockIdx.x * RANK_TERM_WARPS + warp; item < p.items; item += nwarps)
	{
		uint32_t	at = find_job(p.prefix, p.njobs, item);
		/* copies: the sums' stores then cannot alias them, so they are read once */
		const rank_job q = l.jobs[p.jobs[at]];
		const rank_term_desc t = l.terms[q.first_term + p.term];
		uint32_t	b = (uint32_t) (item - p.prefix[at]);
		uint32_t	n = dev_block_len(t.list, b);
		uint32_t	base = b * dev_block_capacity(t.list);
		bool		ok = true;

		if (!warp_decode_block(t.list, b, vals[warp], hp[warp], lane))
		{
			if (lane == 0)
				*l.bad = 1;
			continue;
		}
		for (uint32_t from = 0; from < n; from += WARP_LANES * RANK_LANE_POSTINGS)
		{
			uint32_t	pos[RANK_LANE_POSTINGS];
			uint32_t	doc[RANK_LANE_POSTINGS];

#pragma unroll
			for (int u = 0; u < RANK_LANE_POSTINGS; u++)
			{
				uint32_t	j = from + u * WARP_LANES + lane;

				pos[u] = base + j;
				doc[u] = j < n ? vals[warp][j] : UINT32_MAX;
			}
			ok &= rank_add_postings(q, t, pos, doc);
		}
		if (!ok)
			*l.bad = 1;
		__syncwarp();
	}
}

/*
 * A block per selection item (RANK_SLOT_CHUNK slots of one query's table):
 * the item's digits counted in shared memory, then added to the query's
 * histogram.  Whether a query is done is the same for the whole block.
 */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_hist_kernel(rank_launch l, uint32_t pass)
{
	__shared__ uint32_t hist[RANK_BINS];

	for (uint64_t item = blockIdx.x; item < l.slot_items; item += gridDim.x)
	{
		uint32_t	j,
					s0,
					s1;

		rank_slot_item(l, item, &j, &s0, &s1);
		const rank_job &q = l.jobs[j];
		rank_select s = *q.sel;

		if (s.done)
			continue;
		for (uint32_t i = threadIdx.x; i < RANK_BINS; i += RANK_SELECT_THREADS)
			hist[i] = 0;
		__syncthreads();
		/*
		 * Lanes with the same digit add once (a match): with ties, and in
		 * the first passes (the exponent bits), most docs share a bin, and
		 * shared atomics on one address serialize.  The loop runs whole
		 * warps, lanes past s1 taking part without a digit.
		 */
		for (uint32_t base = s0; base < s1; base += RANK_SELECT_THREADS)
		{
			uint32_t	slot = base + threadIdx.x;
			uint32_t	digit = 0;
			bool		counted = slot < s1 && rank_slot_digit(q, s, pass, slot, &digit);
			unsigned	peers = __match_any_sync(0xffffffffu, counted ? digit : 0xFFFFFFFFu);

			if (counted && (unsigned) (__ffs(peers) - 1) == (threadIdx.x & 31))
				atomicAdd(&hist[digit], (uint32_t) __popc(peers));
		}
		__syncthreads();
		for (uint32_t i = threadIdx.x; i < RANK_BINS; i += RANK_SELECT_THREADS)
			if (hist[i] != 0)
				atomicAdd(&q.hist[i], hist[i]);
		__syncthreads();
	}
}

typedef cub::BlockScan<uint32_t, RANK_SELECT_THREADS> select_scan;

/*
 * Pass 'pass''s pick of a block from a histogram: thread t sums
 * RANK_PICK_PER_THREAD bins counted from the top, a block scan tells each
 * thread the keys above its bins, and the one thread whose bins reach the
 * wanted count fixes the digit in *s.  What the step writes is read by
 * every thread before the scan's barriers.  Every thread of the block calls
 * it; with 'zero' each clears the bins it read.
 */
__device__ void
block_pick(uint32_t *hist, bool zero, rank_select *s, uint32_t k, uint32_t pass,
		   select_scan::TempStorage &scan_space)
{
	uint32_t	h[RANK_PICK_PER_THREAD];
	uint32_t	sum = 0;
	uint32_t	before;
	uint32_t	total;
	uint32_t	wanted = rank_select_wanted(*s, k, pass);
	uint32_t	top = RANK_BINS - 1 - threadIdx.x * RANK_PICK_PER_THREAD;

#pragma unroll
	for (int i = 0; i < RANK_PICK_PER_THREAD; i++)
	{
		h[i] = hist[top - i];
		sum += h[i];
	}
	select_scan(scan_space).ExclusiveSum(sum, before, total);
	if (pass == 0 && total <= k)
	{
		if (threadIdx.x == 0)
			rank_select_step(s, k, pass, total, 0, 0, 0);
	}
	else if (before < wanted && wanted <= before + sum)
	{
		uint32_t	above = before;

		for (int i = 0; i < RANK_PICK_PER_THREAD; i++)
		{
			if (above + h[i] >= wanted)
			{
				rank_select_step(s, k, pass, total, top - i, above, h[i]);
				break;
			}
			above += h[i];
		}
	}
	if (zero)
	{
#pragma unroll
		for (int i = 0; i < RANK_PICK_PER_THREAD; i++)
			hist[top - i] = 0;
	}
}

/* a block per query: the digit its histogram fixes (block_pick), the histogram left zeroed */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_pick_kernel(rank_launch l, uint32_t pass)
{
	__shared__ select_scan::TempStorage scan_space;
	const rank_job &q = l.jobs[blockIdx.x];

	if (q.sel->done)
		return;
	block_pick(q.hist, true, q.sel, q.k, pass, scan_space);
}

/* a block per selection item: the docs at or above the threshold, each to a place in its query's output */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_collect_kernel(rank_launch l)
{
	for (uint64_t item = blockIdx.x; item < l.slot_items; item += gridDim.x)
	{
		uint32_t	j,
					s0,
					s1;

		rank_slot_item(l, item, &j, &s0, &s1);
		const rank_job &q = l.jobs[j];
		rank_select s = *q.sel;

		if (!s.overflow)
			continue;			/* rank_final_kernel selected it */
		for (uint32_t slot = s0 + threadIdx.x; slot < s1; slot += RANK_SELECT_THREADS)
			if (rank_slot_selected(q, s, slot))
			{
				uint32_t	out = atomicAdd(&q.sel->taken, 1u);

				if (out < q.k)
				{
					q.out_docs[out] = rank_slot_doc(q, slot);
					q.out_scores[out] = q.slots[slot].sum;
				}
			}
	}
}

/* the best of two keys, as the lanes of a warp hold them: every lane gets the warp's */
__device__ rank_key
warp_best(rank_key key)
{
	for (int off = 16; off > 0; off >>= 1)
	{
		uint64_t	lo = __shfl_xor_sync(0xffffffffu, (uint64_t) key, off);
		uint64_t	hi = __shfl_xor_sync(0xffffffffu, (uint64_t) (key >> 64), off);
		rank_key	other = (rank_key) hi << 64 | lo;

		if (other > key)
			key = other;
	}
	return key;
}

/*
 * A block per selection item: each warp's best key into its part
 * (rank_slot_part: warp w sweeps every eighth run of 32 slots, starting at
 * the item's run w), and the item's candidates added to the query's count.
 */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_best_kernel(rank_launch l)
{
	unsigned	lane = threadIdx.x & 31;

	for (uint64_t item = blockIdx.x; item < l.slot_items; item += gridDim.x)
	{
		uint32_t	j,
					s0,
					s1;
		rank_key	best = 0;
		uint32_t	found = 0;

		rank_slot_item(l, item, &j, &s0, &s1);
		const rank_job &q = l.jobs[j];

		for (uint32_t slot = s0 + threadIdx.x; slot < s1; slot += RANK_SELECT_THREADS)
		{
			rank_key	key = rank_slot_key(q, slot);

			found += key != 0;
			if (key > best)
				best = key;
		}
		best = warp_best(best);
		for (int off = 16; off > 0; off >>= 1)
			found += __shfl_xor_sync(0xffffffffu, found, off);
		if (lane == 0)
		{
			if (best != 0)
				rank_set_part_best(q, rank_slot_part(s0 + threadIdx.x), best);
			if (found != 0)
				atomicAdd(&q.sel->matched, found);
		}
	}
}

/*
 * A block per query: thread t takes the best of parts t, t +
 * RANK_BOUND_THREADS, ...; the threads' keys (of distinct docs: no two
 * equal but 0) are sorted, best first, by a bitonic sort in shared memory,
 * and the k-th sets the bound.  Fewer than k: no bound, every candidate
 * survives.  (Counting, for each thread, the keys above its own made the
 * threads holding the best keys read all 1,024: a fifth of a batch's
 * device time.)
 */
__global__ void __launch_bounds__(RANK_BOUND_THREADS)
rank_bound_kernel(rank_launch l)
{
	__shared__ rank_key bests[RANK_BOUND_THREADS];
	const rank_job &q = l.jobs[blockIdx.x];
	uint32_t	nparts = rank_nparts(q);
	uint32_t	t = threadIdx.x;
	rank_key	mine = 0;

	for (uint32_t p = t; p < nparts; p += RANK_BOUND_THREADS)
	{
		rank_key	key = rank_part_best(q, p);

		if (key > mine)
			mine = key;
	}
	bests[t] = mine;
	for (uint32_t size = 2; size <= RANK_BOUND_THREADS; size <<= 1)
		for (uint32_t stride = size / 2; stride > 0; stride >>= 1)
		{
			uint32_t	other = t ^ stride;

			__syncthreads();
			if (other > t)
			{
				rank_key	a = bests[t];
				rank_key	c = bests[other];

				/* runs alternate in direction until the last, which is descending */
				if ((a < c) == ((t & size) == 0))
				{
					bests[t] = c;
					bests[other] = a;
				}
			}
		}
	__syncthreads();
	if (t == 0 && q.k <= RANK_BOUND_THREADS && bests[q.k - 1] != 0)
		rank_set_bound(q.sel, bests[q.k - 1]);
}

/*
 * A block per selection item: its candidates at or above the bound to the
 * query's survivors, a place per warp from one atomic.  With no bound and
 * more candidates than room, the query overflows at once.
 */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_gather_kernel(rank_launch l)
{
	unsigned	lane = threadIdx.x & 31;

	for (uint64_t item = blockIdx.x; item < l.slot_items; item += gridDim.x)
	{
		uint32_t	j,
					s0,
					s1;

		rank_slot_item(l, item, &j, &s0, &s1);
		const rank_job &q = l.jobs[j];
		rank_select s = *q.sel;
		rank_key	bound = rank_bound(s);

		if (bound == 0 && s.matched > RANK_SURVIVORS)
		{
			if (threadIdx.x == 0)
				q.sel->overflow = 1;
			continue;
		}
		for (uint32_t base = s0; base < s1; base += RANK_SELECT_THREADS)
		{
			uint32_t	slot = base + threadIdx.x;
			rank_key	key = slot < s1 ? rank_slot_key(q, slot) : 0;
			bool		keep = key != 0 && key >= bound;
			unsigned	kept = __ballot_sync(0xffffffffu, keep);
			uint32_t	first = 0;

			if (kept == 0)
				continue;
			if (lane == (unsigned) (__ffs(kept) - 1))
				first = atomicAdd(&q.sel->survivors, (uint32_t) __popc(kept));
			first = __shfl_sync(0xffffffffu, first, __ffs(kept) - 1);
			if (keep)
				rank_keep_survivor(q, first + __popc(kept & ((1u << lane) - 1)), slot);
		}
	}
}

/*
 * A block per query: the best k of its survivors by the radix select's
 * passes over them, histograms in shared memory, then those at or above
 * the threshold to the output.  A query with more survivors than room is
 * marked to overflow (the radix passes over its table follow).
 */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_final_kernel(rank_launch l)
{
	__shared__ select_scan::TempStorage scan_space;
	__shared__ uint32_t hist[RANK_BINS];
	__shared__ rank_select st;
	const rank_job &q = l.jobs[blockIdx.x];
	uint32_t	n = q.sel->survivors;
	rank_key	thr;

	if (q.sel->overflow || n > RANK_SURVIVORS)
	{
		if (threadIdx.x == 0)
			q.sel->overflow = 1;
		return;
	}
	if (threadIdx.x == 0)
		memset(&st, 0, sizeof(st));
	__syncthreads();
	for (uint32_t pass = 0; pass < RANK_PASSES && n > q.k; pass++)
	{
		rank_select s;

		for (uint32_t i = threadIdx.x; i < RANK_BINS; i += RANK_SELECT_THREADS)
			hist[i] = 0;
		__syncthreads();
		s = st;
		for (uint32_t base = 0; base < n; base += RANK_SELECT_THREADS)
		{
			uint32_t	i = base + threadIdx.x;
			uint32_t	digit = 0;
			bool		counted = i < n && rank_key_digit(rank_survivor_key(q, i), rank_threshold(s), pass, &digit);
			unsigned	peers = __match_any_sync(0xffffffffu, counted ? digit : 0xFFFFFFFFu);

			if (counted && (unsigned) (__ffs(peers) - 1) == (threadIdx.x & 31))
				atomicAdd(&hist[digit], (uint32_t) __popc(peers));
		}
		__syncthreads();
		block_pick(hist, false, &st, q.k, pass, scan_space);
		__syncthreads();
		if (st.done)
			break;
	}
	thr = rank_threshold(st);
	for (uint32_t i = threadIdx.x; i < n; i += RANK_SELECT_THREADS)
		if (rank_survivor_key(q, i) >= thr)
		{
			uint32_t	out = atomicAdd(&q.sel->taken, 1u);

			if (out < q.k)
			{
				q.out_docs[out] = q.surv_docs[i];
				q.out_scores[out] = q.surv_scores[i];
			}
		}
	if (threadIdx.x == 0)
		q.sel->done = 1;
}

static unsigned
grid_for(uint64_t items, unsigned per_block, unsigned max_blocks)
{
	uint64_t	g = (items + per_block - 1) / per_block;

	return (unsigned) (g < max_blocks ? g : max_blocks);
}

cudaError_t
launch_rank_term(const rank_launch *l, const rank_pass *p, unsigned max_ctas, cudaStream_t stream)
{
	if (p->items == 0)
		return cudaSuccess;
	rank_term_kernel<<<grid_for(p->items, RANK_TERM_WARPS, max_ctas), RANK_TERM_WARPS * 32, 0, stream>>>(*l, *p);
	return cudaGetLastError();
}

cudaError_t
launch_rank_hist(const rank_launch *l, uint32_t pass, unsigned max_ctas, cudaStream_t stream)
{
	if (l->slot_items == 0)
		return cudaSuccess;
	rank_hist_kernel<<<grid_for(l->slot_items, 1, max_ctas), RANK_SELECT_THREADS, 0, stream>>>(*l, pass);
	return cudaGetLastError();
}

cudaError_t
launch_rank_pick(const rank_launch *l, uint32_t pass, cudaStream_t stream)
{
	if (l->njobs == 0)
		return cudaSuccess;
	rank_pick_kernel<<<l->njobs, RANK_SELECT_THREADS, 0, stream>>>(*l, pass);
	return cudaGetLastError();
}

cudaError_t
launch_rank_collect(const rank_launch *l, unsigned max_ctas, cudaStream_t stream)
{
	if (l->slot_items == 0)
		return cudaSuccess;
	rank_collect_kernel<<<grid_for(l->slot_items, 1, max_ctas), RANK_SELECT_THREADS, 0, stream>>>(*l);
	return cudaGetLastError();
}

cudaError_t
launch_rank_best(const rank_launch *l, unsigned max_ctas, cudaStream_t stream)
{
	if (l->slot_items == 0)
		return cudaSuccess;
	rank_best_kernel<<<grid_for(l->slot_items, 1, max_ctas), RANK_SELECT_THREADS, 0, stream>>>(*l);
	return cudaGetLastError();
}

cudaError_t
launch_rank_bound(const rank_launch *l, cudaStream_t stream)
{
	if (l->njobs == 0)
		return cudaSuccess;
	rank_bound_kernel<<<l->njobs, RANK_BOUND_THREADS, 0, stream>>>(*l);
	return cudaGetLastError();
}

cudaError_t
launch_rank_gather(const rank_launch *l, unsigned max_ctas, cudaStream_t stream)
{
	if (l->slot_items == 0)
		return cudaSuccess;
	rank_gather_kernel<<<grid_for(l->slot_items, 1, max_ctas), RANK_SELECT_THREADS, 0, stream>>>(*l);
	return cudaGetLastError();
}

cudaError_t
launch_rank_final(const rank_launch *l, cudaStream_t stream)
{
	if (l->njobs == 0)
		return cudaSuccess;
	rank_final_kernel<<<l->njobs, RANK_SELECT_THREADS, 0, stream>>>(*l);
	return cudaGetLastError();
}
