/*
 * codec_bench.c
 *	  Benchmark of gpuidx's posting-list codecs on real corpora: sizes
 *	  against GIN's encoding and int4[], decode speed, and CPU intersection
 *	  (synthetic ratios and real queries).  Prints Markdown; see bench/README.md.
 *
 *	  codec_bench NAME=DIR [NAME=DIR ...]
 *
 * DIR holds lists.bin and queries.bin from export_lists.sh.
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BENCH_CFLAGS
#define BENCH_CFLAGS "(unknown)"
#endif

#define MAX_CORPORA 16

/* the encodings compared by size, in table order */
typedef enum size_enc
{
	ENC_EF,
	ENC_LRC,
	ENC_RAW,
	ENC_AUTO,
	ENC_GIN,
	ENC_GIN_DENSE,
	ENC_INT4,
	NUM_ENC
} size_enc;

static const char *const enc_names[NUM_ENC] = {
	"EF", "LRC", "raw", "auto (`pl_choose_codec`)", "GIN varbyte (real TIDs)",
	"GIN varbyte (dense ids)", "int4[]"
};

/* the codecs timed, in table order */
static const int timed_codecs[3] = {GPUIDX_CODEC_EF, GPUIDX_CODEC_LRC, GPUIDX_CODEC_RAW};
static const char *const codec_names[GPUIDX_NUM_CODECS] = {"raw", "EF", "LRC"};

/* PostgreSQL's one-dimensional int4[] without nulls: ARR_OVERHEAD_NONULLS(1) */
#define INT4_ARRAY_HEADER 24

typedef struct size_totals
{
	uint64_t	lists;
	uint64_t	postings;
	uint64_t	bytes[NUM_ENC];
} size_totals;

/* list-length buckets for the size breakdown: [bucket_min[i], bucket_min[i+1]) */
#define NUM_BUCKETS 5
static const uint32_t bucket_min[NUM_BUCKETS] = {1, 2, 16, 128, BENCH_LONG_LIST};
static const char *const bucket_names[NUM_BUCKETS] = {"1", "2-15", "16-127", "128-9999", ">= 10000"};

typedef struct corpus_result
{
	const char *name;
	uint32_t	ndocs;
	size_totals all;
	size_totals lng;			/* lists of >= BENCH_LONG_LIST postings */
	size_totals bucket[NUM_BUCKETS];	/* by list length */
	uint64_t	auto_picks[GPUIDX_NUM_CODECS];
	uint64_t	auto_over_best; /* lists where auto is larger than the best codec */
	double		full_mps[3];	/* by timed_codecs; 0 without long lists */
	double		block_mps[3];
	query_result queries;
} corpus_result;

static void
add_sizes(size_totals *t, uint32_t n, const uint64_t *bytes)
{
	t->lists++;
	t->postings += n;
	for (int e = 0; e < NUM_ENC; e++)
		t->bytes[e] += bytes[e];
}

static void
measure_sizes(const bench_corpus *c, corpus_result *res)
{
	uint64_t   *items = bench_alloc((size_t) c->max_list * sizeof(uint64_t));

	for (uint32_t t = 0; t < c->nlists; t++)
	{
		const bench_list *l = &c->lists[t];
		uint64_t	bytes[NUM_ENC];
		uint64_t	best;
		int			pick;

		bytes[ENC_EF] = pl_encoded_size(GPUIDX_CODEC_EF, l->docs, l->n);
		bytes[ENC_LRC] = pl_encoded_size(GPUIDX_CODEC_LRC, l->docs, l->n);
		bytes[ENC_RAW] = pl_encoded_size(GPUIDX_CODEC_RAW, l->docs, l->n);
		pick = pl_choose_codec(l->docs, l->n);
		bytes[ENC_AUTO] = pl_encoded_size(pick, l->docs, l->n);
		res->auto_picks[pick]++;
		best = bytes[ENC_EF] < bytes[ENC_LRC] ? bytes[ENC_EF] : bytes[ENC_LRC];
		best = bytes[ENC_RAW] < best ? bytes[ENC_RAW] : best;
		if (bytes[ENC_AUTO] > best)
			res->auto_over_best++;

		for (uint32_t i = 0; i < l->n; i++)
			items[i] = gin_item_from_tid(l->tids[i]);
		bytes[ENC_GIN] = gin_posting_list_bytes(items, l->n);
		/* the doc id read as GIN's integer: TID (id >> 11, id & 2047) */
		for (uint32_t i = 0; i < l->n; i++)
			items[i] = l->docs[i];
		bytes[ENC_GIN_DENSE] = gin_posting_list_bytes(items, l->n);
		bytes[ENC_INT4] = INT4_ARRAY_HEADER + 4 * (uint64_t) l->n;

		add_sizes(&res->all, l->n, bytes);
		if (l->n >= BENCH_LONG_LIST)
			add_sizes(&res->lng, l->n, bytes);
		for (int k = NUM_BUCKETS - 1; k >= 0; k--)
			if (l->n >= bucket_min[k])
			{
				add_sizes(&res->bucket[k], l->n, bytes);
				break;
			}
	}
	free(items);
}

typedef struct decode_job
{
	const bench_encoded *enc;
	uint32_t	nlists;
	uint32_t   *out;			/* room for the longest list */
} decode_job;

static void
decode_full(void *arg)
{
	decode_job *job = arg;

	for (uint32_t i = 0; i < job->nlists; i++)
	{
		const pl_view *v = &job->enc->views[i];

		if (pl_decode(v, job->out) != PL_OK)
			bench_fail("pl_decode failed on a list that opened");
		bench_sink += job->out[v->count - 1];
	}
}

static void
decode_blocks(void *arg)
{
	decode_job *job = arg;
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
	uint64_t	sum = 0;

	for (uint32_t i = 0; i < job->nlists; i++)
	{
		const pl_view *v = &job->enc->views[i];

		for (uint32_t b = 0; b < v->nblocks; b++)
		{
			int			n = pl_decode_block(v, b, buf);

			if (n <= 0)
				bench_fail("pl_decode_block failed on a list that opened");
			sum += buf[n - 1];
		}
	}
	bench_sink += sum;
}

/* decode speed of each timed codec over the long lists */
static void
measure_decode(const bench_corpus *c, corpus_result *res)
{
	const bench_list **lng = bench_alloc((size_t) c->nlists * sizeof(bench_list *));
	uint32_t	nlong = 0;
	decode_job	job;

	for (uint32_t t = 0; t < c->nlists; t++)
		if (c->lists[t].n >= BENCH_LONG_LIST)
			lng[nlong++] = &c->lists[t];
	job.nlists = nlong;
	job.out = bench_alloc((size_t) c->max_list * sizeof(uint32_t));
	for (int k = 0; k < 3 && nlong > 0; k++)
	{
		bench_encoded enc;

		bench_encode(&enc, timed_codecs[k], lng, nlong);
		/* what is timed must also be right */
		for (uint32_t i = 0; i < nlong; i++)
			if (pl_decode(&enc.views[i], job.out) != PL_OK ||
				memcmp(job.out, lng[i]->docs, (size_t) lng[i]->n * sizeof(uint32_t)) != 0)
				bench_fail("%s: %s list %u decodes wrong", c->name,
						   codec_names[timed_codecs[k]], i);
		job.enc = &enc;
		res->full_mps[k] = res->lng.postings / bench_time_per_call(decode_full, &job, 0.5, 5) / 1e6;
		res->block_mps[k] = res->lng.postings / bench_time_per_call(decode_blocks, &job, 0.5, 5) / 1e6;
		bench_encoded_free(&enc);
	}
	free(lng);
	free(job.out);
}

static void
run_corpus(const char *name, const char *dir, corpus_result *res)
{
	bench_corpus c;
	const bench_list **all;
	bench_encoded ef;
	double		t0 = bench_now();

	memset(res, 0, sizeof(*res));
	corpus_load(&c, name, dir);
	res->name = name;
	res->ndocs = c.ndocs;
	fprintf(stderr, "%s: %u lists, %llu postings loaded\n", name, c.nlists,
			(unsigned long long) c.npostings);
	measure_sizes(&c, res);
	fprintf(stderr, "%s: sizes done (%.1f s)\n", name, bench_now() - t0);
	measure_decode(&c, res);
	fprintf(stderr, "%s: decode done (%.1f s)\n", name, bench_now() - t0);

	all = bench_alloc((size_t) c.nlists * sizeof(bench_list *));
	for (uint32_t t = 0; t < c.nlists; t++)
		all[t] = &c.lists[t];
	bench_encode(&ef, GPUIDX_CODEC_EF, all, c.nlists);
	bench_real_queries(&c, &ef, &res->queries);
	fprintf(stderr, "%s: queries done (%.1f s)\n", name, bench_now() - t0);
	bench_encoded_free(&ef);
	free(all);
	corpus_free(&c);
}

static void
print_header(FILE *out, int argc, char **argv)
{
	char		line[512];
	char		model[256] = "unknown";
	FILE	   *f = fopen("/proc/cpuinfo", "r");

	if (f != NULL)
	{
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "model name", 10) == 0 && strchr(line, ':') != NULL)
			{
				snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
				model[strcspn(model, "\n")] = '\0';
				break;
			}
		fclose(f);
	}
	fprintf(out, "# gpuidx codec benchmark\n\n- command: `");
	for (int i = 0; i < argc; i++)
		fprintf(out, "%s%s", i ? " " : "", argv[i]);
	fprintf(out, "`\n- machine: %s, %ld cores online (one used)\n", model,
			sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(out, "- compiler: cc %s, flags `%s`\n", __VERSION__, BENCH_CFLAGS);
	fprintf(out, "- long lists: >= %d postings; list header %d bytes, counted in every gpuidx size\n\n",
			BENCH_LONG_LIST, GPUIDX_HEADER_SIZE);
}

static void
print_corpus_table(FILE *out, const corpus_result *res, int n)
{
	fprintf(out, "## Corpora (PostgreSQL `to_tsvector('english', body)`)\n\n");
	fprintf(out, "| corpus | docs | lists | postings | long lists | postings in long lists | "
			"auto picks raw / EF / LRC | list headers, share of auto bytes |\n");
	fprintf(out, "|---|---:|---:|---:|---:|---:|---|---:|\n");
	for (int i = 0; i < n; i++)
		fprintf(out, "| %s | %u | %llu | %llu | %llu | %llu | %llu / %llu / %llu | %.1f%% |\n",
				res[i].name, res[i].ndocs,
				(unsigned long long) res[i].all.lists, (unsigned long long) res[i].all.postings,
				(unsigned long long) res[i].lng.lists, (unsigned long long) res[i].lng.postings,
				(unsigned long long) res[i].auto_picks[GPUIDX_CODEC_RAW],
				(unsigned long long) res[i].auto_picks[GPUIDX_CODEC_EF],
				(unsigned long long) res[i].auto_picks[GPUIDX_CODEC_LRC],
				100.0 * GPUIDX_HEADER_SIZE * res[i].all.lists / res[i].all.bytes[ENC_AUTO]);
	fprintf(out, "\n");
}

static void
print_size_cells(FILE *out, const size_totals *t, int e)
{
	if (t->postings == 0)
	{
		fprintf(out, " – | – | – |");
		return;
	}
	fprintf(out, " %llu | %.2f | %.1f%% |", (unsigned long long) t->bytes[e],
			8.0 * t->bytes[e] / t->postings, 100.0 * t->bytes[e] / t->bytes[ENC_GIN]);
}

static void
print_size_table(FILE *out, const corpus_result *res, int n)
{
	fprintf(out, "## Size\n\n");
	fprintf(out, "Bytes over every list of the corpus, bits per posting, and the share of GIN's "
			"bytes on the same lists (real TIDs).\n\n");
	fprintf(out, "| corpus | encoding | all: bytes | bits/posting | of GIN | "
			"long: bytes | bits/posting | of GIN |\n");
	fprintf(out, "|---|---|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < n; i++)
		for (int e = 0; e < NUM_ENC; e++)
		{
			fprintf(out, "| %s | %s |", res[i].name, enc_names[e]);
			print_size_cells(out, &res[i].all, e);
			print_size_cells(out, &res[i].lng, e);
			fprintf(out, "\n");
		}
	fprintf(out, "\n");
}

/*
 * Where the bytes go, by list length: every gpuidx list pays a 16-byte
 * header with its checksum (EF also skip entries and a guard word), which a
 * one-posting list feels and a long one does not.
 */
static void
print_bucket_table(FILE *out, const corpus_result *res, int n)
{
	fprintf(out, "## Size by list length\n\n");
	fprintf(out, "Bits per posting of EF, auto and GIN's encoding (real TIDs) over the lists of "
			"each length; EF and auto as a share of GIN.  Each gpuidx list carries a %d-byte "
			"header with its CRC-32C; GIN's model counts no per-list header beyond its "
			"8-byte segment header.\n\n", GPUIDX_HEADER_SIZE);
	fprintf(out, "| corpus | postings per list | lists | postings | EF bits | auto bits | GIN bits | "
			"EF of GIN | auto of GIN |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < n; i++)
		for (int k = 0; k < NUM_BUCKETS; k++)
		{
			const size_totals *t = &res[i].bucket[k];

			if (t->postings == 0)
				continue;
			fprintf(out, "| %s | %s | %llu | %llu | %.2f | %.2f | %.2f | %.1f%% | %.1f%% |\n",
					res[i].name, bucket_names[k], (unsigned long long) t->lists,
					(unsigned long long) t->postings,
					8.0 * t->bytes[ENC_EF] / t->postings, 8.0 * t->bytes[ENC_AUTO] / t->postings,
					8.0 * t->bytes[ENC_GIN] / t->postings,
					100.0 * t->bytes[ENC_EF] / t->bytes[ENC_GIN],
					100.0 * t->bytes[ENC_AUTO] / t->bytes[ENC_GIN]);
		}
	fprintf(out, "\n");
}

static void
print_decode_table(FILE *out, const corpus_result *res, int n)
{
	fprintf(out, "## Decode speed (one core, million postings/s, long lists)\n\n");
	fprintf(out, "Median of 5 runs of >= 0.5 s each.  Full: `pl_decode` of each list; "
			"block: `pl_decode_block` of every block into one buffer (128 postings an EF or "
			"raw block, 256 an LRC segment).\n\n");
	fprintf(out, "| corpus | postings | codec | full decode | block decode |\n");
	fprintf(out, "|---|---:|---|---:|---:|\n");
	for (int i = 0; i < n; i++)
	{
		if (res[i].lng.postings == 0)
		{
			fprintf(out, "| %s | 0 | – | no list of %d postings | – |\n", res[i].name,
					BENCH_LONG_LIST);
			continue;
		}
		for (int k = 0; k < 3; k++)
			fprintf(out, "| %s | %llu | %s | %.0f | %.0f |\n", res[i].name,
					(unsigned long long) res[i].lng.postings, codec_names[timed_codecs[k]],
					res[i].full_mps[k], res[i].block_mps[k]);
	}
	fprintf(out, "\n");
}

static void
print_query_table(FILE *out, const corpus_result *res, int n)
{
	static const char *const mnames[3] = {"AUTO", "MERGE", "SKIP"};

	fprintf(out, "## Real queries (EF lists, `cpu_intersect_k`, one core)\n\n");
	fprintf(out, "Queries of queries.tsv whose `plainto_tsquery('english', ...)` has 2+ lexemes, "
			"all in the corpus; each result checked against a sorted-array intersection.  "
			"Time: one pass over the queries, median of 5.  Blocks: decoded / blocks of the "
			"lists involved.\n\n");
	fprintf(out, "| corpus | queries run | skipped: lexeme missing / < 2 lexemes | lists/query | "
			"results | method | pass ms | queries/s | blocks touched |\n");
	fprintf(out, "|---|---:|---:|---:|---:|---|---:|---:|---:|\n");
	for (int i = 0; i < n; i++)
	{
		const query_result *q = &res[i].queries;

		for (cpu_method m = CPU_METHOD_AUTO; m <= CPU_METHOD_SKIP; m++)
		{
			fprintf(out, "| %s | %u | %u / %u | %.2f | %llu | %s", res[i].name, q->nrun,
					q->nmissing, q->nsingle, q->nrun ? (double) q->nlists / q->nrun : 0,
					(unsigned long long) q->nresults, mnames[m]);
			if (m == CPU_METHOD_AUTO)
				fprintf(out, " (%u skip, %u merge rounds)", q->rounds_skip, q->rounds_merge);
			fprintf(out, " | %.1f | %.0f | %.1f%% |\n", q->seconds[m] * 1e3,
					q->seconds[m] > 0 ? q->nrun / q->seconds[m] : 0, 100 * q->touched[m]);
		}
	}
	fprintf(out, "\n");
}

/*
 * Pass time of the real queries with AUTO's rule at each skip ratio; the
 * ratio advised is the one with the lowest geometric mean, over the
 * corpora, of its time relative to that corpus' fastest ratio.
 */
static void
print_sweep_table(FILE *out, const corpus_result *res, int n)
{
	double		score[NUM_SWEEP_RATIOS] = {0};
	int			ncorpora = 0;
	int			best = -1;
	int			current = -1;	/* CPU_SKIP_RATIO_DEFAULT's column */

	fprintf(out, "## Skip ratio on real queries\n\n");
	fprintf(out, "One pass over the queries above (ms, median of 5) with AUTO's rule, skip when "
			"long >= short * ratio, at each ratio (`CPU_SKIP_RATIO_DEFAULT` is %d).  Fastest "
			"in bold.\n\n| corpus |", CPU_SKIP_RATIO_DEFAULT);
	for (int r = 0; r < NUM_SWEEP_RATIOS; r++)
		fprintf(out, " %u |", sweep_ratios[r]);
	fprintf(out, "\n|---|");
	for (int r = 0; r < NUM_SWEEP_RATIOS; r++)
		fprintf(out, "---:|");
	fprintf(out, "\n");
	for (int i = 0; i < n; i++)
	{
		const double *t = res[i].queries.sweep_seconds;
		int			fastest = 0;

		if (res[i].queries.nrun == 0)
			continue;
		for (int r = 1; r < NUM_SWEEP_RATIOS; r++)
			if (t[r] < t[fastest])
				fastest = r;
		fprintf(out, "| %s |", res[i].name);
		for (int r = 0; r < NUM_SWEEP_RATIOS; r++)
		{
			fprintf(out, r == fastest ? " **%.1f** |" : " %.1f |", t[r] * 1e3);
			score[r] += log(t[r] / t[fastest]);
		}
		fprintf(out, "\n");
		ncorpora++;
	}
	for (int r = 0; r < NUM_SWEEP_RATIOS && ncorpora > 0; r++)
	{
		if (best < 0 || score[r] < score[best])
			best = r;
		if (sweep_ratios[r] == CPU_SKIP_RATIO_DEFAULT)
			current = r;
	}
	if (best >= 0 && current >= 0)
		fprintf(out, "\nBest ratio over the corpora: %u (geometric mean %.1f%% above each "
				"corpus' fastest; the default, %d: %.1f%%).\n", sweep_ratios[best],
				100 * (exp(score[best] / ncorpora) - 1), CPU_SKIP_RATIO_DEFAULT,
				100 * (exp(score[current] / ncorpora) - 1));
	fprintf(out, "\n");
}

static const char *
verdict(int ok)
{
	return ok ? "met" : "**missed**";
}

static void
print_targets(FILE *out, const corpus_result *res, int n, const synth_result *syn)
{
	fprintf(out, "## Targets\n\n");
	fprintf(out, "| target | case | measured | verdict |\n|---|---|---:|---|\n");
	for (int i = 0; i < n; i++)
	{
		double		all = (double) res[i].all.bytes[ENC_EF] / res[i].all.bytes[ENC_GIN];

		fprintf(out, "| EF <= 60%% of GIN varbyte bytes | %s, all lists | %.1f%% | %s |\n",
				res[i].name, 100 * all, verdict(all <= 0.60));
		if (res[i].bucket[3].postings + res[i].bucket[4].postings > 0)
		{
			uint64_t	ef = res[i].bucket[3].bytes[ENC_EF] + res[i].bucket[4].bytes[ENC_EF];
			uint64_t	gin = res[i].bucket[3].bytes[ENC_GIN] + res[i].bucket[4].bytes[ENC_GIN];

			fprintf(out, "| EF <= 60%% of GIN varbyte bytes | %s, lists of >= 128 postings | %.1f%% | %s |\n",
					res[i].name, 100.0 * ef / gin, verdict(ef <= 0.60 * gin));
		}
		if (res[i].lng.postings > 0)
		{
			double		lng = (double) res[i].lng.bytes[ENC_EF] / res[i].lng.bytes[ENC_GIN];

			fprintf(out, "| EF <= 60%% of GIN varbyte bytes | %s, long lists | %.1f%% | %s |\n",
					res[i].name, 100 * lng, verdict(lng <= 0.60));
		}
	}
	for (int i = 0; i < n; i++)
		fprintf(out, "| auto never larger than the best single codec | %s | %llu lists larger | %s |\n",
				res[i].name, (unsigned long long) res[i].auto_over_best,
				verdict(res[i].auto_over_best == 0));
	for (int i = 0; i < n; i++)
		if (res[i].lng.postings > 0)
			fprintf(out, "| EF block decode >= 1000 M postings/s/core | %s, long lists | %.0f M/s | %s |\n",
					res[i].name, res[i].block_mps[0], verdict(res[i].block_mps[0] >= 1000));
	for (int r = 0; r < SYN_NRATIOS; r++)
		if (syn[r].ratio >= 1000)
			fprintf(out, "| skip touches < 5%% of the long list's blocks | ratio %u | %.2f%% | %s |\n",
					syn[r].ratio, 100 * syn[r].touched[CPU_METHOD_SKIP],
					verdict(syn[r].touched[CPU_METHOD_SKIP] < 0.05));
	for (int i = 0; i < n; i++)
		if (res[i].queries.skew_rounds > 0)
			fprintf(out, "| skip touches < 5%% of the long list's blocks | %s, %u real rounds of ratio >= 1000 | %.2f%% | %s |\n",
					res[i].name, res[i].queries.skew_rounds,
					100.0 * res[i].queries.skew_touched / res[i].queries.skew_blocks,
					verdict(res[i].queries.skew_touched < 0.05 * res[i].queries.skew_blocks));
	fprintf(out, "\n");
}

int
main(int argc, char **argv)
{
	static char names[MAX_CORPORA][256];
	corpus_result res[MAX_CORPORA];
	synth_result syn[SYN_NRATIOS];
	int			n = 0;

	if (argc < 2 || argc - 1 > MAX_CORPORA)
	{
		fprintf(stderr, "usage: %s NAME=DIR [NAME=DIR ...] (at most %d)\n", argv[0], MAX_CORPORA);
		return 2;
	}
	for (int i = 1; i < argc; i++)
	{
		const char *eq = strchr(argv[i], '=');

		if (eq == NULL || eq == argv[i] || (size_t) (eq - argv[i]) >= sizeof(names[n]))
			bench_fail("argument \"%s\" is not NAME=DIR", argv[i]);
		snprintf(names[n], sizeof(names[n]), "%.*s", (int) (eq - argv[i]), argv[i]);
		run_corpus(names[n], eq + 1, &res[n]);
		n++;
	}
	bench_synthetic(syn);

	print_header(stdout, argc, argv);
	print_corpus_table(stdout, res, n);
	print_size_table(stdout, res, n);
	print_bucket_table(stdout, res, n);
	print_decode_table(stdout, res, n);
	print_synthetic_table(stdout, syn);
	print_query_table(stdout, res, n);
	print_sweep_table(stdout, res, n);
	print_targets(stdout, res, n, syn);
	return 0;
}
