/*
 * make_pack.c
 *	  A corpus pack for the GPU machine (test/gpu/harness.h): the codec
 *	  benchmark's real lists, each encoded as gpuidx stores it (auto codec),
 *	  and the real queries whose lexemes all occur, 2 or more of them.  Packs
 *	  are a fraction of the exported files, so real data fits a device call.
 *
 *	  make_pack NAME EXPORT_DIR OUT.pack
 */
#include "../codec/bench.h"

#include <stdlib.h>
#include <string.h>

static void
put_u32(FILE *f, uint32_t v)
{
	if (fwrite(&v, 4, 1, f) != 1)
		bench_fail("write failed");
}

int
main(int argc, char **argv)
{
	bench_corpus c;
	FILE	   *f;
	uint32_t	nqueries = 0;
	uint64_t	bytes = 0;
	static const uint8_t zeros[8];

	if (argc != 4)
	{
		fprintf(stderr, "usage: %s NAME EXPORT_DIR OUT.pack\n", argv[0]);
		return 2;
	}
	corpus_load(&c, argv[1], argv[2]);
	for (uint32_t q = 0; q < c.nqueries; q++)
		if (c.queries[q].nlexemes >= 2 && c.queries[q].nterms == c.queries[q].nlexemes)
			nqueries++;
	f = fopen(argv[3], "wb");
	if (f == NULL)
		bench_fail("could not create %s", argv[3]);
	if (fwrite("GPXPACK1", 8, 1, f) != 1)
		bench_fail("write failed");
	put_u32(f, c.nlists);
	put_u32(f, nqueries);
	for (uint32_t i = 0; i < c.nlists; i++)
	{
		const bench_list *l = &c.lists[i];
		int			codec = pl_choose_codec(l->docs, l->n);
		size_t		len = pl_encoded_size(codec, l->docs, l->n);
		uint8_t    *buf = bench_alloc(len);

		pl_encode(codec, l->docs, l->n, buf);
		put_u32(f, (uint32_t) len);
		put_u32(f, 0);
		if (fwrite(buf, 1, len, f) != len || fwrite(zeros, 1, (8 - len % 8) % 8, f) != (8 - len % 8) % 8)
			bench_fail("write failed");
		bytes += len;
		free(buf);
	}
	for (uint32_t q = 0; q < c.nqueries; q++)
	{
		const bench_query *bq = &c.queries[q];

		if (bq->nlexemes < 2 || bq->nterms != bq->nlexemes)
			continue;
		put_u32(f, bq->nterms);
		for (uint32_t t = 0; t < bq->nterms; t++)
			put_u32(f, bq->terms[t]);
	}
	if (fclose(f) != 0)
		bench_fail("could not write %s", argv[3]);
	fprintf(stderr, "%s: %u lists (%llu encoded bytes), %u queries\n", argv[3], c.nlists,
			(unsigned long long) bytes, nqueries);
	corpus_free(&c);
	return 0;
}
