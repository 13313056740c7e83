/*
 * rank_bench.c
 *	  Ranked top-k on an engine, without PostgreSQL: one segment made from a
 *	  corpus file (a document a line, words separated by spaces, an optional
 *	  "id<TAB>" first), its lists, frequency records and doc lengths put in
 *	  the engine's cache as the worker puts them, and real queries run in
 *	  batches of each size asked.  Every answer is first compared, docs and
 *	  scores bit for bit, with the CPU engine's.  Prints Markdown: per batch
 *	  size and shape, wall time and the engine's own device time, per batch
 *	  and per request, so that the device's cost of a ranking can be measured
 *	  (and profiled, with --reps 1 under ncu) in seconds.
 *
 *	  rank_bench --engine PATH --docs FILE --queries FILE [--ndocs N]
 *	             [--nqueries N] [--batches "1 10 32"] [--k N] [--reps N]
 *	             [--shapes "any every"]
 *
 * The lists of --batches and --shapes are separated by spaces or commas.
 *
 * Words are taken as they are (no parser, no stemming): the lists are the
 * corpus's, close to what the index holds, which is what the device's time
 * depends on.
 */
#include "../../test/gpu/harness.h"
#include "codec/codec.h"
#include "rank/bm25.h"
#include "store/rankdata.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WORD 128
#define KEY_LIST(t) (UINT64_C(0xB) << 60 | (uint64_t) (t) << 2)
#define KEY_FREQS(t) (UINT64_C(0xB) << 60 | (uint64_t) (t) << 2 | 1)
#define KEY_DOCLENS (UINT64_C(0xB) << 60 | 2)

/* the queries' words, each with its postings in the segment */
typedef struct term
{
	char	   *word;
	uint32_t	n,
				cap;
	uint32_t   *docs;
	uint8_t    *tfs;
	double		idf;
} term;

static term *terms;
static uint32_t nterms;
static uint32_t *table;			/* open addressing: term index + 1 */
static uint32_t table_size;

static uint32_t
word_hash(const char *w, size_t len)
{
	uint32_t	h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t) w[i]) * 16777619u;
	return h;
}

/* the term of word w, added when add; UINT32_MAX when absent */
static uint32_t
term_find(const char *w, size_t len, bool add)
{
	uint32_t	s = word_hash(w, len) & (table_size - 1);

	for (;; s = (s + 1) & (table_size - 1))
	{
		uint32_t	t = table[s];

		if (t == 0)
			break;
		if (strlen(terms[t - 1].word) == len && memcmp(terms[t - 1].word, w, len) == 0)
			return t - 1;
	}
	if (!add)
		return UINT32_MAX;
	terms = realloc(terms, (nterms + 1) * sizeof(term));
	if (terms == NULL)
		harness_fail("out of memory");
	memset(&terms[nterms], 0, sizeof(term));
	terms[nterms].word = strndup(w, len);
	table[s] = ++nterms;
	return nterms - 1;
}

typedef struct query_words
{
	uint32_t	n;
	uint32_t	t[GPUIDX_ENGINE_MAX_TERMS];
} query_words;

static int
cmp_terms_bytewise(const void *a, const void *b)
{
	return strcmp(terms[*(const uint32_t *) a].word, terms[*(const uint32_t *) b].word);
}

static void
posting_add(term *t, uint32_t doc)
{
	if (t->n > 0 && t->docs[t->n - 1] == doc)
	{
		if (t->tfs[t->n - 1] < GPX_MAX_TF)
			t->tfs[t->n - 1]++;
		return;
	}
	if (t->n == t->cap)
	{
		t->cap = t->cap ? t->cap * 2 : 16;
		t->docs = realloc(t->docs, t->cap * sizeof(uint32_t));
		t->tfs = realloc(t->tfs, t->cap);
		if (t->docs == NULL || t->tfs == NULL)
			harness_fail("out of memory");
	}
	t->docs[t->n] = doc;
	t->tfs[t->n] = 1;
	t->n++;
}

static void
put(engine_handle *h, uint64_t key, int kind, const void *bytes, uint64_t len)
{
	gpuidx_engine_error err;
	int			st = kind == 0 ? h->api->cache_put(h->engine, key, bytes, len, &err)
		: h->api->cache_put_data(h->engine, key, (uint32_t) kind, bytes, len, &err);

	if (st != GPUIDX_ENGINE_OK)
		harness_fail("cache put on %s: %s", h->info.kind, err.message);
}

static void
run(engine_handle *h, gpuidx_rank_query *q, uint32_t n, gpuidx_batch_stats *st)
{
	gpuidx_engine_error err;

	if (h->api->run_ranked(h->engine, q, n, st, &err) != GPUIDX_ENGINE_OK)
		harness_fail("run_ranked on %s: %s", h->info.kind, err.message);
	for (uint32_t i = 0; i < n; i++)
		if (q[i].status != GPUIDX_ENGINE_OK)
			harness_fail("run_ranked on %s: query status %d", h->info.kind, q[i].status);
}

int
main(int argc, char **argv)
{
	const char *engine = NULL,
			   *docs_path = NULL,
			   *queries_path = NULL;
	const char *batches = "1 10 32";
	const char *shapes = "any every";
	uint32_t	max_docs = UINT32_MAX,
				max_queries = 1000,
				k = 10,
				reps = 3;
	uint32_t	cores = (uint32_t) sysconf(_SC_NPROCESSORS_ONLN);
	gpuidx_engine_config gcfg = {sizeof(gcfg), 0, UINT64_C(8) << 30, UINT64_C(2) << 30, 1, 0};
	gpuidx_engine_config ccfg = {sizeof(ccfg), 0, UINT64_C(8) << 30, 0, cores, 0};
	engine_handle gpu,
				cpu;
	char		err[512];
	char	   *line = NULL;
	size_t		cap = 0;
	FILE	   *f;
	query_words *qw;
	uint32_t	nq = 0;
	uint32_t   *lens = NULL;
	uint32_t	ndocs = 0,
				lens_cap = 0;
	double		total_len = 0;
	uint8_t    *doclens;
	uint64_t	doclens_len;
	uint64_t	postings = 0;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
			engine = argv[++i];
		else if (strcmp(argv[i], "--docs") == 0 && i + 1 < argc)
			docs_path = argv[++i];
		else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
			queries_path = argv[++i];
		else if (strcmp(argv[i], "--ndocs") == 0 && i + 1 < argc)
			max_docs = (uint32_t) atol(argv[++i]);
		else if (strcmp(argv[i], "--nqueries") == 0 && i + 1 < argc)
			max_queries = (uint32_t) atol(argv[++i]);
		else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
			batches = argv[++i];
		else if (strcmp(argv[i], "--shapes") == 0 && i + 1 < argc)
			shapes = argv[++i];
		else if (strcmp(argv[i], "--k") == 0 && i + 1 < argc)
			k = (uint32_t) atol(argv[++i]);
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = (uint32_t) atol(argv[++i]);
		else
			harness_fail("unknown argument %s", argv[i]);
	}
	if (engine == NULL || docs_path == NULL || queries_path == NULL || k == 0 || k > GPUIDX_RANK_MAX_K ||
		max_queries == 0 || reps == 0)
		harness_fail("usage: rank_bench --engine PATH --docs FILE --queries FILE [--ndocs N] [--nqueries N] "
					 "[--batches \"1 10 32\"] [--k N] [--reps N] [--shapes \"any every\"]");
	if (engine_open(&gpu, engine, &gcfg, err, sizeof(err)) != GPUIDX_ENGINE_OK ||
		engine_open(&cpu, "cpu", &ccfg, err, sizeof(err)) != GPUIDX_ENGINE_OK)
		harness_fail("%s", err);

	/* the queries' words first: only their lists are built */
	table_size = 1u << 20;
	table = harness_alloc(table_size * sizeof(uint32_t));
	memset(table, 0, table_size * sizeof(uint32_t));
	qw = harness_alloc(max_queries * sizeof(query_words));
	if ((f = fopen(queries_path, "r")) == NULL)
		harness_fail("cannot open %s", queries_path);
	while (nq < max_queries && getline(&line, &cap, f) > 0)
	{
		char	   *p = strchr(line, '\t');
		query_words *w = &qw[nq];

		p = p ? p + 1 : line;
		w->n = 0;
		for (char *tok = strtok(p, " \t\r\n"); tok != NULL; tok = strtok(NULL, " \t\r\n"))
		{
			uint32_t	t = term_find(tok, strlen(tok), true);
			bool		dup = false;

			for (uint32_t j = 0; j < w->n; j++)
				dup |= w->t[j] == t;
			if (!dup && w->n < GPUIDX_ENGINE_MAX_TERMS && strlen(tok) < MAX_WORD)
				w->t[w->n++] = t;
		}
		if (w->n > 0)
			nq++;
	}
	fclose(f);

	/* the segment: every doc's length, the queries' words' postings */
	if ((f = fopen(docs_path, "r")) == NULL)
		harness_fail("cannot open %s", docs_path);
	while (ndocs < max_docs && getline(&line, &cap, f) > 0)
	{
		char	   *p = strchr(line, '\t');
		uint32_t	len = 0;

		p = p ? p + 1 : line;
		for (char *tok = strtok(p, " \t\r\n"); tok != NULL; tok = strtok(NULL, " \t\r\n"))
		{
			uint32_t	t = term_find(tok, strlen(tok), false);

			if (t != UINT32_MAX)
				posting_add(&terms[t], ndocs);
			len++;
		}
		if (ndocs == lens_cap)
		{
			lens_cap = lens_cap ? lens_cap * 2 : 1 << 20;
			lens = realloc(lens, lens_cap * sizeof(uint32_t));
			if (lens == NULL)
				harness_fail("out of memory");
		}
		lens[ndocs++] = len;
		total_len += len;
	}
	fclose(f);
	free(line);
	if (ndocs == 0)
		harness_fail("no documents in %s", docs_path);
	doclens = gpx_doclens_from_lengths(lens, ndocs, &doclens_len);
	if (doclens == NULL)
		harness_fail("out of memory");
	put(&gpu, KEY_DOCLENS, GPUIDX_DATA_DOCLENS, doclens, doclens_len);
	put(&cpu, KEY_DOCLENS, GPUIDX_DATA_DOCLENS, doclens, doclens_len);
	for (uint32_t t = 0; t < nterms; t++)
	{
		term	   *tm = &terms[t];
		int			codec;
		uint8_t    *bytes;
		uint64_t	len,
					flen;
		uint8_t    *freqs;

		if (tm->n == 0)
			continue;
		postings += tm->n;
		tm->idf = gpx_bm25_idf(ndocs, tm->n);
		codec = pl_choose_codec(tm->docs, tm->n);
		bytes = harness_alloc(pl_encoded_size(codec, tm->docs, tm->n));
		len = pl_encode(codec, tm->docs, tm->n, bytes);
		freqs = gpx_freq_record_build(tm->docs, tm->tfs, tm->n, &flen);
		if (freqs == NULL)
			harness_fail("out of memory");
		put(&gpu, KEY_LIST(t), 0, bytes, len);
		put(&cpu, KEY_LIST(t), 0, bytes, len);
		put(&gpu, KEY_FREQS(t), GPUIDX_DATA_FREQS, freqs, flen);
		put(&cpu, KEY_FREQS(t), GPUIDX_DATA_FREQS, freqs, flen);
		free(bytes);
		free(freqs);
	}

	/* each query's terms: those the segment has, bytewise */
	{
		uint32_t	kept = 0;

		for (uint32_t i = 0; i < nq; i++)
		{
			query_words w = qw[i];

			qw[kept].n = 0;
			for (uint32_t j = 0; j < w.n; j++)
				if (terms[w.t[j]].n > 0)
					qw[kept].t[qw[kept].n++] = w.t[j];
			if (qw[kept].n == 0)
				continue;
			qsort(qw[kept].t, qw[kept].n, sizeof(uint32_t), cmp_terms_bytewise);
			kept++;
		}
		nq = kept;
	}
	if (nq == 0)
		harness_fail("no query has a word of the documents");

	printf("## Ranked top %u on %s (%s, %u SMs)\n\n"
		   "- segment: %u documents of %s, mean length %.2f; %u queries of %s, %u distinct words, "
		   "%lu postings in their lists\n"
		   "- reference: the CPU engine (%u threads); every answer equal, docs and scores bit for bit\n"
		   "- best of %u passes over the queries; device: the engine's own time from upload to results\n\n",
		   k, gpu.info.kind, gpu.info.device_name, gpu.info.multiprocessors, ndocs, docs_path,
		   total_len / ndocs, nq, queries_path, nterms, (unsigned long) postings, cores, reps);
	printf("| shape | batch | batches | postings a request | µs a batch (wall) | µs a request (wall) | "
		   "device µs a batch | device µs a request | requests a second |\n"
		   "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");

	{
		gpuidx_rank_term *rt = harness_alloc((size_t) nq * GPUIDX_ENGINE_MAX_TERMS * sizeof(gpuidx_rank_term));
		gpuidx_rank_query *qg = harness_alloc(nq * sizeof(gpuidx_rank_query));
		gpuidx_rank_query *qc = harness_alloc(nq * sizeof(gpuidx_rank_query));
		uint32_t   *gdocs = harness_alloc((size_t) nq * k * sizeof(uint32_t));
		uint32_t   *cdocs = harness_alloc((size_t) nq * k * sizeof(uint32_t));
		double	   *gscores = harness_alloc((size_t) nq * k * sizeof(double));
		double	   *cscores = harness_alloc((size_t) nq * k * sizeof(double));
		uint64_t	qpost = 0;
		char	   *shape_list = strdup(shapes);

		for (uint32_t i = 0; i < nq; i++)
			for (uint32_t j = 0; j < qw[i].n; j++)
			{
				gpuidx_rank_term *x = &rt[(size_t) i * GPUIDX_ENGINE_MAX_TERMS + j];

				memset(x, 0, sizeof(*x));
				x->list.key = KEY_LIST(qw[i].t[j]);
				x->freqs.key = KEY_FREQS(qw[i].t[j]);
				x->idf = terms[qw[i].t[j]].idf;
				qpost += terms[qw[i].t[j]].n;
			}
		for (char *shape = strtok(shape_list, " ,"); shape != NULL; shape = strtok(NULL, " ,"))
		{
			uint32_t	every = strcmp(shape, "every") == 0;
			char	   *batch_list = strdup(batches);
			char	   *save = NULL;

			if (!every && strcmp(shape, "any") != 0)
				harness_fail("unknown shape %s (any, every)", shape);
			for (uint32_t i = 0; i < nq; i++)
			{
				gpuidx_rank_query *q = &qg[i];

				memset(q, 0, sizeof(*q));
				q->terms = &rt[(size_t) i * GPUIDX_ENGINE_MAX_TERMS];
				q->nterms = qw[i].n;
				q->every_term = every;
				q->doclens.key = KEY_DOCLENS;
				q->k1 = GPX_BM25_K1_DEFAULT;
				q->b = GPX_BM25_B_DEFAULT;
				q->avgdl = total_len / ndocs;
				q->k = k;
				q->out_capacity = k;
				qc[i] = *q;
				q->out_docs = gdocs + (size_t) i * k;
				q->out_scores = gscores + (size_t) i * k;
				qc[i].out_docs = cdocs + (size_t) i * k;
				qc[i].out_scores = cscores + (size_t) i * k;
			}
			for (uint32_t from = 0; from < nq; from += 256)
				run(&cpu, qc + from, nq - from < 256 ? nq - from : 256, NULL);
			for (char *bs = strtok_r(batch_list, " ,", &save); bs != NULL; bs = strtok_r(NULL, " ,", &save))
			{
				uint32_t	b = (uint32_t) atol(bs);
				double		best_wall = 1e300,
							best_device = 0;
				uint32_t	nbatches = (nq + b - 1) / b;

				if (b == 0)
					harness_fail("a batch of 0");
				for (uint32_t r = 0; r < reps; r++)
				{
					double		start = harness_now();
					double		device = 0;

					for (uint32_t from = 0; from < nq; from += b)
					{
						gpuidx_batch_stats st;

						run(&gpu, qg + from, nq - from < b ? nq - from : b, &st);
						device += st.device_seconds;
					}
					if (harness_now() - start < best_wall)
					{
						best_wall = harness_now() - start;
						best_device = device;
					}
					for (uint32_t i = 0; i < nq; i++)
					{
						const gpuidx_rank_query *g = &qg[i],
								   *c = &qc[i];

						if (g->out_count != c->out_count || g->matched != c->matched ||
							memcmp(g->out_docs, c->out_docs, g->out_count * sizeof(uint32_t)) != 0 ||
							memcmp(g->out_scores, c->out_scores, g->out_count * sizeof(double)) != 0)
							harness_fail("query %u (%s, batch %u): %u of %u matched on %s, %u of %u on the CPU; "
										 "first docs %u and %u", i, shape, b, g->out_count, g->matched,
										 gpu.info.kind, c->out_count, c->matched,
										 g->out_count ? g->out_docs[0] : 0, c->out_count ? c->out_docs[0] : 0);
					}
				}
				printf("| %s | %u | %u | %.0f | %.1f | %.2f | %.1f | %.2f | %.0f |\n", shape, b, nbatches,
					   (double) qpost / nq, best_wall * 1e6 / nbatches, best_wall * 1e6 / nq,
					   best_device * 1e6 / nbatches, best_device * 1e6 / nq, nq / best_wall);
				fflush(stdout);
			}
			free(batch_list);
		}
		free(shape_list);
	}
	engine_close(&gpu);
	engine_close(&cpu);
	return 0;
}
