/*
 * kernels.cu
 *	  The GPU engine's kernels: intersect (every round of every query of a
 *	  batch, in one launch) and pack (the ids each query asks for).
 *
 * Decoding follows Para-EF / Parallel-QS: a warp owns a 128-posting block;
 * each lane loads a 32nd of the unary high field, a warp prefix sum of the
 * popcounts tells each lane where its set bits' postings go, and every lane
 * then joins high and low parts of four postings (dev_field_span says why a
 * 32nd).  Decoded blocks live only in shared memory: an item's candidates,
 * and the blocks of the other lists it merges against.
 */
#include <cub/device/device_scan.cuh>

#include "gpuidx_engine.h"
#include "block_ops.cuh"
#include "kernels.cuh"

/*
 * Decode block b of d into out[0..n) with one warp; hp is the warp's shared
 * scratch of GPUIDX_EF_BLOCK slots.  Returns false on bad bits (a list that
 * passed the host's structure check cannot have them).
 */
__device__ bool
warp_decode_block(const list_desc &d, uint32_t b, uint32_t *out, uint16_t *hp, unsigned lane)
{
	block_shape s = dev_block_shape(d, b);

	if (dev_block_has_field(s))
	{
		uint64_t	w = dev_field_word(d, s, lane);
		uint32_t	ones = dev_popc64(w);
		uint32_t	before = ones;
		uint32_t	total;

		/* inclusive prefix sum of the lanes' popcounts */
		for (int delta = 1; delta < WARP_LANES; delta *= 2)
		{
			uint32_t	v = __shfl_up_sync(0xffffffffu, before, delta);

			if ((int) lane >= delta)
				before += v;
		}
		total = __shfl_sync(0xffffffffu, before, WARP_LANES - 1);
		if (total != s.n || s.nbits > 64 * WARP_LANES)
			return false;
		dev_field_positions(w, lane, dev_field_span(s), before - ones, hp);
		__syncwarp();
	}
	for (uint32_t j = lane; j < s.n; j += WARP_LANES)
		out[j] = dev_block_posting(d, b, s, hp, j);
	__syncwarp();
	return true;
}

/* number of blocks of d whose first posting is <= x, found by the whole warp (warp_bound) */
__device__ uint32_t
warp_blocks_upto(const list_desc &d, uint32_t x, unsigned lane)
{
	warp_bound	w = warp_bound_start(0, d.nblocks);

	for (;;)
	{
		uint32_t	at;
		bool		below = warp_bound_at(w, lane, &at) && dev_block_first(d, at) <= x;

		if (warp_bound_next(&w, __popc(__ballot_sync(0xffffffffu, below))))
			return w.lo;
	}
}

/* shared memory of one warp */
struct warp_space
{
	uint32_t	cand[ITEM_MAX];	/* the item's candidates, compacted after each list */
	uint32_t	vals[ITEM_MAX]; /* a decoded block of the list being merged */
	uint16_t	hp[GPUIDX_EF_BLOCK + 32];
};

/*
 * One work item: source block b's candidates through every other list of
 * the query.  Candidates stay in registers (lane l holds k * 32 + l); each
 * step marks the ones found in a keep mask, and a ballot per 32 compacts
 * them in shared memory - no flag array, scan or compaction pass in global
 * memory.  Returns the survivors, left in ws->cand.
 */
__device__ uint32_t
intersect_item(const batch_launch &l, const query_job &job, uint32_t b, warp_space *ws,
			   unsigned lane, batch_status *status, uint32_t *merged, uint32_t *searched)
{
	uint32_t	n = dev_source_len(l, job, b);
	uint32_t	v[ITEM_PER_LANE];
	unsigned	lt_mask = (1u << lane) - 1;

	if (job.source < 0)
	{
		const uint32_t *init = l.initial + job.initial_offset + (uint64_t) b * GPUIDX_EF_BLOCK;

		for (uint32_t i = lane; i < n; i += WARP_LANES)
			ws->cand[i] = init[i];
	}
	else if (!warp_decode_block(l.descs[job.source], b, ws->cand, ws->hp, lane))
	{
		if (lane == 0)
			status->bad = 1;
		return 0;
	}
	__syncwarp();
#pragma unroll
	for (int k = 0; k < ITEM_PER_LANE; k++)
		v[k] = k * WARP_LANES + lane < n ? ws->cand[k * WARP_LANES + lane] : 0;

	for (uint32_t t = 0; t < job.nterms && n > 0; t++)
	{
		const list_desc &d = l.descs[job.first_term + t];
		uint32_t	lo = ws->cand[0];
		uint32_t	hi = ws->cand[n - 1];
		uint32_t	keep = 0;	/* bit k: v[k] is in d */

		if (d.nblocks > 0 && hi >= dev_block_first(d, 0) && lo <= d.last)
		{
			/* the blocks that can hold a candidate: [bs, be) */
			uint32_t	bs = warp_blocks_upto(d, lo, lane);
			uint32_t	be = warp_blocks_upto(d, hi, lane);

			bs = bs > 0 ? bs - 1 : 0;
			if (dev_step_searches(be - bs, n, l.skip_ratio))
			{
				(*searched)++;
#pragma unroll
				for (int k = 0; k < ITEM_PER_LANE; k++)
					if (k * WARP_LANES + lane < n && dev_search_in(d, v[k], bs, be))
						keep |= 1u << k;
			}
			else
			{
				(*merged)++;
				for (uint32_t blk = bs; blk < be; blk++)
				{
					uint32_t	first = dev_block_first(d, blk);
					uint64_t	end = dev_block_end(d, blk);
					uint32_t	mine = 0;	/* bit k: v[k] falls in this block */
					uint32_t	len;

#pragma unroll
					for (int k = 0; k < ITEM_PER_LANE; k++)
						if (k * WARP_LANES + lane < n && v[k] >= first && v[k] < end)
							mine |= 1u << k;
					if (!__any_sync(0xffffffffu, mine != 0))
						continue;
					if (!warp_decode_block(d, blk, ws->vals, ws->hp, lane))
					{
						if (lane == 0)
							status->bad = 1;
						return 0;
					}
					__syncwarp();
					len = dev_block_len(d, blk);
#pragma unroll
					for (int k = 0; k < ITEM_PER_LANE; k++)
						if ((mine >> k) & 1 && dev_sorted_has(ws->vals, len, v[k]))
							keep |= 1u << k;
					__syncwarp();
				}
			}
		}

		/* compaction: a ballot per 32 candidates gives each survivor its place */
		{
			uint32_t	kept = 0;

			__syncwarp();
#pragma unroll
			for (int k = 0; k < ITEM_PER_LANE; k++)
			{
				unsigned	mask = __ballot_sync(0xffffffffu, (keep >> k) & 1);

				if ((keep >> k) & 1)
					ws->cand[kept + __popc(mask & lt_mask)] = v[k];
				kept += __popc(mask);
			}
			__syncwarp();
			n = kept;
#pragma unroll
			for (int k = 0; k < ITEM_PER_LANE; k++)
				v[k] = k * WARP_LANES + lane < n ? ws->cand[k * WARP_LANES + lane] : 0;
		}
	}
	return n;
}

#define INTERSECT_WARPS 8

__global__ void __launch_bounds__(INTERSECT_WARPS * 32)
intersect_kernel(batch_launch l, uint32_t *slots, uint32_t *counts, batch_status *status)
{
	__shared__ warp_space space[INTERSECT_WARPS];
	__shared__ unsigned long long cta_merged;
	__shared__ unsigned long long cta_searched;
	unsigned	lane = threadIdx.x & 31;
	unsigned	warp = threadIdx.x / 32;
	uint64_t	nwarps = (uint64_t) gridDim.x * INTERSECT_WARPS;
	uint32_t	merged = 0;
	uint32_t	searched = 0;

	if (threadIdx.x == 0)
	{
		cta_merged = cta_searched = 0;
		if (blockIdx.x == 0)
			counts[l.items] = 0;	/* the scan's last entry */
	}
	__syncthreads();
	for (uint64_t item = (uint64_t) blockIdx.x * INTERSECT_WARPS + warp; item < l.items; item += nwarps)
	{
		uint32_t	j = find_job(l.prefix, l.njobs, item);
		query_job	job = l.jobs[j];
		uint32_t	b = (uint32_t) (item - l.prefix[j]);
		uint32_t	n = intersect_item(l, job, b, &space[warp], lane, status, &merged, &searched);

		if (job.store)
		{
			uint32_t   *out = slots + job.slot_base + (uint64_t) b * job.slot_len;

			for (uint32_t i = lane; i < n; i += WARP_LANES)
				out[i] = space[warp].cand[i];
		}
		if (lane == 0)
			counts[item] = n;
		__syncwarp();
	}
	if (lane == 0 && (merged | searched) != 0)
	{
		atomicAdd(&cta_merged, (unsigned long long) merged);
		atomicAdd(&cta_searched, (unsigned long long) searched);
	}
	__syncthreads();
	if (threadIdx.x == 0 && (cta_merged | cta_searched) != 0)
	{
		atomicAdd(&status->merged, cta_merged);
		atomicAdd(&status->searched, cta_searched);
	}
}

/*
 * One warp per item: its survivors to their place among its query's ids
 * (pos: the exclusive scan of counts), as far as the query asks; the first
 * item of each query writes the query's total.  results and totals are in
 * mapped host memory, so only what the queries ask for crosses PCIe, with no
 * copy to wait for.
 */
__global__ void
pack_kernel(batch_launch l, const uint32_t *slots, const uint32_t *pos, const batch_status *status,
			uint32_t *results, uint32_t *totals, batch_status *status_out)
{
	unsigned	lane = threadIdx.x & 31;
	uint64_t	nwarps = (uint64_t) gridDim.x * (blockDim.x / 32);

	if (blockIdx.x == 0 && threadIdx.x == 0)
		*status_out = *status;
	for (uint64_t item = (uint64_t) blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; item < l.items;
		 item += nwarps)
	{
		uint32_t	j = find_job(l.prefix, l.njobs, item);
		query_job	job = l.jobs[j];
		uint32_t	b = (uint32_t) (item - l.prefix[j]);
		uint32_t	start = pos[l.prefix[j]];
		uint32_t	total = pos[l.prefix[j + 1]] - start;
		uint32_t	off = pos[item] - start;
		uint32_t	n = pos[item + 1] - pos[item];
		uint32_t	wanted = gpuidx_result_wanted(job.result, total);

		if (b == 0 && lane == 0)
			totals[job.query] = total;
		if (!job.store || off >= wanted)
			continue;
		if (n > wanted - off)
			n = wanted - off;
		for (uint32_t i = lane; i < n; i += WARP_LANES)
			results[job.result_base + off + i] = slots[job.slot_base + (uint64_t) b * job.slot_len + i];
	}
}

static unsigned
grid_for(uint64_t items, unsigned per_block, unsigned max_blocks)
{
	uint64_t	g = (items + per_block - 1) / per_block;

	return (unsigned) (g < max_blocks ? g : max_blocks);
}

cudaError_t
launch_intersect(const batch_launch *l, unsigned max_ctas, uint32_t *slots, uint32_t *counts,
				 batch_status *status, cudaStream_t stream)
{
	if (l->items == 0)
		return cudaSuccess;
	intersect_kernel<<<grid_for(l->items, INTERSECT_WARPS, max_ctas), INTERSECT_WARPS * 32, 0, stream>>>(
		*l, slots, counts, status);
	return cudaGetLastError();
}

cudaError_t
launch_pack(const batch_launch *l, unsigned max_ctas, const uint32_t *slots, const uint32_t *pos,
			const batch_status *status, uint32_t *results, uint32_t *totals, batch_status *status_out,
			cudaStream_t stream)
{
	if (l->items == 0)
		return cudaSuccess;
	pack_kernel<<<grid_for(l->items, 8, max_ctas), 256, 0, stream>>>(*l, slots, pos, status, results,
																	 totals, status_out);
	return cudaGetLastError();
}

cudaError_t
scan_counts(void *temp, size_t *temp_bytes, const uint32_t *counts, uint32_t *pos, uint64_t n,
			cudaStream_t stream)
{
	return cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, counts, pos, (int64_t) n + 1, stream);
}
