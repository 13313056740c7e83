/*
 * rank.c
 *	  Ranked queries: statistics, scores and top k over every segment
 *	  (block-max WAND, rank/wand.c) and the pending area (every entry
 *	  scored).  Scores are computed by gpx_rank_score alone, so the index,
 *	  the row-by-row functions and the GPU agree to the last bit.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "query/positions.h"
#include "query/rank.h"
#include "query/rankcache.h"
#include "store/rankdata.h"
#include "store/parse.h"
#include "store/pending.h"
#include "worker/worker.h"

void
gq_rank_require(GqIndex *gq)
{
	if (!(gq->meta.flags & GPX_META_FREQS))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" stores no term frequencies, which ranking needs",
						RelationGetRelationName(gq->index)),
				 errhint("Rebuild it with REINDEX (an index of an earlier gpuidx version), "
						 "or with ALTER INDEX ... SET (freqs = on) and REINDEX.")));
}

void
gq_rank_sums(GqIndex *gq, uint64 *ndocs, uint64 *length)
{
	uint64		docs = gq->meta.pend_entries;
	uint64		sum = gq->meta.pend_dl;

	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		const GpxSegRef *ref = &gq->meta.segments[s];

		docs += ref->ndocs - ref->ndead;
		sum += ref->sum_dl - ref->dead_dl;
	}
	*ndocs = docs;
	*length = sum;
}

double
gq_rank_avgdl(uint64 ndocs, uint64 length)
{
	return ndocs > 0 ? (double) length / (double) ndocs : 0.0;
}

void
gq_rank_totals(GqIndex *gq, double *ndocs, double *avgdl)
{
	uint64		docs;
	uint64		sum;

	gq_rank_sums(gq, &docs, &sum);
	*ndocs = (double) docs;
	*avgdl = gq_rank_avgdl(docs, sum);
}

/* tf of each of terms in sorted lexemes (a merge walk); 0 where absent */
static void
tfs_of(const GpxLexemes *terms, const GpxLexemes *doc, uint32 *tf)
{
	int			i = 0;
	int			j = 0;

	while (i < terms->n)
	{
		int			c = j < doc->n ? gpx_lexeme_cmp(doc->lex[j], doc->len[j], terms->lex[i], terms->len[i]) : 1;

		if (c < 0)
			j++;
		else
		{
			tf[i] = c == 0 ? (doc->tf ? doc->tf[j] : 1) : 0;
			i++;
			if (c == 0)
				j++;
		}
	}
}

/* does an entry (sorted lexemes) have every filter term? tf for the ranked ones */
static bool
pending_entry_tfs(const GpxPendingReader *pr, const GpxLexemes *terms, const GpxLexemes *filter,
				  uint32 *tf)
{
	const uint8 *p = pr->lex;
	const char *lex;
	int			len;
	uint32		t;
	int			i = 0;
	int			f = 0;

	bool		pass = true;

	/* every tf, whatever the filter says: the document frequencies count them all */
	memset(tf, 0, terms->n * sizeof(uint32));
	while (gpx_pending_lexeme(&p, pr->end, pr->freqs, &lex, &len, &t))
	{
		while (i < terms->n && gpx_lexeme_cmp(terms->lex[i], terms->len[i], lex, len) < 0)
			i++;
		if (i < terms->n && gpx_lexeme_cmp(terms->lex[i], terms->len[i], lex, len) == 0)
			tf[i] = t;
		if (pass && f < filter->n && gpx_lexeme_cmp(filter->lex[f], filter->len[f], lex, len) < 0)
			pass = false;		/* a filter term the entry lacks */
		if (pass && f < filter->n && gpx_lexeme_cmp(filter->lex[f], filter->len[f], lex, len) == 0)
			f++;
	}
	return pass && f == filter->n;
}

/*
 * the docs of a segment VACUUM marked dead, in order (NULL if none); those
 * it marked since the metapage was read too, and seg->ref.ndead counts them
 */
static uint32 *
dead_docs(GpxSegment *seg)
{
	uint32		n;

	if (seg->ref.ndead == 0)
		return NULL;
	return gpx_seg_dead_docs(seg, &n, NULL);
}

/* a found term's list, its ref kept whole (gpx_seg_list frees an inline payload) */
static void
open_list_keeping_ref(GpxSegment *seg, const GpxTermRef *ref, GpxList *list)
{
	GpxTermRef	copy = *ref;

	if (!ref->external)
	{
		copy.payload = palloc(ref->len);
		memcpy(copy.payload, ref->payload, ref->len);
	}
	gpx_seg_list(seg, &copy, list);
}

/*
 * postings of a list whose docs VACUUM marked dead: the dead docs (at most
 * a fifth of the segment's, since VACUUM rewrites a segment past that)
 * searched in the list
 */
static uint64
dead_postings(GpxSegment *seg, GpxTermRef *ref, const uint32 *dead)
{
	GpxList		list;
	uint32	   *out;
	uint32		n;

	if (dead == NULL)
		return 0;
	open_list_keeping_ref(seg, ref, &list);
	out = palloc_extended((Size) Max(Min(seg->ref.ndead, list.df), 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	n = cpu_intersect_array_list(dead, seg->ref.ndead, &list.view, out, CPU_METHOD_AUTO, 0, NULL);
	pfree(out);
	gpx_list_free(&list);
	return n;
}

/*
 * The same for a short list, without reading every dead doc: each of its
 * docs tested in the dead-doc bitmap.  The bitmap is read as it is now; the
 * caller holds the count to seg->ref.ndead (gpx_seg_dead_unchanged).
 * False if a block does not decode (dead_postings then reports it).
 */
static bool
dead_postings_tested(GpxSegment *seg, GpxTermRef *ref, uint64 *postings)
{
	GpxList		list;
	uint32		buf[GPUIDX_LRC_SEGMENT];
	uint64		n = 0;
	bool		ok = true;

	open_list_keeping_ref(seg, ref, &list);
	for (uint32 b = 0; ok && b < list.view.nblocks; b++)
	{
		int			len = pl_decode_block(&list.view, b, buf);

		ok = len >= 0;
		for (int i = 0; i < len; i++)
			n += gpx_seg_is_dead(seg, buf[i]);
	}
	gpx_list_free(&list);
	*postings = n;
	return ok;
}

/*
 * Adds each term's live postings in the segment to df[].  Live is the list
 * less the docs VACUUM marked dead, which with many dead docs is the costly
 * part of a ranked query: what a list holds of them is remembered by the
 * backend with the term (gpx_seg_dead_postings_known) and, for a long list,
 * by every backend (gpx_dead_counts_get); a short list's is counted by
 * testing its docs in the bitmap, and only for the rest are the segment's
 * dead docs all read, once.  If VACUUM marked more meanwhile,
 * every term is counted against what that read found, as one set.
 */
static void
add_live_dfs(GpxSegment *seg, const GpxLexemes *terms, uint64 *df)
{
	int			n = terms->n;
	GpxTermRef *refs = palloc0(Max(n, 1) * sizeof(GpxTermRef));
	bool	   *found = palloc0(Max(n, 1) * sizeof(bool));
	uint64	   *dead = palloc0(Max(n, 1) * sizeof(uint64));
	bool	   *known = palloc0(Max(n, 1) * sizeof(bool));
	bool	   *counted = palloc0(Max(n, 1) * sizeof(bool));	/* here: to remember */
	bool		any_tested = false,
				all_known = true;
	uint32		ndead = seg->ref.ndead;

	for (int i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		found[i] = gpx_seg_find(seg, terms->lex[i], terms->len[i], &refs[i]);
	}
	for (int i = 0; ndead > 0 && i < n; i++)
	{
		if (!found[i])
			continue;
		known[i] = gpx_seg_dead_postings_known(seg, terms->lex[i], terms->len[i], &dead[i]);
		/* another backend's count of a long list, for this backend to remember too */
		if (!known[i] && gpx_dead_counts_get(seg, &refs[i], &dead[i]))
		{
			known[i] = true;
			gpx_seg_dead_postings_remember(seg, terms->lex[i], terms->len[i], dead[i]);
		}
		/* a list shorter than the dead docs or than an eighth of the bitmap's bytes */
		if (!known[i] && (refs[i].df <= ndead || refs[i].df <= seg->hdr->ndocs / 64))
		{
			CHECK_FOR_INTERRUPTS();
			counted[i] = known[i] = dead_postings_tested(seg, &refs[i], &dead[i]);
			any_tested |= counted[i];
		}
		all_known &= known[i];
	}
	if (any_tested && !gpx_seg_dead_unchanged(seg))
	{
		/* the bitmap changed while it was tested: count those again */
		for (int i = 0; i < n; i++)
			if (counted[i])
				known[i] = all_known = false;
	}
	if (!all_known)
	{
		uint32	   *all_dead = dead_docs(seg);

		/* more dead than the remembered counts were for: count every list */
		for (int i = 0; i < n; i++)
		{
			if (!found[i] || (known[i] && seg->ref.ndead == ndead))
				continue;
			CHECK_FOR_INTERRUPTS();
			dead[i] = dead_postings(seg, &refs[i], all_dead);
			known[i] = true;
			counted[i] = true;
		}
		if (all_dead)
			pfree(all_dead);
	}
	for (int i = 0; i < n; i++)
	{
		if (!found[i])
			continue;
		if (counted[i])
		{
			gpx_seg_dead_postings_remember(seg, terms->lex[i], terms->len[i], dead[i]);
			gpx_dead_counts_put(seg, &refs[i], dead[i]);
		}
		df[i] += refs[i].df - dead[i];
		if (refs[i].payload)
			pfree(refs[i].payload);
	}
	pfree(refs);
	pfree(found);
	pfree(dead);
	pfree(known);
	pfree(counted);
}

bool
gq_rank_tree_settles(GqIndex *gq, const GqTree *tree)
{
	if (tree == NULL || !(gq->meta.flags & GPX_META_POSITIONS) || !gq_tree_positions_settle(tree))
		return false;
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
		if (!(gq_segment(gq, s)->hdr->flags & GPX_SEG_POSITIONS))
			return false;
	return true;
}

GqRank *
gq_rank_begin(GqIndex *gq, const GpxLexemes *terms, const GpxLexemes *filter, const GqTree *tree,
			  double k1, double b, const GqRankStats *given)
{
	GqRank	   *r = palloc0(sizeof(GqRank));
	GpxPendingReader pr;
	GqPosMatch	pm;
	uint32	   *tf;
	int			pend_cap = 0;
	uint32	  **pend_tfs = NULL;
	uint32	   *pend_dl = NULL;

	gq_rank_require(gq);
	r->gq = gq;
	r->terms = *terms;
	if (filter)
		r->filter = *filter;
	r->conjunctive = filter && filter->n == terms->n;
	for (int i = 0; r->conjunctive && i < terms->n; i++)
		r->conjunctive = gpx_lexeme_cmp(terms->lex[i], terms->len[i], filter->lex[i], filter->len[i]) == 0;
	r->tree = tree;
	r->tree_settled = gq_rank_tree_settles(gq, tree);
	r->k1 = k1;
	r->b = b;
	gq_rank_totals(gq, &r->ndocs, &r->avgdl);
	r->df = palloc0(Max(terms->n, 1) * sizeof(uint64));
	r->idf = palloc0(Max(terms->n, 1) * sizeof(double));

	/* document frequencies: each segment's live postings */
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
		add_live_dfs(gq_segment(gq, s), terms, r->df);

	/* and the pending area's entries, kept to be scored once idf is known */
	tf = palloc(Max(terms->n, 1) * sizeof(uint32));
	if (r->tree_settled)
		gq_pos_match_begin(&pm, tree);
	gpx_pending_begin(&pr, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&pr))
	{
		bool		any = false;
		bool		pass = pending_entry_tfs(&pr, terms, &r->filter, tf);

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < terms->n; i++)
			if (tf[i] > 0)
			{
				r->df[i]++;
				any = true;
			}
		if (!any || !pass)
			continue;
		if (tree && gq_pending_entry_answer(tree, r->tree_settled ? &pm : NULL, &pr) == GQ_NO)
			continue;
		if (r->npend == pend_cap)
		{
			pend_cap = Max(pend_cap * 2, 64);
			r->pend_tids = r->pend_tids ? repalloc(r->pend_tids, pend_cap * sizeof(ItemPointerData))
				: palloc(pend_cap * sizeof(ItemPointerData));
			pend_tfs = pend_tfs ? repalloc(pend_tfs, pend_cap * sizeof(uint32 *))
				: palloc(pend_cap * sizeof(uint32 *));
			pend_dl = pend_dl ? repalloc(pend_dl, pend_cap * sizeof(uint32))
				: palloc(pend_cap * sizeof(uint32));
		}
		r->pend_tids[r->npend] = pr.tid;
		pend_tfs[r->npend] = palloc(Max(terms->n, 1) * sizeof(uint32));
		memcpy(pend_tfs[r->npend], tf, terms->n * sizeof(uint32));
		pend_dl[r->npend] = pr.dl;
		r->npend++;
	}
	gpx_pending_end(&pr);
	if (r->tree_settled)
		gq_pos_match_end(&pm);

	if (given)
	{
		/* the collection's statistics; the pending entries' tfs were still needed */
		r->ndocs = (double) given->ndocs;
		r->avgdl = gq_rank_avgdl(given->ndocs, given->length);
		memcpy(r->df, given->df, terms->n * sizeof(uint64));
	}
	for (int i = 0; i < terms->n; i++)
		r->idf[i] = gpx_bm25_idf(r->ndocs, (double) r->df[i]);
	r->q.nterms = terms->n;
	r->q.idf = r->idf;
	r->q.k1 = k1;
	r->q.b = b;
	r->q.avgdl = r->avgdl;
	r->q.conjunctive = r->conjunctive;

	r->pend_scores = palloc(Max(r->npend, 1) * sizeof(double));
	for (int e = 0; e < r->npend; e++)
	{
		r->pend_scores[e] = gpx_rank_score(&r->q, pend_tfs[e], pend_dl[e]);
		pfree(pend_tfs[e]);
	}
	pfree(tf);
	return r;
}

double
gq_rank_score(GqRank *r, const GpxLexemes *doc)
{
	uint32	   *tf = palloc(Max(r->terms.n, 1) * sizeof(uint32));
	double		score;

	tfs_of(&r->terms, doc, tf);
	score = gpx_rank_score(&r->q, tf, doc->dl);
	pfree(tf);
	return score;
}

/* ---------------------------------------------------------------------------
 * One segment's lists for rank/wand.c
 */
typedef struct SegTerm
{
	GpxSegment *seg;
	GqTermData	d;				/* the list, its tfs and blocks' bounds */
	bool		kept;			/* d is the backend's copy (rankcache.c) */
	uint32		held;			/* the codec block decoded in buf, or UINT32_MAX */
	uint32		buf[GPUIDX_LRC_SEGMENT];
	gpx_rank_list rl;
} SegTerm;

static uint32
load_block(void *arg, uint32 block, uint32 *docs, uint8 *tfs)
{
	SegTerm    *st = arg;
	uint32		cap = pl_block_capacity(&st->d.list.view);
	uint32		start = block * GPX_RANK_BLOCK;
	uint32		n = Min(GPX_RANK_BLOCK, st->d.list.df - start);
	uint32		pb = start / cap;

	if (st->held != pb)
	{
		if (pl_decode_block(&st->d.list.view, pb, st->buf) < 0)
			gpx_seg_corrupt(st->seg, GPX_STREAM_LISTS, PG_UINT32_MAX, "list does not decode");
		st->held = pb;
	}
	memcpy(docs, st->buf + start % cap, n * sizeof(uint32));
	gpx_freqs_tfs(&st->d.freqs, block, tfs);
	return n;
}

/* a term's list, tfs and blocks' bounds, read from the segment (gq_term_reader) */
static void
read_term(GpxSegment *seg, GpxTermRef *ref, GqTermData *d)
{
	uint32		nb = gpx_freq_nblocks(ref->df);

	gpx_seg_freqs(seg, ref, &d->freqs);
	gpx_seg_list(seg, ref, &d->list);
	if (d->list.df != ref->df)
		gpx_seg_corrupt(seg, GPX_STREAM_LISTS, ref->page, "list length differs from its dictionary entry");
	d->block_last = palloc(nb * sizeof(uint32));
	d->block_max_tf = palloc(nb);
	d->block_min_dlcode = palloc(nb);
	if (d->freqs.record)
	{
		for (uint32 b = 0; b < nb; b++)
		{
			GpxFreqBlock fb;

			memcpy(&fb, d->freqs.record + sizeof(GpxFreqHeader) + b * sizeof(fb), sizeof(fb));
			d->block_last[b] = fb.last_doc;
			d->block_max_tf[b] = fb.max_tf;
			d->block_min_dlcode[b] = fb.min_dlcode;
		}
	}
	else
	{
		/* an inline list: short, its blocks' maxima are worked out here */
		const uint32 *ids = d->list.view.values;

		for (uint32 b = 0; b < nb; b++)
		{
			uint32		from = b * GPX_RANK_BLOCK;
			uint32		n = Min(GPX_RANK_BLOCK, ref->df - from);
			uint32		max_tf = 0;
			uint32		min_code = 255;

			for (uint32 j = from; j < from + n; j++)
			{
				max_tf = Max(max_tf, d->freqs.tfs[j]);
				min_code = Min(min_code, gpx_dl_code(gpx_seg_doclen(seg, ids[j])));
			}
			d->block_last[b] = ids[from + n - 1];
			d->block_max_tf[b] = (uint8) max_tf;
			d->block_min_dlcode[b] = (uint8) min_code;
		}
	}
}

static void
open_term(GqRank *r, GpxSegment *seg, GpxTermRef *ref, SegTerm *st)
{
	GqTermSource from = gq_rank_cache_get(seg, ref, read_term, &st->d);

	st->seg = seg;
	st->held = PG_UINT32_MAX;
	st->kept = from != GQ_TERM_READ;
	r->lists_cached += from == GQ_TERM_CACHED;
	st->rl.n = ref->df;
	st->rl.nblocks = gpx_freq_nblocks(ref->df);
	st->rl.block_last = st->d.block_last;
	st->rl.block_max_tf = st->d.block_max_tf;
	st->rl.block_min_dlcode = st->d.block_min_dlcode;
	st->rl.load = load_block;
	st->rl.arg = st;
}

static void
close_term(SegTerm *st)
{
	if (st->kept)
		return;
	if (st->d.cxt != NULL)
	{
		MemoryContextDelete(st->d.cxt);
		return;
	}
	gpx_list_free(&st->d.list);
	gpx_freqs_free(&st->d.freqs);
	pfree(st->d.block_last);
	pfree(st->d.block_max_tf);
	pfree(st->d.block_min_dlcode);
}

static uint32
seg_doclen(void *arg, uint32 doc)
{
	return gpx_seg_doclen((GpxSegment *) arg, doc);
}

static bool
seg_is_live(void *arg, uint32 doc)
{
	return gpx_seg_is_live((GpxSegment *) arg, doc);
}

static uint64
tid_key(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumber(tid) << 16) | ItemPointerGetOffsetNumber(tid);
}

static uint64
seg_key(void *arg, uint32 doc)
{
	ItemPointerData tid;

	if (gpx_seg_map((GpxSegment *) arg, &doc, 1, &tid) != 1)
		return PG_UINT64_MAX;	/* dead: is_live keeps it from here */
	return tid_key(&tid);
}

/* docs of the segment with every filter term; false if there are none */
static bool
filter_docs(GpxSegment *seg, const GpxLexemes *filter, uint32 **docs, uint32 *ndocs)
{
	GpxList    *lists = palloc(filter->n * sizeof(GpxList));
	const pl_view **views = palloc(filter->n * sizeof(pl_view *));
	uint32		shortest = PG_UINT32_MAX;
	int			opened = 0;
	bool		found = true;

	for (int i = 0; i < filter->n && found; i++)
	{
		GpxTermRef	ref;

		if (!gpx_seg_find(seg, filter->lex[i], filter->len[i], &ref))
			found = false;
		else
		{
			gpx_seg_list(seg, &ref, &lists[opened]);
			views[opened] = &lists[opened].view;
			shortest = Min(shortest, lists[opened].df);
			opened++;
		}
	}
	if (found)
	{
		*docs = palloc_extended((Size) Max(shortest, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
		*ndocs = cpu_intersect_k(views, opened, *docs, CPU_METHOD_AUTO, NULL);
	}
	for (int i = 0; i < opened; i++)
		gpx_list_free(&lists[i]);
	pfree(lists);
	pfree(views);
	return found && *ndocs > 0;
}

/* ---------------------------------------------------------------------------
 * One segment ranked by the GPU worker
 */

typedef struct RankedDoc
{
	uint32		doc;
	double		score;
} RankedDoc;

static int
ranked_doc_cmp(const void *a, const void *b)
{
	uint32		x = ((const RankedDoc *) a)->doc;
	uint32		y = ((const RankedDoc *) b)->doc;

	return (x > y) - (x < y);
}

/* a term's tfs as the worker takes them: its record by key or bytes, or inline tfs */
static void
device_tfs(GqIndex *gq, GpxSegment *seg, GpxTermRef *ref, GpxFreqs *freqs, GpxWorkerList *l)
{
	memset(l, 0, sizeof(*l));
	if (!ref->external)
	{
		/* read before the list is opened: that frees the payload they follow */
		gpx_seg_freqs(seg, ref, freqs);
		l->kind = GPX_PART_TFS;
		l->bytes = freqs->tfs;
		l->len = ref->df;
		return;
	}
	l->kind = GPX_PART_FREQS;
	l->key.node = gpx_rel_locator(gq->index);
	l->key.segment = seg->ref.id;
	l->key.page = ref->freq_page;
	l->key.offset = ref->freq_offset;
	l->key.kind = GPX_PART_FREQS;
	{
		GpxFreqHeader h;

		gpx_seg_freq_header(seg, ref, &h);
		l->hdr.count = h.df;
		l->hdr.checksum = h.crc;
		l->len = h.nbytes;
	}
	l->cacheable = l->len >= GPX_CACHE_MIN_BYTES && !RelationUsesLocalBuffers(gq->index);
	if (l->cacheable && gpx_cache_holds(&l->key, &l->hdr, l->len))
		return;
	gpx_seg_freqs(seg, ref, freqs);
	l->bytes = freqs->record;
}

/*
 * The segment's doc lengths, its dead docs' as 0 so that the engine scores
 * only live docs: by key when the cache holds them (known by the segment's
 * place, its docs and the live docs' total length, whatever the blob's
 * size: docs are only ever marked dead, and a doc in a list has a length,
 * so each VACUUM that marks one changes the total), else built (*blob, for
 * the caller to free).  A blob built after VACUUM marked more than
 * seg->ref.ndead leaves those out too, as every reader must.  False when
 * another backend is building the same blob (after a VACUUM, many would at
 * once, a second or more each at 100M docs): this one ranks the segment
 * itself meanwhile.
 */
static bool
device_doclens(GqIndex *gq, GpxSegment *seg, GpxWorkerList *l, uint8 **blob)
{
	memset(l, 0, sizeof(*l));
	*blob = NULL;
	l->kind = GPX_PART_DOCLENS;
	l->cacheable = !RelationUsesLocalBuffers(gq->index);
	l->key.node = gpx_rel_locator(gq->index);
	l->key.segment = seg->ref.id;
	l->key.kind = GPX_PART_DOCLENS;
	l->hdr.count = seg->hdr->ndocs;
	l->hdr.last = (uint32) (seg->ref.sum_dl - seg->ref.dead_dl);
	l->hdr.checksum = (uint32) ((seg->ref.sum_dl - seg->ref.dead_dl) >> 32);
	if (l->cacheable && gpx_cache_holds(&l->key, &l->hdr, 0))
		return true;
	if (l->cacheable && !gpx_cache_claim_build(&l->key, &l->hdr))
		return false;
	*blob = gpx_seg_doclens_blob(seg, &l->len);
	l->bytes = *blob;
	return true;
}

/*
 * Rank the segment's found terms (refs[i] where found[i]) through the
 * worker and offer what it returns to h: true when it answered.  The
 * engine returns the best k of the docs live when the doc lengths were
 * built (device_doclens) by (score, doc id); with doc ids in TID order
 * (GPX_SEG_TID_ORDER) those are the segment's best k live docs by (score,
 * TID), ties included, which h then settles against the other segments
 * exactly as the CPU does.
 */
static bool
rank_segment_on_worker(GqRank *r, GpxSegment *seg, GpxTermRef *refs, const bool *found, uint64 postings,
					   gpx_topk *h)
{
	int			n = r->terms.n;
	GpxWorkerList *parts = palloc0((1 + 2 * n) * sizeof(GpxWorkerList));
	GpxList    *lists;
	bool	   *opened;
	void	  **raw;
	GpxFreqs   *freqs;
	GpxRankParams params;
	uint8	   *blob;
	uint32	   *docs;
	double	   *scores;
	uint32		count = 0;
	uint32		matched = 0;
	int			nparts = 1;
	bool		answered;

	if (!device_doclens(r->gq, seg, &parts[0], &blob))
	{
		pfree(parts);
		return false;
	}
	lists = palloc0(n * sizeof(GpxList));
	opened = palloc0(n * sizeof(bool));
	raw = palloc0(n * sizeof(void *));
	freqs = palloc0(n * sizeof(GpxFreqs));
	memset(&params, 0, sizeof(params));
	for (int i = 0; i < n; i++)
	{
		if (!found[i])
			continue;
		/* the tfs first: opening an inline list frees what they are read from */
		device_tfs(r->gq, seg, &refs[i], &freqs[i], &parts[nparts + 1]);
		gq_device_list(r->gq, seg, &refs[i], &lists[i], &opened[i], &parts[nparts], &raw[i]);
		params.idf[params.nterms++] = r->idf[i];
		nparts += 2;
	}
	params.every_term = r->conjunctive;
	params.k = h->k;
	params.k1 = r->k1;
	params.b = r->b;
	params.avgdl = r->avgdl;
	docs = palloc_extended((Size) params.k * sizeof(uint32), MCXT_ALLOC_HUGE);
	scores = palloc_extended((Size) params.k * sizeof(double), MCXT_ALLOC_HUGE);
	answered = gpx_worker_rank(parts, &params, seg->hdr->ndocs, postings, docs, scores, &count, &matched);
	if (answered && count > 0)
	{
		RankedDoc  *ranked = palloc((Size) count * sizeof(RankedDoc));
		uint32	   *live = palloc((Size) count * sizeof(uint32));
		ItemPointerData *tids = palloc((Size) count * sizeof(ItemPointerData));
		uint32		nlive = 0;

		for (uint32 i = 0; i < count; i++)
		{
			ranked[i].doc = docs[i];
			ranked[i].score = scores[i];
		}
		qsort(ranked, count, sizeof(RankedDoc), ranked_doc_cmp);
		for (uint32 i = 0; i < count; i++)
		{
			if (i > 0 && ranked[i].doc == ranked[i - 1].doc)
				elog(ERROR, "gpuidx: the GPU worker returned a document twice");
			if (gpx_seg_is_live(seg, ranked[i].doc))
			{
				ranked[nlive] = ranked[i];
				live[nlive++] = ranked[i].doc;
			}
		}

		/*
		 * Some of them dead (VACUUM marked them since the cached lengths
		 * were built): the best k live docs may lie past what came back, so
		 * the CPU ranks it.
		 */
		if (count == params.k && nlive < h->k)
			answered = false;
		else
		{
			if (gpx_seg_map(seg, live, nlive, tids) != nlive)
				elog(ERROR, "gpuidx: live documents did not map to TIDs");
			for (uint32 i = 0; i < nlive; i++)
				gpx_topk_offer(h, ranked[i].score, tid_key(&tids[i]));
			r->stats.candidates += matched;
		}
		pfree(ranked);
		pfree(live);
		pfree(tids);
	}
	if (answered)
		r->worker_segments++;
	for (int i = 0; i < n; i++)
	{
		if (opened[i])
			gpx_list_free(&lists[i]);
		if (raw[i])
			pfree(raw[i]);
		gpx_freqs_free(&freqs[i]);
	}
	if (blob)
		pfree(blob);
	pfree(docs);
	pfree(scores);
	pfree(parts);
	pfree(lists);
	pfree(opened);
	pfree(raw);
	pfree(freqs);
	return answered;
}

/*
 * May the worker rank this segment?  It must be serving; the ranking
 * exact there (no filter other than every term, doc ids in TID order, k
 * within the engine's bound); the lists long enough to repay the round
 * trip, and for every term none so much longer than the shortest that the
 * backend's WAND would skip most of it (gpx_place_ranking); and the
 * segment's doc lengths small enough for the queue's arena and the GPU
 * cache.  *postings: the found terms' postings in the segment.
 */
static bool
segment_for_worker(GqRank *r, GpxSegment *seg, const GpxTermRef *refs, const bool *found,
				   const gpx_topk *h, uint64 *postings_out)
{
	uint64		postings = 0;
	uint64		dfs[GPUIDX_ENGINE_MAX_TERMS];
	int			nfound = 0;
	uint64		doclens_most;

	if ((r->filter.n > 0 && !r->conjunctive) || r->tree != NULL || !(seg->hdr->flags & GPX_SEG_TID_ORDER) ||
		h->k == 0 || h->k > GPUIDX_RANK_MAX_K ||
		r->terms.n > GPUIDX_ENGINE_MAX_TERMS)
		return false;
	for (int i = 0; i < r->terms.n; i++)
		if (found[i])
		{
			postings += refs[i].df;
			dfs[nfound++] = refs[i].df;
		}
	*postings_out = postings;
	if (!gpx_place_ranking(dfs, nfound, r->conjunctive, &gpx_placement) || !gpx_worker_wanted())
		return false;

	/*
	 * The doc lengths (4 bytes a doc at most) go through the arena once, to
	 * be cached on the device.  Lengths that might not fit half the arena
	 * would be built and refused on every query; lengths that might take
	 * more than half the cache would push the lists out, be evicted in turn
	 * and be built again (a second and more at 100M docs).  Larger
	 * gpuidx.worker_arena_size and gpuidx.gpu_cache_size let larger
	 * segments go.
	 */
	doclens_most = gpx_doclens_size(seg->hdr->docmap_chunks,
									(uint64) seg->hdr->ndocs * 4 + seg->hdr->docmap_chunks);
	return doclens_most <= gpx_worker_arena_bytes() / 2 && doclens_most <= gpx_worker_cache_bytes() / 2;
}

/*
 * Does an eligible segment go to the worker, which holds *backlog ranked
 * postings?  The device's work for a ranked request follows its postings,
 * so a busy worker would make backends wait while their cores idle: by
 * default the costs both ways measured lately decide
 * (gpx_worker_rank_prefers); with gpuidx.gpu_rank_backlog N, any request
 * goes to an idle worker and none past N postings held.
 */
static bool
route_to_worker(bool every_term, uint64 postings, uint64 *backlog)
{
	*backlog = gpx_worker_rank_backlog();
	if (gpx_gpu_rank_backlog < 0)
		return gpx_worker_rank_prefers(every_term, postings, *backlog);
	return gpx_gpu_rank_backlog == 0 || *backlog == 0 ||
		*backlog + postings <= (uint64) gpx_gpu_rank_backlog;
}

static uint64
ns_since(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return (uint64) (INSTR_TIME_GET_DOUBLE(now) * 1e9);
}

/* the found terms' lists opened for WAND, through the backend's cache of them */
static void
open_terms(GqRank *r, GpxSegment *seg, GpxTermRef *refs, const bool *found, SegTerm *st, bool *opened,
		   const gpx_rank_list **lists)
{
	gq_rank_cache_begin();
	for (int i = 0; i < r->terms.n; i++)
	{
		if (!found[i])
			continue;
		open_term(r, seg, &refs[i], &st[i]);
		refs[i].payload = NULL;
		opened[i] = true;
		lists[i] = &st[i].rl;
	}
}

/* the tree's candidates among segment s's docs of [lo, hi), in *filter (NULL when none) */
static void
tree_filter(GqRank *r, int s, uint32 lo, uint32 hi, uint32 **filter, uint32 *nfilter)
{
	uint32	   *unsure;
	uint32		nunsure;

	gq_segment_tree_window(r->gq, s, r->tree, lo, hi, filter, nfilter, &unsure, &nunsure);
	if (nunsure > 0 && r->tree_settled)
		elog(ERROR, "gpuidx: a ranking filtered by positions left %u docs unsettled", nunsure);
	if (nunsure > 0)
		gq_settled_join(filter, nfilter, unsure, nunsure);
	if (unsure)
		pfree(unsure);
}

static void
rank_segment(GqRank *r, uint32 s, gpx_topk *h, void *scratch)
{
	GpxSegment *seg = gq_segment(r->gq, s);
	int			n = r->terms.n;
	SegTerm    *st = palloc0(n * sizeof(SegTerm));
	const gpx_rank_list **lists = palloc0(n * sizeof(gpx_rank_list *));
	bool	   *opened = palloc0(n * sizeof(bool));
	GpxTermRef *refs = palloc0(n * sizeof(GpxTermRef));
	bool	   *found = palloc0(n * sizeof(bool));
	gpx_rank_query q = r->q;
	uint32	   *filter = NULL;
	uint32		nfilter = 0;
	bool		any = false;
	bool		eligible = false;
	uint64		postings = 0;
	uint64		backlog = 0;
	instr_time	start;

	for (int i = 0; i < n; i++)
	{
		found[i] = gpx_seg_find(seg, r->terms.lex[i], r->terms.len[i], &refs[i]);
		if (!found[i] && r->conjunctive)
			goto done;
		any |= found[i];
	}
	if (!any)
		goto done;
	eligible = segment_for_worker(r, seg, refs, found, h, &postings);
	if (eligible && route_to_worker(r->conjunctive, postings, &backlog))
	{
		/*
		 * The worker's path opens the lists, which frees inline payloads:
		 * it gets copies, so that a fallback ranks from these same lookups.
		 */
		GpxTermRef *copies = palloc(n * sizeof(GpxTermRef));
		bool		answered;

		for (int i = 0; i < n; i++)
		{
			copies[i] = refs[i];
			if (found[i] && refs[i].payload)
			{
				uint32		len = gpx_term_payload_len(seg, &refs[i]);

				copies[i].payload = palloc(len);
				memcpy(copies[i].payload, refs[i].payload, len);
			}
		}
		INSTR_TIME_SET_CURRENT(start);
		answered = rank_segment_on_worker(r, seg, copies, found, postings, h);
		pfree(copies);
		if (answered)
		{
			gpx_worker_note_worker_rank(postings, backlog, ns_since(start));
			goto done;
		}
	}
	q.doclen = seg_doclen;
	q.is_live = seg->ref.ndead > 0 ? seg_is_live : NULL;
	q.key = seg_key;
	q.arg = seg;
	INSTR_TIME_SET_CURRENT(start);
	if (r->tree)
	{
		/*
		 * The tree's candidates: its matches (phrases and weights settled
		 * by the segment's positions) and those the rows decide, a window
		 * of the segment's docs at a time (its sets within work_mem), each
		 * window's ranked into the same top k
		 */
		uint32		win = gq_tree_bounded_window(r->gq, (int) s, r->tree);
		bool		ranked = false;

		for (uint64 lo = 0; lo < seg->hdr->ndocs; lo += win)
		{
			tree_filter(r, (int) s, (uint32) lo, (uint32) Min(lo + win, seg->hdr->ndocs), &filter, &nfilter);
			if (nfilter == 0)
				continue;
			if (!ranked)
				open_terms(r, seg, refs, found, st, opened, lists);
			ranked = true;
			q.lists = lists;
			q.filter = filter;
			q.nfilter = nfilter;
			gpx_rank_run(&q, h, scratch, &r->stats);
			pfree(filter);
			filter = NULL;
		}
		if (!ranked)
			goto done;
	}
	else
	{
		if (r->filter.n > 0 && !r->conjunctive && !filter_docs(seg, &r->filter, &filter, &nfilter))
			goto done;
		open_terms(r, seg, refs, found, st, opened, lists);
		q.lists = lists;
		q.filter = filter;
		q.nfilter = nfilter;
		gpx_rank_run(&q, h, scratch, &r->stats);
	}
	r->cpu_segments++;
	if (eligible)
		gpx_worker_note_local_rank(r->conjunctive, postings, ns_since(start));
done:
	for (int i = 0; i < n; i++)
	{
		if (opened[i])
			close_term(&st[i]);
		else if (found[i] && refs[i].payload)
			pfree(refs[i].payload);
	}
	if (filter)
		pfree(filter);
	pfree(st);
	pfree(lists);
	pfree(opened);
	pfree(refs);
	pfree(found);
}

uint32
gq_rank_topk(GqRank *r, uint32 k, ItemPointerData *tids, double *scores)
{
	gpx_topk	h;
	uint64	   *keys = palloc_extended((Size) Max(k, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	void	   *scratch = palloc(gpx_rank_scratch_size(Max(r->terms.n, 1)));

	gpx_topk_init(&h, k, scores, keys);
	r->rounds++;
	if (r->terms.n > 0)
	{
		for (uint32 s = 0; s < r->gq->meta.nsegments; s++)
		{
			CHECK_FOR_INTERRUPTS();
			rank_segment(r, s, &h, scratch);
		}
		for (int e = 0; e < r->npend; e++)
			if (r->pend_scores[e] > 0.0)
				gpx_topk_offer(&h, r->pend_scores[e], tid_key(&r->pend_tids[e]));
	}
	gpx_topk_sort(&h);
	for (uint32 i = 0; i < h.n; i++)
		ItemPointerSet(&tids[i], (BlockNumber) (keys[i] >> 16), (OffsetNumber) (keys[i] & 0xFFFF));
	pfree(keys);
	pfree(scratch);
	return h.n;
}

void
gq_rank_end(GqRank *r)
{
	pfree(r->df);
	pfree(r->idf);
	pfree(r->pend_scores);
	if (r->pend_tids)
		pfree(r->pend_tids);
	pfree(r);
}

void
gq_segment_tids(GqIndex *gq, int s, gq_tids_fn fn, void *arg)
{
	ItemPointerData tids[GPX_DOCMAP_CHUNK];
	GpxSegment *seg = gq_segment(gq, s);

	for (uint32 c = 0; c < seg->hdr->docmap_chunks; c++)
	{
		uint32		n = gpx_seg_chunk(seg, c, tids);
		int			k = 0;

		CHECK_FOR_INTERRUPTS();
		for (uint32 j = 0; j < n; j++)
			if (!gpx_seg_is_dead(seg, c * GPX_DOCMAP_CHUNK + j))
				tids[k++] = tids[j];
		fn(arg, tids, k);
	}
}

void
gq_pending_tids(GqIndex *gq, gq_tids_fn fn, void *arg)
{
	GpxPendingReader pr;

	gpx_pending_begin(&pr, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&pr))
		fn(arg, &pr.tid, 1);
	gpx_pending_end(&pr);
}

/* ---------------------------------------------------------------------------
 * Every term's document frequency (gpuidx_term_stats): the statistics a
 * coordinator sums over the shards of a table
 */
typedef struct TermDf
{
	const char *term;
	int			len;
	uint64		df;
} TermDf;

typedef struct TermDfs
{
	TermDf	   *all;
	Size		n;
	Size		cap;
} TermDfs;

static void
term_df_add(TermDfs *t, const char *term, int len, uint64 df)
{
	char	   *copy;

	if (t->n == t->cap)
	{
		t->cap = Max(t->cap * 2, 1024);
		t->all = t->all ? repalloc_huge(t->all, t->cap * sizeof(TermDf))
			: palloc_extended(t->cap * sizeof(TermDf), MCXT_ALLOC_HUGE);
	}
	copy = palloc(Max(len, 1));
	memcpy(copy, term, len);
	t->all[t->n].term = copy;
	t->all[t->n].len = len;
	t->all[t->n].df = df;
	t->n++;
}

static int
term_df_cmp(const void *a, const void *b)
{
	const TermDf *x = a;
	const TermDf *y = b;

	return gpx_lexeme_cmp(x->term, x->len, y->term, y->len);
}

void
gq_term_dfs(GqIndex *gq, gq_term_df_fn fn, void *arg)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx term dfs",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	TermDfs		t = {0};
	GpxPendingReader pr;
	Size		i;

	/* the segments open as long as gq (gq_close frees them), the terms only here */
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
		(void) gq_segment(gq, s);
	old = MemoryContextSwitchTo(cxt);

	/*
	 * each segment's terms, less the postings of docs VACUUM marked dead, as
	 * gq_rank_begin counts: the dead docs as a bitmap (a bit a doc of the
	 * segment), each list's docs tested in it, so every posting costs one
	 * test rather than every list a search of every dead doc
	 */
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		GpxSegment *seg = gq_segment(gq, s);
		uint32	   *dead = dead_docs(seg);
		uint8	   *dead_bits = NULL;
		GpxDictIter it;

		if (dead)
		{
			dead_bits = palloc_extended((Size) seg->hdr->ndocs / 8 + 1, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
			for (uint32 i = 0; i < seg->ref.ndead; i++)
				dead_bits[dead[i] / 8] |= 1 << (dead[i] % 8);
			pfree(dead);
		}
		gpx_dict_iter_init(&it, seg);
		while (gpx_dict_iter_next(&it))
		{
			uint64		df = it.df;

			CHECK_FOR_INTERRUPTS();
			if (dead_bits)
			{
				GpxList		list;
				uint32		buf[GPUIDX_LRC_SEGMENT];

				gpx_dict_iter_list(&it, &list);
				for (uint32 b = 0; b < list.view.nblocks; b++)
				{
					int			n = pl_decode_block(&list.view, b, buf);

					if (n < 0)
						gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list does not decode");
					for (int j = 0; j < n; j++)
						if (buf[j] >= seg->hdr->ndocs)
							gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list holds a doc past the segment's end");
						else
							df -= (dead_bits[buf[j] / 8] >> (buf[j] % 8)) & 1;
				}
				gpx_list_free(&list);
			}
			if (df > 0)
				term_df_add(&t, it.term, it.term_len, df);
		}
		gpx_dict_iter_end(&it);
		if (dead_bits)
			pfree(dead_bits);
	}
	/* and the pending entries' lexemes, one document each */
	gpx_pending_begin(&pr, gq->index, &gq->meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&pr))
	{
		const uint8 *p = pr.lex;
		const char *lex;
		int			len;
		uint32		tf;

		CHECK_FOR_INTERRUPTS();
		while (gpx_pending_lexeme(&p, pr.end, pr.freqs, &lex, &len, &tf))
			term_df_add(&t, lex, len, 1);
	}
	gpx_pending_end(&pr);

	if (t.n > 0)
		qsort(t.all, t.n, sizeof(TermDf), term_df_cmp);
	for (i = 0; i < t.n;)
	{
		Size		j = i + 1;
		uint64		df = t.all[i].df;

		while (j < t.n && term_df_cmp(&t.all[i], &t.all[j]) == 0)
			df += t.all[j++].df;
		MemoryContextSwitchTo(old);
		fn(arg, t.all[i].term, t.all[i].len, df);
		MemoryContextSwitchTo(cxt);
		i = j;
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}
