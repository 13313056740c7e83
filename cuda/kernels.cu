/*
 * kernels.cu
 *	  Decode, merge, search and compaction kernels of the GPU engine.
 *
 * Decoding follows Para-EF / Parallel-QS: a warp owns a 128-posting block;
 * each lane loads one 64-bit word of the unary high field, a warp prefix sum
 * of the words' popcounts tells each lane where its set bits' postings go,
 * and every lane then joins high and low parts of four postings.  (A lane
 * takes a 32nd of the field rather than a whole word: see dev_field_span.)
 * Merging is fused with decoding: the list's block never leaves shared memory.
 */
#include <cub/device/device_scan.cuh>

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

__global__ void
decode_kernel(round_launch l, const list_desc *descs, uint32_t *a, int *bad)
{
	__shared__ uint16_t hp[WARPS_PER_BLOCK][GPUIDX_EF_BLOCK + 32];
	unsigned	lane = threadIdx.x & 31;
	unsigned	warp = threadIdx.x / 32;
	uint64_t	item = (uint64_t) blockIdx.x * WARPS_PER_BLOCK + warp;
	round_job	job;
	const list_desc *d;
	uint32_t	b;
	uint32_t	cap;

	if (item >= l.items)
		return;
	job = locate_item(l, item, &b);
	d = &descs[job.desc];
	cap = d->codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;
	if (!warp_decode_block(*d, b, a + job.out_offset + (size_t) b * cap, hp[warp], lane) && lane == 0)
		*bad = 1;
}

/* first index in a[lo, hi) with a[i] >= x, found by the whole warp (warp_bound) */
__device__ uint32_t
warp_lower_bound(const uint32_t *a, uint32_t lo, uint32_t hi, uint64_t x, unsigned lane)
{
	warp_bound	w = warp_bound_start(lo, hi);

	while (!warp_bound_next(&w, __popc(__ballot_sync(0xffffffffu, warp_bound_probe(w, a, x, lane)))))
		;
	return w.lo;
}

__global__ void
merge_kernel(round_launch l, const list_desc *descs, const uint32_t *a, uint32_t *flags, int *bad)
{
	__shared__ uint32_t vals[WARPS_PER_BLOCK][GPUIDX_LRC_SEGMENT];
	__shared__ uint16_t hp[WARPS_PER_BLOCK][GPUIDX_EF_BLOCK + 32];
	unsigned	lane = threadIdx.x & 31;
	unsigned	warp = threadIdx.x / 32;
	uint64_t	item = (uint64_t) blockIdx.x * WARPS_PER_BLOCK + warp;
	round_job	job;
	const list_desc *d;
	const uint32_t *q;
	uint32_t	b;
	uint32_t	s;
	uint32_t	e;

	if (item >= l.items)
		return;
	job = locate_item(l, item, &b);
	d = &descs[job.desc];
	q = a + job.a_offset;

	/* the current elements inside this block's range [first, end) */
	s = warp_lower_bound(q, 0, job.a_count, dev_block_first(*d, b), lane);
	e = warp_lower_bound(q, s, job.a_count, dev_block_end(*d, b), lane);
	if (s == e)
		return;
	if (!warp_decode_block(*d, b, vals[warp], hp[warp], lane))
	{
		if (lane == 0)
			*bad = 1;
		return;
	}
	__syncwarp();

	/* merge path: each lane walks its own stretch of the merged order */
	dev_merge_path_lane(a + job.a_offset + s, e - s, vals[warp], dev_block_len(*d, b), lane,
						WARP_LANES, flags + job.a_offset + s);
}

__global__ void
search_kernel(round_launch l, const list_desc *descs, const uint32_t *a, uint32_t *flags)
{
	uint64_t	item = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	round_job	job;
	uint32_t	i;

	if (item >= l.items)
		return;
	job = locate_item(l, item, &i);
	i += job.a_offset;
	if (job.desc < 0)
	{
		flags[i] = 1;
		return;
	}
	flags[i] = dev_search_one(descs[job.desc], a[i]) ? 1 : 0;
}

__global__ void
compact_kernel(const uint32_t *a, const uint32_t *flags, const uint32_t *pos, uint64_t n,
			   uint32_t *a_out)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n && flags[i])
		a_out[pos[i]] = a[i];
}

__global__ void
count_kernel(const uint32_t *pos, const uint32_t *q_offsets, uint32_t nq, uint32_t *counts)
{
	uint32_t	q = blockIdx.x * blockDim.x + threadIdx.x;

	if (q < nq)
		counts[q] = pos[q_offsets[q + 1]] - pos[q_offsets[q]];
}

__global__ void
gather_kernel(round_launch l, const uint32_t *a, uint32_t *out)
{
	uint64_t	item = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t	i;
	round_job	job;

	if (item >= l.items)
		return;
	job = locate_item(l, item, &i);
	out[job.out_offset + i] = a[job.a_offset + i];
}

static unsigned
grid_for(uint64_t items, unsigned per_block)
{
	return (unsigned) ((items + per_block - 1) / per_block);
}

cudaError_t
launch_decode(const round_launch *l, const list_desc *descs, uint32_t *a, int *bad,
			  cudaStream_t stream)
{
	if (l->items == 0)
		return cudaSuccess;
	decode_kernel<<<grid_for(l->items, WARPS_PER_BLOCK), WARPS_PER_BLOCK * 32, 0, stream>>>(*l, descs, a, bad);
	return cudaGetLastError();
}

cudaError_t
launch_merge(const round_launch *l, const list_desc *descs, const uint32_t *a, uint32_t *flags,
			 int *bad, cudaStream_t stream)
{
	if (l->items == 0)
		return cudaSuccess;
	merge_kernel<<<grid_for(l->items, WARPS_PER_BLOCK), WARPS_PER_BLOCK * 32, 0, stream>>>(*l, descs, a, flags, bad);
	return cudaGetLastError();
}

cudaError_t
launch_search(const round_launch *l, const list_desc *descs, const uint32_t *a, uint32_t *flags,
			  cudaStream_t stream)
{
	if (l->items == 0)
		return cudaSuccess;
	search_kernel<<<grid_for(l->items, 256), 256, 0, stream>>>(*l, descs, a, flags);
	return cudaGetLastError();
}

cudaError_t
launch_compact(const uint32_t *a, const uint32_t *flags, const uint32_t *pos, uint64_t n,
			   uint32_t *a_out, const uint32_t *q_offsets, uint32_t nq, uint32_t *counts,
			   cudaStream_t stream)
{
	if (n > 0)
		compact_kernel<<<grid_for(n, 256), 256, 0, stream>>>(a, flags, pos, n, a_out);
	if (nq > 0)
		count_kernel<<<grid_for(nq, 256), 256, 0, stream>>>(pos, q_offsets, nq, counts);
	return cudaGetLastError();
}

cudaError_t
launch_gather(const round_launch *l, const uint32_t *a, uint32_t *out, cudaStream_t stream)
{
	if (l->items == 0)
		return cudaSuccess;
	gather_kernel<<<grid_for(l->items, 256), 256, 0, stream>>>(*l, a, out);
	return cudaGetLastError();
}

cudaError_t
scan_flags(void *temp, size_t *temp_bytes, const uint32_t *flags, uint32_t *pos, uint64_t n,
		   cudaStream_t stream)
{
	return cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, flags, pos, (int64_t) n + 1, stream);
}
