/*
 * sort.c
 *	  Sorting document ids: LSD radix sort (three 11-bit digits, digits that
 *	  all keys share are skipped), then dropping duplicates.  Building lists
 *	  from unsorted input (aggregates, array casts, text) goes through here.
 */
#include "cpu.h"

#include <string.h>

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)
#define RADIX_MASK (RADIX_SIZE - 1)

static void
insertion_sort(uint32_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
	{
		uint32_t	x = v[i];
		size_t		j = i;

		while (j > 0 && v[j - 1] > x)
		{
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

void
cpu_sort_u32(uint32_t *v, size_t n, uint32_t *tmp)
{
	static const int shifts[3] = {0, 11, 22};
	uint32_t   *src = v;
	uint32_t   *dst = tmp;

	if (n <= 64)
	{
		insertion_sort(v, n);
		return;
	}
	for (int pass = 0; pass < 3; pass++)
	{
		size_t		count[RADIX_SIZE];
		size_t		sum = 0;
		int			shift = shifts[pass];
		uint32_t   *t;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & RADIX_MASK]++;
		/* every key has the same digit: this pass would only copy */
		if (count[(src[0] >> shift) & RADIX_MASK] == n)
			continue;
		for (size_t d = 0; d < RADIX_SIZE; d++)
		{
			size_t		c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & RADIX_MASK]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(uint32_t));
}

size_t
cpu_unique_u32(uint32_t *v, size_t n)
{
	size_t		k = 0;

	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[i] != v[k - 1])
			v[k++] = v[i];
	return k;
}
