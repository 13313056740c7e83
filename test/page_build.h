/*
 * page_build.h
 *	  The index's page structures written as store/parse.h describes them
 *	  (and src/store/segwrite.c writes them): dictionary leaves and inner
 *	  nodes, inline lists, doc map chunks, pending entries.  For the unit
 *	  tests of the readers and the fuzz seeds; no PostgreSQL header.  Every
 *	  writer returns the bytes written, or 0 when they do not fit in cap.
 */
#ifndef GPUIDX_TEST_PAGE_BUILD_H
#define GPUIDX_TEST_PAGE_BUILD_H

#include "../src/store/parse.h"
#include "../src/store/varint.h"

/* one dictionary entry: an inline list of ids, or an external list's place */
typedef struct PbTerm
{
	const char *term;
	uint32_t	df;
	const uint32_t *ids;		/* inline when not NULL: df sorted ids */
	uint32_t	ext_len;		/* else an external list of ext_len bytes */
	uint32_t	ext_page;
	uint32_t	ext_offset;
	const uint8_t *tfs;			/* with freqs, inline: df tfs (NULL: all 1) */
} PbTerm;

/* ids as an inline list: the first id, then each gap minus one */
static inline uint32_t
pb_inline_list(uint8_t *out, uint32_t cap, const uint32_t *ids, uint32_t n)
{
	uint32_t	at = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		if (at + GPX_VARINT_MAX > cap)
			return 0;
		at += (uint32_t) gpx_varint_put(out + at, i == 0 ? ids[0] : ids[i] - ids[i - 1] - 1);
	}
	return at;
}

/* ids as an inline list of the packed form: groups of a doc and a run after it */
static inline uint32_t
pb_inline_runs(uint8_t *out, uint32_t cap, const uint32_t *ids, uint32_t n)
{
	uint32_t	at = 0;

	for (uint32_t i = 0; i < n;)
	{
		uint32_t	run = 0;

		while (i + run + 1 < n && ids[i + run + 1] == ids[i + run] + 1)
			run++;
		if (at + 2 * GPX_VARINT_MAX > cap)
			return 0;
		at += (uint32_t) gpx_varint_put(out + at, (uint64_t) (i == 0 ? ids[0] : ids[i] - ids[i - 1] - 1) << 1 |
										(run > 0));
		if (run > 0)
			at += (uint32_t) gpx_varint_put(out + at, run - 1);
		i += 1 + run;
	}
	return at;
}

/* an entry's two lengths: the packed form's byte (or escape), else two varints */
static inline uint32_t
pb_entry_lens(uint8_t *out, bool packed, uint32_t shared, uint32_t suffix)
{
	uint32_t	at = 0;

	if (packed && shared < 15 && suffix < 16)
	{
		out[0] = (uint8_t) (shared << 4 | suffix);
		return 1;
	}
	if (packed)
		out[at++] = GPX_ENTRY_LENS_ESCAPE;
	at += (uint32_t) gpx_varint_put(out + at, shared);
	at += (uint32_t) gpx_varint_put(out + at, suffix);
	return at;
}

/*
 * a leaf of sorted terms, front-coded, a restart every GPX_RESTART_INTERVAL;
 * its entries in the packed form or the one before it, with freqs or not
 */
static inline uint32_t
pb_leaf_form(uint8_t *page, uint32_t cap, const PbTerm *terms, uint32_t n, uint32_t first_term, bool packed,
			 bool freqs)
{
	GpxLeafHeader hdr = {(uint16_t) n, (uint16_t) ((n + GPX_RESTART_INTERVAL - 1) / GPX_RESTART_INTERVAL),
	first_term};
	uint32_t	start = (uint32_t) sizeof(hdr) + hdr.nrestarts * (uint32_t) sizeof(uint16_t);
	uint32_t	at = start;

	if (start > cap)
		return 0;
	memcpy(page, &hdr, sizeof(hdr));
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	len = (uint32_t) strlen(terms[i].term);
		uint32_t	shared = 0;
		uint8_t		list[8192];
		uint32_t	list_len = 0;
		uint32_t	max_tf = 1;

		if (i % GPX_RESTART_INTERVAL == 0)
		{
			uint16_t	r = (uint16_t) (at - start);

			memcpy(page + sizeof(hdr) + (i / GPX_RESTART_INTERVAL) * sizeof(uint16_t), &r, sizeof(r));
		}
		else
			while (terms[i - 1].term[shared] && terms[i - 1].term[shared] == terms[i].term[shared])
				shared++;
		if (terms[i].ids != NULL &&
			(list_len = (packed ? pb_inline_runs : pb_inline_list) (list, sizeof(list), terms[i].ids,
																	terms[i].df)) == 0 && terms[i].df > 0)
			return 0;
		for (uint32_t j = 0; terms[i].ids != NULL && terms[i].tfs != NULL && j < terms[i].df; j++)
			max_tf = terms[i].tfs[j] > max_tf ? terms[i].tfs[j] : max_tf;
		if (at + 6 * GPX_VARINT_MAX + (len - shared) + list_len + 1 + (freqs ? terms[i].df : 0) > cap)
			return 0;
		at += pb_entry_lens(page + at, packed, shared, len - shared);
		memcpy(page + at, terms[i].term + shared, len - shared);
		at += len - shared;
		if (!packed)
			at += (uint32_t) gpx_varint_put(page + at, terms[i].df);
		if (terms[i].ids != NULL)
		{
			if (packed)
				at += (uint32_t) gpx_varint_put(page + at, (uint64_t) terms[i].df << GPX_ENTRY_KIND_BITS |
												(freqs && max_tf > 1 ? GPX_ENTRY_INLINE_TFS : GPX_ENTRY_INLINE));
			else
				at += (uint32_t) gpx_varint_put(page + at, (uint64_t) list_len << 1);
			memcpy(page + at, list, list_len);
			at += list_len;
			if (freqs && !packed)
				for (uint32_t j = 0; j < terms[i].df; j++)
					page[at++] = terms[i].tfs ? terms[i].tfs[j] : 1;
			else if (freqs && max_tf > 1)
			{
				uint32_t	vals[8192];
				uint32_t	width = 0;

				while ((1u << width) < max_tf)
					width++;
				for (uint32_t j = 0; j < terms[i].df; j++)
					vals[j] = terms[i].tfs[j] - 1u;
				page[at++] = (uint8_t) width;
				at += gpx_pack_bits(page + at, vals, terms[i].df, width);
			}
		}
		else
		{
			if (packed)
			{
				at += (uint32_t) gpx_varint_put(page + at, (uint64_t) terms[i].df << GPX_ENTRY_KIND_BITS |
												GPX_ENTRY_EXTERNAL);
				at += (uint32_t) gpx_varint_put(page + at, terms[i].ext_len);
			}
			else
				at += (uint32_t) gpx_varint_put(page + at, (uint64_t) terms[i].ext_len << 1 | 1);
			at += (uint32_t) gpx_varint_put(page + at, terms[i].ext_page);
			at += (uint32_t) gpx_varint_put(page + at, terms[i].ext_offset);
			if (freqs)
			{
				/* its frequency record: page 0, offset 0 */
				at += (uint32_t) gpx_varint_put(page + at, 0);
				at += (uint32_t) gpx_varint_put(page + at, 0);
			}
		}
	}
	return at;
}

/* a leaf in the form before packed entries, without freqs */
static inline uint32_t
pb_leaf(uint8_t *page, uint32_t cap, const PbTerm *terms, uint32_t n, uint32_t first_term)
{
	return pb_leaf_form(page, cap, terms, n, first_term, false, false);
}

/* an inner node: each child's first term and page */
static inline uint32_t
pb_inner(uint8_t *page, uint32_t cap, uint16_t level, const char *const *keys, const uint32_t *children,
		 uint32_t n)
{
	GpxInnerHeader hdr = {(uint16_t) n, level};
	uint32_t	at = (uint32_t) sizeof(hdr) + n * (uint32_t) sizeof(uint16_t);

	if (at > cap)
		return 0;
	memcpy(page, &hdr, sizeof(hdr));
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	len = (uint32_t) strlen(keys[i]);
		uint16_t	off = (uint16_t) at;

		if (at + 2 * GPX_VARINT_MAX + len > cap)
			return 0;
		memcpy(page + sizeof(hdr) + i * sizeof(uint16_t), &off, sizeof(off));
		at += (uint32_t) gpx_varint_put(page + at, len);
		memcpy(page + at, keys[i], len);
		at += len;
		at += (uint32_t) gpx_varint_put(page + at, children[i]);
	}
	return at;
}

/* a doc map chunk of n TIDs: runs of consecutive line pointers */
static inline uint32_t
pb_docmap_chunk(uint8_t *out, uint32_t cap, const uint32_t *blocks, const uint16_t *offsets, uint32_t n)
{
	uint32_t	at = 0;
	int64_t		prev = 0;

	for (uint32_t i = 0; i < n;)
	{
		uint32_t	run = 1;

		while (i + run < n && blocks[i + run] == blocks[i] && offsets[i + run] == offsets[i] + run)
			run++;
		if (at + 3 * GPX_VARINT_MAX > cap)
			return 0;
		at += (uint32_t) gpx_varint_put(out + at, gpx_zigzag((int64_t) blocks[i] - prev));
		at += (uint32_t) gpx_varint_put(out + at, offsets[i]);
		at += (uint32_t) gpx_varint_put(out + at, run - 1);
		prev = blocks[i];
		i += run;
	}
	return at;
}

/* a pending entry as the pending stream holds it: its length, TID, lexemes */
static inline uint32_t
pb_pending_entry(uint8_t *out, uint32_t cap, uint32_t block, uint16_t offset, const char *const *lexemes,
				 uint32_t n)
{
	uint32_t	at = GPX_PENDING_HEAD + GPX_PENDING_TID_BYTES;
	uint32_t	body;

	if (at + GPX_VARINT_MAX > cap)
		return 0;
	memcpy(out + GPX_PENDING_HEAD, &block, sizeof(block));
	memcpy(out + GPX_PENDING_HEAD + sizeof(block), &offset, sizeof(offset));
	at += (uint32_t) gpx_varint_put(out + at, n);
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	len = (uint32_t) strlen(lexemes[i]);

		if (at + GPX_VARINT_MAX + len > cap)
			return 0;
		at += (uint32_t) gpx_varint_put(out + at, len);
		memcpy(out + at, lexemes[i], len);
		at += len;
	}
	body = at - GPX_PENDING_HEAD;
	memcpy(out, &body, GPX_PENDING_HEAD);
	return at;
}

#endif							/* GPUIDX_TEST_PAGE_BUILD_H */
