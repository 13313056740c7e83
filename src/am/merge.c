/*
 * merge.c
 *	  Changes to the set of segments: the pending area merged into a new
 *	  segment, and segments merged tiered (many small ones into one larger
 *	  one; segments with many dead docs rewritten without them).
 *
 * Merges run one at a time under a heavyweight lock on the metapage's
 * block (as GIN's pending-list cleanup does); inserts keep appending to the
 * pending area meanwhile, scans keep reading the old segments.  A merge
 * writes the new segment to pages nothing references, then changes the
 * metapage once (one generic WAL record): the new segment in, the merged
 * ones out and listed as retired, to be recycled once no scan can still be
 * reading them (recycle.c).  The retired lists have no limit, so merges
 * never stop behind an old snapshot (only the pages wait for it).
 *
 * Doc ids of a merged segment are those of its inputs concatenated, dead
 * docs left out, so each input's postings stay in order: a merge never
 * sorts postings.  The doc map is then monotone piece by piece.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"

#include "am/gpuidx_am.h"
#include "store/accum.h"
#include "store/pending.h"
#include "store/segment.h"

/* segments of about the same size merged together, and how many */
#define MERGE_FACTOR	8
#define TIER_BASE		4096	/* docs of the smallest tier */
/* a segment with this share of dead docs is rewritten by VACUUM */
#define DEAD_REWRITE	0.2

/*
 * VACUUM merges all segments into one when the others take more than
 * 1/TOP_SHARE of the pages of the largest.  Each segment has a dictionary of
 * its own, and small ones cost up to three times their share of one
 * segment's pages (every term of theirs an entry, fewer runs of doc ids),
 * so the index stays near its rebuilt size only if most rows are in one
 * segment.  What such a merge writes is at most TOP_SHARE + 1 times the
 * pages of the segments written since the last one (only those are not the
 * largest), so it adds a constant to the O(log n) writes of a row by tiers,
 * and a small pending area never rewrites the largest segment.
 */
#define TOP_SHARE		4
/* nor while the others take fewer pages than this, a tiny index's overhead */
#define TOP_MIN_PAGES	32

void
gpx_merge_lock(Relation index)
{
	LockPage(index, GPX_META_BLKNO, ExclusiveLock);
}

bool
gpx_merge_trylock(Relation index)
{
	return ConditionalLockPage(index, GPX_META_BLKNO, ExclusiveLock);
}

void
gpx_merge_unlock(Relation index)
{
	UnlockPage(index, GPX_META_BLKNO, ExclusiveLock);
}

uint32
gpx_reserve_segment_id(Relation index)
{
	GpxMetaPageData meta;
	Buffer		metabuf = gpx_meta_lock(index, &meta);
	GenericXLogState *state;
	uint32		id;

	if (meta.next_segment_id == PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("index \"%s\" has used up its segment ids", RelationGetRelationName(index)),
				 errhint("Rebuild the index with REINDEX.")));
	id = meta.next_segment_id++;
	state = GenericXLogStart(index);
	gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), &meta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
	return id;
}

/* ---------------------------------------------------------------------------
 * The pending area into a segment
 */
typedef struct PendingFeed
{
	GpxAccum   *accum;
	uint32		doc;
} PendingFeed;

uint64
gpx_merge_pending(Relation index, Size budget)
{
	GpxMetaPageData meta;
	Buffer		metabuf;
	BlockNumber stop_blk;
	uint32		stop_off;
	uint32		stop_seq;
	GpxPendingReader r;
	GpxSegWriter *w;
	GpxAccum   *accum;
	GpxSegRef	ref;
	uint64		entries = 0;
	uint64		bytes = 0;
	uint64		sum_dl = 0;
	bool		freqs;
	bool		positions;
	uint32		pages;
	MemoryContext cxt;
	MemoryContext old;
	GenericXLogState *state;

	/* where the merge stops: the tail as it is now (inserts hold the metapage) */
	metabuf = gpx_meta_share(index, &meta);
	if (meta.pend_entries == 0 || meta.pend_tail == InvalidBlockNumber)
	{
		UnlockReleaseBuffer(metabuf);
		return 0;
	}
	{
		GpxPageTag	tag = {GPX_PAGE_PENDING, GPX_ANY_STREAM, GPX_ANY_OWNER, GPX_ANY_OWNER};
		Buffer		tail = gpx_read_page(index, meta.pend_tail, BUFFER_LOCK_SHARE, &tag);

		stop_blk = meta.pend_tail;
		stop_off = gpx_page_used(BufferGetPage(tail));
		stop_seq = GpxPageGetOpaque(BufferGetPage(tail))->owner;
		UnlockReleaseBuffer(tail);
	}
	UnlockReleaseBuffer(metabuf);

	/* room in the metapage for the new segment: tiers merge down to below it */
	if (meta.nsegments >= GPX_MAX_SEGMENTS)
		gpx_merge_tiers(index, budget, false, false);
	gpx_meta_read(index, &meta);
	if (meta.nsegments >= GPX_MAX_SEGMENTS)
		elog(ERROR, "gpuidx index \"%s\": %u segments after merging tiers",
			 RelationGetRelationName(index), meta.nsegments);

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx merge", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	freqs = (meta.flags & GPX_META_FREQS) != 0;
	positions = (meta.flags & GPX_META_POSITIONS) != 0;
	w = gpx_segw_begin(index, gpx_reserve_segment_id(index), true, gpx_index_codec(index), freqs, positions);
	accum = gpx_accum_create(budget, freqs, positions);
	gpx_pending_begin(&r, index, &meta, stop_blk, stop_off);
	while (gpx_pending_next(&r))
	{
		const uint8 *p = r.lex;
		const uint8 *pos = r.positions_at;
		const char *lex;
		int			len;
		uint32		tf;
		uint32		doc = (uint32) entries;

		gpx_segw_add_doc(w, &r.tid, r.dl);
		while (gpx_pending_lexeme(&p, r.end, freqs, &lex, &len, &tf))
		{
			const uint8 *rec = pos;
			uint32		npos;

			/* the entry's records were checked as it was read */
			if (positions && !gpx_pos_decode(&pos, r.entry_end, NULL, &npos))
				gpx_report_corrupt(index, r.blk, "A pending entry's positions are malformed");
			gpx_accum_add(accum, lex, len, doc, tf, rec, positions ? (uint32) (pos - rec) : 0);
		}
		gpx_accum_end_doc(accum);
		entries++;
		bytes += r.entry_bytes;
		sum_dl += r.dl;
	}
	if (r.blk != stop_blk)
		gpx_report_corrupt(index, r.blk, "The pending area ends before the page it was to stop at");
	pages = r.pages_read - 1;
	gpx_pending_end(&r);
	gpx_accum_emit(accum, w);
	gpx_accum_free(accum);
	gpx_segw_finish(w, &ref);

	/* one record: the segment in, the merged pages out (up to two sets) */
	gpx_retired_make_room(index, 2);
	metabuf = gpx_meta_lock(index, &meta);
	if (entries > 0)
		meta.segments[meta.nsegments++] = ref;
	else
		gpx_meta_retire(&meta, GPX_RETIRED_SEGMENT, ref.id, ref.head, InvalidBlockNumber);
	if (meta.pend_tail == stop_blk && meta.pend_entries == entries)
	{
		/*
		 * Nothing came after: the tail page goes too, and the next insert
		 * starts the area on a page of the free space map, so no pending
		 * page stays where it was, perhaps at the end of the file.  An
		 * insert writing pages of its own links them as the new area.
		 */
		gpx_meta_retire(&meta, GPX_RETIRED_PENDING, meta.pend_head_seq, meta.pend_head, InvalidBlockNumber);
		meta.pend_head = InvalidBlockNumber;
		meta.pend_tail = InvalidBlockNumber;
		meta.pend_head_off = 0;
		meta.pend_head_seq = 0;
		pages++;
	}
	else
	{
		if (meta.pend_head != stop_blk)
			gpx_meta_retire(&meta, GPX_RETIRED_PENDING, meta.pend_head_seq, meta.pend_head, stop_blk);
		meta.pend_head = stop_blk;
		meta.pend_head_off = stop_off;
		meta.pend_head_seq = stop_seq;
	}
	meta.pend_entries -= entries;
	meta.pend_bytes -= bytes;
	if (sum_dl > meta.pend_dl)
		gpx_report_corrupt(index, GPX_META_BLKNO, "The pending area's doc lengths exceed the metapage's sum");
	meta.pend_dl -= sum_dl;
	meta.pend_pages -= pages;
	meta.merge_bytes += (uint64) ref.npages * BLCKSZ;
	meta.merge_docs += ref.ndocs;
	state = GenericXLogStart(index);
	gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), &meta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);

	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return entries;
}

/* ---------------------------------------------------------------------------
 * Segments into one
 */
/*
 * The dead docs of an input, read a bitmap page at a time into a few slots
 * (page p in slot p % nslots), each with the dead docs before every 64-doc
 * word; the dead docs before each page are kept for all pages (4 bytes a
 * page).  As many slots as the merge's budget allows: memory stays within
 * it whatever the segment's size.
 */
#define DEAD_WORDS	(GPX_DEAD_BITS_PER_PAGE / 64)

typedef struct DeadPage
{
	uint32		pageno;			/* or PG_UINT32_MAX */
	uint32		rank[DEAD_WORDS];	/* dead docs before each word, on this page */
	uint64		words[DEAD_WORDS];
} DeadPage;

typedef struct MergeInput
{
	int			order;
	GpxSegment *seg;
	GpxDictIter it;
	uint32		base;			/* new doc id of its first live doc */
	uint32	   *page_rank;		/* dead docs before each bitmap page, or NULL */
	DeadPage   *slots;
	uint32		nslots;
	bool		live;			/* it has a current term */
} MergeInput;

/* the bitmap page of doc d, in its slot */
static const DeadPage *
dead_page(MergeInput *in, uint32 d)
{
	uint32		pageno = d / GPX_DEAD_BITS_PER_PAGE;
	DeadPage   *slot = &in->slots[pageno % in->nslots];

	if (slot->pageno != pageno)
	{
		Buffer		buf = gpx_seg_read(in->seg, GPX_STREAM_DEAD, pageno);
		Page		page = BufferGetPage(buf);
		uint32		used = gpx_page_used(page);
		uint32		dead = 0;

		if (used > sizeof(slot->words))
			gpx_seg_corrupt(in->seg, GPX_STREAM_DEAD, pageno, "bitmap page is too long");
		memset(slot->words, 0, sizeof(slot->words));
		memcpy(slot->words, PageGetContents(page), used);
		UnlockReleaseBuffer(buf);
		for (uint32 w = 0; w < DEAD_WORDS; w++)
		{
			slot->rank[w] = dead;
			dead += __builtin_popcountll(slot->words[w]);
		}
		slot->pageno = pageno;
	}
	return slot;
}

static void
load_dead(MergeInput *in, Size budget)
{
	uint32		ndocs = in->seg->hdr->ndocs;
	uint32		npages = (uint32) (((uint64) ndocs + GPX_DEAD_BITS_PER_PAGE - 1) / GPX_DEAD_BITS_PER_PAGE);
	uint32		dead = 0;

	if (in->seg->ref.ndead == 0)
		return;
	in->nslots = (uint32) Max(1, Min((Size) npages, budget / sizeof(DeadPage)));
	in->slots = palloc_extended((Size) in->nslots * sizeof(DeadPage), MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < in->nslots; i++)
		in->slots[i].pageno = PG_UINT32_MAX;
	in->page_rank = palloc_extended((Size) (npages + 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (uint32 p = 0; p < npages; p++)
	{
		const DeadPage *page = dead_page(in, p * GPX_DEAD_BITS_PER_PAGE);

		CHECK_FOR_INTERRUPTS();
		in->page_rank[p] = dead;
		dead += page->rank[DEAD_WORDS - 1] + __builtin_popcountll(page->words[DEAD_WORDS - 1]);
	}
	in->page_rank[npages] = dead;
	if (dead != in->seg->ref.ndead)
		gpx_seg_corrupt(in->seg, GPX_STREAM_DEAD, 0, "bitmap holds another number of dead docs than the metapage");
}

/* new doc id of doc d, or false if it is dead */
static inline bool
remap(MergeInput *in, uint32 d, uint32 *out)
{
	const DeadPage *page;
	uint32		bit = d % GPX_DEAD_BITS_PER_PAGE;
	uint64		word;

	if (in->page_rank == NULL)
	{
		*out = in->base + d;
		return true;
	}
	page = dead_page(in, d);
	word = page->words[bit / 64];
	if ((word >> (bit % 64)) & 1)
		return false;
	*out = in->base + d - in->page_rank[d / GPX_DEAD_BITS_PER_PAGE] - page->rank[bit / 64] -
		__builtin_popcountll(word & ((UINT64_C(1) << (bit % 64)) - 1));
	return true;
}

static int
input_cmp(Datum x, Datum y, void *arg)
{
	const MergeInput *a = (const MergeInput *) DatumGetPointer(x);
	const MergeInput *b = (const MergeInput *) DatumGetPointer(y);
	int			c = gpx_lexeme_cmp(a->it.term, a->it.term_len, b->it.term, b->it.term_len);

	return -(c != 0 ? c : a->order - b->order);
}

static void
merge_term_lists(MergeInput **same, int n, GpxSegWriter *w, bool freqs, bool positions, uint32 *ids,
				 StringInfo posbuf)
{
	uint32		buf[GPUIDX_LRC_SEGMENT];
	uint8		tfbuf[GPUIDX_LRC_SEGMENT];
	uint8		tfs[GPUIDX_LRC_SEGMENT];

	for (int i = 0; i < n; i++)
	{
		MergeInput *in = same[i];
		GpxListReader *r = gpx_list_reader_begin(&in->it);
		GpxFreqReader *fr = freqs ? gpx_freq_reader_begin(&in->it) : NULL;
		GpxPositions *pr = positions ? gpx_dict_iter_positions(&in->it) : NULL;
		uint32		len;

		while ((len = gpx_list_reader_next(r, buf)) > 0)
		{
			uint32		k = 0;

			if (fr)
				gpx_freq_reader_next(fr, tfbuf, len);
			resetStringInfo(posbuf);
			for (uint32 j = 0; j < len; j++)
			{
				uint16		wep[GPX_POS_MAX_COUNT];
				uint8		rec[GPX_POS_MAX_RECORD];
				uint32		npos = 0;

				if (pr)
					npos = gpx_positions_next(pr, wep);
				if (remap(in, buf[j], &ids[k]))
				{
					tfs[k] = fr ? tfbuf[j] : 0;
					if (pr)
						appendBinaryStringInfo(posbuf, (const char *) rec, (int) gpx_pos_encode(wep, npos, rec));
					k++;
				}
			}
			gpx_segw_term_add(w, ids, tfs, (const uint8 *) posbuf->data, posbuf->len, k);
		}
		gpx_list_reader_end(r);
		if (fr)
			gpx_freq_reader_end(fr);
		if (pr)
		{
			gpx_positions_check_end(pr);
			gpx_positions_free(pr);
		}
	}
}

static void
merge_segments(Relation index, GpxSegRef *refs, int n, Size budget, bool past_end)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx segment merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	MergeInput *in = palloc0(n * sizeof(MergeInput));
	MergeInput **same = palloc(n * sizeof(MergeInput *));
	uint32	   *ids = palloc(GPUIDX_LRC_SEGMENT * sizeof(uint32));
	ItemPointerData tids[GPX_DOCMAP_CHUNK];
	binaryheap *heap = binaryheap_allocate(n, input_cmp, NULL);
	GpxSegWriter *w;
	GpxSegRef	ref;
	uint64		base = 0;
	uint32		nfreqs = 0;
	uint32		npositions = 0;
	bool		freqs;
	bool		positions;
	StringInfoData posbuf;
	uint32		dls[GPX_DOCMAP_CHUNK];
	Buffer		metabuf;
	GenericXLogState *state;
	GpxMetaPageData *m = palloc(sizeof(GpxMetaPageData));

	for (int i = 0; i < n; i++)
	{
		in[i].order = i;
		in[i].seg = gpx_seg_open(index, &refs[i]);
		in[i].base = (uint32) base;
		/* half the budget for the dead-doc pages, shared by the inputs */
		load_dead(&in[i], budget / 2 / n);
		base += refs[i].ndocs - refs[i].ndead;
		nfreqs += (in[i].seg->hdr->flags & GPX_SEG_FREQS) ? 1 : 0;
		npositions += (in[i].seg->hdr->flags & GPX_SEG_POSITIONS) ? 1 : 0;
	}
	/* an index stores frequencies (positions) in all its segments or in none */
	if ((nfreqs != 0 && nfreqs != (uint32) n) || (npositions != 0 && npositions != (uint32) n))
		gpx_report_corrupt(index, refs[0].head, "Segments to merge differ in whether they store frequencies or positions");
	freqs = nfreqs > 0;
	positions = npositions > 0;
	initStringInfo(&posbuf);
	w = gpx_segw_begin(index, gpx_reserve_segment_id(index), true, gpx_index_codec(index), freqs, positions);
	if (past_end)
		gpx_segw_past_end(w);

	/* the doc map: each input's live docs, in order */
	for (int i = 0; i < n; i++)
	{
		GpxSegment *seg = in[i].seg;

		for (uint32 c = 0; c < seg->hdr->docmap_chunks; c++)
		{
			uint32		len = gpx_seg_chunk(seg, c, tids);

			CHECK_FOR_INTERRUPTS();
			if (freqs && gpx_seg_chunk_lengths(seg, c, dls) != len)
				gpx_seg_corrupt(seg, GPX_STREAM_LENS, PG_UINT32_MAX, "doc lengths do not match the doc map");
			for (uint32 j = 0; j < len; j++)
			{
				uint32		d = c * GPX_DOCMAP_CHUNK + j;

				uint32		unused;

				if (remap(&in[i], d, &unused))
					gpx_segw_add_doc(w, &tids[j], freqs ? dls[j] : 0);
			}
		}
	}

	/* the terms: a k-way merge of the dictionaries */
	for (int i = 0; i < n; i++)
	{
		gpx_dict_iter_init(&in[i].it, in[i].seg);
		if (gpx_dict_iter_next(&in[i].it))
			binaryheap_add_unordered(heap, PointerGetDatum(&in[i]));
	}
	binaryheap_build(heap);
	while (!binaryheap_empty(heap))
	{
		MergeInput *top = (MergeInput *) DatumGetPointer(binaryheap_remove_first(heap));
		int			nsame = 0;
		uint64		df = 0;

		CHECK_FOR_INTERRUPTS();
		same[nsame++] = top;
		while (!binaryheap_empty(heap))
		{
			MergeInput *next = (MergeInput *) DatumGetPointer(binaryheap_first(heap));

			if (gpx_lexeme_cmp(next->it.term, next->it.term_len, top->it.term, top->it.term_len) != 0)
				break;
			same[nsame++] = (MergeInput *) DatumGetPointer(binaryheap_remove_first(heap));
		}
		for (int i = 0; i < nsame; i++)
			df += same[i]->it.df;
		gpx_segw_term_begin(w, top->it.term, top->it.term_len, df);
		merge_term_lists(same, nsame, w, freqs, positions, ids, &posbuf);
		gpx_segw_term_end(w);
		for (int i = 0; i < nsame; i++)
			if (gpx_dict_iter_next(&same[i]->it))
				binaryheap_add(heap, PointerGetDatum(same[i]));
	}
	gpx_segw_finish(w, &ref);

	/* one record: the new segment in, the inputs out and retired */
	gpx_retired_make_room(index, n + 1);
	metabuf = gpx_meta_lock(index, m);
	for (int i = 0; i < n; i++)
		if (gpx_meta_find_segment(m, refs[i].id) < 0)
			elog(ERROR, "gpuidx: segment %u vanished during a merge", refs[i].id);
	for (int i = 0; i < n; i++)
	{
		gpx_meta_remove_segment(m, refs[i].id);
		gpx_meta_retire(m, GPX_RETIRED_SEGMENT, refs[i].id, refs[i].head, InvalidBlockNumber);
	}
	if (ref.ndocs > 0)
		m->segments[m->nsegments++] = ref;
	else
		gpx_meta_retire(m, GPX_RETIRED_SEGMENT, ref.id, ref.head, InvalidBlockNumber);
	m->merge_bytes += (uint64) ref.npages * BLCKSZ;
	m->merge_docs += ref.ndocs;
	state = GenericXLogStart(index);
	gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), m);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);

	for (int i = 0; i < n; i++)
	{
		gpx_dict_iter_end(&in[i].it);
		gpx_seg_close(in[i].seg);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* tier of a segment: 0 below TIER_BASE live docs, then one per MERGE_FACTOR */
static int
tier_of(const GpxSegRef *s)
{
	double		live = (double) s->ndocs - s->ndead;
	int			tier = 0;

	while (live >= TIER_BASE)
	{
		live /= MERGE_FACTOR;
		tier++;
	}
	return tier;
}

static int
ref_size_cmp(const void *x, const void *y)
{
	const GpxSegRef *a = x;
	const GpxSegRef *b = y;
	uint32		la = a->ndocs - a->ndead;
	uint32		lb = b->ndocs - b->ndead;

	return (la > lb) - (la < lb);
}

static int
ref_id_cmp(const void *x, const void *y)
{
	const GpxSegRef *a = x;
	const GpxSegRef *b = y;

	return (a->id > b->id) - (a->id < b->id);
}

/*
 * The next group of segments to merge, by the tiered policy; 0 if none.
 * *all: the group is every segment (TOP_SHARE).
 */
static int
pick_group(const GpxMetaPageData *meta, bool vacuum, GpxSegRef *group, bool *all)
{
	int			counts[64] = {0};
	int			n = 0;

	*all = false;

	for (uint32 i = 0; i < meta->nsegments; i++)
		counts[Min(tier_of(&meta->segments[i]), 63)]++;
	for (int t = 0; t < 64 && n == 0; t++)
	{
		if (counts[t] < MERGE_FACTOR)
			continue;
		for (uint32 i = 0; i < meta->nsegments; i++)
			if (tier_of(&meta->segments[i]) == t)
				group[n++] = meta->segments[i];
	}
	if (n == 0 && vacuum)
	{
		for (uint32 i = 0; i < meta->nsegments; i++)
		{
			const GpxSegRef *s = &meta->segments[i];

			if (s->ndead > 0 && s->ndead >= DEAD_REWRITE * s->ndocs)
			{
				group[n++] = *s;
				break;
			}
		}
	}
	if (n == 0 && vacuum && meta->nsegments > 1)
	{
		/* the others past 1/TOP_SHARE of the largest: all into one */
		uint64		largest = 0;
		uint64		pages = 0;

		for (uint32 i = 0; i < meta->nsegments; i++)
		{
			largest = Max(largest, meta->segments[i].npages);
			pages += meta->segments[i].npages;
		}
		if ((pages - largest) * TOP_SHARE > largest && pages - largest >= TOP_MIN_PAGES)
		{
			memcpy(group, meta->segments, meta->nsegments * sizeof(GpxSegRef));
			n = (int) meta->nsegments;
			*all = true;
		}
	}
	if (n == 0 && meta->nsegments >= GPX_MAX_SEGMENTS - 1)
	{
		/* out of room: the smallest ones together */
		memcpy(group, meta->segments, meta->nsegments * sizeof(GpxSegRef));
		qsort(group, meta->nsegments, sizeof(GpxSegRef), ref_size_cmp);
		n = MERGE_FACTOR;
	}
	/* oldest first keeps the doc map close to insertion order */
	qsort(group, n, sizeof(GpxSegRef), ref_id_cmp);
	return n;
}

int
gpx_merge_tiers(Relation index, Size budget, bool vacuum, bool compact)
{
	int			merges = 0;

	for (;;)
	{
		GpxMetaPageData meta;
		GpxSegRef	group[GPX_MAX_SEGMENTS];
		bool		all;
		int			n;

		CHECK_FOR_INTERRUPTS();
		gpx_meta_read(index, &meta);
		n = pick_group(&meta, vacuum, group, &all);
		if (n == 0)
			break;
		/* a merge of them all goes past the end, to be moved to the front (below) */
		merge_segments(index, group, n, budget, all && compact);
		merges++;
	}
	return merges;
}

/* ---------------------------------------------------------------------------
 * Segments moved off the end of the file
 */

/*
 * A merge writes its segment into free pages wherever they are and past the
 * end of the file once they run out, so a large merge leaves its segment at
 * the end and the space of its inputs free before it: the file keeps the
 * size it grew to.  VACUUM rewrites the segments that end the file into the
 * lowest free pages (the free space map hands those out first, VACUUM
 * having reset it), so that the end comes free and is cut off
 * (gpx_truncate_free_end).  Only when the free pages are more than a fifth
 * of the file, and a segment only if its copy would end at least a
 * sixteenth of the file before it does.  Returns the segments moved.
 */
#define RELOCATE_FREE_SHARE	5
#define RELOCATE_GAIN		16

int
gpx_merge_relocate(Relation index, Size budget, BufferAccessStrategy strategy)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
	uint32	   *owner = palloc_extended((Size) nblocks * sizeof(uint32), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	BlockNumber *free_blocks = palloc_extended((Size) nblocks * sizeof(BlockNumber), MCXT_ALLOC_HUGE);
	GpxSegRef  *move = palloc(GPX_MAX_SEGMENTS * sizeof(GpxSegRef));
	int			nmove = 0;
	BlockNumber nfree = 0;
	BlockNumber taken = 0;

	gpx_meta_read(index, meta);
	for (BlockNumber b = GPX_META_BLKNO + 1; b < nblocks; b++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, b, RBM_NORMAL, strategy);
		Page		page;
		GpxPageOpaque opaque;

		gpx_vacuum_delay_point();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = GpxPageGetOpaque(page);
		if (PageIsNew(page) || gpx_page_is_free(page))
			free_blocks[nfree++] = b;
		else if (gpx_page_problem(page) == NULL &&
				 (opaque->type == GPX_PAGE_SEGHEAD || opaque->type == GPX_PAGE_TABLE ||
				  opaque->type == GPX_PAGE_DATA))
			owner[b] = opaque->owner;
		UnlockReleaseBuffer(buf);
	}

	/* the segments ending the file, the last page's first, while their copies end well before */
	if ((uint64) nfree * RELOCATE_FREE_SHARE > nblocks)
	{
		for (BlockNumber b = nblocks; b-- > GPX_META_BLKNO + 1;)
		{
			int			k;
			bool		seen = false;

			if (owner[b] == 0)
			{
				if (bsearch(&b, free_blocks, nfree, sizeof(BlockNumber), gpx_block_cmp) != NULL)
					continue;
				break;			/* a page no merge moves: the pending area, the retired lists */
			}
			for (int i = 0; i < nmove && !seen; i++)
				seen = move[i].id == owner[b];
			if (seen)
				continue;
			k = gpx_meta_find_segment(meta, owner[b]);
			if (k < 0 || taken + meta->segments[k].npages > nfree ||
				free_blocks[taken + meta->segments[k].npages - 1] + nblocks / RELOCATE_GAIN >= b)
				break;
			taken += meta->segments[k].npages;
			move[nmove++] = meta->segments[k];
		}
	}
	for (int i = 0; i < nmove; i++)
		merge_segments(index, &move[i], 1, budget, false);
	pfree(meta);
	pfree(owner);
	pfree(free_blocks);
	pfree(move);
	return nmove;
}

uint64
gpx_merge_step(Relation index, Size budget)
{
	uint64		merged;

	/* what no snapshot reads any more is freed first: this merge writes into it */
	gpx_recycle(index, false);
	merged = gpx_merge_pending(index, budget);
	gpx_merge_tiers(index, budget, false, false);
	return merged;
}
