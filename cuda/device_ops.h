/*
 * device_ops.h
 *	  What the engine's host side asks of a device: memory, copies, streams
 *	  and the round kernels.  gpuidx_cuda.so links the CUDA implementation
 *	  (cuda_ops.cu); gpuidx_hostemu.so links a host emulation (host_ops.cu)
 *	  that runs the same per-lane steps in loops, so that the whole engine -
 *	  planning, staging, the intersection, packing, chunking, the cache,
 *	  ranked queries - runs and is
 *	  checked on machines without a GPU.  Codes are CUDA's (cudaError_t).
 */
#ifndef GPUIDX_DEVICE_OPS_H
#define GPUIDX_DEVICE_OPS_H

#include <cuda_runtime_api.h>

#include "block_ops.cuh"
#include "rank_ops.cuh"

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
	cudaError_t (*zero_async) (void *dst, size_t bytes, cudaStream_t stream);	/* device memory */
	cudaError_t (*sync) (cudaStream_t stream);
	const char *(*error_string) (cudaError_t err);
	/* is there no driver at all (a machine without a GPU), as opposed to no usable device? */
	bool		(*driver_absent) (void);

	/* the device address of page-locked host memory (kernels write results there) */
	cudaError_t (*mapped) (void **device_p, void *host_p);

	/* the kernels (kernels.cuh says what each does) */
	cudaError_t (*intersect) (const batch_launch *l, unsigned max_ctas, uint32_t *slots,
							  uint32_t *counts, batch_status *status, cudaStream_t stream);
	cudaError_t (*pack) (const batch_launch *l, unsigned max_ctas, void *temp, size_t *temp_bytes,
						 const uint32_t *slots, const uint32_t *counts, uint32_t *pos,
						 const batch_status *status, uint32_t *results, uint32_t *totals,
						 batch_status *status_out, cudaStream_t stream);
	cudaError_t (*small) (const small_launch *s, unsigned max_ctas, uint32_t *slots, uint32_t *counts,
						  small_state *state, uint32_t *results, uint32_t *totals,
						  batch_status *status_out, cudaStream_t stream);

	/* ranked queries (rank_kernels.cuh) */
	cudaError_t (*rank_term) (const rank_launch *l, const rank_pass *p, unsigned max_ctas,
							  cudaStream_t stream);
	cudaError_t (*rank_best) (const rank_launch *l, unsigned max_ctas, cudaStream_t stream);
	cudaError_t (*rank_bound) (const rank_launch *l, cudaStream_t stream);
	cudaError_t (*rank_gather) (const rank_launch *l, unsigned max_ctas, cudaStream_t stream);
	cudaError_t (*rank_final) (const rank_launch *l, cudaStream_t stream);
	cudaError_t (*rank_hist) (const rank_launch *l, uint32_t pass, unsigned max_ctas, cudaStream_t stream);
	cudaError_t (*rank_pick) (const rank_launch *l, uint32_t pass, cudaStream_t stream);
	cudaError_t (*rank_collect) (const rank_launch *l, unsigned max_ctas, cudaStream_t stream);
};

/* the implementation the engine object was linked with */
extern const device_ops engine_device_ops;

#endif							/* GPUIDX_DEVICE_OPS_H */
