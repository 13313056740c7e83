/*
 * rankdata.c
 *	  Document-length blobs and frequency records as engines take them
 *	  (rankdata.h).
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "rank/bm25.h"
#include "store/rankdata.h"
#include "store/parse.h"

static uint32_t
doclens_crc(const uint8_t *blob, uint64_t len)
{
	uint32_t	zero = 0;
	uint32_t	crc;

	crc = pl_crc32c(0, blob, offsetof(gpuidx_doclens_header, crc));
	crc = pl_crc32c(crc, &zero, sizeof(zero));
	return pl_crc32c(crc, blob + offsetof(gpuidx_doclens_header, crc) + 4,
					 len - offsetof(gpuidx_doclens_header, crc) - 4);
}

void
gpx_doclens_seal(uint8_t *blob, uint64_t len, uint32_t ndocs)
{
	gpuidx_doclens_header h;

	memset(&h, 0, sizeof(h));
	h.magic = GPUIDX_DOCLENS_MAGIC;
	h.ndocs = ndocs;
	h.nchunks = (ndocs + GPUIDX_DOCLENS_CHUNK - 1) / GPUIDX_DOCLENS_CHUNK;
	h.nbytes = len;
	memcpy(blob, &h, sizeof(h));
	memset(blob + len - 8, 0, 8);
	h.crc = doclens_crc(blob, len);
	memcpy(blob, &h, sizeof(h));
}

uint64_t
gpx_doclens_put_chunk(uint8_t *blob, uint32_t nchunks, uint32_t c, uint64_t data_used,
					  const uint32_t *lens, uint32_t n)
{
	uint8_t    *at = blob + gpx_doclens_data_start(nchunks) + data_used;
	uint32_t	maxv = 0;
	uint32_t	width;
	uint32_t	off = (uint32_t) data_used;

	for (uint32_t i = 0; i < n; i++)
		maxv = lens[i] > maxv ? lens[i] : maxv;
	width = maxv == 0 ? 0 : 32 - (uint32_t) __builtin_clz(maxv);
	memcpy(blob + sizeof(gpuidx_doclens_header) + (size_t) c * 4, &off, 4);
	at[0] = (uint8_t) width;
	return 1 + gpx_pack_bits(at + 1, lens, n, width);
}

uint8_t *
gpx_doclens_from_lengths(const uint32_t *lens, uint32_t ndocs, uint64_t *len)
{
	uint32_t	nchunks = (ndocs + GPUIDX_DOCLENS_CHUNK - 1) / GPUIDX_DOCLENS_CHUNK;
	uint64_t	data = 0;
	uint8_t    *blob;

	blob = malloc(gpx_doclens_size(nchunks, (uint64_t) nchunks * GPX_DOCLENS_CHUNK_MAX));
	if (blob == NULL)
		return NULL;
	for (uint32_t c = 0; c < nchunks; c++)
	{
		uint32_t	first = c * GPUIDX_DOCLENS_CHUNK;
		uint32_t	n = ndocs - first < GPUIDX_DOCLENS_CHUNK ? ndocs - first : GPUIDX_DOCLENS_CHUNK;

		data += gpx_doclens_put_chunk(blob, nchunks, c, data, lens + first, n);
	}
	*len = gpx_doclens_size(nchunks, data);
	gpx_doclens_seal(blob, *len, ndocs);
	return blob;
}

const char *
gpx_doclens_check(const uint8_t *blob, uint64_t len)
{
	gpuidx_doclens_header h;
	uint64_t	start;
	uint64_t	data_bytes;
	uint32_t	prev_end = 0;

	if (len < sizeof(h) + 8)
		return "document lengths are too short";
	memcpy(&h, blob, sizeof(h));
	if (h.magic != GPUIDX_DOCLENS_MAGIC)
		return "document lengths have a wrong magic number";
	if (h.nbytes != len || h.nchunks != (h.ndocs + GPUIDX_DOCLENS_CHUNK - 1) / GPUIDX_DOCLENS_CHUNK)
		return "document lengths header is inconsistent";
	start = gpx_doclens_data_start(h.nchunks);
	if (start + 8 > len)
		return "document lengths header is inconsistent";
	if (doclens_crc(blob, len) != h.crc)
		return "document lengths checksum mismatch";
	data_bytes = len - 8 - start;
	for (uint32_t c = 0; c < h.nchunks; c++)
	{
		uint32_t	off;
		uint32_t	n = c + 1 < h.nchunks ? GPUIDX_DOCLENS_CHUNK : h.ndocs - c * GPUIDX_DOCLENS_CHUNK;
		uint32_t	width;

		memcpy(&off, blob + sizeof(h) + (size_t) c * 4, 4);
		if (off < prev_end || (uint64_t) off + 1 > data_bytes)
			return "document lengths directory is inconsistent";
		width = blob[start + off];
		if (width > 32 || (uint64_t) off + 1 + ((uint64_t) n * width + 7) / 8 > data_bytes)
			return "document lengths chunk is inconsistent";
		prev_end = off + 1 + (uint32_t) (((uint64_t) n * width + 7) / 8);
	}
	return NULL;
}

const char *
gpx_freq_record_check(const uint8_t *rec, uint64_t len)
{
	GpxFreqHeader h;

	if (len < sizeof(h) || len > UINT32_MAX)
		return "frequency record is too short";
	memcpy(&h, rec, sizeof(h));
	return gpx_parse_freq_record(rec, (uint32_t) len, h.df, UINT32_MAX);
}

uint32_t
gpx_freq_record_df(const uint8_t *rec)
{
	GpxFreqHeader h;

	memcpy(&h, rec, sizeof(h));
	return h.df;
}

uint32_t
gpx_freq_record_tf(const uint8_t *rec, uint32_t i)
{
	uint32_t	nb = gpx_freq_nblocks(gpx_freq_record_df(rec));
	GpxFreqBlock fb;
	uint64_t	bit;
	uint32_t	acc = 0;
	const uint8_t *data;

	memcpy(&fb, rec + sizeof(GpxFreqHeader) + (size_t) (i / GPX_RANK_BLOCK) * sizeof(fb), sizeof(fb));
	if (fb.width == 0)
		return 1;
	data = rec + sizeof(GpxFreqHeader) + (size_t) nb * sizeof(fb) + fb.offset;
	bit = (uint64_t) (i % GPX_RANK_BLOCK) * fb.width;
	acc = data[bit / 8];
	if (bit % 8 + fb.width > 8)
		acc |= (uint32_t) data[bit / 8 + 1] << 8;
	return ((acc >> (bit % 8)) & ((1u << fb.width) - 1)) + 1;
}

uint8_t *
gpx_freq_record_build(const uint32_t *docs, const uint8_t *tfs, uint32_t n, uint64_t *len)
{
	uint32_t	nb = gpx_freq_nblocks(n);
	uint64_t	data_start = sizeof(GpxFreqHeader) + (uint64_t) nb * sizeof(GpxFreqBlock);
	uint8_t    *rec = calloc(1, data_start + (uint64_t) n + 8);
	GpxFreqHeader h;
	uint32_t	data = 0;
	uint32_t	zero = 0;

	if (rec == NULL)
		return NULL;
	memset(&h, 0, sizeof(h));
	for (uint32_t b = 0; b < nb; b++)
	{
		GpxFreqBlock fb;
		uint32_t	m = b + 1 < nb ? GPX_RANK_BLOCK : n - GPX_RANK_BLOCK * b;
		uint32_t	vals[GPX_RANK_BLOCK];
		uint32_t	max_tf = 0;

		for (uint32_t i = 0; i < m; i++)
		{
			vals[i] = tfs[b * GPX_RANK_BLOCK + i] - 1u;
			max_tf = tfs[b * GPX_RANK_BLOCK + i] > max_tf ? tfs[b * GPX_RANK_BLOCK + i] : max_tf;
		}
		memset(&fb, 0, sizeof(fb));
		fb.last_doc = docs[b * GPX_RANK_BLOCK + m - 1];
		fb.offset = data;
		fb.width = max_tf <= 1 ? 0 : (uint8_t) (32 - __builtin_clz(max_tf - 1));
		fb.max_tf = (uint8_t) max_tf;
		fb.min_dlcode = 0;
		data += gpx_pack_bits(rec + data_start + data, vals, m, fb.width);
		memcpy(rec + sizeof(h) + (size_t) b * sizeof(fb), &fb, sizeof(fb));
		h.max_tf = max_tf > h.max_tf ? (uint8_t) max_tf : h.max_tf;
	}
	h.df = n;
	h.nbytes = (uint32_t) (data_start + data);
	h.min_dlcode = 0;
	memcpy(rec, &h, sizeof(h));
	h.crc = pl_crc32c(pl_crc32c(0, &zero, 4), rec + 4, h.nbytes - 4);
	memcpy(rec, &h, sizeof(h));
	*len = h.nbytes;
	return rec;
}
