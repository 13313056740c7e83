/*
 * fuzz_differential.c
 *	  libFuzzer target: id sets made from the input (fuzz_common.h's byte
 *	  code), encoded with every codec and checked against plain sorted arrays:
 *	  encode, open, decode and every accessor, then every set operation of
 *	  src/cpu by every method and limit.  Any difference aborts.
 *
 * Input: control byte (bit 0: a third set; bit 1: set 1 also takes every
 * m-th id of set 0, bit 2: set 2 every m-th of set 1, which makes skewed
 * pairs with common ids), m - 1, limit (2 bytes), then the sets.
 */
#include "fuzz_common.h"

#define MAX_SETS 3

typedef struct fuzz_set
{
	uint32_t   *ids;
	uint32_t	n;
	uint8_t    *bytes[GPUIDX_NUM_CODECS];
	size_t		len[GPUIDX_NUM_CODECS];
	pl_view		view[GPUIDX_NUM_CODECS];
} fuzz_set;

/* set to |= every m-th id of from */
static void
mix_in(fuzz_set *to, const fuzz_set *from, uint32_t m)
{
	uint32_t   *pick = fuzz_alloc_u32(from->n / m + 1);
	uint32_t   *u = fuzz_alloc_u32((size_t) to->n + from->n / m + 1);
	uint32_t	np = 0;

	for (uint32_t i = 0; i < from->n; i += m)
		pick[np++] = from->ids[i];
	to->n = ref_union(to->ids, to->n, pick, np, u);
	free(to->ids);
	free(pick);
	to->ids = u;
}

static void
encode_set(fuzz_set *s, uint64_t seed, int idx)
{
	size_t		best = SIZE_MAX;
	int			best_codec = 0;
	char		what[64];
	pl_view		plain;

	for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
	{
		size_t		size = pl_encoded_size(c, s->ids, s->n);
		size_t		written;
		pl_status	st;

		s->bytes[c] = fuzz_alloc(size);
		written = pl_encode(c, s->ids, s->n, s->bytes[c]);
		FUZZ_CHECK(written == size, "set %d %s: wrote %zu, announced %zu", idx, fuzz_codec_names[c], written, size);
		s->len[c] = size;
		st = pl_open(&s->view[c], s->bytes[c], size, PL_OPEN_VERIFY_CHECKSUM);
		FUZZ_CHECK(st == PL_OK, "set %d %s (%u ids): open: %s", idx, fuzz_codec_names[c], s->n, pl_status_message(st));
		FUZZ_CHECK(s->view[c].codec == c && s->view[c].total_bytes == size, "set %d %s: view", idx, fuzz_codec_names[c]);
		snprintf(what, sizeof(what), "set %d %s (%u ids)", idx, fuzz_codec_names[c], s->n);
		fuzz_check_accessors(&s->view[c], s->ids, s->n, seed + (uint64_t) c, what);
		/* ties go to raw, then EF */
		if (size < best)
		{
			best = size;
			best_codec = c;
		}
	}
	FUZZ_CHECK(pl_choose_codec(s->ids, s->n) == best_codec, "set %d: choose_codec %d, smallest %d",
			   idx, pl_choose_codec(s->ids, s->n), best_codec);

	/* a raw view without a header, as the index's inline lists are read */
	pl_view_from_array(&plain, s->ids, s->n);
	snprintf(what, sizeof(what), "set %d array view", idx);
	fuzz_check_accessors(&plain, s->ids, s->n, seed ^ 0x5555, what);
}

/* out buffers of exactly the room each function is documented to need */
static uint32_t *
room(uint32_t n, uint32_t limit)
{
	return fuzz_alloc_u32(limit != 0 && limit < n ? limit : n);
}

/*
 * Set a in codec ca against set b in codec cb: intersections of the two lists
 * by every method, with every limit when 'limits' (else without one), and
 * equality.
 */
static void
lists_ops(const fuzz_set *a, int ca, const fuzz_set *b, int cb, uint32_t limit, bool limits,
		  uint32_t *want)
{
	const pl_view *va = &a->view[ca];
	const pl_view *vb = &b->view[cb];
	uint32_t	ninter = ref_intersect(a->ids, a->n, b->ids, b->n, want);
	uint32_t	lims[4] = {0, 1, limit, ninter};

	for (int m = 0; m < 3; m++)
		for (int li = 0; li < (limits ? 4 : 1); li++)
		{
			uint32_t	lim = lims[li];
			uint32_t	nwant = lim != 0 && ninter > lim ? lim : ninter;
			uint32_t   *out = room(a->n < b->n ? a->n : b->n, lim);
			uint32_t	n = cpu_intersect_lists(va, vb, out, (cpu_method) m, lim, NULL);

			FUZZ_CHECK(ref_same(out, n, want, nwant), "%s x %s lists/%s limit %u: %u ids, want %u",
					   fuzz_codec_names[ca], fuzz_codec_names[cb], fuzz_method_names[m], lim, n, nwant);
			free(out);
		}
	{
		bool		equal = false;
		pl_status	st = cpu_lists_equal(va, vb, &equal);

		FUZZ_CHECK(st == PL_OK && equal == ref_same(a->ids, a->n, b->ids, b->n),
				   "%s = %s wrong (%s)", fuzz_codec_names[ca], fuzz_codec_names[cb], pl_status_message(st));
	}
}

/* set a as a plain array against list b in codec cb: every operation, method and limit */
static void
array_ops(const fuzz_set *a, const fuzz_set *b, int cb, uint32_t limit, uint32_t *want)
{
	const pl_view *vb = &b->view[cb];
	uint32_t	ninter = ref_intersect(a->ids, a->n, b->ids, b->n, want);
	uint32_t	lims[4] = {0, 1, limit, ninter};
	uint32_t   *out;
	uint32_t	n;

	for (int m = 0; m < 3; m++)
	{
		for (int li = 0; li < 4; li++)
		{
			uint32_t	lim = lims[li];
			uint32_t	nwant = lim != 0 && ninter > lim ? lim : ninter;

			out = room(a->n, lim);
			n = cpu_intersect_array_list(a->ids, a->n, vb, out, (cpu_method) m, lim, NULL);
			FUZZ_CHECK(ref_same(out, n, want, nwant), "array x %s/%s limit %u: %u ids, want %u",
					   fuzz_codec_names[cb], fuzz_method_names[m], lim, n, nwant);
			free(out);
		}
		/* in place */
		out = room(a->n, 0);
		memcpy(out, a->ids, (size_t) a->n * sizeof(uint32_t));
		n = cpu_intersect_array_list(out, a->n, vb, out, (cpu_method) m, 0, NULL);
		FUZZ_CHECK(ref_same(out, n, want, ninter), "array x %s in place/%s", fuzz_codec_names[cb], fuzz_method_names[m]);
		free(out);
	}

	/* difference: by every method, into a fresh buffer and in place */
	{
		uint32_t	ndiff = ref_difference(a->ids, a->n, b->ids, b->n, want);

		for (int m = 0; m < 3; m++)
		{
			out = room(a->n, 0);
			n = cpu_difference_array_list(a->ids, a->n, vb, out, (cpu_method) m, NULL);
			FUZZ_CHECK(ref_same(out, n, want, ndiff), "array - %s/%s: %u ids, want %u",
					   fuzz_codec_names[cb], fuzz_method_names[m], n, ndiff);
			memcpy(out, a->ids, (size_t) a->n * sizeof(uint32_t));
			n = cpu_difference_array_list(out, a->n, vb, out, (cpu_method) m, NULL);
			FUZZ_CHECK(ref_same(out, n, want, ndiff), "array - %s in place/%s", fuzz_codec_names[cb], fuzz_method_names[m]);
			free(out);
		}
	}

	/* union */
	{
		uint32_t	nunion = ref_union(a->ids, a->n, b->ids, b->n, want);

		out = room(a->n + b->n, 0);
		n = cpu_union_array_list(a->ids, a->n, vb, out);
		FUZZ_CHECK(ref_same(out, n, want, nunion), "array | %s: %u ids, want %u", fuzz_codec_names[cb], n, nunion);
		free(out);
	}
}

/* the plain-array helpers: merge intersect with caps, merge union, sort + unique */
static void
plain_ops(const fuzz_set *a, const fuzz_set *b, uint32_t limit, uint32_t *want, uint64_t seed)
{
	uint32_t	ninter = ref_intersect(a->ids, a->n, b->ids, b->n, want);
	uint32_t	caps[3] = {UINT32_MAX, limit, 1};
	uint32_t   *out;
	uint32_t	n;

	for (int c = 0; c < 3; c++)
	{
		uint32_t	nwant = ninter < caps[c] ? ninter : caps[c];

		out = room(a->n < b->n ? a->n : b->n, caps[c]);
		n = cpu_merge_intersect(a->ids, a->n, b->ids, b->n, out, caps[c]);
		FUZZ_CHECK(ref_same(out, n, want, nwant), "merge_intersect cap %u: %u, want %u", caps[c], n, nwant);
		free(out);
	}
	out = room(a->n + b->n, 0);
	n = cpu_merge_union(a->ids, a->n, b->ids, b->n, out);
	FUZZ_CHECK(ref_same(out, n, want, ref_union(a->ids, a->n, b->ids, b->n, want)), "merge_union");
	free(out);

	/* both sets concatenated (repeats where they meet), shuffled, sorted back */
	{
		size_t		total = (size_t) a->n + b->n;
		uint32_t   *v = fuzz_alloc_u32(total);
		uint32_t   *tmp = fuzz_alloc_u32(total);
		uint64_t	rng = seed;
		size_t		k;

		memcpy(v, a->ids, (size_t) a->n * sizeof(uint32_t));
		memcpy(v + a->n, b->ids, (size_t) b->n * sizeof(uint32_t));
		for (size_t i = total; i > 1; i--)
		{
			size_t		j = fuzz_rand(&rng) % i;
			uint32_t	t = v[i - 1];

			v[i - 1] = v[j];
			v[j] = t;
		}
		cpu_sort_u32(v, total, tmp);
		k = cpu_unique_u32(v, total);
		n = ref_union(a->ids, a->n, b->ids, b->n, want);
		FUZZ_CHECK(ref_same(v, (uint32_t) k, want, n), "sort + unique: %zu ids, want %u", k, n);
		free(v);
		free(tmp);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_in		in = {data, size};
	uint32_t	ctl = fuzz_u8(&in);
	uint32_t	m = fuzz_u8(&in) + 1;
	uint32_t	limit = fuzz_u16(&in);
	int			nsets = (ctl & 1) ? 3 : 2;
	fuzz_set	sets[MAX_SETS];
	uint64_t	seed = pl_crc32c(0, data, size);
	uint32_t	maxn = 0;
	uint32_t   *want;

	memset(sets, 0, sizeof(sets));
	for (int i = 0; i < nsets; i++)
	{
		uint32_t   *v = fuzz_alloc_u32(FUZZ_IDS_MAX);

		sets[i].n = fuzz_ids_read(&in, v);
		sets[i].ids = v;
	}
	if (ctl & 2)
		mix_in(&sets[1], &sets[0], m);
	if ((ctl & 4) && nsets == 3)
		mix_in(&sets[2], &sets[1], m);
	for (int i = 0; i < nsets; i++)
	{
		FUZZ_CHECK(ref_sorted_distinct(sets[i].ids, sets[i].n), "set %d: the byte code broke order", i);
		encode_set(&sets[i], seed + 16 * (uint64_t) i, i);
		if (sets[i].n > maxn)
			maxn = sets[i].n;
	}
	want = fuzz_alloc_u32(2 * (size_t) maxn);

	/*
	 * Every ordered pair of sets, each with itself (one set's lists in two
	 * codecs meet there), in every codec pair; the limits on one codec pair
	 * of each, taken from the seed, to keep executions fast.
	 */
	for (int i = 0; i < nsets; i++)
		for (int j = 0; j < nsets; j++)
		{
			int			pick = (int) ((seed >> (3 * (i * 3 + j))) % 9);

			for (int ca = 0; ca < GPUIDX_NUM_CODECS; ca++)
				for (int cb = 0; cb < GPUIDX_NUM_CODECS; cb++)
					lists_ops(&sets[i], ca, &sets[j], cb, limit, ca * 3 + cb == pick, want);
			for (int cb = 0; cb < GPUIDX_NUM_CODECS; cb++)
				array_ops(&sets[i], &sets[j], cb, limit, want);
			plain_ops(&sets[i], &sets[j], limit, want, seed + (uint64_t) (i * 3 + j));
		}

	/* k lists in codecs taken from the seed, by every method */
	for (int method = 0; method < 3; method++)
	{
		const pl_view *views[MAX_SETS + 1];
		uint32_t	nwant = sets[0].n;
		uint32_t	shortest = UINT32_MAX;
		int			k = nsets;
		uint32_t   *out;
		uint32_t	n;

		for (int i = 0; i < nsets; i++)
			views[i] = &sets[i].view[(seed >> (2 * i + method)) % GPUIDX_NUM_CODECS];
		if (method == 2)
			views[k++] = &sets[0].view[(seed >> 9) % GPUIDX_NUM_CODECS];
		memcpy(want, sets[0].ids, (size_t) nwant * sizeof(uint32_t));
		for (int i = 1; i < nsets; i++)
			nwant = ref_intersect(want, nwant, sets[i].ids, sets[i].n, want);
		for (int i = 0; i < k; i++)
			if (views[i]->count < shortest)
				shortest = views[i]->count;
		out = room(shortest, 0);
		n = cpu_intersect_k(views, k, out, (cpu_method) method, NULL);
		FUZZ_CHECK(ref_same(out, n, want, nwant), "intersect_k/%s of %d: %u ids, want %u",
				   fuzz_method_names[method], k, n, nwant);
		/* one list alone is decoded (views[0] is the shortest now) */
		n = cpu_intersect_k(views, 1, out, (cpu_method) method, NULL);
		FUZZ_CHECK(n == views[0]->count && n == shortest, "intersect_k of 1: %u ids", n);
		free(out);
	}

	free(want);
	for (int i = 0; i < nsets; i++)
	{
		free(sets[i].ids);
		for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
			free(sets[i].bytes[c]);
	}
	return 0;
}
