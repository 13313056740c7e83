/*
 * pending.c
 *	  Appending to and reading the pending area.
 *
 * An insert takes the metapage's lock, appends its entry to the tail page
 * and, when the entry does not fit, to new pages linked after it.  The new
 * pages beyond the first are written (and WAL-logged) before anything links
 * to them, from the last to the first; one final generic WAL record then
 * changes the metapage, the old tail and the first new page together, so a
 * reader (or a crash) sees the whole entry or none of it.
 *
 * Readers copy one page at a time under its share lock and check that each
 * page carries the next sequence number, so a page recycled under them is
 * noticed (store/page.c).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "store/pending.h"
#include "store/varint.h"

/* entry: uint32 length of the body, then the body */
#define ENTRY_HEAD	sizeof(uint32)
#define TID_BYTES	6

static char *
encode_entry(ItemPointer tid, const char *const *lex, const int *len, int n, uint32 *size)
{
	Size		body = TID_BYTES + gpx_varint_size(n);
	char	   *buf;
	uint8	   *p;
	uint32		blen;
	BlockNumber blk = ItemPointerGetBlockNumber(tid);
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);

	for (int i = 0; i < n; i++)
		body += gpx_varint_size(len[i]) + len[i];
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
	for (int i = 0; i < n; i++)
	{
		p += gpx_varint_put(p, len[i]);
		memcpy(p, lex[i], len[i]);
		p += len[i];
	}
	*size = ENTRY_HEAD + body;
	return buf;
}

static void
init_pending_page(Page page, uint32 seq, BlockNumber next)
{
	gpx_page_init(page, GPX_PAGE_PENDING);
	GpxPageGetOpaque(page)->owner = seq;
	GpxPageGetOpaque(page)->next = next;
}

uint64
gpx_pending_insert(Relation index, ItemPointer tid, const char *const *lex, const int *len, int n)
{
	uint32		size;
	char	   *entry = encode_entry(tid, lex, len, n, &size);
	GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
	Buffer		metabuf = gpx_meta_lock(index, meta);
	GpxPageTag	tag = {GPX_PAGE_PENDING, GPX_ANY_STREAM, GPX_ANY_OWNER, GPX_ANY_OWNER};
	Buffer		tailbuf;
	Buffer		firstbuf = InvalidBuffer;
	BlockNumber next = InvalidBlockNumber;
	BlockNumber last = InvalidBlockNumber;
	uint32		room;
	uint32		tail_seq;
	uint32		nnew = 0;
	GenericXLogState *state;
	Page		tailpage;
	uint64		pending_bytes;

	if (meta->pend_tail == InvalidBlockNumber)
	{
		/* the very first pending page */
		PGAlignedBlock image;

		tailbuf = gpx_new_buffer(index, true);
		init_pending_page(image.data, meta->next_pending_seq, InvalidBlockNumber);
		gpx_page_seal(image.data);
		meta->pend_head = meta->pend_tail = BufferGetBlockNumber(tailbuf);
		meta->pend_head_off = 0;
		meta->pend_head_seq = meta->next_pending_seq++;
		meta->pend_pages = 1;
		state = GenericXLogStart(index);
		gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
		memcpy(GenericXLogRegisterBuffer(state, tailbuf, GENERIC_XLOG_FULL_IMAGE), image.data, BLCKSZ);
		GenericXLogFinish(state);
	}
	else
		tailbuf = gpx_read_page(index, meta->pend_tail, BUFFER_LOCK_EXCLUSIVE, &tag);

	tail_seq = GpxPageGetOpaque(BufferGetPage(tailbuf))->owner;
	if (GpxPageGetOpaque(BufferGetPage(tailbuf))->next != InvalidBlockNumber)
		gpx_report_corrupt(index, meta->pend_tail, "The pending area's tail page links to another page");
	room = GPX_PAGE_CAPACITY - gpx_page_used(BufferGetPage(tailbuf));

	if (size > room)
	{
		/* pages 2..k, written last to first, each linked to the next */
		uint32		rest = size - room;

		nnew = (rest + GPX_PAGE_CAPACITY - 1) / GPX_PAGE_CAPACITY;
		for (uint32 i = nnew; i >= 2; i--)
		{
			PGAlignedBlock image;
			Buffer		buf = gpx_new_buffer(index, true);
			uint32		from = room + (i - 1) * GPX_PAGE_CAPACITY;
			uint32		len = Min(GPX_PAGE_CAPACITY, size - from);

			CHECK_FOR_INTERRUPTS();
			init_pending_page(image.data, tail_seq + i, next);
			memcpy(PageGetContents(image.data), entry + from, len);
			gpx_page_set_used(image.data, len);
			gpx_page_seal(image.data);
			next = BufferGetBlockNumber(buf);
			if (i == nnew)
				last = next;
			gpx_put_page(index, buf, image.data, true);
		}
		firstbuf = gpx_new_buffer(index, true);
	}

	/* one record: the tail's share, the first new page, the metapage */
	state = GenericXLogStart(index);
	tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);
	{
		uint32		used = gpx_page_used(tailpage);
		uint32		n = Min(room, size);

		memcpy(PageGetContents(tailpage) + used, entry, n);
		gpx_page_set_used(tailpage, used + n);
	}
	if (BufferIsValid(firstbuf))
	{
		Page		first = GenericXLogRegisterBuffer(state, firstbuf, GENERIC_XLOG_FULL_IMAGE);
		uint32		len = Min(GPX_PAGE_CAPACITY, size - room);

		init_pending_page(first, tail_seq + 1, next);
		memcpy(PageGetContents(first), entry + room, len);
		gpx_page_set_used(first, len);
		gpx_page_seal(first);
		GpxPageGetOpaque(tailpage)->next = BufferGetBlockNumber(firstbuf);
		meta->pend_tail = nnew == 1 ? BufferGetBlockNumber(firstbuf) : last;
		meta->pend_pages += nnew;
		meta->next_pending_seq = Max(meta->next_pending_seq, tail_seq + nnew + 1);
	}
	gpx_page_seal(tailpage);
	meta->pend_entries++;
	meta->pend_bytes += size;
	pending_bytes = meta->pend_bytes;
	gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
	GenericXLogFinish(state);

	if (BufferIsValid(firstbuf))
		UnlockReleaseBuffer(firstbuf);
	UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
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
	buf = gpx_read_page(r->index, blk, BUFFER_LOCK_SHARE, &tag);
	page = BufferGetPage(buf);
	r->used = gpx_page_used(page);
	memcpy(r->page, PageGetContents(page), r->used);
	r->next = GpxPageGetOpaque(page)->next;
	UnlockReleaseBuffer(buf);
	r->blk = blk;
	r->seq = seq;
	r->pos = 0;
	r->pages_read++;
	return true;
}

void
gpx_pending_begin(GpxPendingReader *r, Relation index, const GpxMetaPageData *meta,
				  BlockNumber stop_blk, uint32 stop_off)
{
	memset(r, 0, sizeof(*r));
	r->index = index;
	r->page = palloc(GPX_PAGE_CAPACITY);
	r->stop_blk = stop_blk;
	r->stop_off = stop_off;
	initStringInfo(&r->assembly);
	r->blk = InvalidBlockNumber;
	if (meta->pend_head == InvalidBlockNumber)
		return;
	load_page(r, meta->pend_head, meta->pend_head_seq);
	if (meta->pend_head_off > r->used)
		gpx_report_corrupt(index, r->blk, "The pending area starts past the page's contents");
	r->pos = meta->pend_head_off;
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
		load_page(r, r->next, r->seq + 1);
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
			load_page(r, r->next, r->seq + 1);
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
	const uint8 *end;
	bool		eof;
	BlockNumber blk;
	OffsetNumber off;
	uint32		nlex;

	if (r->blk == InvalidBlockNumber)
		return false;
	p = read_bytes(r, ENTRY_HEAD, &eof);
	if (eof)
		return false;
	memcpy(&body, p, ENTRY_HEAD);
	if (body < TID_BYTES + 1 || body > MaxAllocSize)
		gpx_report_corrupt(r->index, r->blk, "A pending entry has an impossible length");
	p = read_bytes(r, body, &eof);
	if (eof)
		gpx_report_corrupt(r->index, r->blk, "A pending entry is cut short");
	end = p + body;
	memcpy(&blk, p, sizeof(blk));
	memcpy(&off, p + sizeof(blk), sizeof(off));
	p += TID_BYTES;
	if (blk >= MaxBlockNumber || off == InvalidOffsetNumber || off > MaxOffsetNumber ||
		!gpx_varint_get32(&p, end, &nlex))
		gpx_report_corrupt(r->index, r->blk, "A pending entry holds an impossible TID");
	ItemPointerSet(&r->tid, blk, off);
	r->nlex = nlex;
	r->lex = p;
	r->end = end;
	r->entry_bytes = ENTRY_HEAD + body;

	/* check the lexemes once, so users can walk them unchecked */
	for (uint32 i = 0; i < nlex; i++)
	{
		uint32		len;

		if (!gpx_varint_get32(&p, end, &len) || len == 0 || len > (uint32) (end - p))
			gpx_report_corrupt(r->index, r->blk, "A pending entry's lexemes are malformed");
		p += len;
	}
	if (p != end)
		gpx_report_corrupt(r->index, r->blk, "A pending entry has bytes after its lexemes");
	return true;
}

void
gpx_pending_end(GpxPendingReader *r)
{
	pfree(r->page);
	pfree(r->assembly.data);
}
