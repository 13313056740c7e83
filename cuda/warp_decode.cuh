/*
 * warp_decode.cuh
 *	  One list block decoded by one warp (Para-EF), shared by the
 *	  intersection kernels (kernels.cu) and the ranked ones (rank_kernels.cu).
 */
#ifndef GPUIDX_WARP_DECODE_CUH
#define GPUIDX_WARP_DECODE_CUH

#include "block_ops.cuh"

/*
 * Decode block b of d into out[0..n) with one warp; hp is the warp's shared
 * scratch of GPUIDX_EF_BLOCK slots.  Returns false on bad bits (a list that
 * passed the host's structure check cannot have them).
 */
static __device__ bool
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

#endif							/* GPUIDX_WARP_DECODE_CUH */
