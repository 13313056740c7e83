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
 * computed from the index's lists and from the table's values: 16 bytes per
 * indexed row.  The table and the index are share-locked meanwhile, so no
 * write or merge runs.  A hot standby cannot take share locks, and replays
 * the primary's writes meanwhile: there the check holds access-share locks,
 * holds the index's counters to what writes may have made of them since
 * the metapage was read (dead docs marked, entries appended), and checks
 * the rows its snapshot sees.
 */
#include "postgres.h"

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
	RowSig	   *rows;			/* every segment's docs, then pending entries */
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

static void
check_segment(VerifyState *vs, const GpxSegRef *ref, RowSig *rows)
{
	GpxSegment *seg = gpx_seg_open(vs->index, ref);
	GpxSegHeaderData *h = seg->hdr;
	GpxDictIter it;
	uint64		postings = 0;
	uint32		ndead;
	uint32	   *dead;
	GpxSegRef	now;
	uint64		seg_dl = 0;
	uint64		dead_dl = 0;
	ItemPointerData tids[GPX_DOCMAP_CHUNK];
	char	  **first_keys;
	int		   *first_lens;
	uint32		nleaves = h->streams[GPX_STREAM_LEAF].npages;

	/* the header, the table pages and every page of every stream */
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

	/* the doc map */
	for (uint32 c = 0; c < h->docmap_chunks; c++)
	{
		uint32		n = gpx_seg_chunk(seg, c, tids);
		uint32		dls[GPX_DOCMAP_CHUNK];
		uint64		sum_dl = 0;

		if (vs->freqs && gpx_seg_chunk_lengths(seg, c, dls) != n)
			gpx_seg_corrupt(seg, GPX_STREAM_LENS, PG_UINT32_MAX, "doc lengths do not match the doc map");
		for (uint32 j = 0; j < n; j++)
		{
			RowSig	   *r = &rows[(uint64) c * GPX_DOCMAP_CHUNK + j];

			r->tid = tid_key(&tids[j]);
			if ((h->flags & GPX_SEG_TID_ORDER) && (c > 0 || j > 0) && r->tid <= r[-1].tid)
				gpx_seg_corrupt(seg, GPX_STREAM_DOCMAP, PG_UINT32_MAX, "doc map is out of TID order though its header says otherwise");
			r->hash = 0;
			r->nterms = 0;
			r->matched = 0;
			r->dl = vs->freqs ? dls[j] : 0;
			sum_dl += r->dl;
		}
		seg_dl += sum_dl;
	}
	if (seg_dl != ref->sum_dl)
		gpx_seg_corrupt(seg, GPX_STREAM_LENS, 0, "doc lengths sum to another total than the metapage's");
	if (((h->flags & GPX_SEG_FREQS) != 0) != vs->freqs)
		gpx_seg_corrupt(seg, -1, 0, "stores frequencies where the index does not, or the reverse");

	/* the dead-doc bitmap: their number, bits past the end, their lengths */
	dead = gpx_seg_dead_docs(seg, &ndead, &now);
	for (uint32 i = 0; i < ndead; i++)
	{
		dead_dl += rows[dead[i]].dl;
		rows[dead[i]].matched = 2;	/* not expected in the table */
	}
	if (!dead_dl_sound(ref, &now, ndead, dead_dl))
		gpx_seg_corrupt(seg, GPX_STREAM_DEAD, 0, "dead docs' lengths sum to another total than the metapage's");
	if (dead)
		pfree(dead);

	/* the dictionary: terms in order, every list whole and sound */
	first_keys = palloc(Max(nleaves, 1) * sizeof(char *));
	first_lens = palloc(Max(nleaves, 1) * sizeof(int));
	gpx_dict_iter_init(&it, seg);
	while (gpx_dict_iter_next(&it))
	{
		GpxList		list;
		uint32		buf[GPUIDX_LRC_SEGMENT];
		uint64		hash = term_hash(it.term, it.term_len);
		pl_status	st;

		CHECK_FOR_INTERRUPTS();
		if (it.left + 1 == ((GpxLeafHeader *) it.page)->nentries)
		{
			first_keys[it.leaf_no] = pnstrdup(it.term, it.term_len);
			first_lens[it.leaf_no] = it.term_len;
		}
		gpx_dict_iter_list(&it, &list);
		st = pl_validate(&list.view);
		if (st != PL_OK)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, pl_status_message(st));
		if (vs->freqs)
		{
			/* every tf, and each block's maxima against its docs */
			GpxFreqs	f;
			uint32	   *ids = palloc_extended((Size) list.df * sizeof(uint32), MCXT_ALLOC_HUGE);

			gpx_dict_iter_freqs(&it, &f);
			if (pl_decode(&list.view, ids) != PL_OK)
				gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list does not decode");
			for (uint32 b = 0; b < gpx_freq_nblocks(list.df); b++)
			{
				uint8		tfs[GPX_RANK_BLOCK];
				uint32		from = b * GPX_RANK_BLOCK;
				uint32		n = Min(GPX_RANK_BLOCK, list.df - from);
				uint32		max_tf = 0;
				uint32		min_code = 255;

				gpx_freqs_tfs(&f, b, tfs);
				for (uint32 j = 0; j < n; j++)
				{
					rows[ids[from + j]].hash += hash * tfs[j];
					rows[ids[from + j]].nterms++;
					max_tf = Max(max_tf, tfs[j]);
					min_code = Min(min_code, gpx_dl_code(rows[ids[from + j]].dl));
				}
				if (f.record)
				{
					GpxFreqBlock fb;

					memcpy(&fb, f.record + sizeof(GpxFreqHeader) + b * sizeof(fb), sizeof(fb));
					if (fb.max_tf != max_tf || fb.min_dlcode != min_code || fb.last_doc != ids[from + n - 1])
						gpx_seg_corrupt(seg, GPX_STREAM_FREQS, it.freq_page, "a block's maxima do not match its postings");
				}
			}
			gpx_freqs_free(&f);
			pfree(ids);
		}
		else
			for (uint32 b = 0; b < list.view.nblocks; b++)
			{
				int			n = pl_decode_block(&list.view, b, buf);

				if (n < 0)
					gpx_seg_corrupt(seg, GPX_STREAM_LISTS, it.list_page, "list does not decode");
				for (int j = 0; j < n; j++)
				{
					rows[buf[j]].hash += hash;
					rows[buf[j]].nterms++;
				}
			}
		postings += list.df;
		gpx_list_free(&list);
	}
	gpx_dict_iter_end(&it);
	if (postings != h->npostings)
		gpx_seg_corrupt(seg, -1, 0, "lists hold another number of postings than the header says");

	/* the inner nodes lead each leaf's first term to that leaf */
	for (uint32 l = 0; l < nleaves; l++)
	{
		uint32		leaf;

		if (!gpx_seg_leaf_for(seg, first_keys[l], first_lens[l], &leaf) || leaf != l)
			gpx_seg_corrupt(seg, GPX_STREAM_INNER, h->dict_root, "inner nodes lead a term to the wrong leaf");
	}
	gpx_seg_close(seg);
}

static void
check_pending(VerifyState *vs, RowSig *rows)
{
	GpxPendingReader r;
	uint64		entries = 0;
	BlockNumber last = InvalidBlockNumber;

	gpx_pending_begin(&r, vs->index, &vs->meta, InvalidBlockNumber, 0);
	if (r.blk != InvalidBlockNumber)
	{
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
		RowSig	   *row = &rows[entries];

		CHECK_FOR_INTERRUPTS();
		row->tid = tid_key(&r.tid);
		row->hash = 0;
		row->nterms = 0;
		row->matched = 0;
		row->dl = r.dl;
		while (gpx_pending_lexeme(&p, r.end, r.freqs, &lex, &len, &tf))
		{
			if (prev && gpx_lexeme_cmp(prev, prev_len, lex, len) >= 0)
				gpx_report_corrupt(vs->index, r.blk, "A pending entry's lexemes are out of order");
			row->hash += term_hash(lex, len) * tf;
			row->nterms++;
			prev = lex;
			prev_len = len;
		}
		if (row->nterms != r.nlex)
			gpx_report_corrupt(vs->index, r.blk, "A pending entry has another number of lexemes than it says");
		entries++;
		if (r.blk != last)
		{
			claim(vs, r.blk, "the pending area");
			last = r.blk;
		}
	}
	/* the reader held the entries, bytes and lengths to the metapage's counts */
	if (r.blk != InvalidBlockNumber && r.pages_read != vs->meta.pend_pages)
		gpx_report_corrupt(vs->index, GPX_META_BLKNO, "The pending area has %u pages, the metapage says %u",
						   r.pages_read, vs->meta.pend_pages);
	gpx_pending_end(&r);
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
	uint64		base = 0;
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
	if (!pg_class_ownercheck(heapoid, GetUserId()))
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
	vs.nrows = total + vs.meta.pend_entries;
	vs.rows = palloc_extended(Max(vs.nrows, 1) * sizeof(RowSig), MCXT_ALLOC_HUGE);
	for (uint32 s = 0; s < vs.meta.nsegments; s++)
	{
		const GpxSegRef *ref = &vs.meta.segments[s];

		check_segment(&vs, ref, vs.rows + base);
		base += ref->ndocs;
		dead += ref->ndead;
		terms += ref->nterms;
		postings += ref->npostings;
	}
	check_pending(&vs, vs.rows + base);

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
	ii = BuildIndexInfo(vs.index);
	vs.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx verify row", ALLOCSET_DEFAULT_SIZES);
	if (snapshot)
	{
		TableScanDesc scan = table_beginscan_strat(vs.heap, snapshot, 0, NULL, true, false);

		table_index_build_scan(vs.heap, vs.index, ii, true, false, heap_callback, &vs, scan);
		UnregisterSnapshot(snapshot);
	}
	else
		table_index_build_scan(vs.heap, vs.index, ii, false, false, heap_callback, &vs, NULL);

	report = psprintf("index \"%s\" is sound: %u segments, %llu docs (%llu dead), %llu terms, "
					  "%llu postings, %llu pending entries; %llu pages checked; %llu rows of \"%s\" found",
					  RelationGetRelationName(vs.index), vs.meta.nsegments,
					  (unsigned long long) total, (unsigned long long) dead,
					  (unsigned long long) terms, (unsigned long long) postings,
					  (unsigned long long) vs.meta.pend_entries,
					  (unsigned long long) vs.pages_checked,
					  (unsigned long long) vs.heap_rows, RelationGetRelationName(vs.heap));
	index_close(vs.index, lockmode);
	table_close(vs.heap, lockmode);
	MemoryContextSwitchTo(old);
	report = pstrdup(report);
	MemoryContextDelete(cxt);
	PG_RETURN_TEXT_P(cstring_to_text(report));
}
