/*
 * host_ops.cu
 *	  device_ops emulated on the host, for checking the engine without a GPU:
 *	  "device" memory is host memory, copies are memcpy, and each kernel is a
 *	  loop over its work items running the same per-lane steps the kernels
 *	  run (block_ops.cuh), warps simulated lane by lane.  Slow, and not a
 *	  performance model; it proves the engine's logic, not its speed.
 */
#include <stdlib.h>
#include <string.h>

#include "device_ops.h"

static cudaError_t
host_open(int device, device_props *props)
{
	if (device != 0)
		return cudaErrorInvalidDevice;
	memset(props, 0, sizeof(*props));
	strcpy(props->name, "host emulation of a CUDA device");
	props->multiprocessors = 1;
	props->total_memory = props->free_memory = (size_t) 4 << 30;
	return cudaSuccess;
}

static cudaError_t
host_set_device(int device)
{
	return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

static cudaError_t
host_stream_create(cudaStream_t *stream)
{
	*stream = NULL;
	return cudaSuccess;
}

static void
host_stream_destroy(cudaStream_t stream)
{
	(void) stream;
}

static cudaError_t
host_alloc(void **p, size_t bytes)
{
	/* device allocations are 256-byte aligned; so are these */
	*p = aligned_alloc(256, (bytes + 255) & ~(size_t) 255);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

static void
host_free(void *p)
{
	free(p);
}

static cudaError_t
host_copy(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
	return cudaSuccess;
}

static cudaError_t
host_copy_async(void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
	(void) stream;
	return host_copy(dst, src, bytes);
}

static cudaError_t
host_fill_async(void *dst, int value, size_t bytes, cudaStream_t stream)
{
	(void) stream;
	memset(dst, value, bytes);
	return cudaSuccess;
}

static cudaError_t
host_sync(cudaStream_t stream)
{
	(void) stream;
	return cudaSuccess;
}

static cudaError_t
host_decode(const round_launch *l, const list_desc *descs, uint32_t *a, int *bad, cudaStream_t stream)
{
	(void) stream;
	for (uint64_t item = 0; item < l->items; item++)
	{
		uint32_t	b;
		round_job	job = locate_item(*l, item, &b);
		const list_desc &d = descs[job.desc];
		uint32_t	cap = d.codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;

		if (!host_warp_decode_block(d, b, a + job.out_offset + (size_t) b * cap))
			*bad = 1;
	}
	return cudaSuccess;
}

static cudaError_t
host_merge(const round_launch *l, const list_desc *descs, const uint32_t *a, uint32_t *flags,
		   int *bad, cudaStream_t stream)
{
	uint32_t	vals[GPUIDX_LRC_SEGMENT];

	(void) stream;
	for (uint64_t item = 0; item < l->items; item++)
	{
		uint32_t	b;
		round_job	job = locate_item(*l, item, &b);
		const list_desc &d = descs[job.desc];
		const uint32_t *q = a + job.a_offset;
		uint32_t	s = host_warp_lower_bound(q, 0, job.a_count, dev_block_first(d, b));
		uint32_t	e = host_warp_lower_bound(q, s, job.a_count, dev_block_end(d, b));

		if (s == e)
			continue;
		if (!host_warp_decode_block(d, b, vals))
		{
			*bad = 1;
			continue;
		}
		for (unsigned lane = 0; lane < WARP_LANES; lane++)
			dev_merge_path_lane(q + s, e - s, vals, dev_block_len(d, b), lane, WARP_LANES,
								flags + job.a_offset + s);
	}
	return cudaSuccess;
}

static cudaError_t
host_search(const round_launch *l, const list_desc *descs, const uint32_t *a, uint32_t *flags,
			cudaStream_t stream)
{
	(void) stream;
	for (uint64_t item = 0; item < l->items; item++)
	{
		uint32_t	i;
		round_job	job = locate_item(*l, item, &i);

		i += job.a_offset;
		flags[i] = job.desc < 0 || dev_search_one(descs[job.desc], a[i]) ? 1 : 0;
	}
	return cudaSuccess;
}

static cudaError_t
host_scan(void *temp, size_t *temp_bytes, const uint32_t *flags, uint32_t *pos, uint64_t n,
		  cudaStream_t stream)
{
	uint32_t	sum = 0;

	(void) stream;
	if (temp == NULL)
	{
		*temp_bytes = 1;
		return cudaSuccess;
	}
	for (uint64_t i = 0; i <= n; i++)
	{
		pos[i] = sum;
		sum += flags[i];
	}
	return cudaSuccess;
}

static cudaError_t
host_compact(const uint32_t *a, const uint32_t *flags, const uint32_t *pos, uint64_t n,
			 uint32_t *a_out, const uint32_t *q_offsets, uint32_t nq, uint32_t *counts,
			 cudaStream_t stream)
{
	(void) stream;
	for (uint64_t i = 0; i < n; i++)
		if (flags[i])
			a_out[pos[i]] = a[i];
	for (uint32_t q = 0; q < nq; q++)
		counts[q] = pos[q_offsets[q + 1]] - pos[q_offsets[q]];
	return cudaSuccess;
}

static cudaError_t
host_gather(const round_launch *l, const uint32_t *a, uint32_t *out, cudaStream_t stream)
{
	(void) stream;
	for (uint64_t item = 0; item < l->items; item++)
	{
		uint32_t	i;
		round_job	job = locate_item(*l, item, &i);

		out[job.out_offset + i] = a[job.a_offset + i];
	}
	return cudaSuccess;
}

const device_ops engine_device_ops = {
	"cuda-emulated",
	host_open,
	host_set_device,
	host_stream_create,
	host_stream_destroy,
	host_alloc,
	host_free,
	host_alloc,
	host_free,
	host_copy,
	host_copy_async,
	host_fill_async,
	host_sync,
	cudaGetErrorString,
	host_decode,
	host_merge,
	host_search,
	host_scan,
	host_compact,
	host_gather,
};
