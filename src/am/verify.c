/*
 * verify.c
 *	  gpuidx_verify(index): every page of the index is checked (CRC, header,
 *	  type), then every structure (metapage, each segment's page table,
 *	  dictionary, lists, doc map and dead-doc bitmap, the pending area), and
 *	  last the index against its table: every row the table holds (live or
 *	  not yet vacuumed) is indexed once, under its TID, with exactly its
 *	  lexemes.  The first problem is an ERROR with ERRCODE_INDEX_CORRUPTED;
 *	  a sound index gives a one-line summary.
 *
 * Terms are compared per row as a count and a sum of 64-bit term hashes,
 * computed from the index's lists and from the table's values.  A row takes
 * 36 bytes; past maintenance_work_mem the table is matched a range of its
 * blocks at a time, each pass reading the index's lists again for the rows
 * whose TIDs lie there (pages are claimed in the first).  The table
 * and the index are share-locked meanwhile, so no write or merge runs.  A
 * hot standby cannot take share locks, and replays the primary's writes
 * meanwhile: there the check holds access-share locks, holds the index's
 * counters to what writes may have made of them since the metapage was
 * read (dead docs marked, entries appended), and checks the rows its
 * snapshot sees.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am/gpuidx_am.h"
#include "rank/bm25.h"
#include "store/pending.h"
#include "store/segment.h"

GPUIDX_FUNCTION(gpuidx_verify);

#define TERM_SEED 0x67707569	/* "gpui" */

/* one indexed row: its TID and its terms as a count and a hash sum */
typedef struct RowSig
{
	uint64		tid;			/* block << 16 | offset */
	uint64		hash;			/* with freqs, each term's hash times its tf */
	uint32		nterms;
	uint32		matched;
	uint32		dl;				/* with freqs: its length as stored */
} RowSig;

typedef struct VerifyState
{
	Relation	index;
	Relation	heap;
	GpxMetaPageData meta;
	uint8	   *claimed;		/* a bit per block: used by a structure */
	BlockNumber nblocks;
	RowSig	   *rows;			/* this pass's docs of every segment, then
								 * pending entries */
	uint64		capacity;		/* rows allocated */
	uint32	   *pass_docs;		/* a segment's docs in this pass, ascending */
	uint64		lo;				/* this pass's TIDs: tid_key in [lo, hi) */
	uint64		hi;
	bool		first_pass;		/* pages are claimed, inner nodes checked */
	uint8	  **min_seen;		/* in several passes, per segment a bit per
								 * frequency block: its shortest doc's length
								 * code met (one pass: checked at once) */
	uint64	   *freq_blocks;	/* with min_seen: each segment's blocks */
	bool		freqs;			/* the index stores tfs and doc lengths */
	uint64		nrows;
	uint64		pages_checked;
	uint64		heap_rows;
	uint32		kind;
	Oid			config;
	MemoryContext rowcxt;		/* one row's lexemes, emptied after each */
} VerifyState;

static uint64
tid_key(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

static uint64
term_hash(const char *lex, int len)
{
	return hash_bytes_extended((const unsigned char *) lex, len, TERM_SEED);
}

static void
claim(VerifyState *vs, BlockNumber blk, const char *what)
{
	if (blk == GPX_META_BLKNO || blk >= vs->nblocks)
		gpx_report_corrupt(vs->index, blk, "%s points outside the index", what);
	if (vs->claimed[blk / 8] & (1 << (blk % 8)))
		gpx_report_corrupt(vs->index, blk, "%s uses a block another structure uses", what);
	vs->claimed[blk / 8] |= 1 << (blk % 8);
}

/* every page: sound, or new (never written) */
static void
check_all_pages(VerifyState *vs)
{
	for (BlockNumber b = 0; b < vs->nblocks; b++)
	{
		Buffer		buf = ReadBuffer(vs->index, b);
		Page		page;
		const char *problem;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		problem = PageIsNew(page) && b != GPX_META_BLKNO ? NULL : gpx_page_problem(page);
		UnlockReleaseBuffer(buf);
		if (problem)
			gpx_report_corrupt(vs->index, b, "%s", problem);
		vs->pages_checked++;
	}
}

/*
 * The dead docs' lengths against the metapage: as it summed them when it
 * counted as many (the copy verified, or on a standby where VACUUM goes on,
 * the metapage as it is after the bitmap was read), else between the two.
 */
static bool
dead_dl_sound(const GpxSegRef *ref, const GpxSegRef *now, uint32 ndead, uint64 dead_dl)
{
	if (ndead == ref->ndead)
		return dead_dl == ref->dead_dl;
	if (dead_dl < ref->dead_dl)
		return false;
	if (now->id == 0)
		return true;			/* merged away meanwhile */
	return ndead == now->ndead ? dead_dl == now->dead_dl : dead_dl <= now->dead_dl;
}

static bool
in_pass(const VerifyState *vs, uint64 tid)
{
	return tid >= vs->lo && tid < vs->hi;
}

/*
 * The row of doc in this pass, or NULL: pass_docs holds the pass's n docs
 * in order, a range of doc ids where the segment's docs follow its TIDs.
 */
static RowSig *
pass_row(VerifyState *vs, RowSig *rows, uint32 n, bool contiguous, uint32 doc)
{
	uint32		lo = 0,
				hi = n;

	if (n == 0 || doc < vs->pass_docs[0] || doc > vs->pass_docs[n - 1])
		return NULL;
	if (contiguous)
		return &rows[doc - vs->pass_docs[0]];
	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (vs->pass_docs[mid] < doc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && vs->pass_docs[lo] == doc ? &rows[lo] : NULL;
}

/*
 * One segment: in the first pass its pages claimed and its inner nodes
 * checked; in every pass its doc map, lengths, dead docs, dictionary order
 * and lists checked as they are read, and the rows of the docs whose TIDs
 * the pass holds filled from them.  Returns how many rows it filled.
 */
static uint64
check_segment(VerifyState *vs, uint32 segno, const GpxSegRef *ref, RowSig *rows)
{
	GpxSegment *seg = gpx_seg_open(vs->index, ref);
	GpxSegHeaderData *h = seg->hdr;
	GpxDictIter it;
	uint64		postings = 0;
	uint64		nterms = 0;
	uint32		ndead;
	uint32	   *dead;
	uint32		next_dead = 0;
	GpxSegRef	now;
	uint64		seg_dl = 0;
	uint64		dead_dl = 0;
	uint64		prev_tid = 0;
	uint32		n = 0;
	bool		contiguous;
	uint64		freq_block = 0;
	ItemPointerData tids[GPX_DOCMAP_CHUNK];
	char	  **first_keys = NULL;
	int		   *first_lens = NULL;
	uint32		nleaves = h->streams[GPX_STREAM_LEAF].npages;

	/* the header, the table pages and every page of every stream */
	if (vs->first_pass)
	{
		claim(vs, ref->head, "a segment header");
		for (uint32 t = 0; t < h->ntables; t++)
			claim(vs, h->table[t], "a page table");
		for (int s = 0; s < GPX_NSTREAMS; s++)
		{
			for (uint32 p = 0; p < h->streams[s].npages; p++)
			{
				Buffer		buf = gpx_seg_read(seg, s, p);

				claim(vs, BufferGetBlockNumber(buf), "a segment page");
				UnlockReleaseBuffer(buf);
			}
		}
		if (ref->npages != h->npages + h->ntables + 1)
			gpx_seg_corrupt(seg, -1, 0, "page count differs from the metapage's");
	}

	/* the dead-doc bitmap: bits past the end, their number */
	dead = gpx_seg_dead_docs(seg, &ndead, &now);

	/* the doc map, with the dead docs' lengths; this pass's rows */
	for (uint32 c = 0; c < h->docmap_chunks; c++)
	{
		uint32		nc = gpx_seg_chunk(seg, c, tids);
		uint32		dls[GPX_DOCMAP_CHUNK];

		CHECK_FOR_INTERRUPTS();
		if (vs->freqs && gpx_seg_chunk_lengths(seg, c, dls) != nc)
			gpx_seg_corrupt(seg, GPX_STREAM_LENS, PG_UINT32_MAX, "doc lengths do not match the doc map");
		for (uint32 j = 0; j < nc; j++)
		{
			uint32		doc = c * GPX_DOCMAP_CHUNK + j;
			uint64		tid = tid_key(&tids[j]);
			uint32		dl = vs->freqs ? dls[j] : 0;
			bool		is_dead;

			while (next_dead < ndead && dead[next_dead] < doc)
				next_dead++;
			is_dead = next_dead < ndead && dead[next_dead] == doc;

			if ((h->flags & GPX_SEG_TID_ORDER) && doc > 0 && tid <= prev_tid)
				gpx_seg_corrupt(seg, GPX_STREAM_DOCMAP, PG_UINT32_MAX, "doc map is out of TID order though its header says otherwise");
			prev_tid = tid;
			seg_dl += dl;
			if (is_dead)
			{
				dead_dl += dl;
				next_dead++;
			}
			if (doc >= h->ndocs)
				gpx_seg_corrupt(seg, GPX_STREAM_DOCMAP, PG_UINT32_MAX, "doc map holds more docs than the header says");
			if (in_pass(vs, tid))
			{
				RowSig	   *r = &rows[n];

				if ((uint64) (rows - vs->rows) + n >= vs->capacity)
					gpx_seg_corrupt(seg, GPX_STREAM_DOCMAP, PG_UINT32_MAX, "doc map changed while it was checked");

				r->tid = tid;
				r->hash = 0;
				r->nterms = 0;
				r->matched = is_dead ? 2 : 0;	/* dead: not expected in the table */
				r->dl = dl;
				vs->pass_docs[n++] = doc;
			}
		}
	}
	if (seg_dl != ref->sum_dl)
		gpx_seg_corrupt(seg, GPX_STREAM_LENS, 0, "doc lengths sum to another total than the metapage's");
	if (((h->flags & GPX_SEG_FREQS) != 0) != vs->freqs)
		gpx_seg_corrupt(seg, -1, 0, "stores frequencies where the index does not, or the reverse");
	if (!dead_dl_sound(ref, &now, ndead, dead_dl))
		gpx_seg_corrupt(seg, GPX_STREAM_DEAD, 0, "dead docs' lengths sum to another total than the metapage's");
	if (dead)
		pfree(dead);
	contiguous = n > 0 && vs->pass_docs[n - 1] - vs->pass_docs[0] == n - 1;

	/* the dictionary: terms in order, every list whole and sound */
	if (vs->first_pass)
	{
		first_keys = palloc(Max(nleaves, 1) * sizeof(char *));
		first_lens = palloc(Max(nleaves, 1) * sizeof(int));
	}
	gpx_dict_iter_init(&it, seg);
	while (gpx_dict_iter_next(&it))
	{
		GpxList		list;
		uint32		buf[GPUIDX_LRC_SEGMENT + GPX_RANK_BLOCK];
		uint64		hash = term_hash(it.term, it.term_len);
		pl_status	st;

		CHECK_FOR_INTERRUPTS();
		/* within the header's counts, which size the bits of min_seen */
		if (++nterms > h->nterms || postings + it.df > h->npostings)
			gpx_seg_corrupt(seg, -1, 0, "lists hold another number of postings than the header says");
		if (vs->first_pass && it.left + 1 == ((GpxLeafHeader *) it.page)->nentries)
		{
			first_keys[it.leaf_no] = pnstrdup(it.term, it.term_len);
			first_lens[it.leaf_no] = it.term_len;
		}
		gpx_dict_iter_list(&it, &list);
		st = pl_validate(&list.view);
		if (st != PL_OK)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, pl_status_message(st));
		if (list.df > 0 && pl_get(&list.view, list.df - 1) >= h->ndocs)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list holds a doc past the segment's end");
		if (vs->freqs)
		{
			/*
			 * every tf, and each block's maxima against its docs; the docs
			 * decoded a list block at a time into buf, taken 128 at a time
			 */
			GpxFreqs	f;
			uint32		held = 0;
			uint32		next_block = 0;
			/* with positions: every posting's, parsed, as many as its tf says */
			GpxPositions *pos = (h->flags & GPX_SEG_POSITIONS) ? gpx_dict_iter_positions(&it) : NULL;

			gpx_dict_iter_freqs(&it, &f);
			for (uint32 b = 0; b < gpx_freq_nblocks(list.df); b++, freq_block++)
			{
				uint8		tfs[GPX_RANK_BLOCK];
				uint32		from = b * GPX_RANK_BLOCK;
				uint32		nb = Min(GPX_RANK_BLOCK, list.df - from);
				uint32		max_tf = 0;
				uint32		min_code = 255;

				while (held < nb)
				{
					int			got = next_block < list.view.nblocks ?
						pl_decode_block(&list.view, next_block++, buf + held) : -1;

					if (got < 0)
						gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list does not decode");
					held += got;
				}
				gpx_freqs_tfs(&f, b, tfs);
				for (uint32 j = 0; j < nb && pos; j++)
				{
					uint16		wep[GPX_POS_MAX_COUNT];

					if (gpx_pos_tf(gpx_positions_next(pos, wep)) != tfs[j])
						gpx_seg_corrupt(seg, GPX_STREAM_POSITIONS, it.pos_page,
										"positions do not match the term's frequencies");
				}
				for (uint32 j = 0; j < nb; j++)
				{
					RowSig	   *r = pass_row(vs, rows, n, contiguous, buf[j]);

					max_tf = Max(max_tf, tfs[j]);
					if (r == NULL)
						continue;
					r->hash += hash * tfs[j];
					r->nterms++;
					min_code = Min(min_code, gpx_dl_code(r->dl));
				}
				if (f.record)
				{
					GpxFreqBlock fb;

					/*
					 * the shortest doc's code: none of this pass's docs
					 * shorter, and one of them as short in some pass
					 */
					memcpy(&fb, f.record + sizeof(GpxFreqHeader) + b * sizeof(fb), sizeof(fb));
					if (fb.max_tf != max_tf || fb.last_doc != buf[nb - 1] ||
						(vs->min_seen ? fb.min_dlcode > min_code : fb.min_dlcode != min_code))
						gpx_seg_corrupt(seg, GPX_STREAM_FREQS, it.freq_page, "a block's maxima do not match its postings");
					if (vs->min_seen && fb.min_dlcode == min_code)
						vs->min_seen[segno][freq_block / 8] |= 1 << (freq_block % 8);
				}
				else if (vs->min_seen)
					vs->min_seen[segno][freq_block / 8] |= 1 << (freq_block % 8);
				held -= nb;
				memmove(buf, buf + nb, held * sizeof(uint32));
			}
			if (held > 0 || next_block < list.view.nblocks)
				gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list does not decode");
			gpx_freqs_free(&f);
			if (pos)
			{
				gpx_positions_check_end(pos);
				gpx_positions_free(pos);
			}
		}
		else
			for (uint32 b = 0; b < list.view.nblocks; b++)
			{
				int			nb = pl_decode_block(&list.view, b, buf);

				if (nb < 0)
					gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list does not decode");
				for (int j = 0; j < nb; j++)
				{
					RowSig	   *r = pass_row(vs, rows, n, contiguous, buf[j]);

					if (r == NULL)
						continue;
					r->hash += hash;
					r->nterms++;
				}
			}
		postings += list.df;
		gpx_list_free(&list);
	}
	gpx_dict_iter_end(&it);
	if (postings != h->npostings)
		gpx_seg_corrupt(seg, -1, 0, "lists hold another number of postings than the header says");

	/* the inner nodes lead each leaf's first term to that leaf */
	for (uint32 l = 0; vs->first_pass && l < nleaves; l++)
	{
		uint32		leaf;

		if (!gpx_seg_leaf_for(seg, first_keys[l], first_lens[l], &leaf) || leaf != l)
			gpx_seg_corrupt(seg, GPX_STREAM_INNER, h->dict_root, "inner nodes lead a term to the wrong leaf");
	}
	if (vs->min_seen)
		vs->freq_blocks[segno] = freq_block;
	gpx_seg_close(seg);
	return n;
}

/* after the last pass: every block's shortest doc was met in one */
static void
check_min_seen(VerifyState *vs, uint32 segno, const GpxSegRef *ref)
{
	if (vs->min_seen == NULL)
		return;
	for (uint64 b = 0; b < vs->freq_blocks[segno]; b++)
		if (!(vs->min_seen[segno][b / 8] & (1 << (b % 8))))
			gpx_seg_corrupt(gpx_seg_open(vs->index, ref), GPX_STREAM_FREQS, PG_UINT32_MAX,
							"a block's maxima do not match its postings");
}

/* the pending area's entries, checked; this pass's rows of them; returns how many */
static uint64
check_pending(VerifyState *vs, RowSig *rows)
{
	GpxPendingReader r;
	uint64		filled = 0;
	BlockNumber last = InvalidBlockNumber;

	gpx_pending_begin(&r, vs->index, &vs->meta, InvalidBlockNumber, 0);
	if (r.blk != InvalidBlockNumber)
	{
		if (vs->first_pass)
			claim(vs, r.blk, "the pending area");
		last = r.blk;
	}
	while (gpx_pending_next(&r))
	{
		const uint8 *p = r.lex;
		const char *lex;
		int			len;
		uint32		tf;
		const char *prev = NULL;
		int			prev_len = 0;
		RowSig		entry;

		CHECK_FOR_INTERRUPTS();
		entry.tid = tid_key(&r.tid);
		entry.hash = 0;
		entry.nterms = 0;
		entry.matched = 0;
		entry.dl = r.dl;
		while (gpx_pending_lexeme(&p, r.end, r.freqs, &lex, &len, &tf))
		{
			if (prev && gpx_lexeme_cmp(prev, prev_len, lex, len) >= 0)
				gpx_report_corrupt(vs->index, r.blk, "A pending entry's lexemes are out of order");
			entry.hash += term_hash(lex, len) * tf;
			entry.nterms++;
			prev = lex;
			prev_len = len;
		}
		if (entry.nterms != r.nlex)
			gpx_report_corrupt(vs->index, r.blk, "A pending entry has another number of lexemes than it says");
		if (in_pass(vs, entry.tid))
		{
			if ((uint64) (rows - vs->rows) + filled >= vs->capacity)
				gpx_report_corrupt(vs->index, r.blk, "The pending area changed while it was checked");
			rows[filled++] = entry;
		}
		if (r.blk != last)
		{
			if (vs->first_pass)
				claim(vs, r.blk, "the pending area");
			last = r.blk;
		}
	}
	/* the reader held the entries, bytes and lengths to the metapage's counts */
	if (r.blk != InvalidBlockNumber && r.pages_read != vs->meta.pend_pages)
		gpx_report_corrupt(vs->index, GPX_META_BLKNO, "The pending area has %u pages, the metapage says %u",
						   r.pages_read, vs->meta.pend_pages);
	gpx_pending_end(&r);
	return filled;
}

static int
rowsig_cmp(const void *x, const void *y)
{
	const RowSig *a = x;
	const RowSig *b = y;

	return (a->tid > b->tid) - (a->tid < b->tid);
}

/* by TID, dead docs first: a TID VACUUM freed may hold a new row since */
static int
rowsig_sort_cmp(const void *x, const void *y)
{
	const RowSig *a = x;
	const RowSig *b = y;
	int			c = rowsig_cmp(x, y);

	return c != 0 ? c : (b->matched == 2) - (a->matched == 2);
}

typedef struct HeapSig
{
	uint64		hash;
	uint32		n;
} HeapSig;

static void
heap_lexeme(HeapSig *s, const char *lex, int len, uint32 tf)
{
	s->hash += term_hash(lex, len) * tf;
	s->n++;
}

static void
heap_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			  bool tupleIsAlive, void *state)
{
	VerifyState *vs = state;
	RowSig		key;
	RowSig	   *row;
	GpxLexemes	lex;
	HeapSig		sig = {0};

	if (isnull[0])
		return;
	vs->heap_rows++;
	key.tid = tid_key(tid);
	row = bsearch(&key, vs->rows, vs->nrows, sizeof(RowSig), rowsig_cmp);
	/* the live doc of that TID comes last among its equals */
	while (row != NULL && row + 1 < vs->rows + vs->nrows && row[1].tid == key.tid)
		row++;
	if (row == NULL || row->matched == 2)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" does not match table \"%s\"",
						RelationGetRelationName(vs->index), RelationGetRelationName(vs->heap)),
				 errdetail("Row (%u,%u) is not in the index.",
						   ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid)),
				 errhint("Rebuild the index with REINDEX.")));
	{
		MemoryContext old = MemoryContextSwitchTo(vs->rowcxt);

		gpx_document_lexemes(vs->kind, vs->config, values[0], &lex);
		for (int i = 0; i < lex.n; i++)
			heap_lexeme(&sig, lex.lex[i], lex.len[i], vs->freqs ? lex.tf[i] : 1);
		MemoryContextSwitchTo(old);
		MemoryContextReset(vs->rowcxt);
	}
	if (sig.n != row->nterms || sig.hash != row->hash || (vs->freqs && lex.dl != row->dl))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" does not match table \"%s\"",
						RelationGetRelationName(vs->index), RelationGetRelationName(vs->heap)),
				 errdetail("Row (%u,%u) has %u lexemes, the index holds %u other ones for it.",
						   ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
						   sig.n, row->nterms),
				 errhint("Rebuild the index with REINDEX.")));
	row->matched = 1;
}

/*
 * More rows than a pass holds: the heap's blocks in runs whose rows (the
 * docs and pending entries whose TIDs lie there) fit cap, counted in up to
 * 65,536 groups of blocks (a group with more rows is a pass of its own).
 * Returns the number of passes; pass p holds blocks [bounds[p],
 * bounds[p + 1]), the last to the end, and pass_rows[p] rows.
 */
static int
plan_passes(VerifyState *vs, uint64 cap, BlockNumber **bounds_out, uint64 **rows_out)
{
	BlockNumber heap_blocks = RelationGetNumberOfBlocks(vs->heap);
	int			shift = 0;
	uint32		ngroups;
	uint64	   *counts;
	BlockNumber *bounds;
	uint64	   *rows;
	uint64		acc = 0;
	int			n = 0;
	ItemPointerData tids[GPX_DOCMAP_CHUNK];
	GpxPendingReader r;

	while (((uint64) heap_blocks >> shift) >= 65536)
		shift++;
	ngroups = (heap_blocks >> shift) + 1;
	counts = palloc0(ngroups * sizeof(uint64));
	for (uint32 sg = 0; sg < vs->meta.nsegments; sg++)
	{
		GpxSegment *seg = gpx_seg_open(vs->index, &vs->meta.segments[sg]);

		for (uint32 c = 0; c < seg->hdr->docmap_chunks; c++)
		{
			uint32		nc = gpx_seg_chunk(seg, c, tids);

			CHECK_FOR_INTERRUPTS();
			for (uint32 j = 0; j < nc; j++)
				counts[Min(ItemPointerGetBlockNumberNoCheck(&tids[j]) >> shift, ngroups - 1)]++;
		}
		gpx_seg_close(seg);
	}
	gpx_pending_begin(&r, vs->index, &vs->meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&r))
		counts[Min(ItemPointerGetBlockNumberNoCheck(&r.tid) >> shift, ngroups - 1)]++;
	gpx_pending_end(&r);

	bounds = palloc((ngroups + 1) * sizeof(BlockNumber));
	rows = palloc(ngroups * sizeof(uint64));
	bounds[0] = 0;
	for (uint32 g = 0; g < ngroups; g++)
	{
		if (acc > 0 && acc + counts[g] > cap)
		{
			rows[n] = acc;
			bounds[++n] = g << shift;
			acc = 0;
		}
		acc += counts[g];
	}
	rows[n] = acc;
	bounds[++n] = InvalidBlockNumber;
	pfree(counts);
	*bounds_out = bounds;
	*rows_out = rows;
	return n;
}

Datum
gpuidx_verify(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Oid			heapoid;
	VerifyState vs;
	bool		standby = RecoveryInProgress();
	LOCKMODE	lockmode = standby ? AccessShareLock : ShareLock;
	Snapshot	snapshot = NULL;
	uint64		total = 0;
	uint64		live = 0;
	uint64		dead = 0;
	uint64		terms = 0;
	uint64		postings = 0;
	uint64		cap;
	uint64		most;
	uint64	   *pass_rows;
	BlockNumber *bounds;
	int			npasses;
	IndexInfo  *ii;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx verify", ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	char	   *report;

	gpx_check_index_oid(indexoid);
	heapoid = IndexGetRelation(indexoid, false);
	memset(&vs, 0, sizeof(vs));
	/* the table first, as amcheck does, then the index */
	vs.heap = table_open(heapoid, lockmode);
	vs.index = index_open(indexoid, lockmode);
	gpx_check_index(vs.index);
	if (!gpx_class_ownercheck(heapoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, RelationGetRelationName(vs.heap));

	/*
	 * A standby replays writes meanwhile: it checks the rows a snapshot taken
	 * before the index is read sees (as amcheck's bt_index_check does), each
	 * indexed before the metapage is read; replay that would remove one of
	 * them cancels the check instead.
	 */
	if (standby)
		snapshot = RegisterSnapshot(GetTransactionSnapshot());
	gpx_meta_read(vs.index, &vs.meta);
	/* after the metapage: every block it references is there */
	vs.nblocks = RelationGetNumberOfBlocks(vs.index);
	vs.claimed = palloc0(vs.nblocks / 8 + 1);
	check_all_pages(&vs);
	vs.kind = vs.meta.kind;
	vs.freqs = (vs.meta.flags & GPX_META_FREQS) != 0;
	vs.config = vs.kind == GPX_KIND_TEXT ? gpx_index_config(vs.index) : InvalidOid;
	if (vs.kind != gpx_kind_of(vs.index))
		gpx_report_corrupt(vs.index, GPX_META_BLKNO, "Metapage's document kind does not match the operator class");

	/*
	 * Memory is sized by the metapage's counts: first each segment's header
	 * agrees with them, and the live docs fit in the table (one row a TID).
	 */
	for (uint32 s = 0; s < vs.meta.nsegments; s++)
	{
		gpx_seg_close(gpx_seg_open(vs.index, &vs.meta.segments[s]));
		total += vs.meta.segments[s].ndocs;
		live += vs.meta.segments[s].ndocs - vs.meta.segments[s].ndead;
	}
	if (live + vs.meta.pend_entries > (uint64) RelationGetNumberOfBlocks(vs.heap) * MaxHeapTuplesPerPage)
		gpx_report_corrupt(vs.index, GPX_META_BLKNO, "Metapage counts %llu live docs, more rows than table \"%s\" holds",
						   (unsigned long long) (live + vs.meta.pend_entries), RelationGetRelationName(vs.heap));
	for (uint32 sg = 0; sg < vs.meta.nsegments; sg++)
	{
		dead += vs.meta.segments[sg].ndead;
		terms += vs.meta.segments[sg].nterms;
		postings += vs.meta.segments[sg].npostings;
	}

	/*
	 * Rows are matched a range of heap blocks at a time, as many as
	 * maintenance_work_mem holds (a row and its doc id: 36 bytes), the
	 * index's pages claimed in the first pass.
	 */
	cap = Max((uint64) maintenance_work_mem * 1024 / (sizeof(RowSig) + sizeof(uint32)), 1024);
	if (total + vs.meta.pend_entries <= cap)
	{
		bounds = palloc(2 * sizeof(BlockNumber));
		pass_rows = palloc(sizeof(uint64));
		bounds[0] = 0;
		bounds[1] = InvalidBlockNumber;
		pass_rows[0] = total + vs.meta.pend_entries;
		npasses = 1;
	}
	else
		npasses = plan_passes(&vs, cap, &bounds, &pass_rows);
	most = 0;
	for (int p = 0; p < npasses; p++)
		most = Max(most, pass_rows[p]);
	vs.rows = palloc_extended(Max(most, 1) * sizeof(RowSig), MCXT_ALLOC_HUGE);
	vs.pass_docs = palloc_extended(Max(most, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	vs.capacity = most;
	if (npasses > 1 && vs.freqs)
	{
		vs.min_seen = palloc(Max(vs.meta.nsegments, 1) * sizeof(uint8 *));
		vs.freq_blocks = palloc0(Max(vs.meta.nsegments, 1) * sizeof(uint64));
		for (uint32 sg = 0; sg < vs.meta.nsegments; sg++)
			vs.min_seen[sg] = palloc_extended((vs.meta.segments[sg].npostings / GPX_RANK_BLOCK +
											   vs.meta.segments[sg].nterms) / 8 + 1,
											  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	}
	ii = BuildIndexInfo(vs.index);
	vs.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx verify row", ALLOCSET_DEFAULT_SIZES);
	for (int p = 0; p < npasses; p++)
	{
		uint64		base = 0;

		vs.first_pass = p == 0;
		vs.lo = (uint64) bounds[p] << 16;
		vs.hi = bounds[p + 1] == InvalidBlockNumber ? PG_UINT64_MAX : (uint64) bounds[p + 1] << 16;
		for (uint32 sg = 0; sg < vs.meta.nsegments; sg++)
			base += check_segment(&vs, sg, &vs.meta.segments[sg], vs.rows + base);
		base += check_pending(&vs, vs.rows + base);
		if (base != pass_rows[p])
			gpx_report_corrupt(vs.index, GPX_META_BLKNO, "The doc maps and the pending area hold %llu rows where %llu were counted",
							   (unsigned long long) base, (unsigned long long) pass_rows[p]);
		vs.nrows = base;

		/* every row of the table, once, with its terms */
		qsort(vs.rows, vs.nrows, sizeof(RowSig), rowsig_sort_cmp);
		for (uint64 i = 1; i < vs.nrows; i++)
			if (vs.rows[i].tid == vs.rows[i - 1].tid && vs.rows[i].matched != 2 && vs.rows[i - 1].matched != 2)
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("index \"%s\" holds row (%u,%u) twice",
								RelationGetRelationName(vs.index),
								(uint32) (vs.rows[i].tid >> 16), (uint32) (vs.rows[i].tid & 0xFFFF)),
						 errhint("Rebuild the index with REINDEX.")));
		{
			/* a scan limited to the blocks after from wraps around: given their number */
			BlockNumber heap_blocks = RelationGetNumberOfBlocks(vs.heap);
			BlockNumber from = bounds[p];
			BlockNumber nblocks = Min(bounds[p + 1], heap_blocks) - Min(from, heap_blocks);

			if (nblocks == 0)
				continue;
			if (snapshot)
			{
				/* the standby's snapshot: its scan, held to the pass's blocks */
				TableScanDesc scan = table_beginscan_strat(vs.heap, snapshot, 0, NULL, true, false);

				heap_setscanlimits(scan, from, nblocks);
				table_index_build_range_scan(vs.heap, vs.index, ii, true, false, false, 0, InvalidBlockNumber,
											 heap_callback, &vs, scan);
			}
			else
				table_index_build_range_scan(vs.heap, vs.index, ii, false, false, false, from, nblocks,
											 heap_callback, &vs, NULL);
		}
	}
	for (uint32 sg = 0; sg < vs.meta.nsegments; sg++)
		check_min_seen(&vs, sg, &vs.meta.segments[sg]);
	if (snapshot)
		UnregisterSnapshot(snapshot);

	report = psprintf("index \"%s\" is sound: %u segments, %llu docs (%llu dead), %llu terms, "
					  "%llu postings, %llu pending entries; %llu pages checked; %llu rows of \"%s\" found",
					  RelationGetRelationName(vs.index), vs.meta.nsegments,
					  (unsigned long long) total, (unsigned long long) dead,
					  (unsigned long long) terms, (unsigned long long) postings,
					  (unsigned long long) vs.meta.pend_entries,
					  (unsigned long long) vs.pages_checked,
					  (unsigned long long) vs.heap_rows, RelationGetRelationName(vs.heap));
	if (npasses > 1)
		report = psprintf("%s, in %d passes within maintenance_work_mem", report, npasses);
	index_close(vs.index, lockmode);
	table_close(vs.heap, lockmode);
	MemoryContextSwitchTo(old);
	report = pstrdup(report);
	MemoryContextDelete(cxt);
	PG_RETURN_TEXT_P(cstring_to_text(report));
}
