/*
 * test_parse.c
 *	  The readers of the index's page structures (src/store/parse.c) on
 *	  structures built by hand: sound ones read back exactly, and every kind
 *	  of damage found, among them values whose arithmetic would overflow.
 */
#include "codec/codec.h"
#include "unit.h"
#include "../page_build.h"

#define CAPACITY 8144

static const GpxSegLimits limits = {1000, 4, CAPACITY, false, 0};

static void
check_inline_lists(void)
{
	uint8_t		buf[64];
	uint32_t	ids[8];
	int			n = 0;

	/* 5, 6, 10: first id, then gaps minus one */
	n += gpx_varint_put(buf + n, 5);
	n += gpx_varint_put(buf + n, 0);
	n += gpx_varint_put(buf + n, 3);
	CHECK(gpx_parse_inline_list(buf, n, 3, 1000, ids) == NULL && ids[0] == 5 && ids[1] == 6 && ids[2] == 10,
		  "inline list reads back");
	CHECK(gpx_parse_inline_list(buf, n, 4, 1000, ids) != NULL, "count past the bytes");
	CHECK(gpx_parse_inline_list(buf, n, 2, 1000, ids) != NULL, "bytes past the count");
	CHECK(gpx_parse_inline_list(buf, n, 3, 10, ids) != NULL, "doc id past the segment");
	/* a gap near 2^64 would wrap the running doc id back into range */
	n = gpx_varint_put(buf, 5);
	n += gpx_varint_put(buf + n, UINT64_MAX - 3);
	CHECK(gpx_parse_inline_list(buf, n, 2, 1000, ids) != NULL, "huge gap");
}

static void
check_docmap_chunks(void)
{
	uint8_t		buf[64];
	uint32_t	blocks[8];
	uint16_t	offsets[8];
	int			n = 0;

	/* block 7 offsets 1..3, then block 9 offset 4 */
	n += gpx_varint_put(buf + n, gpx_zigzag(7));
	n += gpx_varint_put(buf + n, 1);
	n += gpx_varint_put(buf + n, 2);
	n += gpx_varint_put(buf + n, gpx_zigzag(2));
	n += gpx_varint_put(buf + n, 4);
	n += gpx_varint_put(buf + n, 0);
	CHECK(gpx_parse_docmap_chunk(buf, buf + n, 4, 291, blocks, offsets) == NULL &&
		  blocks[0] == 7 && offsets[2] == 3 && blocks[3] == 9 && offsets[3] == 4, "chunk reads back");
	CHECK(gpx_parse_docmap_chunk(buf, buf + n, 5, 291, blocks, offsets) != NULL, "chunk cut short");
	CHECK(gpx_parse_docmap_chunk(buf, buf + n, 2, 291, blocks, offsets) != NULL, "run past the chunk");
	CHECK(gpx_parse_docmap_chunk(buf, buf + n, 4, 3, blocks, offsets) != NULL, "offset past the page");
	/* a block delta of 2^63 would overflow the running block number */
	n = gpx_varint_put(buf, UINT64_MAX);
	n += gpx_varint_put(buf + n, 1);
	n += gpx_varint_put(buf + n, 0);
	CHECK(gpx_parse_docmap_chunk(buf, buf + n, 1, 291, blocks, offsets) != NULL, "huge block delta");
	n = gpx_varint_put(buf, gpx_zigzag(-1));
	n += gpx_varint_put(buf + n, 1);
	n += gpx_varint_put(buf + n, 0);
	CHECK(gpx_parse_docmap_chunk(buf, buf + n, 1, 291, blocks, offsets) != NULL, "negative block");
}

/* a leaf of the given terms, term i an inline list of doc i */
static uint32_t
build_leaf(uint8_t *page, const char *const *terms, int nterms)
{
	static const uint32_t docs[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	PbTerm		t[10];

	for (int i = 0; i < nterms; i++)
		t[i] = (PbTerm) {terms[i], 1, &docs[i], 0, 0, 0};
	return pb_leaf(page, CAPACITY, t, (uint32_t) nterms, 0);
}

static void
check_leaves(void)
{
	static const char *const terms[] = {"alpha", "alphabet", "beta", "betamax", "gamma"};
	uint8_t		page[CAPACITY];
	uint32_t	used = build_leaf(page, terms, 5);
	GpxLeafLayout leaf;
	const uint8_t *p;
	char		key[GPX_MAX_TERM_LEN];
	uint32_t	klen = 0;

	CHECK(gpx_parse_leaf(page, used, &leaf) == NULL && leaf.hdr.nentries == 5, "leaf layout");
	p = leaf.entries;
	for (int i = 0; i < 5; i++)
	{
		GpxLeafEntry e;

		CHECK(gpx_parse_leaf_entry(&p, leaf.end, &limits, &e) && e.shared <= klen, "entry %d", i);
		memcpy(key + e.shared, e.suffix, e.suffix_len);
		klen = e.shared + e.suffix_len;
		CHECK(klen == strlen(terms[i]) && memcmp(key, terms[i], klen) == 0 && e.df == 1 && !e.external &&
			  e.len == 1 && e.payload[0] == i, "entry %d reads back", i);
	}
	CHECK(p == leaf.end, "entries end the leaf");

	/* the search finds every term through the restart points, and no other */
	{
		static const char *const absent[] = {"", "a", "alphab", "b", "betamaxx", "zeta"};
		GpxLeafEntry e;
		bool		found;

		for (int i = 0; i < 5; i++)
			CHECK(gpx_leaf_search(&leaf, &limits, (const uint8_t *) terms[i], (uint32_t) strlen(terms[i]),
								  &found, &e) == NULL && found && e.payload[0] == i, "search finds %s", terms[i]);
		for (int i = 0; i < 6; i++)
			CHECK(gpx_leaf_search(&leaf, &limits, (const uint8_t *) absent[i], (uint32_t) strlen(absent[i]),
								  &found, &e) == NULL && !found, "search misses '%s'", absent[i]);
	}
	CHECK(gpx_parse_leaf(page, 3, &leaf) != NULL, "short leaf");
	page[2] = 9;				/* nrestarts */
	CHECK(gpx_parse_leaf(page, used, &leaf) != NULL, "restart count");
	used = build_leaf(page, terms, 5);
	page[8] = 1;				/* the first restart must be 0 */
	CHECK(gpx_parse_leaf(page, used, &leaf) != NULL, "first restart");

	/* entries: a suffix past the page, a df past the segment, an external list off the stream */
	{
		uint8_t		e[32];
		int			n = 0;
		GpxLeafEntry out;

		n += gpx_varint_put(e + n, 0);
		n += gpx_varint_put(e + n, 20);
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n + 3, &limits, &out), "suffix past the end");
		n = gpx_varint_put(e, 0);
		n += gpx_varint_put(e + n, 1);
		e[n++] = 'x';
		n += gpx_varint_put(e + n, 5000);
		n += gpx_varint_put(e + n, 1 << 1);
		e[n++] = 0;
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &limits, &out), "df past the segment");
		n = gpx_varint_put(e, 0);
		n += gpx_varint_put(e + n, 1);
		e[n++] = 'x';
		n += gpx_varint_put(e + n, 5);
		n += gpx_varint_put(e + n, (100 << 1) | 1);
		n += gpx_varint_put(e + n, 9);	/* page past the LISTS stream */
		n += gpx_varint_put(e + n, 0);
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &limits, &out), "list page past the stream");
		/* on the stream's last page, but longer than what is left of it */
		for (uint32_t len = CAPACITY - 96; len <= CAPACITY - 64; len += 32)
		{
			n = gpx_varint_put(e, 0);
			n += gpx_varint_put(e + n, 1);
			e[n++] = 'x';
			n += gpx_varint_put(e + n, 5);
			n += gpx_varint_put(e + n, ((uint64_t) len << 1) | 1);
			n += gpx_varint_put(e + n, 3);
			n += gpx_varint_put(e + n, 64);
			p = e;
			CHECK(gpx_parse_leaf_entry(&p, e + n, &limits, &out) == (len + 64 <= CAPACITY),
				  "a list of %u bytes at the last page's byte 64", len);
		}
	}
}

static void
check_inner_nodes(void)
{
	static const char *const keys[] = {"a", "m"};
	static const uint32_t children[] = {0, 1};
	uint8_t		page[256];
	uint32_t	at = pb_inner(page, sizeof(page), 1, keys, children, 2);
	uint16_t	offs[2];
	GpxInnerLayout inner;
	const uint8_t *key;
	uint32_t	klen;
	uint32_t	child;

	memcpy(offs, page + sizeof(GpxInnerHeader), sizeof(offs));
	CHECK(gpx_parse_inner(page, at, 1, &inner) == NULL, "inner layout");
	CHECK(gpx_parse_inner_entry(&inner, 1, &key, &klen, &child) && klen == 1 && key[0] == 'm' && child == 1,
		  "inner entry reads back");
	{
		bool		found;

		CHECK(gpx_inner_search(&inner, (const uint8_t *) "zz", 2, &found, &child) == NULL && found && child == 1,
			  "search past the last key");
		CHECK(gpx_inner_search(&inner, (const uint8_t *) "b", 1, &found, &child) == NULL && found && child == 0,
			  "search between keys");
		CHECK(gpx_inner_search(&inner, (const uint8_t *) "m", 1, &found, &child) == NULL && found && child == 1,
			  "search on a key");
		CHECK(gpx_inner_search(&inner, (const uint8_t *) "", 0, &found, &child) == NULL && !found,
			  "search before every key");
	}
	CHECK(gpx_parse_inner(page, at, 2, &inner) != NULL, "wrong level");
	CHECK(gpx_parse_inner(page, 5, 1, &inner) != NULL, "offsets past the contents");
	offs[1] = 250;
	memcpy(page + sizeof(GpxInnerHeader), offs, sizeof(offs));
	CHECK(gpx_parse_inner(page, at, 1, &inner) == NULL && !gpx_parse_inner_entry(&inner, 1, &key, &klen, &child),
		  "entry offset past the contents");
	CHECK(!gpx_parse_inner_entry(&inner, 2, &key, &klen, &child), "entry past the count");
}

/* tfs packed and unpacked at every width; a frequency record checked, then damaged */
static void
check_freqs(void)
{
	uint32_t	v[300];
	uint32_t	w[300];
	uint8_t		packed[300 * 4];
	uint8_t		rec[sizeof(GpxFreqHeader) + 3 * sizeof(GpxFreqBlock) + 3 * 128];
	GpxFreqHeader h = {0};
	GpxFreqBlock b[3];
	uint32_t	df = 300;
	uint32_t	off = 0;
	uint32_t	len;

	for (uint32_t width = 0; width <= 32; width++)
	{
		for (uint32_t i = 0; i < 300; i++)
			v[i] = width == 0 ? 0 : (uint32_t) ((i * 2654435761u) & (width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1)));
		len = gpx_pack_bits(packed, v, 300, width);
		CHECK(len == (300 * width + 7) / 8, "packed length at width %u", width);
		gpx_unpack_bits(packed, w, 300, width);
		CHECK(memcmp(v, w, sizeof(v)) == 0, "bits round trip at width %u", width);
	}
	/* three blocks: tfs all 1, tfs up to 3, one tf of 200 */
	memset(b, 0, sizeof(b));
	for (uint32_t k = 0; k < 3; k++)
	{
		uint32_t	n = k < 2 ? 128 : df - 256;

		for (uint32_t i = 0; i < n; i++)
			v[i] = k == 0 ? 0 : k == 1 ? i % 3 : (i == 5 ? 199 : 0);
		b[k].last_doc = 1000 * (k + 1);
		b[k].offset = off;
		b[k].max_tf = k == 0 ? 1 : k == 1 ? 3 : 200;
		b[k].width = k == 0 ? 0 : k == 1 ? 2 : 8;
		b[k].min_dlcode = 4;
		off += gpx_pack_bits(rec + sizeof(h) + sizeof(b) + off, v, n, b[k].width);
	}
	h.df = df;
	h.nbytes = sizeof(h) + sizeof(b) + off;
	h.max_tf = 200;
	h.min_dlcode = 4;
	memcpy(rec + sizeof(h), b, sizeof(b));
	memcpy(rec, &h, sizeof(h));
	h.crc = pl_crc32c(pl_crc32c(0, &(uint32_t){0}, 4), rec + 4, h.nbytes - 4);
	memcpy(rec, &h, sizeof(h));
	CHECK(gpx_parse_freq_record(rec, h.nbytes, df, 5000) == NULL, "a sound record");
	{
		uint8_t		tfs[128];

		gpx_freq_block_tfs(rec, df, 1, tfs);
		CHECK(tfs[0] == 1 && tfs[1] == 2 && tfs[2] == 3, "block 1's tfs");
		gpx_freq_block_tfs(rec, df, 2, tfs);
		CHECK(tfs[5] == 200 && tfs[4] == 1, "block 2's tfs");
	}
	CHECK(gpx_parse_freq_record(rec, h.nbytes, df + 1, 5000) != NULL, "another df");
	CHECK(gpx_parse_freq_record(rec, h.nbytes, df, 2000) != NULL, "docs past the segment");
	rec[sizeof(h) + sizeof(b) + 3] ^= 1;
	CHECK(gpx_parse_freq_record(rec, h.nbytes, df, 5000) != NULL, "a flipped bit");
}

static void
check_pending_entries(void)
{
	static const char *const lexemes[] = {"fox", "quik"};
	uint8_t		stream[64];
	uint32_t	n = pb_pending_entry(stream, sizeof(stream), 12, 3, lexemes, 2) - GPX_PENDING_HEAD;
	const uint8_t *body = stream + GPX_PENDING_HEAD;
	GpxPendingEntry e;
	const uint8_t *p;
	const char *lex;
	int			len;
	uint32_t	tf;

	CHECK(gpx_parse_pending_entry(body, n, 291, false, &e) == NULL && e.block == 12 && e.offset == 3 && e.nlex == 2,
		  "pending entry");
	p = e.lex;
	CHECK(gpx_pending_lexeme(&p, e.end, false, &lex, &len, &tf) && len == 3 && memcmp(lex, "fox", 3) == 0, "lexeme 1");
	CHECK(gpx_pending_lexeme(&p, e.end, false, &lex, &len, &tf) && len == 4 && !gpx_pending_lexeme(&p, e.end, false, &lex, &len, &tf),
		  "lexeme 2, then none");
	CHECK(gpx_parse_pending_entry(body, n - 1, 291, false, &e) != NULL, "lexeme cut short");
	CHECK(gpx_parse_pending_entry(body, n + 1, 291, false, &e) != NULL, "bytes after the lexemes");
	CHECK(gpx_parse_pending_entry(body, n, 2, false, &e) != NULL, "offset past the page");
	CHECK(gpx_parse_pending_entry(body, 4, 291, false, &e) != NULL, "shorter than a TID");

	/* with freqs: the doc's length, then a tf after each lexeme; the length is their sum */
	{
		uint8_t		f[32] = {12, 0, 0, 0, 3, 0, 2, 5, 3, 'f', 'o', 'x', 2, 4, 'q', 'u', 'i', 'k', 3};
		uint32_t	flen = 19;

		CHECK(gpx_parse_pending_entry(f, flen, 291, true, &e) == NULL && e.nlex == 2 && e.dl == 5,
			  "pending entry with freqs");
		f[7] = 6;
		CHECK(gpx_parse_pending_entry(f, flen, 291, true, &e) != NULL, "a length other than the tfs' sum");
		f[7] = 5;
		f[18] = 0;
		CHECK(gpx_parse_pending_entry(f, flen, 291, true, &e) != NULL, "a tf of 0");
	}
}

int
main(void)
{
	check_inline_lists();
	check_docmap_chunks();
	check_leaves();
	check_inner_nodes();
	check_pending_entries();
	check_freqs();
	return unit_report("test_parse");
}
