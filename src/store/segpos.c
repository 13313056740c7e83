/*
 * segpos.c
 *	  Reading a term's positions record (segments with GPX_SEG_POSITIONS):
 *	  a posting's positions by its rank in the list, or each posting's in
 *	  list order (merges, verification).
 *
 * Two forms.  Segments with GPX_SEG_POSITIONS_V2 hold records of coded
 * blocks of 128 postings (store/posrec.h): a posting is found by decoding
 * its block, which needs the block's tfs, so the reader holds the term's
 * frequencies; the block decoded last is kept, as rank after rank of one
 * block is asked.  An inline list's record is in its dictionary entry.
 * Older segments hold varint records (store/parse.h), read posting by
 * posting from the block's start.  Every read is bounded by the record,
 * each page checked as it is read, and what is decoded is checked.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "rank/bm25.h"
#include "store/posrec.h"
#include "store/segment.h"
#include "store/segread_int.h"
#include "store/varint.h"

#define POS_BUF		8192		/* at least GPX_POS_MAX_RECORD */

struct GpxPositions
{
	GpxSegment *seg;
	uint32		df;
	uint32		page;			/* where the record is, for errors */
	uint32		next_rank;		/* the posting gpx_positions_next reads */
	bool		v2;
	ListBytes	lb;				/* the record in the stream, read through one page */

	/* format 1: varint records */
	uint32		nblocks;
	bool		weighted;		/* its positions carry weights */
	uint32		data_start;		/* the data's offset in the record */
	uint32		data_len;
	uint32		at;				/* offset in the data of posting next_rank */
	uint32		buf_from;		/* data offset of buf[0] */
	uint32		buf_len;
	uint8	   *buf;			/* POS_BUF */

	/* format 2: coded blocks */
	GpxPosRecHead head;
	uint32		len;			/* the record's bytes */
	uint8	   *rec;			/* an entry's record, copied; NULL: in the stream */
	GpxFreqReader *tfs_at;		/* the term's tfs by block (random access), */
	GpxFreqReader *fr;			/* or read along (in list order only), */
	GpxListReader *lr;			/* with its postings */
	uint32		docs[GPUIDX_LRC_SEGMENT + GPX_POSREC_BLOCK];	/* read along, not yet used */
	uint32		ndocs;
	const pl_view *view;		/* random access: the caller's list, the block asked in it */
	uint32		block;			/* the block decoded in blk, or UINT32_MAX */
	GpxPosBlock *blk;
	uint8	   *bytes;			/* a block's bytes read from the stream */
};

/* what decoding a block works in: one for the backend */
static void *posrec_scratch;

static void *
scratch(void)
{
	if (posrec_scratch == NULL)
		posrec_scratch = MemoryContextAlloc(TopMemoryContext, gpx_posrec_scratch_size());
	return posrec_scratch;
}

static void
require_positions(GpxSegment *seg)
{
	if (!(seg->hdr->flags & GPX_SEG_POSITIONS))
		elog(ERROR, "gpuidx: positions asked of a segment without them");
}

static void
positions_corrupt(GpxPositions *p, const char *what)
{
	gpx_seg_corrupt(p->seg, p->rec ? GPX_STREAM_LEAF : GPX_STREAM_POSITIONS, p->rec ? PG_UINT32_MAX : p->page,
					what);
}

/*
 * The varint that begins a record of the POSITIONS stream at (page,
 * offset), into *v (false if it does not parse); p->lb is left on the
 * record's first bytes, *start is its place in the stream, *stream the
 * stream's length and *vlen the varint's bytes.  Both formats' records
 * begin so.
 */
static bool
stream_record_varint(GpxPositions *p, uint32 page, uint32 offset, uint64 *v, uint64 *start,
					 uint64 *stream, uint32 *vlen)
{
	uint8		head[GPX_VARINT_MAX];
	const uint8 *h = head;
	bool		ok;

	*start = (uint64) page * GPX_PAGE_CAPACITY + offset;
	*stream = p->seg->hdr->streams[GPX_STREAM_POSITIONS].bytes;
	if (*start >= *stream)
		gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, page, "positions record is past the stream");
	gpx_list_bytes_init(&p->lb, p->seg, GPX_STREAM_POSITIONS, page, offset,
						(uint32) Min((uint64) GPX_VARINT_MAX, *stream - *start));
	gpx_list_bytes_read(&p->lb, 0, p->lb.len, head);
	ok = gpx_varint_get(&h, head + p->lb.len, v);
	*vlen = (uint32) (h - head);
	return ok;
}

/* ---------------------------------------------------------------------------
 * Format 1: varint records
 */

static void
v1_open(GpxPositions *p, uint32 page, uint32 offset)
{
	uint64		start;
	uint64		stream;
	uint64		v;
	uint32		vlen;
	bool		ok = stream_record_varint(p, page, offset, &v, &start, &stream, &vlen);

	p->nblocks = (p->df + GPX_POS_BLOCK - 1) / GPX_POS_BLOCK;
	if (!ok || (v >> 1) < p->df || (v >> 1) > PG_INT32_MAX)
		gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, page, "positions record's header is malformed");
	p->weighted = (v & 1) != 0;
	p->data_len = (uint32) (v >> 1);
	p->data_start = vlen + (p->nblocks - 1) * sizeof(uint32);
	if (start + p->data_start + p->data_len > stream)
		gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, page, "positions record runs past the stream");
	p->lb.len = p->data_start + p->data_len;
	p->at = 0;
	p->buf_from = 0;
	p->buf_len = 0;
	p->buf = palloc(POS_BUF);
}

/* where block b (b > 0) of the postings starts in the data, as the record's table says */
static uint32
v1_block_start(GpxPositions *p, uint32 b)
{
	return gpx_list_bytes_u32(&p->lb, p->data_start - (p->nblocks - b) * sizeof(uint32));
}

/* the posting at p->at, checked, decoded into wep when it is not NULL; returns its count */
static uint32
v1_load(GpxPositions *p, uint16 *wep)
{
	const uint8 *q;
	uint32		npos;

	if (p->next_rank >= p->df || p->at >= p->data_len)
		gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, p->page, "positions record is shorter than its list");
	if (p->at < p->buf_from ||
		p->at - p->buf_from + Min(GPX_POS_MAX_RECORD, p->data_len - p->at) > p->buf_len)
	{
		p->buf_from = p->at;
		p->buf_len = Min(POS_BUF, p->data_len - p->at);
		gpx_list_bytes_read(&p->lb, p->data_start + p->at, p->buf_len, p->buf);
	}
	q = p->buf + (p->at - p->buf_from);
	if (!gpx_pos_load(&q, p->buf + p->buf_len, p->weighted, wep, &npos))
		gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, p->page, "positions are malformed");
	p->at = p->buf_from + (uint32) (q - p->buf);
	p->next_rank++;
	return npos;
}

static uint32
v1_get(GpxPositions *p, uint32 rank, uint16 *wep)
{
	/* forward within reach: on from here; else from the start of rank's block */
	if (rank < p->next_rank || rank - p->next_rank >= GPX_POS_BLOCK)
	{
		uint32		b = rank / GPX_POS_BLOCK;

		p->at = b == 0 ? 0 : v1_block_start(p, b);
		p->next_rank = b * GPX_POS_BLOCK;
		if (p->at >= p->data_len)
			gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, p->page, "positions block is past the record");
	}
	while (p->next_rank < rank)
		v1_load(p, NULL);
	return v1_load(p, wep);
}

static uint32
v1_next(GpxPositions *p, uint16 *wep)
{
	/* each block starts where its entry says */
	if (p->next_rank > 0 && p->next_rank % GPX_POS_BLOCK == 0 && p->next_rank < p->df &&
		v1_block_start(p, p->next_rank / GPX_POS_BLOCK) != p->at)
		gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, p->page, "positions block starts elsewhere than its entry says");
	return v1_load(p, wep);
}

/* ---------------------------------------------------------------------------
 * Format 2: coded blocks
 */

/* the record's bytes [from, from + n) into dst */
static void
v2_read(GpxPositions *p, uint32 from, uint32 n, void *dst)
{
	if (from > p->len || n > p->len - from)
		positions_corrupt(p, "positions record is shorter than its structure");
	if (p->rec)
		memcpy(dst, p->rec + from, n);
	else
		gpx_list_bytes_read(&p->lb, from, n, dst);
}

static void
v2_head(GpxPositions *p, bool has_flags)
{
	uint8		head[GPX_POSREC_HEAD_MAX];
	uint32		avail = Min(p->len, GPX_POSREC_HEAD_MAX);
	const char *problem;

	v2_read(p, 0, avail, head);
	problem = gpx_posrec_head(head, avail, p->len, p->df, has_flags, &p->head);
	if (problem)
		positions_corrupt(p, problem);
	p->block = PG_UINT32_MAX;
	p->blk = NULL;
	p->bytes = NULL;
}

/* a record in the POSITIONS stream: varint len << 1 | has flags, then its bytes */
static void
v2_open_stream(GpxPositions *p, uint32 page, uint32 offset)
{
	uint64		start;
	uint64		stream;
	uint64		v;
	uint32		vlen;

	if (!stream_record_varint(p, page, offset, &v, &start, &stream, &vlen) || (v >> 1) == 0 ||
		start + vlen + (v >> 1) > stream)
		gpx_seg_corrupt(p->seg, GPX_STREAM_POSITIONS, page, "positions record's length is malformed");
	/* the record's own offsets from its first byte on */
	p->lb.offset += vlen;
	p->lb.page += p->lb.offset / GPX_PAGE_CAPACITY;
	p->lb.offset %= GPX_PAGE_CAPACITY;
	p->len = (uint32) (v >> 1);
	p->lb.len = p->len;
	p->rec = NULL;
	v2_head(p, (v & 1) != 0);
}

/* an entry's record, copied */
static void
v2_open_inline(GpxPositions *p, const uint8 *rec, uint32 len, bool has_flags)
{
	p->rec = palloc(len);
	memcpy(p->rec, rec, len);
	p->len = len;
	v2_head(p, has_flags);
}

/* directory entry i (block i + 1's start in the block area) */
static uint32
v2_dir_entry(GpxPositions *p, uint32 i)
{
	uint64		bit = (uint64) i * p->head.width;
	uint8		b[5] = {0};
	uint32		n = (uint32) (((bit % 8) + p->head.width + 7) / 8);
	uint64		acc = 0;

	v2_read(p, p->head.dir + (uint32) (bit / 8), n, b);
	for (uint32 k = 0; k < n; k++)
		acc |= (uint64) b[k] << (8 * k);
	return (uint32) ((acc >> (bit % 8)) & ((UINT64CONST(1) << p->head.width) - 1));
}

/* a block's postings' docs: from the list read along, or the caller's list */
typedef struct BlockDocs
{
	GpxPositions *p;
	uint32		block;
	uint32		n;
	uint32		docs[GPX_POSREC_BLOCK];
} BlockDocs;

static void
block_docs(BlockDocs *bd)
{
	GpxPositions *p = bd->p;

	if (p->lr)
	{
		while (p->ndocs < bd->n)
		{
			uint32		got = gpx_list_reader_next(p->lr, p->docs + p->ndocs);

			if (got == 0)
				positions_corrupt(p, "positions record is longer than its list");
			p->ndocs += got;
		}
		memcpy(bd->docs, p->docs, bd->n * sizeof(uint32));
		memmove(p->docs, p->docs + bd->n, (p->ndocs - bd->n) * sizeof(uint32));
		p->ndocs -= bd->n;
	}
	else
	{
		/* the list's block that holds them (128 postings, or 256 for LRC) */
		uint32		cap = pl_block_capacity(p->view);
		uint32		first = bd->block * GPX_POSREC_BLOCK;
		uint32		buf[GPUIDX_LRC_SEGMENT];
		int			got = pl_decode_block(p->view, first / cap, buf);

		if (got < 0 || first % cap + bd->n > (uint32) got)
			gpx_seg_corrupt(p->seg, GPX_STREAM_LISTS, PG_UINT32_MAX, "list does not decode");
		memcpy(bd->docs, buf + first % cap, bd->n * sizeof(uint32));
	}
}

/* the block's postings' doc length codes, for the decoder */
static void
block_dlc(void *arg, uint8_t *dlc)
{
	BlockDocs  *bd = arg;

	if (bd->p->lr == NULL)
		block_docs(bd);
	gpx_seg_dl_codes(bd->p->seg, bd->docs, bd->n, dlc);
}

/* block b decoded into p->blk (kept: the block asked last) */
static void
v2_load_block(GpxPositions *p, uint32 b)
{
	uint32		n = Min(GPX_POSREC_BLOCK, p->df - b * GPX_POSREC_BLOCK);
	BlockDocs	bd;
	uint32		from = b == 0 ? 0 : v2_dir_entry(p, b - 1);
	uint32		to = b + 1 < p->head.nblocks ? v2_dir_entry(p, b) : p->len - p->head.blocks;
	uint8		tfs[GPX_POSREC_BLOCK];
	const char *problem;

	if (from >= to || to > p->len - p->head.blocks)
		positions_corrupt(p, "positions record's directory is out of order");
	bd.p = p;
	bd.block = b;
	bd.n = n;
	if (p->fr)
	{
		if (b * GPX_POSREC_BLOCK != p->next_rank)
			elog(ERROR, "gpuidx: positions read along asked out of order");
		gpx_freq_reader_next(p->fr, tfs, n);
		/* the list read along with them, whether the block needs its docs or not */
		block_docs(&bd);
	}
	else
		gpx_freq_reader_block(p->tfs_at, b, tfs);
	if (p->blk == NULL)
	{
		p->blk = palloc(sizeof(GpxPosBlock));
		p->bytes = p->rec ? NULL : palloc(GPX_POSREC_BLOCK_MAX);
	}
	if (to - from > GPX_POSREC_BLOCK_MAX)
		positions_corrupt(p, "positions block is longer than a block can be");
	if (!p->rec)
		v2_read(p, p->head.blocks + from, to - from, p->bytes);
	problem = gpx_posrec_decode_block(p->rec ? p->rec + p->head.blocks + from : p->bytes, to - from,
									  p->head.flags, n, tfs, block_dlc, &bd, p->blk, scratch());
	if (problem)
		positions_corrupt(p, problem);
	p->block = b;
}

static uint32
v2_get(GpxPositions *p, uint32 rank, uint16 *wep)
{
	uint32		b = rank / GPX_POSREC_BLOCK;
	uint32		i = rank % GPX_POSREC_BLOCK;
	uint32		npos;

	if (b != p->block)
		v2_load_block(p, b);
	npos = p->blk->npos[i];
	if (wep)
		memcpy(wep, p->blk->wep + p->blk->start[i], npos * sizeof(uint16));
	p->next_rank = rank + 1;
	return npos;
}

/* ---------------------------------------------------------------------------
 * Either form
 */

static GpxPositions *
positions_new(GpxSegment *seg, uint32 df, uint32 page)
{
	GpxPositions *p = palloc0(sizeof(GpxPositions));

	require_positions(seg);
	p->seg = seg;
	p->df = df;
	p->page = page;
	p->v2 = (seg->hdr->flags & GPX_SEG_POSITIONS_V2) != 0;
	p->block = PG_UINT32_MAX;
	return p;
}

GpxPositions *
gpx_seg_positions(GpxSegment *seg, GpxTermRef *ref)
{
	GpxPositions *p = positions_new(seg, ref->df, ref->pos_page);

	if (!p->v2)
	{
		v1_open(p, ref->pos_page, ref->pos_offset);
		return p;
	}
	/* the tfs first: an inline ref's are in its payload, which opening its list frees */
	p->tfs_at = gpx_seg_freq_reader(seg, ref);
	if (ref->pos_len > 0)
		v2_open_inline(p, ref->payload + gpx_term_payload_len(seg, ref) - ref->pos_len, ref->pos_len,
					   ref->pos_flags);
	else
		v2_open_stream(p, ref->pos_page, ref->pos_offset);
	return p;
}

/* the iterator's term's positions: its tfs in full (random access), or read along */
static GpxPositions *
iter_positions(GpxDictIter *it, bool along)
{
	GpxPositions *p = positions_new(it->seg, it->df, it->pos_page);

	if (!p->v2)
	{
		v1_open(p, it->pos_page, it->pos_off);
		return p;
	}
	if (along)
	{
		p->fr = gpx_freq_reader_begin(it);
		p->lr = gpx_list_reader_begin(it);
	}
	else
		p->tfs_at = gpx_freq_reader_begin(it);
	if (it->pos_record)
		v2_open_inline(p, it->pos_record, it->pos_len, it->pos_flags);
	else
		v2_open_stream(p, it->pos_page, it->pos_off);
	return p;
}

GpxPositions *
gpx_dict_iter_positions(GpxDictIter *it)
{
	return iter_positions(it, true);
}

GpxPositions *
gpx_dict_iter_positions_at(GpxDictIter *it)
{
	return iter_positions(it, false);
}

uint32
gpx_positions_get(GpxPositions *p, uint32 rank, const pl_view *list, uint16 *wep)
{
	if (rank >= p->df)
		elog(ERROR, "gpuidx: positions asked past a list's end");
	if (!p->v2)
		return v1_get(p, rank, wep);
	if (p->fr)
		elog(ERROR, "gpuidx: positions read along asked by rank");
	p->view = list;
	return v2_get(p, rank, wep);
}

uint32
gpx_positions_next(GpxPositions *p, uint16 *wep)
{
	if (!p->v2)
		return v1_next(p, wep);
	if (p->next_rank >= p->df)
		positions_corrupt(p, "positions record is shorter than its list");
	return v2_get(p, p->next_rank, wep);
}

void
gpx_positions_check_end(GpxPositions *p)
{
	/* format 2: each block's bytes are exactly its positions' (posrec.c checks) */
	if (p->next_rank != p->df || (!p->v2 && p->at != p->data_len))
		positions_corrupt(p, "positions record's length does not match its postings");
}

void
gpx_positions_free(GpxPositions *p)
{
	if (p->lb.data)
		pfree(p->lb.data);
	if (p->buf)
		pfree(p->buf);
	if (p->rec)
		pfree(p->rec);
	if (p->blk)
		pfree(p->blk);
	if (p->bytes)
		pfree(p->bytes);
	if (p->fr)
		gpx_freq_reader_end(p->fr);
	if (p->lr)
		gpx_list_reader_end(p->lr);
	if (p->tfs_at)
		gpx_freq_reader_end(p->tfs_at);
	pfree(p);
}
