/*
 * corpus.c
 *	  Reading the lists and queries that export_lists.sh wrote (layouts in
 *	  bench/README.md), with the checks that make every later step safe:
 *	  lists non-empty and strictly increasing, ids and term indexes in range.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

static FILE *
open_in(const char *dir, const char *file, char *path, size_t pathlen, long *size)
{
	FILE	   *f;

	snprintf(path, pathlen, "%s/%s", dir, file);
	f = fopen(path, "rb");
	if (f == NULL)
		bench_fail("could not open %s", path);
	if (fseek(f, 0, SEEK_END) != 0 || (*size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		bench_fail("could not size %s", path);
	return f;
}

static void
read_exact(FILE *f, void *buf, size_t size, const char *path)
{
	if (size > 0 && fread(buf, 1, size, f) != size)
		bench_fail("%s: truncated", path);
}

static void
expect_magic(FILE *f, const char *magic, const char *path)
{
	char		got[8];

	read_exact(f, got, sizeof(got), path);
	if (memcmp(got, magic, sizeof(got)) != 0)
		bench_fail("%s: not a %.8s file", path, magic);
}

static void
expect_end(FILE *f, const char *path)
{
	if (fgetc(f) != EOF)
		bench_fail("%s: trailing bytes", path);
	fclose(f);
}

static void
load_lists(bench_corpus *c, const char *dir)
{
	char		path[4096];
	long		size;
	FILE	   *f = open_in(dir, "lists.bin", path, sizeof(path), &size);
	uint32_t	hdr[2];
	uint64_t	capacity;
	uint64_t	pos = 0;

	expect_magic(f, "GPXLIST1", path);
	read_exact(f, hdr, sizeof(hdr), path);
	c->ndocs = hdr[0];
	c->nlists = hdr[1];
	if ((uint64_t) size < 16 + 4 * (uint64_t) c->nlists)
		bench_fail("%s: shorter than its %u lists", path, c->nlists);
	/* every posting takes 12 bytes: its doc id and its TID */
	capacity = ((uint64_t) size - 16 - 4 * (uint64_t) c->nlists) / 12;
	c->doc_arena = bench_alloc(capacity * sizeof(uint32_t));
	c->tid_arena = bench_alloc(capacity * sizeof(uint64_t));
	c->lists = bench_alloc((size_t) c->nlists * sizeof(bench_list));
	c->max_list = 0;
	for (uint32_t t = 0; t < c->nlists; t++)
	{
		uint32_t	n;
		uint32_t   *docs = c->doc_arena + pos;
		uint64_t   *tids = c->tid_arena + pos;

		read_exact(f, &n, sizeof(n), path);
		if (n == 0 || n > capacity - pos || n > GPUIDX_MAX_POSTINGS)
			bench_fail("%s: list %u has a bad length %u", path, t, n);
		read_exact(f, docs, (size_t) n * sizeof(uint32_t), path);
		read_exact(f, tids, (size_t) n * sizeof(uint64_t), path);
		for (uint32_t i = 0; i < n; i++)
			if (docs[i] >= c->ndocs || (i > 0 && (docs[i] <= docs[i - 1] || tids[i] <= tids[i - 1])))
				bench_fail("%s: list %u is not strictly increasing", path, t);
		c->lists[t].n = n;
		c->lists[t].docs = docs;
		c->lists[t].tids = tids;
		if (n > c->max_list)
			c->max_list = n;
		pos += n;
	}
	expect_end(f, path);
	c->npostings = pos;
}

static void
load_queries(bench_corpus *c, const char *dir)
{
	char		path[4096];
	long		size;
	FILE	   *f = open_in(dir, "queries.bin", path, sizeof(path), &size);
	uint64_t	capacity;
	uint64_t	pos = 0;

	expect_magic(f, "GPXQRY01", path);
	read_exact(f, &c->nqueries, sizeof(uint32_t), path);
	if ((uint64_t) size < 12 + 12 * (uint64_t) c->nqueries)
		bench_fail("%s: shorter than its %u queries", path, c->nqueries);
	capacity = ((uint64_t) size - 12 - 12 * (uint64_t) c->nqueries) / 4;
	c->term_arena = bench_alloc(capacity * sizeof(uint32_t));
	c->queries = bench_alloc((size_t) c->nqueries * sizeof(bench_query));
	for (uint32_t q = 0; q < c->nqueries; q++)
	{
		uint32_t	hdr[3];
		uint32_t   *terms = c->term_arena + pos;

		read_exact(f, hdr, sizeof(hdr), path);
		if (hdr[2] > capacity - pos || hdr[2] > hdr[1])
			bench_fail("%s: query %u has a bad term count", path, hdr[0]);
		read_exact(f, terms, (size_t) hdr[2] * sizeof(uint32_t), path);
		for (uint32_t i = 0; i < hdr[2]; i++)
			if (terms[i] >= c->nlists)
				bench_fail("%s: query %u names list %u of %u", path, hdr[0], terms[i], c->nlists);
		c->queries[q].id = hdr[0];
		c->queries[q].nlexemes = hdr[1];
		c->queries[q].nterms = hdr[2];
		c->queries[q].terms = terms;
		pos += hdr[2];
	}
	expect_end(f, path);
}

void
corpus_load(bench_corpus *corpus, const char *name, const char *dir)
{
	memset(corpus, 0, sizeof(*corpus));
	corpus->name = name;
	load_lists(corpus, dir);
	load_queries(corpus, dir);
}

void
corpus_free(bench_corpus *corpus)
{
	free(corpus->doc_arena);
	free(corpus->tid_arena);
	free(corpus->lists);
	free(corpus->term_arena);
	free(corpus->queries);
	memset(corpus, 0, sizeof(*corpus));
}
