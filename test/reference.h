/*
 * reference.h
 *	  Plain set operations over sorted, distinct uint32 arrays: what the unit
 *	  tests and the fuzz targets compare the codecs and src/cpu against.
 *	  Written for obviousness, not speed.  out may be a (intersect,
 *	  difference), never for union.
 */
#ifndef GPUIDX_TEST_REFERENCE_H
#define GPUIDX_TEST_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* first index with a[i] >= x */
static inline uint32_t
ref_lower_bound(const uint32_t *a, uint32_t n, uint64_t x)
{
	uint32_t	lo = 0;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static inline bool
ref_contains(const uint32_t *a, uint32_t n, uint64_t x)
{
	uint32_t	k = ref_lower_bound(a, n, x);

	return k < n && a[k] == x;
}

static inline uint32_t
ref_intersect(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb, uint32_t *out)
{
	uint32_t	i = 0,
				j = 0,
				k = 0;

	while (i < na && j < nb)
	{
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
		{
			out[k++] = a[i];
			i++;
			j++;
		}
	}
	return k;
}

static inline uint32_t
ref_union(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb, uint32_t *out)
{
	uint32_t	i = 0,
				j = 0,
				k = 0;

	while (i < na || j < nb)
	{
		if (j >= nb || (i < na && a[i] < b[j]))
			out[k++] = a[i++];
		else if (i >= na || b[j] < a[i])
			out[k++] = b[j++];
		else
		{
			out[k++] = a[i++];
			j++;
		}
	}
	return k;
}

static inline uint32_t
ref_difference(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb, uint32_t *out)
{
	uint32_t	j = 0,
				k = 0;

	for (uint32_t i = 0; i < na; i++)
	{
		while (j < nb && b[j] < a[i])
			j++;
		if (j == nb || b[j] != a[i])
			out[k++] = a[i];
	}
	return k;
}

static inline bool
ref_same(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, (size_t) na * sizeof(uint32_t)) == 0);
}

/* strictly increasing: what pl_validate promises of an accepted list */
static inline bool
ref_sorted_distinct(const uint32_t *a, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (a[i] <= a[i - 1])
			return false;
	return true;
}

#endif							/* GPUIDX_TEST_REFERENCE_H */
