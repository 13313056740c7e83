/*
 * parse.h
 *	  The index's variable-length structures read from page bytes: dictionary
 *	  leaves and inner nodes, inline lists, doc map chunks, pending entries.
 *	  Every read stays inside the bytes given and every value is checked
 *	  against what the structure allows; a problem comes back as a message,
 *	  never as a wild read.  No PostgreSQL header: the fuzz targets run this
 *	  same code (test/fuzz/fuzz_index_pages.c).  Layout: store/layout.h.
 */
#ifndef GPUIDX_STORE_PARSE_H
#define GPUIDX_STORE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "varint.h"

/* the longest term a dictionary holds (PostgreSQL's lexemes are shorter) */
#define GPX_MAX_TERM_LEN	2047

/*
 * Dictionary leaf: sorted terms, front-coded, with a restart point (a term
 * stored whole) every GPX_RESTART_INTERVAL entries.
 *
 *	 GpxLeafHeader | uint16 restarts[nrestarts] | entries
 *
 * An entry, in a segment with GPX_SEG_PACKED_LEAF (store/layout.h): a byte
 * shared << 4 | suffix_len when shared < 15 and suffix_len < 16, else 0xF0
 * then varint shared and varint suffix_len; the suffix bytes; varint
 * df << 2 | kind; then by kind
 *	 GPX_ENTRY_INLINE: the inline postings (the first doc id, then each gap
 *		minus one, as df varints); with freqs every tf is 1;
 *	 GPX_ENTRY_INLINE_TFS (with freqs only): the same postings, a byte w
 *		(1..8), then each posting's tf - 1 in w bits (gpx_pack_bits);
 *	 GPX_ENTRY_EXTERNAL: varint len, varint page and varint offset of the
 *		list's start in the LISTS stream, then with freqs varint page and
 *		varint offset of its frequency record in the FREQS stream;
 * then, in a segment with GPX_SEG_POSITIONS, varint page and varint offset
 * of the term's positions record in the POSITIONS stream; with
 * GPX_SEG_POSITIONS_V2 too an inline list's entry holds its positions
 * record itself (store/posrec.h) when it is short: varint h, then for an
 * even h the record's h >> 2 bytes, a flags byte first when h & 2; for an
 * odd h the record is in the POSITIONS stream, at page h >> 1 and varint
 * offset.  A record in the stream begins with varint len << 1 | has
 * flags, then its len bytes.
 * Most lexemes of real text occur in a few documents, once each, so the
 * entry's own bytes are most of the dictionary: one byte for the term's
 * two lengths, one for df and kind, none for tfs all 1.
 *
 * Segments written before GPX_SEG_PACKED_LEAF: varint shared, varint
 * suffix_len, suffix bytes, varint df, varint (len << 1 | external), then
 * either len bytes of inline postings, followed with freqs by df bytes, each
 * posting's tf (1..255), or the external reference as above.
 */
typedef struct GpxLeafHeader
{
	uint16_t	nentries;
	uint16_t	nrestarts;
	uint32_t	first_term;		/* ordinal of its first term in the segment */
} GpxLeafHeader;

#define GPX_RESTART_INTERVAL 16

/*
 * An inline list holds at most this many docs (and bytes): a reader
 * rejects a packed entry claiming more, so that a damaged count cannot make
 * it walk a run of millions of docs
 */
#define GPX_INLINE_MAX_DOCS		1024

/* the kinds of a packed entry, the low two bits of its df varint */
#define GPX_ENTRY_INLINE		0
#define GPX_ENTRY_INLINE_TFS	1
#define GPX_ENTRY_EXTERNAL		2
#define GPX_ENTRY_KIND_BITS		2

/* a packed entry's two lengths in one byte, or this escape before two varints */
#define GPX_ENTRY_LENS_ESCAPE	0xF0

/*
 * Dictionary inner node: the first term of each child.
 *
 *	 GpxInnerHeader | uint16 offsets[nentries] | entries
 *
 * An entry: varint key_len, key bytes, varint child page (in the LEAF
 * stream at level 1, else in the INNER stream).
 */
typedef struct GpxInnerHeader
{
	uint16_t	nentries;
	uint16_t	level;			/* 1: children are leaves */
} GpxInnerHeader;

/*
 * Doc map: DOCDIR holds one uint32 per chunk, (page << 13) | offset of the
 * chunk in the DOCMAP stream; chunks never straddle pages.  A chunk covers
 * GPX_DOCMAP_CHUNK docs (the last one the rest) as runs of consecutive line
 * pointers: varint zigzag(block - previous run's block, 0 at the chunk's
 * start), varint first offset, varint length - 1.
 */
#define GPX_DOCMAP_CHUNK	128
#define GPX_DOCDIR_SHIFT	13

/* what a segment allows its dictionary entries */
typedef struct GpxSegLimits
{
	uint32_t	ndocs;			/* doc ids below it */
	uint32_t	list_pages;		/* pages of the LISTS stream */
	uint32_t	page_capacity;	/* bytes of contents a page holds */
	bool		freqs;			/* entries carry tfs (GPX_SEG_FREQS) */
	uint32_t	freq_pages;		/* pages of the FREQS stream */
	bool		packed;			/* entries in the packed form (GPX_SEG_PACKED_LEAF) */
	bool		positions;		/* entries place a positions record (GPX_SEG_POSITIONS) */
	bool		positions_v2;	/* ... of coded blocks, inline ones in the entry (GPX_SEG_POSITIONS_V2) */
	uint32_t	pos_pages;		/* pages of the POSITIONS stream */
} GpxSegLimits;

/*
 * A list's frequency record in the FREQS stream (4-byte aligned, may span
 * pages):
 *
 *	 GpxFreqHeader | GpxFreqBlock blocks[ceil(df / 128)] | data
 *
 * Block b covers postings 128 b .. 128 b + 127 of the list; its data, at
 * byte offset `offset` of the data area, is each posting's tf - 1 in width
 * bits (little-endian bit order, gpx_pack_bits), so a block of tfs all 1
 * takes no byte.  max_tf and min_dlcode (gpx_dl_code of the block's
 * shortest document) bound the block's BM25 contributions (block-max
 * WAND).  The CRC-32C covers the whole record with crc taken as 0.
 */
typedef struct GpxFreqHeader
{
	uint32_t	crc;
	uint32_t	df;				/* postings: the list's */
	uint32_t	nbytes;			/* the whole record */
	uint8_t		max_tf;			/* over the list */
	uint8_t		min_dlcode;
	uint16_t	flags;			/* 0 */
} GpxFreqHeader;

typedef struct GpxFreqBlock
{
	uint32_t	last_doc;		/* the block's last posting */
	uint32_t	offset;			/* of its data in the data area */
	uint8_t		width;			/* bits per tf - 1, 0..8 */
	uint8_t		max_tf;
	uint8_t		min_dlcode;
	uint8_t		pad;			/* 0 */
} GpxFreqBlock;

/* the blocks of a record of df postings */
static inline uint32_t
gpx_freq_nblocks(uint32_t df)
{
	return (df + 127) / 128;
}

/*
 * A record's bytes checked against the list it goes with (df postings,
 * docs below ndocs): CRC, sizes, block entries in order and in bounds.
 * NULL or what is wrong.
 */
extern const char *gpx_parse_freq_record(const uint8_t *rec, uint32_t len, uint32_t df, uint32_t ndocs);

/* the tfs of block b of a checked record (n postings) into tfs */
extern void gpx_freq_block_tfs(const uint8_t *rec, uint32_t df, uint32_t b, uint8_t *tfs);

/*
 * n values of width bits (0..32) packed little-endian into out; returns the
 * bytes written, ceil(n * width / 8).
 */
static inline uint32_t
gpx_pack_bits(uint8_t *out, const uint32_t *v, uint32_t n, uint32_t width)
{
	uint64_t	acc = 0;
	uint32_t	nbits = 0;
	uint32_t	len = 0;

	if (width == 0)
		return 0;
	for (uint32_t i = 0; i < n; i++)
	{
		acc |= (uint64_t) v[i] << nbits;
		nbits += width;
		while (nbits >= 8)
		{
			out[len++] = (uint8_t) acc;
			acc >>= 8;
			nbits -= 8;
		}
	}
	if (nbits > 0)
		out[len++] = (uint8_t) acc;
	return len;
}

/* the inverse: reads exactly ceil(n * width / 8) bytes */
static inline void
gpx_unpack_bits(const uint8_t *in, uint32_t *v, uint32_t n, uint32_t width)
{
	uint64_t	acc = 0;
	uint32_t	nbits = 0;
	uint64_t	mask = width == 32 ? 0xFFFFFFFFu : (((uint64_t) 1 << width) - 1);

	for (uint32_t i = 0; i < n; i++)
	{
		while (nbits < width)
		{
			acc |= (uint64_t) *in++ << nbits;
			nbits += 8;
		}
		v[i] = (uint32_t) (acc & mask);
		acc >>= width;
		nbits -= width;
	}
}

/*
 * Doc lengths: LENDIR holds one uint32 per doc map chunk, (page << 13) |
 * offset of the chunk in the LENS stream; chunks never straddle pages.  A
 * chunk is a byte, the width (0..32), then in a segment with
 * GPX_SEG_LENS_BASE varint base, the chunk's shortest length, then each of
 * the chunk's docs' lengths less base in width bits (gpx_pack_bits); before
 * GPX_SEG_LENS_BASE no base, the lengths themselves.  Neighbouring docs
 * have lengths alike, so the differences take fewer bits.
 */

/* a doc length chunk of n docs between p and end into dls; NULL or what is wrong */
extern const char *gpx_parse_doclen_chunk(const uint8_t *p, const uint8_t *end, uint32_t n, bool based,
										  uint32_t *dls);

/*
 * The same chunk's width and base, and where its n values' bits start (they
 * are checked to lie before end); NULL or what is wrong.  Read one doc's
 * length with gpx_bits_at.
 */
extern const char *gpx_doclen_chunk_header(const uint8_t *p, const uint8_t *end, uint32_t n, bool based,
										   uint32_t *width, uint32_t *base, const uint8_t **bits);

/*
 * n tfs (at most 128), each stored as tf - 1 in width bits, into tfs.  A
 * ranked query unpacks a block's at every block it loads, and most blocks
 * have only tfs of 1 (width 0): those are a memset, the others read byte by
 * byte straight into tfs.
 */
static inline void
gpx_unpack_tfs(const uint8_t *bits, uint32_t n, uint32_t width, uint8_t *tfs)
{
	if (width == 0)
		memset(tfs, 1, n);
	else if (width <= 8)
	{
		uint32_t	acc = 0;
		uint32_t	nbits = 0;
		uint32_t	mask = (1u << width) - 1;

		for (uint32_t i = 0; i < n; i++)
		{
			if (nbits < width)
			{
				acc |= (uint32_t) *bits++ << nbits;
				nbits += 8;
			}
			tfs[i] = (uint8_t) ((acc & mask) + 1);
			acc >>= width;
			nbits -= width;
		}
	}
	else
	{
		uint32_t	vals[128];

		gpx_unpack_bits(bits, vals, n, width);
		for (uint32_t i = 0; i < n; i++)
			tfs[i] = (uint8_t) (vals[i] + 1);
	}
}

/* a checked chunk's n lengths from its bits, width and base */
static inline void
gpx_doclen_unpack(const uint8_t *bits, uint32_t n, uint32_t width, uint32_t base, uint32_t *dls)
{
	gpx_unpack_bits(bits, dls, n, width);
	for (uint32_t i = 0; base > 0 && i < n; i++)
		dls[i] += base;
}

/* value i of values packed width bits each (gpx_pack_bits); reads only its bytes */
static inline uint32_t
gpx_bits_at(const uint8_t *bits, uint32_t i, uint32_t width)
{
	uint64_t	bit = (uint64_t) i * width;
	const uint8_t *p = bits + bit / 8;
	uint32_t	shift = (uint32_t) (bit % 8);
	uint32_t	nbytes = (shift + width + 7) / 8;
	uint64_t	acc = 0;

	for (uint32_t b = 0; b < nbytes; b++)
		acc |= (uint64_t) p[b] << (8 * b);
	return width == 0 ? 0 : (uint32_t) ((acc >> shift) & ((((uint64_t) 1) << width) - 1));
}

typedef struct GpxLeafLayout
{
	GpxLeafHeader hdr;
	const uint8_t *restarts;	/* uint16 each, little-endian */
	const uint8_t *entries;
	const uint8_t *end;
} GpxLeafLayout;

typedef struct GpxLeafEntry
{
	uint32_t	shared;
	uint32_t	suffix_len;
	const uint8_t *suffix;
	uint32_t	df;
	bool		external;
	uint32_t	len;			/* bytes of the list (inline: its varints) */
	const uint8_t *payload;		/* inline list */
	const uint8_t *tfs;			/* inline list with freqs: as tf_width says */
	uint8_t		tf_width;		/* GPX_TFS_ONES, 1..8 (packed), GPX_TFS_BYTES */
	uint32_t	page;			/* external list */
	uint32_t	offset;
	uint32_t	freq_page;		/* external list with freqs: its record */
	uint32_t	freq_offset;
	uint32_t	pos_page;		/* with positions: its positions record */
	uint32_t	pos_offset;
	const uint8_t *pos_record;	/* or the record itself, in the entry (GPX_SEG_POSITIONS_V2) */
	uint32_t	pos_len;
	bool		pos_flags;		/* the record begins with a flags byte */
} GpxLeafEntry;

/* how an inline list's tfs are stored (GpxLeafEntry.tf_width, besides 1..8 bits each) */
#define GPX_TFS_ONES	0		/* not at all: every tf is 1 */
#define GPX_TFS_BYTES	255		/* a byte each (segments before GPX_SEG_PACKED_LEAF) */

/* an inline entry's df tfs, stored as tf_width says, into out (df bytes) */
extern void gpx_leaf_entry_tfs(const uint8_t *tfs, uint8_t tf_width, uint32_t df, uint8_t *out);

/* a leaf page's header and restart array; NULL or what is wrong */
extern const char *gpx_parse_leaf(const uint8_t *page, uint32_t used, GpxLeafLayout *leaf);
/* restart point i's offset into the entries */
extern uint16_t gpx_leaf_restart(const GpxLeafLayout *leaf, uint32_t i);
/* the entry at *p (moved past it); false if it is malformed */
extern bool gpx_parse_leaf_entry(const uint8_t **p, const uint8_t *end, const GpxSegLimits *limits,
								 GpxLeafEntry *e);

typedef struct GpxInnerLayout
{
	GpxInnerHeader hdr;
	const uint8_t *page;
	uint32_t	used;
} GpxInnerLayout;

/* an inner node's header, at the level expected; NULL or what is wrong */
extern const char *gpx_parse_inner(const uint8_t *page, uint32_t used, uint16_t level,
								   GpxInnerLayout *inner);
/* entry i's key and child page; false if it is malformed */
extern bool gpx_parse_inner_entry(const GpxInnerLayout *inner, uint32_t i, const uint8_t **key,
								  uint32_t *key_len, uint32_t *child);

/*
 * The child of an inner node that leads to term: that of the last entry
 * whose key is <= term.  Returns NULL with *found false when every key is
 * greater; else NULL or what is wrong.
 */
extern const char *gpx_inner_search(const GpxInnerLayout *inner, const uint8_t *term, uint32_t len,
									bool *found, uint32_t *child);

/*
 * term's entry in a leaf: a binary search over the restart points, then a
 * scan of at most GPX_RESTART_INTERVAL entries.  NULL (with *found) or what
 * is wrong.
 */
extern const char *gpx_leaf_search(const GpxLeafLayout *leaf, const GpxSegLimits *limits,
								   const uint8_t *term, uint32_t len, bool *found, GpxLeafEntry *entry);

/* bytewise order of terms, shorter first on a common prefix */
static inline int
gpx_term_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

/*
 * Inline lists.  Before GPX_SEG_PACKED_LEAF: the first doc id, then each gap
 * minus one, a varint each.  In the packed form, runs of consecutive doc ids
 * (a package's files, a dictionary's senses of one word, rows loaded in
 * order) are groups: varint (d << 1 | run), d the first doc id for the first
 * group and the gap minus one after that, then when run is set varint
 * (r - 1): r more docs follow, each the one before plus one.
 *
 * The cursor reads either form a doc at a time, each doc id checked below
 * ndocs; it never reads past end.
 */
typedef struct GpxInlineCursor
{
	const uint8_t *p;
	const uint8_t *end;
	bool		runs;			/* the packed form */
	uint32_t	ndocs;
	uint32_t	left;			/* docs still to read */
	uint32_t	run;			/* of the current group's run, docs not yet read */
	uint64_t	prev;			/* the last doc read */
	bool		started;
} GpxInlineCursor;

static inline void
gpx_inline_begin(GpxInlineCursor *c, const uint8_t *data, const uint8_t *end, uint32_t df, uint32_t ndocs,
				 bool runs)
{
	c->p = data;
	c->end = end;
	c->runs = runs;
	c->ndocs = ndocs;
	c->left = df;
	c->run = 0;
	c->prev = 0;
	c->started = false;
}

/* the next doc into *doc; NULL, or what is wrong (also when none is left) */
static inline const char *
gpx_inline_next(GpxInlineCursor *c, uint32_t *doc)
{
	uint64_t	v;

	if (c->left == 0)
		return "inline list is read past its count";
	if (c->run > 0)
	{
		c->run--;
		v = c->prev + 1;
	}
	else
	{
		if (!gpx_varint_get(&c->p, c->end, &v))
			return "inline list is cut short";
		if (c->runs)
		{
			uint64_t	r = 0;

			if ((v & 1) && !gpx_varint_get(&c->p, c->end, &r))
				return "inline list is cut short";
			/* r + 1 docs after this one, within the count */
			if ((v & 1) && r + 1 >= c->left)
				return "inline list's run is longer than its count";
			c->run = (v & 1) ? (uint32_t) r + 1 : 0;
			v >>= 1;
		}
		/* the gap checked on its own first, so that the sum cannot wrap */
		if (v >= c->ndocs)
			return "inline list has a doc id past the segment";
		v = c->started ? c->prev + v + 1 : v;
	}
	if (v >= c->ndocs)
		return "inline list has a doc id past the segment";
	c->prev = v;
	c->started = true;
	c->left--;
	*doc = (uint32_t) v;
	return NULL;
}

/* an inline list of df doc ids below ndocs into ids; NULL or what is wrong */
extern const char *gpx_parse_inline_list(const uint8_t *data, uint32_t len, uint32_t df, uint32_t ndocs,
										 bool runs, uint32_t *ids);

/* a doc map chunk of n docs: block and offset of each; NULL or what is wrong */
extern const char *gpx_parse_docmap_chunk(const uint8_t *p, const uint8_t *end, uint32_t n,
										  uint16_t max_offset, uint32_t *blocks, uint16_t *offsets);

/*
 * Positions (an index with the option positions): where each posting's
 * lexeme stands in its document, as the document's tsvector holds it
 * (WordEntryPos: the weight in the top 2 bits, the position in the low 14),
 * strictly increasing as in every tsvector.
 *
 * Writers hand them over (pending entries, sorted runs) as one record a
 * posting: varint npos (0 for a lexeme stored without positions, as in a
 * stripped tsvector), then each position as a varint of its gap from the
 * one before (the first's from 0) shifted left 2, or'd with its weight.
 *
 * A segment stores a term's positions as one record in the POSITIONS
 * stream (may span pages):
 *
 *	 varint data_len << 1 | weighted | uint32 block_start[ceil(df / 128) - 1] | data
 *
 * data holds each posting's positions in list order: a byte 0 for a
 * lexeme without positions, else each position as a varint of its gap
 * from the one before (the first's from -1, so never 0) shifted left 1,
 * with the weight in the next 2 bits when the term is weighted (any of its
 * positions has a weight), and a low bit set on the last.  Most text
 * carries no weights, and most gaps are below 64: a byte a position.
 * block_start[b - 1] is where posting 128 b starts in data, so a doc's
 * positions are found by skipping at most 127 postings.  Damage is caught
 * by the pages' checksums and by the parse (counts, bounds, order).
 */
#define GPX_POS_MAX_COUNT	256		/* a tsvector's positions per lexeme (MAXNUMPOS) */
#define GPX_POS_MAX_VALUE	0x3FFF	/* MAXENTRYPOS - 1 */
#define GPX_POS_MAX_RECORD	(3 + GPX_POS_MAX_COUNT * 3)
#define GPX_POS_BLOCK		128

static inline uint32_t
gpx_pos_put_varint(uint8_t *out, uint32_t v)
{
	uint32_t	len = 0;

	do
	{
		out[len++] = (uint8_t) ((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
		v >>= 7;
	} while (v > 0);
	return len;
}

/* the handed-over record of n positions (n <= GPX_POS_MAX_COUNT) into out; its bytes, 0 if out of order */
static inline uint32_t
gpx_pos_encode(const uint16_t *wep, uint32_t n, uint8_t *out)
{
	uint32_t	len = gpx_pos_put_varint(out, n);
	uint32_t	prev = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	pos = wep[i] & GPX_POS_MAX_VALUE;

		if (i > 0 && pos <= prev)
			return 0;
		len += gpx_pos_put_varint(out + len, (pos - prev) << 2 | (uint32_t) (wep[i] >> 14));
		prev = pos;
	}
	return len;
}

/*
 * The handed-over record at *p (moved past it) into wep (room for
 * GPX_POS_MAX_COUNT; NULL: only checked and skipped); false if malformed
 */
static inline bool
gpx_pos_decode(const uint8_t **p, const uint8_t *end, uint16_t *wep, uint32_t *n)
{
	uint32_t	prev = 0;

	if (!gpx_varint_get32(p, end, n) || *n > GPX_POS_MAX_COUNT)
		return false;
	for (uint32_t i = 0; i < *n; i++)
	{
		uint32_t	v;
		uint32_t	pos;

		if (!gpx_varint_get32(p, end, &v))
			return false;
		pos = prev + (v >> 2);
		if ((i > 0 && (v >> 2) == 0) || pos > GPX_POS_MAX_VALUE)
			return false;
		if (wep)
			wep[i] = (uint16_t) ((v & 3) << 14 | pos);
		prev = pos;
	}
	return true;
}

/* a posting's positions as a segment stores them (above) into out; its bytes */
static inline uint32_t
gpx_pos_store(const uint16_t *wep, uint32_t n, bool weighted, uint8_t *out)
{
	uint32_t	len = 0;
	int32_t		prev = -1;

	if (n == 0)
	{
		out[0] = 0;
		return 1;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		int32_t		pos = wep[i] & GPX_POS_MAX_VALUE;
		uint32_t	v = (uint32_t) (pos - prev);

		v = weighted ? (v << 3 | (uint32_t) (wep[i] >> 14) << 1) : v << 1;
		len += gpx_pos_put_varint(out + len, v | (i == n - 1 ? 1 : 0));
		prev = pos;
	}
	return len;
}

/*
 * A stored posting's positions at *p (moved past them) into wep (room for
 * GPX_POS_MAX_COUNT; NULL: only checked and skipped); false if malformed
 */
static inline bool
gpx_pos_load(const uint8_t **p, const uint8_t *end, bool weighted, uint16_t *wep, uint32_t *n)
{
	int32_t		prev = -1;
	uint32_t	v;

	*n = 0;
	if (*p < end && **p == 0)
	{
		(*p)++;
		return true;
	}
	do
	{
		uint32_t	gap;

		if (*n == GPX_POS_MAX_COUNT || !gpx_varint_get32(p, end, &v))
			return false;
		gap = weighted ? v >> 3 : v >> 1;
		if (gap == 0 || prev + (int64_t) gap > GPX_POS_MAX_VALUE)
			return false;
		prev += (int32_t) gap;
		if (wep)
			wep[*n] = (uint16_t) ((weighted ? (v >> 1 & 3) << 14 : 0) | (uint32_t) prev);
		(*n)++;
	} while (!(v & 1));
	return true;
}

/* the tf a posting of n positions has (1..255, as the index counts it) */
static inline uint32_t
gpx_pos_tf(uint32_t n)
{
	return n == 0 ? 1 : n > 255 ? 255 : n;
}

/*
 * The pending area's entries: uint32 length of the body, then the body:
 * 6 bytes TID (uint32 block, uint16 offset), varint nlexemes, then each
 * lexeme as varint length and bytes.  In an index with freqs, nlexemes is
 * followed by varint dl (the doc's length) and each lexeme by one byte, its
 * tf (1..255).  In an index with positions, the lexemes are followed by
 * each one's positions record (above), in the same order.
 */
#define GPX_PENDING_HEAD		sizeof(uint32_t)
#define GPX_PENDING_TID_BYTES	6
/* the smallest entry: its length, a TID and no lexeme */
#define GPX_PENDING_MIN_ENTRY	(GPX_PENDING_HEAD + GPX_PENDING_TID_BYTES + 1)

typedef struct GpxPendingEntry
{
	uint32_t	block;
	uint16_t	offset;
	uint32_t	nlex;
	uint32_t	dl;				/* with freqs: the doc's length */
	const uint8_t *lex;			/* its lexemes */
	const uint8_t *end;			/* their end */
	const uint8_t *pos;			/* with positions: each lexeme's record, in order */
} GpxPendingEntry;

/* an entry's body of len bytes, its lexemes checked once; NULL or what is wrong */
extern const char *gpx_parse_pending_entry(const uint8_t *body, uint32_t len, uint16_t max_offset,
										   bool freqs, bool positions, GpxPendingEntry *entry);

/*
 * next lexeme of a checked entry; false after the last.  tf is the
 * lexeme's frequency with freqs, else 1.
 */
static inline bool
gpx_pending_lexeme(const uint8_t **p, const uint8_t *end, bool freqs, const char **lex, int *len,
				   uint32_t *tf)
{
	uint64_t	n = 0;
	const uint8_t *q = *p;
	int			shift = 0;

	if (q >= end)
		return false;
	do
	{
		n |= (uint64_t) (*q & 0x7F) << shift;
		shift += 7;
	} while (*q++ & 0x80);
	*lex = (const char *) q;
	*len = (int) n;
	*p = q + n;
	*tf = 1;
	if (freqs)
		*tf = *(*p)++;
	return true;
}

#endif							/* GPUIDX_STORE_PARSE_H */
