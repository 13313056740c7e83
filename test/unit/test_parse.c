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

static const GpxSegLimits limits = {.ndocs = 1000, .list_pages = 4, .page_capacity = CAPACITY};

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
	CHECK(gpx_parse_inline_list(buf, n, 3, 1000, false, ids) == NULL && ids[0] == 5 && ids[1] == 6 && ids[2] == 10,
		  "inline list reads back");
	CHECK(gpx_parse_inline_list(buf, n, 4, 1000, false, ids) != NULL, "count past the bytes");
	CHECK(gpx_parse_inline_list(buf, n, 2, 1000, false, ids) != NULL, "bytes past the count");
	CHECK(gpx_parse_inline_list(buf, n, 3, 10, false, ids) != NULL, "doc id past the segment");
	/* a gap near 2^64 would wrap the running doc id back into range */
	n = gpx_varint_put(buf, 5);
	n += gpx_varint_put(buf + n, UINT64_MAX - 3);
	CHECK(gpx_parse_inline_list(buf, n, 2, 1000, false, ids) != NULL, "huge gap");

	/* with runs: 5, 6, 7, 8, then 20, then 30, 31 */
	{
		static const uint32_t want[] = {5, 6, 7, 8, 20, 30, 31};

		n = gpx_varint_put(buf, 5 << 1 | 1);
		n += gpx_varint_put(buf + n, 2);	/* three more */
		n += gpx_varint_put(buf + n, 11 << 1);
		n += gpx_varint_put(buf + n, 9 << 1 | 1);
		n += gpx_varint_put(buf + n, 0);	/* one more */
		CHECK(gpx_parse_inline_list(buf, n, 7, 1000, true, ids) == NULL && memcmp(ids, want, sizeof(want)) == 0,
			  "inline list with runs reads back");
		CHECK(pb_inline_runs(buf + 32, 32, want, 7) == (uint32_t) n && memcmp(buf, buf + 32, n) == 0,
			  "the test's writer writes the same bytes");
		CHECK(gpx_parse_inline_list(buf, n, 6, 1000, true, ids) != NULL, "a run past the count");
		CHECK(gpx_parse_inline_list(buf, n, 8, 1000, true, ids) != NULL, "the count past the runs");
		CHECK(gpx_parse_inline_list(buf, n, 7, 32, true, ids) == NULL, "the last doc just inside the segment");
		CHECK(gpx_parse_inline_list(buf, n, 7, 31, true, ids) != NULL, "a run past the segment");
		CHECK(gpx_parse_inline_list(buf, n - 1, 7, 1000, true, ids) != NULL, "a run's length cut short");
		/* a run of 2^32 docs would wrap the count */
		n = gpx_varint_put(buf, 5 << 1 | 1);
		n += gpx_varint_put(buf + n, UINT32_MAX);
		CHECK(gpx_parse_inline_list(buf, n, 3, 1000, true, ids) != NULL, "a huge run");
		n = gpx_varint_put(buf, 5 << 1 | 1);
		n += gpx_varint_put(buf + n, UINT64_MAX);
		CHECK(gpx_parse_inline_list(buf, n, 3, 1000, true, ids) != NULL, "a run near 2^64");
	}
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
		t[i] = (PbTerm) {terms[i], 1, &docs[i], 0, 0, 0, NULL};
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

/*
 * Leaves of both entry forms with freqs: long terms (the escaped lengths),
 * inline lists whose tfs are all 1, small, and up to 255, an external
 * list; each read back, the tfs unpacked; then damage of the packed form.
 */
static void
check_packed_leaves(void)
{
	static const uint32_t ids_a[] = {3, 4, 900};
	static const uint8_t tfs_small[] = {1, 3, 2};
	static const uint8_t tfs_wide[] = {255, 1, 200};
	static const char long_term[] = "averyveryverylongtermthatsharesnothing";
	static const char long_next[] = "averyveryverylongtermthatsharesnothingmore";
	PbTerm		t[6] = {
		{"ab", 3, ids_a, 0, 0, 0, NULL},
		{"abc", 3, ids_a, 0, 0, 0, tfs_small},
		{"abd", 3, ids_a, 0, 0, 0, tfs_wide},
		{long_term, 1, &ids_a[2], 0, 0, 0, NULL},
		{long_next, 700, NULL, 100, 2, 64, NULL},
		{"b", 2, ids_a, 0, 0, 0, tfs_small},
	};
	GpxSegLimits fl = {.ndocs = 1000, .list_pages = 4, .page_capacity = CAPACITY, .freqs = true, .freq_pages = 1};

	for (int packed = 0; packed <= 1; packed++)
	{
		uint8_t		page[CAPACITY];
		uint32_t	used = pb_leaf_form(page, CAPACITY, t, 6, 0, packed, true);
		GpxLeafLayout leaf;
		const uint8_t *p;
		char		key[GPX_MAX_TERM_LEN];
		uint32_t	klen = 0;

		fl.packed = packed;
		CHECK(used > 0 && gpx_parse_leaf(page, used, &leaf) == NULL, "%s leaf layout", packed ? "packed" : "byte-tf");
		p = leaf.entries;
		for (int i = 0; i < 6; i++)
		{
			GpxLeafEntry e;
			uint32_t	ids[8];
			uint8_t		tfs[8];

			CHECK(gpx_parse_leaf_entry(&p, leaf.end, &fl, &e) && e.shared <= klen, "entry %d", i);
			memcpy(key + e.shared, e.suffix, e.suffix_len);
			klen = e.shared + e.suffix_len;
			CHECK(klen == strlen(t[i].term) && memcmp(key, t[i].term, klen) == 0 && e.df == t[i].df &&
				  e.external == (t[i].ids == NULL), "%s entry %d reads back", packed ? "packed" : "byte-tf", i);
			if (e.external)
			{
				CHECK(e.len == 100 && e.page == 2 && e.offset == 64 && e.freq_page == 0, "external reference");
				continue;
			}
			CHECK(gpx_parse_inline_list(e.payload, e.len, e.df, 1000, packed, ids) == NULL &&
				  memcmp(ids, t[i].ids, e.df * sizeof(uint32_t)) == 0, "entry %d's postings", i);
			gpx_leaf_entry_tfs(e.tfs, e.tf_width, e.df, tfs);
			for (uint32_t j = 0; j < e.df; j++)
				CHECK(tfs[j] == (t[i].tfs ? t[i].tfs[j] : 1), "entry %d's tf %u", i, j);
			if (packed)
				CHECK(e.tf_width == (t[i].tfs == NULL ? GPX_TFS_ONES : t[i].tfs == tfs_wide ? 8 : 2),
					  "entry %d's tf width", i);
		}
		CHECK(p == leaf.end, "%s entries end the leaf", packed ? "packed" : "byte-tf");
		{
			GpxLeafEntry e;
			bool		found;

			CHECK(gpx_leaf_search(&leaf, &fl, (const uint8_t *) long_next, (uint32_t) strlen(long_next),
								  &found, &e) == NULL && found && e.external, "search finds the external entry");
			CHECK(gpx_leaf_search(&leaf, &fl, (const uint8_t *) "abcd", 4, &found, &e) == NULL && !found,
				  "search misses abcd");
		}
	}

	/* damage to packed entries */
	{
		uint8_t		e[64];
		int			n;
		GpxLeafEntry out;
		const uint8_t *p;
		GpxSegLimits nofreqs = {.ndocs = 1000, .list_pages = 4, .page_capacity = CAPACITY, .packed = true};

		fl.packed = true;
		/* the lengths byte: 0x12 is shared 1, suffix 2 */
#define ENTRY_START(lens) (n = 0, e[n++] = (lens), e[n++] = 'x', e[n++] = 'y')
		ENTRY_START(0x02);
		n += gpx_varint_put(e + n, 1 << 2 | GPX_ENTRY_INLINE);
		e[n++] = 7 << 1;	/* doc 7, no run */
		p = e;
		CHECK(gpx_parse_leaf_entry(&p, e + n, &fl, &out) && out.df == 1 && out.len == 1 && p == e + n,
			  "a sound packed entry");
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n - 1, &fl, &out), "postings cut short");
		e[0] = 0xF1;
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &fl, &out), "a lengths byte above the escape");
		n = 0;
		e[n++] = GPX_ENTRY_LENS_ESCAPE;
		n += gpx_varint_put(e + n, 0);
		n += gpx_varint_put(e + n, 2);
		e[n++] = 'x';
		e[n++] = 'y';
		n += gpx_varint_put(e + n, 1 << 2 | GPX_ENTRY_INLINE);
		e[n++] = 7 << 1;	/* doc 7, no run */
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &fl, &out), "escaped lengths a byte would hold");
		ENTRY_START(0x02);
		n += gpx_varint_put(e + n, 1 << 2 | 3);
		e[n++] = 7 << 1;	/* doc 7, no run */
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &fl, &out), "kind 3");
		ENTRY_START(0x02);
		n += gpx_varint_put(e + n, 0 << 2 | GPX_ENTRY_INLINE);
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &fl, &out), "df 0");
		ENTRY_START(0x02);
		n += gpx_varint_put(e + n, 2000 << 2 | GPX_ENTRY_INLINE);
		e[n++] = 7 << 1;	/* doc 7, no run */
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &fl, &out), "df past the segment");
		/* one run of 1,025 docs: more than an inline list holds */
		{
			GpxSegLimits big = fl;

			big.ndocs = 100000;
			ENTRY_START(0x02);
			n += gpx_varint_put(e + n, (GPX_INLINE_MAX_DOCS + 1) << 2 | GPX_ENTRY_INLINE);
			n += gpx_varint_put(e + n, 7 << 1 | 1);
			n += gpx_varint_put(e + n, GPX_INLINE_MAX_DOCS - 1);
			p = e;
			CHECK(!gpx_parse_leaf_entry(&p, e + n, &big, &out), "an inline list of 1,025 docs");
			ENTRY_START(0x02);
			n += gpx_varint_put(e + n, GPX_INLINE_MAX_DOCS << 2 | GPX_ENTRY_INLINE);
			n += gpx_varint_put(e + n, 7 << 1 | 1);
			n += gpx_varint_put(e + n, GPX_INLINE_MAX_DOCS - 2);
			p = e;
			CHECK(gpx_parse_leaf_entry(&p, e + n, &big, &out) && out.df == GPX_INLINE_MAX_DOCS,
				  "an inline list of 1,024 docs in one run");
		}
		for (int w = 0; w <= 9; w++)
		{
			ENTRY_START(0x02);
			n += gpx_varint_put(e + n, 2 << 2 | GPX_ENTRY_INLINE_TFS);
			e[n++] = 7 << 1;	/* doc 7, no run */
			e[n++] = 0;
			e[n++] = (uint8_t) w;
			e[n++] = 0x01;
			e[n++] = 0x01;
			p = e;
			CHECK(gpx_parse_leaf_entry(&p, e + n, &fl, &out) == (w >= 1 && w <= 8), "tf width %d", w);
			p = e;
			CHECK(!gpx_parse_leaf_entry(&p, e + n, &nofreqs, &out), "tfs in a segment without freqs (width %d)",
				  w);
		}
		/* 8 bits of 0xFF: a tf of 256 */
		e[n - 3] = 8;
		e[n - 1] = 0xFF;
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &fl, &out), "a tf past 255");
		/* the tfs' bytes cut short */
		e[n - 1] = 0x01;
		p = e;
		CHECK(gpx_parse_leaf_entry(&p, e + n, &fl, &out), "8 bits each, sound");
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n - 1, &fl, &out), "tfs cut short");
		ENTRY_START(0x02);
		n += gpx_varint_put(e + n, 5 << 2 | GPX_ENTRY_EXTERNAL);
		n += gpx_varint_put(e + n, 100);
		n += gpx_varint_put(e + n, 9);	/* page past the LISTS stream */
		n += gpx_varint_put(e + n, 0);
		p = e;
		CHECK(!gpx_parse_leaf_entry(&p, e + n, &nofreqs, &out), "packed: list page past the stream");
#undef ENTRY_START
	}
}

/* doc length chunks with and without a base, then damaged */
static void
check_doclen_chunks(void)
{
	uint32_t	dls[5] = {12, 9, 15, 9, 30};
	uint32_t	rel[5];
	uint32_t	out[5];
	uint8_t		buf[64];
	uint32_t	n;

	/* without a base: 30 needs 5 bits */
	buf[0] = 5;
	n = 1 + gpx_pack_bits(buf + 1, dls, 5, 5);
	CHECK(gpx_parse_doclen_chunk(buf, buf + n, 5, false, out) == NULL && memcmp(out, dls, sizeof(dls)) == 0,
		  "unbased chunk reads back");
	CHECK(gpx_parse_doclen_chunk(buf, buf + n - 1, 5, false, out) != NULL, "unbased chunk cut short");
	/* based on 9: 30 - 9 = 21 still needs 5 bits, 15 - 9 = 6 three */
	for (int i = 0; i < 5; i++)
		rel[i] = dls[i] - 9;
	buf[0] = 5;
	n = 1 + (uint32_t) gpx_varint_put(buf + 1, 9);
	n += gpx_pack_bits(buf + n, rel, 5, 5);
	CHECK(gpx_parse_doclen_chunk(buf, buf + n, 5, true, out) == NULL && memcmp(out, dls, sizeof(dls)) == 0,
		  "based chunk reads back");
	CHECK(gpx_parse_doclen_chunk(buf, buf + n - 1, 5, true, out) != NULL, "based chunk cut short");
	CHECK(gpx_parse_doclen_chunk(buf, buf + 1, 5, true, out) != NULL, "base cut short");
	/* every length the same: width 0, the base alone */
	buf[0] = 0;
	n = 1 + (uint32_t) gpx_varint_put(buf + 1, 7);
	CHECK(gpx_parse_doclen_chunk(buf, buf + n, 5, true, out) == NULL && out[0] == 7 && out[4] == 7,
		  "width 0: the base");
	buf[0] = 33;
	CHECK(gpx_parse_doclen_chunk(buf, buf + n, 5, true, out) != NULL, "width 33");
	/* a base that would overflow a length */
	buf[0] = 32;
	n = 1 + (uint32_t) gpx_varint_put(buf + 1, UINT32_MAX);
	memset(buf + n, 0xFF, 20);
	CHECK(gpx_parse_doclen_chunk(buf, buf + n + 20, 5, true, out) != NULL, "base plus length past 2^32");
	CHECK(gpx_parse_doclen_chunk(buf, buf, 5, false, out) != NULL, "empty chunk");

	/* one value read where it is, at every width, equals the unpacked one */
	{
		uint32_t	vals[128];
		uint8_t		packed[128 * 4];
		uint64_t	x = 88172645463325252ULL;

		for (uint32_t w = 0; w <= 32; w++)
		{
			uint32_t	bad = 0;

			for (uint32_t i = 0; i < 128; i++)
			{
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				vals[i] = w == 0 ? 0 : (uint32_t) (x & (w == 32 ? 0xFFFFFFFFu : (1u << w) - 1));
			}
			gpx_pack_bits(packed, vals, 128, w);
			for (uint32_t i = 0; i < 128; i++)
				bad += gpx_bits_at(packed, i, w) != vals[i];
			CHECK(bad == 0, "values read one at a time at width %u", w);
			/* tfs (tf - 1 stored) unpacked whole, every count, without reading past their bytes */
			for (uint32_t n = 1; w <= 8 && n <= 128; n++)
			{
				uint32_t	bytes = (n * w + 7) / 8;
				uint8_t    *exact = malloc(bytes > 0 ? bytes : 1);
				uint8_t		tfs[129];

				memcpy(exact, packed, bytes);
				tfs[n] = 0xEE;
				gpx_unpack_tfs(exact, n, w, tfs);
				for (uint32_t i = 0; i < n; i++)
					bad += tfs[i] != (uint8_t) (gpx_bits_at(packed, i, w) + 1);
				bad += tfs[n] != 0xEE;
				free(exact);
			}
			CHECK(bad == 0, "tfs unpacked at width %u", w);
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

	CHECK(gpx_parse_pending_entry(body, n, 291, false, false, &e) == NULL && e.block == 12 && e.offset == 3 && e.nlex == 2,
		  "pending entry");
	p = e.lex;
	CHECK(gpx_pending_lexeme(&p, e.end, false, &lex, &len, &tf) && len == 3 && memcmp(lex, "fox", 3) == 0, "lexeme 1");
	CHECK(gpx_pending_lexeme(&p, e.end, false, &lex, &len, &tf) && len == 4 && !gpx_pending_lexeme(&p, e.end, false, &lex, &len, &tf),
		  "lexeme 2, then none");
	CHECK(gpx_parse_pending_entry(body, n - 1, 291, false, false, &e) != NULL, "lexeme cut short");
	CHECK(gpx_parse_pending_entry(body, n + 1, 291, false, false, &e) != NULL, "bytes after the lexemes");
	CHECK(gpx_parse_pending_entry(body, n, 2, false, false, &e) != NULL, "offset past the page");
	CHECK(gpx_parse_pending_entry(body, 4, 291, false, false, &e) != NULL, "shorter than a TID");

	/* with freqs: the doc's length, then a tf after each lexeme; the length is their sum */
	{
		uint8_t		f[32] = {12, 0, 0, 0, 3, 0, 2, 5, 3, 'f', 'o', 'x', 2, 4, 'q', 'u', 'i', 'k', 3};
		uint32_t	flen = 19;

		CHECK(gpx_parse_pending_entry(f, flen, 291, true, false, &e) == NULL && e.nlex == 2 && e.dl == 5,
			  "pending entry with freqs");
		f[7] = 6;
		CHECK(gpx_parse_pending_entry(f, flen, 291, true, false, &e) != NULL, "a length other than the tfs' sum");
		f[7] = 5;
		f[18] = 0;
		CHECK(gpx_parse_pending_entry(f, flen, 291, true, false, &e) != NULL, "a tf of 0");
	}
}

/*
 * Positions: the handed-over form and the stored form give back every
 * position and weight; order, bounds and counts are checked; a stored
 * posting never starts with a 0 byte unless it has no positions.
 */
static void
check_positions(void)
{
	uint16_t	wep[GPX_POS_MAX_COUNT];
	uint16_t	back[GPX_POS_MAX_COUNT];
	uint8_t		buf[GPX_POS_MAX_RECORD + 8];
	uint32_t	seed = 12345;
	bool		ok = true;

	for (int round = 0; round < 2000 && ok; round++)
	{
		uint32_t	n = round % 7 == 0 ? 0 : round % 11 == 0 ? GPX_POS_MAX_COUNT : 1 + (round % 40);
		uint32_t	pos = 0;
		bool		weighted = false;

		for (uint32_t i = 0; i < n; i++)
		{
			seed = seed * 1103515245 + 12345;
			pos += 1 + (seed >> 16) % (round % 3 == 0 ? 3 : 60);
			if (pos > GPX_POS_MAX_VALUE - (n - i))
				pos = GPX_POS_MAX_VALUE - (n - i) + 1;
			wep[i] = (uint16_t) (pos | (round % 5 == 0 ? ((seed >> 8) & 3) << 14 : 0));
			weighted |= (wep[i] >> 14) != 0;
		}
		for (int form = 0; form < 3; form++)
		{
			const uint8_t *p = buf;
			uint32_t	len;
			uint32_t	got = 999;
			bool		w = form == 2 || weighted;

			if (form == 0)
				len = gpx_pos_encode(wep, n, buf);
			else
				len = gpx_pos_store(wep, n, w, buf);
			if (form == 0 ? !gpx_pos_decode(&p, buf + len, back, &got) : !gpx_pos_load(&p, buf + len, w, back, &got))
				ok = false;
			else if (got != n || p != buf + len || memcmp(wep, back, n * sizeof(uint16_t)) != 0)
				ok = false;
			/* cut short: never read past the end, always refused */
			p = buf;
			if (len > 1 && (form == 0 ? gpx_pos_decode(&p, buf + len - 1, back, &got)
							: gpx_pos_load(&p, buf + len - 1, w, back, &got)))
				ok = false;
			if (form > 0 && n > 0 && buf[0] == 0)
				ok = false;
		}
	}
	CHECK(ok, "positions round trip in both forms, and refuse a cut record");

	wep[0] = 5;
	wep[1] = 5;
	CHECK(gpx_pos_encode(wep, 2, buf) == 0, "positions out of order are refused");
	{
		/* a stored gap of 0, a position past 16383, more than 256 positions */
		const uint8_t zero_gap[] = {0x06, 0x00};
		const uint8_t far[] = {0xFF, 0xFF, 0x03};
		uint8_t		many[300];
		const uint8_t *p;
		uint32_t	got;

		p = zero_gap;
		CHECK(!gpx_pos_load(&p, zero_gap + 2, false, back, &got), "a stored gap of 0 is refused");
		p = far;
		CHECK(!gpx_pos_load(&p, far + 3, false, back, &got), "a position past 16383 is refused");
		memset(many, 0x02, sizeof(many));
		many[299] = 0x03;
		p = many;
		CHECK(!gpx_pos_load(&p, many + 300, false, back, &got), "more than 256 positions are refused");
		CHECK(gpx_pos_tf(0) == 1 && gpx_pos_tf(3) == 3 && gpx_pos_tf(256) == 255, "a posting's tf from its positions");
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
	check_packed_leaves();
	check_doclen_chunks();
	check_positions();
	return unit_report("test_parse");
}
