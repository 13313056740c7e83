/*
 * engine_batch.cu
 *	  The CUDA engine's batches of set queries (engine.cu says how a batch
 *	  runs): planned on the host, run in chunks of one upload and two launches.
 */
#include "engine_int.h"

/* ------------------------------------------------------------ batches */

/*
 * The first 'want' ids of the union of k sorted, pairwise disjoint arrays
 * (a union's pieces) into out: two directly, more by a heap of the arrays'
 * heads.  Each piece brings at most its first 'want' ids: the union's first
 * 'want' are among them.
 */
static void
merge_pieces(const uint32_t *const *src, const uint32_t *len, uint32_t k, uint32_t *out, uint32_t want)
{
	uint32_t	heap[GPUIDX_ENGINE_MAX_TERMS];
	uint32_t	at[GPUIDX_ENGINE_MAX_TERMS] = {0};
	uint32_t	h = 0;
	auto		head = [&](uint32_t i) { return src[i][at[i]]; };
	auto		sift_down = [&](uint32_t i) {
		for (;;)
		{
			uint32_t	c = 2 * i + 1;

			if (c >= h)
				return;
			if (c + 1 < h && head(heap[c + 1]) < head(heap[c]))
				c++;
			if (head(heap[i]) <= head(heap[c]))
				return;
			std::swap(heap[i], heap[c]);
			i = c;
		}
	};

	if (k == 2)
	{
		/* the common "a | b": one comparison an id, no heap */
		uint32_t	i = 0;
		uint32_t	j = 0;

		for (uint32_t o = 0; o < want; o++)
			out[o] = j == len[1] || (i < len[0] && src[0][i] < src[1][j]) ? src[0][i++] : src[1][j++];
		return;
	}
	for (uint32_t i = 0; i < k; i++)
		if (len[i] > 0)
			heap[h++] = i;
	for (uint32_t i = h / 2; i-- > 0;)
		sift_down(i);
	for (uint32_t o = 0; o < want && h > 0; o++)
	{
		uint32_t	top = heap[0];

		out[o] = src[top][at[top]++];
		if (at[top] == len[top])
			heap[0] = heap[--h];
		sift_down(0);
	}
}

/* first index of sorted a[0..n) with a[i] >= x */
static uint32_t
lower_bound_u32(const uint32_t *a, uint32_t n, uint32_t x)
{
	return (uint32_t) (std::lower_bound(a, a + n, x) - a);
}

/*
 * merge_pieces, cut by value for the engine's host team when the result is
 * large: part p takes the ids in [s_p, s_p+1), split values taken from the
 * longest piece, and writes them where the ids below s_p end.  The pieces
 * are disjoint, so that place is the sum of their counts below s_p; for the
 * union's first 'want' ids it is exact even when pieces brought only their
 * first 'want' (each holds fewer than 'want' ids below any of them).
 */
static void
merge_pieces_parallel(gpuidx_engine *e, const uint32_t *const *src, const uint32_t *len, uint32_t k,
					  uint32_t *out, uint32_t want)
{
	uint32_t	longest = 0;
	uint32_t	nparts;

	for (uint32_t i = 1; i < k; i++)
		if (len[i] > len[longest])
			longest = i;
	nparts = (uint32_t) std::min<uint64_t>(std::min<uint64_t>(e->team->size(), len[longest]),
										   (uint64_t) want * sizeof(uint32_t) / (PARALLEL_COPY_BYTES / 2));
	if (nparts <= 1)
	{
		merge_pieces(src, len, k, out, want);
		return;
	}
	e->team->run(nparts, [&](uint32_t part) {
		const uint32_t *big = src[longest];
		uint32_t	from = part == 0 ? 0 : big[(uint64_t) len[longest] * part / nparts];
		uint32_t	to = part + 1 == nparts ? 0 : big[(uint64_t) len[longest] * (part + 1) / nparts];
		const uint32_t *psrc[GPUIDX_ENGINE_MAX_TERMS];
		uint32_t	plen[GPUIDX_ENGINE_MAX_TERMS];
		uint64_t	at = 0;
		uint64_t	n = 0;

		for (uint32_t i = 0; i < k; i++)
		{
			uint32_t	lo = part == 0 ? 0 : lower_bound_u32(src[i], len[i], from);
			uint32_t	hi = part + 1 == nparts ? len[i] : lower_bound_u32(src[i], len[i], to);

			psrc[i] = src[i] + lo;
			plen[i] = hi - lo;
			at += lo;
			n += plen[i];
		}
		if (at < want)
			merge_pieces(psrc, plen, k, out + at, (uint32_t) std::min<uint64_t>(n, want - at));
	});
}

/*
 * One query of a chunk, as planned on the host; a union is planned as one
 * piece per list (below), consecutive and in the same chunk.  Its job, with
 * term indexes relative to first_term: the source's candidates through
 * job_terms lists from job_first on, the last job_exclude subtracted.
 */
struct query_plan
{
	uint32_t	qi;				/* index in the caller's array */
	uint32_t	first_term;		/* into the chunk's term list, ordered (resolve_query) */
	uint32_t	nterms;			/* the query's */
	bool		has_initial;
	int32_t		source;			/* the source term, or -1: the initial set */
	uint32_t	job_first;
	uint32_t	job_terms;
	uint32_t	job_exclude;
	uint32_t	piece;			/* a union's piece: this one, of npieces (else 0 of 1) */
	uint32_t	npieces;
	uint32_t	cap;			/* its source's length: the initial set or the shortest list */
	uint32_t	bound;			/* most ids its result can have */
	uint32_t	items;			/* its source's blocks: work items */
	uint32_t	slot_len;		/* survivors' room per item */
	bool		store;			/* survivors kept (ids asked for) */
	uint32_t	wanted_bound;	/* most ids it asks back */
	/* places in the chunk's arrays, set by run_chunk */
	uint64_t	item_base;
	uint64_t	slot_base;
	uint64_t	result_base;
	uint64_t	initial_offset;
};

/* one term of a chunk: its descriptor (device pointers) and what to stage */
struct term_plan
{
	list_desc	desc;
	const uint8_t *stage_src;	/* inline bytes to copy, or NULL when cached */
	uint64_t	stage_len;
	uint64_t	stage_offset;	/* in the staging area */
};

/*
 * Arrays a batch is planned in, kept by the engine so that their memory is
 * reused: allocated afresh, a 4096-query batch's few MB were mapped and
 * page-faulted in on every batch.
 */
struct query_lookup
{
	int32_t		status;			/* OK, INVALID or NOT_CACHED */
	uint32_t	resolved;		/* terms looked up before a failure (all on OK) */
	uint64_t	list_bytes;
};

struct plan_space
{
	std::vector<query_plan> plans;
	std::vector<term_plan> terms;
	std::vector<lru_entry *> entries;
	std::vector<query_lookup> lookups;
	std::vector<uint32_t> first;
	std::vector<query_plan> chunk;
	std::vector<term_plan> chunk_terms;
	std::vector<query_job> jobs;
	std::vector<uint64_t> prefix;
	std::vector<uint64_t> unit_prefix;
	std::vector<copy_piece> pieces;
	small_launch small;			/* a small batch's launch parameters */
};

void
plan_space_free(plan_space *plan)
{
	delete plan;
}

int
ensure_buffers(gpuidx_engine *e, uint64_t device_bytes, uint64_t host_bytes, gpuidx_engine_error *error)
{
	if (device_bytes > e->scratch_bytes)
	{
		OPS->dev_free(e->scratch);
		e->scratch = NULL;
		e->scratch_bytes = 0;
		CUDA_TRY(e, error, OPS->dev_alloc((void **) &e->scratch, device_bytes));
		e->scratch_bytes = device_bytes;
	}
	if (host_bytes > e->pinned_bytes)
	{
		OPS->host_free(e->pinned);
		e->pinned = NULL;
		e->pinned_bytes = 0;
		e->pinned_device = NULL;
		CUDA_TRY(e, error, OPS->host_alloc((void **) &e->pinned, host_bytes));
		e->pinned_bytes = host_bytes;
		CUDA_TRY(e, error, OPS->mapped((void **) &e->pinned_device, e->pinned));
	}
	return GPUIDX_ENGINE_OK;
}

/* results from which a batch of at most DMA_MAX_QUERIES is packed on the device and copied */
#define DMA_RESULTS_BYTES (UINT64_C(4) << 20)
#define DMA_MAX_QUERIES 256

/*
 * Items per unit of the intersect kernel: one while the batch has fewer
 * items than the device has warps to run them (latency first), growing to
 * at most MAX_CHUNK as batches grow, so that each warp still gets a few
 * units to balance the load while walking each list forward.
 */
#define MAX_CHUNK 32
#define WARPS_PER_SM 32

static uint32_t
unit_chunk(const gpuidx_engine *e, uint64_t items)
{
	uint64_t	warps = (uint64_t) std::max(1u, e->info.multiprocessors) * WARPS_PER_SM;

	return (uint32_t) std::max<uint64_t>(1, std::min<uint64_t>(MAX_CHUNK, items / (4 * warps)));
}

/*
 * Run the queries plans[0..np) of one chunk: one upload, two launches
 * (intersect, then pack with its scan: CUB's for large batches) and one
 * synchronization, whatever the queries'
 * number of terms; the results land in mapped pinned memory and are then
 * copied into the queries' arrays.  Terms are resolved and sorted by count
 * within each query.
 */
static int
run_chunk(gpuidx_engine *e, gpuidx_query *queries, std::vector<query_plan> &plans,
		  std::vector<term_plan> &terms, uint64_t stage_bytes, double *clock,
		  gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	uint32_t	np = (uint32_t) plans.size();
	uint64_t	items = 0,
				slots = 0,
				results = 0,
				initial = 0;
	uint32_t	max_rounds = 0;
	size_t		temp_bytes = 0;
	layout		dev,
				host;
	uint64_t	at_status,
				at_descs,
				at_jobs,
				at_prefix,
				at_unit_prefix,
				at_stage,
				at_initial,
				upload_end,
				at_counts,
				at_pos,
				at_temp,
				at_slots,
				at_dev_results,
				at_status_out,
				at_totals,
				at_results;
	std::vector<query_job> &jobs = e->plan->jobs;
	std::vector<uint64_t> &prefix = e->plan->prefix;
	std::vector<uint64_t> &unit_prefix = e->plan->unit_prefix;
	uint32_t	chunk;
	bool		small;
	bool		dma;
	batch_launch l;
	batch_status status;
	double		device_start;
	double		return_start;

	jobs.clear();
	prefix.assign(1, 0);
	unit_prefix.assign(1, 0);
	for (uint32_t i = 0; i < np; i++)
	{
		query_plan &p = plans[i];
		query_job	j = {};

		p.item_base = items;
		p.slot_base = slots;
		p.result_base = results;
		p.initial_offset = initial;
		items += p.items;
		slots += p.store ? (uint64_t) p.items * p.slot_len : 0;
		results += p.wanted_bound;
		initial += p.has_initial ? p.cap : 0;
		max_rounds = std::max(max_rounds, p.job_terms);
		if (p.items == 0)
			continue;			/* an empty source: nothing to run, total 0 */
		j.source = p.source < 0 ? -1 : (int32_t) (p.first_term + p.source);
		j.first_term = p.first_term + p.job_first;
		j.nterms = p.job_terms;
		j.nexclude = p.job_exclude;
		j.query = i;
		j.initial_offset = p.initial_offset;
		j.ninitial = p.has_initial ? p.cap : 0;
		j.slot_len = p.slot_len;
		j.slot_base = p.slot_base;
		j.result_base = p.result_base;
		j.result = queries[p.qi].result;
		j.store = p.store;
		jobs.push_back(j);
		prefix.push_back(items);
	}
	chunk = unit_chunk(e, items);
	for (uint32_t j = 0; j < jobs.size(); j++)
		unit_prefix.push_back(unit_prefix.back() + dev_units(prefix[j + 1] - prefix[j], chunk));
	l.items = items;
	CUDA_TRY(e, error, OPS->pack(&l, 0, NULL, &temp_bytes, NULL, NULL, NULL, NULL, NULL, NULL, NULL, e->stream));

	/*
	 * device: [status | descs | jobs | prefix | staged lists | initial sets] (uploaded)
	 *         [counts | pos | scan temp | survivors' slots]
	 * pinned: the uploaded part, then [status | totals | results] the kernels write
	 */
	at_status = dev.take(sizeof(batch_status));
	at_descs = dev.take(terms.size() * sizeof(list_desc));
	at_jobs = dev.take(jobs.size() * sizeof(query_job));
	at_prefix = dev.take(prefix.size() * sizeof(uint64_t));
	at_unit_prefix = dev.take(unit_prefix.size() * sizeof(uint64_t));
	at_stage = dev.take(stage_bytes);
	at_initial = dev.take(initial * sizeof(uint32_t));
	upload_end = dev.used;
	at_counts = dev.take((items + 1) * sizeof(uint32_t));
	at_pos = dev.take((items + 1) * sizeof(uint32_t));
	at_temp = dev.take(temp_bytes);
	at_slots = dev.take(slots * sizeof(uint32_t));
	/*
	 * Large results of few queries are packed in device memory and copied
	 * back by DMA: the pack kernel's writes into mapped memory run at ~21
	 * GB/s, a copy at ~55 (bench/results/gpu.md); the second synchronization
	 * this takes is nothing beside megabytes.
	 */
	dma = results * sizeof(uint32_t) >= DMA_RESULTS_BYTES && np <= DMA_MAX_QUERIES;
	at_dev_results = dma ? dev.take(results * sizeof(uint32_t)) : 0;
	host.used = upload_end;
	at_status_out = host.take(sizeof(batch_status));
	at_totals = host.take((uint64_t) np * sizeof(uint32_t));
	at_results = host.take(results * sizeof(uint32_t));
	{
		int			st = ensure_buffers(e, dev.used, host.used, error);

		if (st != GPUIDX_ENGINE_OK)
			return st;
	}

	/* host staging mirrors the device layout up to upload_end */
	{
		std::vector<copy_piece> &pieces = e->plan->pieces;

		pieces.clear();

		for (auto &t : terms)
			if (t.stage_src != NULL)
			{
				pieces.push_back({e->pinned + at_stage + t.stage_offset, t.stage_src, t.stage_len});
				t.desc = absolute_desc(t.desc, e->scratch + at_stage + t.stage_offset);
			}
		for (auto &p : plans)
			if (p.has_initial)
				pieces.push_back({e->pinned + at_initial + p.initial_offset * sizeof(uint32_t),
								  (const uint8_t *) queries[p.qi].initial, (uint64_t) p.cap * sizeof(uint32_t)});
		copy_pieces(e, pieces);
	}
	memset(e->pinned + at_status, 0, sizeof(batch_status));
	for (size_t i = 0; i < terms.size(); i++)
		memcpy(e->pinned + at_descs + i * sizeof(list_desc), &terms[i].desc, sizeof(list_desc));
	memcpy(e->pinned + at_jobs, jobs.data(), jobs.size() * sizeof(query_job));
	memcpy(e->pinned + at_prefix, prefix.data(), prefix.size() * sizeof(uint64_t));
	memcpy(e->pinned + at_unit_prefix, unit_prefix.data(), unit_prefix.size() * sizeof(uint64_t));

	l.jobs = (const query_job *) (e->scratch + at_jobs);
	l.prefix = (const uint64_t *) (e->scratch + at_prefix);
	l.njobs = (uint32_t) jobs.size();
	l.descs = (const list_desc *) (e->scratch + at_descs);
	l.initial = (const uint32_t *) (e->scratch + at_initial);
	l.skip_ratio = e->skip_ratio;
	l.unit_prefix = (const uint64_t *) (e->scratch + at_unit_prefix);
	l.units = unit_prefix.back();
	l.chunk = chunk;

	/* cached lists only, few enough to travel as launch parameters: one launch */
	small = stage_bytes == 0 && initial == 0 && jobs.size() <= SMALL_JOBS && terms.size() <= SMALL_DESCS &&
		items <= SMALL_ITEMS;
	device_start = now_seconds();
	if (stats)
		stats->host_seconds += device_start - *clock;
	if (items > 0)
	{
		unsigned	max_ctas = std::max(1u, e->info.multiprocessors) * CTAS_PER_SM;
		uint32_t   *counts = (uint32_t *) (e->scratch + at_counts);
		uint32_t   *pos = (uint32_t *) (e->scratch + at_pos);
		uint32_t   *slot_area = (uint32_t *) (e->scratch + at_slots);
		batch_status *dev_status = (batch_status *) (e->scratch + at_status);

		uint32_t   *results_dev = dma ? (uint32_t *) (e->scratch + at_dev_results)
			: (uint32_t *) (e->pinned_device + at_results);
		uint32_t   *totals_dev = (uint32_t *) (e->pinned_device + at_totals);
		batch_status *status_dev = (batch_status *) (e->pinned_device + at_status_out);

		if (small)
		{
			small_launch &sl = e->plan->small;

			sl.l = l;
			memcpy(sl.jobs, jobs.data(), jobs.size() * sizeof(query_job));
			memcpy(sl.prefix, prefix.data(), prefix.size() * sizeof(uint64_t));
			memcpy(sl.unit_prefix, unit_prefix.data(), unit_prefix.size() * sizeof(uint64_t));
			for (size_t i = 0; i < terms.size(); i++)
				sl.descs[i] = terms[i].desc;
			LAUNCH_TRY(e, error, stats, OPS->small(&sl, max_ctas, slot_area, counts, e->small, results_dev,
													totals_dev, status_dev, e->stream));
		}
		else
		{
			CUDA_TRY(e, error, OPS->copy_async(e->scratch, e->pinned, upload_end, e->stream));
			LAUNCH_TRY(e, error, stats, OPS->intersect(&l, max_ctas, slot_area, counts, dev_status, e->stream));
			LAUNCH_TRY(e, error, stats, OPS->pack(&l, max_ctas, e->scratch + at_temp, &temp_bytes, slot_area,
												   counts, pos, dev_status, results_dev, totals_dev, status_dev,
												   e->stream));
			if (stats)
				stats->bytes_uploaded += upload_end;
		}
		CUDA_TRY(e, error, OPS->sync(e->stream));
		memcpy(&status, e->pinned + at_status_out, sizeof(status));
		if (dma && !status.bad)
		{
			const uint32_t *totals = (const uint32_t *) (e->pinned + at_totals);

			for (uint32_t i = 0; i < np; i++)
			{
				uint64_t	at = plans[i].result_base * sizeof(uint32_t);
				uint32_t	wanted = plans[i].items > 0 ? gpuidx_result_wanted(queries[plans[i].qi].result, totals[i]) : 0;

				if (wanted > 0)
					CUDA_TRY(e, error, OPS->copy_async(e->pinned + at_results + at, e->scratch + at_dev_results + at,
													   (uint64_t) wanted * sizeof(uint32_t), e->stream));
			}
			CUDA_TRY(e, error, OPS->sync(e->stream));
		}
	}
	else
		memset(&status, 0, sizeof(status));
	if (status.bad)
	{
		ERR(error, GPUIDX_ENGINE_ERR_INTERNAL, "a list failed to decode on the GPU");
		return GPUIDX_ENGINE_ERR_INTERNAL;
	}

	/* results: what each query asks for, from mapped memory to its array */
	return_start = now_seconds();
	if (stats)
	{
		stats->device_seconds += return_start - device_start;
		stats->rounds = std::max(stats->rounds, max_rounds);
		stats->merge_rounds += (uint32_t) status.merged;
		stats->search_rounds += (uint32_t) status.searched;
	}
	{
		std::vector<copy_piece> &pieces = e->plan->pieces;

		pieces.clear();
		const uint32_t *totals = (const uint32_t *) (e->pinned + at_totals);
		uint64_t	returned = 0;

		for (uint32_t i = 0; i < np; i += plans[i].npieces)
		{
			query_plan &p = plans[i];
			gpuidx_query *q = &queries[p.qi];
			uint32_t	total = 0;
			uint32_t	wanted;

			for (uint32_t k = 0; k < p.npieces; k++)
				total += plans[i + k].items > 0 ? totals[i + k] : 0;
			wanted = gpuidx_result_wanted(q->result, total);
			if (wanted > q->out_capacity)
			{
				/* a union longer than the room its caller gave it */
				q->out_count = q->total = 0;
				q->status = GPUIDX_ENGINE_ERR_INVALID;
				continue;
			}
			q->out_count = wanted;
			q->total = total;
			q->status = GPUIDX_ENGINE_OK;
			if (p.npieces > 1)
			{
				const uint32_t *src[GPUIDX_ENGINE_MAX_TERMS];
				uint32_t	len[GPUIDX_ENGINE_MAX_TERMS];

				for (uint32_t k = 0; k < p.npieces; k++)
				{
					const query_plan &piece = plans[i + k];

					src[k] = (const uint32_t *) (e->pinned + at_results) + piece.result_base;
					len[k] = piece.items > 0 ? gpuidx_result_wanted(q->result, totals[i + k]) : 0;
					returned += len[k];
				}
				merge_pieces_parallel(e, src, len, p.npieces, q->out, wanted);
				continue;
			}
			returned += wanted;
			if (wanted > 0)
				pieces.push_back({(uint8_t *) q->out, e->pinned + at_results + p.result_base * sizeof(uint32_t),
								  (uint64_t) wanted * sizeof(uint32_t)});
		}
		copy_pieces(e, pieces);
		if (stats)
			stats->bytes_returned += returned * sizeof(uint32_t);
	}
	*clock = now_seconds();
	if (stats)
		stats->return_seconds += *clock - return_start;
	return GPUIDX_ENGINE_OK;
}

/*
 * Planning runs in two passes.  resolve_query finds a query's lists and
 * checks them, touching nothing shared, so the host team runs it for many
 * queries at once; then, in the batch's order on one thread, the cache's hits
 * and misses are counted and the LRU order updated (touch_query), exactly as
 * one lru_use per term would.
 */
static void
resolve_query(gpuidx_engine *e, const gpuidx_query *q, term_plan *slots, lru_entry **entries,
			  query_lookup *r)
{
	uint64_t	counts[GPUIDX_ENGINE_MAX_TERMS];
	uint64_t	bound;
	uint32_t	npos = q->nterms - q->nexclude;
	auto		ascending = [](const term_plan &x, const term_plan &y) { return x.desc.count < y.desc.count; };
	auto		descending = [](const term_plan &x, const term_plan &y) { return x.desc.count > y.desc.count; };

	r->status = GPUIDX_ENGINE_OK;
	r->resolved = 0;
	r->list_bytes = 0;
	if (!gpuidx_query_shape_ok(q) || (q->out == NULL && q->out_capacity > 0))
	{
		r->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const gpuidx_term_ref *ref = &q->terms[t];
		term_plan  *tp = &slots[t];

		memset(tp, 0, sizeof(*tp));
		entries[t] = NULL;
		if (ref->bytes != NULL)
		{
			pl_view		v;

			if (pl_open(&v, ref->bytes, ref->len, 0) != PL_OK ||
				!list_layout_ok(&v, (const uint8_t *) ref->bytes))
			{
				r->status = GPUIDX_ENGINE_ERR_INVALID;
				return;
			}
			tp->desc = relative_desc(&v, (const uint8_t *) ref->bytes);
			tp->stage_src = (const uint8_t *) ref->bytes;
			tp->stage_len = ref->len;
			r->list_bytes += ref->len;
		}
		else
		{
			lru_entry  *entry = lru_find(&e->cache, ref->key);
			dev_list   *l;

			if (entry == NULL)
			{
				r->status = GPUIDX_ENGINE_ERR_NOT_CACHED;
				return;
			}
			entries[t] = entry;
			l = (dev_list *) entry->data;
			if (l->kind != DATA_LIST)
			{
				r->status = GPUIDX_ENGINE_ERR_INVALID;
				return;
			}
			tp->desc = absolute_desc(l->rel, e->arena + l->offset);
			r->list_bytes += entry->bytes;
		}
		r->resolved = t + 1;
		counts[t] = tp->desc.count;
	}
	bound = gpuidx_query_bound(q, counts);
	/* a union's pieces are kept by the engine: its room is checked against the union itself */
	if (q->op != GPUIDX_OP_OR &&
		gpuidx_result_wanted(q->result, (uint32_t) std::min<uint64_t>(bound, UINT32_MAX)) > q->out_capacity)
	{
		r->status = GPUIDX_ENGINE_ERR_INVALID;
		return;
	}

	/*
	 * AND: the lists intersected shortest first (SvS), then the excluded
	 * ones longest first (the most candidates gone soonest).  OR: longest
	 * first, each piece a list less the longer ones (plan_union).
	 */
	if (q->op == GPUIDX_OP_OR)
		std::sort(slots, slots + q->nterms, descending);
	else
	{
		std::sort(slots, slots + npos, ascending);
		std::sort(slots + npos, slots + q->nterms, descending);
	}
}

/*
 * Lookups ahead of the one in hand, so that a batch's misses on the cache's
 * table overlap: query qi's cached keys, step 0 (bucket) or 1 (first entry).
 */
#define PREFETCH_QUERIES 4

static void
prefetch_query(gpuidx_engine *e, const gpuidx_query *queries, uint32_t qi, uint32_t end, int step)
{
	if (qi >= end || queries[qi].nterms > GPUIDX_ENGINE_MAX_TERMS)
		return;
	for (uint32_t t = 0; t < queries[qi].nterms; t++)
		if (queries[qi].terms[t].bytes == NULL)
			lru_prefetch(&e->cache, queries[qi].terms[t].key, step);
}

/* the recency ring's neighbours a coming touch_query will relink */
static void
prefetch_neighbours(lru_entry *const *entries, uint32_t n)
{
	for (uint32_t t = 0; t < n; t++)
		if (entries[t] != NULL)
		{
			__builtin_prefetch(entries[t]->older, 1);
			__builtin_prefetch(entries[t]->newer, 1);
		}
}

static void
touch_query(gpuidx_engine *e, lru_entry *const *entries, const query_lookup &r)
{
	for (uint32_t t = 0; t < r.resolved; t++)
		if (entries[t] != NULL)
			lru_touch(&e->cache, entries[t]);
	if (r.status == GPUIDX_ENGINE_ERR_NOT_CACHED)
		e->cache.stats.misses++;
}

/*
 * Memory a query needs in a chunk: device (its items' counts and scan, its
 * survivors' slots, its initial set, its staged lists) and pinned (its ids).
 */
static uint64_t
query_footprint(const query_plan &p, const term_plan *qterms)
{
	uint64_t	bytes = (uint64_t) p.items * 2 * sizeof(uint32_t) + (uint64_t) p.wanted_bound * sizeof(uint32_t);

	if (p.store)
		bytes += (uint64_t) p.items * p.slot_len * sizeof(uint32_t);
	if (p.has_initial)
		bytes += (uint64_t) p.cap * sizeof(uint32_t);
	/* a union's pieces share its lists: staged once, with the first */
	for (uint32_t t = 0; t < p.nterms && p.piece == 0; t++)
		if (qterms[t].stage_src != NULL)
			bytes += ALIGN_UP(qterms[t].stage_len);
	return bytes;
}

/* a source term's work items and survivors' room per item */
static void
plan_source(query_plan &p, const list_desc &d)
{
	p.items = d.nblocks;
	p.slot_len = d.codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;
}

/* the query answered TOO_LARGE when alone too large for the GPU's batch memory: the caller's CPU answers it */
static bool
plan_fits(const gpuidx_engine *e, gpuidx_query *q, uint64_t footprint)
{
	if (footprint <= e->batch_budget)
		return true;
	q->status = GPUIDX_ENGINE_ERR_TOO_LARGE;
	return false;
}

/*
 * An AND's plan (p: the query's fields set): the initial set or its
 * shortest list through the other lists, the excluded ones last.
 */
static void
plan_and(const gpuidx_engine *e, gpuidx_query *q, const term_plan *terms, query_plan &p,
		 std::vector<query_plan> &plans)
{
	uint32_t	npos = q->nterms - q->nexclude;

	p.has_initial = q->initial != NULL;
	p.source = p.has_initial ? -1 : 0;
	p.job_first = p.has_initial ? 0 : 1;
	p.job_terms = q->nterms - p.job_first;
	p.job_exclude = q->nexclude;
	p.cap = p.has_initial ? q->ninitial : terms[0].desc.count;
	p.bound = npos > 0 ? std::min(p.cap, terms[0].desc.count) : p.cap;
	p.wanted_bound = gpuidx_result_wanted(q->result, p.bound);
	if (p.has_initial)
	{
		p.items = (p.cap + GPUIDX_EF_BLOCK - 1) / GPUIDX_EF_BLOCK;
		p.slot_len = GPUIDX_EF_BLOCK;
	}
	else
		plan_source(p, terms[0].desc);
	if (plan_fits(e, q, query_footprint(p, terms)))
		plans.push_back(p);
}

/*
 * A union's plan: piece i is list i less the lists before it (longest
 * first, so each piece searches longer lists), so the pieces are disjoint
 * and their counts add up to the union's; run_chunk merges their ids.
 */
static void
plan_union(const gpuidx_engine *e, gpuidx_query *q, const term_plan *terms, query_plan &p,
		   std::vector<query_plan> &plans)
{
	uint64_t	footprint = 0;
	size_t		at = plans.size();

	p.has_initial = false;
	p.npieces = q->nterms;
	for (uint32_t i = 0; i < q->nterms; i++)
	{
		p.piece = i;
		p.source = (int32_t) i;
		p.job_first = 0;
		p.job_terms = i;
		p.job_exclude = i;
		p.cap = p.bound = terms[i].desc.count;
		p.wanted_bound = gpuidx_result_wanted(q->result, p.bound);
		plan_source(p, terms[i].desc);
		footprint += query_footprint(p, terms);
		plans.push_back(p);
	}
	if (!plan_fits(e, q, footprint))
		plans.resize(at);
}

/* run plans[from, to) as one chunk, with their terms renumbered and restaged */
static int
run_plans(gpuidx_engine *e, gpuidx_query *queries, const std::vector<query_plan> &plans,
		  size_t from, size_t to, const std::vector<term_plan> &terms,
		  double *clock, gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	std::vector<query_plan> &chunk = e->plan->chunk;
	std::vector<term_plan> &chunk_terms = e->plan->chunk_terms;
	uint64_t	stage = 0;

	chunk.assign(plans.begin() + from, plans.begin() + to);
	chunk_terms.clear();

	for (auto &p : chunk)
	{
		uint32_t	first = (uint32_t) chunk_terms.size();

		/* a union's later pieces name the terms its first one put */
		if (p.piece > 0)
		{
			p.first_term = (&p - 1)->first_term;
			continue;
		}
		for (uint32_t t = 0; t < p.nterms; t++)
		{
			term_plan	tp = terms[p.first_term + t];

			if (tp.stage_src != NULL)
			{
				tp.stage_offset = stage;
				stage = ALIGN_UP(stage + tp.stage_len);
			}
			chunk_terms.push_back(tp);
		}
		p.first_term = first;
	}
	return run_chunk(e, queries, chunk, chunk_terms, stage, clock, stats, error);
}

int
cuda_run_batch(gpuidx_engine *e, gpuidx_query *queries, uint32_t nqueries,
			   gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	double		start = now_seconds();
	double		clock = start;		/* where host time runs from */
	int			st = GPUIDX_ENGINE_OK;

	if ((st = batch_begin(e, stats, error)) != GPUIDX_ENGINE_OK)
		return st;
	try
	{
		if (e->plan == NULL)
			e->plan = new plan_space();
		std::vector<query_plan> &plans = e->plan->plans;
		std::vector<term_plan> &terms = e->plan->terms;
		std::vector<lru_entry *> &entries = e->plan->entries;
		std::vector<query_lookup> &lookups = e->plan->lookups;
		std::vector<uint32_t> &first = e->plan->first;
		size_t		from = 0;
		uint64_t	used = 0;
		uint32_t	nparts;

		plans.clear();
		lookups.resize(nqueries);
		first.assign(nqueries + 1, 0);
		/* each query's slots: its terms, in order, then sorted by count */
		for (uint32_t qi = 0; qi < nqueries; qi++)
			first[qi + 1] = first[qi] +
				(queries[qi].nterms <= GPUIDX_ENGINE_MAX_TERMS ? queries[qi].nterms : 0);
		terms.resize(first[nqueries]);
		entries.resize(first[nqueries]);
		/*
		 * Batches under 1024 queries are resolved on this thread: waking the
		 * team costs tens of µs, about what one thread takes for a thousand
		 * queries.  Larger ones in parts of at least 64 queries, four per
		 * thread, so that a thread that wakes late finds the parts taken
		 * rather than holding up the batch with its own (one part per thread
		 * made a 4096 batch's planning twice as slow, bench/results/gpu.md).
		 */
		nparts = nqueries < 1024 ? 1 : std::max(1u, std::min(e->team->size() * 4, nqueries / 64));
		e->team->run(nparts, [&](uint32_t part) {
			uint32_t	from = (uint64_t) nqueries * part / nparts;
			uint32_t	to = (uint64_t) nqueries * (part + 1) / nparts;

			for (uint32_t qi = from; qi < to; qi++)
			{
				prefetch_query(e, queries, qi + 2 * PREFETCH_QUERIES, to, 0);
				prefetch_query(e, queries, qi + PREFETCH_QUERIES, to, 1);
				resolve_query(e, &queries[qi], terms.data() + first[qi], entries.data() + first[qi],
							  &lookups[qi]);
			}
		});
		for (uint32_t qi = 0; qi < nqueries; qi++)
		{
			gpuidx_query *q = &queries[qi];
			const query_lookup &r = lookups[qi];
			query_plan	p = {};

			if (qi + PREFETCH_QUERIES < nqueries)
				prefetch_neighbours(entries.data() + first[qi + PREFETCH_QUERIES],
									lookups[qi + PREFETCH_QUERIES].resolved);
			touch_query(e, entries.data() + first[qi], r);
			if (stats)
				stats->list_bytes += r.list_bytes;
			q->out_count = 0;
			q->total = 0;
			q->status = r.status;
			if (r.status != GPUIDX_ENGINE_OK)
				continue;
			p.qi = qi;
			p.first_term = first[qi];
			p.nterms = q->nterms;
			p.store = q->result != GPUIDX_RESULT_COUNT;
			p.npieces = 1;
			if (q->op == GPUIDX_OP_OR)
				plan_union(e, q, terms.data() + first[qi], p, plans);
			else
				plan_and(e, q, terms.data() + first[qi], p, plans);
		}
		/* chunks of consecutive queries (a union's pieces together) that fit the batch memory */
		for (size_t i = 0; i <= plans.size() && st == GPUIDX_ENGINE_OK;)
		{
			uint32_t	group = i < plans.size() ? plans[i].npieces : 1;
			uint64_t	need = 0;

			for (uint32_t k = 0; k < group && i + k < plans.size(); k++)
				need += query_footprint(plans[i + k], terms.data() + plans[i + k].first_term);
			if (i > from && (i == plans.size() || used + need > e->batch_budget))
			{
				/*
				 * Host time is measured, not derived: one clock read ends each
				 * phase and starts the next, host (planning, staging), device,
				 * return, and host again after the chunk.
				 */
				st = run_plans(e, queries, plans, from, i, terms, &clock, stats, error);
				from = i;
				used = 0;
			}
			used += need;
			i += group;
		}
	}
	catch (const std::bad_alloc &)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory planning a batch");
		st = GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	batch_stats_end(stats, nqueries, start, clock);
	return st;
}

