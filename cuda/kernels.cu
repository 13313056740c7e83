/*
 * kernels.cu
 *	  Decode, merge, search and compaction kernels of the GPU engine.
 *
 * Decoding follows Para-EF / Parallel-QS: a warp owns a 128-posting block;
 * each lane loads one 64-bit word of the unary high field, a warp prefix sum
 * of the words' popcounts tells each lane where its set bits' postings go,
 * and every lane then joins high and low parts of four postings.  Merging is
 * fused with decoding: the list's block never leaves shared memory.
 */
#include <cub/device/device_scan.cuh>

#include "kernels.cuh"

/* the job that work item 'item' belongs to: last j with prefix[j] <= item */
__device__ __forceinline__ uint32_t
find_job(const uint64_t *prefix, uint32_t njobs, uint64_t item)
{
	uint32_t	lo = 0;
	uint32_t	hi = njobs;

	while (hi - lo > 1)
	{
		uint32_t	mid = (lo + hi) / 2;

		if (__ldg(&prefix[mid]) <= item)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Decode block b of d into out[0..n) with one warp; hp is the warp's
 * shared scratch of GPUIDX_EF_BLOCK slots.  Returns false on bad bits (a
 * list that passed the host's structure check cannot have them).
 */
__device__ bool
warp_decode_block(const list_desc &d, uint32_t b, uint32_t *out, uint16_t *hp, unsigned lane)
{
	uint32_t	n = dev_block_len(d, b);
	uint32_t	first = dev_block_first(d, b);

	if (d.codec == GPUIDX_CODEC_RAW)
	{
		for (uint32_t j = lane; j < n; j += 32)
			out[j] = __ldg(&d.block_first[(size_t) b * GPUIDX_EF_BLOCK + j]);
		return true;
	}
	if (d.codec == GPUIDX_CODEC_LRC)
	{
		const gpuidx_lrc_segment *seg = &d.segs[b];

		for (uint32_t j = lane; j < n; j += 32)
			out[j] = dev_lrc_value(d, seg, j);
		return true;
	}
	{
		uint64_t	universe = dev_block_end(d, b) - first;
		uint64_t	pos = __ldg(&d.block_bitoff[b]);
		int			kind = gpuidx_ef_block_kind(universe, n);
		uint32_t	l = 0;
		uint64_t	field = pos;
		uint64_t	nbits = universe;
		uint64_t	w = 0;
		uint32_t	ones;
		uint32_t	before;
		uint32_t	total;

		if (kind == GPUIDX_EF_RUN)
		{
			for (uint32_t j = lane; j < n; j += 32)
				out[j] = first + j;
			return true;
		}
		if (kind == GPUIDX_EF_ELIAS_FANO)
		{
			l = gpuidx_ef_low_bits(universe, n);
			field = pos + (uint64_t) n * l;
			nbits = gpuidx_ef_high_bits(universe, n, l);
		}
		/* a field of at most 32 words: one each (bitmaps <= 16, EF <= 6) */
		if ((uint64_t) lane * 64 < nbits)
		{
			w = dev_window(d.data, field + (uint64_t) lane * 64);
			if (nbits - (uint64_t) lane * 64 < 64)
				w &= (UINT64_C(1) << (nbits - (uint64_t) lane * 64)) - 1;
		}
		ones = (uint32_t) __popcll(w);
		before = ones;
		for (int delta = 1; delta < 32; delta *= 2)
		{
			uint32_t	v = __shfl_up_sync(0xffffffffu, before, delta);

			if ((int) lane >= delta)
				before += v;
		}
		total = __shfl_sync(0xffffffffu, before, 31);
		before -= ones;
		if (total != n || nbits > 64 * 32)
			return false;
		for (uint32_t k = before; w != 0; k++)
		{
			hp[k] = (uint16_t) (lane * 64 + (__ffsll((long long) w) - 1));
			w &= w - 1;
		}
		__syncwarp();
		for (uint32_t j = lane; j < n; j += 32)
			out[j] = kind == GPUIDX_EF_BITMAP ? first + hp[j]
				: first + ((((uint32_t) hp[j] - j) << l) | dev_bits(d.data, pos + (uint64_t) j * l, l));
		__syncwarp();
		return true;
	}
}

__global__ void
decode_kernel(round_launch l, const list_desc *descs, uint32_t *a, int *bad)
{
	__shared__ uint16_t hp[WARPS_PER_BLOCK][GPUIDX_EF_BLOCK + 32];
	unsigned	lane = threadIdx.x & 31;
	unsigned	warp = threadIdx.x / 32;
	uint64_t	item = (uint64_t) blockIdx.x * WARPS_PER_BLOCK + warp;
	uint32_t	j;
	round_job	job;
	const list_desc *d;
	uint32_t	b;
	uint32_t	cap;

	if (item >= l.items)
		return;
	j = find_job(l.prefix, l.njobs, item);
	job = l.jobs[j];
	d = &descs[job.desc];
	b = (uint32_t) (item - l.prefix[j]);
	cap = d->codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;
	if (!warp_decode_block(*d, b, a + job.out_offset + (size_t) b * cap, hp[warp], lane) && lane == 0)
		*bad = 1;
}

/* first index in a[lo, hi) with a[i] >= x (64-bit x: a block's end may be 2^32) */
__device__ __forceinline__ uint32_t
lower_bound64(const uint32_t *a, uint32_t lo, uint32_t hi, uint64_t x)
{
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if ((uint64_t) a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

__global__ void
merge_kernel(round_launch l, const list_desc *descs, const uint32_t *a, uint32_t *flags, int *bad)
{
	__shared__ uint32_t vals[WARPS_PER_BLOCK][GPUIDX_LRC_SEGMENT];
	__shared__ uint16_t hp[WARPS_PER_BLOCK][GPUIDX_EF_BLOCK + 32];
	unsigned	lane = threadIdx.x & 31;
	unsigned	warp = threadIdx.x / 32;
	uint64_t	item = (uint64_t) blockIdx.x * WARPS_PER_BLOCK + warp;
	uint32_t	j;
	round_job	job;
	const list_desc *d;
	uint32_t	b;
	uint32_t	s = 0;
	uint32_t	e = 0;
	uint32_t	n;
	const uint32_t *av;
	uint32_t	m;
	uint32_t	total;
	uint32_t	chunk;
	uint32_t	diag;

	if (item >= l.items)
		return;
	j = find_job(l.prefix, l.njobs, item);
	job = l.jobs[j];
	d = &descs[job.desc];
	b = (uint32_t) (item - l.prefix[j]);

	/* the current elements inside this block's range [first, end) */
	if (lane == 0)
	{
		const uint32_t *q = a + job.a_offset;

		s = lower_bound64(q, 0, job.a_count, dev_block_first(*d, b));
		e = lower_bound64(q, s, job.a_count, dev_block_end(*d, b));
	}
	s = __shfl_sync(0xffffffffu, s, 0);
	e = __shfl_sync(0xffffffffu, e, 0);
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
	n = dev_block_len(*d, b);
	av = a + job.a_offset + s;
	m = e - s;
	total = m + n;
	chunk = (total + 31) / 32;
	diag = lane * chunk;
	if (diag < total)
	{
		const uint32_t *bv = vals[warp];
		uint32_t	lo = diag > n ? diag - n : 0;
		uint32_t	hi = diag < m ? diag : m;
		uint32_t	i;
		uint32_t	k;
		uint32_t	steps = total - diag < chunk ? total - diag : chunk;

		/* ties go to a, so a match is seen when a's element is taken */
		while (lo < hi)
		{
			uint32_t	mid = (lo + hi) / 2;

			if (av[mid] <= bv[diag - mid - 1])
				lo = mid + 1;
			else
				hi = mid;
		}
		i = lo;
		k = diag - lo;
		for (uint32_t step = 0; step < steps; step++)
		{
			if (i < m && (k >= n || av[i] <= bv[k]))
			{
				if (k < n && av[i] == bv[k])
					flags[job.a_offset + s + i] = 1;
				i++;
			}
			else
				k++;
		}
	}
}

__global__ void
search_kernel(round_launch l, const list_desc *descs, const uint32_t *a, uint32_t *flags)
{
	uint64_t	item = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t	j;
	round_job	job;
	uint32_t	i;
	uint32_t	x;
	const list_desc *d;
	int64_t		b;
	uint32_t	hit;

	if (item >= l.items)
		return;
	j = find_job(l.prefix, l.njobs, item);
	job = l.jobs[j];
	i = job.a_offset + (uint32_t) (item - l.prefix[j]);
	if (job.desc < 0)
	{
		flags[i] = 1;
		return;
	}
	d = &descs[job.desc];
	x = a[i];
	if (d->count == 0 || x > d->last || (b = dev_find_block(*d, x)) < 0)
		hit = 0;
	else if (dev_block_first(*d, (uint32_t) b) == x)
		hit = 1;
	else
		hit = dev_block_contains(*d, (uint32_t) b, x) ? 1 : 0;
	flags[i] = hit;
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
scan_flags(void *temp, size_t *temp_bytes, const uint32_t *flags, uint32_t *pos, uint64_t n,
		   cudaStream_t stream)
{
	return cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, flags, pos, (int64_t) n + 1, stream);
}
