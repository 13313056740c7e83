/*
 * layout.h
 *	  The gpuidx index on disk: page format, metapage, segments and the
 *	  pending area.  docs/INDEX.md describes the same layout in prose; keep
 *	  the two in step and bump GPX_INDEX_VERSION on any change to the bytes.
 *
 * Every page is a standard PostgreSQL page (so generic WAL can skip the
 * hole between pd_lower and pd_upper) whose contents lie between the page
 * header and pd_lower, with a GpxPageOpaqueData in the special space.  Each
 * page carries a CRC-32C of its contents, its type and an owner tag, so a
 * damaged page, or a page that no longer belongs to what a reader expects,
 * is recognised before anything on it is used.
 */
#ifndef GPUIDX_STORE_LAYOUT_H
#define GPUIDX_STORE_LAYOUT_H

#include "postgres.h"

#include "access/transam.h"
#include "storage/block.h"
#include "storage/bufpage.h"

#include "gpuidx_format.h"
#include "store/parse.h"

#define GPX_META_BLKNO		0
#define GPX_MAGIC			0x58495047	/* "GPIX" */
#define GPX_INDEX_VERSION	4		/* versions 1 to 3 are read too: see meta.c */
#define GPX_PAGE_ID			0xFF91		/* last bytes of every page, for tools */

/* page types */
#define GPX_PAGE_META		1
#define GPX_PAGE_PENDING	2	/* a page of the pending area's chain */
#define GPX_PAGE_SEGHEAD	3	/* a segment's header */
#define GPX_PAGE_TABLE		4	/* a segment's page table, past the header's room */
#define GPX_PAGE_DATA		5	/* a page of one of a segment's streams */
#define GPX_PAGE_FREE		6	/* recycled, listed in the free space map */
#define GPX_PAGE_RETIRED	7	/* retired page sets the metapage has no room for */

typedef struct GpxPageOpaqueData
{
	uint32		crc;			/* CRC-32C, see gpx_page_crc() */
	uint16		type;			/* GPX_PAGE_* */
	uint16		stream;			/* data pages: GPX_STREAM_* */
	uint32		owner;			/* segment pages: segment id; pending: sequence */
	uint32		pageno;			/* data pages: index in the stream; table pages:
								 * index in the table; pending pages: the
								 * sequence of the page next links to (0 in
								 * version 1: sequence + 1) */
	BlockNumber next;			/* pending and retired-list pages: next page of
								 * the chain */
	uint16		flags;			/* reserved, 0 */
	uint16		page_id;		/* GPX_PAGE_ID */
} GpxPageOpaqueData;

typedef GpxPageOpaqueData *GpxPageOpaque;

#define GpxPageGetOpaque(page) ((GpxPageOpaque) PageGetSpecialPointer(page))

/* bytes of contents a page holds */
#define GPX_PAGE_CAPACITY \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(GpxPageOpaqueData)))

/* ---------------------------------------------------------------------------
 * Segments: immutable once written, apart from their dead-doc bitmap.
 *
 * A segment indexes ndocs documents under local doc ids 0..ndocs-1.  Its
 * pages form streams, each a sequence of logical pages; the header maps
 * (stream, page) to blocks through one page table, so a segment can be
 * written into whatever pages are free.
 */
#define GPX_STREAM_LEAF		0	/* dictionary leaves: front-coded terms and
								 * short lists */
#define GPX_STREAM_INNER	1	/* dictionary inner nodes */
#define GPX_STREAM_LISTS	2	/* lists too long to be inline, in the
								 * docs/FORMAT.md encoding */
#define GPX_STREAM_DOCDIR	3	/* where each doc map chunk starts */
#define GPX_STREAM_DOCMAP	4	/* doc id -> heap TID, chunks of 128 docs */
#define GPX_STREAM_DEAD		5	/* bitmap of docs VACUUM found dead */
#define GPX_STREAM_FREQS	6	/* term frequencies of the LISTS stream's lists,
								 * with their blocks' maxima (ranking only) */
#define GPX_STREAM_LENDIR	7	/* where each doc length chunk starts */
#define GPX_STREAM_LENS		8	/* each doc's length, chunks of 128 docs */
#define GPX_STREAM_POSITIONS 9	/* each term's positions in its docs */
#define GPX_NSTREAMS		10
#define GPX_NSTREAMS_V1		6	/* segments written before format version 3 */
#define GPX_NSTREAMS_V3		9	/* headers without GPX_SEG_STREAMS_V4 */

typedef struct GpxStreamInfo
{
	uint32		npages;
	uint32		first;			/* index of its first page in the page table */
	uint64		bytes;			/* payload bytes, padding excluded */
} GpxStreamInfo;

typedef struct GpxSegHeaderData
{
	uint32		magic;			/* GPX_MAGIC */
	uint32		id;
	uint32		ndocs;
	uint32		nterms;
	uint64		npostings;
	uint32		dict_root;		/* page of the dictionary's root */
	uint32		dict_levels;	/* 0: the root is a leaf; else an inner node */
	uint32		docmap_chunks;
	uint32		ninline;		/* lists kept in the dictionary */
	uint64		inline_bytes;
	uint32		nlists[GPUIDX_NUM_CODECS];	/* lists in the LISTS stream, by
											 * codec */
	uint32		flags;			/* GPX_SEG_*; 0 before format version 3 */
	GpxStreamInfo streams[GPX_NSTREAMS];	/* GPX_NSTREAMS_V1 when flags is 0 */
	uint32		npages;			/* entries of the page table */
	uint32		ntables;		/* 0: the table follows here; else the blocks
								 * of its table pages follow */
	BlockNumber table[FLEXIBLE_ARRAY_MEMBER];
} GpxSegHeaderData;

/* the header has GPX_NSTREAMS streams (else GPX_NSTREAMS_V1: read as if empty) */
#define GPX_SEG_STREAMS		0x1
/* each posting's tf and each doc's length are stored: the segment can rank */
#define GPX_SEG_FREQS		0x2
/* its docs' TIDs increase with their doc ids (ranked scans stream them in heap order) */
#define GPX_SEG_TID_ORDER	0x4
/* dictionary entries in the packed form (store/parse.h); written by every segment since */
#define GPX_SEG_PACKED_LEAF	0x8
/* doc length chunks less their shortest length (store/parse.h); written by every segment since */
#define GPX_SEG_LENS_BASE	0x10
/* the header has GPX_NSTREAMS streams (else GPX_NSTREAMS_V3, the last read as empty); every segment since */
#define GPX_SEG_STREAMS_V4	0x20
/* each term's positions are stored (store/parse.h); dictionary entries place them */
#define GPX_SEG_POSITIONS	0x40
/* with GPX_SEG_POSITIONS: in records of coded blocks (store/posrec.h), an inline list's in its entry */
#define GPX_SEG_POSITIONS_V2 0x80
#define GPX_SEG_FLAGS		(GPX_SEG_STREAMS | GPX_SEG_FREQS | GPX_SEG_TID_ORDER | GPX_SEG_PACKED_LEAF | \
							 GPX_SEG_LENS_BASE | GPX_SEG_STREAMS_V4 | GPX_SEG_POSITIONS | GPX_SEG_POSITIONS_V2)

#define GPX_SEGHEAD_SLOTS \
	((GPX_PAGE_CAPACITY - offsetof(GpxSegHeaderData, table)) / sizeof(BlockNumber))
#define GPX_TABLE_SLOTS		(GPX_PAGE_CAPACITY / sizeof(BlockNumber))

/*
 * The dictionary's leaves and inner nodes, the doc map's chunks, inline
 * lists and pending entries: store/parse.h, which reads them.
 */

/* Dead docs: bit d of the DEAD stream (pages of GPX_PAGE_CAPACITY bytes) */
#define GPX_DEAD_BITS_PER_PAGE	(GPX_PAGE_CAPACITY * 8)

/* ---------------------------------------------------------------------------
 * The pending area: new rows, as a byte stream over a chain of pages that
 * grows at its tail (the stream is each page's contents in chain order), a
 * sequence of entries (store/parse.h: GpxPendingEntry), each its row's TID
 * and distinct lexemes, sorted bytewise.
 *
 * An entry that does not fit the tail page starts on a page of its own and
 * may span several.  Every page carries a sequence number, handed out once,
 * and the one of the page it links to, so a reader notices a page that was
 * recycled under it.
 */

/* ---------------------------------------------------------------------------
 * Metapage
 */
#define GPX_MAX_SEGMENTS	64
#define GPX_MAX_RETIRED		96

#define GPX_KIND_TEXT		1	/* documents are text, tokenized */
#define GPX_KIND_TSVECTOR	2	/* documents are tsvectors, used as they are */

typedef struct GpxSegRef
{
	uint32		id;
	BlockNumber head;			/* header page */
	uint32		ndocs;
	uint32		ndead;			/* marked dead by VACUUM */
	uint32		nterms;
	uint32		npages;			/* every page of the segment */
	uint64		npostings;
	/* version 3 on */
	uint64		sum_dl;			/* the sum of its docs' lengths (0 without freqs) */
	uint64		dead_dl;		/* the part of it of the docs marked dead */
} GpxSegRef;

/* a segment's entry in metapages of versions 1 and 2 */
#define GPX_SEGREF_SIZE_V2	offsetof(GpxSegRef, sum_dl)

#define GPX_RETIRED_SEGMENT 1
#define GPX_RETIRED_PENDING 2

/* pages no longer reachable from the metapage, freed once no scan can read them */
typedef struct GpxRetired
{
	uint32		kind;			/* GPX_RETIRED_* */
	uint32		owner;			/* segment id, or first pending page's sequence */
	BlockNumber first;			/* segment header, or first pending page */
	BlockNumber stop;			/* pending: where the chain goes on (kept) */
	FullTransactionId xid;		/* next xid when retired */
} GpxRetired;

typedef struct GpxMetaPageData
{
	uint32		magic;
	uint32		version;
	uint32		kind;			/* GPX_KIND_* */
	Oid			config;			/* text search configuration, fixed at build */
	NameData	config_schema;	/* its name then, for messages */
	NameData	config_name;
	uint32		next_segment_id;
	uint32		next_pending_seq;

	/* pending area */
	BlockNumber pend_head;		/* first page; InvalidBlockNumber if none */
	uint32		pend_head_off;	/* first byte not yet merged on it */
	uint32		pend_head_seq;	/* its sequence number */
	BlockNumber pend_tail;
	uint32		pend_pages;
	uint32		pend_pad;
	uint64		pend_entries;
	uint64		pend_bytes;

	/* the last build */
	uint32		build_runs;		/* sorted runs spilled */
	uint32		build_peak_kb;	/* peak memory of the postings accumulator */

	uint32		nsegments;
	uint32		nretired;		/* in retired[] below */

	/* version 2 on */
	BlockNumber retired_more;	/* first page of the retired-list chain, or
								 * InvalidBlockNumber */
	uint32		nretired_more;	/* retired sets listed there */

	/* version 3 on */
	uint32		flags;			/* GPX_META_* */
	uint32		pad3;
	uint64		pend_dl;		/* the sum of the pending entries' doc lengths */

	/* version 4 on: what merges wrote since the build (write amplification) */
	uint64		merge_bytes;	/* the pages of the segments they wrote */
	uint64		merge_docs;		/* the docs of those segments */

	GpxSegRef	segments[GPX_MAX_SEGMENTS];
	GpxRetired	retired[GPX_MAX_RETIRED];
} GpxMetaPageData;

/*
 * On the page the arrays are packed: the fields before segments, then
 * nsegments segments, then nretired retired sets.  The metapage changes at
 * every insert, so its bytes (WAL deltas, CRC) stay few.  Version 1 had no
 * fields from retired_more on, version 2 none from flags on, and both
 * stored segments without sum_dl and dead_dl; version 3 had no fields from
 * merge_bytes on.
 */
#define GPX_META_FIXED		offsetof(GpxMetaPageData, segments)
#define GPX_META_FIXED_V1	offsetof(GpxMetaPageData, retired_more)
#define GPX_META_FIXED_V2	offsetof(GpxMetaPageData, flags)
#define GPX_META_FIXED_V3	offsetof(GpxMetaPageData, merge_bytes)

/*
 * The index stores term frequencies and doc lengths (option freqs, from
 * version 3 on): its segments have GPX_SEG_FREQS, its pending entries
 * carry them, and it can rank.  Fixed when the index is built.
 */
#define GPX_META_FREQS		0x1
/*
 * The index stores each posting's positions (option positions, tsvector
 * documents, with freqs): its segments have GPX_SEG_POSITIONS and its
 * pending entries carry them.  Fixed when the index is built.
 */
#define GPX_META_POSITIONS	0x2

/*
 * Retired sets past the metapage's room: a chain of GPX_PAGE_RETIRED pages,
 * each an array of GpxRetired, newest page first, so no number of merges
 * waiting behind an old snapshot ever stops merging.
 */
#define GPX_RETIRED_PER_PAGE	(GPX_PAGE_CAPACITY / sizeof(GpxRetired))

StaticAssertDecl(sizeof(GpxMetaPageData) <= GPX_PAGE_CAPACITY, "metapage too large");

#endif							/* GPUIDX_STORE_LAYOUT_H */
