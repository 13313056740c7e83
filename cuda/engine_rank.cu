/*
 * engine_rank.cu
 *	  The CUDA engine's ranked batches: top-k by BM25 over each query's
 *	  lists, scored on the device.
 */
#include "engine_int.h"

/* ------------------------------------------------------------ ranked queries */

/*
 * Data a ranked query reads: cached (dev points into the arena) or the
 * caller's bytes, staged with the chunk (stage_offset set by the chunk).
 */
struct rank_ref
{
	const uint8_t *dev;
	const uint8_t *src;
	uint64_t	len;
	uint64_t	stage_offset;
};

struct rank_term_plan
{
	rank_ref	list;
	list_desc	rel;			/* the list's pointers relative to its start */
	rank_ref	tf;				/* the inline tfs, or the frequency record */
	bool		inline_tfs;
	double		idf;
};

/* one ranked query of a batch as planned on the host */
struct rank_plan
{
	uint32_t	qi;				/* index in the caller's array */
	uint32_t	first_term;		/* into the batch's rank_term_plans, in the query's order */
	uint32_t	nterms;
	rank_ref	doclens;
	uint32_t	ndocs;
	uint32_t	nchunks;
	uint32_t	nslots;			/* its accumulator table (rank_table_size) */
	uint32_t	hash_shift;		/* 0: the table is dense, a slot per doc */
	uint64_t	footprint;		/* device bytes it needs in a chunk */
	/* places in the chunk's arrays, set by run_rank_chunk */
	uint64_t	out_base;		/* its k places among the chunk's outputs */
	uint64_t	slots_offset;
	uint64_t	best_offset;	/* its parts' best keys */
	uint64_t	surv_docs_offset;	/* its survivors */
	uint64_t	surv_scores_offset;
};

/* the ranked path's planning arrays, kept between batches as plan_space's are */
struct rank_space
{
	std::vector<rank_plan> plans;
	std::vector<rank_term_plan> terms;
	std::vector<rank_job> jobs;
	std::vector<rank_term_desc> descs;
	std::vector<uint32_t> pass_jobs;
	std::vector<uint64_t> pass_prefix;
	std::vector<rank_pass> passes;
	std::vector<uint64_t> slot_prefix;
	std::vector<copy_piece> pieces;
	std::vector<uint32_t> order;
};

void
rank_space_free(rank_space *rank)
{
	delete rank;
}

/* a cached entry of the kind asked for, touched as a query's use; a status otherwise */
static int
rank_lookup(gpuidx_engine *e, uint64_t key, uint32_t kind, dev_list **out)
{
	lru_entry  *entry = lru_find(&e->cache, key);

	if (entry == NULL)
	{
		e->cache.stats.misses++;
		return GPUIDX_ENGINE_ERR_NOT_CACHED;
	}
	lru_touch(&e->cache, entry);
	*out = (dev_list *) entry->data;
	return (*out)->kind == kind ? GPUIDX_ENGINE_OK : GPUIDX_ENGINE_ERR_INVALID;
}

static rank_ref
rank_cached(gpuidx_engine *e, const dev_list *l)
{
	rank_ref	r = {};

	r.dev = e->arena + l->offset;
	r.len = l->entry.bytes;
	return r;
}

static rank_ref
rank_inline(const void *bytes, uint64_t len)
{
	rank_ref	r = {};

	r.src = (const uint8_t *) bytes;
	r.len = len;
	return r;
}

/*
 * The accumulator table of a query with 'postings' postings in a segment of
 * ndocs (rank_ops.cuh): hashed, with the power of two of slots at or above
 * twice the postings (at most half full, so probes stay short), unless
 * a slot per doc takes no more room (16 bytes a slot either way).  Its
 * size, zeroing and sweeps follow the postings: a query of a few lists in
 * a large segment does not pay for the segment.
 */
static void
rank_table_size(uint64_t postings, uint32_t ndocs, uint32_t *nslots, uint32_t *hash_shift)
{
	uint32_t	log2_slots = 6;

	while (log2_slots < 32 && (UINT64_C(1) << log2_slots) < 2 * postings)
		log2_slots++;
	if (log2_slots >= 32 || (UINT64_C(1) << log2_slots) >= (uint64_t) ndocs)
	{
		*nslots = ndocs;
		*hash_shift = 0;
	}
	else
	{
		*nslots = 1u << log2_slots;
		*hash_shift = 32 - log2_slots;
	}
}

/* device bytes a ranked query needs besides what it stages */
static uint64_t
rank_scratch_bytes(uint32_t nslots, uint32_t k, uint32_t nterms)
{
	uint64_t	nparts = ((uint64_t) nslots + RANK_SLOT_CHUNK - 1) / RANK_SLOT_CHUNK * RANK_PARTS_PER_ITEM;

	return ALIGN_UP((uint64_t) nslots * sizeof(rank_slot)) + RANK_BINS * sizeof(uint32_t) +
		ALIGN_UP(nparts * 2 * sizeof(uint64_t)) +
		ALIGN_UP(RANK_SURVIVORS * sizeof(uint32_t)) + ALIGN_UP(RANK_SURVIVORS * sizeof(double)) +
		sizeof(rank_select) + (uint64_t) k * (sizeof(uint32_t) + sizeof(double)) + sizeof(rank_job) +
		(uint64_t) nterms * (sizeof(rank_term_desc) + sizeof(uint32_t) + sizeof(uint64_t)) +
		sizeof(uint64_t);
}

/*
 * Check query q and find its data: every argument, the lists (structure and
 * checksum when inline), their tfs or frequency records (df = the list's
 * count), the doc lengths (every list's last doc below ndocs).  Appends its
 * terms to rs->terms; OK, INVALID or NOT_CACHED.
 */
static int
resolve_ranked(gpuidx_engine *e, const gpuidx_rank_query *q, rank_space *rs, rank_plan *p,
			   uint64_t *list_bytes)
{
	dev_list   *l;
	int			st;

	if (q->terms == NULL || q->nterms == 0 || q->nterms > GPUIDX_ENGINE_MAX_TERMS || q->k == 0 ||
		q->k > GPUIDX_RANK_MAX_K || q->k > q->out_capacity || q->out_docs == NULL ||
		q->out_scores == NULL || !(q->k1 > 0.0) || !isfinite(q->k1) || !(q->b >= 0.0 && q->b <= 1.0) ||
		!(q->avgdl >= 0.0) || !isfinite(q->avgdl))
		return GPUIDX_ENGINE_ERR_INVALID;
	if (q->doclens.bytes != NULL)
	{
		gpuidx_doclens_header h;

		if (gpx_doclens_check((const uint8_t *) q->doclens.bytes, q->doclens.len) != NULL)
			return GPUIDX_ENGINE_ERR_INVALID;
		memcpy(&h, q->doclens.bytes, sizeof(h));
		p->doclens = rank_inline(q->doclens.bytes, q->doclens.len);
		p->ndocs = h.ndocs;
		p->nchunks = h.nchunks;
	}
	else
	{
		if ((st = rank_lookup(e, q->doclens.key, GPUIDX_DATA_DOCLENS, &l)) != GPUIDX_ENGINE_OK)
			return st;
		p->doclens = rank_cached(e, l);
		p->ndocs = l->count;
		p->nchunks = l->nchunks;
	}
	p->first_term = (uint32_t) rs->terms.size();
	p->nterms = q->nterms;
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const gpuidx_rank_term *rt = &q->terms[t];
		rank_term_plan tp = {};
		uint32_t	df;

		if (!isfinite(rt->idf) || !(rt->idf >= 0.0))
			return GPUIDX_ENGINE_ERR_INVALID;
		tp.idf = rt->idf;
		if (rt->list.bytes != NULL)
		{
			pl_view		v;

			if (pl_open(&v, rt->list.bytes, rt->list.len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK ||
				!list_layout_ok(&v, (const uint8_t *) rt->list.bytes))
				return GPUIDX_ENGINE_ERR_INVALID;
			tp.rel = relative_desc(&v, (const uint8_t *) rt->list.bytes);
			tp.list = rank_inline(rt->list.bytes, rt->list.len);
		}
		else
		{
			if ((st = rank_lookup(e, rt->list.key, DATA_LIST, &l)) != GPUIDX_ENGINE_OK)
				return st;
			tp.rel = l->rel;
			tp.list = rank_cached(e, l);
		}
		*list_bytes += tp.list.len;
		if (tp.rel.count > 0 && tp.rel.last >= p->ndocs)
			return GPUIDX_ENGINE_ERR_INVALID;
		if (rt->tfs != NULL)
		{
			/* tfs are 1..255: a 0 would count a doc the CPU does not */
			if (memchr(rt->tfs, 0, tp.rel.count) != NULL)
				return GPUIDX_ENGINE_ERR_INVALID;
			tp.inline_tfs = true;
			tp.tf = rank_inline(rt->tfs, tp.rel.count);
		}
		else
		{
			if (rt->freqs.bytes != NULL)
			{
				if (gpx_freq_record_check((const uint8_t *) rt->freqs.bytes, rt->freqs.len) != NULL)
					return GPUIDX_ENGINE_ERR_INVALID;
				df = gpx_freq_record_df((const uint8_t *) rt->freqs.bytes);
				tp.tf = rank_inline(rt->freqs.bytes, rt->freqs.len);
			}
			else
			{
				if ((st = rank_lookup(e, rt->freqs.key, GPUIDX_DATA_FREQS, &l)) != GPUIDX_ENGINE_OK)
					return st;
				df = l->count;
				tp.tf = rank_cached(e, l);
			}
			if (df != tp.rel.count)
				return GPUIDX_ENGINE_ERR_INVALID;
		}
		rs->terms.push_back(tp);
	}
	{
		uint64_t	postings = 0;

		for (uint32_t t = 0; t < q->nterms; t++)
			postings += rs->terms[p->first_term + t].rel.count;
		rank_table_size(postings, p->ndocs, &p->nslots, &p->hash_shift);
	}
	p->footprint = rank_scratch_bytes(p->nslots, q->k, q->nterms);
	if (p->doclens.src != NULL)
		p->footprint += ALIGN_UP(p->doclens.len);
	for (uint32_t t = 0; t < q->nterms; t++)
	{
		const rank_term_plan &tp = rs->terms[p->first_term + t];

		if (tp.list.src != NULL)
			p->footprint += ALIGN_UP(tp.list.len);
		if (tp.tf.src != NULL)
			p->footprint += ALIGN_UP(tp.tf.len);
	}
	return GPUIDX_ENGINE_OK;
}

/* a ref's place in device memory, staging it when it is the caller's */
static const uint8_t *
rank_place(gpuidx_engine *e, rank_ref &r, uint64_t at_stage, uint64_t *stage,
		   std::vector<copy_piece> &pieces)
{
	if (r.src == NULL)
		return r.dev;
	r.stage_offset = *stage;
	*stage = ALIGN_UP(*stage + r.len);
	if (r.len > 0)
		pieces.push_back({e->pinned + at_stage + r.stage_offset, r.src, r.len});
	return e->scratch + at_stage + r.stage_offset;
}

/* plans[from, to) as one chunk: one upload, the term passes, the select, one copy back */
static int
run_rank_chunk(gpuidx_engine *e, gpuidx_rank_query *queries, size_t from, size_t to, double *clock,
			   gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	rank_space *rs = e->rank;
	rank_plan  *plans = rs->plans.data() + from;
	uint32_t	np = (uint32_t) (to - from);
	uint32_t	max_terms = 0;
	uint64_t	stage = 0,
				outs = 0,
				slot_items = 0;
	layout		dev,
				host;
	uint64_t	at_jobs,
				at_descs,
				at_pass_jobs,
				at_pass_prefix,
				at_slot_prefix,
				at_stage,
				upload_end,
				at_bad,
				at_sel,
				at_out_docs,
				at_out_scores,
				return_end,
				at_hist,
				host_return;
	unsigned	max_ctas = std::max(1u, e->info.multiprocessors) * CTAS_PER_SM;
	rank_launch l;
	double		device_start,
				return_start;

	/* the chunk's sizes: staging, outputs, work items */
	for (uint32_t i = 0; i < np; i++)
	{
		rank_plan  &p = plans[i];

		for (uint32_t t = 0; t < p.nterms; t++)
		{
			const rank_term_plan &tp = rs->terms[p.first_term + t];

			stage += tp.list.src ? ALIGN_UP(tp.list.len) : 0;
			stage += tp.tf.src ? ALIGN_UP(tp.tf.len) : 0;
		}
		stage += p.doclens.src ? ALIGN_UP(p.doclens.len) : 0;
		p.out_base = outs;
		outs += queries[p.qi].k;
		max_terms = std::max(max_terms, p.nterms);
		slot_items += (p.nslots + RANK_SLOT_CHUNK - 1) / RANK_SLOT_CHUNK;
	}

	/* the term passes: pass j takes term j of every query that has one */
	rs->pass_jobs.clear();
	rs->pass_prefix.clear();
	rs->passes.assign(max_terms, rank_pass());
	for (uint32_t j = 0; j < max_terms; j++)
	{
		rank_pass  &pass = rs->passes[j];
		uint64_t	items = 0;

		pass.term = j;
		pass.jobs = (const uint32_t *) (uintptr_t) rs->pass_jobs.size();		/* offsets until placed */
		pass.prefix = (const uint64_t *) (uintptr_t) rs->pass_prefix.size();
		rs->pass_prefix.push_back(0);
		for (uint32_t i = 0; i < np; i++)
			if (plans[i].nterms > j)
			{
				rs->pass_jobs.push_back(i);
				items += rs->terms[plans[i].first_term + j].rel.nblocks;
				rs->pass_prefix.push_back(items);
			}
		pass.njobs = (uint32_t) (rs->pass_prefix.size() - 1 - (uintptr_t) pass.prefix);
		pass.items = items;
	}
	rs->slot_prefix.assign(1, 0);
	for (uint32_t i = 0; i < np; i++)
		rs->slot_prefix.push_back(rs->slot_prefix.back() + (plans[i].nslots + RANK_SLOT_CHUNK - 1) / RANK_SLOT_CHUNK);

	/*
	 * device: [jobs | descs | pass jobs | pass prefixes | slot prefix | staged] (uploaded)
	 *         [bad | selections | out docs | out scores] (zeroed, copied back)
	 *         [histograms | each query's table: sums, counts, keys; parts' bests; survivors] (zeroed)
	 * pinned: the uploaded part, then the part copied back
	 */
	at_jobs = dev.take((uint64_t) np * sizeof(rank_job));
	at_descs = dev.take(rs->terms.size() * sizeof(rank_term_desc));
	at_pass_jobs = dev.take(rs->pass_jobs.size() * sizeof(uint32_t));
	at_pass_prefix = dev.take(rs->pass_prefix.size() * sizeof(uint64_t));
	at_slot_prefix = dev.take(rs->slot_prefix.size() * sizeof(uint64_t));
	at_stage = dev.take(stage);
	upload_end = dev.used;
	at_bad = dev.take(sizeof(int32_t));
	at_sel = dev.take((uint64_t) np * sizeof(rank_select));
	at_out_docs = dev.take(outs * sizeof(uint32_t));
	at_out_scores = dev.take(outs * sizeof(double));
	return_end = dev.used;
	at_hist = dev.take((uint64_t) np * RANK_BINS * sizeof(uint32_t));
	for (uint32_t i = 0; i < np; i++)
	{
		plans[i].slots_offset = dev.take((uint64_t) plans[i].nslots * sizeof(rank_slot));
		plans[i].best_offset = dev.take((rs->slot_prefix[i + 1] - rs->slot_prefix[i]) * RANK_PARTS_PER_ITEM *
										2 * sizeof(uint64_t));
		plans[i].surv_docs_offset = dev.take(RANK_SURVIVORS * sizeof(uint32_t));
		plans[i].surv_scores_offset = dev.take(RANK_SURVIVORS * sizeof(double));
	}
	host.used = upload_end;
	host_return = host.take(return_end - at_bad);
	{
		int			st = ensure_buffers(e, dev.used, host.used, error);

		if (st != GPUIDX_ENGINE_OK)
			return st;
	}

	/* descriptors with device pointers; inline bytes staged in pinned memory */
	{
		std::vector<copy_piece> &pieces = rs->pieces;
		uint64_t	at = 0;

		pieces.clear();
		rs->jobs.resize(np);
		rs->descs.resize(rs->terms.size());
		for (uint32_t i = 0; i < np; i++)
		{
			rank_plan  &p = plans[i];
			const gpuidx_rank_query *q = &queries[p.qi];
			rank_job   &job = rs->jobs[i];

			memset(&job, 0, sizeof(job));
			job.doclens = rank_place(e, p.doclens, at_stage, &at, pieces);
			job.ndocs = p.ndocs;
			job.nchunks = p.nchunks;
			job.first_term = p.first_term - plans[0].first_term;
			job.nterms = p.nterms;
			job.every_term = q->every_term != 0;
			job.k = q->k;
			job.k1 = q->k1;
			job.b = q->b;
			job.avgdl = q->avgdl;
			job.slots = (rank_slot *) (e->scratch + p.slots_offset);
			job.hashed = p.hash_shift != 0;
			job.nslots = p.nslots;
			job.hash_shift = p.hash_shift;
			job.hist = (uint32_t *) (e->scratch + at_hist) + (uint64_t) i * RANK_BINS;
			job.best = (uint64_t *) (e->scratch + p.best_offset);
			job.surv_docs = (uint32_t *) (e->scratch + p.surv_docs_offset);
			job.surv_scores = (double *) (e->scratch + p.surv_scores_offset);
			job.sel = (rank_select *) (e->scratch + at_sel) + i;
			job.out_docs = (uint32_t *) (e->scratch + at_out_docs) + p.out_base;
			job.out_scores = (double *) (e->scratch + at_out_scores) + p.out_base;
			for (uint32_t t = 0; t < p.nterms; t++)
			{
				rank_term_plan &tp = rs->terms[p.first_term + t];
				rank_term_desc &d = rs->descs[job.first_term + t];
				const uint8_t *tf;

				memset(&d, 0, sizeof(d));
				d.list = absolute_desc(tp.rel, rank_place(e, tp.list, at_stage, &at, pieces));
				tf = rank_place(e, tp.tf, at_stage, &at, pieces);
				if (tp.inline_tfs)
					d.tfs = tf;
				else
					d.freq = tf;
				d.idf = tp.idf;
			}
		}
		copy_pieces(e, pieces);
	}
	memcpy(e->pinned + at_jobs, rs->jobs.data(), (uint64_t) np * sizeof(rank_job));
	memcpy(e->pinned + at_descs, rs->descs.data(), rs->descs.size() * sizeof(rank_term_desc));
	memcpy(e->pinned + at_pass_jobs, rs->pass_jobs.data(), rs->pass_jobs.size() * sizeof(uint32_t));
	memcpy(e->pinned + at_pass_prefix, rs->pass_prefix.data(), rs->pass_prefix.size() * sizeof(uint64_t));
	memcpy(e->pinned + at_slot_prefix, rs->slot_prefix.data(), rs->slot_prefix.size() * sizeof(uint64_t));
	for (rank_pass &pass : rs->passes)
	{
		pass.jobs = (const uint32_t *) (e->scratch + at_pass_jobs) + (uintptr_t) pass.jobs;
		pass.prefix = (const uint64_t *) (e->scratch + at_pass_prefix) + (uintptr_t) pass.prefix;
	}
	l.jobs = (const rank_job *) (e->scratch + at_jobs);
	l.njobs = np;
	l.terms = (const rank_term_desc *) (e->scratch + at_descs);
	l.slot_prefix = (const uint64_t *) (e->scratch + at_slot_prefix);
	l.slot_items = slot_items;
	l.bad = (int32_t *) (e->scratch + at_bad);

	/* the device: every launch serves all the chunk's queries; one synchronization */
	device_start = now_seconds();
	if (stats)
		stats->host_seconds += device_start - *clock;
	CUDA_TRY(e, error, OPS->copy_async(e->scratch, e->pinned, upload_end, e->stream));
	CUDA_TRY(e, error, OPS->zero_async(e->scratch + at_bad, dev.used - at_bad, e->stream));
	for (uint32_t j = 0; j < max_terms; j++)
		LAUNCH_TRY(e, error, stats, OPS->rank_term(&l, &rs->passes[j], max_ctas, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_best(&l, max_ctas, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_bound(&l, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_gather(&l, max_ctas, e->stream));
	LAUNCH_TRY(e, error, stats, OPS->rank_final(&l, e->stream));
	CUDA_TRY(e, error, OPS->copy_async(e->pinned + host_return, e->scratch + at_bad, return_end - at_bad,
									   e->stream));
	CUDA_TRY(e, error, OPS->sync(e->stream));

	/*
	 * Queries whose survivors overflowed select from their whole tables: the
	 * radix passes (the others are done and skip them), a second copy back.
	 */
	{
		bool		overflowed = false;

		for (uint32_t i = 0; i < np && !overflowed; i++)
		{
			rank_select s;

			memcpy(&s, e->pinned + host_return + (at_sel - at_bad) + (uint64_t) i * sizeof(rank_select), sizeof(s));
			overflowed = s.overflow != 0;
		}
		if (overflowed)
		{
			for (uint32_t pass = 0; pass < RANK_PASSES; pass++)
			{
				LAUNCH_TRY(e, error, stats, OPS->rank_hist(&l, pass, max_ctas, e->stream));
				LAUNCH_TRY(e, error, stats, OPS->rank_pick(&l, pass, e->stream));
			}
			LAUNCH_TRY(e, error, stats, OPS->rank_collect(&l, max_ctas, e->stream));
			CUDA_TRY(e, error, OPS->copy_async(e->pinned + host_return, e->scratch + at_bad, return_end - at_bad,
											   e->stream));
			CUDA_TRY(e, error, OPS->sync(e->stream));
		}
	}
	return_start = now_seconds();
	if (stats)
	{
		stats->device_seconds += return_start - device_start;
		stats->bytes_uploaded += upload_end;
		stats->bytes_returned += return_end - at_bad;
	}
	{
		int32_t		bad;

		memcpy(&bad, e->pinned + host_return, sizeof(bad));
		if (bad)
		{
			ERR(error, GPUIDX_ENGINE_ERR_INTERNAL, "a list failed to decode on the GPU");
			return GPUIDX_ENGINE_ERR_INTERNAL;
		}
	}

	/* each query's docs at or above its k-th, sorted: score descending, then doc */
	for (uint32_t i = 0; i < np; i++)
	{
		const rank_plan &p = plans[i];
		gpuidx_rank_query *q = &queries[p.qi];
		rank_select s;
		const uint32_t *docs = (const uint32_t *) (e->pinned + host_return + (at_out_docs - at_bad)) + p.out_base;
		const double *scores = (const double *) (e->pinned + host_return + (at_out_scores - at_bad)) + p.out_base;
		std::vector<uint32_t> &order = rs->order;
		uint32_t	n;

		memcpy(&s, e->pinned + host_return + (at_sel - at_bad) + (uint64_t) i * sizeof(rank_select), sizeof(s));
		n = std::min(s.matched, q->k);
		if (s.taken != n)
		{
			ERR(error, GPUIDX_ENGINE_ERR_INTERNAL, "the GPU selected %u docs of %u for a top %u",
				s.taken, s.matched, q->k);
			return GPUIDX_ENGINE_ERR_INTERNAL;
		}
		order.resize(n);
		for (uint32_t j = 0; j < n; j++)
			order[j] = j;
		std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
			return scores[a] != scores[b] ? scores[a] > scores[b] : docs[a] < docs[b];
		});
		for (uint32_t j = 0; j < n; j++)
		{
			q->out_docs[j] = docs[order[j]];
			q->out_scores[j] = scores[order[j]];
		}
		q->out_count = n;
		q->matched = s.matched;
		q->status = GPUIDX_ENGINE_OK;
	}
	*clock = now_seconds();
	if (stats)
		stats->return_seconds += *clock - return_start;
	return GPUIDX_ENGINE_OK;
}

int
cuda_run_ranked(gpuidx_engine *e, gpuidx_rank_query *queries, uint32_t nqueries,
				gpuidx_batch_stats *stats, gpuidx_engine_error *error)
{
	double		start = now_seconds();
	double		clock = start;
	int			st = GPUIDX_ENGINE_OK;

	if ((st = batch_begin(e, stats, error)) != GPUIDX_ENGINE_OK)
		return st;
	try
	{
		if (e->rank == NULL)
			e->rank = new rank_space();
		rank_space *rs = e->rank;
		size_t		from = 0;
		uint64_t	used = 0;

		rs->plans.clear();
		rs->terms.clear();
		for (uint32_t qi = 0; qi < nqueries; qi++)
		{
			gpuidx_rank_query *q = &queries[qi];
			rank_plan	p = {};
			uint64_t	list_bytes = 0;
			size_t		nterms_before = rs->terms.size();

			q->out_count = 0;
			q->matched = 0;
			p.qi = qi;
			q->status = resolve_ranked(e, q, rs, &p, &list_bytes);
			if (stats)
				stats->list_bytes += list_bytes;
			if (q->status == GPUIDX_ENGINE_OK && p.footprint > e->batch_budget)
				q->status = GPUIDX_ENGINE_ERR_TOO_LARGE;	/* alone too large: the CPU answers it */
			if (q->status != GPUIDX_ENGINE_OK)
			{
				rs->terms.resize(nterms_before);
				continue;
			}
			rs->plans.push_back(p);
		}
		/* chunks of consecutive queries that fit the batch memory */
		for (size_t i = 0; i <= rs->plans.size() && st == GPUIDX_ENGINE_OK; i++)
		{
			uint64_t	need = i < rs->plans.size() ? rs->plans[i].footprint : 0;

			if (i > from && (i == rs->plans.size() || used + need > e->batch_budget))
			{
				st = run_rank_chunk(e, queries, from, i, &clock, stats, error);
				from = i;
				used = 0;
			}
			used += need;
		}
	}
	catch (const std::bad_alloc &)
	{
		ERR(error, GPUIDX_ENGINE_ERR_OUT_OF_MEMORY, "out of host memory planning a ranked batch");
		st = GPUIDX_ENGINE_ERR_OUT_OF_MEMORY;
	}
	batch_stats_end(stats, nqueries, start, clock);
	return st;
}

