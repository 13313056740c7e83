/*
 * raw.c
 *	  The uncompressed codec: the postings as uint32 values.  Smallest for
 *	  lists of a few postings, where any skip structure costs more than it saves.
 */
#include "codec.h"
#include "bits.h"

#include <string.h>

size_t
raw_encoded_size(uint32_t n)
{
	return (size_t) n * sizeof(uint32_t);
}

size_t
raw_encode(const uint32_t *values, uint32_t n, uint8_t *payload)
{
	memcpy(payload, values, raw_encoded_size(n));
	return raw_encoded_size(n);
}

/*
 * Raw values are searched in place, never decoded, so their order is
 * checked here once: a pass as cheap as the checksum that precedes it.
 */
pl_status
raw_check(pl_view *view, const uint8_t *payload, size_t len)
{
	const uint32_t *v = (const uint32_t *) payload;

	if (len != raw_encoded_size(view->count))
		return PL_ERR_LENGTH;
	view->values = v;
	view->nblocks = gpuidx_ef_block_count(view->count);
	if (view->count > 0 && v[view->count - 1] != view->last)
		return PL_ERR_STRUCTURE;
	return bits_ascending_u32(v, view->count) ? PL_OK : PL_ERR_ORDER;
}
