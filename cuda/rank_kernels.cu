/*
 * rank_kernels.cu
 *	  Ranked queries on the device: term passes into accumulator tables, then
 *	  a radix select of each query's best k (rank_ops.cuh has the steps and
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
 * into shared memory, then each lane adds its postings.  Within a launch a
 * doc is in one item of a query at most, so the plain read-add-write of its
 * sum races with nothing.
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
		const rank_job &q = l.jobs[p.jobs[at]];
		const rank_term_desc &t = l.terms[q.first_term + p.term];
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
		for (uint32_t j = lane; j < n; j += WARP_LANES)
			ok &= rank_add_posting(q, t, base + j, vals[warp][j]);
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

/*
 * A block per query: thread t sums RANK_PICK_PER_THREAD bins counted from
 * the top, a block scan tells each thread the keys above its bins, and the
 * one thread whose bins reach the wanted count fixes the digit.  What the
 * step writes is read by every thread before the scan's barriers.
 */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_pick_kernel(rank_launch l, uint32_t pass)
{
	typedef cub::BlockScan<uint32_t, RANK_SELECT_THREADS> block_scan;
	__shared__ typename block_scan::TempStorage scan_space;
	const rank_job &q = l.jobs[blockIdx.x];
	rank_select *s = q.sel;
	uint32_t	h[RANK_PICK_PER_THREAD];
	uint32_t	sum = 0;
	uint32_t	before;
	uint32_t	total;
	uint32_t	wanted;
	uint32_t	top = RANK_BINS - 1 - threadIdx.x * RANK_PICK_PER_THREAD;

	if (s->done)
		return;
	wanted = rank_select_wanted(*s, q.k, pass);
#pragma unroll
	for (int i = 0; i < RANK_PICK_PER_THREAD; i++)
	{
		h[i] = q.hist[top - i];
		sum += h[i];
	}
	block_scan(scan_space).ExclusiveSum(sum, before, total);
	if (pass == 0 && total <= q.k)
	{
		if (threadIdx.x == 0)
			rank_select_step(s, q.k, pass, total, 0, 0, 0);
	}
	else if (before < wanted && wanted <= before + sum)
	{
		uint32_t	above = before;

		for (int i = 0; i < RANK_PICK_PER_THREAD; i++)
		{
			if (above + h[i] >= wanted)
			{
				rank_select_step(s, q.k, pass, total, top - i, above, h[i]);
				break;
			}
			above += h[i];
		}
	}
#pragma unroll
	for (int i = 0; i < RANK_PICK_PER_THREAD; i++)
		q.hist[top - i] = 0;
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

		for (uint32_t slot = s0 + threadIdx.x; slot < s1; slot += RANK_SELECT_THREADS)
			if (rank_slot_selected(q, s, slot))
			{
				uint32_t	out = atomicAdd(&q.sel->taken, 1u);

				if (out < q.k)
				{
					q.out_docs[out] = rank_slot_doc(q, slot);
					q.out_scores[out] = q.acc[slot];
				}
			}
	}
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
