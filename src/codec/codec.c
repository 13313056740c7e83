/*
 * codec.c
 *	  The codec-independent side of posting lists: header and checksum,
 *	  opening and validating, choosing a codec, block access and membership.
 */
#include "codec.h"
#include "bits.h"

#include <string.h>

const char *
pl_status_message(pl_status status)
{
	switch (status)
	{
		case PL_OK:
			return "ok";
		case PL_ERR_TRUNCATED:
			return "Truncated posting list";
		case PL_ERR_VERSION:
			return "Unsupported posting list format version";
		case PL_ERR_CODEC:
			return "Unknown posting list codec";
		case PL_ERR_FLAGS:
			return "Reserved posting list header bits are set";
		case PL_ERR_TOO_MANY:
			return "Posting list has more postings than allowed";
		case PL_ERR_LENGTH:
			return "Posting list length does not match its structure";
		case PL_ERR_CHECKSUM:
			return "Posting list checksum mismatch";
		case PL_ERR_STRUCTURE:
			return "Posting list skip entries or offsets are inconsistent";
		case PL_ERR_ORDER:
			return "Posting list values are not strictly increasing";
		case PL_ERR_ALIGNMENT:
			return "Posting list is not 4-byte aligned";
	}
	return "Unknown posting list error";
}

uint32_t
pl_list_checksum(const void *list, size_t len)
{
	const uint8_t *bytes = (const uint8_t *) list;
	gpuidx_list_header hdr;
	uint32_t	crc;

	memcpy(&hdr, bytes, GPUIDX_HEADER_SIZE);
	hdr.checksum = 0;
	crc = pl_crc32c(0, &hdr, GPUIDX_HEADER_SIZE);
	return pl_crc32c(crc, bytes + GPUIDX_HEADER_SIZE, len - GPUIDX_HEADER_SIZE);
}

pl_status
pl_open(pl_view *view, const void *bytes, size_t len, int flags)
{
	const uint8_t *p = (const uint8_t *) bytes;
	gpuidx_list_header hdr;
	const uint8_t *payload = p + GPUIDX_HEADER_SIZE;
	size_t		payload_len;

	memset(view, 0, sizeof(*view));
	if (((uintptr_t) p & 3) != 0)
		return PL_ERR_ALIGNMENT;
	if (len < GPUIDX_HEADER_SIZE)
		return PL_ERR_TRUNCATED;
	memcpy(&hdr, p, GPUIDX_HEADER_SIZE);
	/* the checksum first: damaged bytes say so, whatever field they hit */
	if ((flags & PL_OPEN_VERIFY_CHECKSUM) && pl_list_checksum(p, len) != hdr.checksum)
		return PL_ERR_CHECKSUM;
	if (hdr.version != GPUIDX_FORMAT_VERSION)
		return PL_ERR_VERSION;
	if (hdr.codec >= GPUIDX_NUM_CODECS)
		return PL_ERR_CODEC;
	if (hdr.flags != 0)
		return PL_ERR_FLAGS;
	if (hdr.count > GPUIDX_MAX_POSTINGS)
		return PL_ERR_TOO_MANY;
	if (hdr.count == 0 && hdr.last != 0)
		return PL_ERR_STRUCTURE;

	view->codec = hdr.codec;
	view->count = hdr.count;
	view->last = hdr.last;
	view->total_bytes = len;
	payload_len = len - GPUIDX_HEADER_SIZE;
	switch (hdr.codec)
	{
		case GPUIDX_CODEC_RAW:
			return raw_check(view, payload, payload_len);
		case GPUIDX_CODEC_EF:
			return ef_check(view, payload, payload_len);
		default:
			return lrc_check(view, payload, payload_len);
	}
}

void
pl_view_from_array(pl_view *view, const uint32_t *values, uint32_t n)
{
	memset(view, 0, sizeof(*view));
	view->codec = GPUIDX_CODEC_RAW;
	view->count = n;
	view->last = n > 0 ? values[n - 1] : 0;
	view->nblocks = gpuidx_ef_block_count(n);
	view->total_bytes = (size_t) n * sizeof(uint32_t);
	view->values = values;
}

uint32_t
pl_block_capacity(const pl_view *view)
{
	return view->codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;
}

uint32_t
pl_block_len(const pl_view *view, uint32_t block)
{
	if (view->codec == GPUIDX_CODEC_LRC)
		return gpuidx_lrc_segment_len(view->count, block);
	return gpuidx_ef_block_len(view->count, block);
}

uint32_t
pl_block_first(const pl_view *view, uint32_t block)
{
	switch (view->codec)
	{
		case GPUIDX_CODEC_RAW:
			return view->values[(size_t) block * GPUIDX_EF_BLOCK];
		case GPUIDX_CODEC_EF:
			return view->block_first[block];
		default:
			return view->segs[block].first;
	}
}

uint32_t
pl_block_limit(const pl_view *view, uint32_t block)
{
	return block + 1 < view->nblocks ? pl_block_first(view, block + 1) - 1 : view->last;
}

int
pl_decode_block(const pl_view *view, uint32_t block, uint32_t *out)
{
	uint32_t	n;

	switch (view->codec)
	{
		case GPUIDX_CODEC_RAW:
			n = gpuidx_ef_block_len(view->count, block);
			memcpy(out, view->values + (size_t) block * GPUIDX_EF_BLOCK, n * sizeof(uint32_t));
			return (int) n;
		case GPUIDX_CODEC_EF:
			return ef_decode_block(view, block, out);
		default:
			return lrc_decode_block(view, block, out);
	}
}

pl_status
pl_decode(const pl_view *view, uint32_t *out)
{
	uint32_t	cap = pl_block_capacity(view);

	if (view->codec == GPUIDX_CODEC_RAW)
	{
		memcpy(out, view->values, (size_t) view->count * sizeof(uint32_t));
		return PL_OK;
	}
	for (uint32_t b = 0; b < view->nblocks; b++)
		if (pl_decode_block(view, b, out + (size_t) b * cap) < 0)
			return PL_ERR_ORDER;
	return PL_OK;
}

uint32_t
pl_decode_range(const pl_view *view, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
	uint32_t	n = 0;
	int64_t		b;

	if (view->count == 0 || lo >= hi)
		return 0;
	b = pl_find_block(view, 0, lo);
	for (b = b < 0 ? 0 : b; (uint32_t) b < view->nblocks && pl_block_first(view, (uint32_t) b) < hi; b++)
	{
		int			len = pl_decode_block(view, (uint32_t) b, buf);

		if (len < 0)
			return PL_SEARCH_CORRUPT;
		for (int i = 0; i < len; i++)
			if (buf[i] >= lo && buf[i] < hi)
				out[n++] = buf[i];
	}
	return n;
}

/*
 * Skip entries strictly increase (checked on opening) and each block's
 * decoding checks its postings between its skip entry and the next one, so
 * decoding every block proves the whole list sorted.
 */
pl_status
pl_validate(const pl_view *view)
{
	uint32_t	buf[GPUIDX_LRC_SEGMENT];

	if (view->codec == GPUIDX_CODEC_LRC)
	{
		pl_status	st = lrc_validate(view);

		if (st != PL_OK)
			return st;
	}
	for (uint32_t b = 0; b < view->nblocks; b++)
		if (pl_decode_block(view, b, buf) < 0)
			return PL_ERR_ORDER;
	return PL_OK;
}

size_t
pl_encoded_size(int codec, const uint32_t *values, uint32_t n)
{
	switch (codec)
	{
		case GPUIDX_CODEC_RAW:
			return GPUIDX_HEADER_SIZE + raw_encoded_size(n);
		case GPUIDX_CODEC_EF:
			return GPUIDX_HEADER_SIZE + ef_encoded_size(values, n);
		default:
			return GPUIDX_HEADER_SIZE + lrc_encoded_size(values, n);
	}
}

int
pl_choose_codec(const uint32_t *values, uint32_t n)
{
	size_t		raw = pl_encoded_size(GPUIDX_CODEC_RAW, values, n);
	size_t		ef = pl_encoded_size(GPUIDX_CODEC_EF, values, n);
	size_t		best_size = raw <= ef ? raw : ef;
	int			best = raw <= ef ? GPUIDX_CODEC_RAW : GPUIDX_CODEC_EF;

	/*
	 * LRC costs at least its segment table and guard word; fit its lines only
	 * when it could still win (ties go to raw and EF, which decode faster).
	 */
	if (GPUIDX_HEADER_SIZE + (size_t) gpuidx_lrc_segment_count(n) * GPUIDX_LRC_SEGMENT_SIZE + 8 < best_size &&
		pl_encoded_size(GPUIDX_CODEC_LRC, values, n) < best_size)
		best = GPUIDX_CODEC_LRC;
	return best;
}

size_t
pl_encode(int codec, const uint32_t *values, uint32_t n, void *out)
{
	uint8_t    *p = (uint8_t *) out;
	gpuidx_list_header hdr;
	size_t		len;

	memset(&hdr, 0, sizeof(hdr));
	hdr.version = GPUIDX_FORMAT_VERSION;
	hdr.codec = (uint8_t) codec;
	hdr.count = n;
	hdr.last = n > 0 ? values[n - 1] : 0;
	memcpy(p, &hdr, GPUIDX_HEADER_SIZE);
	switch (codec)
	{
		case GPUIDX_CODEC_RAW:
			len = GPUIDX_HEADER_SIZE + raw_encode(values, n, p + GPUIDX_HEADER_SIZE);
			break;
		case GPUIDX_CODEC_EF:
			len = GPUIDX_HEADER_SIZE + ef_encode(values, n, p + GPUIDX_HEADER_SIZE);
			break;
		default:
			len = GPUIDX_HEADER_SIZE + lrc_encode(values, n, p + GPUIDX_HEADER_SIZE);
			break;
	}
	hdr.checksum = pl_list_checksum(p, len);
	memcpy(p, &hdr, GPUIDX_HEADER_SIZE);
	return len;
}

uint32_t
pl_get(const pl_view *view, uint32_t i)
{
	switch (view->codec)
	{
		case GPUIDX_CODEC_RAW:
			return view->values[i];
		case GPUIDX_CODEC_LRC:
			return lrc_get(view, i);
		default:
			return ef_get(view, i);
	}
}

int64_t
pl_find_block(const pl_view *view, uint32_t lo, uint32_t x)
{
	uint32_t	hi;
	uint32_t	step = 1;

	if (lo >= view->nblocks || pl_block_first(view, lo) > x)
		return -1;
	/* gallop: find hi with first(hi) > x, or the end */
	hi = lo + 1;
	while (hi < view->nblocks && pl_block_first(view, hi) <= x)
	{
		lo = hi;
		step *= 2;
		hi = (view->nblocks - hi > step) ? hi + step : view->nblocks;
	}
	/* first(lo) <= x < first(hi) (or hi is the end): bisect */
	while (hi - lo > 1)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (pl_block_first(view, mid) <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* first k in [from, n) with a[k] >= x, galloping from 'from' */
uint32_t
pl_gallop(const uint32_t *a, uint32_t from, uint32_t n, uint32_t x)
{
	uint32_t	lo = from;
	uint32_t	hi;
	uint32_t	step = 1;

	if (lo >= n || a[lo] >= x)
		return lo;
	/* invariant: a[lo] < x */
	hi = lo + 1;
	while (hi < n && a[hi] < x)
	{
		lo = hi;
		step *= 2;
		hi = (n - hi > step) ? hi + step : n;
	}
	while (hi - lo > 1)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (a[mid] < x)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

pl_status
pl_contains(const pl_view *view, uint32_t x, bool *found)
{
	int64_t		b;
	uint32_t	n;
	uint32_t	k;
	uint32_t	v = 0;

	*found = false;
	if (view->count == 0 || x > view->last)
		return PL_OK;
	b = pl_find_block(view, 0, x);
	if (b < 0)
		return PL_OK;
	if (pl_block_first(view, (uint32_t) b) == x)
	{
		*found = true;
		return PL_OK;
	}
	n = pl_block_len(view, (uint32_t) b);
	switch (view->codec)
	{
		case GPUIDX_CODEC_RAW:
			k = pl_gallop(view->values + (size_t) b * GPUIDX_EF_BLOCK, 0, n, x);
			if (k < n)
				v = view->values[(size_t) b * GPUIDX_EF_BLOCK + k];
			break;
		case GPUIDX_CODEC_LRC:
			k = lrc_lower_bound(view, (uint32_t) b, 0, x, &v);
			break;
		default:
			k = ef_block_lower_bound(view, (uint32_t) b, 0, x, &v);
			break;
	}
	if (k == PL_SEARCH_CORRUPT)
		return PL_ERR_ORDER;
	*found = k < n && v == x;
	return PL_OK;
}
