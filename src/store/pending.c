/*
 * pending.c
 *	  Appending to and reading the pending area.
 *
 * An entry that fits the tail page's free room is appended there under the
 * metapage's lock: one generic WAL record changes the tail and the
 * metapage.  An entry that does not fit gets pages of its own, written
 * (each as a full-page record) while no lock of the index is held, so that
 * a multi-megabyte document stalls no scan or insert and can be cancelled;
 * one short record then links them after the tail.  A crash or an error
 * before that leaves unlinked pages, which VACUUM frees (orphans are found
 * by reachability, under the writers' lock that excludes inserts halfway).
 *
 * Every pending page carries a sequence number and the sequence number of
 * the page it links to, numbers handed out once (reserved in the
 * metapage), so a reader that follows a link to a page recycled meanwhile
 * notices (store/page.c).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"

#include "store/pending.h"
#include "store/varint.h"

/* entry: uint32 length of the body, then the body (store/parse.h) */
#define ENTRY_HEAD	GPX_PENDING_HEAD
#define TID_BYTES	GPX_PENDING_TID_BYTES

/*
 * A heavyweight lock tag (not a page): inserts hold it shared while they
 * write pages nothing links to yet; VACUUM takes it exclusively to free
 * unlinked pages, and skips that when inserts are at it.
 */
#define PENDING_WRITERS_LOCK	InvalidBlockNumber

static char *
encode_entry(ItemPointer tid, const GpxLexemes *doc, bool freqs, bool positions, uint32 *size)
{
	const char *const *lex = doc->lex;
	const int  *len = doc->len;
	const uint8 *tf = doc->tf;
	int			n = doc->n;
	uint32		dl = doc->dl;
	uint8	   *pos = NULL;
	uint32		poslen = 0;
	Size		body = TID_BYTES + gpx_varint_size(n) + (freqs ? gpx_varint_size(dl) + n : 0);
	char	   *buf;
	uint8	   *p;
	uint32		blen;
	BlockNumber blk = ItemPointerGetBlockNumber(tid);
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);

	for (int i = 0; i < n; i++)
		body += gpx_varint_size(len[i]) + len[i];
	if (positions)
	{
		pos = gpx_lexemes_positions(doc, &poslen);
		body += poslen;
	}
	if (body > MaxAllocSize - ENTRY_HEAD)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("document has too many distinct lexemes for gpuidx's pending area")));
	buf = palloc(ENTRY_HEAD + body);
	blen = (uint32) body;
	memcpy(buf, &blen, ENTRY_HEAD);
	p = (uint8 *) buf + ENTRY_HEAD;
	memcpy(p, &blk, sizeof(blk));
	memcpy(p + sizeof(blk), &off, sizeof(off));
	p += TID_BYTES;
	p += gpx_varint_put(p, n);
	if (freqs)
		p += gpx_varint_put(p, dl);
	for (int i = 0; i < n; i++)
	{
		p += gpx_varint_put(p, len[i]);
		memcpy(p, lex[i], len[i]);
		p += len[i];
		if (freqs)
			*p++ = tf[i];
	}
	if (positions)
	{
		memcpy(p, pos, poslen);
		pfree(pos);
	}
	*size = ENTRY_HEAD + body;
	return buf;
}

uint32
gpx_pending_next_seq(Page page)
{
	GpxPageOpaque opaque = GpxPageGetOpaque(page);

	/* version 1 indexes left it 0: their chains are numbered consecutively */
	return opaque->pageno != 0 ? opaque->pageno : opaque->owner + 1;
}

static void
init_pending_page(Page page, uint32 seq, BlockNumber next, uint32 next_seq)
{
	gpx_page_init(page, GPX_PAGE_PENDING);
	GpxPageGetOpaque(page)->owner = seq;
	GpxPageGetOpaque(page)->next = next;
	GpxPageGetOpaque(page)->pageno = next == InvalidBlockNumber ? 0 : next_seq;
}

void
gpx_pending_writers_lock(Relation index)
{
	LockPage(index, PENDING_WRITERS_LOCK, ShareLock);
}

void
gpx_pending_writers_unlock(Relation index)
{
	UnlockPage(index, PENDING_WRITERS_LOCK, ShareLock);
}

bool
gpx_pending_writers_exclude(Relation index)
{
	return ConditionalLockPage(index, PENDING_WRITERS_LOCK, ExclusiveLock);
}

void
gpx_pending_writers_allow(Relation index)
{
	UnlockPage(index, PENDING_WRITERS_LOCK, ExclusiveLock);
}

/* one record changing the metapage alone */
static void
put_meta(Relation index, Buffer metabuf, const GpxMetaPageData *meta)
{
	GenericXLogState *state = GenericXLogStart(index);

	gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
	GenericXLogFinish(state);
}

/*
 * Write entry[0..size) to new pages numbered first_seq on, chained, last
 * page first so each links to one already written; returns the first
 * page's block, and the last one's in *last.
 */
static BlockNumber
write_entry_pages(Relation index, const char *entry, uint32 size, uint32 first_seq,
				  uint32 npages, BlockNumber *last)
{
	BlockNumber next = InvalidBlockNumber;

	for (uint32 i = npages; i >= 1; i--)
	{
		PGAlignedBlock image;
		Buffer		buf = gpx_new_buffer(index, true);
		uint32		from = (i - 1) * GPX_PAGE_CAPACITY;
		uint32		len = Min(GPX_PAGE_CAPACITY, size - from);

		init_pending_page(image.data, first_seq + i - 1, next, first_seq + i);
		memcpy(PageGetContents(image.data), entry + from, len);
		gpx_page_set_used(image.data, len);
		gpx_page_seal(image.data);
		next = BufferGetBlockNumber(buf);
		if (i == npages)
			*last = next;
		gpx_put_page(index, buf, image.data, true);
		CHECK_FOR_INTERRUPTS();
	}
	return next;
}

uint64
gpx_pending_insert(Relation index, ItemPointer tid, const GpxLexemes *doc)
{
	uint32		dl = doc->dl;
	uint32		size;
	char	   *entry;
	GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
	GpxPageTag	tag = {GPX_PAGE_PENDING, GPX_ANY_STREAM, GPX_ANY_OWNER, GPX_ANY_OWNER};
	Buffer		metabuf = gpx_meta_lock(index, meta);
	Buffer		tailbuf = InvalidBuffer;
	bool		freqs = (meta->flags & GPX_META_FREQS) != 0;
	bool		positions = (meta->flags & GPX_META_POSITIONS) != 0;
	uint32		npages;
	uint32		first_seq;
	BlockNumber first;
	BlockNumber last = InvalidBlockNumber;
	GenericXLogState *state;
	uint64		pending_bytes;

	/* the index's flags decide the entry's form; they never change */
	entry = encode_entry(tid, doc, freqs, positions, &size);

	/* the common case: the entry fits the tail page */
	if (meta->pend_tail != InvalidBlockNumber)
	{
		Page		tailpage;

		tailbuf = gpx_read_page(index, meta->pend_tail, BUFFER_LOCK_EXCLUSIVE, &tag);
		if (GpxPageGetOpaque(BufferGetPage(tailbuf))->next != InvalidBlockNumber)
			gpx_report_corrupt(index, meta->pend_tail, "The pending area's tail page links to another page");
		if (gpx_page_used(BufferGetPage(tailbuf)) + size <= GPX_PAGE_CAPACITY)
		{
			state = GenericXLogStart(index);
			tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);
			memcpy(PageGetContents(tailpage) + gpx_page_used(tailpage), entry, size);
			gpx_page_set_used(tailpage, gpx_page_used(tailpage) + size);
			gpx_page_seal(tailpage);
			meta->pend_entries++;
			meta->pend_bytes += size;
			if (freqs)
				meta->pend_dl += dl;
			pending_bytes = meta->pend_bytes;
			gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
			GenericXLogFinish(state);
			UnlockReleaseBuffer(tailbuf);
			UnlockReleaseBuffer(metabuf);
			pfree(meta);
			pfree(entry);
			return pending_bytes;
		}
		UnlockReleaseBuffer(tailbuf);
	}

	/* pages of its own: their sequence numbers reserved first */
	npages = (size + GPX_PAGE_CAPACITY - 1) / GPX_PAGE_CAPACITY;
	if (meta->next_pending_seq > PG_UINT32_MAX - npages - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("index \"%s\" has used up its pending page numbers", RelationGetRelationName(index)),
				 errhint("Rebuild the index with REINDEX.")));
	first_seq = meta->next_pending_seq;
	meta->next_pending_seq += npages;
	put_meta(index, metabuf, meta);
	UnlockReleaseBuffer(metabuf);

	/* written with no lock of the index held but the writers' (shared) */
	gpx_pending_writers_lock(index);
	first = write_entry_pages(index, entry, size, first_seq, npages, &last);

	/* one record links them after the tail as it is now */
	metabuf = gpx_meta_lock(index, meta);
	tailbuf = InvalidBuffer;
	if (meta->pend_tail != InvalidBlockNumber)
	{
		tailbuf = gpx_read_page(index, meta->pend_tail, BUFFER_LOCK_EXCLUSIVE, &tag);
		if (GpxPageGetOpaque(BufferGetPage(tailbuf))->next != InvalidBlockNumber)
			gpx_report_corrupt(index, meta->pend_tail, "The pending area's tail page links to another page");
	}
	state = GenericXLogStart(index);
	if (BufferIsValid(tailbuf))
	{
		Page		tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);

		GpxPageGetOpaque(tailpage)->next = first;
		GpxPageGetOpaque(tailpage)->pageno = first_seq;
		gpx_page_seal(tailpage);
	}
	else
	{
		meta->pend_head = first;
		meta->pend_head_off = 0;
		meta->pend_head_seq = first_seq;
	}
	meta->pend_tail = last;
	meta->pend_pages += npages;
	meta->pend_entries++;
	meta->pend_bytes += size;
	if (freqs)
		meta->pend_dl += dl;
	pending_bytes = meta->pend_bytes;
	gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
	GenericXLogFinish(state);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
	gpx_pending_writers_unlock(index);
	pfree(meta);
	pfree(entry);
	return pending_bytes;
}

/* ---------------------------------------------------------------------------
 * Reading
 */
static bool
load_page(GpxPendingReader *r, BlockNumber blk, uint32 seq)
{
	GpxPageTag	tag = {GPX_PAGE_PENDING, GPX_ANY_STREAM, seq, GPX_ANY_OWNER};
	Buffer		buf;
	Page		page;

	CHECK_FOR_INTERRUPTS();
	if (r->pages_read == r->pages_max)
		gpx_report_corrupt(r->index, blk, "The pending area runs past the %u pages the metapage counts",
						   r->pages_max);
	buf = gpx_read_page(r->index, blk, BUFFER_LOCK_SHARE, &tag);
	page = BufferGetPage(buf);
	r->used = gpx_page_used(page);
	memcpy(r->page, PageGetContents(page), r->used);
	r->next = GpxPageGetOpaque(page)->next;
	r->next_seq = gpx_pending_next_seq(page);
	UnlockReleaseBuffer(buf);
	r->blk = blk;
	r->seq = seq;
	r->pos = 0;
	r->pages_read++;
	return true;
}

static void
reader_init(GpxPendingReader *r, Relation index, const GpxMetaPageData *meta, BlockNumber stop_blk,
			uint32 stop_off)
{
	memset(r, 0, sizeof(*r));
	r->index = index;
	r->page = palloc(GPX_PAGE_CAPACITY);
	r->stop_blk = stop_blk;
	r->stop_off = stop_off;
	r->freqs = (meta->flags & GPX_META_FREQS) != 0;
	r->positions = (meta->flags & GPX_META_POSITIONS) != 0;
	r->bytes_left = meta->pend_bytes;
	r->entries_left = meta->pend_entries;
	r->dl_left = meta->pend_dl;
	r->pages_max = meta->pend_pages;
	initStringInfo(&r->assembly);
	r->blk = InvalidBlockNumber;
}

void
gpx_pending_begin(GpxPendingReader *r, Relation index, const GpxMetaPageData *meta,
				  BlockNumber stop_blk, uint32 stop_off)
{
	reader_init(r, index, meta, stop_blk, stop_off);
	if (meta->pend_head == InvalidBlockNumber)
		return;
	load_page(r, meta->pend_head, meta->pend_head_seq);
	if (meta->pend_head_off > r->used)
		gpx_report_corrupt(index, r->blk, "The pending area starts past the page's contents");
	r->pos = meta->pend_head_off;
}

void
gpx_pending_resume(GpxPendingReader *r, Relation index, const GpxMetaPageData *meta, BlockNumber blk,
				   uint32 seq, uint32 pos, uint64 done_bytes, uint64 done_entries, uint64 done_dl,
				   uint32 done_pages)
{
	reader_init(r, index, meta, InvalidBlockNumber, 0);
	if (meta->pend_bytes < done_bytes || meta->pend_entries < done_entries || meta->pend_dl < done_dl ||
		done_pages == 0 || meta->pend_pages < done_pages || blk == InvalidBlockNumber)
		elog(ERROR, "gpuidx: a pending area resumed past its end");
	r->bytes_left = meta->pend_bytes - done_bytes;
	r->entries_left = meta->pend_entries - done_entries;
	r->dl_left = meta->pend_dl - done_dl;
	/* the page it stopped on is read again: it may have grown since */
	r->pages_read = done_pages - 1;
	load_page(r, blk, seq);
	if (pos > r->used)
		gpx_report_corrupt(index, blk, "A pending page shrank under its readers");
	r->pos = pos;
}

static bool
at_stop(GpxPendingReader *r)
{
	return r->blk == r->stop_blk && r->pos >= r->stop_off;
}

/* n bytes from the stream; false at its end; ERROR if it ends inside them */
static const uint8 *
read_bytes(GpxPendingReader *r, uint32 n, bool *eof)
{
	const uint8 *p;

	*eof = false;
	while (r->pos == r->used && !at_stop(r))
	{
		if (r->next == InvalidBlockNumber)
		{
			*eof = true;
			return NULL;
		}
		load_page(r, r->next, r->next_seq);
	}
	if (at_stop(r))
	{
		*eof = true;
		return NULL;
	}
	if (r->used - r->pos >= n)
	{
		p = (const uint8 *) r->page + r->pos;
		r->pos += n;
		return p;
	}
	resetStringInfo(&r->assembly);
	enlargeStringInfo(&r->assembly, n);
	while (n > 0)
	{
		uint32		take;

		if (r->pos == r->used)
		{
			if (r->next == InvalidBlockNumber || r->blk == r->stop_blk)
				gpx_report_corrupt(r->index, r->blk, "A pending entry is cut short");
			load_page(r, r->next, r->next_seq);
		}
		take = Min(n, r->used - r->pos);
		appendBinaryStringInfo(&r->assembly, r->page + r->pos, take);
		r->pos += take;
		n -= take;
	}
	return (const uint8 *) r->assembly.data;
}

bool
gpx_pending_next(GpxPendingReader *r)
{
	uint32		body;
	const uint8 *p;
	bool		eof;
	GpxPendingEntry entry;
	const char *problem;

	if (r->blk == InvalidBlockNumber)
		return false;
	if (r->bytes_left == 0)
	{
		/* the end of what the metapage copy counts */
		if (r->entries_left != 0 || r->dl_left != 0)
			gpx_report_corrupt(r->index, GPX_META_BLKNO,
							   "The pending area ends %llu entries and %llu of doc length short of the metapage's counts",
							   (unsigned long long) r->entries_left, (unsigned long long) r->dl_left);
		return false;
	}
	p = read_bytes(r, ENTRY_HEAD, &eof);
	if (eof && at_stop(r))
		return false;
	if (eof)
		gpx_report_corrupt(r->index, r->blk, "The pending area ends %llu bytes before the metapage says",
						   (unsigned long long) r->bytes_left);
	memcpy(&body, p, ENTRY_HEAD);
	if (body < TID_BYTES + 1 || body > MaxAllocSize || ENTRY_HEAD + (uint64) body > r->bytes_left)
		gpx_report_corrupt(r->index, r->blk, "A pending entry has an impossible length");
	p = read_bytes(r, body, &eof);
	if (eof)
		gpx_report_corrupt(r->index, r->blk, "A pending entry is cut short");
	problem = gpx_parse_pending_entry(p, body, MaxOffsetNumber, r->freqs, r->positions, &entry);
	if (problem != NULL)
		gpx_report_corrupt(r->index, r->blk, "%s", problem);
	if (r->entries_left == 0 || entry.dl > r->dl_left)
		gpx_report_corrupt(r->index, GPX_META_BLKNO,
						   "The pending area holds more entries or longer docs than the metapage counts");
	r->bytes_left -= ENTRY_HEAD + body;
	r->entries_left--;
	r->dl_left -= entry.dl;
	ItemPointerSet(&r->tid, entry.block, entry.offset);
	r->nlex = entry.nlex;
	r->dl = entry.dl;
	r->lex = entry.lex;
	r->end = entry.end;
	r->positions_at = entry.pos;
	r->entry_end = p + body;
	r->entry_bytes = ENTRY_HEAD + body;
	return true;
}

void
gpx_pending_end(GpxPendingReader *r)
{
	pfree(r->page);
	pfree(r->assembly.data);
}
