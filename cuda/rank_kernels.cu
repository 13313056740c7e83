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
#define RANK_SMALL_THREADS 512

/*
 * Pass 'pass' of the selection's pick over one query's histogram, by a
 * block of THREADS: thread t sums the bins it holds counted from the top, a
 * block scan tells each thread the keys above its bins, and the one thread
 * whose bins reach the wanted count fixes the digit (rank_select_step).
 * The histogram is left zeroed.  What the step writes is read by every
 * thread after the caller's next barrier.
 */
template <int THREADS>
static __device__ void
rank_block_pick(const rank_job &q, uint32_t *hist, uint32_t pass,
				typename cub::BlockScan<uint32_t, THREADS>::TempStorage &scan_space)
{
	const int	per_thread = RANK_BINS / THREADS;
	rank_select *s = q.sel;
	uint32_t	h[per_thread];
	uint32_t	sum = 0;
	uint32_t	before;
	uint32_t	total;
	uint32_t	wanted = rank_select_wanted(*s, q.k, pass);
	uint32_t	top = RANK_BINS - 1 - threadIdx.x * per_thread;

#pragma unroll
	for (int i = 0; i < per_thread; i++)
	{
		h[i] = hist[top - i];
		sum += h[i];
	}
	cub::BlockScan<uint32_t, THREADS>(scan_space).ExclusiveSum(sum, before, total);
	if (pass == 0 && total <= q.k)
	{
		if (threadIdx.x == 0)
			rank_select_step(s, q.k, pass, total, 0, 0, 0);
	}
	else if (before < wanted && wanted <= before + sum)
	{
		uint32_t	above = before;

		for (int i = 0; i < per_thread; i++)
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
	for (int i = 0; i < per_thread; i++)
		hist[top - i] = 0;
}

/*
 * Slots [s0, s1) of q counted into hist by a block's threads, lanes with the
 * same digit adding once (a match): with ties, and in the first passes (the
 * exponent bits), most docs share a bin, and atomics on one address
 * serialize.  The loop runs whole warps, lanes past s1 taking part without
 * a digit.
 */
template <int THREADS>
static __device__ void
rank_block_count(const rank_job &q, const rank_select &s, uint32_t pass, uint32_t s0, uint32_t s1,
				 uint32_t *hist)
{
	for (uint32_t base = s0; base < s1; base += THREADS)
	{
		uint32_t	slot = base + threadIdx.x;
		uint32_t	digit = 0;
		bool		counted = slot < s1 && rank_slot_digit(q, s, pass, slot, &digit);
		unsigned	peers = __match_any_sync(0xffffffffu, counted ? digit : 0xFFFFFFFFu);

		if (counted && (unsigned) (__ffs(peers) - 1) == (threadIdx.x & 31))
			atomicAdd(&hist[digit], (uint32_t) __popc(peers));
	}
}

/* slots [s0, s1) of q at or above the threshold, each to a place in the query's output */
template <int THREADS>
static __device__ void
rank_block_collect(const rank_job &q, const rank_select &s, uint32_t s0, uint32_t s1)
{
	for (uint32_t slot = s0 + threadIdx.x; slot < s1; slot += THREADS)
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
		rank_block_count<RANK_SELECT_THREADS>(q, s, pass, s0, s1, hist);
		__syncthreads();
		for (uint32_t i = threadIdx.x; i < RANK_BINS; i += RANK_SELECT_THREADS)
			if (hist[i] != 0)
				atomicAdd(&q.hist[i], hist[i]);
		__syncthreads();
	}
}

/* a block per query: its pick from the histogram the hist kernel added up */
__global__ void __launch_bounds__(RANK_SELECT_THREADS)
rank_pick_kernel(rank_launch l, uint32_t pass)
{
	__shared__ typename cub::BlockScan<uint32_t, RANK_SELECT_THREADS>::TempStorage scan_space;
	const rank_job &q = l.jobs[blockIdx.x];

	if (q.sel->done)
		return;
	rank_block_pick<RANK_SELECT_THREADS>(q, q.hist, pass, scan_space);
}

/*
 * A block per small query (RANK_SMALL_POSTINGS), the whole of it in one
 * launch: each term in turn (a barrier between terms keeps the sums in the
 * query's term order), a warp per list block; then the selection's passes
 * over a histogram in shared memory until the threshold is fixed; then the
 * collection.  A batch of small queries costs one launch, not the term
 * passes and the twenty launches of the select over the whole device.
 */
__global__ void __launch_bounds__(RANK_SMALL_THREADS)
rank_small_kernel(rank_launch l, const uint32_t *jobs)
{
	const int	warps = RANK_SMALL_THREADS / 32;
	__shared__ uint32_t vals[warps][ITEM_MAX];
	__shared__ uint16_t hp[warps][GPUIDX_EF_BLOCK + 32];
	__shared__ uint32_t hist[RANK_BINS];
	__shared__ typename cub::BlockScan<uint32_t, RANK_SMALL_THREADS>::TempStorage scan_space;
	const rank_job &q = l.jobs[jobs[blockIdx.x]];
	unsigned	lane = threadIdx.x & 31;
	unsigned	warp = threadIdx.x / 32;

	for (uint32_t t = 0; t < q.nterms; t++)
	{
		const rank_term_desc &td = l.terms[q.first_term + t];

		for (uint32_t b = warp; b < td.list.nblocks; b += warps)
		{
			uint32_t	n = dev_block_len(td.list, b);
			uint32_t	base = b * dev_block_capacity(td.list);
			bool		ok = true;

			if (!warp_decode_block(td.list, b, vals[warp], hp[warp], lane))
			{
				if (lane == 0)
					*l.bad = 1;
				continue;
			}
			for (uint32_t j = lane; j < n; j += WARP_LANES)
				ok &= rank_add_posting(q, td, base + j, vals[warp][j]);
			if (!ok)
				*l.bad = 1;
			__syncwarp();
		}
		__syncthreads();
	}
	for (uint32_t i = threadIdx.x; i < RANK_BINS; i += RANK_SMALL_THREADS)
		hist[i] = 0;
	__syncthreads();
	for (uint32_t pass = 0; pass < RANK_PASSES; pass++)
	{
		rank_select s = *q.sel;

		if (s.done)
			break;
		rank_block_count<RANK_SMALL_THREADS>(q, s, pass, 0, q.nslots, hist);
		__syncthreads();
		rank_block_pick<RANK_SMALL_THREADS>(q, hist, pass, scan_space);
		__syncthreads();
	}
	rank_block_collect<RANK_SMALL_THREADS>(q, *q.sel, 0, q.nslots);
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

		rank_block_collect<RANK_SELECT_THREADS>(q, s, s0, s1);
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
launch_rank_small(const rank_launch *l, const uint32_t *jobs, uint32_t njobs, cudaStream_t stream)
{
	if (njobs == 0)
		return cudaSuccess;
	rank_small_kernel<<<njobs, RANK_SMALL_THREADS, 0, stream>>>(*l, jobs);
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
