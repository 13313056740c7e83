/*
 * segwrite.c
 *	  Writing a segment: documents (the doc map), then terms in order with
 *	  their postings, then the dictionary's inner nodes, the dead-doc bitmap,
 *	  the page table and the header.
 *
 * Each stream fills a page image at a time and writes it out when full, to a
 * page taken from the free space map or past the end of the index.  A build
 * writes without WAL (the whole index is WAL-logged at its end); merges
 * write every page as a full-page generic WAL record.  Nothing references
 * the segment until its caller puts it in the metapage, so a crash halfway
 * leaves only unreferenced pages, which VACUUM reclaims.
 *
 * A term's list goes inline in its dictionary entry (delta varints, runs of
 * consecutive docs as their length) when that is no larger than the encoded
 * list and it has at most GPX_INLINE_MAX docs; otherwise it is encoded
 * (docs/FORMAT.md) into the LISTS stream.  Long lists are encoded a block at
 * a time as their postings come, in memory of the same size whatever their
 * length (past 16 kB, through temporary files).
 *
 * With freqs (format version 3), each doc's length goes to the LENS stream
 * in chunks of 128 docs, an inline list's tfs follow its postings in the
 * dictionary entry (packed, and none when all are 1), and an external
 * list's tfs go to the FREQS stream as a record of their own
 * (store/parse.h), so that @@& never reads them.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/buffile.h"

#include "rank/bm25.h"
#include "store/posrec.h"
#include "store/segment.h"
#include "store/varint.h"

/* lists with more postings than this (as announced) are encoded as they come */
#define GPX_STREAM_MIN_POSTINGS	16384
/* the largest inline list, in bytes and in docs (store/parse.h) */
#define GPX_INLINE_MAX			GPX_INLINE_MAX_DOCS
/* what an external reference costs in a dictionary entry, about */
#define GPX_EXTERNAL_COST		6

/* the bits gpx_pack_bits needs for values up to v */
static inline uint32
bits_for(uint32 v)
{
	return v == 0 ? 0 : pg_leftmost_one_pos32(v) + 1;
}

typedef struct GpxStreamW
{
	PGAlignedBlock page;
	uint32		used;
	uint32		npages;
	uint32		cap;
	BlockNumber *blocks;
	uint64		bytes;
} GpxStreamW;

/*
 * Bytes appended in order, kept in memory up to SPILL_MEM and past that in
 * a temporary file: what a long list writes before its header can be.
 */
#define SPILL_MEM	(16 * 1024)

typedef struct SpillBuf
{
	char	   *mem;
	Size		len;
	BufFile    *file;
	uint64		total;
} SpillBuf;

/*
 * A long list encoded as it comes, in any codec: EF block by block, LRC
 * segment by segment, raw values as they are.  Skip entries (EF: first
 * postings and bit offsets; LRC: segment records) and data bits go to spill
 * buffers; the bits of the block being encoded sit in a zeroed window of
 * whole words, and the words before it are appended as they complete.
 * Memory stays the same whatever the list's length.
 */
#define WINDOW_WORDS	256		/* 16,384 bits: twice an LRC segment at 32 bits a posting */

typedef struct GpxListStream
{
	int			codec;
	uint32		blk[GPUIDX_LRC_SEGMENT];	/* the block being filled */
	uint32		nblk;
	uint32		count;
	uint32		last;
	uint32		nb;				/* blocks (segments) encoded */
	uint64		bits;			/* data bits encoded */
	uint64		flushed;		/* words appended to data */
	uint64		window[WINDOW_WORDS + 1];
	SpillBuf	skip1;			/* EF: first postings; LRC: segment records; raw: values */
	SpillBuf	skip2;			/* EF: bit offsets */
	SpillBuf	data;
} GpxListStream;

/*
 * A list's frequency record (store/parse.h), built 128 postings at a time
 * as they come: block entries and packed tfs go to spill buffers.
 */
typedef struct GpxFreqStream
{
	uint32		docs[GPX_RANK_BLOCK];	/* the block being filled */
	uint8		tfs[GPX_RANK_BLOCK];
	uint32		n;
	uint32		count;
	uint32		nb;
	uint8		max_tf;
	uint8		min_dlcode;
	SpillBuf	blocks;
	SpillBuf	data;
} GpxFreqStream;

/*
 * A term's positions (store/posrec.h), kept as its postings come in a
 * spill buffer and coded when the term ends, a block of 128 at a time.
 */
typedef struct GpxPosStream
{
	uint32		count;
	uint32		flags;			/* GPX_POSREC_*: what its postings need */
	SpillBuf	data;			/* the postings' records as handed over */
	SpillBuf	dlc;			/* and their docs' length codes, a byte each */
	GpxPosBlock *block;			/* a block being coded */
	uint8	   *coded;			/* and its bytes (GPX_POSREC_BLOCK_MAX) */
	void	   *scratch;
	uint32	   *sizes;			/* each block's bytes */
	uint32		sizes_cap;
} GpxPosStream;

/*
 * An inline list's positions record goes in its dictionary entry up to
 * this many bytes (most are a few), else in the POSITIONS stream
 */
#define GPX_POS_INLINE_MAX	1024

static void spill_reset(SpillBuf *sb);
static void freq_reset(GpxFreqStream *fs);
static void freq_add(GpxSegWriter *w, GpxFreqStream *fs, const uint32 *ids, const uint8 *tfs, uint32 n);

struct GpxSegWriter
{
	MemoryContext cxt;			/* where its own allocations live */
	Relation	index;
	uint32		segid;
	bool		use_wal;
	bool		use_fsm;		/* pages from the free space map, else past the end */
	int			codec;
	bool		freqs;			/* store tfs and doc lengths */
	bool		positions;		/* and each posting's positions */
	GpxStreamW	streams[GPX_NSTREAMS];

	/* doc map */
	uint32		ndocs;
	uint32		nchunks;
	uint32		nchunk;
	ItemPointerData chunk[GPX_DOCMAP_CHUNK];
	uint32		chunk_dl[GPX_DOCMAP_CHUNK];
	ItemPointerData last_tid;	/* of the last doc added */
	bool		tid_order;		/* every doc's TID above the one before */

	/* doc lengths: their sum, and each doc's gpx_dl_code for block maxima */
	uint64		sum_dl;
	uint8	   *dlcodes;
	Size		dlcap;

	/* the leaf being filled */
	uint8		leaf[GPX_PAGE_CAPACITY];
	uint32		leaf_len;
	uint16		restarts[GPX_PAGE_CAPACITY / 8];
	uint32		nrestarts;
	uint32		leaf_entries;
	uint32		leaf_first_term;
	char		leaf_first[GPX_MAX_TERM_LEN];
	int			leaf_first_len;
	StringInfoData seps;		/* first term and page of each leaf */
	uint32		nseps;

	/* the term being written */
	char		term[GPX_MAX_TERM_LEN];
	int			term_len;
	char		prev[GPX_MAX_TERM_LEN];
	int			prev_len;
	bool		have_prev;
	bool		streaming;
	int64		last_id;		/* the term's last doc id so far; -1 before the first */
	uint32	   *ids;
	uint8	   *tfs;			/* with freqs: each id's tf */
	uint32		nids;
	uint32		idcap;
	GpxListStream ls;
	GpxFreqStream fs;
	GpxPosStream ps;

	/* what the header reports */
	uint32		nterms;
	uint64		npostings;
	uint32		ninline;
	uint64		inline_bytes;
	uint32		nlists[GPUIDX_NUM_CODECS];
};

static void
stream_reset_page(GpxSegWriter *w, int id)
{
	GpxStreamW *s = &w->streams[id];
	GpxPageOpaque opaque;

	gpx_page_init(s->page.data, GPX_PAGE_DATA);
	opaque = GpxPageGetOpaque(s->page.data);
	opaque->stream = id;
	opaque->owner = w->segid;
	opaque->pageno = s->npages;
	s->used = 0;
}

static void
remember_block(GpxSegWriter *w, BlockNumber **blocks, uint32 *n, uint32 *cap, BlockNumber blkno)
{
	if (*n == *cap)
	{
		*cap = *cap ? *cap * 2 : 16;
		*blocks = *blocks ? repalloc_huge(*blocks, *cap * sizeof(BlockNumber))
			: MemoryContextAlloc(w->cxt, *cap * sizeof(BlockNumber));
	}
	(*blocks)[(*n)++] = blkno;
}

/* write a finished page image to a new block; returns the block */
static BlockNumber
write_new_page(GpxSegWriter *w, Page image)
{
	Buffer		buf = gpx_new_buffer(w->index, w->use_fsm);
	BlockNumber blkno = BufferGetBlockNumber(buf);

	gpx_page_seal(image);
	gpx_put_page(w->index, buf, image, w->use_wal);
	return blkno;
}

static void
stream_flush(GpxSegWriter *w, int id)
{
	GpxStreamW *s = &w->streams[id];

	CHECK_FOR_INTERRUPTS();
	if (s->npages >= MaxBlockNumber / 2)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuidx segment is too large")));
	gpx_page_set_used(s->page.data, s->used);
	remember_block(w, &s->blocks, &s->npages, &s->cap, write_new_page(w, s->page.data));
	stream_reset_page(w, id);
}

static inline char *
stream_tail(GpxStreamW *s)
{
	return PageGetContents(s->page.data) + s->used;
}

/* append bytes that may run over into the following pages */
static void
stream_write(GpxSegWriter *w, int id, const void *data, Size len)
{
	GpxStreamW *s = &w->streams[id];
	const char *p = data;

	s->bytes += len;
	while (len > 0)
	{
		Size		room = GPX_PAGE_CAPACITY - s->used;
		Size		n = Min(room, len);

		memcpy(stream_tail(s), p, n);
		s->used += n;
		p += n;
		len -= n;
		if (s->used == GPX_PAGE_CAPACITY)
			stream_flush(w, id);
	}
}

/* start a new page unless len more bytes fit on this one */
static void
stream_reserve(GpxSegWriter *w, int id, Size len)
{
	if (w->streams[id].used + len > GPX_PAGE_CAPACITY)
		stream_flush(w, id);
}

void
gpx_segw_past_end(GpxSegWriter *w)
{
	w->use_fsm = false;
}

GpxSegWriter *
gpx_segw_begin(Relation index, uint32 segid, bool use_wal, int codec, bool freqs, bool positions)
{
	GpxSegWriter *w = palloc0(sizeof(GpxSegWriter));

	if (positions && !freqs)
		elog(ERROR, "gpuidx: positions are stored only with freqs");
	w->cxt = CurrentMemoryContext;
	w->index = index;
	w->segid = segid;
	w->use_wal = use_wal;
	w->use_fsm = use_wal;
	w->codec = codec;
	w->freqs = freqs;
	w->positions = positions;
	if (positions)
	{
		w->ps.block = palloc(sizeof(GpxPosBlock));
		w->ps.coded = palloc(GPX_POSREC_BLOCK_MAX);
		w->ps.scratch = palloc(gpx_posrec_scratch_size());
	}
	w->tid_order = true;
	for (int i = 0; i < GPX_NSTREAMS; i++)
		stream_reset_page(w, i);
	initStringInfo(&w->seps);
	return w;
}

Size
gpx_segw_memory(GpxSegWriter *w)
{
	Size		size = sizeof(GpxSegWriter) + w->seps.maxlen + w->dlcap;

	if (w->positions)
		size += sizeof(GpxPosBlock) + GPX_POSREC_BLOCK_MAX + gpx_posrec_scratch_size() +
			(Size) w->ps.sizes_cap * sizeof(uint32);

	for (int i = 0; i < GPX_NSTREAMS; i++)
		size += w->streams[i].cap * sizeof(BlockNumber);
	return size;
}

uint32
gpx_segw_ndocs(GpxSegWriter *w)
{
	return w->ndocs;
}

/* ---------------------------------------------------------------------------
 * Doc map and doc lengths
 */

/*
 * A chunk of 128 docs into a chunked stream (never across pages), its
 * place, (page << 13) | offset, into the stream's directory
 */
static void
write_chunk(GpxSegWriter *w, int data_stream, int dir_stream, const uint8 *buf, uint32 len,
			const char *what)
{
	GpxStreamW *data = &w->streams[data_stream];
	uint32		dir;

	stream_reserve(w, data_stream, len);
	if (data->npages >= (1u << (32 - GPX_DOCDIR_SHIFT)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuidx segment %s is too large", what)));
	dir = (data->npages << GPX_DOCDIR_SHIFT) | data->used;
	stream_write(w, data_stream, buf, len);
	stream_write(w, dir_stream, &dir, sizeof(dir));
}

/* the chunk's lengths into LENS, its place into LENDIR */
static void
flush_lengths(GpxSegWriter *w)
{
	uint8		buf[1 + GPX_VARINT_MAX + GPX_DOCMAP_CHUNK * 4 + 8];
	uint32		rel[GPX_DOCMAP_CHUNK];
	uint32		mindl = PG_UINT32_MAX;
	uint32		maxdl = 0;
	uint32		width;
	uint32		len;

	for (uint32 i = 0; i < w->nchunk; i++)
	{
		mindl = Min(mindl, w->chunk_dl[i]);
		maxdl = Max(maxdl, w->chunk_dl[i]);
	}
	for (uint32 i = 0; i < w->nchunk; i++)
		rel[i] = w->chunk_dl[i] - mindl;
	width = bits_for(maxdl - mindl);
	buf[0] = (uint8) width;
	len = 1 + gpx_varint_put(buf + 1, mindl);
	len += gpx_pack_bits(buf + len, rel, w->nchunk, width);
	write_chunk(w, GPX_STREAM_LENS, GPX_STREAM_LENDIR, buf, len, "doc lengths");
}

static void
flush_chunk(GpxSegWriter *w)
{
	uint8		buf[GPX_DOCMAP_CHUNK * (GPX_VARINT_MAX + 6)];
	uint32		len = 0;
	BlockNumber prev = 0;

	for (uint32 i = 0; i < w->nchunk;)
	{
		BlockNumber blk = ItemPointerGetBlockNumberNoCheck(&w->chunk[i]);
		OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(&w->chunk[i]);
		uint32		run = 1;

		while (i + run < w->nchunk &&
			   ItemPointerGetBlockNumberNoCheck(&w->chunk[i + run]) == blk &&
			   ItemPointerGetOffsetNumberNoCheck(&w->chunk[i + run]) == off + run)
			run++;
		len += gpx_varint_put(buf + len, gpx_zigzag((int64) blk - (int64) prev));
		len += gpx_varint_put(buf + len, off);
		len += gpx_varint_put(buf + len, run - 1);
		prev = blk;
		i += run;
	}
	write_chunk(w, GPX_STREAM_DOCMAP, GPX_STREAM_DOCDIR, buf, len, "doc map");
	if (w->freqs)
		flush_lengths(w);
	w->nchunks++;
	w->nchunk = 0;
}

void
gpx_segw_add_doc(GpxSegWriter *w, ItemPointer tid, uint32 dl)
{
	if (w->ndocs == PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a gpuidx segment holds at most %u documents", PG_UINT32_MAX - 1)));
	if (w->freqs)
	{
		if (w->ndocs >= w->dlcap)
		{
			w->dlcap = Max(w->dlcap * 2, 4096);
			w->dlcodes = w->dlcodes ? repalloc_huge(w->dlcodes, w->dlcap)
				: MemoryContextAllocHuge(w->cxt, w->dlcap);
		}
		w->dlcodes[w->ndocs] = (uint8) gpx_dl_code(dl);
		w->chunk_dl[w->nchunk] = dl;
		w->sum_dl += dl;
	}
	if (w->ndocs > 0 && ItemPointerCompare(tid, &w->last_tid) <= 0)
		w->tid_order = false;
	w->last_tid = *tid;
	w->chunk[w->nchunk++] = *tid;
	w->ndocs++;
	if (w->nchunk == GPX_DOCMAP_CHUNK)
		flush_chunk(w);
}

/* ---------------------------------------------------------------------------
 * Dictionary leaves
 */
static void
flush_leaf(GpxSegWriter *w)
{
	GpxStreamW *s = &w->streams[GPX_STREAM_LEAF];
	GpxLeafHeader hdr;
	char	   *p;
	uint8		vbuf[GPX_VARINT_MAX];

	if (w->leaf_entries == 0)
		return;
	Assert(s->used == 0);
	hdr.nentries = w->leaf_entries;
	hdr.nrestarts = w->nrestarts;
	hdr.first_term = w->leaf_first_term;
	p = stream_tail(s);
	memcpy(p, &hdr, sizeof(hdr));
	memcpy(p + sizeof(hdr), w->restarts, w->nrestarts * sizeof(uint16));
	memcpy(p + sizeof(hdr) + w->nrestarts * sizeof(uint16), w->leaf, w->leaf_len);
	s->used = sizeof(hdr) + w->nrestarts * sizeof(uint16) + w->leaf_len;
	s->bytes += s->used;

	/* the separator that leads to this leaf */
	appendBinaryStringInfo(&w->seps, (char *) vbuf, gpx_varint_put(vbuf, w->leaf_first_len));
	appendBinaryStringInfo(&w->seps, w->leaf_first, w->leaf_first_len);
	appendBinaryStringInfo(&w->seps, (char *) vbuf, gpx_varint_put(vbuf, s->npages));
	w->nseps++;

	stream_flush(w, GPX_STREAM_LEAF);
	w->leaf_first_term += w->leaf_entries;
	w->leaf_entries = 0;
	w->nrestarts = 0;
	w->leaf_len = 0;
}

static int
common_prefix(const char *a, int alen, const char *b, int blen)
{
	int			n = Min(alen, blen);
	int			i = 0;

	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/*
 * encode the current term's entry (store/parse.h, the packed form); payload
 * is what follows df and kind: the inline list (and its tfs), or the
 * external list's length and reference
 */
static uint32
encode_entry(GpxSegWriter *w, uint8 *out, int shared, uint32 df, uint32 kind,
			 const uint8 *payload, uint32 payload_len)
{
	uint32		suffix = w->term_len - shared;
	uint32		n = 0;

	if (shared < 15 && suffix < 16)
		out[n++] = (uint8) (shared << 4 | suffix);
	else
	{
		out[n++] = GPX_ENTRY_LENS_ESCAPE;
		n += gpx_varint_put(out + n, shared);
		n += gpx_varint_put(out + n, suffix);
	}
	memcpy(out + n, w->term + shared, suffix);
	n += suffix;
	n += gpx_varint_put(out + n, (uint64) df << GPX_ENTRY_KIND_BITS | kind);
	memcpy(out + n, payload, payload_len);
	return n + payload_len;
}

static uint32 pos_finish(GpxSegWriter *w, uint32 df, bool may_inline, uint8 *out);

static void
add_entry(GpxSegWriter *w, uint32 df, uint32 kind, const uint8 *payload, uint32 payload_len)
{
	uint8		entry[GPX_MAX_TERM_LEN + 2 * GPX_INLINE_MAX + GPX_POS_INLINE_MAX + 10 * GPX_VARINT_MAX];
	uint8		with_pos[2 * GPX_INLINE_MAX + GPX_POS_INLINE_MAX + 10 * GPX_VARINT_MAX];
	bool		restart = w->leaf_entries % GPX_RESTART_INTERVAL == 0;
	int			shared = restart ? 0 : common_prefix(w->prev, w->prev_len, w->term, w->term_len);
	uint32		len;

	if (w->positions)
	{
		/* the entry ends with its positions record, or where it is */
		memcpy(with_pos, payload, payload_len);
		payload_len += pos_finish(w, df, kind != GPX_ENTRY_EXTERNAL, with_pos + payload_len);
		payload = with_pos;
	}
	len = encode_entry(w, entry, shared, df, kind, payload, payload_len);

	if (sizeof(GpxLeafHeader) + (w->nrestarts + (restart ? 1 : 0)) * sizeof(uint16) +
		w->leaf_len + len > GPX_PAGE_CAPACITY)
	{
		flush_leaf(w);
		restart = true;
		len = encode_entry(w, entry, 0, df, kind, payload, payload_len);
	}
	if (w->leaf_entries == 0)
	{
		memcpy(w->leaf_first, w->term, w->term_len);
		w->leaf_first_len = w->term_len;
	}
	if (restart)
		w->restarts[w->nrestarts++] = w->leaf_len;
	memcpy(w->leaf + w->leaf_len, entry, len);
	w->leaf_len += len;
	w->leaf_entries++;
}

/* ---------------------------------------------------------------------------
 * Terms and their lists
 */
void
gpx_segw_term_begin(GpxSegWriter *w, const char *term, int len, uint64 df_hint)
{
	if (len <= 0 || len > GPX_MAX_TERM_LEN)
		elog(ERROR, "gpuidx: term of %d bytes cannot be indexed", len);
	memcpy(w->term, term, len);
	w->term_len = len;
	if (w->have_prev)
	{
		int			c = memcmp(w->prev, term, Min(w->prev_len, len));

		if (c > 0 || (c == 0 && w->prev_len >= len))
			elog(ERROR, "gpuidx: terms out of order while writing a segment");
	}
	w->nids = 0;
	w->last_id = -1;
	if (w->freqs)
		freq_reset(&w->fs);
	if (w->positions)
	{
		spill_reset(&w->ps.data);
		spill_reset(&w->ps.dlc);
		w->ps.count = 0;
		w->ps.flags = 0;
	}
	/* long lists are encoded as they come: EF unless a codec is asked for */
	w->streaming = df_hint > GPX_STREAM_MIN_POSTINGS;
	if (w->streaming)
	{
		GpxListStream *ls = &w->ls;

		ls->codec = w->codec >= 0 ? w->codec : GPUIDX_CODEC_EF;
		ls->nblk = 0;
		ls->count = 0;
		ls->nb = 0;
		ls->bits = 0;
		ls->flushed = 0;
		memset(ls->window, 0, sizeof(ls->window));
		spill_reset(&ls->skip1);
		spill_reset(&ls->skip2);
		spill_reset(&ls->data);
	}
}

/* ---------------------------------------------------------------------------
 * Long lists, encoded as they come
 */
static void
spill_reset(SpillBuf *sb)
{
	if (sb->file)
		BufFileClose(sb->file);
	sb->file = NULL;
	sb->len = 0;
	sb->total = 0;
}

static void
spill_append(SpillBuf *sb, MemoryContext cxt, const void *data, Size n)
{
	if (sb->file == NULL && sb->len + n > SPILL_MEM)
	{
		sb->file = BufFileCreateTemp(false);
		BufFileWrite(sb->file, sb->mem, sb->len);
		sb->len = 0;
	}
	if (sb->file)
		BufFileWrite(sb->file, unconstify(void *, data), n);
	else
	{
		if (sb->mem == NULL)
			sb->mem = MemoryContextAlloc(cxt, SPILL_MEM);
		memcpy(sb->mem + sb->len, data, n);
		sb->len += n;
	}
	sb->total += n;
}

/* the bytes of a buffer that never spilled, copied out */
static void
spill_copy_out(SpillBuf *sb, uint8 *out)
{
	Assert(sb->file == NULL && sb->len == sb->total);
	if (sb->len > 0)
		memcpy(out, sb->mem, sb->len);
}

/* read every byte back, in order: into the CRC, or into a stream (copy >= 0) */
static uint32
spill_drain(SpillBuf *sb, GpxSegWriter *w, uint32 crc, int copy)
{
	char		buf[BLCKSZ];

	if (sb->file == NULL)
	{
		if (copy >= 0)
			stream_write(w, copy, sb->mem, sb->len);
		return pl_crc32c(crc, sb->mem, sb->len);
	}
	if (BufFileSeek(sb->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a temporary file of a gpuidx posting list: %m")));
	for (uint64 done = 0; done < sb->total;)
	{
		Size		n = Min((uint64) sizeof(buf), sb->total - done);

		if (BufFileRead(sb->file, buf, n) != n)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read a temporary file of a gpuidx posting list: %m")));
		if (copy >= 0)
			stream_write(w, copy, buf, n);
		crc = pl_crc32c(crc, buf, n);
		done += n;
	}
	return crc;
}

/* append the window's complete words to data; keep the partial one */
static void
window_flush(GpxSegWriter *w, GpxListStream *ls, bool all)
{
	uint64		words = (ls->bits - ls->flushed * 64) / 64 + (all && ls->bits % 64 ? 1 : 0);

	if (words == 0)
		return;
	spill_append(&ls->data, w->cxt, ls->window, words * 8);
	ls->flushed += words;
	memmove(ls->window, ls->window + words, (WINDOW_WORDS + 1 - words) * 8);
	memset(ls->window + WINDOW_WORDS + 1 - words, 0, words * 8);
}

/* the buffered block into the stream; universe as the format defines it */
static void
stream_block(GpxSegWriter *w, GpxListStream *ls, uint64 universe)
{
	uint8	   *window = (uint8 *) ls->window;
	uint64		pos = ls->bits - ls->flushed * 64;

	if (ls->codec == GPUIDX_CODEC_EF)
	{
		uint32		bitoff = (uint32) ls->bits;

		spill_append(&ls->skip1, w->cxt, &ls->blk[0], sizeof(uint32));
		spill_append(&ls->skip2, w->cxt, &bitoff, sizeof(uint32));
		ls->bits += ef_encode_block(ls->blk, ls->nblk, universe, window, pos);
	}
	else if (ls->codec == GPUIDX_CODEC_LRC)
	{
		gpuidx_lrc_segment seg;

		ls->bits += lrc_encode_segment(ls->blk, ls->nblk, &seg, window, pos);
		seg.bitoff = (uint32) (ls->bits - (uint64) ls->nblk * seg.width);
		spill_append(&ls->skip1, w->cxt, &seg, sizeof(seg));
	}
	else
		spill_append(&ls->skip1, w->cxt, ls->blk, ls->nblk * sizeof(uint32));
	if (ls->bits > UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a gpuidx posting list would exceed 4 GB")));
	window_flush(w, ls, false);
	ls->nb++;
	ls->nblk = 0;
}

/* the postings' positions records into the term's: each checked against its tf */
static void
pos_add(GpxSegWriter *w, const uint32 *ids, const uint8 *pos, Size poslen, const uint8 *tfs, uint32 n)
{
	GpxPosStream *ps = &w->ps;
	const uint8 *p = pos;
	const uint8 *end = pos + poslen;

	for (uint32 i = 0; i < n; i++)
	{
		uint8		dlc = w->dlcodes[ids[i]];

		const uint8 *start = p;
		uint16		wep[GPX_POS_MAX_COUNT];
		uint32		npos;

		if (!gpx_pos_decode(&p, end, wep, &npos) || gpx_pos_tf(npos) != tfs[i])
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuidx: positions of term \"%.*s\" do not match its frequencies",
							w->term_len, w->term)));
		/* what the record's blocks need besides positions of weight D, tf of them */
		if (npos == 0)
			ps->flags |= GPX_POSREC_NONE;
		if (npos > 255)
			ps->flags |= GPX_POSREC_256;
		for (uint32 k = 0; k < npos && !(ps->flags & GPX_POSREC_WEIGHTS); k++)
			if (wep[k] >> 14)
				ps->flags |= GPX_POSREC_WEIGHTS;
		spill_append(&ps->data, w->cxt, start, p - start);
		spill_append(&ps->dlc, w->cxt, &dlc, 1);
		ps->count++;
	}
	if (p != end)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuidx: positions of term \"%.*s\" outnumber its postings",
						w->term_len, w->term)));
}

/* bytes of a spill buffer read back in order, a window at a time */
typedef struct SpillReader
{
	SpillBuf   *sb;
	uint64		done;			/* bytes taken into buf so far */
	uint8	   *buf;
	uint32		len;
	uint32		pos;
} SpillReader;

#define SPILL_READ	(64 * 1024)

static void
spill_read_begin(SpillReader *r, SpillBuf *sb, MemoryContext cxt)
{
	r->sb = sb;
	r->done = 0;
	r->len = r->pos = 0;
	r->buf = NULL;
	if (sb->file == NULL)
	{
		r->buf = (uint8 *) sb->mem;
		r->len = (uint32) sb->len;
		r->done = sb->len;
		return;
	}
	r->buf = MemoryContextAlloc(cxt, SPILL_READ);
	if (BufFileSeek(sb->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a temporary file of gpuidx positions: %m")));
}

/* at least want bytes at the reader's place (fewer only at the end) */
static const uint8 *
spill_read_peek(SpillReader *r, uint32 want, uint32 *avail)
{
	if (r->len - r->pos < want && r->done < r->sb->total)
	{
		uint32		keep = r->len - r->pos;
		Size		n = Min((uint64) (SPILL_READ - keep), r->sb->total - r->done);

		memmove(r->buf, r->buf + r->pos, keep);
		if (BufFileRead(r->sb->file, r->buf + keep, n) != n)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read a temporary file of gpuidx positions: %m")));
		r->done += n;
		r->len = keep + (uint32) n;
		r->pos = 0;
	}
	*avail = r->len - r->pos;
	return r->buf + r->pos;
}

/*
 * The term's positions record (store/posrec.h): the handed-over records
 * read back a block of 128 postings at a time, each block coded.  When the
 * list is inline (may_inline) and the record short, the record itself goes
 * to out, for the dictionary entry (varint h, even: its length << 2 | has
 * flags << 1, then its bytes); else it goes to the POSITIONS stream and out
 * gets where (inline: varint page << 1 | 1, varint offset; external:
 * varint page, varint offset).  Returns the bytes written to out.
 */
static uint32
pos_finish(GpxSegWriter *w, uint32 df, bool may_inline, uint8 *out)
{
	GpxPosStream *ps = &w->ps;
	GpxStreamW *s = &w->streams[GPX_STREAM_POSITIONS];
	GpxPosBlock *blk = ps->block;
	uint32		nb = (df + GPX_POSREC_BLOCK - 1) / GPX_POSREC_BLOCK;
	SpillReader r;
	SpillReader dr;
	SpillBuf	data = {0};
	uint8		head[GPX_VARINT_MAX + 2];
	uint8	   *dir;
	uint32		hlen;
	uint64		len;
	uint32		n = 0;

	if (ps->count != df)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuidx: term \"%.*s\" has positions for %u of its %u postings",
						w->term_len, w->term, ps->count, df)));
	if (nb > ps->sizes_cap)
	{
		ps->sizes_cap = Max(nb, 2 * ps->sizes_cap);
		ps->sizes = ps->sizes ? repalloc_huge(ps->sizes, (Size) ps->sizes_cap * sizeof(uint32))
			: MemoryContextAllocHuge(w->cxt, (Size) ps->sizes_cap * sizeof(uint32));
	}
	spill_read_begin(&r, &ps->data, w->cxt);
	spill_read_begin(&dr, &ps->dlc, w->cxt);
	for (uint32 b = 0; b < nb; b++)
	{
		uint32		total = 0;
		uint32		got;
		const uint8 *dlc;

		blk->n = Min(GPX_POSREC_BLOCK, df - b * GPX_POSREC_BLOCK);
		dlc = spill_read_peek(&dr, blk->n, &got);
		if (got < blk->n)
			elog(ERROR, "gpuidx: positions kept for a term are damaged");
		memcpy(blk->dlc, dlc, blk->n);
		dr.pos += blk->n;
		for (uint32 i = 0; i < blk->n; i++)
		{
			uint32		avail;
			const uint8 *p = spill_read_peek(&r, GPX_POS_MAX_RECORD, &avail);
			const uint8 *q = p;
			uint32		npos;

			if (!gpx_pos_decode(&q, p + avail, blk->wep + total, &npos))
				elog(ERROR, "gpuidx: positions kept for a term are damaged");
			r.pos += (uint32) (q - p);
			blk->start[i] = total;
			blk->npos[i] = (uint16) npos;
			total += npos;
		}
		blk->start[blk->n] = total;
		ps->sizes[b] = (uint32) gpx_posrec_encode_block(blk, ps->flags, ps->coded, ps->scratch);
		spill_append(&data, w->cxt, ps->coded, ps->sizes[b]);
		if (data.total > PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the positions of a gpuidx posting list would exceed 2 GB")));
	}
	/* the record: its head (flags, the blocks' directory), then the blocks */
	dir = palloc(gpx_posrec_head_size(nb, data.total, ps->flags));
	hlen = (uint32) gpx_posrec_put_head(dir, ps->flags, nb, ps->sizes);
	len = hlen + data.total;
	if (may_inline && len + GPX_VARINT_MAX <= GPX_POS_INLINE_MAX)
	{
		n = gpx_varint_put(out, len << 2 | (ps->flags ? 2 : 0));
		memcpy(out + n, dir, hlen);
		spill_copy_out(&data, out + n + hlen);
		n += (uint32) len;
	}
	else
	{
		if (may_inline)
			n = gpx_varint_put(out, (uint64) s->npages << 1 | 1);
		else
			n = gpx_varint_put(out, s->npages);
		n += gpx_varint_put(out + n, s->used);
		stream_write(w, GPX_STREAM_POSITIONS, head, gpx_varint_put(head, len << 1 | (ps->flags ? 1 : 0)));
		stream_write(w, GPX_STREAM_POSITIONS, dir, hlen);
		spill_drain(&data, w, 0, GPX_STREAM_POSITIONS);
	}
	pfree(dir);
	spill_reset(&data);
	if (data.mem)
		pfree(data.mem);
	if (r.sb->file)
		pfree(r.buf);
	if (dr.sb->file)
		pfree(dr.buf);
	spill_reset(&ps->data);
	spill_reset(&ps->dlc);
	ps->count = 0;
	ps->flags = 0;
	return n;
}

void
gpx_segw_term_add(GpxSegWriter *w, const uint32 *ids, const uint8 *tfs, const uint8 *pos, Size poslen,
				  uint32 n)
{
	/*
	 * Every writer hands over ids it decoded and checked itself; this is the
	 * last line before bytes are stored: a list out of order or past the
	 * segment's docs would be a segment that no reader accepts.
	 */
	for (uint32 i = 0; i < n; i++)
	{
		if ((int64) ids[i] <= w->last_id || ids[i] >= w->ndocs)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuidx: doc id %u of term \"%.*s\" is out of order or past the segment's %u docs",
							ids[i], w->term_len, w->term, w->ndocs)));
		w->last_id = ids[i];
	}
	if (w->freqs)
	{
		for (uint32 i = 0; i < n; i++)
			if (tfs[i] == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("gpuidx: doc id %u of term \"%.*s\" has a frequency of 0",
								ids[i], w->term_len, w->term)));
	}
	if (w->positions)
	{
		if (pos == NULL && n > 0)
			elog(ERROR, "gpuidx: postings without positions where positions are stored");
		pos_add(w, ids, pos, poslen, tfs, n);
	}
	if (w->streaming)
	{
		GpxListStream *ls = &w->ls;
		uint32		cap = ls->codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;

		for (uint32 i = 0; i < n; i++)
		{
			/* a full block's universe reaches the next block's first posting */
			if (ls->nblk == cap)
				stream_block(w, ls, (uint64) ids[i] - ls->blk[0]);
			ls->blk[ls->nblk++] = ids[i];
		}
		ls->count += n;
		if (n > 0)
			ls->last = ids[n - 1];
		if (w->freqs)
			freq_add(w, &w->fs, ids, tfs, n);
		if (ls->count > GPUIDX_MAX_POSTINGS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a gpuidx term occurs in more than %u documents of one segment",
							GPUIDX_MAX_POSTINGS)));
		return;
	}
	if (w->nids + (uint64) n > w->idcap)
	{
		w->idcap = Max(w->idcap * 2, Max(w->nids + n, 64));
		if (w->idcap > GPUIDX_MAX_POSTINGS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a gpuidx term occurs in more than %u documents of one segment",
							GPUIDX_MAX_POSTINGS)));
		w->ids = w->ids ? repalloc_huge(w->ids, (Size) w->idcap * sizeof(uint32))
			: MemoryContextAllocHuge(w->cxt, (Size) w->idcap * sizeof(uint32));
		if (w->freqs)
			w->tfs = w->tfs ? repalloc_huge(w->tfs, (Size) w->idcap)
				: MemoryContextAllocHuge(w->cxt, (Size) w->idcap);
	}
	memcpy(w->ids + w->nids, ids, (Size) n * sizeof(uint32));
	if (w->freqs)
		memcpy(w->tfs + w->nids, tfs, n);
	w->nids += n;
}

/* start a list or a frequency record: 4-byte aligned; returns its place */
static void
stream_align(GpxSegWriter *w, int id, uint32 *page, uint32 *offset)
{
	GpxStreamW *s = &w->streams[id];
	static const uint8 zeros[4] = {0};

	if (s->used % 4 != 0)
		stream_write(w, id, zeros, 4 - s->used % 4);
	*page = s->npages;
	*offset = s->used;
}

/* ---------------------------------------------------------------------------
 * Frequency records
 */
static void
freq_reset(GpxFreqStream *fs)
{
	spill_reset(&fs->blocks);
	spill_reset(&fs->data);
	fs->n = 0;
	fs->count = 0;
	fs->nb = 0;
	fs->max_tf = 0;
	fs->min_dlcode = 255;
}

/* the buffered block's entry and packed tfs (tf - 1 each) */
static void
freq_block(GpxSegWriter *w, GpxFreqStream *fs)
{
	GpxFreqBlock b;
	uint32		vals[GPX_RANK_BLOCK];
	uint8		packed[GPX_RANK_BLOCK];
	uint32		max_tf = 0;
	uint32		min_code = 255;
	uint32		len;

	for (uint32 i = 0; i < fs->n; i++)
	{
		vals[i] = fs->tfs[i] - 1;
		max_tf = Max(max_tf, fs->tfs[i]);
		min_code = Min(min_code, w->dlcodes[fs->docs[i]]);
	}
	memset(&b, 0, sizeof(b));
	b.last_doc = fs->docs[fs->n - 1];
	b.offset = (uint32) fs->data.total;
	b.width = bits_for(max_tf - 1);
	b.max_tf = (uint8) max_tf;
	b.min_dlcode = (uint8) min_code;
	len = gpx_pack_bits(packed, vals, fs->n, b.width);
	spill_append(&fs->blocks, w->cxt, &b, sizeof(b));
	spill_append(&fs->data, w->cxt, packed, len);
	fs->max_tf = Max(fs->max_tf, b.max_tf);
	fs->min_dlcode = Min(fs->min_dlcode, b.min_dlcode);
	fs->nb++;
	fs->n = 0;
}

static void
freq_add(GpxSegWriter *w, GpxFreqStream *fs, const uint32 *ids, const uint8 *tfs, uint32 n)
{
	for (uint32 i = 0; i < n; i++)
	{
		fs->docs[fs->n] = ids[i];
		fs->tfs[fs->n] = tfs[i];
		fs->count++;
		if (++fs->n == GPX_RANK_BLOCK)
			freq_block(w, fs);
	}
}

/* the record into the FREQS stream; returns its place */
static void
freq_finish(GpxSegWriter *w, GpxFreqStream *fs, uint32 *page, uint32 *offset)
{
	GpxFreqHeader hdr;
	uint64		len;
	uint32		crc;

	if (fs->n > 0)
		freq_block(w, fs);
	len = sizeof(hdr) + fs->blocks.total + fs->data.total;
	if (len > PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the term frequencies of a gpuidx posting list would exceed 4 GB")));
	memset(&hdr, 0, sizeof(hdr));
	hdr.df = fs->count;
	hdr.nbytes = (uint32) len;
	hdr.max_tf = fs->max_tf;
	hdr.min_dlcode = fs->min_dlcode;
	crc = pl_crc32c(0, &hdr, sizeof(hdr));
	crc = spill_drain(&fs->blocks, w, crc, -1);
	hdr.crc = spill_drain(&fs->data, w, crc, -1);
	stream_align(w, GPX_STREAM_FREQS, page, offset);
	stream_write(w, GPX_STREAM_FREQS, &hdr, sizeof(hdr));
	spill_drain(&fs->blocks, w, 0, GPX_STREAM_FREQS);
	spill_drain(&fs->data, w, 0, GPX_STREAM_FREQS);
	freq_reset(fs);
}

static void
add_external(GpxSegWriter *w, uint32 df, uint32 page, uint32 offset, uint32 len, int codec)
{
	uint8		ref[5 * GPX_VARINT_MAX];
	uint32		n = 0;

	n += gpx_varint_put(ref + n, len);
	n += gpx_varint_put(ref + n, page);
	n += gpx_varint_put(ref + n, offset);
	if (w->freqs)
	{
		uint32		fpage;
		uint32		foffset;

		freq_finish(w, &w->fs, &fpage, &foffset);
		n += gpx_varint_put(ref + n, fpage);
		n += gpx_varint_put(ref + n, foffset);
	}
	add_entry(w, df, GPX_ENTRY_EXTERNAL, ref, n);
	w->nlists[codec]++;
}

static void
end_streamed(GpxSegWriter *w)
{
	GpxListStream *ls = &w->ls;
	gpuidx_list_header hdr;
	static const uint64 guard = 0;
	uint64		len;
	uint32		crc;
	uint32		page;
	uint32		offset;

	if (ls->nblk > 0)
		stream_block(w, ls, (uint64) ls->last - ls->blk[0] + 1);
	if (ls->codec != GPUIDX_CODEC_RAW)
	{
		/* the partial last word, then the zero guard word */
		window_flush(w, ls, true);
		spill_append(&ls->data, w->cxt, &guard, sizeof(guard));
		Assert(ls->data.total == gpuidx_data_area_bytes(ls->bits));
	}
	memset(&hdr, 0, sizeof(hdr));
	hdr.version = GPUIDX_FORMAT_VERSION;
	hdr.codec = ls->codec;
	hdr.count = ls->count;
	hdr.last = ls->last;
	len = sizeof(hdr) + ls->skip1.total + ls->skip2.total + ls->data.total;
	if (len > PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a gpuidx posting list would exceed 4 GB")));

	/* the checksum needs every byte before the header can be written */
	crc = pl_crc32c(0, &hdr, sizeof(hdr));
	crc = spill_drain(&ls->skip1, w, crc, -1);
	crc = spill_drain(&ls->skip2, w, crc, -1);
	hdr.checksum = spill_drain(&ls->data, w, crc, -1);
	stream_align(w, GPX_STREAM_LISTS, &page, &offset);
	stream_write(w, GPX_STREAM_LISTS, &hdr, sizeof(hdr));
	spill_drain(&ls->skip1, w, 0, GPX_STREAM_LISTS);
	spill_drain(&ls->skip2, w, 0, GPX_STREAM_LISTS);
	spill_drain(&ls->data, w, 0, GPX_STREAM_LISTS);
	add_external(w, ls->count, page, offset, (uint32) len, ls->codec);
	w->npostings += ls->count;
	spill_reset(&ls->skip1);
	spill_reset(&ls->skip2);
	spill_reset(&ls->data);
}

/*
 * The inline form (store/parse.h): groups of a doc and the run of
 * consecutive docs after it.  Writes into out when it is not NULL; returns
 * the bytes, or GPX_INLINE_MAX + 1 past GPX_INLINE_MAX of them.
 */
static uint32
inline_encode(const uint32 *ids, uint32 n, uint8 *out)
{
	uint32		size = 0;
	uint8		scratch[2 * GPX_VARINT_MAX];

	for (uint32 i = 0; i < n && size <= GPX_INLINE_MAX;)
	{
		uint32		d = i == 0 ? ids[0] : ids[i] - ids[i - 1] - 1;
		uint32		run = 0;
		uint8	   *o = out ? out + size : scratch;
		uint32		len;

		while (i + run + 1 < n && ids[i + run + 1] == ids[i + run] + 1)
			run++;
		len = gpx_varint_put(o, (uint64) d << 1 | (run > 0 ? 1 : 0));
		if (run > 0)
			len += gpx_varint_put(o + len, run - 1);
		size += len;
		i += 1 + run;
	}
	return Min(size, GPX_INLINE_MAX + 1);
}

static void
end_buffered(GpxSegWriter *w)
{
	uint32		n = w->nids;
	/* a list of at most GPX_INLINE_MAX docs may go inline, runs or not */
	uint32		isize = n <= GPX_INLINE_MAX ? inline_encode(w->ids, n, NULL) : GPX_INLINE_MAX + 1;
	int			codec = w->codec >= 0 ? w->codec : pl_choose_codec(w->ids, n);
	size_t		esize = pl_encoded_size(codec, w->ids, n);

	if (isize <= GPX_INLINE_MAX && isize <= esize + GPX_EXTERNAL_COST)
	{
		/* the postings, then with freqs and a tf above 1 the tfs packed */
		uint8		buf[2 * GPX_INLINE_MAX + GPX_VARINT_MAX];
		uint32		len = inline_encode(w->ids, n, buf);
		uint32		bytes = len;
		uint8		max_tf = 1;

		for (uint32 i = 0; w->freqs && i < n; i++)
			max_tf = Max(max_tf, w->tfs[i]);
		if (max_tf > 1)
		{
			uint32		vals[GPX_INLINE_MAX];
			uint32		width = bits_for(max_tf - 1);

			for (uint32 i = 0; i < n; i++)
				vals[i] = w->tfs[i] - 1;
			buf[bytes++] = (uint8) width;
			bytes += gpx_pack_bits(buf + bytes, vals, n, width);
		}
		add_entry(w, n, max_tf > 1 ? GPX_ENTRY_INLINE_TFS : GPX_ENTRY_INLINE, buf, bytes);
		w->ninline++;
		w->inline_bytes += len;
	}
	else
	{
		void	   *enc = palloc_extended(esize, MCXT_ALLOC_HUGE);
		uint32		page;
		uint32		offset;

		if (esize > PG_UINT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a gpuidx posting list would exceed 4 GB")));
		pl_encode(codec, w->ids, n, enc);
		if (w->freqs)
			freq_add(w, &w->fs, w->ids, w->tfs, n);
		stream_align(w, GPX_STREAM_LISTS, &page, &offset);
		stream_write(w, GPX_STREAM_LISTS, enc, esize);
		pfree(enc);
		add_external(w, n, page, offset, (uint32) esize, codec);
	}
	w->npostings += n;
}

void
gpx_segw_term_end(GpxSegWriter *w)
{
	uint32		count = w->streaming ? w->ls.count : w->nids;

	if (count == 0)
		return;					/* every posting was dropped: no entry */
	if (w->streaming)
		end_streamed(w);
	else
		end_buffered(w);
	memcpy(w->prev, w->term, w->term_len);
	w->prev_len = w->term_len;
	w->have_prev = true;
	w->nterms++;
}

/* ---------------------------------------------------------------------------
 * Finishing: inner nodes, dead bitmap, page table, header
 */

/* write one level of inner nodes over seps; returns the separators of the level */
static StringInfo
write_inner_level(GpxSegWriter *w, StringInfo seps, uint32 nseps, uint16 level, uint32 *nout)
{
	StringInfo	out = makeStringInfo();
	const uint8 *p = (const uint8 *) seps->data;
	const uint8 *end = p + seps->len;
	GpxStreamW *s = &w->streams[GPX_STREAM_INNER];
	uint16		offsets[GPX_PAGE_CAPACITY / 4];
	uint8	   *entries = palloc(GPX_PAGE_CAPACITY);
	uint32		elen = 0;
	uint32		n = 0;
	const uint8 *first_key = NULL;
	uint32		first_len = 0;

	*nout = 0;
	for (uint32 i = 0; i <= nseps; i++)
	{
		const uint8 *start = p;
		uint64		klen = 0;
		uint64		child;
		uint32		entry_len = 0;

		if (i < nseps)
		{
			gpx_varint_get(&p, end, &klen);
			p += klen;
			gpx_varint_get(&p, end, &child);
			entry_len = p - start;
		}
		if (n > 0 && (i == nseps ||
					  sizeof(GpxInnerHeader) + (n + 1) * sizeof(uint16) + elen + entry_len > GPX_PAGE_CAPACITY))
		{
			GpxInnerHeader hdr;
			char	   *dst = stream_tail(s);
			uint8		vbuf[GPX_VARINT_MAX];

			hdr.nentries = n;
			hdr.level = level;
			memcpy(dst, &hdr, sizeof(hdr));
			for (uint32 k = 0; k < n; k++)
				offsets[k] += sizeof(hdr) + n * sizeof(uint16);
			memcpy(dst + sizeof(hdr), offsets, n * sizeof(uint16));
			memcpy(dst + sizeof(hdr) + n * sizeof(uint16), entries, elen);
			s->used = sizeof(hdr) + n * sizeof(uint16) + elen;
			s->bytes += s->used;
			appendBinaryStringInfo(out, (char *) vbuf, gpx_varint_put(vbuf, first_len));
			appendBinaryStringInfo(out, (const char *) first_key, first_len);
			appendBinaryStringInfo(out, (char *) vbuf, gpx_varint_put(vbuf, s->npages));
			(*nout)++;
			stream_flush(w, GPX_STREAM_INNER);
			n = 0;
			elen = 0;
		}
		if (i == nseps)
			break;
		if (n == 0)
		{
			first_key = start + gpx_varint_size(klen);
			first_len = (uint32) klen;
		}
		offsets[n++] = elen;
		memcpy(entries + elen, start, entry_len);
		elen += entry_len;
	}
	pfree(entries);
	return out;
}

static void
write_dead_bitmap(GpxSegWriter *w)
{
	GpxStreamW *s = &w->streams[GPX_STREAM_DEAD];
	uint64		bytes = ((uint64) w->ndocs + 7) / 8;

	while (bytes > 0)
	{
		uint32		n = (uint32) Min(bytes, (uint64) GPX_PAGE_CAPACITY);

		memset(stream_tail(s), 0, n);
		s->used = n;
		s->bytes += n;
		bytes -= n;
		stream_flush(w, GPX_STREAM_DEAD);
	}
}

void
gpx_segw_finish(GpxSegWriter *w, GpxSegRef *ref)
{
	PGAlignedBlock head;
	GpxSegHeaderData *hdr;
	uint32		npages = 0;
	uint32		ntables;
	BlockNumber *all;
	BlockNumber *tables = NULL;
	uint32		nt = 0;
	uint32		tcap = 0;

	if (w->nchunk > 0)
		flush_chunk(w);
	flush_leaf(w);

	gpx_page_init(head.data, GPX_PAGE_SEGHEAD);
	hdr = (GpxSegHeaderData *) PageGetContents(head.data);
	memset(hdr, 0, offsetof(GpxSegHeaderData, table));

	/* inner levels until one node is left */
	if (w->nseps > 1)
	{
		StringInfo	seps = &w->seps;
		uint32		n = w->nseps;
		uint16		level = 1;

		for (;;)
		{
			uint32		nout;

			seps = write_inner_level(w, seps, n, level, &nout);
			if (nout == 1)
				break;
			n = nout;
			level++;
		}
		hdr->dict_levels = level;
		hdr->dict_root = w->streams[GPX_STREAM_INNER].npages - 1;
	}
	write_dead_bitmap(w);
	for (int i = 0; i < GPX_NSTREAMS; i++)
	{
		if (w->streams[i].used > 0)
			stream_flush(w, i);
		hdr->streams[i].first = npages;
		hdr->streams[i].npages = w->streams[i].npages;
		hdr->streams[i].bytes = w->streams[i].bytes;
		npages += w->streams[i].npages;
	}

	/* the page table: in the header when it fits, else in table pages */
	all = palloc_extended(Max(npages, 1) * sizeof(BlockNumber), MCXT_ALLOC_HUGE);
	for (int i = 0; i < GPX_NSTREAMS; i++)
		if (w->streams[i].npages > 0)
			memcpy(all + hdr->streams[i].first, w->streams[i].blocks,
				   w->streams[i].npages * sizeof(BlockNumber));
	ntables = npages <= GPX_SEGHEAD_SLOTS ? 0 : (npages + GPX_TABLE_SLOTS - 1) / GPX_TABLE_SLOTS;
	if (ntables > GPX_SEGHEAD_SLOTS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuidx segment of %u pages is too large", npages)));
	for (uint32 t = 0; t < ntables; t++)
	{
		PGAlignedBlock tpage;
		uint32		from = t * GPX_TABLE_SLOTS;
		uint32		n = Min(GPX_TABLE_SLOTS, npages - from);
		GpxPageOpaque opaque;

		gpx_page_init(tpage.data, GPX_PAGE_TABLE);
		opaque = GpxPageGetOpaque(tpage.data);
		opaque->owner = w->segid;
		opaque->pageno = t;
		memcpy(PageGetContents(tpage.data), all + from, n * sizeof(BlockNumber));
		gpx_page_set_used(tpage.data, n * sizeof(BlockNumber));
		remember_block(w, &tables, &nt, &tcap, write_new_page(w, tpage.data));
	}

	hdr->magic = GPX_MAGIC;
	hdr->flags = GPX_SEG_STREAMS | GPX_SEG_STREAMS_V4 | GPX_SEG_PACKED_LEAF | GPX_SEG_LENS_BASE |
		(w->freqs ? GPX_SEG_FREQS : 0) | (w->positions ? GPX_SEG_POSITIONS | GPX_SEG_POSITIONS_V2 : 0) |
		(w->tid_order ? GPX_SEG_TID_ORDER : 0);
	hdr->id = w->segid;
	hdr->ndocs = w->ndocs;
	hdr->nterms = w->nterms;
	hdr->npostings = w->npostings;
	hdr->docmap_chunks = w->nchunks;
	hdr->ninline = w->ninline;
	hdr->inline_bytes = w->inline_bytes;
	memcpy(hdr->nlists, w->nlists, sizeof(hdr->nlists));
	hdr->npages = npages;
	hdr->ntables = ntables;
	if (ntables == 0)
		memcpy(hdr->table, all, npages * sizeof(BlockNumber));
	else
		memcpy(hdr->table, tables, ntables * sizeof(BlockNumber));
	gpx_page_set_used(head.data, offsetof(GpxSegHeaderData, table) +
					  (ntables == 0 ? npages : ntables) * sizeof(BlockNumber));
	GpxPageGetOpaque(head.data)->owner = w->segid;

	memset(ref, 0, sizeof(GpxSegRef));
	ref->id = w->segid;
	ref->head = write_new_page(w, head.data);
	ref->ndocs = w->ndocs;
	ref->nterms = w->nterms;
	ref->npostings = w->npostings;
	ref->npages = npages + ntables + 1;
	ref->sum_dl = w->sum_dl;
	pfree(all);
}
