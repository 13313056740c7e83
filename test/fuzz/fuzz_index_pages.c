/*
 * fuzz_index_pages.c
 *	  libFuzzer target: the readers of the index's page structures
 *	  (src/store/parse.c, the code the server runs) on arbitrary bytes, used
 *	  as the server uses them: a leaf walked entry by entry with its front
 *	  coding and searched through its restart points, an inner node searched,
 *	  a doc map chunk, an inline list, a run of pending entries.  Whatever
 *	  the bytes, no read leaves them, and what parses holds what it promises
 *	  (an external list inside its stream, a pending entry's length the sum
 *	  of its tfs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/store/parse.h"

#define CAPACITY 8144			/* a page's contents at 8 kB blocks */

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

static void
check_inline(const uint8_t *data, uint32_t len, uint32_t df, uint32_t ndocs, bool runs)
{
	uint32_t   *ids = malloc((df ? df : 1) * sizeof(uint32_t));

	if (gpx_parse_inline_list(data, len, df, ndocs, runs, ids) == NULL)
		for (uint32_t i = 0; i < df; i++)
			if (ids[i] >= ndocs || (i > 0 && ids[i] <= ids[i - 1]))
				FAIL("inline list read out of range or order at %u", i);
	free(ids);
}

/* an inline entry's tfs lie in the page and unpack to 1..255 */
static void
check_tfs(const GpxLeafEntry *e, const uint8_t *end, bool freqs)
{
	uint8_t    *tfs;
	uint32_t	bytes = e->tf_width == GPX_TFS_ONES ? 0 : e->tf_width == GPX_TFS_BYTES ? e->df :
		(uint32_t) (((uint64_t) e->df * e->tf_width + 7) / 8);

	if (!freqs)
	{
		if (e->tfs != NULL)
			FAIL("tfs in a leaf without freqs");
		return;
	}
	if (bytes > 0 && (e->tfs == NULL || e->tfs + bytes > end))
		FAIL("an entry's tfs run past the page");
	tfs = malloc(e->df);
	gpx_leaf_entry_tfs(e->tfs, e->tf_width, e->df, tfs);
	for (uint32_t i = 0; i < e->df; i++)
		if (tfs[i] == 0)
			FAIL("a tf of 0 at %u", i);
	free(tfs);
}

/* the dictionary iterator's walk, and a lookup through the restart points */
static void
walk_leaf(const uint8_t *page, uint32_t used, const GpxSegLimits *limits, const uint8_t *probe, uint32_t plen)
{
	GpxLeafLayout leaf;
	const uint8_t *p;
	uint8_t		key[GPX_MAX_TERM_LEN];
	uint32_t	klen = 0;

	if (gpx_parse_leaf(page, used, &leaf) != NULL)
		return;
	p = leaf.entries;
	for (uint32_t i = 0; i < leaf.hdr.nentries; i++)
	{
		GpxLeafEntry e;

		if (!gpx_parse_leaf_entry(&p, leaf.end, limits, &e) || e.shared > klen)
			break;
		if (p > leaf.end || e.suffix + e.suffix_len > leaf.end)
			FAIL("a leaf entry ran past the page");
		memcpy(key + e.shared, e.suffix, e.suffix_len);
		klen = e.shared + e.suffix_len;
		if (!e.external)
		{
			check_inline(e.payload, e.len, e.df, limits->ndocs, limits->packed);
			check_tfs(&e, leaf.end, limits->freqs);
		}
		else if (e.page >= limits->list_pages || e.offset >= limits->page_capacity ||
				 (uint64_t) e.page * limits->page_capacity + e.offset + e.len >
				 (uint64_t) limits->list_pages * limits->page_capacity)
			FAIL("an external list runs past the list stream");
	}
	/* the server's lookup; a term it finds is the entry it says */
	{
		bool		found;
		GpxLeafEntry e;

		if (gpx_leaf_search(&leaf, limits, probe, plen, &found, &e) == NULL && found &&
			(e.suffix < leaf.entries || e.suffix + e.suffix_len > leaf.end))
			FAIL("the entry found lies outside the leaf");
	}
}

static void
search_inner(const uint8_t *page, uint32_t used, uint16_t level, const uint8_t *probe, uint32_t plen)
{
	GpxInnerLayout inner;
	bool		found;
	uint32_t	child;

	if (gpx_parse_inner(page, used, level, &inner) != NULL)
		return;
	for (uint32_t i = 0; i < inner.hdr.nentries; i++)
	{
		const uint8_t *key;
		uint32_t	klen;

		if (gpx_parse_inner_entry(&inner, i, &key, &klen, &child) && (key < page || key + klen > page + used))
			FAIL("an inner key lies outside the node");
	}
	(void) gpx_inner_search(&inner, probe, plen, &found, &child);
}

static void
check_docmap(const uint8_t *p, uint32_t len, uint32_t n, uint16_t max_offset)
{
	uint32_t	blocks[GPX_DOCMAP_CHUNK];
	uint16_t	offsets[GPX_DOCMAP_CHUNK];

	uint32_t	dls[GPX_DOCMAP_CHUNK];

	if (gpx_parse_docmap_chunk(p, p + len, n, max_offset, blocks, offsets) == NULL)
		for (uint32_t i = 0; i < n; i++)
			if (offsets[i] == 0 || offsets[i] > max_offset || blocks[i] >= 0xFFFFFFFEu)
				FAIL("a TID out of range at %u", i);
	/* the same bytes as a chunk of doc lengths, with and without a base */
	if (gpx_parse_doclen_chunk(p, p + len, n, true, dls) == NULL && len < 1 + ((uint64_t) n * p[0] + 7) / 8)
		FAIL("a doc length chunk read past its bytes");
	(void) gpx_parse_doclen_chunk(p, p + len, n, false, dls);
}

/* a run of entries as the pending area's stream holds them */
static void
walk_pending(const uint8_t *p, uint32_t len, bool freqs, bool positions)
{
	const uint8_t *end = p + len;

	while ((size_t) (end - p) >= GPX_PENDING_HEAD)
	{
		uint32_t	body;
		GpxPendingEntry e;
		const uint8_t *q;
		const char *lex;
		int			n;
		uint32_t	tf;
		uint32_t	count = 0;
		uint64_t	dl = 0;

		memcpy(&body, p, GPX_PENDING_HEAD);
		p += GPX_PENDING_HEAD;
		if (body > (uint32_t) (end - p) || gpx_parse_pending_entry(p, body, 291, freqs, positions, &e) != NULL)
			return;
		q = e.lex;
		while (gpx_pending_lexeme(&q, e.end, freqs, &lex, &n, &tf))
		{
			if ((const uint8_t *) lex + n > e.end || n <= 0)
				FAIL("a lexeme lies outside its entry");
			if (freqs && (tf == 0 || q > e.end))
				FAIL("a lexeme's frequency lies outside its entry or is 0");
			count++;
			dl += tf;
		}
		if (count != e.nlex)
			FAIL("an entry holds %u lexemes, says %u", count, e.nlex);
		if (freqs && dl != e.dl)
			FAIL("an entry's length %u is not the sum of its tfs", e.dl);
		p += body;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t	used;
	uint32_t	plen;
	GpxSegLimits limits;

	if (size < 8)
		return 0;
	/* the header of the input: kind, limits, a probe; the rest is the page */
	limits.ndocs = 1 + (data[1] | (uint32_t) data[2] << 8);
	limits.list_pages = data[3];
	limits.page_capacity = CAPACITY;
	/* the low bit of the kind byte: a segment or index with freqs */
	limits.freqs = (data[0] & 0x80) != 0;
	limits.freq_pages = data[3];
	/* bit 0x40: a leaf's entries in the packed form */
	limits.packed = (data[0] & 0x40) != 0;
	/* bit 0x20: packed entries place a positions record */
	limits.positions = limits.packed && (data[0] & 0x20) != 0;
	/* bit 0x10: an inline list's record in its entry (GPX_SEG_POSITIONS_V2) */
	limits.positions_v2 = limits.positions && (data[0] & 0x10) != 0;
	limits.pos_pages = data[3];
	plen = data[4] % 16;
	if (size < 8 + plen)
		return 0;
	used = (uint32_t) ((size - 8 - plen) < CAPACITY ? size - 8 - plen : CAPACITY);
	/* exactly the bytes given, at a fresh address: an overrun shows */
	{
		uint8_t    *bytes = malloc(used ? used : 1);
		const uint8_t *probe = data + 8;

		memcpy(bytes, data + 8 + plen, used);
		switch (data[0] % 5)
		{
			case 0:
				walk_leaf(bytes, used, &limits, probe, plen);
				break;
			case 1:
				search_inner(bytes, used, (uint16_t) (1 + data[5] % 3), probe, plen);
				break;
			case 2:
				check_docmap(bytes, used, 1 + data[5] % GPX_DOCMAP_CHUNK, (uint16_t) (1 + data[6]));
				break;
			case 3:
				walk_pending(bytes, used, limits.freqs, limits.freqs && (data[0] & 0x20) != 0);
				break;
			default:
				check_inline(bytes, used, data[5], limits.ndocs, limits.packed);
				break;
		}
		free(bytes);
	}
	return 0;
}
