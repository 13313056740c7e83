/*
 * membw.cu
 *	  The device's measured copy bandwidth, the ceiling the GPU benchmark's
 *	  bytes per second are set against: a large device-to-device copy
 *	  (bytes read plus bytes written), and pinned host-to-device copies.
 *	  Prints "d2d_gbps h2d_gbps".
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
		{ \
			fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(1); \
		} \
	} while (0)

static float
time_copies(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, int reps)
{
	cudaEvent_t a,
				b;
	float		ms;

	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	CHECK(cudaMemcpy(dst, src, bytes, kind));	/* warm-up */
	CHECK(cudaEventRecord(a));
	for (int i = 0; i < reps; i++)
		CHECK(cudaMemcpyAsync(dst, src, bytes, kind));
	CHECK(cudaEventRecord(b));
	CHECK(cudaEventSynchronize(b));
	CHECK(cudaEventElapsedTime(&ms, a, b));
	return ms / reps;
}

int
main(void)
{
	size_t		bytes = (size_t) 2 << 30;
	void	   *d1,
			   *d2,
			   *h;
	float		d2d,
				h2d;

	CHECK(cudaMalloc(&d1, bytes));
	CHECK(cudaMalloc(&d2, bytes));
	CHECK(cudaMemset(d1, 0x5a, bytes));
	CHECK(cudaHostAlloc(&h, bytes / 4, cudaHostAllocDefault));
	d2d = time_copies(d2, d1, bytes, cudaMemcpyDeviceToDevice, 10);
	h2d = time_copies(d1, h, bytes / 4, cudaMemcpyHostToDevice, 5);
	printf("%.1f %.1f\n", 2.0 * bytes / d2d / 1e6, (bytes / 4) / h2d / 1e6);
	return 0;
}
