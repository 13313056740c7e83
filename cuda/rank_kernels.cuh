/*
 * rank_kernels.cuh
 *	  The ranked queries' kernels (rank_kernels.cu), as the host side launches
 *	  them.  Like the intersection's, every launch serves all the queries of
 *	  a batch: work items are laid end to end over the queries and found by
 *	  binary search over prefix arrays (rank_ops.cuh).
 */
#ifndef GPUIDX_RANK_KERNELS_CUH
#define GPUIDX_RANK_KERNELS_CUH

#include <cuda_runtime.h>

#include "rank_ops.cuh"

/*
 * One term pass: a warp per block of the term's list in each query of the
 * pass, decoding it and adding each posting's contribution (rank_add_postings).
 */
extern cudaError_t launch_rank_term(const rank_launch *l, const rank_pass *p, unsigned max_ctas,
									cudaStream_t stream);

/*
 * The selection (rank_ops.cuh "the bound and the survivors"): each part's
 * best key and each query's candidate count; each query's bound; the
 * candidates at or above it gathered; the best k of them selected within
 * a block, or the query marked to overflow.
 */
extern cudaError_t launch_rank_best(const rank_launch *l, unsigned max_ctas, cudaStream_t stream);
extern cudaError_t launch_rank_bound(const rank_launch *l, cudaStream_t stream);
extern cudaError_t launch_rank_gather(const rank_launch *l, unsigned max_ctas, cudaStream_t stream);
extern cudaError_t launch_rank_final(const rank_launch *l, cudaStream_t stream);

/*
 * What an overflowing query takes instead, passes over its whole table:
 * pass 'pass' of the radix select: every unfinished query's histogram of its next digit */
extern cudaError_t launch_rank_hist(const rank_launch *l, uint32_t pass, unsigned max_ctas,
									cudaStream_t stream);

/* the digit each unfinished query keeps from its histogram (a block per query); zeroes it */
extern cudaError_t launch_rank_pick(const rank_launch *l, uint32_t pass, cudaStream_t stream);

/* every doc at or above an overflowing query's threshold to its output, in no order */
extern cudaError_t launch_rank_collect(const rank_launch *l, unsigned max_ctas, cudaStream_t stream);

#endif							/* GPUIDX_RANK_KERNELS_CUH */
