/*
 * rankdata.h
 *	  The data a ranking engine reads besides posting lists, as it crosses
 *	  gpuidx_engine.h: a segment's document lengths (gpuidx_doclens_header)
 *	  and a list's frequency record (store/parse.h), checked before use and
 *	  read one value at a time.  No PostgreSQL header: the engines, the
 *	  backends and the tests share it.
 */
#ifndef GPUIDX_STORE_RANKDATA_H
#define GPUIDX_STORE_RANKDATA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpuidx_engine.h"

/* bytes of a doclens blob with nchunks chunks holding data_bytes of chunk data */
static inline uint64_t
gpx_doclens_size(uint32_t nchunks, uint64_t data_bytes)
{
	return sizeof(gpuidx_doclens_header) + (uint64_t) nchunks * 4 + data_bytes + 8;
}

/* where a blob's chunk data starts */
static inline uint64_t
gpx_doclens_data_start(uint32_t nchunks)
{
	return sizeof(gpuidx_doclens_header) + (uint64_t) nchunks * 4;
}

/* the most bytes one chunk takes: its width byte and 128 lengths of 32 bits */
#define GPX_DOCLENS_CHUNK_MAX	(1 + 4 * GPUIDX_DOCLENS_CHUNK)

/*
 * Chunk c (n lengths) of a blob of nchunks chunks, written after the
 * data_used bytes of chunk data before it: its directory entry and data.
 * Returns the chunk's bytes.
 */
extern uint64_t gpx_doclens_put_chunk(uint8_t *blob, uint32_t nchunks, uint32_t c, uint64_t data_used,
									  const uint32_t *lens, uint32_t n);

/*
 * Seal a blob whose directory and chunk data the caller wrote: header,
 * guard bytes and CRC.  len: gpx_doclens_size of what was written.
 */
extern void gpx_doclens_seal(uint8_t *blob, uint64_t len, uint32_t ndocs);

/* a blob holding lens[ndocs] (malloc'd; *len set), for tests and tools */
extern uint8_t *gpx_doclens_from_lengths(const uint32_t *lens, uint32_t ndocs, uint64_t *len);

/* NULL when the blob's magic, sizes, directory and CRC hold, else what is wrong */
extern const char *gpx_doclens_check(const uint8_t *blob, uint64_t len);

/* doc's length, from a checked blob */
static inline uint32_t
gpx_doclens_get(const uint8_t *blob, uint32_t doc)
{
	const gpuidx_doclens_header *h = (const gpuidx_doclens_header *) blob;
	uint32_t	off;
	const uint8_t *chunk;
	uint32_t	width;
	uint64_t	bit;
	uint64_t	acc = 0;

	memcpy(&off, blob + sizeof(*h) + (size_t) (doc / GPUIDX_DOCLENS_CHUNK) * 4, 4);
	chunk = blob + gpx_doclens_data_start(h->nchunks) + off;
	width = chunk[0];
	if (width == 0)
		return 0;
	bit = (uint64_t) (doc % GPUIDX_DOCLENS_CHUNK) * width;
	for (uint32_t i = 0; i < 5; i++)
		acc |= (uint64_t) chunk[1 + bit / 8 + i] << (8 * i);
	acc >>= bit % 8;
	return (uint32_t) (acc & (width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1)));
}

/*
 * A frequency record taken alone (no list beside it): structure and CRC,
 * doc ids below UINT32_MAX.  NULL or what is wrong.
 */
extern const char *gpx_freq_record_check(const uint8_t *rec, uint64_t len);

/* its postings' count */
extern uint32_t gpx_freq_record_df(const uint8_t *rec);

/* the tf of posting i of a checked record */
extern uint32_t gpx_freq_record_tf(const uint8_t *rec, uint32_t i);

/*
 * A record for postings docs[n] with tfs[n] (malloc'd; *len set), block
 * maxima with a min_dlcode of 0, for tests and tools.
 */
extern uint8_t *gpx_freq_record_build(const uint32_t *docs, const uint8_t *tfs, uint32_t n, uint64_t *len);

#endif							/* GPUIDX_STORE_RANKDATA_H */
