/*
 * scale.c: a corpus scaled up to N documents, for measurements past the real
 * corpora's size.  Built and run by scripts/data/scale (see README.md there).
 *
 * Reads <corpus>/docs.tsv ("id<TAB>text"), writes N lines "id<TAB>text" to
 * stdout, ids 1..N.  Document k (from 0) is copy c = k / n of the corpus's
 * document d = k % n.  Copy 0 is the corpus verbatim.  In a later copy each
 * word, independently and by a hash of (seed, c, d, position), so the output
 * is the same on every run:
 *   - with probability 1/8 is the word at the same position of another
 *     document of the corpus (chosen by the hash; kept if that one is
 *     shorter): words keep the corpus's frequencies, lists differ per copy;
 *     with NEAR > 0 the other document is one of the NEAR on either side
 *     of d (neighbours in a corpus are alike: the files of one package), so
 *     a copy keeps the corpus's locality, where any document breaks it;
 *     with SWAP 0 no word is swapped, a diagnostic: the copies then differ
 *     only by the suffixes below (SWAP 8, the default, swaps one in eight);
 *   - else with probability 1/64 gets a suffix of letters naming the copy
 *     ("q" and c in base 26): new rare words, so the vocabulary grows with
 *     the copies as a real collection's does.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t
mix(uint64_t x)
{
	/* splitmix64's finalizer */
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/* the position-th word of text (words: runs of characters other than space) */
static const char *
nth_word(const char *text, size_t len, uint32_t position, size_t *wlen)
{
	size_t		i = 0;
	uint32_t	w = 0;

	while (i < len)
	{
		size_t		start;

		while (i < len && text[i] == ' ')
			i++;
		if (i == len)
			break;
		start = i;
		while (i < len && text[i] != ' ')
			i++;
		if (w++ == position)
		{
			*wlen = i - start;
			return text + start;
		}
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	FILE	   *f;
	char	   *buf;
	long		size;
	size_t		n = 0;
	size_t		cap = 1 << 20;
	const char **text;
	size_t	   *tlen;
	unsigned long long total;
	uint64_t	seed;
	uint64_t	near;
	bool		swap;
	char		out[1 << 16];

	if (argc < 3)
	{
		fprintf(stderr, "usage: scale DOCS.tsv N [SEED [NEAR [SWAP]]]\n");
		return 2;
	}
	total = strtoull(argv[2], NULL, 10);
	seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	near = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
	swap = argc > 5 ? strcmp(argv[5], "0") != 0 : true;
	if (argc > 5 && swap && strcmp(argv[5], "8") != 0)
	{
		fprintf(stderr, "scale: SWAP is 8 (one word in eight) or 0 (none)\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
	{
		fprintf(stderr, "scale: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	buf = malloc((size_t) size + 1);
	text = malloc(cap * sizeof(*text));
	tlen = malloc(cap * sizeof(*tlen));
	if (buf == NULL || text == NULL || tlen == NULL || fread(buf, 1, (size_t) size, f) != (size_t) size)
	{
		fprintf(stderr, "scale: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	buf[size] = '\n';
	for (char *p = buf, *end = buf + size; p < end;)
	{
		char	   *nl = memchr(p, '\n', (size_t) (end - p + 1));
		char	   *tab = memchr(p, '\t', (size_t) (nl - p));

		if (tab != NULL)
		{
			if (n == cap)
			{
				cap *= 2;
				text = realloc(text, cap * sizeof(*text));
				tlen = realloc(tlen, cap * sizeof(*tlen));
				if (text == NULL || tlen == NULL)
					return 1;
			}
			text[n] = tab + 1;
			tlen[n] = (size_t) (nl - tab - 1);
			n++;
		}
		p = nl + 1;
	}
	if (n == 0)
	{
		fprintf(stderr, "scale: no documents in %s\n", argv[1]);
		return 1;
	}

	for (unsigned long long k = 0; k < total; k++)
	{
		uint64_t	c = k / n;
		size_t		d = (size_t) (k % n);
		const char *t = text[d];
		size_t		len = tlen[d];
		size_t		o = 0;
		uint32_t	position = 0;

		if (c == 0)
		{
			printf("%llu\t%.*s\n", k + 1, (int) len, t);
			continue;
		}
		for (size_t i = 0; i < len;)
		{
			size_t		start;
			const char *w;
			size_t		wlen;
			uint64_t	h;

			while (i < len && t[i] == ' ')
				i++;
			if (i == len)
				break;
			start = i;
			while (i < len && t[i] != ' ')
				i++;
			w = t + start;
			wlen = i - start;
			h = mix(seed ^ mix(c * 0x100000001B3ULL ^ mix((uint64_t) d * 31 + position)));
			if (swap && (h & 7) == 0)
			{
				size_t		other = (size_t) ((h >> 8) % n);
				size_t		olen;
				const char *ow;

				if (near > 0)
				{
					/* d + 1..near or d - 1..near, within the corpus */
					uint64_t	step = 1 + (h >> 8) % near;

					if ((h >> 4) & 1)
						other = d + step < n ? d + step : d - (step < d ? step : d);
					else
						other = step <= d ? d - step : (d + step < n ? d + step : d);
				}
				ow = nth_word(text[other], tlen[other], position, &olen);

				if (ow != NULL)
				{
					w = ow;
					wlen = olen;
				}
			}
			if (o + wlen + 32 >= sizeof(out))
				break;
			if (o > 0)
				out[o++] = ' ';
			memcpy(out + o, w, wlen);
			o += wlen;
			if ((h & 7) != 0 && ((h >> 3) & 63) == 0)
			{
				uint64_t	v = c;

				out[o++] = 'q';
				do
				{
					out[o++] = (char) ('a' + v % 26);
					v /= 26;
				} while (v > 0);
			}
			position++;
		}
		printf("%llu\t%.*s\n", k + 1, (int) o, out);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
