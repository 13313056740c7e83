/*
 * parse.c
 *	  The index's variable-length structures read from page bytes, each
 *	  read bounded by the bytes given and each value checked against what
 *	  the structure allows (store/parse.h).
 */
#include <string.h>

#include "codec/codec.h"
#include "store/parse.h"
#include "store/varint.h"

/* what the largest block number of a TID can be (PostgreSQL's MaxBlockNumber) */
#define GPX_MAX_BLOCK	UINT32_C(0xFFFFFFFE)

static inline uint16_t
load_u16(const uint8_t *p)
{
	uint16_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

const char *
gpx_parse_leaf(const uint8_t *page, uint32_t used, GpxLeafLayout *leaf)
{
	uint32_t	start;

	if (used < sizeof(GpxLeafHeader))
		return "leaf is too short";
	memcpy(&leaf->hdr, page, sizeof(GpxLeafHeader));
	start = sizeof(GpxLeafHeader) + (uint32_t) leaf->hdr.nrestarts * sizeof(uint16_t);
	if (leaf->hdr.nentries == 0 ||
		leaf->hdr.nrestarts != (leaf->hdr.nentries + GPX_RESTART_INTERVAL - 1) / GPX_RESTART_INTERVAL ||
		start >= used)
		return "leaf header is inconsistent";
	leaf->restarts = page + sizeof(GpxLeafHeader);
	leaf->entries = page + start;
	leaf->end = page + used;
	for (uint32_t i = 0; i < leaf->hdr.nrestarts; i++)
	{
		uint16_t	r = gpx_leaf_restart(leaf, i);

		if (r >= used - start || (i == 0 ? r != 0 : r <= gpx_leaf_restart(leaf, i - 1)))
			return "leaf restart points are inconsistent";
	}
	return NULL;
}

uint16_t
gpx_leaf_restart(const GpxLeafLayout *leaf, uint32_t i)
{
	return load_u16(leaf->restarts + (size_t) i * sizeof(uint16_t));
}

/* the external reference after an entry's len: list, then with freqs its record */
static bool
parse_external(const uint8_t **p, const uint8_t *end, const GpxSegLimits *limits, GpxLeafEntry *e)
{
	/* the stream fills each page before the next: the list ends inside it */
	if (!(gpx_varint_get32(p, end, &e->page) && gpx_varint_get32(p, end, &e->offset) &&
		  e->page < limits->list_pages && e->offset < limits->page_capacity &&
		  e->offset % 4 == 0 && e->len >= 16 &&
		  (uint64_t) e->page * limits->page_capacity + e->offset + e->len <=
		  (uint64_t) limits->list_pages * limits->page_capacity))
		return false;
	if (!limits->freqs)
		return true;
	return gpx_varint_get32(p, end, &e->freq_page) && gpx_varint_get32(p, end, &e->freq_offset) &&
		e->freq_page < limits->freq_pages && e->freq_offset < limits->page_capacity &&
		e->freq_offset % 4 == 0;
}

/* an entry of a segment before GPX_SEG_PACKED_LEAF, past its suffix */
static bool
parse_entry_bytes_tfs(const uint8_t **p, const uint8_t *end, const GpxSegLimits *limits, GpxLeafEntry *e)
{
	uint64_t	tag;

	if (!gpx_varint_get32(p, end, &e->df) || !gpx_varint_get(p, end, &tag) ||
		e->df == 0 || e->df > limits->ndocs || (tag >> 1) > UINT32_MAX)
		return false;
	e->external = (tag & 1) != 0;
	e->len = (uint32_t) (tag >> 1);
	if (e->external)
		return parse_external(p, end, limits, e);
	if (e->len > (uint32_t) (end - *p) || e->len < e->df)
		return false;
	e->payload = *p;
	*p += e->len;
	if (limits->freqs)
	{
		if (e->df > (uint32_t) (end - *p))
			return false;
		for (uint32_t i = 0; i < e->df; i++)
			if ((*p)[i] == 0)
				return false;
		e->tfs = *p;
		e->tf_width = GPX_TFS_BYTES;
		*p += e->df;
	}
	return true;
}

/* a packed entry, past its suffix */
static bool
parse_entry_packed(const uint8_t **p, const uint8_t *end, const GpxSegLimits *limits, GpxLeafEntry *e)
{
	uint64_t	head;
	uint32_t	kind;
	uint32_t	n;

	if (!gpx_varint_get(p, end, &head))
		return false;
	kind = (uint32_t) (head & ((1 << GPX_ENTRY_KIND_BITS) - 1));
	if ((head >> GPX_ENTRY_KIND_BITS) == 0 || (head >> GPX_ENTRY_KIND_BITS) > limits->ndocs)
		return false;
	e->df = (uint32_t) (head >> GPX_ENTRY_KIND_BITS);
	if (kind == GPX_ENTRY_EXTERNAL)
	{
		e->external = true;
		return gpx_varint_get32(p, end, &e->len) && parse_external(p, end, limits, e);
	}
	if ((kind != GPX_ENTRY_INLINE && !(kind == GPX_ENTRY_INLINE_TFS && limits->freqs)) ||
		e->df > GPX_INLINE_MAX_DOCS)
		return false;
	/* the list's end is where its df docs end: read them, each checked */
	{
		GpxInlineCursor c;
		uint32_t	doc;

		gpx_inline_begin(&c, *p, end, e->df, limits->ndocs, true);
		for (n = 0; n < e->df; n++)
			if (gpx_inline_next(&c, &doc) != NULL)
				return false;
		e->payload = *p;
		e->len = (uint32_t) (c.p - *p);
		*p = c.p;
	}
	if (kind == GPX_ENTRY_INLINE)
		return true;
	if (*p == end || **p == 0 || **p > 8)
		return false;
	e->tf_width = *(*p)++;
	n = (uint32_t) (((uint64_t) e->df * e->tf_width + 7) / 8);
	if (n > (uint32_t) (end - *p))
		return false;
	/* 8 bits hold tf - 1 up to 255: a tf of 256 is not one a byte holds */
	if (e->tf_width == 8)
		for (uint32_t i = 0; i < e->df; i++)
			if ((*p)[i] == 0xFF)
				return false;
	e->tfs = *p;
	*p += n;
	return true;
}

bool
gpx_parse_leaf_entry(const uint8_t **p, const uint8_t *end, const GpxSegLimits *limits, GpxLeafEntry *e)
{
	e->payload = NULL;
	e->tfs = NULL;
	e->tf_width = GPX_TFS_ONES;
	e->external = false;
	if (limits->packed)
	{
		uint8_t		lens;

		if (*p == end)
			return false;
		lens = *(*p)++;
		if (lens > GPX_ENTRY_LENS_ESCAPE)
			return false;
		if (lens < GPX_ENTRY_LENS_ESCAPE)
		{
			e->shared = lens >> 4;
			e->suffix_len = lens & 0xF;
		}
		else if (!gpx_varint_get32(p, end, &e->shared) || !gpx_varint_get32(p, end, &e->suffix_len) ||
				 (e->shared < 15 && e->suffix_len < 16))
			return false;
	}
	else if (!gpx_varint_get32(p, end, &e->shared) || !gpx_varint_get32(p, end, &e->suffix_len))
		return false;
	if (e->suffix_len > (uint32_t) (end - *p) || e->shared > GPX_MAX_TERM_LEN ||
		e->suffix_len > GPX_MAX_TERM_LEN - e->shared || e->shared + e->suffix_len == 0)
		return false;
	e->suffix = *p;
	*p += e->suffix_len;
	e->pos_page = e->pos_offset = 0;
	e->pos_record = NULL;
	e->pos_len = 0;
	e->pos_flags = false;
	if (!limits->packed)
		return parse_entry_bytes_tfs(p, end, limits, e);
	if (!parse_entry_packed(p, end, limits, e))
		return false;
	if (!limits->positions)
		return true;
	if (limits->positions_v2 && !e->external)
	{
		uint64_t	h;

		/* the record here, or where it is in the stream */
		if (!gpx_varint_get(p, end, &h))
			return false;
		if ((h & 1) == 0)
		{
			if ((h >> 2) == 0 || (h >> 2) > (uint64_t) (end - *p))
				return false;
			e->pos_record = *p;
			e->pos_len = (uint32_t) (h >> 2);
			e->pos_flags = (h & 2) != 0;
			*p += e->pos_len;
			return true;
		}
		if ((h >> 1) >= limits->pos_pages)
			return false;
		e->pos_page = (uint32_t) (h >> 1);
		return gpx_varint_get32(p, end, &e->pos_offset) && e->pos_offset < limits->page_capacity;
	}
	return gpx_varint_get32(p, end, &e->pos_page) && gpx_varint_get32(p, end, &e->pos_offset) &&
		e->pos_page < limits->pos_pages && e->pos_offset < limits->page_capacity;
}

const char *
gpx_doclen_chunk_header(const uint8_t *p, const uint8_t *end, uint32_t n, bool based, uint32_t *width,
						uint32_t *base, const uint8_t **bits)
{
	*base = 0;
	if (p == end)
		return "doc length chunk is cut short";
	*width = *p++;
	if (*width > 32 || (based && !gpx_varint_get32(&p, end, base)))
		return "doc length chunk is malformed";
	if (((uint64_t) n * *width + 7) / 8 > (uint64_t) (end - p))
		return "doc length chunk is cut short";
	/* the largest length must fit 32 bits: base plus the largest width bits can hold */
	if (*base > 0 && (*width == 32 || ((uint64_t) 1 << *width) - 1 > UINT32_MAX - *base))
	{
		uint32_t	top = 0;

		for (uint32_t i = 0; i < n; i++)
		{
			uint32_t	v = gpx_bits_at(p, i, *width);

			top = v > top ? v : top;
		}
		if (top > UINT32_MAX - *base)
			return "doc length chunk is malformed";
	}
	*bits = p;
	return NULL;
}

const char *
gpx_parse_doclen_chunk(const uint8_t *p, const uint8_t *end, uint32_t n, bool based, uint32_t *dls)
{
	uint32_t	width;
	uint32_t	base;
	const uint8_t *bits;
	const char *problem = gpx_doclen_chunk_header(p, end, n, based, &width, &base, &bits);

	if (problem != NULL)
		return problem;
	gpx_doclen_unpack(bits, n, width, base, dls);
	return NULL;
}

void
gpx_leaf_entry_tfs(const uint8_t *tfs, uint8_t tf_width, uint32_t df, uint8_t *out)
{
	if (tf_width == GPX_TFS_ONES)
		memset(out, 1, df);
	else if (tf_width == GPX_TFS_BYTES)
		memcpy(out, tfs, df);
	else
		/* 128 values of w bits end on a byte: each 128 start on one */
		for (uint32_t done = 0; done < df; done += 128)
			gpx_unpack_tfs(tfs + (size_t) done / 8 * tf_width, df - done < 128 ? df - done : 128, tf_width,
						   out + done);
}

const char *
gpx_parse_freq_record(const uint8_t *rec, uint32_t len, uint32_t df, uint32_t ndocs)
{
	GpxFreqHeader h;
	uint32_t	nb = gpx_freq_nblocks(df);
	uint64_t	data_start = sizeof(GpxFreqHeader) + (uint64_t) nb * sizeof(GpxFreqBlock);
	uint32_t	crc;
	uint32_t	zero = 0;
	int64_t		prev = -1;
	uint32_t	max_tf = 0;
	uint32_t	min_code = 255;

	if (len < sizeof(h))
		return "frequency record is too short";
	memcpy(&h, rec, sizeof(h));
	if (h.nbytes != len || h.df != df || h.flags != 0 || data_start > len)
		return "frequency record header is inconsistent";
	crc = pl_crc32c(0, &zero, sizeof(zero));
	crc = pl_crc32c(crc, rec + sizeof(zero), len - sizeof(zero));
	if (crc != h.crc)
		return "frequency record checksum mismatch";
	for (uint32_t b = 0; b < nb; b++)
	{
		GpxFreqBlock fb;
		uint32_t	n = b + 1 < nb ? 128 : df - 128 * b;
		uint64_t	bytes;

		memcpy(&fb, rec + sizeof(h) + (size_t) b * sizeof(fb), sizeof(fb));
		bytes = ((uint64_t) n * fb.width + 7) / 8;
		if ((int64_t) fb.last_doc <= prev || fb.last_doc >= ndocs || fb.width > 8 || fb.pad != 0 ||
			fb.max_tf == 0 || (fb.max_tf > 1) != (fb.width > 0) ||
			(fb.width > 0 && (uint32_t) (fb.max_tf - 1) >> (fb.width - 1) != 1) ||
			data_start + fb.offset + bytes > len)
			return "frequency record block is inconsistent";
		prev = fb.last_doc;
		max_tf = max_tf > fb.max_tf ? max_tf : fb.max_tf;
		min_code = min_code < fb.min_dlcode ? min_code : fb.min_dlcode;
	}
	if (nb > 0 && (h.max_tf != max_tf || h.min_dlcode != min_code))
		return "frequency record maxima are inconsistent";
	return NULL;
}

void
gpx_freq_block_tfs(const uint8_t *rec, uint32_t df, uint32_t b, uint8_t *tfs)
{
	uint32_t	nb = gpx_freq_nblocks(df);
	uint32_t	n = b + 1 < nb ? 128 : df - 128 * b;
	GpxFreqBlock fb;

	memcpy(&fb, rec + sizeof(GpxFreqHeader) + (size_t) b * sizeof(fb), sizeof(fb));
	gpx_unpack_tfs(rec + sizeof(GpxFreqHeader) + (size_t) nb * sizeof(fb) + fb.offset, n, fb.width, tfs);
}

const char *
gpx_parse_inner(const uint8_t *page, uint32_t used, uint16_t level, GpxInnerLayout *inner)
{
	if (used < sizeof(GpxInnerHeader))
		return "inner node is too short";
	memcpy(&inner->hdr, page, sizeof(GpxInnerHeader));
	if (inner->hdr.level != level || inner->hdr.nentries == 0 ||
		sizeof(GpxInnerHeader) + (size_t) inner->hdr.nentries * sizeof(uint16_t) >= used)
		return "inner node header is inconsistent";
	inner->page = page;
	inner->used = used;
	return NULL;
}

bool
gpx_parse_inner_entry(const GpxInnerLayout *inner, uint32_t i, const uint8_t **key, uint32_t *key_len,
					  uint32_t *child)
{
	uint16_t	off;
	const uint8_t *p;
	const uint8_t *end = inner->page + inner->used;

	if (i >= inner->hdr.nentries)
		return false;
	off = load_u16(inner->page + sizeof(GpxInnerHeader) + (size_t) i * sizeof(uint16_t));
	if (off >= inner->used)
		return false;
	p = inner->page + off;
	if (!gpx_varint_get32(&p, end, key_len) || *key_len > (uint32_t) (end - p) || *key_len > GPX_MAX_TERM_LEN)
		return false;
	*key = p;
	p += *key_len;
	return gpx_varint_get32(&p, end, child);
}

const char *
gpx_inner_search(const GpxInnerLayout *inner, const uint8_t *term, uint32_t len, bool *found,
				 uint32_t *child)
{
	int			lo = 0;
	int			hi = inner->hdr.nentries - 1;

	*found = false;
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const uint8_t *key;
		uint32_t	klen;
		uint32_t	ch;

		if (!gpx_parse_inner_entry(inner, (uint32_t) mid, &key, &klen, &ch))
			return "inner node entry is malformed";
		if (gpx_term_cmp(key, klen, term, len) <= 0)
		{
			*found = true;
			*child = ch;
			lo = mid + 1;
		}
		else
			hi = mid - 1;
	}
	return NULL;
}

const char *
gpx_leaf_search(const GpxLeafLayout *leaf, const GpxSegLimits *limits, const uint8_t *term, uint32_t len,
				bool *found, GpxLeafEntry *entry)
{
	int			lo = 0;
	int			hi = leaf->hdr.nrestarts - 1;
	int			r = -1;
	uint8_t		key[GPX_MAX_TERM_LEN];
	uint32_t	klen = 0;
	uint32_t	n;
	const uint8_t *p;

	*found = false;
	/* the last restart point whose term is <= term */
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		GpxLeafEntry e;

		p = leaf->entries + gpx_leaf_restart(leaf, (uint32_t) mid);
		if (!gpx_parse_leaf_entry(&p, leaf->end, limits, &e) || e.shared != 0)
			return "restart entry is malformed";
		if (gpx_term_cmp(e.suffix, e.suffix_len, term, len) <= 0)
		{
			r = mid;
			lo = mid + 1;
		}
		else
			hi = mid - 1;
	}
	if (r < 0)
		return NULL;
	n = leaf->hdr.nentries - (uint32_t) r * GPX_RESTART_INTERVAL;
	if (n > GPX_RESTART_INTERVAL)
		n = GPX_RESTART_INTERVAL;
	p = leaf->entries + gpx_leaf_restart(leaf, (uint32_t) r);
	for (uint32_t i = 0; i < n; i++)
	{
		GpxLeafEntry e;
		int			c;

		if (!gpx_parse_leaf_entry(&p, leaf->end, limits, &e) || e.shared > klen)
			return "entry is malformed";
		memcpy(key + e.shared, e.suffix, e.suffix_len);
		klen = e.shared + e.suffix_len;
		c = gpx_term_cmp(key, klen, term, len);
		if (c == 0)
		{
			*found = true;
			*entry = e;
			return NULL;
		}
		if (c > 0)
			break;
	}
	return NULL;
}

const char *
gpx_parse_inline_list(const uint8_t *data, uint32_t len, uint32_t df, uint32_t ndocs, bool runs, uint32_t *ids)
{
	GpxInlineCursor c;

	gpx_inline_begin(&c, data, data + len, df, ndocs, runs);
	for (uint32_t i = 0; i < df; i++)
	{
		const char *problem = gpx_inline_next(&c, &ids[i]);

		if (problem != NULL)
			return problem;
	}
	return c.p == c.end ? NULL : "inline list is longer than its count";
}

const char *
gpx_parse_docmap_chunk(const uint8_t *p, const uint8_t *end, uint32_t n, uint16_t max_offset,
					   uint32_t *blocks, uint16_t *offsets)
{
	int64_t		prev = 0;
	uint32_t	k = 0;

	while (k < n)
	{
		uint64_t	zz;
		uint32_t	off;
		uint32_t	run;
		int64_t		blk;

		if (!gpx_varint_get(&p, end, &zz) || !gpx_varint_get32(&p, end, &off) ||
			!gpx_varint_get32(&p, end, &run))
			return "chunk is cut short";
		/* zigzag values past 2^33 cannot be block deltas (and could overflow) */
		if (zz > (UINT64_C(1) << 33))
			return "chunk holds an impossible TID";
		blk = prev + gpx_unzigzag(zz);
		run++;
		if (run == 0 || blk < 0 || blk >= (int64_t) GPX_MAX_BLOCK || off == 0 || run > n - k ||
			(uint64_t) off + run - 1 > max_offset)
			return "chunk holds an impossible TID";
		for (uint32_t i = 0; i < run; i++, k++)
		{
			blocks[k] = (uint32_t) blk;
			offsets[k] = (uint16_t) (off + i);
		}
		prev = blk;
	}
	return NULL;
}

const char *
gpx_parse_pending_entry(const uint8_t *body, uint32_t len, uint16_t max_offset, bool freqs,
						bool positions, GpxPendingEntry *entry)
{
	const uint8_t *p = body + GPX_PENDING_TID_BYTES;
	const uint8_t *end = body + len;
	uint64_t	dl = 0;

	if (len < GPX_PENDING_TID_BYTES + 1)
		return "A pending entry has an impossible length";
	memcpy(&entry->block, body, sizeof(entry->block));
	memcpy(&entry->offset, body + sizeof(entry->block), sizeof(entry->offset));
	if (entry->block >= GPX_MAX_BLOCK || entry->offset == 0 || entry->offset > max_offset ||
		!gpx_varint_get32(&p, end, &entry->nlex))
		return "A pending entry holds an impossible TID";
	entry->dl = 0;
	if (freqs && !gpx_varint_get32(&p, end, &entry->dl))
		return "A pending entry's length is malformed";
	entry->lex = p;
	entry->end = end;

	/* checked once, so users can walk them unchecked (gpx_pending_lexeme) */
	for (uint32_t i = 0; i < entry->nlex; i++)
	{
		uint32_t	n;

		if (!gpx_varint_get32(&p, end, &n) || n == 0 || n > (uint32_t) (end - p))
			return "A pending entry's lexemes are malformed";
		p += n;
		if (freqs && (p == end || *p == 0))
			return "A pending entry's frequencies are malformed";
		if (freqs)
			dl += *p++;
	}
	entry->end = p;
	entry->pos = NULL;
	if (positions)
	{
		const uint8_t *l = entry->lex;

		/* each lexeme's positions, in order, agreeing with its tf */
		entry->pos = p;
		for (uint32_t i = 0; i < entry->nlex; i++)
		{
			uint32_t	n;
			uint32_t	tf;

			if (!gpx_varint_get32(&l, end, &n))
				return "A pending entry's lexemes are malformed";
			l += n;
			tf = *l++;
			if (!gpx_pos_decode(&p, end, NULL, &n) || gpx_pos_tf(n) != tf)
				return "A pending entry's positions are malformed";
		}
	}
	if (p != end)
		return "A pending entry has bytes after its lexemes";
	/* a doc's length is the sum of its tfs */
	return dl == entry->dl ? NULL : "A pending entry's length is not the sum of its frequencies";
}
