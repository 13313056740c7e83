/*
 * host_ops.cu
 *	  device_ops emulated on the host, for checking the engine without a GPU:
 *	  "device" memory is host memory, copies are memcpy, and each kernel is a
 *	  loop over its work items running the same block steps the kernels run
 *	  (block_ops.cuh: decoding lane by lane, the merge-or-search choice, the
 *	  search and merge tests; rank_ops.cuh: a ranked posting's score, a doc's
 *	  digit, the select's pick), one candidate at a time where a warp takes 32.
 *	  Slow, and not a performance model; it proves the engine's logic, not
 *	  its speed.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuidx_engine.h"
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
host_zero_async(void *dst, size_t bytes, cudaStream_t stream)
{
	(void) stream;
	memset(dst, 0, bytes);
	return cudaSuccess;
}

static cudaError_t
host_sync(cudaStream_t stream)
{
	(void) stream;
	return cudaSuccess;
}

static cudaError_t
host_mapped(void **device_p, void *host_p)
{
	*device_p = host_p;
	return cudaSuccess;
}

/*
 * Blocks of d whose first posting is <= x, known to be >= from: the steps
 * of warp_blocks_upto, its 32 lanes' probes taken in turn.
 */
static uint32_t
host_blocks_upto(const list_desc &d, uint32_t x, uint32_t from)
{
	warp_bound	w = warp_seek_start(from, d.nblocks);
	bool		seeking = true;

	for (;;)
	{
		uint32_t	below = 0;

		for (unsigned lane = 0; lane < WARP_LANES; lane++)
		{
			uint32_t	at;

			below += warp_bound_at(w, lane, &at) && dev_block_first(d, at) <= x;
		}
		if (seeking ? warp_seek_next(&w, below, d.nblocks) : warp_bound_next(&w, below))
			return w.lo;
		seeking = false;
	}
}

/* intersect_item, one candidate at a time; false on a block that fails to decode */
static bool
host_intersect_item(const batch_launch &l, const query_job &job, uint32_t b, uint32_t *cand,
					uint32_t *cursor, uint32_t *n_out, batch_status *status)
{
	uint32_t	n = dev_source_len(l, job, b);
	uint32_t	vals[ITEM_MAX];

	if (job.source < 0)
		memcpy(cand, l.initial + job.initial_offset + (uint64_t) b * GPUIDX_EF_BLOCK, n * sizeof(uint32_t));
	else if (!host_warp_decode_block(l.descs[job.source], b, cand))
		return false;
	for (uint32_t t = 0; t < job.nterms && n > 0; t++)
	{
		const list_desc &d = l.descs[job.first_term + t];
		bool		keep[ITEM_MAX] = {false};
		uint32_t	kept = 0;

		if (d.nblocks > 0 && cand[n - 1] >= dev_block_first(d, 0) && cand[0] <= d.last)
		{
			uint32_t	bs = host_blocks_upto(d, cand[0], cursor[t]);
			uint32_t	be = host_blocks_upto(d, cand[n - 1], bs);

			cursor[t] = be;
			bs = bs > 0 ? bs - 1 : 0;
			if (dev_step_searches(be - bs, n, l.skip_ratio))
			{
				status->searched++;
				for (uint32_t i = 0; i < n; i++)
					keep[i] = dev_search_in(d, cand[i], bs, be);
			}
			else
			{
				status->merged++;
				for (uint32_t blk = bs; blk < be; blk++)
				{
					uint32_t	first = dev_block_first(d, blk);
					uint64_t	end = dev_block_end(d, blk);
					bool		decoded = false;

					for (uint32_t i = 0; i < n; i++)
						if (cand[i] >= first && cand[i] < end)
						{
							if (!decoded && !host_warp_decode_block(d, blk, vals))
								return false;
							decoded = true;
							keep[i] = dev_sorted_has(vals, dev_block_len(d, blk), cand[i]);
						}
				}
			}
		}
		for (uint32_t i = 0; i < n; i++)
			if (keep[i] != (t + job.nexclude >= job.nterms))
				cand[kept++] = cand[i];
		n = kept;
	}
	*n_out = n;
	return true;
}

static cudaError_t
host_intersect(const batch_launch *l, unsigned max_ctas, uint32_t *slots, uint32_t *counts,
			   batch_status *status, cudaStream_t stream)
{
	(void) max_ctas;
	(void) stream;
	for (uint64_t unit = 0; unit < l->units; unit++)
	{
		uint32_t	j,
					b0,
					b1;
		uint32_t	cursor[GPUIDX_ENGINE_MAX_TERMS] = {0};

		dev_unit_items(*l, unit, &j, &b0, &b1);
		const query_job &job = l->jobs[j];
		uint64_t	first_item = l->prefix[j];

		for (uint32_t b = b0; b < b1; b++)
		{
			uint32_t	cand[ITEM_MAX];
			uint32_t	n = 0;

			if (!host_intersect_item(*l, job, b, cand, cursor, &n, status))
			{
				status->bad = 1;
				n = 0;
			}
			if (job.store)
				memcpy(slots + job.slot_base + (uint64_t) b * job.slot_len, cand, n * sizeof(uint32_t));
			counts[first_item + b] = n;
		}
	}
	counts[l->items] = 0;
	return cudaSuccess;
}

/* the scan into pos, then every item packed: what either path of launch_pack does */
static cudaError_t
host_pack(const batch_launch *l, unsigned max_ctas, void *temp, size_t *temp_bytes,
		  const uint32_t *slots, const uint32_t *counts, uint32_t *pos, const batch_status *status,
		  uint32_t *results, uint32_t *totals, batch_status *status_out, cudaStream_t stream)
{
	uint32_t	sum = 0;

	(void) max_ctas;
	(void) stream;
	if (temp == NULL)
	{
		*temp_bytes = 1;
		return cudaSuccess;
	}
	if (l->items == 0)
		return cudaSuccess;
	for (uint64_t i = 0; i <= l->items; i++)
	{
		pos[i] = sum;
		sum += counts[i];
	}
	*status_out = *status;
	for (uint64_t item = 0; item < l->items; item++)
	{
		item_place	p = dev_item_place(*l, item, pos);
		const query_job &job = l->jobs[p.job];

		if (p.b == 0)
			totals[job.query] = p.total;
		memcpy(results + job.result_base + p.off, slots + job.slot_base + (uint64_t) p.b * job.slot_len,
			   p.n * sizeof(uint32_t));
	}
	return cudaSuccess;
}

/* launch_small: the same intersect and pack, in one call */
static cudaError_t
host_small(const small_launch *s, unsigned max_ctas, uint32_t *slots, uint32_t *counts,
		   small_state *state, uint32_t *results, uint32_t *totals, batch_status *status_out,
		   cudaStream_t stream)
{
	batch_launch l = s->l;
	uint32_t	pos[SMALL_ITEMS + 1];
	size_t		temp_bytes = 1;

	l.jobs = s->jobs;
	l.prefix = s->prefix;
	l.unit_prefix = s->unit_prefix;
	l.descs = s->descs;
	host_intersect(&l, max_ctas, slots, counts, &state->status, stream);
	host_pack(&l, max_ctas, pos, &temp_bytes, slots, counts, pos, &state->status, results, totals,
			  status_out, stream);
	memset(state, 0, sizeof(*state));
	return cudaSuccess;
}

/* launch_rank_term: each item's block decoded as a warp does it, then its postings in turn */
static cudaError_t
host_rank_term(const rank_launch *l, const rank_pass *p, unsigned max_ctas, cudaStream_t stream)
{
	(void) max_ctas;
	(void) stream;
	for (uint64_t item = 0; item < p->items; item++)
	{
		uint32_t	at = find_job(p->prefix, p->njobs, item);
		const rank_job &q = l->jobs[p->jobs[at]];
		const rank_term_desc &t = l->terms[q.first_term + p->term];
		uint32_t	b = (uint32_t) (item - p->prefix[at]);
		uint32_t	n = dev_block_len(t.list, b);
		uint32_t	base = b * dev_block_capacity(t.list);
		uint32_t	vals[ITEM_MAX];

		if (!host_warp_decode_block(t.list, b, vals))
		{
			*l->bad = 1;
			continue;
		}
		/* as the kernel's lanes take them: lane's postings from, + 32, + 64, ... */
		for (uint32_t from = 0; from < n; from += WARP_LANES * RANK_LANE_POSTINGS)
			for (uint32_t lane = 0; lane < WARP_LANES; lane++)
			{
				uint32_t	pos[RANK_LANE_POSTINGS];
				uint32_t	doc[RANK_LANE_POSTINGS];

				for (int u = 0; u < RANK_LANE_POSTINGS; u++)
				{
					uint32_t	j = from + u * WARP_LANES + lane;

					pos[u] = base + j;
					doc[u] = j < n ? vals[j] : UINT32_MAX;
				}
				if (!rank_add_postings(q, t, pos, doc))
					*l->bad = 1;
			}
	}
	return cudaSuccess;
}

/* a bound step over each selection item's slots in turn (best, gather) */
static void
each_slot_item(const rank_launch *l, void (*step) (const rank_job &q, uint32_t s0, uint32_t s1))
{
	for (uint64_t item = 0; item < l->slot_items; item++)
	{
		uint32_t	j,
					s0,
					s1;

		rank_slot_item(*l, item, &j, &s0, &s1);
		step(l->jobs[j], s0, s1);
	}
}

/* a bound step over each query in turn (bound, final) */
static void
each_job(const rank_launch *l, void (*step) (const rank_job &q))
{
	for (uint32_t j = 0; j < l->njobs; j++)
		step(l->jobs[j]);
}

static cudaError_t
host_rank_best_all(const rank_launch *l, unsigned max_ctas, cudaStream_t stream)
{
	(void) max_ctas;
	(void) stream;
	each_slot_item(l, host_rank_best);
	return cudaSuccess;
}

static cudaError_t
host_rank_bound_all(const rank_launch *l, cudaStream_t stream)
{
	(void) stream;
	each_job(l, host_rank_bound);
	return cudaSuccess;
}

static cudaError_t
host_rank_gather_all(const rank_launch *l, unsigned max_ctas, cudaStream_t stream)
{
	(void) max_ctas;
	(void) stream;
	each_slot_item(l, host_rank_gather);
	return cudaSuccess;
}

static cudaError_t
host_rank_final_all(const rank_launch *l, cudaStream_t stream)
{
	(void) stream;
	each_job(l, host_rank_final);
	return cudaSuccess;
}

/* launch_rank_hist: each item's slots counted straight into its query's histogram */
static cudaError_t
host_rank_hist(const rank_launch *l, uint32_t pass, unsigned max_ctas, cudaStream_t stream)
{
	(void) max_ctas;
	(void) stream;
	for (uint64_t item = 0; item < l->slot_items; item++)
	{
		uint32_t	j,
					s0,
					s1;

		rank_slot_item(*l, item, &j, &s0, &s1);
		const rank_job &q = l->jobs[j];
		rank_select s = *q.sel;

		if (s.done)
			continue;
		for (uint32_t slot = s0; slot < s1; slot++)
		{
			uint32_t	digit;

			if (rank_slot_digit(q, s, pass, slot, &digit))
				q.hist[digit]++;
		}
	}
	return cudaSuccess;
}

static cudaError_t
host_rank_pick_all(const rank_launch *l, uint32_t pass, cudaStream_t stream)
{
	(void) stream;
	for (uint32_t j = 0; j < l->njobs; j++)
		host_rank_pick(l->jobs[j], pass);
	return cudaSuccess;
}

static cudaError_t
host_rank_collect(const rank_launch *l, unsigned max_ctas, cudaStream_t stream)
{
	(void) max_ctas;
	(void) stream;
	for (uint64_t item = 0; item < l->slot_items; item++)
	{
		uint32_t	j,
					s0,
					s1;

		rank_slot_item(*l, item, &j, &s0, &s1);
		const rank_job &q = l->jobs[j];
		rank_select s = *q.sel;

		if (!s.overflow)
			continue;
		for (uint32_t slot = s0; slot < s1; slot++)
			if (rank_slot_selected(q, s, slot))
			{
				uint32_t	out = q.sel->taken++;

				if (out < q.k)
				{
					q.out_docs[out] = rank_slot_doc(q, slot);
					q.out_scores[out] = q.slots[slot].sum;
				}
			}
	}
	return cudaSuccess;
}

/* the emulation needs no driver */
static bool
host_driver_absent(void)
{
	return false;
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
	host_zero_async,
	host_sync,
	cudaGetErrorString,
	host_driver_absent,
	host_mapped,
	host_intersect,
	host_pack,
	host_small,
	host_rank_term,
	host_rank_best_all,
	host_rank_bound_all,
	host_rank_gather_all,
	host_rank_final_all,
	host_rank_hist,
	host_rank_pick_all,
	host_rank_collect,
};
