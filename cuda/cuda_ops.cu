/*
 * cuda_ops.cu
 *	  device_ops on a CUDA device: the runtime API and the kernels.
 */
#include <cuda_runtime.h>

#include <stdio.h>

#include "device_ops.h"
#include "kernels.cuh"
#include "rank_kernels.cuh"

static cudaError_t
cuda_open(int device, device_props *props)
{
	int			ndev = 0;
	cudaDeviceProp prop;
	cudaError_t err = cudaGetDeviceCount(&ndev);

	if (err != cudaSuccess)
		return err;
	if (device < 0 || device >= ndev)
		return ndev == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice;
	if ((err = cudaSetDevice(device)) != cudaSuccess ||
		(err = cudaGetDeviceProperties(&prop, device)) != cudaSuccess ||
		(err = cudaMemGetInfo(&props->free_memory, &props->total_memory)) != cudaSuccess)
		return err;
	snprintf(props->name, sizeof(props->name), "%.95s", prop.name);
	props->major = prop.major;
	props->minor = prop.minor;
	props->multiprocessors = (unsigned) prop.multiProcessorCount;
	return cudaSuccess;
}

static cudaError_t
cuda_stream_create(cudaStream_t *stream)
{
	return cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
}

static void
cuda_stream_destroy(cudaStream_t stream)
{
	cudaStreamDestroy(stream);
}

static cudaError_t
cuda_dev_alloc(void **p, size_t bytes)
{
	return cudaMalloc(p, bytes);
}

static void
cuda_dev_free(void *p)
{
	cudaFree(p);
}

static cudaError_t
cuda_host_alloc(void **p, size_t bytes)
{
	return cudaHostAlloc(p, bytes, cudaHostAllocMapped);
}

static void
cuda_host_free(void *p)
{
	cudaFreeHost(p);
}

static cudaError_t
cuda_copy(void *dst, const void *src, size_t bytes)
{
	return cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}

static cudaError_t
cuda_copy_async(void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
	return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
}

static cudaError_t
cuda_zero_async(void *dst, size_t bytes, cudaStream_t stream)
{
	return cudaMemsetAsync(dst, 0, bytes, stream);
}

static bool
cuda_driver_absent(void)
{
	int			version = 0;

	/* the runtime reports version 0 when no driver is installed */
	return cudaDriverGetVersion(&version) == cudaSuccess && version == 0;
}

static cudaError_t
cuda_mapped(void **device_p, void *host_p)
{
	return cudaHostGetDevicePointer(device_p, host_p, 0);
}

const device_ops engine_device_ops = {
	"cuda",
	cuda_open,
	cudaSetDevice,
	cuda_stream_create,
	cuda_stream_destroy,
	cuda_dev_alloc,
	cuda_dev_free,
	cuda_host_alloc,
	cuda_host_free,
	cuda_copy,
	cuda_copy_async,
	cuda_zero_async,
	cudaStreamSynchronize,
	cudaGetErrorString,
	cuda_driver_absent,
	cuda_mapped,
	launch_intersect,
	launch_pack,
	launch_small,
	launch_rank_term,
	launch_rank_best,
	launch_rank_bound,
	launch_rank_gather,
	launch_rank_final,
	launch_rank_hist,
	launch_rank_pick,
	launch_rank_collect,
};
