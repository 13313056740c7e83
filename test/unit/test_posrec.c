/*
 * test_posrec.c
 *	  The positions record (src/store/posrec.c): blocks of every shape the
 *	  index meets (positions alike from posting to posting, scattered,
 *	  repeated, 256 of them, none, weighted) decode to what was coded, a
 *	  record's directory finds each block, and damaged bytes are refused or
 *	  decode within their bounds (the ASan run checks the reads).
 */
#include "store/posrec.h"
#include "unit.h"

/* the doc length codes a block's decoder is given: the encoder's */
static void
block_dlc(void *arg, uint8_t *dlc)
{
	const GpxPosBlock *b = arg;

	memcpy(dlc, b->dlc, b->n);
}

/* a random block of n postings, in one of the shapes real lexemes take */
static void
random_block(GpxPosBlock *b, uint32_t n, int shape)
{
	uint32_t	total = 0;
	uint32_t	prev_first = 1 + unit_rand_below(50);

	b->n = n;
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	npos;
		uint32_t	pos;

		b->start[i] = total;
		/* a doc length code: its length about where its positions end */
		b->dlc[i] = (uint8_t) (unit_rand_below(4) == 0 ? unit_rand_below(256) : 30 + unit_rand_below(40));
		switch (shape)
		{
			case 0:				/* a path component: one position, nearly always the same */
				npos = 1;
				break;
			case 1:				/* prose: a few positions anywhere */
				npos = 1 + unit_rand_below(unit_rand_below(4) == 0 ? 6 : 2);
				break;
			case 2:				/* the rare lexemes: 256, none, 255 */
				npos = unit_rand_below(3) == 0 ? 256 : unit_rand_below(2) == 0 ? 0 : 255;
				break;
			default:			/* anything */
				npos = unit_rand_below(unit_rand_below(8) == 0 ? 257 : 9);
		}
		/* a repeat of the posting before, sometimes */
		if (i > 0 && unit_rand_below(3) == 0 && b->npos[i - 1] > 0 && shape != 2)
		{
			npos = b->npos[i - 1];
			memcpy(b->wep + total, b->wep + b->start[i - 1], npos * sizeof(uint16_t));
			b->npos[i] = (uint16_t) npos;
			total += npos;
			continue;
		}
		b->npos[i] = (uint16_t) npos;
		pos = shape == 0 ? (unit_rand_below(10) == 0 ? 1 + unit_rand_below(30) : prev_first)
			: unit_rand_below(shape == 3 && unit_rand_below(5) == 0 ? GPX_POSREC_MAX_VALUE - 300 : 200);
		prev_first = pos;
		for (uint32_t k = 0; k < npos; k++)
		{
			uint32_t	w = shape == 3 && unit_rand_below(4) == 0 ? unit_rand_below(4) : 0;

			b->wep[total + k] = (uint16_t) (w << 14 | pos);
			pos += 1 + unit_rand_below(unit_rand_below(4) == 0 ? 40 : 3);
			if (pos > GPX_POSREC_MAX_VALUE)
				pos = GPX_POSREC_MAX_VALUE;
		}
		/* strictly increasing, within the largest: cut where it would not be */
		for (uint32_t k = 1; k < npos; k++)
			if ((b->wep[total + k] & GPX_POSREC_MAX_VALUE) <= (b->wep[total + k - 1] & GPX_POSREC_MAX_VALUE))
			{
				npos = k;
				b->npos[i] = (uint16_t) k;
			}
		total += npos;
	}
	b->start[n] = total;
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

static void
check_round_trips(void *scratch)
{
	GpxPosBlock *in = unit_alloc(sizeof(GpxPosBlock));
	GpxPosBlock *out = unit_alloc(sizeof(GpxPosBlock));
	uint8_t    *bytes = unit_alloc(GPX_POSREC_BLOCK_MAX);
	uint8_t		tf[GPX_POSREC_BLOCK];
	uint64_t	bits[4] = {0};
	uint64_t	positions[4] = {0};

	for (int round = 0; round < 4000; round++)
	{
		int			shape = round % 4;
		uint32_t	n = 1 + unit_rand_below(unit_rand_below(3) == 0 ? 4 : GPX_POSREC_BLOCK);
		uint32_t	flags;
		size_t		len;
		const char *err;

		random_block(in, n, shape);
		flags = gpx_posrec_block_flags(in);
		/* a record's flags cover its blocks': sometimes more than this one needs */
		if (unit_rand_below(5) == 0)
			flags |= unit_rand_below(8);
		len = gpx_posrec_encode_block(in, flags, bytes, scratch);
		CHECK(len <= GPX_POSREC_BLOCK_MAX, "block of %zu bytes", len);
		for (uint32_t i = 0; i < n; i++)
			tf[i] = (uint8_t) gpx_posrec_tf(in->npos[i]);
		err = gpx_posrec_decode_block(bytes, len, flags, n, tf, block_dlc, in, out, scratch);
		CHECK(err == NULL && same_block(in, out), "round %d (shape %d, %u postings, flags %u): %s", round, shape,
			  n, flags, err ? err : "different positions");
		bits[shape] += len * 8;
		positions[shape] += in->start[n];
	}
	/* positions that repeat from posting to posting cost little */
	CHECK(bits[0] < positions[0] * 2, "path-like positions: %.2f bits each",
		  (double) bits[0] / (double) positions[0]);
	printf("test_posrec: bits a position by shape: %.2f %.2f %.2f %.2f\n",
		   (double) bits[0] / (double) positions[0], (double) bits[1] / (double) positions[1],
		   (double) bits[2] / (double) positions[2], (double) bits[3] / (double) positions[3]);
	free(in);
	free(out);
	free(bytes);
}

/* a block whose every posting repeats the first, and one without any position */
static void
check_edges(void *scratch)
{
	GpxPosBlock *in = unit_alloc(sizeof(GpxPosBlock));
	GpxPosBlock *out = unit_alloc(sizeof(GpxPosBlock));
	uint8_t    *bytes = unit_alloc(GPX_POSREC_BLOCK_MAX);
	uint8_t		tf[GPX_POSREC_BLOCK];
	size_t		len;

	in->n = GPX_POSREC_BLOCK;
	memset(in->dlc, 40, sizeof(in->dlc));
	for (uint32_t i = 0; i <= GPX_POSREC_BLOCK; i++)
		in->start[i] = i * 2;
	for (uint32_t i = 0; i < GPX_POSREC_BLOCK; i++)
	{
		in->npos[i] = 2;
		in->wep[2 * i] = 3;
		in->wep[2 * i + 1] = 7;
		tf[i] = 2;
	}
	len = gpx_posrec_encode_block(in, 0, bytes, scratch);
	CHECK(len <= 8, "128 repeats in %zu bytes", len);
	CHECK(gpx_posrec_decode_block(bytes, len, 0, GPX_POSREC_BLOCK, tf, block_dlc, in, out, scratch) == NULL &&
		  same_block(in, out), "repeats read back");

	/* positions 0 and the largest */
	in->n = 2;
	in->npos[0] = 1;
	in->npos[1] = 2;
	in->start[0] = 0;
	in->start[1] = 1;
	in->start[2] = 3;
	in->wep[0] = 0;
	in->wep[1] = 0;
	in->wep[2] = GPX_POSREC_MAX_VALUE;
	tf[0] = 1;
	tf[1] = 2;
	len = gpx_posrec_encode_block(in, 0, bytes, scratch);
	CHECK(gpx_posrec_decode_block(bytes, len, 0, 2, tf, block_dlc, in, out, scratch) == NULL && same_block(in, out),
		  "0 and 16383 read back");

	/* refused: no postings, a tf of 0, flags unknown, bytes cut short */
	CHECK(gpx_posrec_decode_block(bytes, len, 0, 0, tf, block_dlc, in, out, scratch) != NULL, "no postings");
	tf[0] = 0;
	CHECK(gpx_posrec_decode_block(bytes, len, 0, 2, tf, block_dlc, in, out, scratch) != NULL, "tf 0");
	tf[0] = 1;
	CHECK(gpx_posrec_decode_block(bytes, len, 0x80, 2, tf, block_dlc, in, out, scratch) != NULL, "unknown flags");
	CHECK(gpx_posrec_decode_block(bytes, 0, 0, 2, tf, block_dlc, in, out, scratch) != NULL, "no bytes");
	free(in);
	free(out);
	free(bytes);
}

/* a record's head and directory: each block's bytes found again */
static void
check_directory(void)
{
	uint8_t		head[4096];
	uint32_t	sizes[300];

	for (int round = 0; round < 200; round++)
	{
		uint32_t	nblocks = 1 + unit_rand_below(300);
		uint32_t	df = (nblocks - 1) * GPX_POSREC_BLOCK + 1 + unit_rand_below(GPX_POSREC_BLOCK);
		uint32_t	flags = unit_rand_below(2) ? 0 : 1 + unit_rand_below(7);
		uint64_t	total = 0;
		size_t		hlen;
		size_t		len;
		size_t		at;
		GpxPosRecHead h;
		const char *err;

		for (uint32_t b = 0; b < nblocks; b++)
		{
			sizes[b] = 1 + unit_rand_below(unit_rand_below(10) == 0 ? 70000 : 40);
			total += sizes[b];
		}
		hlen = gpx_posrec_put_head(head, flags, nblocks, sizes);
		CHECK(hlen == gpx_posrec_head_size(nblocks, total, flags), "head size %zu", hlen);
		len = hlen + total;
		err = gpx_posrec_head(head, hlen, len, df, flags != 0, &h);
		CHECK(err == NULL && h.nblocks == nblocks && h.flags == flags && h.blocks == hlen, "head: %s",
			  err ? err : "different");
		at = hlen;
		for (uint32_t b = 0; b < nblocks && err == NULL; b++)
		{
			size_t		from;
			size_t		to;
			const char *e = gpx_posrec_block_range(&h, head + h.dir, len, b, &from, &to);

			CHECK(e == NULL && from == at && to == at + sizes[b], "block %u of %u: %s", b, nblocks,
				  e ? e : "elsewhere");
			at += sizes[b];
		}
		/* a record that ends before its directory does */
		CHECK(gpx_posrec_head(head, hlen, hlen, df, flags != 0, &h) != NULL, "record cut before its blocks");
	}
}

/* damaged bytes: refused, or read within their bounds (ASan watches) */
static void
check_damage(void *scratch)
{
	GpxPosBlock *in = unit_alloc(sizeof(GpxPosBlock));
	GpxPosBlock *out = unit_alloc(sizeof(GpxPosBlock));
	uint8_t    *bytes = unit_alloc(GPX_POSREC_BLOCK_MAX);
	uint8_t		tf[GPX_POSREC_BLOCK];
	long		refused = 0;
	long		tried = 0;

	for (int round = 0; round < 3000; round++)
	{
		uint32_t	n = 1 + unit_rand_below(GPX_POSREC_BLOCK);
		uint32_t	flags;
		size_t		len;
		uint8_t    *copy;

		random_block(in, n, round % 4);
		flags = gpx_posrec_block_flags(in);
		len = gpx_posrec_encode_block(in, flags, bytes, scratch);
		for (uint32_t i = 0; i < n; i++)
			tf[i] = (uint8_t) gpx_posrec_tf(in->npos[i]);
		/* an exact copy, so that ASan sees a read past its end */
		for (int k = 0; k < 4; k++)
		{
			size_t		cut = unit_rand_below(3) == 0 ? unit_rand_below(len + 1) : len;

			copy = unit_alloc(cut + 1);
			memcpy(copy, bytes, cut);
			if (cut > 0)
				copy[unit_rand_below(cut)] ^= (uint8_t) (1 + unit_rand_below(255));
			refused += gpx_posrec_decode_block(copy, cut, flags, n, tf, block_dlc, in, out, scratch) != NULL;
			tried++;
			/* whatever it decoded is within the block's room and the largest position */
			for (uint32_t i = 0; i < out->n && out->n <= GPX_POSREC_BLOCK; i++)
				CHECK(out->npos[i] <= GPX_POSREC_MAX_COUNT, "posting of %u positions", out->npos[i]);
			free(copy);
		}
	}
	CHECK(refused > tried / 10, "%ld of %ld damaged blocks refused", refused, tried);
	free(in);
	free(out);
	free(bytes);
}

int
main(void)
{
	void	   *scratch = unit_alloc(gpx_posrec_scratch_size());

	check_round_trips(scratch);
	check_edges(scratch);
	check_directory();
	check_damage(scratch);
	free(scratch);
	return unit_report("test_posrec");
}
