/*
 * unit.h
 *	  A minimal harness for the standalone C unit tests: checks that count
 *	  failures instead of aborting, a seeded generator, and the reference
 *	  list shapes shared by the codec and set-operation tests.
 */
#ifndef GPUIDX_UNIT_H
#define GPUIDX_UNIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long unit_checks;
static long unit_failures;

#define CHECK(cond, ...) \
	do { \
		unit_checks++; \
		if (!(cond)) \
		{ \
			unit_failures++; \
			if (unit_failures <= 20) \
			{ \
				fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
				fprintf(stderr, __VA_ARGS__); \
				fputc('\n', stderr); \
			} \
		} \
	} while (0)

static inline int
unit_report(const char *name)
{
	printf("%s: %ld checks, %ld failures\n", name, unit_checks, unit_failures);
	return unit_failures == 0 ? 0 : 1;
}

/* splitmix64: small, fast, good enough for test data */
static uint64_t unit_rng_state = 20261123;

static inline uint64_t
unit_rand64(void)
{
	uint64_t	z = (unit_rng_state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static inline uint32_t
unit_rand_below(uint64_t n)
{
	return (uint32_t) (unit_rand64() % n);
}

static inline void *
unit_alloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

/* n distinct sorted values: gaps drawn from 1..max_gap (clamped to uint32) */
static inline uint32_t
unit_gen_gaps(uint32_t *out, uint32_t n, uint32_t start, uint64_t max_gap)
{
	uint64_t	v = start;
	uint32_t	k = 0;

	for (; k < n; k++)
	{
		if (v > UINT32_MAX)
			break;
		out[k] = (uint32_t) v;
		v += 1 + (max_gap > 1 ? unit_rand_below(max_gap) : 0);
	}
	return k;
}

/* n distinct sorted values sampled uniformly from [0, universe) (n << universe) */
static inline int
unit_cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

static inline uint32_t
unit_gen_uniform(uint32_t *out, uint32_t n, uint64_t universe)
{
	uint32_t	k = 0;

	for (uint32_t i = 0; i < n; i++)
		out[i] = (uint32_t) (unit_rand64() % universe);
	qsort(out, n, sizeof(uint32_t), unit_cmp_u32);
	for (uint32_t i = 0; i < n; i++)
		if (k == 0 || out[i] != out[k - 1])
			out[k++] = out[i];
	return k;
}

#endif							/* GPUIDX_UNIT_H */
