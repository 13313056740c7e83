/*
 * gen_seeds.c
 *	  Writes the seed corpora of the fuzz targets: real posting lists (lexeme
 *	  -> doc ids, lowercase alphanumeric words of a corpus's docs.tsv) and
 *	  synthetic shapes, as encoded lists in every codec (list_open), pairs and
 *	  triples of them (list_ops), id-set byte code (differential), the
 *	  index's page structures holding a corpus's terms (index_pages) and
 *	  coded blocks of positions (posrec).
 *
 * Usage: gen_seeds DATA_DIR OUT_DIR.  Corpora missing from DATA_DIR are
 * skipped with a notice; the synthetic seeds need nothing.
 */
#include "fuzz_common.h"
#include "../page_build.h"
#include "../../src/store/posrec.h"

#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>

/* stay inside the -max_len that test/fuzz/run.sh gives each target */
#define OPEN_MAX_BYTES	32768
#define OPS_MAX_BYTES	65536
#define DIFF_MAX_BYTES	16384
#define DIFF_MAX_IDS	2500	/* per set: a real list's prefix */
#define MAX_DOCS		30000	/* documents read per corpus */

static const char *out_dir;
static int	nfiles;

static void
write_file(const char *target, const char *name, const uint8_t *bytes, size_t len)
{
	char		path[1024];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	f = fopen(path, "wb");
	if (f == NULL || (len > 0 && fwrite(bytes, 1, len, f) != len) || fclose(f) != 0)
	{
		fprintf(stderr, "gen_seeds: cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
	nfiles++;
}

static void
make_dir(const char *a, const char *b)
{
	char		path[1024];

	snprintf(path, sizeof(path), "%s%s%s", a, b ? "/" : "", b ? b : "");
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
	{
		fprintf(stderr, "gen_seeds: cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* ------------------------------------------------------------------------
 * Seed writers.
 */

static uint8_t *
encode(int codec, const uint32_t *v, uint32_t n, size_t *len)
{
	uint8_t    *buf;

	*len = pl_encoded_size(codec, v, n);
	buf = fuzz_alloc(*len);
	pl_encode(codec, v, n, buf);
	return buf;
}

/* one list in every codec that fits (list_open) */
static void
seed_open(const char *name, const uint32_t *v, uint32_t n)
{
	for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
	{
		size_t		len;
		uint8_t    *buf = encode(c, v, n, &len);
		char		fname[256];

		if (len <= OPEN_MAX_BYTES)
		{
			snprintf(fname, sizeof(fname), "%s-%s", name, fuzz_codec_names[c]);
			write_file("list_open", fname, buf, len);
		}
		free(buf);
	}
}

/* k lists (list_ops): control, limit, then 2-byte lengths but for the last */
static void
seed_ops(const char *name, const uint32_t *const *v, const uint32_t *n, int k, int codec_shift)
{
	uint8_t    *buf = fuzz_alloc(OPS_MAX_BYTES);
	size_t		pos = 3;

	buf[0] = k == 3 ? 1 : 0;
	buf[1] = 10;
	buf[2] = 0;
	for (int i = 0; i < k; i++)
	{
		size_t		len;
		uint8_t    *enc = encode((i + codec_shift) % GPUIDX_NUM_CODECS, v[i], n[i], &len);

		if (pos + 2 + len > OPS_MAX_BYTES || len > 0xffff)
		{
			free(enc);
			free(buf);
			return;
		}
		if (i + 1 < k)
		{
			buf[pos++] = (uint8_t) len;
			buf[pos++] = (uint8_t) (len >> 8);
		}
		memcpy(buf + pos, enc, len);
		pos += len;
		free(enc);
	}
	write_file("list_ops", name, buf, pos);
	free(buf);
}

/* ids as fuzz_common.h's byte code: single skips, longer skips, runs */
static size_t
ids_to_code(const uint32_t *v, uint32_t n, uint8_t *out)
{
	uint64_t	next = 0;
	size_t		k = 0;
	uint32_t	i = 0;

	while (i < n)
	{
		uint64_t	skip = v[i] - next;
		uint32_t	r = 1;

		while (i + r < n && v[i + r] == v[i] + r && r < 16384)
			r++;
		if (skip == 0 && r >= 3)
		{
			out[k++] = (uint8_t) (0x80 | ((r - 1) >> 8));
			out[k++] = (uint8_t) (r - 1);
			i += r;
			next = (uint64_t) v[i - 1] + 1;
			continue;
		}
		if (skip < 0x40)
			out[k++] = (uint8_t) skip;
		else
		{
			int			nb = skip < 0x100 ? 1 : skip < 0x10000 ? 2 : skip < 0x1000000 ? 3 : 4;

			out[k++] = (uint8_t) (0x40 | (nb - 1));
			for (int b = 0; b < nb; b++)
				out[k++] = (uint8_t) (skip >> (8 * b));
		}
		next = (uint64_t) v[i] + 1;
		i++;
	}
	out[k++] = FUZZ_OP_END;
	return k;
}

/* k sets as differential input; checks that the byte code reads back */
static void
seed_diff(const char *name, const uint32_t *const *v, const uint32_t *n, int k, uint32_t ctl, uint32_t m)
{
	uint8_t    *buf = fuzz_alloc(DIFF_MAX_BYTES + 6 * FUZZ_IDS_MAX);
	uint32_t   *back = fuzz_alloc_u32(FUZZ_IDS_MAX);
	size_t		pos = 4;
	fuzz_in		in;

	buf[0] = (uint8_t) ((k == 3 ? 1 : 0) | ctl);
	buf[1] = (uint8_t) (m - 1);
	buf[2] = 5;
	buf[3] = 0;
	for (int i = 0; i < k; i++)
		pos += ids_to_code(v[i], n[i] < DIFF_MAX_IDS ? n[i] : DIFF_MAX_IDS, buf + pos);
	in.p = buf + 4;
	in.n = pos - 4;
	for (int i = 0; i < k; i++)
	{
		uint32_t	want = n[i] < DIFF_MAX_IDS ? n[i] : DIFF_MAX_IDS;
		uint32_t	got = fuzz_ids_read(&in, back);

		if (!ref_same(back, got, v[i], want))
		{
			fprintf(stderr, "gen_seeds: %s: set %d does not read back\n", name, i);
			exit(1);
		}
	}
	if (pos <= DIFF_MAX_BYTES)
		write_file("differential", name, buf, pos);
	free(buf);
	free(back);
}

/* ------------------------------------------------------------------------
 * Synthetic shapes: the edges of the format.
 */

static uint64_t gen_rng = 20261123;

static uint32_t
shape(int which, uint32_t *v, const char **name)
{
	uint32_t	n = 0;

	switch (which)
	{
		case 0:
			*name = "empty";
			break;
		case 1:
			*name = "single0";
			v[n++] = 0;
			break;
		case 2:
			*name = "single-max";
			v[n++] = UINT32_MAX;
			break;
		case 3:
			*name = "zero-and-max";
			v[n++] = 0;
			v[n++] = UINT32_MAX;
			break;
		case 4:
			*name = "run1000";
			for (; n < 1000; n++)
				v[n] = 5 + n;
			break;
		case 5:
			*name = "run-at-top";
			for (; n < 300; n++)
				v[n] = UINT32_MAX - 299 + n;
			break;
		case 6:
			*name = "dense-bitmap";
			for (uint32_t x = 0; x < 4000; x++)
				if (fuzz_rand(&gen_rng) & 1)
					v[n++] = 1000 + x;
			break;
		case 7:
			*name = "sparse";
			for (uint32_t k = 0; k < 400; k++)
				v[n++] = (uint32_t) fuzz_rand(&gen_rng);
			break;				/* the caller sorts */
		case 8:
			*name = "progression7";
			for (; n < 1500; n++)
				v[n] = 3 + 7 * n;
			break;
		case 9:
			*name = "block128";
			for (; n < 128; n++)
				v[n] = 11 * n;
			break;
		case 10:
			*name = "block129";
			for (; n < 129; n++)
				v[n] = 13 * n + (n & 1);
			break;
		case 11:
			*name = "seg256";
			for (; n < 256; n++)
				v[n] = 1000 * n + (uint32_t) (fuzz_rand(&gen_rng) % 17);
			break;
		case 12:
			*name = "seg257";
			for (; n < 257; n++)
				v[n] = 100 * n + (uint32_t) (fuzz_rand(&gen_rng) % 50);
			break;
		case 13:
			*name = "runs-and-jumps";
			for (uint32_t r = 0; r < 20; r++)
				for (uint32_t k = 0; k < 40 + r; k++)
					v[n++] = r * 100000 + k;
			break;
		case 14:
			*name = "spread-to-max";
			for (; n < 600; n++)
				v[n] = (uint32_t) (((uint64_t) UINT32_MAX / 599) * n);
			v[n - 1] = UINT32_MAX;
			break;
		case 15:
			*name = "big-gaps";
			for (; n < 200; n++)
				v[n] = n * 20000000u;
			break;
		case 16:
			*name = "last-block-one";	/* a final EF block of one posting */
			for (; n < 257; n++)
				v[n] = 2 * n;
			break;
		default:
			return UINT32_MAX;
	}
	return n;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

static uint32_t
sort_unique(uint32_t *v, uint32_t n)
{
	uint32_t	k = 0;

	qsort(v, n, sizeof(uint32_t), cmp_u32);
	for (uint32_t i = 0; i < n; i++)
		if (k == 0 || v[i] != v[k - 1])
			v[k++] = v[i];
	return k;
}

static void
synthetic_seeds(void)
{
	uint32_t   *v[3];
	uint32_t	n[3];
	const char *names[3];
	char		name[128];
	int			nshapes = 0;

	for (int i = 0; i < 3; i++)
		v[i] = fuzz_alloc_u32(8192);
	while (shape(nshapes, v[0], &names[0]) != UINT32_MAX)
		nshapes++;
	for (int s = 0; s < nshapes; s++)
	{
		n[0] = sort_unique(v[0], shape(s, v[0], &names[0]));
		seed_open(names[0], v[0], n[0]);
		/* pairs and a triple with the next shapes */
		n[1] = sort_unique(v[1], shape((s + 1) % nshapes, v[1], &names[1]));
		n[2] = sort_unique(v[2], shape((s + 5) % nshapes, v[2], &names[2]));
		snprintf(name, sizeof(name), "%s+%s", names[0], names[1]);
		seed_ops(name, (const uint32_t *const *) v, n, 2, s);
		seed_diff(name, (const uint32_t *const *) v, n, 2, (uint32_t) (s & 2), 1 + (uint32_t) s * 7);
		snprintf(name, sizeof(name), "%s+%s+%s", names[0], names[1], names[2]);
		seed_ops(name, (const uint32_t *const *) v, n, 3, s + 1);
		seed_diff(name, (const uint32_t *const *) v, n, 3, 6, 40);
	}
	/* byte code with progressions, which only the target's reader makes */
	{
		static const uint8_t prog[] = {
			0x07, 0x40, 0x01, 0xc7, 0x04, 0xbf, 0x80, 0x10, 0xc3, 0xff, 0xff,
			0x03, 0xc0, 0x06, 0x43, 0xff, 0xff, 0xff, 0xfe, 0x00, 0xff,
			0x82, 0x00, 0xff,
		};
		uint8_t		buf[4 + sizeof(prog)] = {0x07, 0x1f, 0x03, 0x00};

		memcpy(buf + 4, prog, sizeof(prog));
		write_file("differential", "progressions", buf, sizeof(buf));
	}
	for (int i = 0; i < 3; i++)
		free(v[i]);
}

/*
 * index_pages input: kind (0 leaf, 1 inner node, 2 doc map chunk, 3 pending
 * entries, 4 inline list: the byte modulo 5; bit 0x80 freqs, 0x40 packed
 * leaf entries), ndocs - 1 (2 bytes), LISTS pages, probe length, two
 * arguments, a spare byte, the probe, then the page contents.
 */
#define SEED_PACKED_FREQS	0xC3	/* 195 % 5 == 0: a leaf, with freqs, packed */
static const uint8_t synth_tfs[8] = {1, 2, 1, 3, 1, 1, 4, 1};

static void
seed_page(const char *name, int kind, uint32_t ndocs, uint8_t list_pages, uint8_t arg5, uint8_t arg6,
		  const char *probe, const uint8_t *page, uint32_t used)
{
	uint8_t    *buf = fuzz_alloc(8 + 16 + used);
	uint32_t	plen = probe ? (uint32_t) strlen(probe) % 16 : 0;

	buf[0] = (uint8_t) kind;
	buf[1] = (uint8_t) (ndocs - 1);
	buf[2] = (uint8_t) ((ndocs - 1) >> 8);
	buf[3] = list_pages;
	buf[4] = (uint8_t) plen;
	buf[5] = arg5;
	buf[6] = arg6;
	buf[7] = 0;
	if (plen > 0)
		memcpy(buf + 8, probe, plen);
	memcpy(buf + 8 + plen, page, used);
	write_file("index_pages", name, buf, 8 + plen + used);
	free(buf);
}

/* ------------------------------------------------------------------------
 * Real posting lists: lexeme -> ids of the documents it occurs in.
 */

typedef struct term
{
	char	   *word;
	uint32_t   *ids;
	uint32_t	n;
	uint32_t	cap;
} term;

static term *terms;
static uint32_t nterms;
static uint32_t *slots;			/* open addressing: term index + 1, 0 free */
static size_t nslots;

static uint64_t
hash_word(const char *w, size_t len)
{
	uint64_t	h = UINT64_C(1469598103934665603);

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t) w[i]) * UINT64_C(1099511628211);
	return h;
}

static term *
lookup(const char *w, size_t len, bool insert)
{
	size_t		i;

	if (nterms * 2 >= nslots)
	{
		/* grow and rehash */
		size_t		old = nslots;
		uint32_t   *olds = slots;

		nslots = old ? old * 2 : 1 << 16;
		slots = calloc(nslots, sizeof(uint32_t));
		terms = realloc(terms, nslots / 2 * sizeof(term));
		if (slots == NULL || terms == NULL)
			abort();
		for (size_t s = 0; s < old; s++)
			if (olds[s])
			{
				term	   *t = &terms[olds[s] - 1];

				for (i = hash_word(t->word, strlen(t->word)) & (nslots - 1); slots[i]; i = (i + 1) & (nslots - 1))
					;
				slots[i] = olds[s];
			}
		free(olds);
	}
	for (i = hash_word(w, len) & (nslots - 1); slots[i]; i = (i + 1) & (nslots - 1))
	{
		term	   *t = &terms[slots[i] - 1];

		if (strlen(t->word) == len && memcmp(t->word, w, len) == 0)
			return t;
	}
	if (!insert)
		return NULL;
	terms[nterms].word = strndup(w, len);
	terms[nterms].ids = NULL;
	terms[nterms].n = terms[nterms].cap = 0;
	slots[i] = ++nterms;
	return &terms[nterms - 1];
}

static void
add_posting(term *t, uint32_t doc)
{
	if (t->n > 0 && t->ids[t->n - 1] == doc)
		return;
	if (t->n == t->cap)
	{
		t->cap = t->cap ? 2 * t->cap : 4;
		t->ids = realloc(t->ids, t->cap * sizeof(uint32_t));
		if (t->ids == NULL)
			abort();
	}
	t->ids[t->n++] = doc;
}

static void
free_terms(void)
{
	for (uint32_t i = 0; i < nterms; i++)
	{
		free(terms[i].word);
		free(terms[i].ids);
	}
	free(terms);
	free(slots);
	terms = NULL;
	slots = NULL;
	nterms = 0;
	nslots = 0;
}

/* docs.tsv: "doc_id TAB text"; words are runs of ASCII letters and digits */
static bool
read_corpus(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	uint32_t	docs = 0;

	if (f == NULL)
		return false;
	while (docs < MAX_DOCS && getline(&line, &cap, f) > 0)
	{
		char	   *tab = strchr(line, '\t');
		uint32_t	doc = (uint32_t) strtoul(line, NULL, 10);

		if (tab == NULL)
			continue;
		for (char *p = tab + 1; *p;)
		{
			char	   *w;

			while (*p && !isalnum((unsigned char) *p))
				p++;
			w = p;
			while (*p && isalnum((unsigned char) *p))
			{
				*p = (char) tolower((unsigned char) *p);
				p++;
			}
			if (p > w)
				add_posting(lookup(w, (size_t) (p - w), true), doc);
		}
		docs++;
	}
	free(line);
	fclose(f);
	return docs > 0;
}

static int
cmp_df_desc(const void *a, const void *b)
{
	const term *x = *(const term *const *) a;
	const term *y = *(const term *const *) b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->word, y->word);
}

static int
cmp_word(const void *a, const void *b)
{
	return strcmp((*(const term *const *) a)->word, (*(const term *const *) b)->word);
}

/*
 * The corpus's dictionary as the index stores it: leaves of consecutive
 * terms (short lists inline, long ones external), an inner node over them,
 * inline lists, doc map chunks of heap-like TIDs and pending entries of the
 * first documents' words.
 */
static void
page_seeds(const char *corpus)
{
	enum
	{
		PAGE = 8144, LEAVES = 64, PENDING_DOCS = 48, DOC_WORDS = 64
	};
	term	  **sorted = fuzz_alloc(nterms * sizeof(term *));
	uint8_t    *page = fuzz_alloc(PAGE);
	PbTerm	   *pb = fuzz_alloc(nterms * sizeof(PbTerm));
	const char *firsts[LEAVES];
	uint32_t	children[LEAVES];
	uint32_t	nleaves = 0;
	uint32_t	ndocs = 1;
	uint32_t	n = 0;
	char		name[256];

	for (uint32_t i = 0; i < nterms; i++)
	{
		sorted[n] = &terms[i];
		/* the harness's doc count is 16 bits; terms longer than a probe go too */
		if (terms[i].ids[terms[i].n - 1] < 65535 && strlen(terms[i].word) < 16)
			n++;
	}
	qsort(sorted, n, sizeof(term *), cmp_word);
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	last = sorted[i]->ids[sorted[i]->n - 1];

		if (last + 1 > ndocs)
			ndocs = last + 1;
		pb[i].term = sorted[i]->word;
		pb[i].df = sorted[i]->n;
		pb[i].ids = sorted[i]->n <= 8 ? sorted[i]->ids : NULL;
		/* an external list: its encoded size, at a 4-byte aligned place */
		pb[i].ext_len = (uint32_t) pl_encoded_size(pl_choose_codec(sorted[i]->ids, sorted[i]->n),
												   sorted[i]->ids, sorted[i]->n);
		/* some inline lists with tfs above 1 */
		pb[i].tfs = i % 3 == 0 ? synth_tfs : NULL;
		pb[i].ext_page = i % 7;
		pb[i].ext_offset = (i * 36) % 8000;
	}

	/* leaves as the writer fills them: as many terms as fit */
	for (uint32_t at = 0; at < n && nleaves < LEAVES; nleaves++)
	{
		uint32_t	k = 1;
		uint32_t	used = 0;

		while (at + k <= n && pb_leaf(page, PAGE, pb + at, k, at) != 0)
			k++;
		k--;
		if (k == 0)
			break;
		used = pb_leaf(page, PAGE, pb + at, k, at);
		firsts[nleaves] = pb[at].term;
		children[nleaves] = nleaves;
		if (nleaves % 4 == 0)
		{
			snprintf(name, sizeof(name), "%s-leaf%u", corpus, nleaves);
			seed_page(name, 0, ndocs, 7, 0, 0, pb[at + k / 2].term, page, used);
			/* the same terms as entries of the packed form, with freqs */
			used = pb_leaf_form(page, PAGE, pb + at, k, at, true, true);
			snprintf(name, sizeof(name), "%s-leaf%u-packed", corpus, nleaves);
			seed_page(name, SEED_PACKED_FREQS, ndocs, 7, 0, 0, pb[at + k / 2].term, page, used);
		}
		at += k * (1 + nleaves);	/* leaves from all over the alphabet */
	}
	if (nleaves > 1)
	{
		uint32_t	used = pb_inner(page, PAGE, 1, firsts, children, nleaves);

		snprintf(name, sizeof(name), "%s-inner", corpus);
		seed_page(name, 1, ndocs, 7, 0, 0, firsts[nleaves / 2], page, used);
	}

	/* inline lists: rare and common terms' first ids */
	for (uint32_t i = 0, made = 0; i < n && made < 4; i += n / 5 + 1, made++)
	{
		uint32_t	df = sorted[i]->n < 255 ? sorted[i]->n : 255;
		uint32_t	used = pb_inline_list(page, PAGE, sorted[i]->ids, df);

		snprintf(name, sizeof(name), "%s-inline-%s", corpus, sorted[i]->word);
		seed_page(name, 4, ndocs, 0, (uint8_t) df, 0, NULL, page, used);
	}

	/* doc map chunks: heap-like TIDs, 40 tuples a page with gaps of deleted ones */
	for (uint32_t c = 0; c < 3; c++)
	{
		uint32_t	blocks[GPX_DOCMAP_CHUNK];
		uint16_t	offsets[GPX_DOCMAP_CHUNK];
		uint32_t	used;
		uint32_t	tid = c * 5000;

		for (uint32_t i = 0; i < GPX_DOCMAP_CHUNK; i++, tid += 1 + (terms[i % nterms].n % 3 == 0))
		{
			blocks[i] = tid / 40 + c * 100000;
			offsets[i] = (uint16_t) (tid % 40 + 1);
		}
		used = pb_docmap_chunk(page, PAGE, blocks, offsets, GPX_DOCMAP_CHUNK);
		snprintf(name, sizeof(name), "%s-docmap%u", corpus, c);
		seed_page(name, 2, ndocs, 0, GPX_DOCMAP_CHUNK - 1, 40, NULL, page, used);
	}

	/* pending entries: the first documents' words, as inserts queue them */
	{
		const char *words[PENDING_DOCS][DOC_WORDS];
		uint32_t	nwords[PENDING_DOCS] = {0};
		uint32_t	first = UINT32_MAX;
		uint32_t	used = 0;

		for (uint32_t i = 0; i < nterms; i++)
			if (terms[i].ids[0] < first)
				first = terms[i].ids[0];
		for (uint32_t i = 0; i < nterms; i++)
			for (uint32_t k = 0; k < terms[i].n && terms[i].ids[k] < first + PENDING_DOCS; k++)
			{
				uint32_t	d = terms[i].ids[k] - first;

				if (nwords[d] < DOC_WORDS)
					words[d][nwords[d]++] = terms[i].word;
			}
		for (uint32_t d = 0; d < PENDING_DOCS; d++)
		{
			uint32_t	w = pb_pending_entry(page + used, PAGE - used, first + d, (uint16_t) (1 + d % 40),
											 words[d], nwords[d]);

			if (w == 0)
				break;
			used += w;
		}
		snprintf(name, sizeof(name), "%s-pending", corpus);
		seed_page(name, 3, ndocs, 0, 0, 0, NULL, page, used);
	}
	free(pb);
	free(page);
	free(sorted);
}

static void
corpus_seeds(const char *data_dir, const char *corpus)
{
	char		path[1024];
	term	  **by_df;
	static const uint32_t ranks[] = {0, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000};
	FILE	   *qf;
	int			before = nfiles;
	int			queries = 0;

	snprintf(path, sizeof(path), "%s/%s/docs.tsv", data_dir, corpus);
	if (!read_corpus(path))
	{
		fprintf(stderr, "gen_seeds: NOTICE: no corpus %s (%s); fetch it with scripts/data/fetch %s\n",
				corpus, path, corpus);
		return;
	}
	by_df = fuzz_alloc(nterms * sizeof(term *));
	for (uint32_t i = 0; i < nterms; i++)
		by_df[i] = &terms[i];
	qsort(by_df, nterms, sizeof(term *), cmp_df_desc);

	/* single lists from the most frequent term down to hapaxes */
	for (size_t r = 0; r < sizeof(ranks) / sizeof(ranks[0]); r++)
		if (ranks[r] < nterms)
		{
			term	   *t = by_df[ranks[r]];
			char		name[256];
			uint32_t	n = t->n < 6000 ? t->n : 6000;

			snprintf(name, sizeof(name), "%s-%s-df%u", corpus, t->word, t->n);
			seed_open(name, t->ids, n);
		}

	/* the corpus's own queries: their terms' lists together */
	snprintf(path, sizeof(path), "%s/%s/queries.tsv", data_dir, corpus);
	qf = fopen(path, "r");
	if (qf != NULL)
	{
		char	   *line = NULL;
		size_t		cap = 0;

		while (queries < 40 && getline(&line, &cap, qf) > 0)
		{
			const uint32_t *v[3];
			uint32_t	n[3];
			int			k = 0;
			char	   *tab = strchr(line, '\t');
			char		name[256];
			char	   *save = NULL;

			if (tab == NULL)
				continue;
			for (char *w = strtok_r(tab + 1, " \t\r\n", &save); w && k < 3; w = strtok_r(NULL, " \t\r\n", &save))
			{
				term	   *t;

				for (char *p = w; *p; p++)
					*p = (char) tolower((unsigned char) *p);
				t = lookup(w, strlen(w), false);
				if (t == NULL)
					break;
				v[k] = t->ids;
				n[k] = t->n < 8000 ? t->n : 8000;
				k++;
			}
			if (k < 2)
				continue;
			snprintf(name, sizeof(name), "%s-q%d", corpus, queries);
			seed_ops(name, v, n, k, queries);
			seed_diff(name, v, n, k, (uint32_t) (queries & 6), 1 + (uint32_t) queries * 3);
			queries++;
		}
		free(line);
		fclose(qf);
	}
	page_seeds(corpus);
	fprintf(stderr, "gen_seeds: %s: %u terms, %d queries, %d seed files\n", corpus, nterms, queries, nfiles - before);
	free(by_df);
	free_terms();
}

static uint32_t
posrec_rand(uint32_t below)
{
	return (uint32_t) (fuzz_rand(&gen_rng) % below);
}

/*
 * fuzz_posrec's input: flags, postings - 1, tfs, doc length codes, then a
 * block coded from positions of the shapes real text has
 */
static void
posrec_seeds(void)
{
	static GpxPosBlock b;
	static uint8_t buf[2 + 2 * GPX_POSREC_BLOCK + GPX_POSREC_BLOCK_MAX];
	void	   *scratch = malloc(gpx_posrec_scratch_size());

	for (int s = 0; s < 40; s++)
	{
		uint32_t	n = 1 + posrec_rand(s < 10 ? 3 : GPX_POSREC_BLOCK);
		uint32_t	total = 0;
		uint32_t	flags;
		size_t		len;
		char		name[32];

		b.n = n;
		for (uint32_t i = 0; i < n; i++)
		{
			uint32_t	npos = s % 4 == 3 && posrec_rand(8) == 0 ? 0 : 1 + posrec_rand(s % 2 ? 6 : 2);
			uint32_t	pos = 1 + posrec_rand(s % 3 ? 60 : 4);

			b.start[i] = total;
			b.dlc[i] = (uint8_t) (20 + posrec_rand(40));
			b.npos[i] = (uint16_t) npos;
			for (uint32_t k = 0; k < npos; k++)
			{
				b.wep[total + k] = (uint16_t) ((s % 5 == 4 ? posrec_rand(4) << 14 : 0) | pos);
				pos += 1 + posrec_rand(9);
			}
			total += npos;
		}
		b.start[n] = total;
		flags = gpx_posrec_block_flags(&b);
		buf[0] = (uint8_t) flags;
		buf[1] = (uint8_t) (n - 1);
		for (uint32_t i = 0; i < n; i++)
		{
			buf[2 + i] = (uint8_t) gpx_posrec_tf(b.npos[i]);
			buf[2 + n + i] = b.dlc[i];
		}
		len = gpx_posrec_encode_block(&b, flags, buf + 2 + 2 * n, scratch);
		snprintf(name, sizeof(name), "block-%02d", s);
		write_file("posrec", name, buf, 2 + 2 * n + len);
	}
	free(scratch);
}

int
main(int argc, char **argv)
{
	static const char *const corpora[] = {"fortunes", "gcide", "debian-pkgs", "debian-paths"};

	if (argc != 3)
	{
		fprintf(stderr, "usage: gen_seeds DATA_DIR OUT_DIR\n");
		return 2;
	}
	out_dir = argv[2];
	make_dir(out_dir, NULL);
	make_dir(out_dir, "list_open");
	make_dir(out_dir, "list_ops");
	make_dir(out_dir, "differential");
	make_dir(out_dir, "index_pages");
	make_dir(out_dir, "posrec");
	synthetic_seeds();
	posrec_seeds();
	fprintf(stderr, "gen_seeds: synthetic: %d seed files\n", nfiles);
	for (size_t c = 0; c < sizeof(corpora) / sizeof(corpora[0]); c++)
		corpus_seeds(argv[1], corpora[c]);
	printf("gen_seeds: %d seed files in %s\n", nfiles, out_dir);
	return 0;
}
