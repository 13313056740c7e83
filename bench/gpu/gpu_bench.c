/*
 * gpu_bench.c
 *	  Throughput of an engine on real queries, batch by batch, asking for
 *	  every id or for the count alone, against the CPU engine on one core and
 *	  on every core, with the lists cached on the device or copied with each
 *	  batch; one query at a time, its latency; and long similar-length lists
 *	  decoded and intersected, for the postings-per-second figure.  Every
 *	  answer is compared with the CPU engine's first.  Prints Markdown.
 *
 *	  gpu_bench --engine PATH [--copy-gbps X] [--pack FILE]... [--no-long-lists]
 *	            [--skip-ratio N] [--batch N] [--op and|andnot|or]
 *
 *	  --op: the real queries' terms intersected (default), intersected less
 *	  their last term ("a & b & !c"), or united.
 */
#include "../../test/gpu/harness.h"
#include "codec/codec.h"
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_QUERIES 16384

/* --batch N: only batches of N queries, and no one-query latencies (for profiling) */
static uint32_t only_batch;

/* --op: what each real query computes over its terms */
static const char *bench_op = "and";

typedef struct workload
{
	uint32_t	nqueries;
	gpuidx_query *queries;
	gpuidx_term_ref *refs;		/* 8 per query */
	uint32_t   *out;
	uint64_t	out_size;
	uint64_t	list_bytes;		/* encoded bytes the queries read, all of them */
} workload;

typedef struct result
{
	double		seconds;		/* one pass over the workload */
	uint64_t	launches;
	uint64_t	list_bytes;
	uint64_t	bytes_returned;
	uint64_t	result_bytes;	/* the answers' size, whatever the engine */
	double		host_seconds;	/* the engine's own split of its time */
	double		device_seconds;
	double		return_seconds;
} result;

/* the pack's queries as engine queries; inline: terms carry their bytes */
static void
workload_from_pack(workload *w, const pack *p, uint64_t key_base, int inline_lists)
{
	uint64_t	room = 0;

	memset(w, 0, sizeof(*w));
	w->nqueries = p->nqueries < MAX_QUERIES ? p->nqueries : MAX_QUERIES;
	w->queries = harness_alloc(w->nqueries * sizeof(gpuidx_query));
	w->refs = harness_alloc(w->nqueries * 8 * sizeof(gpuidx_term_ref));
	for (uint32_t q = 0; q < w->nqueries; q++)
	{
		gpuidx_query *gq = &w->queries[q];
		uint64_t	counts[8];
		uint64_t	bound;
		uint32_t	k = p->query_nterms[q] < 8 ? p->query_nterms[q] : 8;

		for (uint32_t t = 0; t < k; t++)
		{
			uint32_t	li = p->terms[p->query_first[q] + t];
			gpuidx_term_ref *r = &w->refs[q * 8 + t];

			r->key = key_base + li;
			r->bytes = inline_lists ? p->lists[li] : NULL;
			r->len = p->lens[li];
			w->list_bytes += p->lens[li];
			counts[t] = p->counts[li];
		}
		memset(gq, 0, sizeof(gpuidx_query));
		gq->terms = &w->refs[q * 8];
		gq->nterms = k;
		gq->op = strcmp(bench_op, "or") == 0 ? GPUIDX_OP_OR : GPUIDX_OP_AND;
		gq->nexclude = strcmp(bench_op, "andnot") == 0 && k >= 2 ? 1 : 0;
		bound = gpuidx_query_bound(gq, counts);
		gq->out_capacity = bound < UINT32_MAX ? (uint32_t) bound : UINT32_MAX;
		room += gq->out_capacity;
	}
	w->out = harness_alloc(room * sizeof(uint32_t));
	w->out_size = room;
	room = 0;
	for (uint32_t q = 0; q < w->nqueries; q++)
	{
		w->queries[q].out = w->out + room;
		room += w->queries[q].out_capacity;
	}
}

/* every query of the workload asks for 'result' (GPUIDX_RESULT_IDS or _COUNT) */
static void
workload_ask(workload *w, uint32_t result)
{
	for (uint32_t q = 0; q < w->nqueries; q++)
		w->queries[q].result = result;
}

static const char *
result_name(uint32_t result)
{
	return result == GPUIDX_RESULT_COUNT ? "count" : "ids";
}

static void
workload_free(workload *w)
{
	free(w->queries);
	free(w->refs);
	free(w->out);
}

/* one pass over the workload in batches of 'batch' queries */
static void
run_pass(engine_handle *h, workload *w, uint32_t batch, result *res)
{
	double		t0 = harness_now();

	memset(res, 0, sizeof(*res));
	for (uint32_t i = 0; i < w->nqueries; i += batch)
	{
		uint32_t	n = w->nqueries - i < batch ? w->nqueries - i : batch;
		gpuidx_batch_stats st;
		gpuidx_engine_error err;
		int			rc = h->api->run_batch(h->engine, w->queries + i, n, &st, &err);

		if (rc != GPUIDX_ENGINE_OK)
			harness_fail("run_batch: %s: %s", engine_status_name(rc), err.message);
		for (uint32_t q = i; q < i + n; q++)
		{
			if (w->queries[q].status != GPUIDX_ENGINE_OK)
				harness_fail("query %u: status %s", q, engine_status_name(w->queries[q].status));
			res->result_bytes += (uint64_t) w->queries[q].out_count * sizeof(uint32_t);
		}
		res->launches += st.launches;
		res->list_bytes += st.list_bytes;
		res->bytes_returned += st.bytes_returned;
		res->host_seconds += st.host_seconds;
		res->device_seconds += st.device_seconds;
		res->return_seconds += st.return_seconds;
	}
	res->seconds = harness_now() - t0;
}

/* "host / device / return" shares of an engine's time, from its own stats */
static const char *
split(const result *r)
{
	static char buf[64];
	double		t = r->host_seconds + r->device_seconds + r->return_seconds;

	if (r->device_seconds == 0 || t <= 0)
		return "-";
	snprintf(buf, sizeof(buf), "%.0f / %.0f / %.0f", 100 * r->host_seconds / t,
			 100 * r->device_seconds / t, 100 * r->return_seconds / t);
	return buf;
}

/* median of 3 passes after a warm-up pass */
static void
measure(engine_handle *h, workload *w, uint32_t batch, result *res)
{
	result		r[3];

	run_pass(h, w, batch, &r[0]);
	for (int i = 0; i < 3; i++)
		run_pass(h, w, batch, &r[i]);
	for (int i = 0; i < 2; i++)
		for (int j = i + 1; j < 3; j++)
			if (r[j].seconds < r[i].seconds)
			{
				result		t = r[i];

				r[i] = r[j];
				r[j] = t;
			}
	*res = r[1];
}

/* the answers of two engines on the workload, compared */
static uint64_t
compare_answers(engine_handle *a, engine_handle *b, workload *w)
{
	uint32_t   *copy = harness_alloc(w->out_size * sizeof(uint32_t));
	uint32_t   *counts = harness_alloc(w->nqueries * sizeof(uint32_t));
	uint64_t	diffs = 0;
	result		r;

	run_pass(a, w, 4096, &r);
	memcpy(copy, w->out, w->out_size * sizeof(uint32_t));
	for (uint32_t q = 0; q < w->nqueries; q++)
		counts[q] = w->queries[q].out_count;
	run_pass(b, w, 4096, &r);
	for (uint32_t q = 0; q < w->nqueries; q++)
		if (counts[q] != w->queries[q].out_count ||
			memcmp(copy + (w->queries[q].out - w->out), w->queries[q].out,
				   (size_t) counts[q] * sizeof(uint32_t)) != 0)
			diffs++;
	free(copy);
	free(counts);
	return diffs;
}

static void
put_pack(engine_handle *h, const pack *p, uint64_t key_base)
{
	for (uint32_t i = 0; i < p->nlists; i++)
	{
		gpuidx_engine_error err;
		int			rc = h->api->cache_put(h->engine, key_base + i, p->lists[i], p->lens[i], &err);

		if (rc != GPUIDX_ENGINE_OK)
			harness_fail("cache_put: %s: %s", engine_status_name(rc), err.message);
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* each query alone, after a warm-up pass: p50 and p99 of its time end to end, µs */
static void
latency(engine_handle *h, workload *w, double *p50, double *p99)
{
	double	   *t = harness_alloc(w->nqueries * sizeof(double));
	result		r;

	run_pass(h, w, 1, &r);
	for (uint32_t q = 0; q < w->nqueries; q++)
	{
		gpuidx_engine_error err;
		double		t0 = harness_now();

		if (h->api->run_batch(h->engine, w->queries + q, 1, NULL, &err) != GPUIDX_ENGINE_OK)
			harness_fail("run_batch: %s", err.message);
		t[q] = (harness_now() - t0) * 1e6;
	}
	qsort(t, w->nqueries, sizeof(double), cmp_double);
	*p50 = t[w->nqueries / 2];
	*p99 = t[(uint32_t) (w->nqueries * 0.99)];
	free(t);
}

/* each query alone, asking for ids and for the count: p50 and p99 on the GPU and one core */
static void
print_latencies(engine_handle *gpu, engine_handle *cpu1, workload *cached, const char *name)
{
	printf("\n| one query at a time, cached | result | GPU p50 µs | GPU p99 µs | CPU 1 core p50 µs | CPU 1 core p99 µs |\n"
		   "|---|---|---:|---:|---:|---:|\n");
	for (int mode = 0; mode < 2; mode++)
	{
		uint32_t	ask = mode == 0 ? GPUIDX_RESULT_IDS : GPUIDX_RESULT_COUNT;
		double		g50,
					g99,
					c50,
					c99;

		workload_ask(cached, ask);
		latency(gpu, cached, &g50, &g99);
		latency(cpu1, cached, &c50, &c99);
		printf("| %s | %s | %.1f | %.1f | %.1f | %.1f |\n", name, result_name(ask), g50, g99, c50, c99);
	}
}

static void
bench_pack(engine_handle *gpu, engine_handle *cpu1, engine_handle *cpun, const char *path,
		   double copy_gbps)
{
	static const uint32_t all_batches[] = {1, 16, 256, 4096};
	const uint32_t *batches = only_batch ? &only_batch : all_batches;
	size_t		nbatch = only_batch ? 1 : sizeof(all_batches) / sizeof(all_batches[0]);
	pack		p;
	workload	cached,
				inlined;
	uint64_t	key_base = UINT64_C(0xBE) << 48;
	uint64_t	diffs;
	result		c1,
				cn;

	pack_load(&p, path);
	put_pack(gpu, &p, key_base);
	put_pack(cpu1, &p, key_base);
	put_pack(cpun, &p, key_base);
	workload_from_pack(&cached, &p, key_base, 0);
	workload_from_pack(&inlined, &p, key_base, 1);
	diffs = compare_answers(gpu, cpun, &cached) + compare_answers(gpu, cpun, &inlined);

	{
		result		r;

		run_pass(cpun, &cached, 4096, &r);
		printf("### %s: %u real queries, %u lists, %.1f MB of encoded lists read and %.1f MB of results "
			   "written per pass\n\n", p.name, cached.nqueries, p.nlists, cached.list_bytes / 1e6,
			   r.result_bytes / 1e6);
	}
	printf("Answers compared with the CPU engine first: %llu differences.\n\n", (unsigned long long) diffs);
	if (diffs != 0)
		harness_fail("%s: the GPU engine's answers differ from the CPU engine's", p.name);
	printf("| batch | result | engine | lists | queries/s | µs per batch | host / device / return %% | "
		   "GB/s of encoded lists | %% of copy bandwidth | launches per batch | vs CPU 1 core | vs CPU %u cores |\n",
		   cpun->info.multiprocessors);
	printf("|---:|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
	for (int mode = 0; mode < 2; mode++)
	{
		uint32_t	ask = mode == 0 ? GPUIDX_RESULT_IDS : GPUIDX_RESULT_COUNT;

		workload_ask(&cached, ask);
		workload_ask(&inlined, ask);
		for (size_t bi = 0; bi < nbatch; bi++)
		{
			uint32_t	b = batches[bi];
			uint32_t	nbatches = (cached.nqueries + b - 1) / b;
			result		g,
						gi;

			measure(cpu1, &cached, b, &c1);
			measure(cpun, &cached, b, &cn);
			measure(gpu, &cached, b, &g);
			if (ask == GPUIDX_RESULT_IDS)
				measure(gpu, &inlined, b, &gi);
#define ROW(label, kind, r) \
			printf("| %u | %s | %s | %s | %.0f | %.1f | %s | %.2f | %.2f%% | %.1f | %.2fx | %.2fx |\n", b, \
				   result_name(ask), label, kind, cached.nqueries / (r).seconds, (r).seconds / nbatches * 1e6, \
				   split(&(r)), cached.list_bytes / (r).seconds / 1e9, \
				   copy_gbps > 0 ? 100.0 * cached.list_bytes / (r).seconds / 1e9 / copy_gbps : 0.0, \
				   (double) (r).launches / nbatches, c1.seconds / (r).seconds, cn.seconds / (r).seconds)
			ROW("GPU", "cached", g);
			if (ask == GPUIDX_RESULT_IDS)
				ROW("GPU", "copied per batch", gi);
			ROW("CPU, 1 core", "host", c1);
			ROW("CPU, all cores", "host", cn);
#undef ROW
		}
	}
	if (!only_batch)
		print_latencies(gpu, cpu1, &cached, p.name);
	printf("\n");
	workload_free(&cached);
	workload_free(&inlined);
	for (uint32_t i = 0; i < p.nlists; i++)
	{
		gpu->api->cache_remove(gpu->engine, key_base + i);
		cpu1->api->cache_remove(cpu1->engine, key_base + i);
		cpun->api->cache_remove(cpun->engine, key_base + i);
	}
	pack_free(&p);
}

/*
 * Long lists of similar lengths (decoded and intersected whole): pairs of
 * lists of n postings each, density 1/4, sharing half their postings.
 */
static void
bench_long_lists(engine_handle *gpu, engine_handle *cpun)
{
	static const uint32_t sizes[] = {1000000, 10000000, 50000000};
	const uint32_t npairs = 16;

	printf("### Long lists: %u pairs of similar length, EF, cached, one batch\n\n", npairs);
	printf("| postings per list | result | encoded MB per batch | result MB | GPU ms | of which device ms | "
		   "of which return ms | G postings/s | G postings/s, device part | GB/s of encoded lists | "
		   "CPU all cores ms | GPU vs CPU |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
	{
		uint32_t	n = sizes[si];
		uint32_t   *v = harness_alloc((size_t) n * sizeof(uint32_t));
		uint8_t    *lists[2 * 16];
		uint64_t	lens[2 * 16];
		gpuidx_term_ref refs[16][2];
		gpuidx_query qs[16];
		uint32_t   *out = harness_alloc((size_t) npairs * n * sizeof(uint32_t));
		uint64_t	bytes = 0;
		workload	w;
		result		g,
					c;
		uint64_t	seed = 12345 + si;

		/* list 2q: gaps of 2..7; list 2q+1: the same ids, half of them moved up by one */
		for (uint32_t l = 0; l < 2 * npairs; l++)
		{
			uint32_t	x = 0;

			for (uint32_t i = 0; i < n; i++)
			{
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				if (l % 2 == 0)
				{
					x += 2 + (uint32_t) ((seed >> 33) % 6);
					v[i] = x;
				}
				else
					v[i] += (uint32_t) ((seed >> 40) & 1);
			}
			lens[l] = pl_encoded_size(GPUIDX_CODEC_EF, v, n);
			lists[l] = harness_alloc(lens[l]);
			pl_encode(GPUIDX_CODEC_EF, v, n, lists[l]);
			bytes += lens[l];
		}
		for (uint32_t l = 0; l < 2 * npairs; l++)
		{
			gpuidx_engine_error err;

			if (gpu->api->cache_put(gpu->engine, 7000 + l, lists[l], lens[l], &err) != GPUIDX_ENGINE_OK ||
				cpun->api->cache_put(cpun->engine, 7000 + l, lists[l], lens[l], &err) != GPUIDX_ENGINE_OK)
				harness_fail("cache_put of a long list: %s", err.message);
		}
		for (uint32_t q = 0; q < npairs; q++)
		{
			refs[q][0].key = 7000 + 2 * q;
			refs[q][0].bytes = NULL;
			refs[q][1].key = 7001 + 2 * q;
			refs[q][1].bytes = NULL;
			memset(&qs[q], 0, sizeof(qs[q]));
			qs[q].terms = refs[q];
			qs[q].nterms = 2;
			qs[q].out = out + (size_t) q * n;
			qs[q].out_capacity = n;
		}
		memset(&w, 0, sizeof(w));
		w.nqueries = npairs;
		w.queries = qs;
		w.out = out;
		w.out_size = (uint64_t) npairs * n;
		w.list_bytes = bytes;
		if (compare_answers(gpu, cpun, &w) != 0)
			harness_fail("long lists of %u: the GPU engine's answers differ", n);
		for (int mode = 0; mode < 2; mode++)
		{
			uint32_t	ask = mode == 0 ? GPUIDX_RESULT_IDS : GPUIDX_RESULT_COUNT;

			workload_ask(&w, ask);
			measure(gpu, &w, npairs, &g);
			measure(cpun, &w, npairs, &c);
			printf("| %u | %s | %.1f | %.1f | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.1f | %.1fx |\n", n,
				   result_name(ask), bytes / 1e6, g.bytes_returned / 1e6, g.seconds * 1e3,
				   g.device_seconds * 1e3, g.return_seconds * 1e3, 2.0 * npairs * n / g.seconds / 1e9,
				   g.device_seconds > 0 ? 2.0 * npairs * n / g.device_seconds / 1e9 : 0.0,
				   bytes / g.seconds / 1e9, c.seconds * 1e3, c.seconds / g.seconds);
		}
		for (uint32_t l = 0; l < 2 * npairs; l++)
		{
			gpu->api->cache_remove(gpu->engine, 7000 + l);
			cpun->api->cache_remove(cpun->engine, 7000 + l);
			free(lists[l]);
		}
		free(v);
		free(out);
	}
	printf("\n");
}

int
main(int argc, char **argv)
{
	const char *engine = NULL;
	const char *packs[16];
	int			npacks = 0;
	double		copy_gbps = 0;
	bool		long_lists = true;
	uint32_t	cores = (uint32_t) sysconf(_SC_NPROCESSORS_ONLN);
	gpuidx_engine_config gcfg = {sizeof(gcfg), 0, UINT64_C(16) << 30, UINT64_C(4) << 30, cores, 0};
	gpuidx_engine_config c1cfg = {sizeof(c1cfg), 0, UINT64_C(16) << 30, 0, 1, 0};
	gpuidx_engine_config cncfg = {sizeof(cncfg), 0, UINT64_C(16) << 30, 0, cores, 0};
	engine_handle gpu,
				cpu1,
				cpun;
	char		err[512];

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc)
			engine = argv[++i];
		else if (strcmp(argv[i], "--copy-gbps") == 0 && i + 1 < argc)
			copy_gbps = atof(argv[++i]);
		else if (strcmp(argv[i], "--pack") == 0 && i + 1 < argc && npacks < 16)
			packs[npacks++] = argv[++i];
		else if (strcmp(argv[i], "--no-long-lists") == 0)
			long_lists = false;
		else if (strcmp(argv[i], "--skip-ratio") == 0 && i + 1 < argc)
			gcfg.skip_ratio = (uint32_t) atol(argv[++i]);
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			only_batch = (uint32_t) atol(argv[++i]);
		else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc &&
				 (strcmp(argv[i + 1], "and") == 0 || strcmp(argv[i + 1], "andnot") == 0 ||
				  strcmp(argv[i + 1], "or") == 0))
			bench_op = argv[++i];
		else
			harness_fail("unknown argument %s", argv[i]);
	}
	if (engine == NULL)
		harness_fail("usage: gpu_bench --engine PATH [--copy-gbps X] [--pack FILE]... [--no-long-lists] "
					 "[--skip-ratio N] [--batch N] [--op and|andnot|or]");
	if (engine_open(&gpu, engine, &gcfg, err, sizeof(err)) != GPUIDX_ENGINE_OK ||
		engine_open(&cpu1, "cpu", &c1cfg, err, sizeof(err)) != GPUIDX_ENGINE_OK ||
		engine_open(&cpun, "cpu", &cncfg, err, sizeof(err)) != GPUIDX_ENGINE_OK)
		harness_fail("%s", err);
	printf("## GPU engine benchmark\n\n- engine: %s (%s, %s, %u SMs, %.0f GiB; %u host threads for large copies; "
		   "skip ratio %u)\n"
		   "- real queries: %s of their terms\n"
		   "- CPU engine: %u cores\n"
		   "- device copy bandwidth (measured in the same run, read + write): %.0f GB/s\n\n",
		   engine, gpu.info.kind, gpu.info.device_name, gpu.info.multiprocessors,
		   gpu.info.device_memory / 1073741824.0, cores, gcfg.skip_ratio ? gcfg.skip_ratio : 32,
		   strcmp(bench_op, "or") == 0 ? "the union" : strcmp(bench_op, "andnot") == 0 ?
		   "the intersection less the last" : "the intersection", cores, copy_gbps);
	for (int i = 0; i < npacks; i++)
		bench_pack(&gpu, &cpu1, &cpun, packs[i], copy_gbps);
	if (long_lists)
		bench_long_lists(&gpu, &cpun);
	engine_close(&gpu);
	engine_close(&cpu1);
	engine_close(&cpun);
	return 0;
}
