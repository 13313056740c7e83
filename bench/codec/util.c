/*
 * util.c
 *	  Helpers of the codec benchmark: timing, allocation, the reference
 *	  intersection and encoding a set of lists into one arena.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile uint64_t bench_sink;

void
bench_fail(const char *fmt,...)
{
	va_list		ap;

	fflush(stdout);
	fputs("codec_bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *
bench_alloc(size_t size)
{
	void	   *p = malloc(size > 0 ? size : 1);

	if (p == NULL)
		bench_fail("out of memory allocating %zu bytes", size);
	return p;
}

double
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

#define BENCH_MAX_SAMPLES 16

/*
 * Median seconds per call of fn over nsamples samples, each repeating fn for
 * at least min_sample seconds.  A first call warms caches and calibrates the
 * repeat count, so short calls are not dominated by the clock.
 */
double
bench_time_per_call(bench_fn fn, void *arg, double min_sample, int nsamples)
{
	double		samples[BENCH_MAX_SAMPLES];
	double		t0 = bench_now();
	double		once;
	uint64_t	reps;

	if (nsamples < 1 || nsamples > BENCH_MAX_SAMPLES)
		bench_fail("bad sample count %d", nsamples);
	fn(arg);
	once = bench_now() - t0;
	reps = once >= min_sample ? 1 : (uint64_t) (min_sample / (once > 1e-7 ? once : 1e-7)) + 1;
	for (int s = 0; s < nsamples; s++)
	{
		t0 = bench_now();
		for (uint64_t r = 0; r < reps; r++)
			fn(arg);
		samples[s] = (bench_now() - t0) / (double) reps;
	}
	qsort(samples, (size_t) nsamples, sizeof(double), cmp_double);
	return samples[nsamples / 2];
}

/* lists start on 8-byte boundaries, as they would in a varlena or a page */
#define ARENA_ALIGN(x) (((x) + 7) & ~(uint64_t) 7)

void
bench_encode(bench_encoded *enc, int codec, const bench_list *const *lists, uint32_t n)
{
	uint64_t	total = 0;
	uint64_t	pos = 0;

	for (uint32_t i = 0; i < n; i++)
		total += ARENA_ALIGN(pl_encoded_size(codec, lists[i]->docs, lists[i]->n));
	enc->arena = bench_alloc(total);
	enc->views = bench_alloc((size_t) n * sizeof(pl_view));
	enc->bytes = 0;
	for (uint32_t i = 0; i < n; i++)
	{
		size_t		size = pl_encoded_size(codec, lists[i]->docs, lists[i]->n);
		pl_status	st;

		if (pl_encode(codec, lists[i]->docs, lists[i]->n, enc->arena + pos) != size)
			bench_fail("codec %d: pl_encode wrote other than pl_encoded_size bytes", codec);
		st = pl_open(&enc->views[i], enc->arena + pos, size, PL_OPEN_VERIFY_CHECKSUM);
		if (st != PL_OK)
			bench_fail("codec %d: encoded list does not open: %s", codec, pl_status_message(st));
		pos += ARENA_ALIGN(size);
		enc->bytes += size;
	}
}

void
bench_encoded_free(bench_encoded *enc)
{
	free(enc->arena);
	free(enc->views);
}
