/*
 * kernels.cuh
 *	  The GPU engine's kernels, as the host side launches them.  Every kernel
 *	  serves a whole batch (PARA batching): its work items are the queries'
 *	  source blocks laid end to end, found by binary search over a prefix
 *	  array, so a batch costs the same few launches (intersect, then scan and pack)
 *	  for 1 query or 4096, whatever their number of terms.
 */
#ifndef GPUIDX_KERNELS_CUH
#define GPUIDX_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "block_ops.cuh"

/*
 * Every round of every query of the batch: one warp per work item (a block
 * of a query's source), the item's candidates taken through each other list
 * (kept when found; in the job's excluded lists, when not found) by merge or
 * search as dev_step_searches decides, survivors compacted in
 * shared memory; counts[item] their number (counts[items] = 0), the
 * survivors at their slot when the query keeps them.  Grid-stride over at
 * most max_ctas blocks.
 */
extern cudaError_t launch_intersect(const batch_launch *l, unsigned max_ctas, uint32_t *slots,
									uint32_t *counts, batch_status *status, cudaStream_t stream);

/*
 * The ids each query asks for, from its items' slots to results (packed,
 * at result_base), every query's total to totals[query], and the batch's
 * status to status_out; results, totals and status_out may be host memory
 * mapped for the device.  Items' places come from a scan of counts: in
 * shared memory for small batches (one launch), else CUB's into pos.  With
 * temp NULL, only sets *temp_bytes to the scan storage it needs.
 */
extern cudaError_t launch_pack(const batch_launch *l, unsigned max_ctas, void *temp, size_t *temp_bytes,
							   const uint32_t *slots, const uint32_t *counts, uint32_t *pos,
							   const batch_status *status, uint32_t *results, uint32_t *totals,
							   batch_status *status_out, cudaStream_t stream);

/*
 * A batch within small_launch's bounds (cached lists only, no initial sets,
 * at most SMALL_ITEMS items) in one launch: intersect, scan and pack, the
 * last block to finish doing the last two.  state: zero before, left zero.
 */
extern cudaError_t launch_small(const small_launch *s, unsigned max_ctas, uint32_t *slots,
								uint32_t *counts, small_state *state, uint32_t *results,
								uint32_t *totals, batch_status *status_out, cudaStream_t stream);

#endif							/* GPUIDX_KERNELS_CUH */
