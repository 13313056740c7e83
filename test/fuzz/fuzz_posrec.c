/*
 * fuzz_posrec.c
 *	  libFuzzer target: the decoder of positions records (src/store/posrec.c,
 *	  the code the server runs on a segment's positions) on arbitrary bytes.
 *	  A block decodes within its bytes or is refused; what decodes holds
 *	  valid positions, and coded again decodes to the same; a record's head
 *	  and directory are read within their bytes, each block's range inside
 *	  the record.
 *
 * Input: byte 0 the record's flags (its low 3 bits), byte 1 the block's
 * postings less one (mod 128), then each posting's tf (0 read as 1), each
 * one's doc length code, then the block's bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/store/posrec.h"

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

static void
input_dlc(void *arg, uint8_t *dlc)
{
	const uint8_t *in = arg;

	memcpy(dlc, in + 1, in[0]);
}

static bool
same_block(const GpxPosBlock *a, const GpxPosBlock *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->npos[i] != b->npos[i] ||
			memcmp(a->wep + a->start[i], b->wep + b->start[i], a->npos[i] * sizeof(uint16_t)) != 0)
			return false;
	return true;
}

/* the bytes as a whole record of df postings: its head, then each block's range */
static void
check_record(const uint8_t *data, size_t size)
{
	GpxPosRecHead head;
	uint32_t	df = 1 + (data[1] | (uint32_t) (size > 2 ? data[2] : 0) << 8);

	if (gpx_posrec_head(data, size, size, df, (data[0] & 0x80) != 0, &head) != NULL)
		return;
	if (head.blocks > size || head.dir > head.blocks)
		FAIL("head past the record: directory %u, blocks %u of %zu", head.dir, head.blocks, size);
	for (uint32_t b = 0; b < head.nblocks; b++)
	{
		size_t		from;
		size_t		to;

		if (gpx_posrec_block_range(&head, data + head.dir, size, b, &from, &to) == NULL &&
			(from < head.blocks || from >= to || to > size))
			FAIL("block %u at [%zu, %zu) of a record of %zu", b, from, to, size);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static GpxPosBlock out;
	static GpxPosBlock again;
	static uint8_t coded[GPX_POSREC_BLOCK_MAX];
	static void *scratch;
	uint8_t		tf[GPX_POSREC_BLOCK];
	uint8_t		dl[1 + GPX_POSREC_BLOCK];
	uint32_t	flags;
	uint32_t	n;
	size_t		len;
	uint8_t    *bytes;

	if (scratch == NULL)
		scratch = malloc(gpx_posrec_scratch_size());
	if (size < 2)
		return 0;
	check_record(data, size);
	flags = data[0] & GPX_POSREC_FLAGS;
	n = data[1] % GPX_POSREC_BLOCK + 1;
	if (size < 2 + 2 * (size_t) n)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		tf[i] = data[2 + i] ? data[2 + i] : 1;
	dl[0] = (uint8_t) n;
	memcpy(dl + 1, data + 2 + n, n);
	/* the block's bytes alone, so that a read past them is caught */
	len = size - 2 - 2 * (size_t) n;
	bytes = malloc(len ? len : 1);
	memcpy(bytes, data + 2 + 2 * n, len);
	if (gpx_posrec_decode_block(bytes, len, flags, n, tf, input_dlc, dl, &out, scratch) == NULL)
	{
		size_t		clen;

		for (uint32_t i = 0; i < n; i++)
		{
			if (out.npos[i] > GPX_POSREC_MAX_COUNT || gpx_posrec_tf(out.npos[i]) != tf[i])
				FAIL("posting %u: %u positions for a tf of %u", i, out.npos[i], tf[i]);
			for (uint32_t k = out.start[i]; k < out.start[i + 1]; k++)
				if (k > out.start[i] && (out.wep[k] & GPX_POSREC_MAX_VALUE) <= (out.wep[k - 1] & GPX_POSREC_MAX_VALUE))
					FAIL("posting %u: positions out of order", i);
		}
		/* coded again: the same positions */
		memcpy(out.dlc, dl + 1, n);
		clen = gpx_posrec_encode_block(&out, flags, coded, scratch);
		if (gpx_posrec_decode_block(coded, clen, flags, n, tf, input_dlc, dl, &again, scratch) != NULL ||
			!same_block(&out, &again))
			FAIL("a decoded block coded again decodes differently");
	}
	free(bytes);
	return 0;
}
