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
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "gpuidx_engine.h"
#include "block_ops.cuh"
#include "kernels.cuh"
#include "warp_decode.cuh"

/*
 * Number of blocks of d whose first posting is <= x, found by the whole
 * warp, knowing that it is at least 'from' (warp_seek, then warp_bound).
 */
__device__ uint32_t
warp_blocks_upto(const list_desc &d, uint32_t x, uint32_t from, unsigned lane)
{
	warp_bound	w = warp_seek_start(from, d.nblocks);
	bool		seeking = true;

	for (;;)
	{
		uint32_t	at;
		bool		below = warp_bound_at(w, lane, &at) && dev_block_first(d, at) <= x;
		uint32_t	nbelow = __popc(__ballot_sync(0xffffffffu, below));

		if (seeking ? warp_seek_next(&w, nbelow, d.nblocks) : warp_bound_next(&w, nbelow))
			return w.lo;
		seeking = false;
	}
}

/* shared memory of one warp */
struct warp_space
{
	uint32_t	cand[ITEM_MAX];	/* the item's candidates, compacted after each list */
	uint32_t	vals[ITEM_MAX]; /* a decoded block of a list being merged */
	uint16_t	hp[GPUIDX_EF_BLOCK + 32];
	uint32_t	cursor[GPUIDX_ENGINE_MAX_TERMS];	/* per list: blocks behind the unit's candidates */
	uint32_t	vals_term;		/* which block vals holds (term, block); term ~0: none */
	uint32_t	vals_block;
};

/*
 * One work item: source block b's candidates through every other list of
 * the query: kept when found in a list, or, in the job's excluded lists,
 * when not found.  Candidates stay in registers (lane l holds k * 32 + l); each
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
		uint32_t	keep = 0;	/* bit k: v[k] is in d (then: v[k] stays) */
		bool		exclude = t + job.nexclude >= job.nterms;

		if (d.nblocks > 0 && hi >= dev_block_first(d, 0) && lo <= d.last)
		{
			/*
			 * the blocks that can hold a candidate: [bs, be); the unit's next
			 * item starts above hi, so its search starts at be
			 */
			uint32_t	bs = warp_blocks_upto(d, lo, ws->cursor[t], lane);
			uint32_t	be = warp_blocks_upto(d, hi, bs, lane);

			__syncwarp();
			if (lane == 0)
				ws->cursor[t] = be;
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
					if (ws->vals_term != t || ws->vals_block != blk)
					{
						__syncwarp();
						if (!warp_decode_block(d, blk, ws->vals, ws->hp, lane))
						{
							if (lane == 0)
								status->bad = 1;
							return 0;
						}
						if (lane == 0)
						{
							ws->vals_term = t;
							ws->vals_block = blk;
						}
						__syncwarp();
					}
					len = dev_block_len(d, blk);
#pragma unroll
					for (int k = 0; k < ITEM_PER_LANE; k++)
						if ((mine >> k) & 1 && dev_sorted_has(ws->vals, len, v[k]))
							keep |= 1u << k;
					__syncwarp();
				}
			}
		}

		/* an excluded list keeps the candidates it does not hold */
		if (exclude)
		{
			uint32_t	present = 0;

#pragma unroll
			for (int k = 0; k < ITEM_PER_LANE; k++)
				if (k * WARP_LANES + lane < n)
					present |= 1u << k;
			keep = present & ~keep;
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

/* the units of a grid-stride loop over this block's warps; every thread of the block calls it */
__device__ void
intersect_units(const batch_launch &l, uint32_t *slots, uint32_t *counts, batch_status *status,
				warp_space *space)
{
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
	for (uint64_t unit = (uint64_t) blockIdx.x * INTERSECT_WARPS + warp; unit < l.units; unit += nwarps)
	{
		uint32_t	j,
					b0,
					b1;
		warp_space *ws = &space[warp];

		dev_unit_items(l, unit, &j, &b0, &b1);
		query_job	job = l.jobs[j];
		uint64_t	first_item = l.prefix[j];

		__syncwarp();
		for (uint32_t t = lane; t < job.nterms; t += WARP_LANES)
			ws->cursor[t] = 0;
		if (lane == 0)
			ws->vals_term = ~0u;
		__syncwarp();
		for (uint32_t b = b0; b < b1; b++)
		{
			uint32_t	n = intersect_item(l, job, b, ws, lane, status, &merged, &searched);

			if (job.store)
			{
				uint32_t   *out = slots + job.slot_base + (uint64_t) b * job.slot_len;

				for (uint32_t i = lane; i < n; i += WARP_LANES)
					out[i] = ws->cand[i];
			}
			if (lane == 0)
				counts[first_item + b] = n;
			__syncwarp();
		}
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

__global__ void __launch_bounds__(INTERSECT_WARPS * 32)
intersect_kernel(batch_launch l, uint32_t *slots, uint32_t *counts, batch_status *status)
{
	__shared__ warp_space space[INTERSECT_WARPS];

	intersect_units(l, slots, counts, status, space);
}

/*
 * An item's survivors to their place among its query's ids (pos: the
 * exclusive scan of counts), as far as the query asks; the first item of
 * each query writes the query's total.  results and totals are in mapped
 * host memory, so only what the queries ask for crosses PCIe, with no copy
 * to wait for.
 */
__device__ void
pack_item(const batch_launch &l, uint64_t item, const uint32_t *pos, const uint32_t *slots,
		  uint32_t *results, uint32_t *totals, unsigned lane)
{
	item_place	p = dev_item_place(l, item, pos);
	const query_job &job = l.jobs[p.job];

	if (p.b == 0 && lane == 0)
		totals[job.query] = p.total;
	for (uint32_t i = lane; i < p.n; i += WARP_LANES)
		results[job.result_base + p.off + i] = __ldcg(&slots[job.slot_base + (uint64_t) p.b * job.slot_len + i]);
}

/* one warp per item, pos scanned beforehand (CUB) */
__global__ void
pack_kernel(batch_launch l, const uint32_t *slots, const uint32_t *pos, const batch_status *status,
			uint32_t *results, uint32_t *totals, batch_status *status_out)
{
	uint64_t	nwarps = (uint64_t) gridDim.x * (blockDim.x / 32);

	if (blockIdx.x == 0 && threadIdx.x == 0)
		*status_out = *status;
	for (uint64_t item = (uint64_t) blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; item < l.items;
		 item += nwarps)
		pack_item(l, item, pos, slots, results, totals, threadIdx.x & 31);
}

/*
 * A small batch's scan and pack in one block, pos in shared memory: one
 * launch instead of CUB's two and the pack's, for batches of up to
 * SMALL_PACK_ITEMS items (a single query's latency is mostly launches).
 */
#define SMALL_PACK_THREADS 1024
#define SMALL_PACK_PER_THREAD 8
#define SMALL_PACK_ITEMS (SMALL_PACK_THREADS * SMALL_PACK_PER_THREAD - 1)

/*
 * pos = the exclusive scan of counts[0..l.items) in shared memory, then
 * every item packed, by one block of THREADS threads.  counts are read from
 * L2: in the one-launch path other blocks wrote them in this launch.
 */
template <int THREADS, int PER_THREAD>
__device__ void
block_scan_pack(const batch_launch &l, const uint32_t *counts, uint32_t *pos, const uint32_t *slots,
				uint32_t *results, uint32_t *totals)
{
	typedef cub::BlockScan<uint32_t, THREADS> block_scan;
	__shared__ typename block_scan::TempStorage scan_space;
	uint32_t	c[PER_THREAD];
	uint32_t	sum = 0;
	uint32_t	before;
	uint64_t	base = (uint64_t) threadIdx.x * PER_THREAD;

#pragma unroll
	for (int k = 0; k < PER_THREAD; k++)
	{
		c[k] = base + k < l.items ? __ldcg(&counts[base + k]) : 0;
		sum += c[k];
	}
	block_scan(scan_space).ExclusiveSum(sum, before);
#pragma unroll
	for (int k = 0; k < PER_THREAD; k++)
	{
		pos[base + k] = before;
		before += c[k];
	}
	__syncthreads();
	for (uint64_t item = threadIdx.x / 32; item < l.items; item += THREADS / 32)
		pack_item(l, item, pos, slots, results, totals, threadIdx.x & 31);
}

__global__ void __launch_bounds__(SMALL_PACK_THREADS)
small_pack_kernel(batch_launch l, const uint32_t *slots, const uint32_t *counts,
				  const batch_status *status, uint32_t *results, uint32_t *totals,
				  batch_status *status_out)
{
	__shared__ uint32_t pos[SMALL_PACK_THREADS * SMALL_PACK_PER_THREAD];

	if (threadIdx.x == 0)
		*status_out = *status;
	block_scan_pack<SMALL_PACK_THREADS, SMALL_PACK_PER_THREAD>(l, counts, pos, slots, results, totals);
}

/*
 * A small batch in one launch: the batch travels in the parameters (no
 * upload); every block intersects its units, and the last block to finish
 * (a ticket taken after a fence) scans the counts in shared memory, packs
 * the ids into mapped memory, hands the status over and leaves the state
 * zeroed for the next batch.  Reads of what other blocks wrote go to L2
 * (__ldcg, atomics).
 */
__global__ void __launch_bounds__(INTERSECT_WARPS * 32)
small_kernel(const __grid_constant__ small_launch s, uint32_t *slots, uint32_t *counts,
			 small_state *state, uint32_t *results, uint32_t *totals, batch_status *status_out)
{
	__shared__ warp_space space[INTERSECT_WARPS];
	__shared__ uint32_t pos[SMALL_ITEMS + 1];
	__shared__ bool last;
	batch_launch l = s.l;

	l.jobs = s.jobs;
	l.prefix = s.prefix;
	l.unit_prefix = s.unit_prefix;
	l.descs = s.descs;
	intersect_units(l, slots, counts, &state->status, space);
	__syncthreads();
	if (threadIdx.x == 0)
	{
		__threadfence();
		last = atomicAdd(&state->blocks_done, 1u) == gridDim.x - 1;
	}
	__syncthreads();
	if (!last)
		return;
	__threadfence();
	block_scan_pack<INTERSECT_WARPS * 32, (SMALL_ITEMS + 1) / (INTERSECT_WARPS * 32)>(l, counts, pos, slots,
																						results, totals);
	if (threadIdx.x == 0)
	{
		batch_status st;

		st.bad = atomicExch(&state->status.bad, 0);
		st.unused = 0;
		st.merged = atomicExch(&state->status.merged, 0ull);
		st.searched = atomicExch(&state->status.searched, 0ull);
		*status_out = st;
		state->blocks_done = 0;
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
	intersect_kernel<<<grid_for(l->units, INTERSECT_WARPS, max_ctas), INTERSECT_WARPS * 32, 0, stream>>>(
		*l, slots, counts, status);
	return cudaGetLastError();
}

cudaError_t
launch_pack(const batch_launch *l, unsigned max_ctas, void *temp, size_t *temp_bytes,
			const uint32_t *slots, const uint32_t *counts, uint32_t *pos, const batch_status *status,
			uint32_t *results, uint32_t *totals, batch_status *status_out, cudaStream_t stream)
{
	cudaError_t err;

	if (temp == NULL)
	{
		/* the scan's temporary storage, asked before the launch */
		*temp_bytes = 0;
		if (l->items <= SMALL_PACK_ITEMS)
			return cudaSuccess;
		return cub::DeviceScan::ExclusiveSum(NULL, *temp_bytes, counts, pos, (int64_t) l->items + 1, stream);
	}
	if (l->items == 0)
		return cudaSuccess;
	if (l->items <= SMALL_PACK_ITEMS)
	{
		small_pack_kernel<<<1, SMALL_PACK_THREADS, 0, stream>>>(*l, slots, counts, status, results, totals,
																 status_out);
		return cudaGetLastError();
	}
	err = cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, counts, pos, (int64_t) l->items + 1, stream);
	if (err != cudaSuccess)
		return err;
	pack_kernel<<<grid_for(l->items, 8, max_ctas), 256, 0, stream>>>(*l, slots, pos, status, results,
																	 totals, status_out);
	return cudaGetLastError();
}

cudaError_t
launch_small(const small_launch *s, unsigned max_ctas, uint32_t *slots, uint32_t *counts,
			 small_state *state, uint32_t *results, uint32_t *totals, batch_status *status_out,
			 cudaStream_t stream)
{
	small_kernel<<<grid_for(s->l.units, INTERSECT_WARPS, max_ctas), INTERSECT_WARPS * 32, 0, stream>>>(
		*s, slots, counts, state, results, totals, status_out);
	return cudaGetLastError();
}
