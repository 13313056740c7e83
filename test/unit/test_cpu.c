/*
 * test_cpu.c
 *	  Intersection (merge, skip, auto; two lists, array x list, k lists),
 *	  union and difference on compressed lists of every codec, against plain
 *	  sorted-array references, across length ratios 1..100,000.
 */
#include "unit.h"
#include "../../src/cpu/cpu.h"
#include "../reference.h"

#include <stdbool.h>

static const char *const codec_names_cpu[] = {"raw", "ef", "lrc"};

typedef struct enc_list
{
	uint8_t    *bytes;
	pl_view		view;
	uint32_t   *values;
	uint32_t	n;
} enc_list;

static void
enc_make(enc_list *l, const uint32_t *v, uint32_t n, int codec)
{
	size_t		len = pl_encoded_size(codec, v, n);
	pl_status	st;

	l->bytes = unit_alloc(len);
	pl_encode(codec, v, n, l->bytes);
	st = pl_open(&l->view, l->bytes, len, PL_OPEN_VERIFY_CHECKSUM);
	CHECK(st == PL_OK, "open: %s", pl_status_message(st));
	l->values = unit_alloc((size_t) n * sizeof(uint32_t));
	memcpy(l->values, v, (size_t) n * sizeof(uint32_t));
	l->n = n;
}

static void
enc_free(enc_list *l)
{
	free(l->bytes);
	free(l->values);
}

static bool
same(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
	return na == nb && memcmp(a, b, (size_t) na * sizeof(uint32_t)) == 0;
}

/*
 * A long list and a short one that shares a fraction of its postings with it,
 * so intersections are neither empty nor everything.
 */
static uint32_t
gen_related(uint32_t *out, const uint32_t *base, uint32_t nbase, uint32_t n, uint64_t universe, int share_pct)
{
	for (uint32_t i = 0; i < n; i++)
		out[i] = (nbase > 0 && (int) unit_rand_below(100) < share_pct)
			? base[unit_rand_below(nbase)]
			: (uint32_t) (unit_rand64() % universe);
	qsort(out, n, sizeof(uint32_t), unit_cmp_u32);
	{
		uint32_t	k = 0;

		for (uint32_t i = 0; i < n; i++)
			if (k == 0 || out[i] != out[k - 1])
				out[k++] = out[i];
		return k;
	}
}

static const char *const methods[] = {"auto", "merge", "skip"};

static void
check_pair(const enc_list *a, const enc_list *b, const char *what)
{
	uint32_t	cap = (a->n > b->n ? a->n : b->n) + 1;
	uint32_t   *want = unit_alloc((size_t) cap * 2 * sizeof(uint32_t));
	uint32_t   *got = unit_alloc((size_t) cap * 2 * sizeof(uint32_t));
	uint32_t	nwant = ref_intersect(a->values, a->n, b->values, b->n, want);

	for (int m = 0; m < 3; m++)
	{
		cpu_stats	stats = {0};
		uint32_t	n = cpu_intersect_lists(&a->view, &b->view, got, (cpu_method) m, 0, &stats);

		CHECK(same(got, n, want, nwant), "%s lists/%s: %u vs %u", what, methods[m], n, nwant);
		CHECK(stats.blocks_touched <= stats.blocks_total, "%s: touched more blocks than exist", what);
		{
			uint32_t   *one = unit_alloc(sizeof(uint32_t));

			n = cpu_intersect_lists(&a->view, &b->view, one, (cpu_method) m, 1, NULL);
			CHECK(n == (nwant > 0) && (n == 0 || one[0] == want[0]), "%s lists/%s limit 1", what, methods[m]);
			n = cpu_intersect_array_list(a->values, a->n, &b->view, one, (cpu_method) m, 1, NULL);
			CHECK(n == (nwant > 0) && (n == 0 || one[0] == want[0]), "%s array-list/%s limit 1", what, methods[m]);
			free(one);
		}
		/* array x list, both ways, and in place */
		n = cpu_intersect_array_list(a->values, a->n, &b->view, got, (cpu_method) m, 0, NULL);
		CHECK(same(got, n, want, nwant), "%s array-list/%s", what, methods[m]);
		memcpy(got, b->values, (size_t) b->n * sizeof(uint32_t));
		n = cpu_intersect_array_list(got, b->n, &a->view, got, (cpu_method) m, 0, NULL);
		CHECK(same(got, n, want, nwant), "%s array-list in place/%s", what, methods[m]);
		/* difference both ways */
		nwant = ref_difference(a->values, a->n, b->values, b->n, want);
		n = cpu_difference_array_list(a->values, a->n, &b->view, got, (cpu_method) m, NULL);
		CHECK(same(got, n, want, nwant), "%s a-b/%s", what, methods[m]);
		nwant = ref_difference(b->values, b->n, a->values, a->n, want);
		memcpy(got, b->values, (size_t) b->n * sizeof(uint32_t));
		n = cpu_difference_array_list(got, b->n, &a->view, got, (cpu_method) m, NULL);
		CHECK(same(got, n, want, nwant), "%s b-a in place/%s", what, methods[m]);
		nwant = ref_intersect(a->values, a->n, b->values, b->n, want);
	}
	{
		uint32_t	n = cpu_union_array_list(a->values, a->n, &b->view, got);
		uint32_t	nu = cpu_merge_union(a->values, a->n, b->values, b->n, want);
		uint32_t	i = 0,
					j = 0,
					k = 0;
		bool		ok = true;

		/* check the reference union independently */
		while (i < a->n || j < b->n)
		{
			uint32_t	x;

			if (j >= b->n || (i < a->n && a->values[i] < b->values[j]))
				x = a->values[i++];
			else if (i >= a->n || b->values[j] < a->values[i])
				x = b->values[j++];
			else
			{
				x = a->values[i++];
				j++;
			}
			ok = ok && k < nu && want[k] == x;
			k++;
		}
		CHECK(ok && k == nu, "%s: merge union", what);
		CHECK(same(got, n, want, nu), "%s: union %u vs %u", what, n, nu);
	}
	free(want);
	free(got);
}

static void
check_k(int k, uint64_t universe, uint32_t longest)
{
	enc_list	lists[8];
	const pl_view *views[8];
	uint32_t   *tmp = unit_alloc(((size_t) longest + 1) * sizeof(uint32_t));
	uint32_t   *want = unit_alloc(((size_t) longest + 1) * sizeof(uint32_t));
	uint32_t   *got = unit_alloc(((size_t) longest + 1) * sizeof(uint32_t));
	uint32_t	nwant = 0;
	uint32_t	first_n = 0;

	for (int i = 0; i < k; i++)
	{
		uint32_t	len = 1 + unit_rand_below(longest);
		uint32_t	n = gen_related(tmp, i ? lists[0].values : NULL, i ? lists[0].n : 0, len, universe, 60);

		enc_make(&lists[i], tmp, n, unit_rand_below(GPUIDX_NUM_CODECS));
		views[i] = &lists[i].view;
		if (i == 0)
		{
			memcpy(want, tmp, (size_t) n * sizeof(uint32_t));
			nwant = n;
			first_n = n;
		}
		else
			nwant = ref_intersect(want, nwant, tmp, n, want);
	}
	(void) first_n;
	for (int m = 0; m < 3; m++)
	{
		cpu_stats	stats = {0};
		const pl_view *order[8];
		uint32_t	n;

		memcpy(order, views, sizeof(order));
		n = cpu_intersect_k(order, k, got, (cpu_method) m, &stats);
		CHECK(same(got, n, want, nwant), "k=%d/%s: %u vs %u", k, methods[m], n, nwant);
		for (int i = 1; i < k; i++)
			CHECK(order[i - 1]->count <= order[i]->count, "k=%d: not shortest first", k);
	}
	for (int i = 0; i < k; i++)
		enc_free(&lists[i]);
	free(tmp);
	free(want);
	free(got);
}

/* radix sort and unique against qsort, equality across codecs */
static void
check_sort_and_equal(void)
{
	static const uint32_t sizes[] = {0, 1, 2, 63, 64, 65, 1000, 100000, 3000000};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int shape = 0; shape < 3; shape++)
		{
			uint32_t	n = sizes[s];
			uint32_t   *v = unit_alloc(((size_t) n + 1) * sizeof(uint32_t));
			uint32_t   *ref = unit_alloc(((size_t) n + 1) * sizeof(uint32_t));
			uint32_t   *tmp = unit_alloc(((size_t) n + 1) * sizeof(uint32_t));
			size_t		nu,
						nr = 0;

			for (uint32_t i = 0; i < n; i++)
				v[i] = shape == 0 ? (uint32_t) unit_rand64()
					: shape == 1 ? unit_rand_below(1000) : 0xABC00000u + unit_rand_below(2048);
			memcpy(ref, v, (size_t) n * sizeof(uint32_t));
			qsort(ref, n, sizeof(uint32_t), unit_cmp_u32);
			cpu_sort_u32(v, n, tmp);
			CHECK(memcmp(v, ref, (size_t) n * sizeof(uint32_t)) == 0, "radix sort n=%u shape=%d", n, shape);
			nu = cpu_unique_u32(v, n);
			for (uint32_t i = 0; i < n; i++)
				if (nr == 0 || ref[i] != ref[nr - 1])
					ref[nr++] = ref[i];
			CHECK(nu == nr && memcmp(v, ref, nr * sizeof(uint32_t)) == 0, "unique n=%u shape=%d", n, shape);
			if (nu > 0)
			{
				enc_list	lists[GPUIDX_NUM_CODECS];

				for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
					enc_make(&lists[c], v, (uint32_t) nu, c);
				for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
					for (int d = 0; d < GPUIDX_NUM_CODECS; d++)
					{
						bool		equal = false;

						CHECK(cpu_lists_equal(&lists[c].view, &lists[d].view, &equal) == PL_OK && equal,
							  "equal %d %d", c, d);
					}
				enc_free(&lists[1]);
				v[nu / 2] ^= 1;
				if (nu / 2 + 1 < nu && v[nu / 2] >= v[nu / 2 + 1])
					v[nu / 2] ^= 1;
				else if (nu / 2 > 0 && v[nu / 2] <= v[nu / 2 - 1])
					v[nu / 2] ^= 1;
				enc_make(&lists[1], v, (uint32_t) nu, GPUIDX_CODEC_EF);
				{
					bool		equal = true;

					CHECK(cpu_lists_equal(&lists[0].view, &lists[1].view, &equal) == PL_OK &&
						  equal == (memcmp(v, lists[0].values, nu * sizeof(uint32_t)) == 0), "unequal n=%zu", nu);
				}
				for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
					enc_free(&lists[c]);
			}
			free(v);
			free(ref);
			free(tmp);
		}
}

/* is out[0..n) strictly increasing? */
static bool
increasing(const uint32_t *out, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (out[i] <= out[i - 1])
			return false;
	return true;
}

/*
 * Set operations on damaged lists (random bytes changed, checksum fixed):
 * each either reports CPU_CORRUPT or answers as on the list's decoded
 * postings when those are sound, and never hands out ids out of order.
 */
static void
check_damaged(int codec, uint32_t *buf)
{
	long		corrupt = 0;
	long		answered = 0;

	for (int r = 0; r < 1500; r++)
	{
		uint32_t	n = unit_gen_gaps(buf, 200 + unit_rand_below(3000), unit_rand_below(1000), 1 + unit_rand_below(40));
		enc_list	good,
					bad;
		size_t		len = pl_encoded_size(codec, buf, n);
		uint32_t   *decoded = unit_alloc(((size_t) n + GPUIDX_LRC_SEGMENT) * sizeof(uint32_t));
		uint32_t   *out = unit_alloc(((size_t) 2 * n + 1) * sizeof(uint32_t));
		uint32_t   *ref = unit_alloc(((size_t) 2 * n + 1) * sizeof(uint32_t));
		bool		in_order;
		bool		sound;
		bool		equal;
		pl_status	st;

		enc_make(&good, buf, n, codec);
		bad.bytes = unit_alloc(len);
		memcpy(bad.bytes, good.bytes, len);
		for (int e = 0; e < 3; e++)
			bad.bytes[GPUIDX_HEADER_SIZE + unit_rand_below(len - GPUIDX_HEADER_SIZE)] = (uint8_t) unit_rand64();
		{
			uint32_t	crc = pl_list_checksum(bad.bytes, len);

			memcpy(bad.bytes + 12, &crc, 4);
		}
		if (pl_open(&bad.view, bad.bytes, len, PL_OPEN_VERIFY_CHECKSUM) != PL_OK)
		{
			free(bad.bytes);
			enc_free(&good);
			free(decoded);
			free(out);
			free(ref);
			continue;
		}
		in_order = pl_decode(&bad.view, decoded) == PL_OK;
		/* sound: in order, and (LRC) every deviation within its bound */
		sound = in_order && pl_validate(&bad.view) == PL_OK;
		for (int m = 0; m < 3; m++)
		{
			cpu_method	method = (cpu_method) m;
			uint32_t	k;

			/* both orders of a two-list intersection, and array x list */
			for (int side = 0; side < 2; side++)
			{
				k = side ? cpu_intersect_lists(&bad.view, &good.view, out, method, 0, NULL)
					: cpu_intersect_lists(&good.view, &bad.view, out, method, 0, NULL);
				if (k == CPU_CORRUPT)
					corrupt++;
				else
				{
					answered++;
					CHECK(increasing(out, k), "damaged %s: intersection out of order", codec_names_cpu[codec]);
					if (sound)
						CHECK(k == ref_intersect(decoded, bad.view.count, buf, n, ref) &&
							  memcmp(out, ref, (size_t) k * sizeof(uint32_t)) == 0,
							  "damaged %s: sound list, wrong intersection", codec_names_cpu[codec]);
				}
			}
			k = cpu_intersect_array_list(buf, n, &bad.view, out, method, 0, NULL);
			CHECK(k == CPU_CORRUPT || increasing(out, k), "damaged %s: array intersection out of order",
				  codec_names_cpu[codec]);
			k = cpu_difference_array_list(buf, n, &bad.view, out, method, NULL);
			CHECK(k == CPU_CORRUPT || increasing(out, k), "damaged %s: difference out of order",
				  codec_names_cpu[codec]);
			if (sound && k != CPU_CORRUPT)
				CHECK(k == ref_difference(buf, n, decoded, bad.view.count, ref) &&
					  memcmp(out, ref, (size_t) k * sizeof(uint32_t)) == 0,
					  "damaged %s: sound list, wrong difference", codec_names_cpu[codec]);
		}
		{
			uint32_t	k = cpu_union_array_list(buf, n, &bad.view, out);

			CHECK(k == CPU_CORRUPT || increasing(out, k), "damaged %s: union out of order", codec_names_cpu[codec]);
			CHECK(in_order == (k != CPU_CORRUPT), "damaged %s: union reads every block, so it must tell",
				  codec_names_cpu[codec]);
		}
		st = cpu_lists_equal(&good.view, &bad.view, &equal);
		CHECK(st == PL_OK || st == PL_ERR_ORDER, "damaged %s: equality status", codec_names_cpu[codec]);
		CHECK(st != PL_OK || !sound || equal == (bad.view.count == n &&
												 memcmp(decoded, buf, (size_t) n * sizeof(uint32_t)) == 0),
			  "damaged %s: equality", codec_names_cpu[codec]);
		free(bad.bytes);
		enc_free(&good);
		free(decoded);
		free(out);
		free(ref);
	}
	printf("damaged %s lists: %ld operations reported damage, %ld answered\n", codec_names_cpu[codec], corrupt, answered);
	CHECK(corrupt > 0 && answered > 0, "damaged %s: both outcomes reached", codec_names_cpu[codec]);
}

int
main(void)
{
	static const uint32_t ratios[] = {1, 2, 3, 8, 16, 50, 128, 500, 1000, 5000, 10000, 100000};
	static const uint64_t universes[] = {UINT64_C(1) << 12, UINT64_C(1) << 20, UINT64_C(1) << 26, UINT64_C(1) << 32};
	uint32_t   *buf = unit_alloc(2100000 * sizeof(uint32_t));

	for (size_t u = 0; u < sizeof(universes) / sizeof(universes[0]); u++)
		for (size_t r = 0; r < sizeof(ratios) / sizeof(ratios[0]); r++)
			for (int rep = 0; rep < 3; rep++)
			{
				uint64_t	universe = universes[u];
				uint32_t	nlong = (uint32_t) (ratios[r] * (uint64_t) (1 + unit_rand_below(20)));
				uint32_t	nshort;
				enc_list	a,
							b;
				char		what[96];

				if (nlong > 2000000)
					nlong = 2000000;
				if (nlong > universe / 2)
					nlong = (uint32_t) (universe / 2);
				nlong = unit_gen_uniform(buf, nlong, universe);
				enc_make(&b, buf, nlong, (rep + (int) r) % GPUIDX_NUM_CODECS);
				nshort = nlong / ratios[r] + unit_rand_below(3);
				nshort = gen_related(buf, b.values, b.n, nshort, universe, 50);
				enc_make(&a, buf, nshort, (rep + (int) u) % GPUIDX_NUM_CODECS);
				snprintf(what, sizeof(what), "u=2^%d ratio=%u (%u x %u)",
						 (int) __builtin_ctzll(universe), ratios[r], a.n, b.n);
				check_pair(&a, &b, what);
				check_pair(&b, &a, what);
				enc_free(&a);
				enc_free(&b);
			}
	/* empty and tiny sides, runs against runs */
	{
		enc_list	e,
					one,
					run,
					run2;

		enc_make(&e, buf, 0, GPUIDX_CODEC_EF);
		buf[0] = 77;
		enc_make(&one, buf, 1, GPUIDX_CODEC_RAW);
		for (uint32_t i = 0; i < 100000; i++)
			buf[i] = i + 50;
		enc_make(&run, buf, 100000, GPUIDX_CODEC_EF);
		for (uint32_t i = 0; i < 1000; i++)
			buf[i] = UINT32_MAX - 999 + i;
		enc_make(&run2, buf, 1000, GPUIDX_CODEC_LRC);
		check_pair(&e, &run, "empty");
		check_pair(&one, &run, "one");
		check_pair(&run, &run2, "disjoint");
		check_pair(&run2, &run2, "self at max");
		enc_free(&e);
		enc_free(&one);
		enc_free(&run);
		enc_free(&run2);
	}
	check_sort_and_equal();
	for (int codec = GPUIDX_CODEC_EF; codec < GPUIDX_NUM_CODECS; codec++)
		check_damaged(codec, buf);
	/* k-way SvS */
	for (int rep = 0; rep < 60; rep++)
		check_k(2 + rep % 7, rep % 2 ? UINT64_C(1) << 16 : UINT64_C(1) << 24, 1 + unit_rand_below(50000));

	/* skewed intersections touch few of the long list's blocks */
	{
		enc_list	a,
					b;
		cpu_stats	stats = {0};
		uint32_t	nlong = unit_gen_gaps(buf, 2000000, 0, 16);

		enc_make(&b, buf, nlong, GPUIDX_CODEC_EF);
		nlong = gen_related(buf, b.values, b.n, nlong / 10000, (uint64_t) b.values[b.n - 1] + 1, 50);
		enc_make(&a, buf, nlong, GPUIDX_CODEC_EF);
		(void) cpu_intersect_lists(&a.view, &b.view, buf, CPU_METHOD_AUTO, 0, &stats);
		CHECK(stats.rounds_skip == 1, "ratio 10000 should search, not merge");
		CHECK(stats.blocks_touched - a.view.nblocks < b.view.nblocks / 20,
			  "ratio 10000 touched %llu of %u long blocks",
			  (unsigned long long) (stats.blocks_touched - a.view.nblocks), b.view.nblocks);
		enc_free(&a);
		enc_free(&b);
	}
	free(buf);
	return unit_report("test_cpu");
}
