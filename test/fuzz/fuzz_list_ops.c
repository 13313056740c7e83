/*
 * fuzz_list_ops.c
 *	  libFuzzer target: two or three encoded lists whose checksums are
 *	  repaired (structurally arbitrary, valid by CRC, as a damaged page with a
 *	  matching CRC would be), through every set operation of src/cpu.
 *
 * Input: control byte (bit 0: a third list), limit (2 bytes), then each list
 * as a 2-byte length and its bytes; the last list takes the rest.  The lists
 * may hold unordered ids: then an operation answers CPU_CORRUPT or results
 * that are in order, within their room and (from an array) in the array;
 * when every list passes pl_validate the results must match the plain
 * references.
 * Arrays handed to the array x list functions are always sorted and distinct,
 * as their contract asks; the list side is the untrusted one.
 */
#include "fuzz_common.h"

#define MAX_LISTS 3

typedef struct fuzz_list
{
	uint8_t    *bytes;
	pl_view		view;
	bool		valid;			/* pl_validate passed */
	uint32_t   *ids;			/* sorted distinct ids of the decode */
	uint32_t	n;
} fuzz_list;

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* the decoded ids, sorted and without repeats (qsort: no trust in cpu_sort here) */
static void
list_ids(fuzz_list *l)
{
	uint32_t	k = 0;

	l->ids = fuzz_alloc_u32(l->view.count);
	(void) pl_decode(&l->view, l->ids);
	qsort(l->ids, l->view.count, sizeof(uint32_t), cmp_u32);
	for (uint32_t i = 0; i < l->view.count; i++)
		if (k == 0 || l->ids[i] != l->ids[k - 1])
			l->ids[k++] = l->ids[i];
	l->n = k;
}

static uint32_t
min3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t	m = a < b ? a : b;

	return m < c ? m : c;
}

/*
 * What an operation may answer: when check, exactly want[0..nwant); else
 * (a list is damaged) CPU_CORRUPT, or a count within the room whose results
 * strictly increase and, where they come from array 'from', lie in it.
 */
static void
check_answer(const char *what, int method, uint32_t limit, const uint32_t *out, uint32_t n, uint32_t room,
			 const fuzz_list *from, bool check, const uint32_t *want, uint32_t nwant)
{
	if (check)
	{
		FUZZ_CHECK(n != CPU_CORRUPT && ref_same(out, n, want, nwant), "%s/%s limit %u: %u results, want %u",
				   what, fuzz_method_names[method], limit, n, nwant);
		return;
	}
	if (n == CPU_CORRUPT)
		return;
	FUZZ_CHECK(n <= room, "%s/%s limit %u: %u results, room %u", what, fuzz_method_names[method], limit, n, room);
	FUZZ_CHECK(ref_sorted_distinct(out, n), "%s/%s: results out of order", what, fuzz_method_names[method]);
	if (from != NULL)
		for (uint32_t i = 0; i < n; i++)
			FUZZ_CHECK(ref_contains(from->ids, from->n, out[i]), "%s/%s: %u is not in the array",
					   what, fuzz_method_names[method], out[i]);
}

/* a's ids, b the list: every array x list operation */
static void
array_ops(const fuzz_list *a, const fuzz_list *b, uint32_t limit, bool check, uint32_t *want)
{
	uint32_t	ninter = 0;
	uint32_t   *out;
	uint32_t	n;

	for (int m = 0; m < 3; m++)
	{
		uint32_t	limits[3] = {0, 1, limit};

		if (check)
			ninter = ref_intersect(a->ids, a->n, b->ids, b->n, want);
		for (int li = 0; li < 3; li++)
		{
			uint32_t	lim = limits[li];
			uint32_t	room = lim == 0 ? a->n : (a->n < lim ? a->n : lim);

			out = fuzz_alloc_u32(room);
			n = cpu_intersect_array_list(a->ids, a->n, &b->view, out, (cpu_method) m, lim, NULL);
			check_answer("array-list", m, lim, out, n, room, a, check, want,
						 lim != 0 && ninter > lim ? lim : ninter);
			free(out);
		}
		/* in place: out is a */
		out = fuzz_alloc_u32(a->n);
		if (a->n > 0)
			memcpy(out, a->ids, (size_t) a->n * sizeof(uint32_t));
		n = cpu_intersect_array_list(out, a->n, &b->view, out, (cpu_method) m, 0, NULL);
		check_answer("array-list in place", m, 0, out, n, a->n, a, check, want, ninter);
		free(out);

		/* difference, into a fresh buffer and in place */
		{
			uint32_t	ndiff = check ? ref_difference(a->ids, a->n, b->ids, b->n, want) : 0;

			out = fuzz_alloc_u32(a->n);
			if (a->n > 0)
				memcpy(out, a->ids, (size_t) a->n * sizeof(uint32_t));
			n = cpu_difference_array_list(out, a->n, &b->view, out, (cpu_method) m, NULL);
			check_answer("difference in place", m, 0, out, n, a->n, a, check, want, ndiff);
			free(out);
			out = fuzz_alloc_u32(a->n);
			n = cpu_difference_array_list(a->ids, a->n, &b->view, out, (cpu_method) m, NULL);
			check_answer("difference", m, 0, out, n, a->n, a, check, want, ndiff);
			free(out);
		}
	}

	out = fuzz_alloc_u32((size_t) a->n + b->view.count);
	n = cpu_union_array_list(a->ids, a->n, &b->view, out);
	{
		uint32_t   *u = fuzz_alloc_u32((size_t) a->n + b->n);
		uint32_t	nunion = check ? ref_union(a->ids, a->n, b->ids, b->n, u) : 0;

		check_answer("union", 0, 0, out, n, a->n + b->view.count, NULL, check, u, nunion);
		free(u);
	}
	free(out);
}

/* both lists compressed: intersections by every method and limit, equality */
static void
list_ops(const fuzz_list *a, const fuzz_list *b, uint32_t limit, bool check, uint32_t *want)
{
	uint32_t	limits[4] = {0, 1, limit, 7};
	uint32_t	ninter = check ? ref_intersect(a->ids, a->n, b->ids, b->n, want) : 0;
	cpu_stats	stats;
	pl_status	st;
	bool		equal = false;

	for (int m = 0; m < 3; m++)
		for (int li = 0; li < 4; li++)
		{
			uint32_t	lim = limits[li];
			uint32_t	room = min3(a->view.count, b->view.count, lim == 0 ? UINT32_MAX : lim);
			uint32_t   *out;
			uint32_t	n;

			out = fuzz_alloc_u32(room);
			memset(&stats, 0, sizeof(stats));
			n = cpu_intersect_lists(&a->view, &b->view, out, (cpu_method) m, lim, &stats);
			check_answer("lists", m, lim, out, n, room, NULL, check, want,
						 lim != 0 && ninter > lim ? lim : ninter);
			free(out);
		}
	st = cpu_lists_equal(&a->view, &b->view, &equal);
	FUZZ_CHECK(st == PL_OK || (st == PL_ERR_ORDER && !check), "lists_equal: %s", pl_status_message(st));
	if (check)
		FUZZ_CHECK(equal == ref_same(a->ids, a->n, b->ids, b->n), "lists_equal says %d", equal);
	else if (st == PL_OK && equal)
		FUZZ_CHECK(a->view.count == b->view.count, "lists of %u and %u postings equal",
				   a->view.count, b->view.count);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in		in = {data, size};
	uint32_t	ctl = fuzz_u8(&in);
	uint32_t	limit = fuzz_u16(&in);
	int			nlists = (ctl & 1) ? 3 : 2;
	fuzz_list	lists[MAX_LISTS];
	const pl_view *views[MAX_LISTS + 1];
	int			nopen = 0;
	bool		all_valid = true;
	uint32_t	maxn = 0;
	uint32_t   *want;

	memset(lists, 0, sizeof(lists));
	for (int i = 0; i < nlists; i++)
	{
		size_t		len;
		const uint8_t *p;

		len = i + 1 < nlists ? fuzz_u16(&in) : in.n;
		p = fuzz_take(&in, len, &len);
		lists[nopen].bytes = fuzz_copy(p, len);
		fuzz_fix_checksum(lists[nopen].bytes, len);
		if (pl_open(&lists[nopen].view, lists[nopen].bytes, len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK)
		{
			free(lists[nopen].bytes);
			continue;
		}
		lists[nopen].valid = pl_validate(&lists[nopen].view) == PL_OK;
		all_valid &= lists[nopen].valid;
		list_ids(&lists[nopen]);
		if (lists[nopen].n > maxn)
			maxn = lists[nopen].n;
		nopen++;
	}
	if (nopen == 0)
		return 0;
	/* room for any reference result: a union of two lists */
	want = fuzz_alloc_u32(2 * (size_t) maxn);

	for (int i = 0; i < nopen; i++)
		for (int j = 0; j < nopen; j++)
		{
			bool		check = lists[i].valid && lists[j].valid;

			list_ops(&lists[i], &lists[j], limit, check, want);
			array_ops(&lists[i], &lists[j], limit, check, want);
		}

	/* k lists, shortest first, by every method; also one list twice */
	for (int m = 0; m < 3; m++)
	{
		uint32_t	shortest = UINT32_MAX;
		uint32_t   *out;
		uint32_t	n;
		uint32_t	nwant = 0;
		int			k = nopen;

		for (int i = 0; i < nopen; i++)
			views[i] = &lists[i].view;
		if (m == 2)
			views[k++] = &lists[0].view;
		for (int i = 0; i < k; i++)
			if (views[i]->count < shortest)
				shortest = views[i]->count;
		out = fuzz_alloc_u32(shortest);
		n = cpu_intersect_k(views, k, out, (cpu_method) m, NULL);
		if (all_valid)
		{
			nwant = lists[0].n;
			memcpy(want, lists[0].ids, (size_t) nwant * sizeof(uint32_t));
			for (int i = 1; i < nopen; i++)
				nwant = ref_intersect(want, nwant, lists[i].ids, lists[i].n, want);
		}
		check_answer("intersect_k", m, 0, out, n, shortest, NULL, all_valid, want, nwant);
		free(out);
	}

	free(want);
	for (int i = 0; i < nopen; i++)
	{
		free(lists[i].bytes);
		free(lists[i].ids);
	}
	return 0;
}
