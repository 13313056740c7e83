/*
 * kernels.cuh
 *	  The GPU engine's kernels, as the host side launches them.  Every kernel
 *	  serves a whole batch (PARA batching): its work items are the queries'
 *	  blocks or elements laid end to end, found by binary search over a
 *	  prefix array, so a round costs the same few launches for 1 query or 4096.
 */
#ifndef GPUIDX_KERNELS_CUH
#define GPUIDX_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "block_ops.cuh"

#define WARPS_PER_BLOCK 4

/* decode each job's whole list into A at out_offset: one warp a block */
extern cudaError_t launch_decode(const round_launch *l, const list_desc *descs, uint32_t *a,
								 int *bad, cudaStream_t stream);

/*
 * Similar lengths: for every block of the job's list, a warp decodes it into
 * shared memory and runs a merge-path intersection with the current elements
 * that fall in the block's range, flagging the matches.
 */
extern cudaError_t launch_merge(const round_launch *l, const list_desc *descs, const uint32_t *a,
								uint32_t *flags, int *bad, cudaStream_t stream);

/*
 * Skewed lengths: one thread per current element searches the skip entries,
 * then the one block that can hold it, without decoding the block.  Keep
 * jobs (desc -1) flag every element: queries with no list this round.
 */
extern cudaError_t launch_search(const round_launch *l, const list_desc *descs, const uint32_t *a,
								 uint32_t *flags, cudaStream_t stream);

/* a_out[pos[i]] = a[i] for flagged i; counts[q] = pos[end_q] - pos[start_q] */
extern cudaError_t launch_compact(const uint32_t *a, const uint32_t *flags, const uint32_t *pos,
								  uint64_t n, uint32_t *a_out, const uint32_t *q_offsets,
								  uint32_t nq, uint32_t *counts, cudaStream_t stream);

/*
 * The ids each query asks back, packed: for every job, a_count elements
 * from a[a_offset] to out[out_offset] (one thread an element).
 */
extern cudaError_t launch_gather(const round_launch *l, const uint32_t *a, uint32_t *out,
								 cudaStream_t stream);

/* exclusive prefix sum of n + 1 flags (CUB); temp storage grown by the caller */
extern cudaError_t scan_flags(void *temp, size_t *temp_bytes, const uint32_t *flags, uint32_t *pos,
							  uint64_t n, cudaStream_t stream);

#endif							/* GPUIDX_KERNELS_CUH */
