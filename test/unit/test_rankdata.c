/*
 * test_rankdata.c
 *	  The ranking data engines take (src/store/rankdata.c): document-length
 *	  blobs and frequency records read back exactly what they were built
 *	  from, at every width and size, and every damaged byte is refused.
 */
#include "rank/bm25.h"
#include "store/rankdata.h"
#include "store/parse.h"
#include "unit.h"

/* lengths whose chunks take random widths, each chunk's maximum of exactly that width */
static void
gen_lengths(uint32_t *lens, uint32_t ndocs)
{
	for (uint32_t first = 0; first < ndocs; first += GPUIDX_DOCLENS_CHUNK)
	{
		uint32_t	n = ndocs - first < GPUIDX_DOCLENS_CHUNK ? ndocs - first : GPUIDX_DOCLENS_CHUNK;
		uint32_t	width = unit_rand_below(33);
		uint64_t	limit = (uint64_t) 1 << width;

		for (uint32_t i = 0; i < n; i++)
			lens[first + i] = (uint32_t) (unit_rand64() % limit);
		/* the chunk's width is that of its largest length */
		lens[first + unit_rand_below(n)] = (uint32_t) (limit - 1);
	}
}

static void
check_doclens_round_trip(void)
{
	static const uint32_t sizes[] = {0, 1, 2, 127, 128, 129, 255, 300, 1000, 4097, 20000};

	for (uint32_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int rep = 0; rep < 20; rep++)
		{
			uint32_t	ndocs = sizes[s];
			uint32_t   *lens = unit_alloc(((size_t) ndocs + 1) * sizeof(uint32_t));
			uint64_t	len;
			uint8_t    *blob;
			const char *problem;
			gpuidx_doclens_header h;
			uint32_t	wrong = 0;

			gen_lengths(lens, ndocs);
			blob = gpx_doclens_from_lengths(lens, ndocs, &len);
			CHECK(blob != NULL, "blob built");
			if (blob == NULL)
				continue;
			problem = gpx_doclens_check(blob, len);
			CHECK(problem == NULL, "%u docs: %s", ndocs, problem);
			memcpy(&h, blob, sizeof(h));
			CHECK(h.ndocs == ndocs && h.nbytes == len &&
				  h.nchunks == (ndocs + GPUIDX_DOCLENS_CHUNK - 1) / GPUIDX_DOCLENS_CHUNK,
				  "%u docs: header", ndocs);
			for (uint32_t d = 0; d < ndocs; d++)
				wrong += gpx_doclens_get(blob, d) != lens[d];
			CHECK(wrong == 0, "%u docs: %u lengths read back wrong", ndocs, wrong);
			CHECK(gpx_doclens_check(blob, len - 1) != NULL, "%u docs: a byte short", ndocs);
			free(blob);
			free(lens);
		}
	{
		/* every width alone, all of a chunk at its maximum */
		uint32_t	lens[3 * GPUIDX_DOCLENS_CHUNK + 5];

		for (uint32_t width = 0; width <= 32; width++)
		{
			uint64_t	len;
			uint8_t    *blob;
			uint32_t	wrong = 0;
			uint32_t	n = sizeof(lens) / sizeof(lens[0]);

			for (uint32_t i = 0; i < n; i++)
				lens[i] = (uint32_t) (((uint64_t) 1 << width) - 1 - (i % 3 == 0 && width > 0));
			blob = gpx_doclens_from_lengths(lens, n, &len);
			CHECK(blob != NULL && gpx_doclens_check(blob, len) == NULL, "width %u", width);
			if (blob == NULL)
				continue;
			CHECK(blob[gpx_doclens_data_start(4)] == width, "width %u: chunk width byte %u",
				  width, blob[gpx_doclens_data_start(4)]);
			for (uint32_t d = 0; d < n; d++)
				wrong += gpx_doclens_get(blob, d) != lens[d];
			CHECK(wrong == 0, "width %u: %u lengths read back wrong", width, wrong);
			free(blob);
		}
	}
}

static uint8_t
random_tf(void)
{
	/* mostly 1 (blocks of width 0), sometimes small, rarely the largest */
	switch (unit_rand_below(8))
	{
		case 0:
			return (uint8_t) (1 + unit_rand_below(GPX_MAX_TF));
		case 1:
		case 2:
			return (uint8_t) (1 + unit_rand_below(4));
		default:
			return 1;
	}
}

static void
check_freq_round_trip(void)
{
	static const uint32_t sizes[] = {0, 1, 2, 127, 128, 129, 256, 300, 1000, 5000};

	for (uint32_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int rep = 0; rep < 20; rep++)
		{
			uint32_t	n = sizes[s];
			uint32_t   *docs = unit_alloc(((size_t) n + 1) * sizeof(uint32_t));
			uint8_t    *tfs = unit_alloc((size_t) n + 1);
			uint64_t	len;
			uint8_t    *rec;
			const char *problem;
			uint32_t	wrong = 0;
			int			all_ones = rep % 4 == 0;
			int			width0_blocks = 0;

			n = unit_gen_gaps(docs, n, unit_rand_below(100), 1 + unit_rand_below(50));
			for (uint32_t i = 0; i < n; i++)
				tfs[i] = all_ones ? 1 : random_tf();
			if (rep % 4 == 1 && n > 0)
				tfs[unit_rand_below(n)] = GPX_MAX_TF;
			rec = gpx_freq_record_build(docs, tfs, n, &len);
			CHECK(rec != NULL, "record built");
			if (rec == NULL)
				continue;
			problem = gpx_freq_record_check(rec, len);
			CHECK(problem == NULL, "%u postings: %s", n, problem);
			CHECK(gpx_freq_record_df(rec) == n, "%u postings: df %u", n, gpx_freq_record_df(rec));
			/* the index's reader agrees, given the list it goes with */
			CHECK(gpx_parse_freq_record(rec, (uint32_t) len, n, n ? docs[n - 1] + 1 : 1) == NULL,
				  "%u postings: the index's check", n);
			for (uint32_t i = 0; i < n; i++)
				wrong += gpx_freq_record_tf(rec, i) != tfs[i];
			CHECK(wrong == 0, "%u postings: %u tfs read back wrong", n, wrong);
			for (uint32_t b = 0; b < gpx_freq_nblocks(n); b++)
			{
				uint8_t		block[GPX_RANK_BLOCK];
				GpxFreqBlock fb;

				gpx_freq_block_tfs(rec, n, b, block);
				memcpy(&fb, rec + sizeof(GpxFreqHeader) + (size_t) b * sizeof(fb), sizeof(fb));
				width0_blocks += fb.width == 0;
				for (uint32_t i = 0; i < GPX_RANK_BLOCK && b * GPX_RANK_BLOCK + i < n; i++)
					wrong += block[i] != tfs[b * GPX_RANK_BLOCK + i];
			}
			CHECK(wrong == 0, "%u postings: %u block tfs read back wrong", n, wrong);
			CHECK(!all_ones || width0_blocks == (int) gpx_freq_nblocks(n),
				  "%u postings of tf 1: every block of width 0", n);
			CHECK(len < 16 || gpx_freq_record_check(rec, len - 1) != NULL, "%u postings: a byte short", n);
			free(rec);
			free(docs);
			free(tfs);
		}
}

/* every byte of a small blob and a small record, changed alone, is refused */
static void
check_flipped_bytes(void)
{
	uint32_t	lens[300];
	uint32_t	docs[300];
	uint8_t		tfs[300];
	uint64_t	len;
	uint8_t    *blob;
	uint8_t    *rec;
	long		missed = 0;

	for (uint32_t i = 0; i < 300; i++)
		lens[i] = 1 + unit_rand_below(i < 128 ? 7 : 900);
	blob = gpx_doclens_from_lengths(lens, 300, &len);
	CHECK(blob != NULL && gpx_doclens_check(blob, len) == NULL, "small blob");
	for (uint64_t at = 0; blob != NULL && at < len; at++)
		for (int bit = 0; bit < 8; bit++)
		{
			uint8_t		flip = (uint8_t) (bit == 0 ? 1 + unit_rand_below(255) : 1u << bit);

			blob[at] ^= flip;
			missed += gpx_doclens_check(blob, len) == NULL;
			blob[at] ^= flip;
		}
	CHECK(missed == 0, "document lengths: %ld damaged bytes not refused", missed);
	free(blob);

	missed = 0;
	for (uint32_t i = 0; i < 300; i++)
	{
		docs[i] = i * 3 + 1;
		tfs[i] = i >= 128 && i < 256 ? 1 : random_tf();
	}
	rec = gpx_freq_record_build(docs, tfs, 300, &len);
	CHECK(rec != NULL && gpx_freq_record_check(rec, len) == NULL, "small record");
	for (uint64_t at = 0; rec != NULL && at < len; at++)
		for (int bit = 0; bit < 8; bit++)
		{
			uint8_t		flip = (uint8_t) (bit == 0 ? 1 + unit_rand_below(255) : 1u << bit);

			rec[at] ^= flip;
			missed += gpx_freq_record_check(rec, len) == NULL;
			rec[at] ^= flip;
		}
	CHECK(missed == 0, "frequency record: %ld damaged bytes not refused", missed);
	free(rec);
}

int
main(void)
{
	check_doclens_round_trip();
	check_freq_round_trip();
	check_flipped_bytes();
	return unit_report("test_rankdata");
}
