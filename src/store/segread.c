/*
 * segread.c
 *	  Reading a segment: its header and page table, term lookup through the
 *	  dictionary, lists (inline ones decoded, external ones checked by their
 *	  CRC), the doc map and the dead-doc bitmap (positions: segpos.c).
 *
 * Every page is checked when read (CRC and tag, store/page.c), and every
 * structure on it is checked while it is decoded: offsets and lengths stay
 * inside the page, terms increase, doc ids stay below the segment's count,
 * TIDs are valid.  A damaged index gives ERRCODE_INDEX_CORRUPTED, never a
 * wild read or a wrong row.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "rank/bm25.h"
#include "store/meta.h"
#include "store/rankdata.h"
#include "store/segment.h"
#include "store/segread_int.h"
#include "store/varint.h"

static const char *const stream_names[GPX_NSTREAMS] = {
	"dictionary leaf", "dictionary inner node", "posting list", "doc map directory",
	"doc map", "dead-doc bitmap", "term frequencies", "doc length directory", "doc lengths",
	"positions"
};

void
gpx_seg_corrupt(GpxSegment *seg, int stream, uint32 pageno, const char *what)
{
	BlockNumber blkno = InvalidBlockNumber;

	if (stream >= 0 && seg->hdr != NULL && pageno < seg->hdr->streams[stream].npages &&
		seg->hdr->ntables == 0)
		blkno = seg->hdr->table[seg->hdr->streams[stream].first + pageno];
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" is corrupted in segment %u",
					RelationGetRelationName(seg->index), seg->ref.id),
			 stream >= 0 ?
			 errdetail("%s page %u (block %u): %s.", stream_names[stream], pageno, blkno, what) :
			 errdetail("Segment header (block %u): %s.", seg->ref.head, what),
			 errhint("Rebuild the index with REINDEX.")));
	pg_unreachable();
}

/*
 * A copy of a header page's contents in the current layout: headers
 * written before format version 3 (flags 0) have GPX_NSTREAMS_V1 streams,
 * those without GPX_SEG_STREAMS_V4 GPX_NSTREAMS_V3, so what follows them
 * moves up and the new streams read as empty.  *used becomes the size the
 * copy would have in the current layout.
 */
GpxSegHeaderData *
gpx_seg_header_copy(const char *contents, uint32 *used)
{
	const Size	most = (GPX_NSTREAMS - GPX_NSTREAMS_V1) * sizeof(GpxStreamInfo);
	GpxSegHeaderData *h = palloc0(Max(*used, sizeof(GpxSegHeaderData)) + most);
	uint32		flags;
	int			nstreams;
	Size		old_streams;
	Size		shift;

	if (*used < offsetof(GpxSegHeaderData, streams))
	{
		memcpy(h, contents, *used);
		return h;
	}
	memcpy(&flags, contents + offsetof(GpxSegHeaderData, flags), sizeof(flags));
	nstreams = (flags & GPX_SEG_STREAMS_V4) ? GPX_NSTREAMS :
		(flags & GPX_SEG_STREAMS) ? GPX_NSTREAMS_V3 : GPX_NSTREAMS_V1;
	old_streams = offsetof(GpxSegHeaderData, streams) + nstreams * sizeof(GpxStreamInfo);
	shift = (GPX_NSTREAMS - nstreams) * sizeof(GpxStreamInfo);
	if (nstreams == GPX_NSTREAMS || *used < old_streams)
	{
		memcpy(h, contents, *used);
		return h;
	}
	memcpy(h, contents, old_streams);
	memcpy((char *) h + offsetof(GpxSegHeaderData, npages), contents + old_streams, *used - old_streams);
	for (int i = nstreams; i < GPX_NSTREAMS; i++)
		h->streams[i].first = h->streams[nstreams - 1].first + h->streams[nstreams - 1].npages;
	*used += shift;
	return h;
}

static void
check_header(GpxSegment *seg, uint32 used)
{
	GpxSegHeaderData *h = seg->hdr;
	uint64		npages = 0;
	uint32		slots;

	if (used < offsetof(GpxSegHeaderData, table) || h->magic != GPX_MAGIC || h->id != seg->ref.id)
		gpx_seg_corrupt(seg, -1, 0, "header is not this segment's");
	if (h->ndocs != seg->ref.ndocs || h->nterms != seg->ref.nterms || h->npostings != seg->ref.npostings)
		gpx_seg_corrupt(seg, -1, 0, "counts differ from the metapage's");
	if ((h->flags & ~GPX_SEG_FLAGS) || (h->flags & GPX_SEG_FREQS && !(h->flags & GPX_SEG_STREAMS)) ||
		((h->flags & GPX_SEG_POSITIONS) &&
		 (h->flags & (GPX_SEG_STREAMS_V4 | GPX_SEG_FREQS | GPX_SEG_PACKED_LEAF)) !=
		 (GPX_SEG_STREAMS_V4 | GPX_SEG_FREQS | GPX_SEG_PACKED_LEAF)))
		gpx_seg_corrupt(seg, -1, 0, "header has unknown flags");
	if (!(h->flags & GPX_SEG_POSITIONS) && h->streams[GPX_STREAM_POSITIONS].npages != 0)
		gpx_seg_corrupt(seg, -1, 0, "positions stream without positions");
	if (h->flags & GPX_SEG_FREQS ?
		(h->streams[GPX_STREAM_LENDIR].bytes != (uint64) h->docmap_chunks * sizeof(uint32)) :
		(h->streams[GPX_STREAM_FREQS].npages | h->streams[GPX_STREAM_LENDIR].npages |
		 h->streams[GPX_STREAM_LENS].npages) != 0)
		gpx_seg_corrupt(seg, -1, 0, "doc length streams are inconsistent");
	for (int i = 0; i < GPX_NSTREAMS; i++)
	{
		if (h->streams[i].first != npages ||
			h->streams[i].bytes > (uint64) h->streams[i].npages * GPX_PAGE_CAPACITY)
			gpx_seg_corrupt(seg, -1, 0, "stream page ranges are inconsistent");
		npages += h->streams[i].npages;
	}
	/* the metapage's count, which the index's size bounds */
	if (npages != h->npages || (uint64) h->npages + h->ntables + 1 != seg->ref.npages)
		gpx_seg_corrupt(seg, -1, 0, "page table size is inconsistent");
	slots = h->ntables == 0 ? h->npages : h->ntables;
	if ((h->ntables != 0 &&
		 h->ntables != (h->npages + GPX_TABLE_SLOTS - 1) / GPX_TABLE_SLOTS) ||
		used != offsetof(GpxSegHeaderData, table) + slots * sizeof(BlockNumber))
		gpx_seg_corrupt(seg, -1, 0, "page table length is inconsistent");
	if (h->docmap_chunks != (h->ndocs + GPX_DOCMAP_CHUNK - 1) / GPX_DOCMAP_CHUNK ||
		h->streams[GPX_STREAM_DOCDIR].bytes != (uint64) h->docmap_chunks * sizeof(uint32) ||
		h->streams[GPX_STREAM_DEAD].bytes != ((uint64) h->ndocs + 7) / 8)
		gpx_seg_corrupt(seg, -1, 0, "doc map or dead-doc bitmap size is inconsistent");
	if ((h->streams[GPX_STREAM_LEAF].npages == 0) != (h->nterms == 0) ||
		(h->dict_levels == 0 && h->streams[GPX_STREAM_LEAF].npages > 1) ||
		(h->dict_levels == 0 && h->dict_root != 0) ||
		(h->dict_levels > 0 && h->dict_root >= h->streams[GPX_STREAM_INNER].npages) ||
		h->dict_levels > 16)
		gpx_seg_corrupt(seg, -1, 0, "dictionary root is inconsistent");
}

/*
 * A long EF list read in part, kept while its segment is open: a query
 * under a LIMIT probes the same lists window after window, and each window
 * then reads only the blocks no earlier one read (the skip entries are
 * read and the structure checked once).
 */
struct GpxPartList
{
	uint32		page;			/* where the list is: the key */
	uint32		offset;
	char	   *bytes;			/* its length, of which the blocks in loaded are read */
	const char *skips;			/* its header and skip entries: in bytes, or the skip cache's */
	uint8	   *loaded;			/* a bit a block */
	pl_view		view;			/* opened on skips and bytes */
};

/*
 * The part lists that every open segment of this backend keeps take at most
 * work_mem together (a scan opens each segment of the index, and keeps them
 * open to its end); past it a list is read for its caller alone.  A
 * segment's share leaves the sum when it is closed, or when the memory it
 * was opened in goes (an error ends the scan without closing it).
 */
static Size parts_kept;

struct GpxPartsKept
{
	Size		bytes;			/* this segment's share of parts_kept */
	MemoryContextCallback gone;
};

static void
parts_gone(void *arg)
{
	struct GpxPartsKept *k = arg;

	parts_kept -= k->bytes;
	k->bytes = 0;
}

static bool
keep_part_list(uint32 len, uint32 nb)
{
	return parts_kept + len + nb <= (Size) work_mem * 1024;
}

static void
count_part_list(GpxSegment *seg, uint32 len, uint32 nb)
{
	if (seg->kept == NULL)
	{
		seg->kept = MemoryContextAllocZero(seg->mcxt, sizeof(struct GpxPartsKept));
		seg->kept->gone.func = parts_gone;
		seg->kept->gone.arg = seg->kept;
		MemoryContextRegisterResetCallback(seg->mcxt, &seg->kept->gone);
	}
	seg->kept->bytes += len + nb;
	parts_kept += len + nb;
}

GpxSegment *
gpx_seg_open(Relation index, const GpxSegRef *ref)
{
	GpxPageTag	tag = {GPX_PAGE_SEGHEAD, GPX_ANY_STREAM, ref->id, GPX_ANY_OWNER};
	GpxSegment *seg = palloc0(sizeof(GpxSegment));
	Buffer		buf;
	Page		page;
	uint32		used;

	seg->index = index;
	seg->ref = *ref;
	seg->mcxt = CurrentMemoryContext;
	buf = gpx_read_page(index, ref->head, BUFFER_LOCK_SHARE, &tag);
	page = BufferGetPage(buf);
	used = gpx_page_used(page);
	seg->hdr = gpx_seg_header_copy(PageGetContents(page), &used);
	UnlockReleaseBuffer(buf);
	check_header(seg, used);
	if (seg->hdr->ntables > 0)
		seg->tables = palloc0(seg->hdr->ntables * sizeof(BlockNumber *));
	seg->dead_page = PG_UINT32_MAX;
	seg->chunk = PG_UINT32_MAX;
	seg->docdir.pageno = PG_UINT32_MAX;
	seg->docmap.pageno = PG_UINT32_MAX;
	seg->lendir.pageno = PG_UINT32_MAX;
	seg->lens.pageno = PG_UINT32_MAX;
	seg->dl_chunk = PG_UINT32_MAX;
	return seg;
}

void
gpx_seg_close(GpxSegment *seg)
{
	if (seg->tables)
	{
		for (uint32 i = 0; i < seg->hdr->ntables; i++)
			if (seg->tables[i])
				pfree(seg->tables[i]);
		pfree(seg->tables);
	}
	if (seg->dead_bits)
		pfree(seg->dead_bits);
	for (uint32 i = 0; i < seg->nparts; i++)
	{
		pfree(seg->parts[i].bytes);
		pfree(seg->parts[i].loaded);
	}
	if (seg->parts)
		pfree(seg->parts);
	/* the share leaves the sum now; the callback, run when the memory goes, finds none */
	if (seg->kept)
		parts_gone(seg->kept);
	if (seg->docdir.data)
		pfree(seg->docdir.data);
	if (seg->docmap.data)
		pfree(seg->docmap.data);
	pfree(seg->hdr);
	pfree(seg);
}

BlockNumber
gpx_seg_block(GpxSegment *seg, int stream, uint32 pageno)
{
	GpxSegHeaderData *h = seg->hdr;
	uint32		idx;
	uint32		t;

	if (pageno >= h->streams[stream].npages)
		gpx_seg_corrupt(seg, stream, pageno, "a reference points past the end of the stream");
	idx = h->streams[stream].first + pageno;
	if (h->ntables == 0)
		return h->table[idx];
	t = idx / GPX_TABLE_SLOTS;
	if (seg->tables[t] == NULL)
	{
		GpxPageTag	tag = {GPX_PAGE_TABLE, GPX_ANY_STREAM, seg->ref.id, t};
		uint32		n = Min(GPX_TABLE_SLOTS, h->npages - t * GPX_TABLE_SLOTS);
		Buffer		buf = gpx_read_page(seg->index, h->table[t], BUFFER_LOCK_SHARE, &tag);
		Page		page = BufferGetPage(buf);

		if (gpx_page_used(page) != n * sizeof(BlockNumber))
			gpx_report_corrupt(seg->index, h->table[t], "Page table page has %u bytes, expected %u",
							   gpx_page_used(page), (uint32) (n * sizeof(BlockNumber)));
		seg->tables[t] = MemoryContextAlloc(GetMemoryChunkContext(seg), n * sizeof(BlockNumber));
		memcpy(seg->tables[t], PageGetContents(page), n * sizeof(BlockNumber));
		UnlockReleaseBuffer(buf);
	}
	return seg->tables[t][idx % GPX_TABLE_SLOTS];
}

Buffer
gpx_seg_read(GpxSegment *seg, int stream, uint32 pageno)
{
	GpxPageTag	tag = {GPX_PAGE_DATA, stream, seg->ref.id, pageno};

	return gpx_read_page(seg->index, gpx_seg_block(seg, stream, pageno), BUFFER_LOCK_SHARE, &tag);
}

/* ---------------------------------------------------------------------------
 * Dictionary
 */
/* what a segment allows its dictionary entries */
static GpxSegLimits
seg_limits(GpxSegment *seg)
{
	GpxSegLimits l;

	l.ndocs = seg->hdr->ndocs;
	l.list_pages = seg->hdr->streams[GPX_STREAM_LISTS].npages;
	l.page_capacity = GPX_PAGE_CAPACITY;
	l.freqs = (seg->hdr->flags & GPX_SEG_FREQS) != 0;
	l.freq_pages = seg->hdr->streams[GPX_STREAM_FREQS].npages;
	l.packed = (seg->hdr->flags & GPX_SEG_PACKED_LEAF) != 0;
	l.positions = (seg->hdr->flags & GPX_SEG_POSITIONS) != 0;
	l.positions_v2 = (seg->hdr->flags & GPX_SEG_POSITIONS_V2) != 0;
	l.pos_pages = seg->hdr->streams[GPX_STREAM_POSITIONS].npages;
	return l;
}

/* a leaf page's layout, checked */
static void
leaf_layout(GpxSegment *seg, uint32 pageno, const char *page, uint32 used, GpxLeafLayout *leaf)
{
	const char *problem = gpx_parse_leaf((const uint8 *) page, used, leaf);

	if (problem != NULL)
		gpx_seg_corrupt(seg, GPX_STREAM_LEAF, pageno, problem);
}

/* the leaf that may hold term, through the inner nodes; false if none can */
static bool
descend(GpxSegment *seg, const char *term, int len, uint32 *leaf)
{
	GpxSegHeaderData *h = seg->hdr;
	uint32		pageno = h->dict_root;
	uint32		level = h->dict_levels;

	if (h->nterms == 0)
		return false;
	while (level > 0)
	{
		Buffer		buf = gpx_seg_read(seg, GPX_STREAM_INNER, pageno);
		Page		page = BufferGetPage(buf);
		GpxInnerLayout inner;
		const char *problem = gpx_parse_inner((const uint8 *) PageGetContents(page), gpx_page_used(page),
											  (uint16) level, &inner);
		bool		found = false;
		uint32		child = 0;

		if (problem == NULL)
			problem = gpx_inner_search(&inner, (const uint8 *) term, len, &found, &child);
		if (problem != NULL)
			gpx_seg_corrupt(seg, GPX_STREAM_INNER, pageno, problem);
		UnlockReleaseBuffer(buf);
		if (!found)
			return false;
		pageno = child;
		level--;
	}
	*leaf = pageno;
	return true;
}

/* find term in a leaf; copies its entry (payload copied to *payload) */
static bool
leaf_find(GpxSegment *seg, uint32 pageno, const char *term, int len, GpxLeafEntry *out,
		  uint8 **payload)
{
	Buffer		buf = gpx_seg_read(seg, GPX_STREAM_LEAF, pageno);
	Page		page = BufferGetPage(buf);
	GpxSegLimits limits = seg_limits(seg);
	GpxLeafLayout leaf;
	bool		found;
	const char *problem;

	leaf_layout(seg, pageno, PageGetContents(page), gpx_page_used(page), &leaf);
	problem = gpx_leaf_search(&leaf, &limits, (const uint8 *) term, len, &found, out);
	if (problem != NULL)
		gpx_seg_corrupt(seg, GPX_STREAM_LEAF, pageno, problem);
	if (found && !out->external && payload)
	{
		/* the inline postings, then with freqs a byte each: their tfs; then the positions record */
		uint32		tf_bytes = limits.freqs ? out->df : 0;

		*payload = palloc(out->len + tf_bytes + out->pos_len);
		memcpy(*payload, out->payload, out->len);
		if (tf_bytes)
			gpx_leaf_entry_tfs(out->tfs, out->tf_width, out->df, *payload + out->len);
		if (out->pos_len)
			memcpy(*payload + out->len + tf_bytes, out->pos_record, out->pos_len);
	}
	UnlockReleaseBuffer(buf);
	return found;
}

static void
open_inline(GpxSegment *seg, const uint8 *data, uint32 len, uint32 df, GpxList *list)
{
	uint32	   *ids = palloc_extended((Size) df * sizeof(uint32), MCXT_ALLOC_HUGE);
	const char *problem = gpx_parse_inline_list(data, len, df, seg->hdr->ndocs,
												(seg->hdr->flags & GPX_SEG_PACKED_LEAF) != 0, ids);

	if (problem != NULL)
		gpx_seg_corrupt(seg, GPX_STREAM_LEAF, PG_UINT32_MAX, problem);
	list->df = df;
	list->mem = ids;
	pl_view_from_array(&list->view, ids, df);
}

/* a list of len bytes starting at (page, offset) of the LISTS stream */
static void
open_external(GpxSegment *seg, uint32 df, uint32 len, uint32 page, uint32 offset, GpxList *list)
{
	char	   *bytes = palloc_extended(len, MCXT_ALLOC_HUGE);
	uint32		copied = 0;
	uint32		pageno = page;
	uint32		off = offset;
	pl_status	st;

	while (copied < len)
	{
		Buffer		buf = gpx_seg_read(seg, GPX_STREAM_LISTS, pageno);
		Page		page = BufferGetPage(buf);
		uint32		used = gpx_page_used(page);
		uint32		n;

		if (off >= used)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, pageno, "a list starts past the page's contents");
		n = Min(used - off, len - copied);
		memcpy(bytes + copied, PageGetContents(page) + off, n);
		UnlockReleaseBuffer(buf);
		copied += n;
		pageno++;
		off = 0;
	}
	st = pl_open(&list->view, bytes, len, PL_OPEN_VERIFY_CHECKSUM);
	if (st != PL_OK)
		gpx_seg_corrupt(seg, GPX_STREAM_LISTS, page, pl_status_message(st));
	if (list->view.count != df || list->view.last >= seg->hdr->ndocs)
		gpx_seg_corrupt(seg, GPX_STREAM_LISTS, page, "list does not match its dictionary entry");
	list->df = df;
	list->mem = bytes;
}

/*
 * Bytes [from, to) of a list that starts at (page, offset) of the LISTS
 * stream, every page's own checksum checked: what is read of a list that is
 * not read whole (its own checksum covers all of it).  The stream fills
 * each page before the next, so a position gives its page.
 */
static void
read_list_range(GpxSegment *seg, uint32 page, uint32 offset, uint32 from, uint32 to, char *bytes)
{
	uint64		pos = (uint64) page * GPX_PAGE_CAPACITY + offset + from;

	while (from < to)
	{
		uint32		pageno = (uint32) (pos / GPX_PAGE_CAPACITY);
		uint32		off = (uint32) (pos % GPX_PAGE_CAPACITY);
		Buffer		buf = gpx_seg_read(seg, GPX_STREAM_LISTS, pageno);
		Page		p = BufferGetPage(buf);
		const char *problem = gpx_buffer_problem(seg->index, buf);
		uint32		used = gpx_page_used(p);
		uint32		n;

		if (problem != NULL)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, pageno, problem);
		n = off < used ? Min(used - off, to - from) : 0;
		if (n < to - from && off + n != GPX_PAGE_CAPACITY)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, pageno, "a list runs past the page's contents");
		memcpy(bytes + from, PageGetContents(p) + off, n);
		UnlockReleaseBuffer(buf);
		from += n;
		pos += n;
	}
}

/*
 * The blocks of an EF list whose data probes can reach, ascending, and the
 * final one.  A probe that is a block's first posting is answered by the
 * skip entries, so its block is left out, unless the caller decodes the
 * blocks it finds probes in (whole: a positions record reads its block's
 * docs for their lengths).
 */
static uint32
probed_blocks(const uint32 *first, uint32 nb, const uint32 *probes, uint32 nprobes, bool whole,
			  uint32 *blocks)
{
	uint32		n = 0;
	uint32		b = 0;

	for (uint32 i = 0; i < nprobes; i++)
	{
		uint32		x = probes[i];

		if (x < first[0])
			continue;
		/* the last block whose first posting is <= x, from b on (probes ascend) */
		while (b + 1 < nb && first[b + 1] <= x)
			b++;
		if ((whole || first[b] != x) && (n == 0 || blocks[n - 1] != b))
			blocks[n++] = b;
	}
	if (n == 0 || blocks[n - 1] != nb - 1)
		blocks[n++] = nb - 1;
	return n;
}

/* the blocks of an EF list holding docs of [lo, hi), and the final one */
static uint32
window_blocks(const uint32 *first, uint32 nb, uint32 lo, uint32 hi, uint32 *blocks)
{
	uint32		n = 0;
	uint32		b = 0;

	/* the last block whose first posting is <= lo, then each one that starts below hi */
	while (b + 1 < nb && first[b + 1] <= lo)
		b++;
	for (; b < nb && (first[b] < hi || n == 0); b++)
		blocks[n++] = b;
	if (blocks[n - 1] != nb - 1)
		blocks[n++] = nb - 1;
	return n;
}

/* the data words of list blocks blocks[0..n) not read yet into pl's bytes */
static void
read_list_blocks(GpxSegment *seg, GpxTermRef *ref, struct GpxPartList *pl, uint32 nb, uint32 data,
				 const uint32 *blocks, uint32 n)
{
	const uint32 *bitoff = (const uint32 *) (pl->skips + GPUIDX_HEADER_SIZE) + nb;
	uint64		run_from = 0;
	uint64		run_to = 0;

	/*
	 * Blocks are read in runs: a block starting on the page where the run
	 * ends, or the next one, joins it, so each page is read and its checksum
	 * computed once however many blocks it holds.
	 */
	for (uint32 i = 0; i < n; i++)
	{
		uint32		b = blocks[i];
		uint64		from;
		uint64		to;

		if (pl->loaded[b / 8] & (1 << (b % 8)))
			continue;
		pl->loaded[b / 8] |= 1 << (b % 8);
		/* whole words from the block's first bit to past its last (bit windows read one more) */
		from = data + (uint64) (bitoff[b] / 64) * 8;
		to = b + 1 < nb ? data + ((uint64) bitoff[b + 1] + 63) / 64 * 8 + 8 : ref->len;
		/* the offsets are checked once the list opens: stay inside its bytes */
		from = Min(from, ref->len);
		to = Min(Max(to, from), ref->len);
		if (run_to > run_from &&
			(ref->offset + from) / GPX_PAGE_CAPACITY <= (ref->offset + run_to) / GPX_PAGE_CAPACITY + 1)
		{
			run_from = Min(run_from, from);
			run_to = Max(run_to, to);
			continue;
		}
		if (run_to > run_from)
			read_list_range(seg, ref->page, ref->offset, (uint32) run_from, (uint32) run_to, pl->bytes);
		run_from = from;
		run_to = to;
	}
	if (run_to > run_from)
		read_list_range(seg, ref->page, ref->offset, (uint32) run_from, (uint32) run_to, pl->bytes);
}

static struct GpxPartList *
find_part_list(GpxSegment *seg, const GpxTermRef *ref)
{
	for (uint32 i = 0; i < seg->nparts; i++)
		if (seg->parts[i].page == ref->page && seg->parts[i].offset == ref->offset)
			return &seg->parts[i];
	return NULL;
}

/*
 * Dictionary entries this backend looked up lately, found or not.  A
 * segment never changes once written, so an entry is known for good by
 * (index file, segment id and header page, term); queries look up the same
 * terms again and again (and a query under a LIMIT, each window again),
 * and a lookup reads two or three pages and parses a leaf.  Direct-mapped
 * by a hash of the key, a colliding entry replaces the one there; the
 * whole cache is emptied when its memory passes TERM_CACHE_BYTES and on
 * any relation cache invalidation (an index dropped, rebuilt or truncated
 * sends one) or when this backend builds an index (TRUNCATE of a table
 * created in the same transaction rebuilds its index in the same file),
 * so a reused relfilenode never finds an old entry.
 * Temporary indexes are not cached (their relfilenodes may repeat).
 */
#define TERM_CACHE_SLOTS 4096
#define TERM_CACHE_BYTES (4 * 1024 * 1024)

/* what names a segment for good: the index's file, the segment's id and header page */
typedef struct SegmentKey
{
	RelFileLocator node;		/* its relation number InvalidOid: empty */
	uint32		segment;
	BlockNumber head;
} SegmentKey;

/* what names a remembered entry for good: its segment and a string */
typedef struct CacheKey
{
	SegmentKey	seg;
	int			len;
	char	   *term;			/* in term_cache_cxt */
} CacheKey;

typedef struct TermCacheEntry
{
	CacheKey	key;
	bool		found;
	GpxTermRef ref;				/* payload: its bytes (payload_len), kept here */
	uint32		payload_len;
	bool		dead_known;		/* dead_postings counted against dead_count dead docs */
	uint32		dead_count;
	uint64		dead_postings;
} TermCacheEntry;

static TermCacheEntry *term_cache;
static MemoryContext term_cache_cxt;

/* prefixes' sums (gpx_seg_prefix_stats), beside the entries and emptied with them */
#define PREFIX_CACHE_SLOTS 256

typedef struct PrefixCacheEntry
{
	CacheKey	key;			/* the prefix */
	GpxPrefixStats st;
} PrefixCacheEntry;

static PrefixCacheEntry *prefix_cache;

/*
 * The header and skip entries of the long lists this backend read in part
 * lately, as checked when first read.  They hold for good under their
 * segment's key and the list's place; a query reads them from here instead
 * of every page they fill, and checks only the end of the data it reads
 * (ef_check_tail), not every block's skip entry again (a list of every doc
 * of 7.3M has 57k).  Emptied with the dictionary cache on an invalidation,
 * and when its memory passes SKIP_CACHE_BYTES.
 *
 * A list read in part points into the entry rather than copying it (460 kB
 * for a list of every doc of 7.3M, a query).  So the entries a transaction
 * lent are never freed while it runs: emptying the cache then hands its
 * memory to the transaction's (freed when it ends) and starts another.
 * Past SKIP_CACHE_RETIRED of such memory a transaction's lists copy.
 */
#ifndef SKIP_CACHE_SLOTS		/* each can be set smaller to test the cache's emptying */
#define SKIP_CACHE_SLOTS 256
#endif
#ifndef SKIP_CACHE_BYTES
#define SKIP_CACHE_BYTES (8 * 1024 * 1024)
#endif
#ifndef SKIP_CACHE_RETIRED
#define SKIP_CACHE_RETIRED (64 * 1024 * 1024)
#endif

typedef struct SkipCacheEntry
{
	SegmentKey	seg;
	uint32		page;			/* the list's place and length */
	uint32		offset;
	uint32		len;
	char	   *skips;			/* header and skip entries, in skip_cache_cxt */
	pl_view		view;			/* pl_open's, its pointers into the bytes it was opened on */
} SkipCacheEntry;

static SkipCacheEntry *skip_cache;
static MemoryContext skip_cache_cxt;
static bool skip_cache_lent;	/* a list points into skip_cache_cxt */
static Size skip_cache_retired; /* bytes of emptied caches the transactions hold */

/*
 * The doc length codes (gpx_dl_code) of segments' docs, by chunks of
 * GPX_DOCMAP_CHUNK.  Decoding a block of positions asks for the length of
 * each of its 128 postings' docs, and a rarer term's docs lie apart: read
 * one by one where they are (the chunk's directory entry and page, its
 * header, its bits), they were two fifths of the work of a GCIDE phrase
 * query under LIMIT 10.  A chunk read a second time is kept whole; one read
 * once is read where it is, as before, so a query of scattered docs costs
 * no more the first time.  Only segments of up to DLC_CACHE_MAX_CHUNKS
 * chunks: in the 57k chunks of a segment of all 7.3M debian-paths, the
 * chunks kept were read again too seldom to pay for unpacking them (3%
 * more instructions a phrase query), where GCIDE's 1,591 took 14% fewer
 * the first time and 27% fewer once kept.  A segment's lengths never
 * change; the cache is emptied with the others, and when it passes
 * DLC_CACHE_BYTES.
 */
#ifndef DLC_CACHE_SLOTS			/* each can be set smaller to test the cache's emptying */
#define DLC_CACHE_SLOTS 16
#endif
#ifndef DLC_CACHE_BYTES
#define DLC_CACHE_BYTES (8 * 1024 * 1024)
#endif

#define DLC_RUN_READ	8			/* a run of as many docs of a chunk is read where it is */
#define DLC_CACHE_MAX_CHUNKS 8192	/* segments of up to 1M docs: a larger one's chunks are seldom read again */

typedef struct DlcCacheEntry
{
	SegmentKey	seg;
	uint32		nchunks;
	uint8	   *seen;			/* a bit a chunk: read once */
	uint8	  **codes;			/* a chunk's GPX_DOCMAP_CHUNK codes, or NULL */
} DlcCacheEntry;

static DlcCacheEntry *dlc_cache;
static MemoryContext dlc_cache_cxt;

static void
term_cache_empty(void)
{
	MemoryContextReset(term_cache_cxt);
	memset(term_cache, 0, TERM_CACHE_SLOTS * sizeof(TermCacheEntry));
	memset(prefix_cache, 0, PREFIX_CACHE_SLOTS * sizeof(PrefixCacheEntry));
}

static void
skip_cache_retired_gone(void *arg)
{
	skip_cache_retired -= (Size) (uintptr_t) arg;
}

static void
skip_cache_empty(void)
{
	if (skip_cache_lent && TopTransactionContext != NULL)
	{
		/* lists of this transaction may point into it: it goes when the transaction does */
		Size		bytes = MemoryContextMemAllocated(skip_cache_cxt, true);
		MemoryContextCallback *gone = MemoryContextAlloc(skip_cache_cxt, sizeof(MemoryContextCallback));

		gone->func = skip_cache_retired_gone;
		gone->arg = (void *) (uintptr_t) bytes;
		MemoryContextRegisterResetCallback(skip_cache_cxt, gone);
		MemoryContextSetParent(skip_cache_cxt, TopTransactionContext);
		skip_cache_retired += bytes;
		skip_cache_cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx skip entries cache",
											   ALLOCSET_DEFAULT_SIZES);
	}
	else
		MemoryContextReset(skip_cache_cxt);
	skip_cache_lent = false;
	memset(skip_cache, 0, SKIP_CACHE_SLOTS * sizeof(SkipCacheEntry));
}

static void
dlc_cache_empty(void)
{
	MemoryContextReset(dlc_cache_cxt);
	memset(dlc_cache, 0, DLC_CACHE_SLOTS * sizeof(DlcCacheEntry));
}

/* every cache emptied: on any relation cache invalidation, and when this backend builds an index */
static void
caches_reset(Datum arg, Oid relid)
{
	if (term_cache == NULL)
		return;
	term_cache_empty();
	skip_cache_empty();
	dlc_cache_empty();
}

void
gpx_seg_forget_cached(void)
{
	caches_reset((Datum) 0, InvalidOid);
}

/* the caches, made at a backend's first use; false for a segment they leave out */
static bool
caches_ready(GpxSegment *seg)
{
	if (RelationUsesLocalBuffers(seg->index))
		return false;
	if (term_cache == NULL)
	{
		term_cache_cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx term cache",
											   ALLOCSET_DEFAULT_SIZES);
		skip_cache_cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx skip entries cache",
											   ALLOCSET_DEFAULT_SIZES);
		term_cache = MemoryContextAllocZero(TopMemoryContext, TERM_CACHE_SLOTS * sizeof(TermCacheEntry));
		prefix_cache = MemoryContextAllocZero(TopMemoryContext, PREFIX_CACHE_SLOTS * sizeof(PrefixCacheEntry));
		skip_cache = MemoryContextAllocZero(TopMemoryContext, SKIP_CACHE_SLOTS * sizeof(SkipCacheEntry));
		dlc_cache_cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx doc length codes cache",
											  ALLOCSET_DEFAULT_SIZES);
		dlc_cache = MemoryContextAllocZero(TopMemoryContext, DLC_CACHE_SLOTS * sizeof(DlcCacheEntry));
		CacheRegisterRelcacheCallback(caches_reset, (Datum) 0);
	}
	return true;
}

static bool
segment_key_holds(const SegmentKey *k, GpxSegment *seg)
{
	return gpx_locator_number(k->node) != InvalidOid &&
		RelFileLocatorEquals(k->node, gpx_rel_locator(seg->index)) &&
		k->segment == seg->ref.id && k->head == seg->ref.head;
}

static void
segment_key_set(SegmentKey *k, GpxSegment *seg)
{
	k->node = gpx_rel_locator(seg->index);
	k->segment = seg->ref.id;
	k->head = seg->ref.head;
}

static uint32
segment_hash(GpxSegment *seg)
{
	return hash_bytes_uint32(seg->ref.id ^ gpx_locator_number(gpx_rel_locator(seg->index)));
}

static TermCacheEntry *
term_cache_slot(GpxSegment *seg, const char *term, int len)
{
	if (!caches_ready(seg))
		return NULL;
	return &term_cache[(hash_bytes((const unsigned char *) term, len) ^ segment_hash(seg)) % TERM_CACHE_SLOTS];
}

static bool
cache_key_holds(const CacheKey *k, GpxSegment *seg, const char *term, int len)
{
	return segment_key_holds(&k->seg, seg) && k->len == len && memcmp(k->term, term, len) == 0;
}

/* the caller has made room (term_cache_put) */
static void
cache_key_set(CacheKey *k, GpxSegment *seg, const char *term, int len)
{
	segment_key_set(&k->seg, seg);
	k->len = len;
	k->term = MemoryContextAlloc(term_cache_cxt, Max(len, 1));
	memcpy(k->term, term, len);
}

static SkipCacheEntry *
skip_cache_slot(GpxSegment *seg, const GpxTermRef *ref)
{
	if (!caches_ready(seg))
		return NULL;
	return &skip_cache[(hash_bytes_uint32(ref->page ^ (ref->offset << 17)) ^ segment_hash(seg)) % SKIP_CACHE_SLOTS];
}

static bool
skip_cache_holds(const SkipCacheEntry *c, GpxSegment *seg, const GpxTermRef *ref)
{
	return c != NULL && segment_key_holds(&c->seg, seg) &&
		c->page == ref->page && c->offset == ref->offset && c->len == ref->len;
}

/* a list's view, checked on bytes whose first skip_bytes are its header and skip entries */
static void
skip_cache_put(SkipCacheEntry *c, GpxSegment *seg, const GpxTermRef *ref, const char *bytes,
			   uint32 skip_bytes, const pl_view *view)
{
	if (c == NULL || skip_bytes > SKIP_CACHE_BYTES / 8)
		return;
	if (MemoryContextMemAllocated(skip_cache_cxt, true) + skip_bytes > SKIP_CACHE_BYTES)
		skip_cache_empty();
	else if (c->skips != NULL && !skip_cache_lent)
		pfree(c->skips);
	c->skips = MemoryContextAlloc(skip_cache_cxt, skip_bytes);
	memcpy(c->skips, bytes, skip_bytes);
	segment_key_set(&c->seg, seg);
	c->page = ref->page;
	c->offset = ref->offset;
	c->len = ref->len;
	c->view = *view;
}

/*
 * The entry's header and skip entries for a list to point into, or NULL
 * when the transaction has held too many emptied caches (the list copies).
 */
static const char *
skip_cache_lend(const SkipCacheEntry *c)
{
	if (TopTransactionContext == NULL || skip_cache_retired >= SKIP_CACHE_RETIRED)
		return NULL;
	skip_cache_lent = true;
	return c->skips;
}

/* the cached view on a list's skip entries (skips) and data (bytes, the list's length) */
static void
skip_cache_view(const SkipCacheEntry *c, const char *skips, const char *bytes, uint32 data, pl_view *view)
{
	*view = c->view;
	view->block_first = (const uint32 *) (skips + GPUIDX_HEADER_SIZE);
	view->block_bitoff = view->block_first + view->nblocks;
	view->data = (const uint8 *) (bytes + data);
}

/*
 * A long EF list read in part: the header, the skip entries, then the data
 * of the blocks the probes can reach (probes != NULL) or of those holding
 * docs of [lo, hi).  False, having read nothing, for a list read whole.
 */
static bool
list_in_part(GpxSegment *seg, GpxTermRef *ref, const uint32 *probes, uint32 nprobes, bool whole,
			 uint32 lo, uint32 hi, GpxList *list)
{
	struct GpxPartList *kept;
	struct GpxPartList pl;
	gpuidx_list_header hdr;
	uint32		nb;
	uint32		data;
	uint32	   *blocks;
	uint32		nblocks;
	const uint32 *first;
	pl_status	st;
	bool		keep = false;
	SkipCacheEntry *cached = NULL;
	bool		cached_holds = false;
	MemoryContext old;

	/* worth it for EF lists of several pages only: the rest is read whole */
	if (!ref->external || ref->len < 2 * GPX_PAGE_CAPACITY)
		return false;
	kept = find_part_list(seg, ref);
	if (kept != NULL)
	{
		nb = kept->view.nblocks;
		data = GPUIDX_HEADER_SIZE + nb * 8;
		pl = *kept;
	}
	else
	{
		cached = skip_cache_slot(seg, ref);
		cached_holds = skip_cache_holds(cached, seg, ref);
		if (cached_holds)
			nb = cached->view.nblocks;
		else
		{
			read_list_range(seg, ref->page, ref->offset, 0, GPUIDX_HEADER_SIZE, (char *) &hdr);
			if (hdr.codec != GPUIDX_CODEC_EF || hdr.count != ref->df || hdr.count > GPUIDX_MAX_POSTINGS)
				return false;
			nb = gpuidx_ef_block_count(hdr.count);
		}
		data = GPUIDX_HEADER_SIZE + nb * 8;
		if (nb == 0 || data + 8 > ref->len)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, ref->page, "list is shorter than its skip entries");
		/* the segment's memory when it keeps the list, else the caller's */
		keep = keep_part_list(ref->len, nb);
		old = MemoryContextSwitchTo(keep ? seg->mcxt : CurrentMemoryContext);
		pl.page = ref->page;
		pl.offset = ref->offset;
		pl.bytes = palloc_extended(ref->len, MCXT_ALLOC_HUGE);
		pl.loaded = palloc0((nb + 7) / 8);
		MemoryContextSwitchTo(old);
		/* the header and the skip entries: the cache's, or read */
		pl.skips = cached_holds ? skip_cache_lend(cached) : NULL;
		if (pl.skips == NULL)
		{
			if (cached_holds)
				memcpy(pl.bytes, cached->skips, data);
			else
				read_list_range(seg, ref->page, ref->offset, 0, data, pl.bytes);
			pl.skips = pl.bytes;
		}
	}
	first = (const uint32 *) (pl.skips + GPUIDX_HEADER_SIZE);
	if (probes != NULL)
	{
		blocks = palloc((Size) Min(nprobes + 1, nb) * sizeof(uint32));
		nblocks = probed_blocks(first, nb, probes, nprobes, whole, blocks);
	}
	else
	{
		blocks = palloc((Size) nb * sizeof(uint32));
		nblocks = window_blocks(first, nb, lo, hi, blocks);
	}
	read_list_blocks(seg, ref, &pl, nb, data, blocks, nblocks);
	pfree(blocks);

	if (kept == NULL)
	{
		/*
		 * The structure as for a whole list, but for the checksum the pages
		 * stood for; the skip entries' part of it once a backend.
		 */
		if (cached_holds)
		{
			skip_cache_view(cached, pl.skips, pl.bytes, data, &pl.view);
			st = ef_check_tail(&pl.view);
		}
		else
			st = pl_open(&pl.view, pl.bytes, ref->len, 0);
		if (st != PL_OK)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, ref->page, pl_status_message(st));
		if (pl.view.count != ref->df || pl.view.last >= seg->hdr->ndocs)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, ref->page, "list does not match its dictionary entry");
		if (!cached_holds)
			skip_cache_put(cached, seg, ref, pl.bytes, data, &pl.view);
		if (keep)
		{
			if (seg->nparts == seg->maxparts)
			{
				seg->maxparts = Max(seg->maxparts * 2, 4);
				seg->parts = seg->parts == NULL ?
					MemoryContextAlloc(seg->mcxt, seg->maxparts * sizeof(pl)) :
					repalloc(seg->parts, seg->maxparts * sizeof(pl));
			}
			seg->parts[seg->nparts++] = pl;
			count_part_list(seg, ref->len, nb);
			kept = &seg->parts[seg->nparts - 1];
		}
	}
	list->view = pl.view;
	list->df = ref->df;
	/* a kept list is the segment's; the caller frees the rest */
	list->mem = kept != NULL ? NULL : pl.bytes;
	if (kept == NULL)
		pfree(pl.loaded);
	return true;
}

void
gpx_seg_list_probed(GpxSegment *seg, GpxTermRef *ref, const uint32 *probes, uint32 nprobes,
					bool whole_blocks, GpxList *list)
{
	if (!list_in_part(seg, ref, probes, nprobes, whole_blocks, 0, 0, list))
		gpx_seg_list(seg, ref, list);
}

void
gpx_seg_list_window(GpxSegment *seg, GpxTermRef *ref, uint32 lo, uint32 hi, GpxList *list)
{
	if ((lo > 0 || hi < seg->hdr->ndocs) && list_in_part(seg, ref, NULL, 0, false, lo, hi, list))
		return;
	gpx_seg_list(seg, ref, list);
}

void
gpx_seg_list_header(GpxSegment *seg, const GpxTermRef *ref, gpuidx_list_header *hdr)
{
	Assert(ref->external);
	if (ref->len < GPUIDX_HEADER_SIZE)
		gpx_seg_corrupt(seg, GPX_STREAM_LISTS, ref->page, "list is shorter than its header");
	read_list_range(seg, ref->page, ref->offset, 0, GPUIDX_HEADER_SIZE, (char *) hdr);
	if (hdr->version != GPUIDX_FORMAT_VERSION || hdr->count != ref->df || hdr->last >= seg->hdr->ndocs)
		gpx_seg_corrupt(seg, GPX_STREAM_LISTS, ref->page, "list does not match its dictionary entry");
}

bool
gpx_seg_leaf_for(GpxSegment *seg, const char *term, int len, uint32 *leaf)
{
	return descend(seg, term, len, leaf);
}

static bool
term_cache_holds(TermCacheEntry *c, GpxSegment *seg, const char *term, int len)
{
	return cache_key_holds(&c->key, seg, term, len);
}

static void
term_cache_put(TermCacheEntry *c, GpxSegment *seg, const char *term, int len, bool found,
			   const GpxTermRef *ref)
{
	uint32		payload_len = 0;

	if (MemoryContextMemAllocated(term_cache_cxt, true) > TERM_CACHE_BYTES)
		term_cache_empty();
	if (found && ref->payload != NULL)
		payload_len = gpx_term_payload_len(seg, ref);
	cache_key_set(&c->key, seg, term, len);
	c->found = found;
	c->dead_known = false;
	if (found)
		c->ref = *ref;
	c->ref.payload = NULL;
	c->payload_len = payload_len;
	if (payload_len > 0)
	{
		c->ref.payload = MemoryContextAlloc(term_cache_cxt, payload_len);
		memcpy(c->ref.payload, ref->payload, payload_len);
	}
}

/*
 * The iterator's terms with the prefix, from where it is to the end of the
 * leaf it then reads (or of the prefix's range), added to *st.  Returns
 * false once past the range.
 */
static bool
prefix_leaf_sums(GpxDictIter *it, const char *prefix, int len, GpxPrefixStats *st)
{
	while (gpx_dict_iter_next_prefixed(it, prefix, len))
	{
		st->terms++;
		st->df += it->df;
		if (it->external)
			st->list_pages += 1 + it->list_len / GPX_PAGE_CAPACITY;
		if (it->left == 0)
			return true;
	}
	return false;
}

/* the iterator to the start of leaf */
static void
dict_iter_at_leaf(GpxDictIter *it, uint32 leaf)
{
	it->leaf = leaf;
	it->left = 0;
	it->term_len = 0;
	it->sought = true;
}

/* the first term past every term with the prefix, in *succ: false when none is */
static bool
prefix_successor(const char *prefix, int len, char *succ, int *succ_len)
{
	while (len > 0 && (uint8) prefix[len - 1] == 0xFF)
		len--;
	if (len == 0)
		return false;
	memcpy(succ, prefix, len);
	succ[len - 1] = (char) ((uint8) succ[len - 1] + 1);
	*succ_len = len;
	return true;
}

/* a prefix over more leaves than this is sampled */
#define PREFIX_EXACT_LEAVES 16
#define PREFIX_SAMPLED_LEAVES 8

void
gpx_seg_prefix_stats(GpxSegment *seg, const char *prefix, int len, GpxPrefixStats *st)
{
	/* the term cache's slot for the prefix, as its key, picks the prefix's slot too */
	TermCacheEntry *t = term_cache_slot(seg, prefix, len);
	PrefixCacheEntry *c = t ? &prefix_cache[(t - term_cache) % PREFIX_CACHE_SLOTS] : NULL;
	GpxDictIter it;
	char		succ[GPX_MAX_TERM_LEN];
	int			succ_len = 0;
	uint32		first = 0;
	uint32		last;

	if (c != NULL && cache_key_holds(&c->key, seg, prefix, len))
	{
		*st = c->st;
		return;
	}
	memset(st, 0, sizeof(*st));
	if (seg->hdr->nterms > 0)
	{
		/* the leaves the prefix's terms lie on: from its own to its successor's */
		(void) descend(seg, prefix, len, &first);
		last = seg->hdr->streams[GPX_STREAM_LEAF].npages - 1;
		if (prefix_successor(prefix, Min(len, GPX_MAX_TERM_LEN), succ, &succ_len) &&
			!descend(seg, succ, succ_len, &last))
			last = 0;			/* before the first separator: on the first leaf */
		last = Max(first, last);
		st->leaves = last - first + 1;
		gpx_dict_iter_init(&it, seg);
		/* where gpx_dict_iter_seek would put it: first is the prefix's leaf */
		dict_iter_at_leaf(&it, first);
		if (st->leaves <= PREFIX_EXACT_LEAVES)
		{
			/* every term walked */
			while (prefix_leaf_sums(&it, prefix, len, st))
				;
		}
		else
		{
			/*
			 * Many leaves (a short prefix of a large dictionary: "lib",
			 * tens of thousands of terms): the first and last leaves
			 * walked, the others sampled evenly and scaled up, so that a
			 * plan or an operand's order costs a few leaves, not all.
			 * Each inner leaf holds only terms with the prefix.
			 */
			uint32		inner = st->leaves - 2;
			GpxPrefixStats s = {0};

			(void) prefix_leaf_sums(&it, prefix, len, st);
			for (int k = 0; k < PREFIX_SAMPLED_LEAVES; k++)
			{
				dict_iter_at_leaf(&it, first + 1 + (uint32) ((uint64) inner * (2 * k + 1) / (2 * PREFIX_SAMPLED_LEAVES)));
				(void) prefix_leaf_sums(&it, prefix, len, &s);
			}
			st->terms += (uint64) ((double) s.terms * inner / PREFIX_SAMPLED_LEAVES);
			st->df += Max((uint64) ((double) s.df * inner / PREFIX_SAMPLED_LEAVES), st->terms);
			st->list_pages += s.list_pages * inner / PREFIX_SAMPLED_LEAVES;
			dict_iter_at_leaf(&it, last);
			(void) prefix_leaf_sums(&it, prefix, len, st);
		}
		gpx_dict_iter_end(&it);
	}
	if (c == NULL)
		return;
	if (MemoryContextMemAllocated(term_cache_cxt, true) > TERM_CACHE_BYTES)
		term_cache_empty();
	cache_key_set(&c->key, seg, prefix, len);
	c->st = *st;
}

uint32
gpx_term_payload_len(GpxSegment *seg, const GpxTermRef *ref)
{
	return ref->len + (seg->hdr->flags & GPX_SEG_FREQS ? ref->df : 0) + ref->pos_len;
}

bool
gpx_seg_find(GpxSegment *seg, const char *term, int len, GpxTermRef *ref)
{
	TermCacheEntry *c = term_cache_slot(seg, term, len);
	uint32		leaf;
	GpxLeafEntry e;
	bool		found;

	if (c != NULL && term_cache_holds(c, seg, term, len))
	{
		if (!c->found)
			return false;
		*ref = c->ref;
		if (c->payload_len > 0)
		{
			ref->payload = palloc(c->payload_len);
			memcpy(ref->payload, c->ref.payload, c->payload_len);
		}
		return true;
	}
	ref->payload = NULL;
	found = descend(seg, term, len, &leaf) && leaf_find(seg, leaf, term, len, &e, &ref->payload);
	if (found)
	{
		ref->df = e.df;
		ref->external = e.external;
		ref->len = e.len;
		ref->page = e.external ? e.page : 0;
		ref->offset = e.external ? e.offset : 0;
		ref->freq_page = e.external && (seg->hdr->flags & GPX_SEG_FREQS) ? e.freq_page : 0;
		ref->freq_offset = e.external && (seg->hdr->flags & GPX_SEG_FREQS) ? e.freq_offset : 0;
		ref->pos_page = e.pos_page;
		ref->pos_offset = e.pos_offset;
		ref->pos_len = e.pos_len;
		ref->pos_flags = e.pos_flags;
	}
	if (c != NULL)
		term_cache_put(c, seg, term, len, found, ref);
	return found;
}

/*
 * A found term's postings among the segment's dead docs, as remembered
 * with its entry for the count of dead docs the segment's reader holds now.
 * Docs are only ever marked dead, never cleared, and a segment's id is
 * never reused: a count names one set.
 */
bool
gpx_seg_dead_postings_known(GpxSegment *seg, const char *term, int len, uint64 *postings)
{
	TermCacheEntry *c = term_cache_slot(seg, term, len);

	if (c == NULL || !term_cache_holds(c, seg, term, len) || !c->found || !c->dead_known ||
		c->dead_count != seg->ref.ndead)
		return false;
	*postings = c->dead_postings;
	return true;
}

/* remembers postings for seg->ref.ndead, when the term's entry is cached */
void
gpx_seg_dead_postings_remember(GpxSegment *seg, const char *term, int len, uint64 postings)
{
	TermCacheEntry *c = term_cache_slot(seg, term, len);

	if (c == NULL || !term_cache_holds(c, seg, term, len) || !c->found)
		return;
	c->dead_known = true;
	c->dead_count = seg->ref.ndead;
	c->dead_postings = postings;
}

/*
 * Has VACUUM marked no doc of the segment dead since its reader's count
 * (seg->ref.ndead)?  The metapage's count is written with each bitmap page,
 * under its lock: equal now, the bitmap read meanwhile held that many.
 */
bool
gpx_seg_dead_unchanged(GpxSegment *seg)
{
	GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
	int			k;
	bool		same;

	gpx_meta_read(seg->index, meta);
	k = gpx_meta_find_segment(meta, seg->ref.id);
	same = k >= 0 && meta->segments[k].ndead == seg->ref.ndead;
	pfree(meta);
	return same;
}

void
gpx_seg_list(GpxSegment *seg, GpxTermRef *ref, GpxList *list)
{
	if (ref->external)
		open_external(seg, ref->df, ref->len, ref->page, ref->offset, list);
	else
	{
		open_inline(seg, ref->payload, ref->len, ref->df, list);
		pfree(ref->payload);
		ref->payload = NULL;
	}
}

void
gpx_list_free(GpxList *list)
{
	if (list->mem)
		pfree(list->mem);
	list->mem = NULL;
}

/*
 * The document frequencies of the terms of up to nleaves leaf pages spread
 * evenly over the dictionary (terms are in byte order there, so these are
 * a sample of the terms that does not depend on their frequencies), into
 * a palloc'd array; *n: how many.
 */
uint32 *
gpx_seg_sample_dfs(GpxSegment *seg, uint32 nleaves, uint32 *n)
{
	uint32		npages = seg->hdr->streams[GPX_STREAM_LEAF].npages;
	GpxSegLimits limits = seg_limits(seg);
	uint32		cap = 256;
	uint32	   *dfs = palloc(cap * sizeof(uint32));
	char	   *copy = palloc(GPX_PAGE_CAPACITY);

	*n = 0;
	nleaves = Min(nleaves, npages);
	for (uint32 i = 0; i < nleaves; i++)
	{
		uint32		pageno = (uint32) ((uint64) i * npages / nleaves);
		Buffer		buf;
		uint32		used;
		GpxLeafLayout leaf;
		const uint8 *p;
		const uint8 *end;

		CHECK_FOR_INTERRUPTS();
		buf = gpx_seg_read(seg, GPX_STREAM_LEAF, pageno);
		used = gpx_page_used(BufferGetPage(buf));
		memcpy(copy, PageGetContents(BufferGetPage(buf)), used);
		UnlockReleaseBuffer(buf);
		leaf_layout(seg, pageno, copy, used, &leaf);
		p = leaf.entries;
		end = (const uint8 *) copy + used;
		for (uint32 e = 0; e < leaf.hdr.nentries; e++)
		{
			GpxLeafEntry entry;

			if (!gpx_parse_leaf_entry(&p, end, &limits, &entry))
				gpx_seg_corrupt(seg, GPX_STREAM_LEAF, pageno, "entry is malformed");
			if (*n == cap)
			{
				cap *= 2;
				dfs = repalloc(dfs, cap * sizeof(uint32));
			}
			dfs[(*n)++] = entry.df;
		}
	}
	pfree(copy);
	return dfs;
}

/* ---------------------------------------------------------------------------
 * Iterating over every term
 */
void
gpx_dict_iter_init(GpxDictIter *it, GpxSegment *seg)
{
	memset(it, 0, offsetof(GpxDictIter, term));
	it->seg = seg;
	it->page = palloc(GPX_PAGE_CAPACITY);
	it->term_len = 0;
}

void
gpx_dict_iter_seek(GpxDictIter *it, const char *term, int len)
{
	uint32		leaf;

	/* a term before the first separator is on the first leaf */
	dict_iter_at_leaf(it, descend(it->seg, term, len, &leaf) ? leaf : 0);
}

bool
gpx_dict_iter_next_prefixed(GpxDictIter *it, const char *prefix, int len)
{
	while (gpx_dict_iter_next(it))
	{
		if (it->term_len >= len && memcmp(it->term, prefix, len) == 0)
			return true;
		/* the terms with the prefix are a range: before it on its leaf, or past it */
		if (gpx_term_cmp((const uint8 *) it->term, it->term_len, (const uint8 *) prefix, len) > 0)
			return false;
	}
	return false;
}

bool
gpx_dict_iter_next(GpxDictIter *it)
{
	GpxSegment *seg = it->seg;
	GpxSegLimits limits = seg_limits(seg);
	const uint8 *p;
	const uint8 *end;
	GpxLeafEntry e;
	char		prev[GPX_MAX_TERM_LEN];
	int			prev_len = it->term_len;

	while (it->left == 0)
	{
		Buffer		buf;
		Page		page;
		GpxLeafLayout leaf;

		if (it->leaf >= seg->hdr->streams[GPX_STREAM_LEAF].npages)
		{
			if (it->ordinal != seg->hdr->nterms)
				gpx_seg_corrupt(seg, -1, 0, "the dictionary holds fewer terms than the header says");
			return false;
		}
		CHECK_FOR_INTERRUPTS();
		buf = gpx_seg_read(seg, GPX_STREAM_LEAF, it->leaf);
		page = BufferGetPage(buf);
		it->page_len = gpx_page_used(page);
		memcpy(it->page, PageGetContents(page), it->page_len);
		UnlockReleaseBuffer(buf);
		leaf_layout(seg, it->leaf, it->page, it->page_len, &leaf);
		if (it->sought)
			it->ordinal = leaf.hdr.first_term;
		it->sought = false;
		if (leaf.hdr.first_term != it->ordinal)
			gpx_seg_corrupt(seg, GPX_STREAM_LEAF, it->leaf, "leaf's first term ordinal is wrong");
		it->pos = leaf.entries - (const uint8 *) it->page;
		it->left = leaf.hdr.nentries;
		it->leaf_no = it->leaf++;
	}
	p = (const uint8 *) it->page + it->pos;
	end = (const uint8 *) it->page + it->page_len;
	if (!gpx_parse_leaf_entry(&p, end, &limits, &e) || e.shared > (uint32) it->term_len)
		gpx_seg_corrupt(seg, GPX_STREAM_LEAF, it->leaf_no, "entry is malformed");
	memcpy(prev, it->term, prev_len);
	memcpy(it->term + e.shared, e.suffix, e.suffix_len);
	it->term_len = e.shared + e.suffix_len;
	if (it->ordinal > 0 && gpx_term_cmp((const uint8 *) prev, prev_len, (const uint8 *) it->term, it->term_len) >= 0)
		gpx_seg_corrupt(seg, GPX_STREAM_LEAF, it->leaf_no, "terms are out of order");
	it->df = e.df;
	it->external = e.external;
	it->list_len = e.len;
	it->list_page = e.page;
	it->list_off = e.offset;
	it->inline_data = e.external ? NULL : e.payload;
	it->inline_tfs = e.external ? NULL : e.tfs;
	it->inline_tf_width = e.tf_width;
	it->freq_page = e.external ? e.freq_page : 0;
	it->freq_off = e.external ? e.freq_offset : 0;
	it->pos_page = e.pos_page;
	it->pos_off = e.pos_offset;
	it->pos_record = e.pos_record;
	it->pos_len = e.pos_len;
	it->pos_flags = e.pos_flags;
	it->pos = p - (const uint8 *) it->page;
	it->left--;
	it->ordinal++;
	if (it->left == 0 && p != end)
		gpx_seg_corrupt(seg, GPX_STREAM_LEAF, it->leaf_no, "leaf has bytes after its last entry");
	return true;
}

void
gpx_dict_iter_list(GpxDictIter *it, GpxList *list)
{
	if (it->external)
		open_external(it->seg, it->df, it->list_len, it->list_page, it->list_off, list);
	else
		open_inline(it->seg, it->inline_data, it->list_len, it->df, list);
}

void
gpx_dict_iter_list_probed(GpxDictIter *it, const uint32 *probes, uint32 nprobes, bool whole_blocks,
						  GpxList *list)
{
	GpxTermRef	ref = {0};

	if (!it->external)
	{
		open_inline(it->seg, it->inline_data, it->list_len, it->df, list);
		return;
	}
	ref.df = it->df;
	ref.external = true;
	ref.len = it->list_len;
	ref.page = it->list_page;
	ref.offset = it->list_off;
	if (!list_in_part(it->seg, &ref, probes, nprobes, whole_blocks, 0, 0, list))
		open_external(it->seg, it->df, it->list_len, it->list_page, it->list_off, list);
}

void
gpx_dict_iter_end(GpxDictIter *it)
{
	pfree(it->page);
}

/* ---------------------------------------------------------------------------
 * Reading a list a block at a time
 *
 * Merges read every block of every list in order: they read each list
 * through three byte streams (the skip entries, a second array of them, the
 * data), each holding one page, and decode one block at a time, so a list of
 * any length costs the same memory.  Every page is checked by its own
 * checksum, and each block's structure, order and bounds as it is decoded.
 * The list's own checksum is not: that would take a second pass over its
 * bytes, and the page checksums already cover them.
 */


void
gpx_list_bytes_init(ListBytes *lb, GpxSegment *seg, int stream, uint32 page, uint32 offset, uint32 len)
{
	lb->seg = seg;
	lb->stream = stream;
	lb->page = page;
	lb->offset = offset;
	lb->len = len;
	lb->held = PG_UINT32_MAX;
	lb->data = palloc(GPX_PAGE_CAPACITY);
}

void
gpx_list_bytes_read(ListBytes *lb, uint32 from, uint32 n, void *dst)
{
	uint64		pos = (uint64) lb->page * GPX_PAGE_CAPACITY + lb->offset + from;
	char	   *out = dst;

	if (from > lb->len || n > lb->len - from)
		gpx_seg_corrupt(lb->seg, lb->stream, lb->page, "list is shorter than its structure");
	while (n > 0)
	{
		uint32		pageno = (uint32) (pos / GPX_PAGE_CAPACITY);
		uint32		off = (uint32) (pos % GPX_PAGE_CAPACITY);
		uint32		take;

		if (lb->held != pageno)
		{
			Buffer		buf = gpx_seg_read(lb->seg, lb->stream, pageno);
			Page		page = BufferGetPage(buf);
			const char *problem = gpx_buffer_problem(lb->seg->index, buf);

			if (problem != NULL)
				gpx_seg_corrupt(lb->seg, lb->stream, pageno, problem);
			lb->used = gpx_page_used(page);
			memcpy(lb->data, PageGetContents(page), lb->used);
			UnlockReleaseBuffer(buf);
			lb->held = pageno;
		}
		take = off < lb->used ? Min(n, lb->used - off) : 0;
		if (take < n && off + take != GPX_PAGE_CAPACITY)
			gpx_seg_corrupt(lb->seg, lb->stream, pageno, "a list runs past the page's contents");
		memcpy(out, lb->data + off, take);
		out += take;
		pos += take;
		n -= take;
	}
}

uint32
gpx_list_bytes_u32(ListBytes *lb, uint32 at)
{
	uint32		v;

	gpx_list_bytes_read(lb, at, sizeof(v), &v);
	return v;
}

struct GpxListReader
{
	GpxSegment *seg;
	uint32		df;
	uint32		block;			/* the next one */
	uint32		done;			/* postings read */
	/* inline lists */
	bool		inl;
	GpxInlineCursor inl_cursor;
	/* lists in the LISTS stream */
	uint32		list_page;
	uint32		list_offset;
	uint32		len;
	gpuidx_list_header hdr;
	uint32		nb;
	uint32		data_start;		/* offset of the data area (EF, LRC) */
	uint64		bits;			/* of the blocks read so far */
	int64		prev_first;
	ListBytes	skip;			/* EF first postings; LRC segment records; raw values */
	ListBytes	skip2;			/* EF bit offsets */
	ListBytes	words;			/* the data area */
	uint64		window[GPUIDX_LRC_SEGMENT * 32 / 64 + 4];
};

GpxListReader *
gpx_list_reader_begin(GpxDictIter *it)
{
	GpxListReader *r = palloc0(sizeof(GpxListReader));
	GpxSegment *seg = it->seg;
	uint32		skip_bytes;

	r->seg = seg;
	r->df = it->df;
	r->prev_first = -1;
	if (!it->external)
	{
		r->inl = true;
		gpx_inline_begin(&r->inl_cursor, it->inline_data, it->inline_data + it->list_len, it->df,
						 seg->hdr->ndocs, (seg->hdr->flags & GPX_SEG_PACKED_LEAF) != 0);
		return r;
	}
	r->list_page = it->list_page;
	r->list_offset = it->list_off;
	r->len = it->list_len;
	gpx_list_bytes_init(&r->skip, seg, GPX_STREAM_LISTS, r->list_page, r->list_offset, r->len);
	gpx_list_bytes_init(&r->skip2, seg, GPX_STREAM_LISTS, r->list_page, r->list_offset, r->len);
	gpx_list_bytes_init(&r->words, seg, GPX_STREAM_LISTS, r->list_page, r->list_offset, r->len);
	gpx_list_bytes_read(&r->skip, 0, GPUIDX_HEADER_SIZE, &r->hdr);
	if (r->hdr.version != GPUIDX_FORMAT_VERSION || r->hdr.codec >= GPUIDX_NUM_CODECS ||
		r->hdr.flags != 0 || r->hdr.count != r->df || r->hdr.last >= seg->hdr->ndocs)
		gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, "list header does not match its dictionary entry");
	switch (r->hdr.codec)
	{
		case GPUIDX_CODEC_RAW:
			r->nb = gpuidx_ef_block_count(r->hdr.count);
			skip_bytes = r->hdr.count * sizeof(uint32);
			if (r->len != GPUIDX_HEADER_SIZE + skip_bytes)
				gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_LENGTH));
			break;
		case GPUIDX_CODEC_EF:
			r->nb = gpuidx_ef_block_count(r->hdr.count);
			skip_bytes = r->nb * 8;
			break;
		default:
			r->nb = gpuidx_lrc_segment_count(r->hdr.count);
			skip_bytes = r->nb * GPUIDX_LRC_SEGMENT_SIZE;
			break;
	}
	r->data_start = GPUIDX_HEADER_SIZE + skip_bytes;
	return r;
}

/* the data words of a block of nbits at bit offset bitoff, into the window */
static uint32
read_block_words(GpxListReader *r, uint64 bitoff, uint64 nbits)
{
	uint32		from = r->data_start + (uint32) (bitoff / 64) * 8;
	uint64		words = (bitoff % 64 + nbits + 63) / 64 + 1;	/* bit windows read one more */

	if (words > lengthof(r->window))
		gpx_seg_corrupt(r->seg, GPX_STREAM_LISTS, r->list_page, "list block is too large");
	gpx_list_bytes_read(&r->words, from, (uint32) (words * 8), r->window);
	return (uint32) (bitoff % 64);
}

uint32
gpx_list_reader_next(GpxListReader *r, uint32 *out)
{
	GpxSegment *seg = r->seg;
	uint32		b = r->block;
	uint32		n = 0;
	pl_view		v;

	if (r->inl)
	{
		/* an inline list, decoded a block's worth at a time */
		while (r->done < r->df && n < GPUIDX_EF_BLOCK)
		{
			const char *problem = gpx_inline_next(&r->inl_cursor, &out[n++]);

			if (problem != NULL)
				gpx_seg_corrupt(seg, GPX_STREAM_LEAF, PG_UINT32_MAX, problem);
			r->done++;
		}
		if (r->done == r->df && r->inl_cursor.p != r->inl_cursor.end)
			gpx_seg_corrupt(seg, GPX_STREAM_LEAF, PG_UINT32_MAX, "inline list is longer than its count");
		return n;
	}
	if (b >= r->nb)
	{
		/* the end: every byte of the list accounted for */
		if (r->hdr.codec != GPUIDX_CODEC_RAW && r->len != r->data_start + gpuidx_data_area_bytes(r->bits))
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_LENGTH));
		return 0;
	}
	CHECK_FOR_INTERRUPTS();
	memset(&v, 0, sizeof(v));
	v.codec = r->hdr.codec;
	v.nblocks = 1;
	if (r->hdr.codec == GPUIDX_CODEC_RAW)
	{
		n = gpuidx_ef_block_len(r->hdr.count, b);
		gpx_list_bytes_read(&r->skip, GPUIDX_HEADER_SIZE + b * GPUIDX_EF_BLOCK * sizeof(uint32),
						n * sizeof(uint32), out);
		for (uint32 i = 0; i < n; i++)
			if ((int64) out[i] <= (i == 0 ? r->prev_first : (int64) out[i - 1]) || out[i] > r->hdr.last)
				gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_ORDER));
		if (b + 1 == r->nb && out[n - 1] != r->hdr.last)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_ORDER));
		r->prev_first = out[n - 1];
	}
	else if (r->hdr.codec == GPUIDX_CODEC_EF)
	{
		uint32		first = gpx_list_bytes_u32(&r->skip, GPUIDX_HEADER_SIZE + b * 4);
		uint32		bitoff = gpx_list_bytes_u32(&r->skip2, GPUIDX_HEADER_SIZE + r->nb * 4 + b * 4);
		uint32		limit = b + 1 < r->nb ? gpx_list_bytes_u32(&r->skip, GPUIDX_HEADER_SIZE + (b + 1) * 4) - 1
			: r->hdr.last;
		uint64		universe = (uint64) limit - first + 1;
		uint32		rel;
		uint64		nbits;
		int			got;

		n = gpuidx_ef_block_len(r->hdr.count, b);
		if ((int64) first <= r->prev_first || limit < first || universe < n || bitoff != r->bits ||
			(gpuidx_ef_block_kind(universe, n) == GPUIDX_EF_ELIAS_FANO && gpuidx_ef_low_bits(universe, n) >= 32))
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_STRUCTURE));
		nbits = gpuidx_ef_block_bits(universe, n);
		rel = read_block_words(r, bitoff, nbits);
		/* the block as a list of its own: its universe ends at limit */
		v.count = n;
		v.last = limit;
		v.block_first = &first;
		v.block_bitoff = &rel;
		v.data = (const uint8 *) r->window;
		got = ef_decode_block(&v, 0, out);
		if (got < 0 || (b + 1 == r->nb && out[n - 1] != r->hdr.last))
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_ORDER));
		r->bits += nbits;
		r->prev_first = first;
	}
	else
	{
		gpuidx_lrc_segment seg_rec;
		uint32		limit;
		uint64		nbits;
		int			got;

		gpx_list_bytes_read(&r->skip, GPUIDX_HEADER_SIZE + b * GPUIDX_LRC_SEGMENT_SIZE, sizeof(seg_rec), &seg_rec);
		limit = b + 1 < r->nb ? gpx_list_bytes_u32(&r->skip2, GPUIDX_HEADER_SIZE + (b + 1) * GPUIDX_LRC_SEGMENT_SIZE) - 1
			: r->hdr.last;
		n = gpuidx_lrc_segment_len(r->hdr.count, b);
		if ((int64) seg_rec.first <= r->prev_first || limit < seg_rec.first ||
			(uint64) limit - seg_rec.first + 1 < n || seg_rec.width > 32 || seg_rec.bitoff != r->bits ||
			gpuidx_lrc_slope(&seg_rec) > GPUIDX_LRC_SLOPE_MAX ||
			gpuidx_lrc_intercept(&seg_rec) > (int64) seg_rec.first ||
			gpuidx_lrc_intercept(&seg_rec) < (int64) seg_rec.first - (int64) seg_rec.max_dev)
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_STRUCTURE));
		nbits = (uint64) n * seg_rec.width;
		r->prev_first = seg_rec.first;
		seg_rec.bitoff = read_block_words(r, r->bits, nbits);
		v.count = n;
		v.last = limit;
		v.segs = &seg_rec;
		v.data = (const uint8 *) r->window;
		got = lrc_decode_block(&v, 0, out);
		if (got < 0 || out[0] != seg_rec.first || (b + 1 == r->nb && out[n - 1] != r->hdr.last))
			gpx_seg_corrupt(seg, GPX_STREAM_LISTS, r->list_page, pl_status_message(PL_ERR_ORDER));
		r->bits += nbits;
	}
	r->block++;
	r->done += n;
	return n;
}

void
gpx_list_reader_end(GpxListReader *r)
{
	if (!r->inl)
	{
		pfree(r->skip.data);
		pfree(r->skip2.data);
		pfree(r->words.data);
	}
	pfree(r);
}

/* ---------------------------------------------------------------------------
 * Doc map and dead docs
 */
/* a page of an immutable stream, copied once per reader */
static const char *
cached_page(GpxSegment *seg, int stream, uint32 pageno, GpxPageCopy *copy)
{
	if (copy->pageno != pageno)
	{
		Buffer		buf = gpx_seg_read(seg, stream, pageno);
		Page		page = BufferGetPage(buf);

		if (copy->data == NULL)
			copy->data = MemoryContextAlloc(GetMemoryChunkContext(seg), GPX_PAGE_CAPACITY);
		copy->used = gpx_page_used(page);
		memcpy(copy->data, PageGetContents(page), copy->used);
		UnlockReleaseBuffer(buf);
		copy->pageno = pageno;
	}
	return copy->data;
}

/*
 * Where a chunk of 128 docs starts in a chunked stream (the doc map, the
 * doc lengths): its directory entry, (page << 13) | offset, checked, and
 * the data page holding it.  *n: the chunk's docs.
 */
static const char *
chunk_page(GpxSegment *seg, uint32 chunk, int dir_stream, GpxPageCopy *dir_copy, int data_stream,
		   GpxPageCopy *data_copy, const char *past_end, uint32 *n, uint32 *pageno, uint32 *offset)
{
	GpxSegHeaderData *h = seg->hdr;
	const uint32 per_page = GPX_PAGE_CAPACITY / sizeof(uint32);
	uint32		dpage = chunk / per_page;
	uint32		dir;
	const char *page;

	if (chunk >= h->docmap_chunks)
		gpx_seg_corrupt(seg, dir_stream, dpage, past_end);
	*n = chunk + 1 < h->docmap_chunks ? GPX_DOCMAP_CHUNK : h->ndocs - chunk * GPX_DOCMAP_CHUNK;
	page = cached_page(seg, dir_stream, dpage, dir_copy);
	if (dir_copy->used < ((chunk % per_page) + 1) * sizeof(uint32))
		gpx_seg_corrupt(seg, dir_stream, dpage, "directory page is too short");
	memcpy(&dir, page + (chunk % per_page) * sizeof(uint32), sizeof(uint32));
	*pageno = dir >> GPX_DOCDIR_SHIFT;
	*offset = dir & ((1u << GPX_DOCDIR_SHIFT) - 1);
	page = cached_page(seg, data_stream, *pageno, data_copy);
	if (*offset >= data_copy->used)
		gpx_seg_corrupt(seg, data_stream, *pageno, "chunk starts past the page's contents");
	return page;
}

uint32
gpx_seg_chunk(GpxSegment *seg, uint32 chunk, ItemPointerData *tids)
{
	uint32		n;
	uint32		mpage;
	uint32		moff;
	const char *page = chunk_page(seg, chunk, GPX_STREAM_DOCDIR, &seg->docdir, GPX_STREAM_DOCMAP,
								  &seg->docmap, "doc id past the segment's doc map", &n, &mpage, &moff);

	{
		uint32		blocks[GPX_DOCMAP_CHUNK];
		uint16		offsets[GPX_DOCMAP_CHUNK];
		const char *problem = gpx_parse_docmap_chunk((const uint8 *) page + moff,
													 (const uint8 *) page + seg->docmap.used, n,
													 MaxOffsetNumber, blocks, offsets);

		if (problem != NULL)
			gpx_seg_corrupt(seg, GPX_STREAM_DOCMAP, mpage, problem);
		for (uint32 i = 0; i < n; i++)
			ItemPointerSet(&tids[i], blocks[i], offsets[i]);
	}
	return n;
}

/* a dead-doc bitmap page's bits into bits; returns its bytes */
static uint32
read_dead_page(GpxSegment *seg, uint32 pageno, uint8 *bits)
{
	Buffer		buf = gpx_seg_read(seg, GPX_STREAM_DEAD, pageno);
	Page		page = BufferGetPage(buf);
	uint32		want = (uint32) Min((uint64) GPX_PAGE_CAPACITY,
									((uint64) seg->hdr->ndocs - (uint64) pageno * GPX_DEAD_BITS_PER_PAGE + 7) / 8);

	if (gpx_page_used(page) != want)
		gpx_seg_corrupt(seg, GPX_STREAM_DEAD, pageno, "bitmap page has the wrong length");
	memcpy(bits, PageGetContents(page), want);
	UnlockReleaseBuffer(buf);
	return want;
}

bool
gpx_seg_is_dead(GpxSegment *seg, uint32 doc)
{
	uint32		pageno = doc / GPX_DEAD_BITS_PER_PAGE;
	uint32		bit = doc % GPX_DEAD_BITS_PER_PAGE;

	if (seg->ref.ndead == 0)
		return false;
	if (seg->dead_page != pageno)
	{
		if (seg->dead_bits == NULL)
			seg->dead_bits = MemoryContextAlloc(GetMemoryChunkContext(seg), GPX_PAGE_CAPACITY);
		read_dead_page(seg, pageno, seg->dead_bits);
		seg->dead_page = pageno;
	}
	return (seg->dead_bits[bit / 8] >> (bit % 8)) & 1;
}

/*
 * Every dead doc as the bitmap holds it now.  VACUUM marks docs while
 * scans read (each bitmap page with the metapage's count in one record,
 * under the metapage's lock; a bit is never cleared, and a segment's id is
 * never reused), so against a copy of the metapage the bitmap may hold
 * more dead docs, as many as the metapage counts now, never fewer.
 */
uint32 *
gpx_seg_dead_docs(GpxSegment *seg, uint32 *n, GpxSegRef *now)
{
	uint32		ndocs = seg->hdr->ndocs;
	uint32		npages = (uint32) (((uint64) ndocs + GPX_DEAD_BITS_PER_PAGE - 1) / GPX_DEAD_BITS_PER_PAGE);
	uint8	   *bits = palloc(GPX_PAGE_CAPACITY);
	uint32		cap = Max(seg->ref.ndead, 64);
	uint32	   *dead = palloc_extended((Size) cap * sizeof(uint32), MCXT_ALLOC_HUGE);
	uint32		count = 0;

	for (uint32 p = 0; p < npages; p++)
	{
		uint32		used = read_dead_page(seg, p, bits);
		uint64		first = (uint64) p * GPX_DEAD_BITS_PER_PAGE;

		CHECK_FOR_INTERRUPTS();
		for (uint32 i = 0; i < used; i++)
		{
			for (uint32 byte = bits[i]; byte != 0; byte &= byte - 1)
			{
				uint64		d = first + (uint64) i * 8 + __builtin_ctz(byte);

				if (d >= ndocs)
					gpx_seg_corrupt(seg, GPX_STREAM_DEAD, p, "bitmap marks docs past the segment's end");
				if (count == cap)
				{
					cap = (uint32) Min((uint64) cap * 2, (uint64) ndocs);
					dead = repalloc_huge(dead, (Size) cap * sizeof(uint32));
				}
				dead[count++] = (uint32) d;
			}
		}
	}
	pfree(bits);

	if (now)
		*now = seg->ref;
	if (count < seg->ref.ndead)
		gpx_seg_corrupt(seg, GPX_STREAM_DEAD, 0, "holds fewer dead docs than the metapage says");
	if (count > seg->ref.ndead)
	{
		GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
		int			k;

		gpx_meta_read(seg->index, meta);
		k = gpx_meta_find_segment(meta, seg->ref.id);
		/* merged away since: its bitmap no longer changes, nothing to hold it to */
		if (k >= 0 && count > meta->segments[k].ndead)
			gpx_seg_corrupt(seg, GPX_STREAM_DEAD, 0, "holds more dead docs than the metapage says");
		if (now)
		{
			if (k >= 0)
				*now = meta->segments[k];
			else
				now->id = 0;
		}
		pfree(meta);
	}

	/* from now on the segment's reader holds at least these dead */
	seg->ref.ndead = count;
	seg->dead_page = PG_UINT32_MAX;
	*n = count;
	if (count == 0)
	{
		pfree(dead);
		return NULL;
	}
	return dead;
}

bool
gpx_seg_is_live(GpxSegment *seg, uint32 doc)
{
	if (doc >= seg->hdr->ndocs)
		gpx_seg_corrupt(seg, GPX_STREAM_DOCMAP, PG_UINT32_MAX, "doc id past the segment");
	return !gpx_seg_is_dead(seg, doc);
}

uint32
gpx_seg_map(GpxSegment *seg, const uint32 *docs, uint32 n, ItemPointerData *tids)
{
	uint32		k = 0;

	for (uint32 i = 0; i < n; i++)
	{
		uint32		doc = docs[i];
		uint32		chunk = doc / GPX_DOCMAP_CHUNK;

		if (!gpx_seg_is_live(seg, doc))
			continue;
		if (seg->chunk != chunk)
		{
			seg->chunk_len = gpx_seg_chunk(seg, chunk, seg->chunk_tids);
			seg->chunk = chunk;
		}
		tids[k++] = seg->chunk_tids[doc % GPX_DOCMAP_CHUNK];
	}
	return k;
}

/* ---------------------------------------------------------------------------
 * Term frequencies and doc lengths (segments with freqs)
 */
static void
require_freqs(GpxSegment *seg)
{
	if (!(seg->hdr->flags & GPX_SEG_FREQS))
		elog(ERROR, "gpuidx: segment %u has no term frequencies", seg->ref.id);
}

/* a record's header, then all of it, read and checked */
static uint8 *
read_freq_record(GpxSegment *seg, uint32 df, uint32 page, uint32 offset, uint32 *len)
{
	ListBytes	lb;
	GpxFreqHeader h;
	uint8	   *rec;
	const char *problem;
	uint64		most = sizeof(GpxFreqHeader) + (uint64) gpx_freq_nblocks(df) * (sizeof(GpxFreqBlock) + 128);

	gpx_list_bytes_init(&lb, seg, GPX_STREAM_FREQS, page, offset, sizeof(h));
	gpx_list_bytes_read(&lb, 0, sizeof(h), &h);
	if (h.nbytes < sizeof(h) || h.nbytes > most)
		gpx_seg_corrupt(seg, GPX_STREAM_FREQS, page, "frequency record has an impossible length");
	lb.len = h.nbytes;
	rec = palloc_extended(h.nbytes, MCXT_ALLOC_HUGE);
	gpx_list_bytes_read(&lb, 0, h.nbytes, rec);
	pfree(lb.data);
	problem = gpx_parse_freq_record(rec, h.nbytes, df, seg->hdr->ndocs);
	if (problem != NULL)
		gpx_seg_corrupt(seg, GPX_STREAM_FREQS, page, problem);
	*len = h.nbytes;
	return rec;
}

void
gpx_seg_freq_header(GpxSegment *seg, const GpxTermRef *ref, GpxFreqHeader *h)
{
	ListBytes	lb;
	uint64		most = sizeof(GpxFreqHeader) + (uint64) gpx_freq_nblocks(ref->df) * (sizeof(GpxFreqBlock) + 128);

	require_freqs(seg);
	Assert(ref->external);
	gpx_list_bytes_init(&lb, seg, GPX_STREAM_FREQS, ref->freq_page, ref->freq_offset, sizeof(*h));
	gpx_list_bytes_read(&lb, 0, sizeof(*h), h);
	pfree(lb.data);
	if (h->df != ref->df || h->nbytes < sizeof(*h) || h->nbytes > most)
		gpx_seg_corrupt(seg, GPX_STREAM_FREQS, ref->freq_page, "frequency record does not match its dictionary entry");
}

uint8 *
gpx_seg_doclens_blob(GpxSegment *seg, uint64 *len)
{
	uint32		ndocs = seg->hdr->ndocs;
	uint32		nchunks = (ndocs + GPUIDX_DOCLENS_CHUNK - 1) / GPUIDX_DOCLENS_CHUNK;
	uint8	   *blob;
	uint32		dls[GPX_DOCMAP_CHUNK];
	uint64		data = 0;

	require_freqs(seg);
	blob = palloc_extended(gpx_doclens_size(nchunks, (uint64) nchunks * GPX_DOCLENS_CHUNK_MAX),
						   MCXT_ALLOC_HUGE);
	for (uint32 c = 0; c < nchunks; c++)
	{
		uint32		n;

		if ((c & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		n = gpx_seg_chunk_lengths(seg, c, dls);
		for (uint32 j = 0; seg->ref.ndead > 0 && j < n; j++)
			if (gpx_seg_is_dead(seg, c * GPUIDX_DOCLENS_CHUNK + j))
				dls[j] = 0;
		data += gpx_doclens_put_chunk(blob, nchunks, c, data, dls, n);
	}
	*len = gpx_doclens_size(nchunks, data);
	gpx_doclens_seal(blob, *len, ndocs);
	return blob;
}

void
gpx_seg_freqs(GpxSegment *seg, GpxTermRef *ref, GpxFreqs *out)
{
	require_freqs(seg);
	out->df = ref->df;
	out->record = NULL;
	out->tfs = NULL;
	if (ref->external)
		out->record = read_freq_record(seg, ref->df, ref->freq_page, ref->freq_offset, &out->record_len);
	else
	{
		if (ref->payload == NULL)
			elog(ERROR, "gpuidx: inline list already opened");
		out->tfs = palloc(ref->df);
		memcpy(out->tfs, ref->payload + ref->len, ref->df);
	}
}

void
gpx_dict_iter_freqs(GpxDictIter *it, GpxFreqs *out)
{
	require_freqs(it->seg);
	out->df = it->df;
	out->record = NULL;
	out->tfs = NULL;
	if (it->external)
		out->record = read_freq_record(it->seg, it->df, it->freq_page, it->freq_off, &out->record_len);
	else
	{
		out->tfs = palloc(it->df);
		gpx_leaf_entry_tfs(it->inline_tfs, it->inline_tf_width, it->df, out->tfs);
	}
}

void
gpx_freqs_tfs(const GpxFreqs *f, uint32 block, uint8 *tfs)
{
	if (f->record)
		gpx_freq_block_tfs(f->record, f->df, block, tfs);
	else
		memcpy(tfs, f->tfs + (Size) block * GPX_RANK_BLOCK,
			   Min(GPX_RANK_BLOCK, f->df - block * GPX_RANK_BLOCK));
}

void
gpx_freqs_free(GpxFreqs *f)
{
	if (f->record)
		pfree(f->record);
	if (f->tfs)
		pfree(f->tfs);
	f->record = NULL;
	f->tfs = NULL;
}

/*
 * Merges read the tfs of the list being merged a block at a time through
 * two one-page byte streams (block entries, data), as they read its
 * postings: memory stays the same whatever its length.  Page checksums and
 * each block's bounds are checked; the record's CRC is not (see above).
 * Positions read the blocks they need by number the same way (a phrase's
 * candidates touch a few blocks of a list of millions).
 */
struct GpxFreqReader
{
	GpxSegment *seg;
	uint32		df;
	uint32		nb;
	uint32		next_block;
	uint8	   *inl;			/* inline list: its tfs, a byte each */
	ListBytes	entries;
	ListBytes	data;
	uint32		data_start;
	uint8		buf[GPX_RANK_BLOCK];
	uint32		have;
	uint32		pos;
	uint32		done;
	uint32		loaded;			/* the block in buf when read by number, or UINT32_MAX */
};

/* a reader of the record at page/offset of a list of df postings */
static GpxFreqReader *
freq_reader_external(GpxSegment *seg, uint32 df, uint32 page, uint32 offset)
{
	GpxFreqReader *r = palloc0(sizeof(GpxFreqReader));
	GpxFreqHeader h;

	require_freqs(seg);
	r->seg = seg;
	r->df = df;
	r->nb = gpx_freq_nblocks(df);
	r->loaded = PG_UINT32_MAX;
	gpx_list_bytes_init(&r->entries, seg, GPX_STREAM_FREQS, page, offset, sizeof(h));
	gpx_list_bytes_read(&r->entries, 0, sizeof(h), &h);
	r->data_start = sizeof(h) + r->nb * sizeof(GpxFreqBlock);
	if (h.df != df || h.flags != 0 || h.nbytes < r->data_start)
		gpx_seg_corrupt(seg, GPX_STREAM_FREQS, page, "frequency record does not match its list");
	r->entries.len = h.nbytes;
	gpx_list_bytes_init(&r->data, seg, GPX_STREAM_FREQS, page, offset, h.nbytes);
	return r;
}

/* a reader of an inline list's tfs, a byte each */
static GpxFreqReader *
freq_reader_inline(GpxSegment *seg, uint32 df, uint8 *tfs)
{
	GpxFreqReader *r = palloc0(sizeof(GpxFreqReader));

	r->seg = seg;
	r->df = df;
	r->nb = gpx_freq_nblocks(df);
	r->inl = tfs;
	return r;
}

GpxFreqReader *
gpx_freq_reader_begin(GpxDictIter *it)
{
	uint8	   *inl;

	require_freqs(it->seg);
	if (it->external)
		return freq_reader_external(it->seg, it->df, it->freq_page, it->freq_off);
	inl = palloc(it->df);
	gpx_leaf_entry_tfs(it->inline_tfs, it->inline_tf_width, it->df, inl);
	return freq_reader_inline(it->seg, it->df, inl);
}

GpxFreqReader *
gpx_seg_freq_reader(GpxSegment *seg, GpxTermRef *ref)
{
	uint8	   *inl;

	require_freqs(seg);
	if (ref->external)
		return freq_reader_external(seg, ref->df, ref->freq_page, ref->freq_offset);
	if (ref->payload == NULL)
		elog(ERROR, "gpuidx: inline list already opened");
	inl = palloc(ref->df);
	memcpy(inl, ref->payload + ref->len, ref->df);
	return freq_reader_inline(seg, ref->df, inl);
}

/* block b's tfs into r->buf (r->have of them), its entry's bounds and each tf checked */
static void
freq_reader_load(GpxFreqReader *r, uint32 b)
{
	GpxFreqBlock fb;
	uint32		len = b + 1 < r->nb ? GPX_RANK_BLOCK : r->df - GPX_RANK_BLOCK * b;
	uint32		bytes;
	uint32		vals[GPX_RANK_BLOCK];
	uint8		packed[GPX_RANK_BLOCK];

	gpx_list_bytes_read(&r->entries, sizeof(GpxFreqHeader) + b * sizeof(fb), sizeof(fb), &fb);
	if (fb.width > 8 || fb.max_tf == 0)
		gpx_seg_corrupt(r->seg, GPX_STREAM_FREQS, r->entries.page, "frequency record block is inconsistent");
	bytes = (len * fb.width + 7) / 8;
	gpx_list_bytes_read(&r->data, r->data_start + fb.offset, bytes, packed);
	gpx_unpack_bits(packed, vals, len, fb.width);
	for (uint32 i = 0; i < len; i++)
	{
		if (vals[i] + 1 > fb.max_tf)
			gpx_seg_corrupt(r->seg, GPX_STREAM_FREQS, r->entries.page, "a tf exceeds its block's maximum");
		r->buf[i] = (uint8) (vals[i] + 1);
	}
	r->have = len;
	r->loaded = b;
}

void
gpx_freq_reader_next(GpxFreqReader *r, uint8 *tfs, uint32 n)
{
	if (n > r->df - r->done)
		gpx_seg_corrupt(r->seg, GPX_STREAM_FREQS, PG_UINT32_MAX, "frequency record is shorter than its list");
	if (r->inl)
	{
		memcpy(tfs, r->inl + r->done, n);
		r->done += n;
		return;
	}
	while (n > 0)
	{
		uint32		take;

		if (r->pos == r->have)
		{
			freq_reader_load(r, r->next_block++);
			r->pos = 0;
		}
		take = Min(n, r->have - r->pos);
		memcpy(tfs, r->buf + r->pos, take);
		r->pos += take;
		r->done += take;
		tfs += take;
		n -= take;
	}
}

void
gpx_freq_reader_block(GpxFreqReader *r, uint32 b, uint8 *tfs)
{
	uint32		len;

	if (b >= r->nb)
		elog(ERROR, "gpuidx: tfs asked past a list's end");
	len = b + 1 < r->nb ? GPX_RANK_BLOCK : r->df - GPX_RANK_BLOCK * b;
	if (r->inl)
	{
		memcpy(tfs, r->inl + (Size) b * GPX_RANK_BLOCK, len);
		return;
	}
	if (r->loaded != b)
		freq_reader_load(r, b);
	memcpy(tfs, r->buf, len);
}

void
gpx_freq_reader_end(GpxFreqReader *r)
{
	if (r->inl == NULL)
	{
		pfree(r->entries.data);
		pfree(r->data.data);
	}
	else
		pfree(r->inl);
	pfree(r);
}

/* a doc length chunk's docs (returned), width, base and bits, checked; the bits lie in seg->lens */
static uint32
lens_chunk(GpxSegment *seg, uint32 chunk, uint32 *width, uint32 *base, const uint8 **bits)
{
	uint32		n;
	uint32		lpage;
	uint32		loff;
	const char *page;
	const char *problem;

	require_freqs(seg);
	page = chunk_page(seg, chunk, GPX_STREAM_LENDIR, &seg->lendir, GPX_STREAM_LENS, &seg->lens,
					  "doc id past the segment's doc lengths", &n, &lpage, &loff);
	problem = gpx_doclen_chunk_header((const uint8 *) page + loff, (const uint8 *) page + seg->lens.used, n,
									  (seg->hdr->flags & GPX_SEG_LENS_BASE) != 0, width, base, bits);
	if (problem != NULL)
		gpx_seg_corrupt(seg, GPX_STREAM_LENS, lpage, problem);
	return n;
}

uint32
gpx_seg_chunk_lengths(GpxSegment *seg, uint32 chunk, uint32 *dls)
{
	uint32		width;
	uint32		base;
	const uint8 *bits;
	uint32		n = lens_chunk(seg, chunk, &width, &base, &bits);

	gpx_doclen_unpack(bits, n, width, base, dls);
	return n;
}

uint32
gpx_seg_doclen(GpxSegment *seg, uint32 doc)
{
	uint32		chunk = doc / GPX_DOCMAP_CHUNK;

	if (doc >= seg->hdr->ndocs)
		gpx_seg_corrupt(seg, GPX_STREAM_LENS, PG_UINT32_MAX, "doc id past the segment");
	/* a doc's length read where it is: a query's docs seldom share a chunk */
	if (seg->dl_chunk != chunk)
	{
		const uint8 *bits;
		uint32		n = lens_chunk(seg, chunk, &seg->dl_width, &seg->dl_base, &bits);

		if (doc % GPX_DOCMAP_CHUNK >= n)
			gpx_seg_corrupt(seg, GPX_STREAM_LENS, PG_UINT32_MAX, "doc length chunk is shorter than the doc map's");
		memcpy(seg->dl_bits, bits, ((uint64) n * seg->dl_width + 7) / 8);
		seg->dl_chunk = chunk;
	}
	return seg->dl_base + gpx_bits_at(seg->dl_bits, doc % GPX_DOCMAP_CHUNK, seg->dl_width);
}

/* the segment's entry of the doc length codes cache, made if need be; NULL: not cached */
static DlcCacheEntry *
dlc_cache_entry(GpxSegment *seg)
{
	DlcCacheEntry *e;
	uint32		nchunks = seg->hdr->docmap_chunks;
	Size		bytes = (Size) nchunks * sizeof(uint8 *) + (nchunks + 7) / 8;

	if (nchunks == 0 || nchunks > DLC_CACHE_MAX_CHUNKS || !caches_ready(seg))
		return NULL;
	e = &dlc_cache[segment_hash(seg) % DLC_CACHE_SLOTS];
	if (segment_key_holds(&e->seg, seg) && e->nchunks == nchunks)
		return e;
	if (MemoryContextMemAllocated(dlc_cache_cxt, true) + bytes > DLC_CACHE_BYTES)
		dlc_cache_empty();
	else if (e->codes != NULL)
	{
		/* the slot's segment goes: its chunks' codes with it */
		for (uint32 c = 0; c < e->nchunks; c++)
			if (e->codes[c] != NULL)
				pfree(e->codes[c]);
		pfree(e->codes);
		pfree(e->seen);
	}
	e->codes = MemoryContextAllocZero(dlc_cache_cxt, (Size) nchunks * sizeof(uint8 *));
	e->seen = MemoryContextAllocZero(dlc_cache_cxt, (nchunks + 7) / 8);
	e->nchunks = nchunks;
	segment_key_set(&e->seg, seg);
	return e;
}

void
gpx_seg_dl_codes(GpxSegment *seg, const uint32 *docs, uint32 n, uint8 *codes)
{
	DlcCacheEntry *e = dlc_cache_entry(seg);
	uint32		end;

	if (e == NULL)
	{
		for (uint32 i = 0; i < n; i++)
			codes[i] = (uint8) gpx_dl_code(gpx_seg_doclen(seg, docs[i]));
		return;
	}

	/*
	 * Run by run of docs in one chunk: a chunk is kept when a later call
	 * reads it again for a few docs.  A long run is read where it is (the
	 * chunk read once for all of them), cheaper than unpacking the chunk.
	 */
	for (uint32 i = 0; i < n; i = end)
	{
		uint32		chunk = docs[i] / GPX_DOCMAP_CHUNK;
		uint32		dls[GPX_DOCMAP_CHUNK];
		uint32		len;
		uint8	   *kept;

		for (end = i + 1; end < n && docs[end] / GPX_DOCMAP_CHUNK == chunk; end++)
			;
		if (e != NULL && chunk < e->nchunks && e->codes[chunk] == NULL && end - i < DLC_RUN_READ &&
			(e->seen[chunk / 8] & (1 << (chunk % 8))))
		{
			if (MemoryContextMemAllocated(dlc_cache_cxt, true) + GPX_DOCMAP_CHUNK > DLC_CACHE_BYTES)
			{
				/* full: emptied, and the rest of these read where they are */
				dlc_cache_empty();
				e = NULL;
			}
			else
			{
				len = gpx_seg_chunk_lengths(seg, chunk, dls);
				/* (an invalidation while it read would have emptied the cache) */
				if (!segment_key_holds(&e->seg, seg))
					e = NULL;
				else
				{
					kept = MemoryContextAllocZero(dlc_cache_cxt, GPX_DOCMAP_CHUNK);
					for (uint32 j = 0; j < len; j++)
						kept[j] = (uint8) gpx_dl_code(dls[j]);
					e->codes[chunk] = kept;
				}
			}
		}
		if (e == NULL || chunk >= e->nchunks || e->codes[chunk] == NULL)
		{
			if (e != NULL && chunk < e->nchunks)
				e->seen[chunk / 8] |= 1 << (chunk % 8);
			for (uint32 k = i; k < end; k++)
				codes[k] = (uint8) gpx_dl_code(gpx_seg_doclen(seg, docs[k]));
			continue;
		}
		for (uint32 k = i; k < end; k++)
		{
			if (docs[k] >= seg->hdr->ndocs)
				gpx_seg_corrupt(seg, GPX_STREAM_LENS, PG_UINT32_MAX, "doc id past the segment");
			codes[k] = e->codes[chunk][docs[k] % GPX_DOCMAP_CHUNK];
		}
	}
}

