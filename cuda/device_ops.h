/*
 * device_ops.h
 *	  What the engine's host side asks of a device: memory, copies, streams
 *	  and the round kernels.  gpuidx_cuda.so links the CUDA implementation
 *	  (cuda_ops.cu); gpuidx_hostemu.so links a host emulation (host_ops.cu)
 *	  that runs the same per-lane steps in loops, so that the whole engine -
 *	  planning, staging, rounds, compaction, chunking, the cache - runs and is
 *	  checked on machines without a GPU.  Codes are CUDA's (cudaError_t).
 */
#ifndef GPUIDX_DEVICE_OPS_H
#define GPUIDX_DEVICE_OPS_H

#include <cuda_runtime_api.h>

#include "block_ops.cuh"

struct device_props
{
	char		name[96];
	int			major;
	int			minor;
	unsigned	multiprocessors;
	size_t		total_memory;
	size_t		free_memory;
};

struct device_ops
{
	const char *kind;			/* reported as gpuidx_engine_info.kind */
	/* check the device exists, make it current, describe it */
	cudaError_t (*open) (int device, device_props *props);
	cudaError_t (*set_device) (int device);
	cudaError_t (*stream_create) (cudaStream_t *stream);
	void		(*stream_destroy) (cudaStream_t stream);
	cudaError_t (*dev_alloc) (void **p, size_t bytes);
	void		(*dev_free) (void *p);
	cudaError_t (*host_alloc) (void **p, size_t bytes);	/* page-locked */
	void		(*host_free) (void *p);
	cudaError_t (*copy) (void *dst, const void *src, size_t bytes);	/* either way, waits */
	cudaError_t (*copy_async) (void *dst, const void *src, size_t bytes, cudaStream_t stream);
	cudaError_t (*fill_async) (void *dst, int value, size_t bytes, cudaStream_t stream);
	cudaError_t (*sync) (cudaStream_t stream);
	const char *(*error_string) (cudaError_t err);

	/* the round kernels (kernels.cuh says what each does) */
	cudaError_t (*decode) (const round_launch *l, const list_desc *descs, uint32_t *a, int *bad,
						   cudaStream_t stream);
	cudaError_t (*merge) (const round_launch *l, const list_desc *descs, const uint32_t *a,
						  uint32_t *flags, int *bad, cudaStream_t stream);
	cudaError_t (*search) (const round_launch *l, const list_desc *descs, const uint32_t *a,
						   uint32_t *flags, cudaStream_t stream);
	cudaError_t (*scan) (void *temp, size_t *temp_bytes, const uint32_t *flags, uint32_t *pos,
						 uint64_t n, cudaStream_t stream);
	cudaError_t (*compact) (const uint32_t *a, const uint32_t *flags, const uint32_t *pos,
							uint64_t n, uint32_t *a_out, const uint32_t *q_offsets, uint32_t nq,
							uint32_t *counts, cudaStream_t stream);
	cudaError_t (*gather) (const round_launch *l, const uint32_t *a, uint32_t *out,
						   cudaStream_t stream);
};

/* the implementation the engine object was linked with */
extern const device_ops engine_device_ops;

#endif							/* GPUIDX_DEVICE_OPS_H */
