/*
 * posrec.c
 *	  A term's positions record (store/posrec.h): each block's streams
 *	  predicted and coded the cheapest way for it, and decoded with every
 *	  read bounded by the block's bytes and every value checked.
 */
#include <string.h>

#include "rank/bm25.h"
#include "store/posrec.h"

/* ---------------------------------------------------------------------------
 * Bits, least significant first
 */

typedef struct BitWriter
{
	uint8_t    *out;
	uint64_t	acc;
	uint32_t	nacc;			/* bits in acc */
	size_t		len;			/* bytes written */
} BitWriter;

static void
bw_put(BitWriter *w, uint32_t v, uint32_t bits)
{
	if (bits == 0)
		return;
	w->acc |= (uint64_t) (v & (bits == 32 ? 0xFFFFFFFFu : ((1u << bits) - 1))) << w->nacc;
	w->nacc += bits;
	while (w->nacc >= 8)
	{
		w->out[w->len++] = (uint8_t) w->acc;
		w->acc >>= 8;
		w->nacc -= 8;
	}
}

static size_t
bw_finish(BitWriter *w)
{
	if (w->nacc > 0)
		w->out[w->len++] = (uint8_t) w->acc;
	w->acc = 0;
	w->nacc = 0;
	return w->len;
}

static uint32_t
bitlen(uint32_t v)
{
	return v == 0 ? 0 : 32 - (uint32_t) __builtin_clz(v);
}

/* gamma(v), v >= 1: bitlen - 1 zeros, then v from its highest bit */
static void
bw_gamma(BitWriter *w, uint32_t v)
{
	uint32_t	n = bitlen(v);

	bw_put(w, 0, n - 1);
	for (int32_t i = (int32_t) n - 1; i >= 0; i--)
		bw_put(w, (v >> i) & 1, 1);
}

static uint32_t
gamma_bits(uint32_t v)
{
	return 2 * bitlen(v) - 1;
}

static uint32_t
zz(int32_t x)
{
	return x >= 0 ? (uint32_t) x << 1 : ((uint32_t) (-(x + 1)) << 1) | 1;
}

static int32_t
unzz(uint32_t v)
{
	return (v & 1) ? -(int32_t) (v >> 1) - 1 : (int32_t) (v >> 1);
}

typedef struct BitReader
{
	const uint8_t *p;
	size_t		len;			/* bytes */
	uint64_t	bit;			/* next bit */
	bool		bad;			/* read past the end */
} BitReader;

/*
 * The next bits from r->bit, least significant first, in a word: at least
 * 57 of them, or all that are left (zeros past the end).  One unaligned
 * load where the bit-at-a-time loop took a step a byte.
 */
static inline uint64_t
br_peek(const BitReader *r)
{
	size_t		byte = (size_t) (r->bit / 8);
	uint64_t	w = 0;

	if (byte + 8 <= r->len)
		memcpy(&w, r->p + byte, 8);
	else if (byte < r->len)
		memcpy(&w, r->p + byte, r->len - byte);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w >> (r->bit % 8);
}

/* the bits left to read */
static inline uint64_t
br_left(const BitReader *r)
{
	return (uint64_t) r->len * 8 - r->bit;
}

static inline uint32_t
br_get(BitReader *r, uint32_t bits)
{
	uint32_t	v;

	if (bits == 0)
		return 0;
	if (bits > br_left(r))
	{
		r->bad = true;
		r->bit = (uint64_t) r->len * 8;
		return 0;
	}
	v = (uint32_t) (br_peek(r) & ((UINT64_C(1) << bits) - 1));
	r->bit += bits;
	return v;
}

/* the low n bits of x (n <= 32) in reverse order */
static inline uint32_t
reverse_bits(uint32_t x, uint32_t n)
{
	x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
	x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
	x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
	x = __builtin_bswap32(x);
	return n == 0 ? 0 : x >> (32 - n);
}

/* gamma of a value up to max (a longer code is damage) */
static uint32_t
br_gamma(BitReader *r, uint32_t max)
{
	uint32_t	zeros = 0;
	uint32_t	v = 1;
	uint64_t	w = br_peek(r);

	/*
	 * The code whole in the word: its zeros counted at once, and its value,
	 * written from the highest bit, read back by reversing the bits.
	 */
	if (w != 0)
	{
		zeros = (uint32_t) __builtin_ctzll(w);
		if (zeros > bitlen(max))
		{
			r->bad = true;
			return 1;
		}
		if (2 * zeros + 1 <= 57 && 2 * zeros + 1 <= br_left(r))
		{
			v = reverse_bits((uint32_t) (w >> zeros) & ((UINT32_C(1) << (zeros + 1)) - 1), zeros + 1);
			r->bit += 2 * zeros + 1;
			if (v > max)
				r->bad = true;
			return v;
		}
		zeros = 0;
	}
	while (!r->bad && br_get(r, 1) == 0)
	{
		if (++zeros > bitlen(max))
		{
			r->bad = true;
			return 1;
		}
	}
	for (uint32_t i = 0; i < zeros; i++)
		v = (v << 1) | br_get(r, 1);
	if (v > max)
		r->bad = true;
	return v;
}

/* ---------------------------------------------------------------------------
 * Coders: a stream of m values (each below 2^15) as PFOR or Rice
 */

#define CODER_PFOR	0
#define CODER_RICEL	1			/* Rice, each value's parameter from its doc's length */
#define VALUE_BITS	15			/* zz of a difference of two positions: below 2^15 */
#define MAX_VALUES	(GPX_POSREC_BLOCK * GPX_POSREC_MAX_COUNT)

/* PFOR's cost with b low bits: the exceptions' indexes and high parts besides */
static uint64_t
pfor_cost(const uint32_t *v, uint32_t m, uint32_t b, uint32_t maxlen)
{
	uint64_t	bits = 4 + (uint64_t) m * b;
	uint32_t	x = 0;
	uint32_t	last = 0;

	for (uint32_t i = 0; i < m; i++)
		if (bitlen(v[i]) > b)
		{
			bits += gamma_bits(i + 1 - last);
			last = i + 1;
			x++;
		}
	bits += gamma_bits(x + 1);
	if (x > 0)
		bits += 4 + (uint64_t) x * (maxlen - b);
	return bits;
}

/*
 * RICEL's parameter for a value expected near est (its doc's length over
 * its positions: where one of them falls, how far apart they are), offset
 * by the block's d
 */
static uint32_t
ricel_k(uint32_t est, uint32_t d)
{
	int32_t		k = (int32_t) bitlen(est) + (int32_t) d - 4;

	return k < 0 ? 0 : k > 15 ? 15 : (uint32_t) k;
}

static uint64_t
ricel_cost(const uint32_t *v, const uint32_t *est, uint32_t m, uint32_t d)
{
	uint64_t	bits = 3;

	for (uint32_t i = 0; i < m; i++)
	{
		uint32_t	k = ricel_k(est[i], d);

		bits += (v[i] >> k) + 1 + k;
	}
	return bits;
}

/*
 * The cheapest coder of the values, its kind and parameter, and its bits:
 * PFOR, or RICEL where est (each value's estimate) is given, a bit then
 * saying which
 */
static uint64_t
best_coder(const uint32_t *v, const uint32_t *est, uint32_t m, uint32_t *coder, uint32_t *param)
{
	uint32_t	maxlen = 0;
	uint64_t	best = UINT64_MAX;

	for (uint32_t i = 0; i < m; i++)
		maxlen = maxlen > bitlen(v[i]) ? maxlen : bitlen(v[i]);
	for (uint32_t b = 0; b <= maxlen; b++)
	{
		uint64_t	c = pfor_cost(v, m, b, maxlen);

		if (c < best)
		{
			best = c;
			*coder = CODER_PFOR;
			*param = b;
		}
	}
	if (est == NULL)
		return best;
	for (uint32_t d = 0; d < 8; d++)
	{
		uint64_t	c = ricel_cost(v, est, m, d);

		if (c < best)
		{
			best = c;
			*coder = CODER_RICEL;
			*param = d;
		}
	}
	return best + 1;
}

static void
put_values(BitWriter *w, const uint32_t *v, const uint32_t *est, uint32_t m, uint32_t coder, uint32_t param)
{
	if (est)
		bw_put(w, coder, 1);
	if (coder == CODER_PFOR)
	{
		uint32_t	b = param;
		uint32_t	maxlen = 0;
		uint32_t	x = 0;
		uint32_t	last = 0;

		for (uint32_t i = 0; i < m; i++)
		{
			maxlen = maxlen > bitlen(v[i]) ? maxlen : bitlen(v[i]);
			x += bitlen(v[i]) > b;
		}
		bw_put(w, b, 4);
		bw_gamma(w, x + 1);
		if (x > 0)
			bw_put(w, maxlen - b, 4);
		for (uint32_t i = 0; i < m; i++)
			bw_put(w, v[i], b);
		for (uint32_t i = 0; i < m; i++)
			if (bitlen(v[i]) > b)
			{
				bw_gamma(w, i + 1 - last);
				last = i + 1;
			}
		for (uint32_t i = 0; i < m && x > 0; i++)
			if (bitlen(v[i]) > b)
				bw_put(w, v[i] >> b, maxlen - b);
		return;
	}
	bw_put(w, param, 3);
	for (uint32_t i = 0; i < m; i++)
	{
		uint32_t	k = ricel_k(est[i], param);

		for (uint32_t q = v[i] >> k; q > 0;)
		{
			uint32_t	z = q > 32 ? 32 : q;

			bw_put(w, 0, z);
			q -= z;
		}
		bw_put(w, 1, 1);
		bw_put(w, v[i], k);
	}
}

/*
 * A block's decoding: what the streams' estimates need, the doc length
 * codes of its postings, asked of the caller only when a stream is RICEL
 */
typedef struct Decoding
{
	BitReader	r;
	uint32_t	n;
	const uint16_t *npos;
	gpx_posrec_dl_fn dl_fn;
	void	   *dl_arg;
	bool		have_dl;
	uint8_t		dlc[GPX_POSREC_BLOCK];
	const uint32_t *coded;
	uint32_t	nc;
} Decoding;

/* the estimates of a stream's values (stream: 0 FIRST, 1 LAST, 2 MID) */
#define STREAM_FIRST	0
#define STREAM_LAST		1
#define STREAM_MID		2

static uint32_t
stream_estimates(const uint8_t *dlc, const uint16_t *npos, const uint32_t *coded, uint32_t nc, int stream,
				 uint32_t *est)
{
	uint32_t	m = 0;

	for (uint32_t c = 0; c < nc; c++)
	{
		uint32_t	i = coded[c];
		uint32_t	dl = gpx_dl_floor(dlc[i]);

		if (stream == STREAM_FIRST)
			est[m++] = dl / (npos[i] + 1u);
		else if (stream == STREAM_LAST && npos[i] >= 2)
			est[m++] = dl / npos[i];
		else if (stream == STREAM_MID)
			for (uint32_t k = 1; k + 1 < npos[i]; k++)
				est[m++] = dl / npos[i];
	}
	return m;
}

/* m values of a stream into v, each at most max; est: RICEL may be their coder; false on damage */
static bool
get_values(Decoding *dc, uint32_t *v, uint32_t m, uint32_t max, int stream, uint32_t *est)
{
	BitReader  *r = &dc->r;
	uint32_t	coder = est ? br_get(r, 1) : CODER_PFOR;

	if (coder == CODER_PFOR)
	{
		uint32_t	b = br_get(r, 4);
		uint32_t	x = br_gamma(r, m + 1) - 1;
		uint32_t	h = x > 0 ? br_get(r, 4) : 0;
		uint32_t	at = 0;

		if (r->bad || x > m || b + h > VALUE_BITS)
			return false;
		for (uint32_t i = 0; i < m; i++)
			v[i] = br_get(r, b);
		/* the exceptions' indexes, marked in their values' top bit, then their high parts */
		for (uint32_t e = 0; e < x && !r->bad; e++)
		{
			at += br_gamma(r, m);
			if (at > m)
				return false;
			v[at - 1] |= 1u << 31;
		}
		for (uint32_t i = 0; i < m && x > 0 && !r->bad; i++)
			if (v[i] & (1u << 31))
			{
				v[i] &= ~(1u << 31);
				v[i] |= br_get(r, h) << b;
			}
	}
	else
	{
		uint32_t	d = br_get(r, 3);

		if (!dc->have_dl)
		{
			dc->dl_fn(dc->dl_arg, dc->dlc);
			dc->have_dl = true;
		}
		if (stream_estimates(dc->dlc, dc->npos, dc->coded, dc->nc, stream, est) != m)
			return false;
		for (uint32_t i = 0; i < m && !r->bad; i++)
		{
			uint32_t	k = ricel_k(est[i], d);
			uint64_t	w = br_peek(r);
			uint32_t	q = w != 0 ? (uint32_t) __builtin_ctzll(w) : 64;

			/* the code whole in the word: the quotient's zeros counted at once */
			if (q + 1 + k <= 57 && q + 1 + k <= br_left(r))
			{
				if (q > (max >> k))
					return false;
				v[i] = (q << k) | ((uint32_t) (w >> (q + 1)) & ((UINT32_C(1) << k) - 1));
				r->bit += q + 1 + k;
				continue;
			}
			q = 0;
			while (br_get(r, 1) == 0 && !r->bad)
				if (++q > (max >> k))
					return false;
			v[i] = (q << k) | br_get(r, k);
		}
	}
	for (uint32_t i = 0; i < m; i++)
		if (v[i] > max)
			return false;
	return !r->bad;
}

/* ---------------------------------------------------------------------------
 * Repeats: which of the E postings that may repeat do
 */

#define REP_BITMAP	0
#define REP_LIST	1
#define REP_NOT		2
#define REP_RUNS	3

static uint64_t
repeats_cost(const bool *rep, uint32_t e, uint32_t form)
{
	uint64_t	bits = 0;
	uint32_t	count = 0;
	uint32_t	last = 0;
	uint32_t	run = 0;
	bool		cur = false;

	switch (form)
	{
		case REP_BITMAP:
			return e;
		case REP_LIST:
		case REP_NOT:
			for (uint32_t i = 0; i < e; i++)
				if (rep[i] == (form == REP_LIST))
				{
					bits += gamma_bits(i + 1 - last);
					last = i + 1;
					count++;
				}
			return bits + gamma_bits(count + 1);
		default:
			for (uint32_t i = 0; i < e; i++)
			{
				if (rep[i] != cur)
				{
					bits += gamma_bits(run + 1);
					cur = rep[i];
					run = 0;
				}
				run++;
			}
			return bits + gamma_bits(run + 1);
	}
}

static void
put_repeats(BitWriter *w, const bool *rep, uint32_t e, uint32_t form)
{
	uint32_t	count = 0;
	uint32_t	last = 0;
	uint32_t	run = 0;
	bool		cur = false;

	bw_put(w, form, 2);
	switch (form)
	{
		case REP_BITMAP:
			for (uint32_t i = 0; i < e; i++)
				bw_put(w, rep[i], 1);
			return;
		case REP_LIST:
		case REP_NOT:
			for (uint32_t i = 0; i < e; i++)
				count += rep[i] == (form == REP_LIST);
			bw_gamma(w, count + 1);
			for (uint32_t i = 0; i < e; i++)
				if (rep[i] == (form == REP_LIST))
				{
					bw_gamma(w, i + 1 - last);
					last = i + 1;
				}
			return;
		default:
			for (uint32_t i = 0; i < e; i++)
			{
				if (rep[i] != cur)
				{
					bw_gamma(w, run + 1);
					cur = rep[i];
					run = 0;
				}
				run++;
			}
			bw_gamma(w, run + 1);
	}
}

static bool
get_repeats(BitReader *r, bool *rep, uint32_t e)
{
	uint32_t	form = br_get(r, 2);
	uint32_t	count;
	uint32_t	at = 0;
	bool		cur = false;

	switch (form)
	{
		case REP_BITMAP:
			for (uint32_t i = 0; i < e; i++)
				rep[i] = br_get(r, 1);
			break;
		case REP_LIST:
		case REP_NOT:
			for (uint32_t i = 0; i < e; i++)
				rep[i] = form == REP_NOT;
			count = br_gamma(r, e + 1) - 1;
			for (uint32_t c = 0; c < count && !r->bad; c++)
			{
				at += br_gamma(r, e);
				if (at > e)
					return false;
				rep[at - 1] = form == REP_LIST;
			}
			break;
		default:
			while (at < e && !r->bad)
			{
				uint32_t	run = br_gamma(r, e + 1) - 1;

				if (run > e - at)
					return false;
				for (uint32_t i = 0; i < run; i++)
					rep[at++] = cur;
				cur = !cur;
			}
	}
	return !r->bad;
}

/* ---------------------------------------------------------------------------
 * Blocks
 */

uint32_t
gpx_posrec_block_flags(const GpxPosBlock *b)
{
	uint32_t	flags = 0;

	for (uint32_t i = 0; i < b->n; i++)
	{
		if (b->npos[i] == 0)
			flags |= GPX_POSREC_NONE;
		if (b->npos[i] > 255)
			flags |= GPX_POSREC_256;
		for (uint32_t j = b->start[i]; j < b->start[i + 1]; j++)
			if (b->wep[j] >> 14)
				flags |= GPX_POSREC_WEIGHTS;
	}
	return flags;
}

static bool
same_positions(const GpxPosBlock *b, uint32_t i, uint32_t j)
{
	return b->npos[i] == b->npos[j] &&
		memcmp(b->wep + b->start[i], b->wep + b->start[j], b->npos[i] * sizeof(uint16_t)) == 0;
}

#define POS(b, i, k)	((uint32_t) ((b)->wep[(b)->start[i] + (k)] & GPX_POSREC_MAX_VALUE))

/*
 * A block's streams over the coded postings (those with positions and no
 * repeat), with their values' estimates for RICEL
 */
typedef struct Streams
{
	uint32_t	nfirst;
	uint32_t	first[GPX_POSREC_BLOCK];
	uint32_t	first_est[GPX_POSREC_BLOCK];
	uint32_t	nlast;
	uint32_t	last[GPX_POSREC_BLOCK];
	uint32_t	last_est[GPX_POSREC_BLOCK];
	uint32_t	nmid;
	uint32_t	mid[MAX_VALUES];
	uint32_t	mid_est[MAX_VALUES];
} Streams;

static void
gather(const GpxPosBlock *b, const uint32_t *coded, uint32_t nc, Streams *s)
{
	s->nfirst = s->nlast = s->nmid = 0;
	for (uint32_t c = 0; c < nc; c++)
	{
		uint32_t	i = coded[c];
		uint32_t	n = b->npos[i];

		s->first[s->nfirst++] = POS(b, i, 0);
		for (uint32_t k = 1; k + 1 < n; k++)
			s->mid[s->nmid++] = POS(b, i, k) - POS(b, i, k - 1) - 1;
		if (n >= 2)
			s->last[s->nlast++] = POS(b, i, n - 1) - POS(b, i, n - 2) - 1;
	}
	stream_estimates(b->dlc, b->npos, coded, nc, STREAM_FIRST, s->first_est);
	stream_estimates(b->dlc, b->npos, coded, nc, STREAM_LAST, s->last_est);
	stream_estimates(b->dlc, b->npos, coded, nc, STREAM_MID, s->mid_est);
}

/* a stream's predictions: 0 plain (ABS / GAP), 1 from the one before (DELTA / GAPDELTA) */
typedef struct Coded
{
	uint32_t	pred;
	uint32_t	base;			/* the base's value, gamma-coded */
	uint32_t	m;
	uint32_t	coder;
	uint32_t	param;
	uint64_t	bits;
	uint32_t	v[GPX_POSREC_BLOCK];
} Coded;

/*
 * FIRST (first true) or LAST values x[0..n) (their estimates est)
 * predicted and coded the cheapest way, into c: plain, with PFOR or RICEL;
 * or from the one before, with PFOR
 */
static void
plan_stream(const uint32_t *x, const uint32_t *est, uint32_t n, bool first, Coded *c)
{
	uint32_t	tmp[GPX_POSREC_BLOCK];
	uint32_t	min = UINT32_MAX;
	uint32_t	coder = 0;
	uint32_t	param = 0;
	uint64_t	bits;

	/* plain: FIRST from the least, LAST as they are */
	for (uint32_t i = 0; i < n; i++)
		min = x[i] < min ? x[i] : min;
	c->pred = 0;
	c->base = first ? min + 1 : 0;
	c->m = first && n == 1 ? 0 : n;
	for (uint32_t i = 0; i < c->m; i++)
		c->v[i] = first ? x[i] - min : x[i];
	c->bits = (first ? gamma_bits(c->base) : 0) + (n >= 2 ? 1 : 0);
	if (c->m > 0)
		c->bits += best_coder(c->v, est, c->m, &c->coder, &c->param);
	if (n < 2)
		return;
	/* from the one before */
	for (uint32_t i = 1; i < n; i++)
		tmp[i - 1] = zz((int32_t) x[i] - (int32_t) x[i - 1]);
	bits = 1 + gamma_bits(x[0] + 1) + best_coder(tmp, NULL, n - 1, &coder, &param);
	if (bits < c->bits)
	{
		c->pred = 1;
		c->base = x[0] + 1;
		c->m = n - 1;
		c->coder = coder;
		c->param = param;
		c->bits = bits;
		memcpy(c->v, tmp, (n - 1) * sizeof(uint32_t));
	}
}

static void
put_stream(BitWriter *w, const Coded *c, const uint32_t *est, uint32_t n, bool first)
{
	if (n >= 2)
		bw_put(w, c->pred, 1);
	if (first || c->pred == 1)
		bw_gamma(w, c->base);
	if (c->m > 0)
		put_values(w, c->v, c->pred == 0 ? est : NULL, c->m, c->coder, c->param);
}

/* the block's coding with or without repeats: the postings coded, and its cost */
typedef struct Plan
{
	bool		use_repeats;
	uint32_t	form;
	uint32_t	nc;
	uint32_t	coded[GPX_POSREC_BLOCK];
	Coded		first;
	Coded		last;
	uint32_t	mid_coder;
	uint32_t	mid_param;
	uint64_t	bits;
} Plan;

static void
plan_block(const GpxPosBlock *b, const uint32_t *p, uint32_t np, const bool *rep, uint32_t e, bool use_repeats,
		   Streams *s, Plan *pl)
{
	uint32_t	r = 0;

	pl->use_repeats = use_repeats;
	pl->nc = 0;
	pl->bits = 0;
	for (uint32_t t = 0; t < np; t++)
	{
		/* P[t] may repeat for t >= 1 with as many positions as P[t - 1]: rep[r++] */
		bool		may = t > 0 && b->npos[p[t]] == b->npos[p[t - 1]];

		if (may && use_repeats && rep[r])
		{
			r++;
			continue;
		}
		r += may;
		pl->coded[pl->nc++] = p[t];
	}
	if (use_repeats)
	{
		uint64_t	best = UINT64_MAX;

		for (uint32_t f = 0; f < 4; f++)
		{
			uint64_t	c = repeats_cost(rep, e, f);

			if (c < best)
			{
				best = c;
				pl->form = f;
			}
		}
		pl->bits += 2 + best;
	}
	gather(b, pl->coded, pl->nc, s);
	if (s->nfirst > 0)
	{
		plan_stream(s->first, s->first_est, s->nfirst, true, &pl->first);
		pl->bits += pl->first.bits;
	}
	if (s->nlast > 0)
	{
		plan_stream(s->last, s->last_est, s->nlast, false, &pl->last);
		pl->bits += pl->last.bits;
	}
	if (s->nmid > 0)
		pl->bits += best_coder(s->mid, s->mid_est, s->nmid, &pl->mid_coder, &pl->mid_param);
}

/* what coding and decoding a block work in (gpx_posrec_scratch_size) */
typedef struct Scratch
{
	Streams		s;
	Plan		with;
	Plan		without;
} Scratch;

size_t
gpx_posrec_scratch_size(void)
{
	return sizeof(Scratch);
}

size_t
gpx_posrec_encode_block(const GpxPosBlock *b, uint32_t flags, uint8_t *out, void *scratch)
{
	BitWriter	w = {out, 0, 0, 0};
	Scratch    *sc = scratch;
	Streams    *s = &sc->s;
	Plan	   *pl;
	uint32_t	p[GPX_POSREC_BLOCK];
	uint32_t	np = 0;
	bool		rep[GPX_POSREC_BLOCK] = {0};
	uint32_t	e = 0;

	if (flags & GPX_POSREC_256)
		for (uint32_t i = 0; i < b->n; i++)
			if (gpx_posrec_tf(b->npos[i]) == 255 && b->npos[i] != 0)
				bw_put(&w, b->npos[i] == 256, 1);
	if (flags & GPX_POSREC_NONE)
		for (uint32_t i = 0; i < b->n; i++)
			bw_put(&w, b->npos[i] == 0, 1);
	for (uint32_t i = 0; i < b->n; i++)
		if (b->npos[i] > 0)
			p[np++] = i;
	for (uint32_t t = 1; t < np; t++)
		if (b->npos[p[t]] == b->npos[p[t - 1]])
			rep[e++] = same_positions(b, p[t], p[t - 1]);
	plan_block(b, p, np, rep, e, false, s, &sc->without);
	pl = &sc->without;
	if (e > 0)
	{
		plan_block(b, p, np, rep, e, true, s, &sc->with);
		if (sc->with.bits < sc->without.bits)
			pl = &sc->with;
		bw_put(&w, pl->use_repeats, 1);
		if (pl->use_repeats)
			put_repeats(&w, rep, e, pl->form);
	}
	gather(b, pl->coded, pl->nc, s);
	if (s->nfirst > 0)
		put_stream(&w, &pl->first, s->first_est, s->nfirst, true);
	if (s->nlast > 0)
		put_stream(&w, &pl->last, s->last_est, s->nlast, false);
	if (s->nmid > 0)
		put_values(&w, s->mid, s->mid_est, s->nmid, pl->mid_coder, pl->mid_param);
	if (flags & GPX_POSREC_WEIGHTS)
	{
		bool		all_d = true;

		for (uint32_t c = 0; c < pl->nc; c++)
			for (uint32_t k = 0; k < b->npos[pl->coded[c]]; k++)
				all_d &= (b->wep[b->start[pl->coded[c]] + k] >> 14) == 0;
		bw_put(&w, all_d, 1);
		for (uint32_t c = 0; c < pl->nc && !all_d; c++)
			for (uint32_t k = 0; k < b->npos[pl->coded[c]]; k++)
				bw_put(&w, b->wep[b->start[pl->coded[c]] + k] >> 14, 2);
	}
	return bw_finish(&w);
}

/* a stream's n values: predicted from (pred, base) and decoded into x; false on damage */
static bool
get_stream(Decoding *dc, uint32_t *x, uint32_t n, int stream, uint32_t *est)
{
	BitReader  *r = &dc->r;
	bool		first = stream == STREAM_FIRST;
	uint32_t	v[GPX_POSREC_BLOCK];
	uint32_t	pred = n >= 2 ? br_get(r, 1) : 0;
	uint32_t	base = first || pred == 1 ? br_gamma(r, GPX_POSREC_MAX_VALUE + 1) - 1 : 0;
	uint32_t	m = pred == 1 ? n - 1 : (first && n == 1 ? 0 : n);

	if (r->bad || (m > 0 && !get_values(dc, v, m, pred == 1 ? (1u << VALUE_BITS) - 1 : GPX_POSREC_MAX_VALUE,
										stream, pred == 1 ? NULL : est)))
		return false;
	if (pred == 1)
	{
		int64_t		cur = base;

		x[0] = base;
		for (uint32_t i = 1; i < n; i++)
		{
			cur += unzz(v[i - 1]);
			if (cur < 0 || cur > GPX_POSREC_MAX_VALUE)
				return false;
			x[i] = (uint32_t) cur;
		}
		return true;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		x[i] = base + (m > 0 ? v[i] : 0);
		if (x[i] > GPX_POSREC_MAX_VALUE)
			return false;
	}
	return true;
}

const char *
gpx_posrec_decode_block(const uint8_t *p, size_t len, uint32_t flags, uint32_t n, const uint8_t *tf,
						gpx_posrec_dl_fn dl_fn, void *dl_arg, GpxPosBlock *out, void *scratch)
{
	Streams    *s = &((Scratch *) scratch)->s;
	Decoding	dc = {{p, len, 0, false}, n, out->npos, dl_fn, dl_arg, false, {0}, NULL, 0};
	BitReader  *r = &dc.r;
	uint32_t	ps[GPX_POSREC_BLOCK];
	uint32_t	np = 0;
	bool		rep[GPX_POSREC_BLOCK] = {0};
	uint32_t	e = 0;
	bool		repeats = false;
	uint32_t	coded[GPX_POSREC_BLOCK];
	uint32_t	nc = 0;
	uint32_t	nlast = 0;
	uint32_t	nmid = 0;
	uint32_t	total = 0;

	if (n == 0 || n > GPX_POSREC_BLOCK || (flags & ~GPX_POSREC_FLAGS))
		return "positions block's postings are out of range";
	out->n = n;
	for (uint32_t i = 0; i < n; i++)
	{
		if (tf[i] == 0)
			return "positions block's posting has a tf of 0";
		out->npos[i] = tf[i];
	}
	if (flags & GPX_POSREC_256)
		for (uint32_t i = 0; i < n; i++)
			if (tf[i] == 255 && br_get(r, 1))
				out->npos[i] = 256;
	if (flags & GPX_POSREC_NONE)
		for (uint32_t i = 0; i < n; i++)
			if (br_get(r, 1))
			{
				if (tf[i] != 1)
					return "positions block's posting without positions has a tf above 1";
				out->npos[i] = 0;
			}
	for (uint32_t i = 0; i < n; i++)
	{
		out->start[i] = total;
		total += out->npos[i];
		if (out->npos[i] > 0)
			ps[np++] = i;
	}
	out->start[n] = total;
	for (uint32_t t = 1; t < np; t++)
		e += out->npos[ps[t]] == out->npos[ps[t - 1]];
	if (e > 0 && br_get(r, 1))
	{
		if (!get_repeats(r, rep, e))
			return "positions block's repeats are malformed";
		repeats = true;
	}
	e = 0;
	for (uint32_t t = 0; t < np; t++)
	{
		bool		may = t > 0 && out->npos[ps[t]] == out->npos[ps[t - 1]];

		if (!(may && repeats && rep[e]))
			coded[nc++] = ps[t];
		e += may;
	}
	dc.coded = coded;
	dc.nc = nc;
	for (uint32_t c = 0; c < nc; c++)
	{
		nlast += out->npos[coded[c]] >= 2;
		nmid += out->npos[coded[c]] >= 3 ? out->npos[coded[c]] - 2 : 0;
	}
	if ((nc > 0 && !get_stream(&dc, s->first, nc, STREAM_FIRST, s->first_est)) ||
		(nlast > 0 && !get_stream(&dc, s->last, nlast, STREAM_LAST, s->last_est)) ||
		(nmid > 0 && !get_values(&dc, s->mid, nmid, GPX_POSREC_MAX_VALUE, STREAM_MID, s->mid_est)))
		return r->bad ? "positions block runs past its bytes" : "positions block holds a value out of range";

	/* the coded postings' positions: first, the gaps between, last */
	nlast = nmid = 0;
	for (uint32_t c = 0; c < nc; c++)
	{
		uint32_t	i = coded[c];
		uint16_t   *w = out->wep + out->start[i];
		uint32_t	pos = s->first[c];

		w[0] = (uint16_t) pos;
		for (uint32_t k = 1; k < out->npos[i]; k++)
		{
			pos += (k + 1 == out->npos[i] ? s->last[nlast++] : s->mid[nmid++]) + 1;
			if (pos > GPX_POSREC_MAX_VALUE)
				return "positions block's positions pass the largest";
			w[k] = (uint16_t) pos;
		}
	}
	if (flags & GPX_POSREC_WEIGHTS)
	{
		bool		all_d = br_get(r, 1);

		for (uint32_t c = 0; c < nc && !all_d; c++)
			for (uint32_t k = 0; k < out->npos[coded[c]]; k++)
				out->wep[out->start[coded[c]] + k] |= (uint16_t) (br_get(r, 2) << 14);
	}
	if (r->bad)
		return "positions block runs past its bytes";
	/* the block's bytes are its positions' alone, padded with zeros */
	if ((r->bit + 7) / 8 != len || (r->bit % 8 != 0 && (p[len - 1] >> (r->bit % 8)) != 0))
		return "positions block is longer than its positions";
	/* a repeat has the positions of the posting before it with positions */
	for (uint32_t t = 1, c = 0; t < np; t++)
	{
		while (c < nc && coded[c] < ps[t])
			c++;
		if (c < nc && coded[c] == ps[t])
			continue;
		memcpy(out->wep + out->start[ps[t]], out->wep + out->start[ps[t - 1]], out->npos[ps[t]] * sizeof(uint16_t));
	}
	return NULL;
}

/* ---------------------------------------------------------------------------
 * The record's head and directory
 */

static uint32_t
dir_width(uint64_t blocks_bytes)
{
	uint32_t	w = 1;

	while (w < 32 && (blocks_bytes >> w) != 0)
		w++;
	return w;
}

size_t
gpx_posrec_head_size(uint32_t nblocks, uint64_t blocks_bytes, uint32_t flags)
{
	return (flags ? 1 : 0) + (nblocks > 1 ? 1 + gpx_posrec_dir_bytes(nblocks, dir_width(blocks_bytes)) : 0);
}

size_t
gpx_posrec_put_head(uint8_t *out, uint32_t flags, uint32_t nblocks, const uint32_t *block_bytes)
{
	size_t		len = 0;
	uint64_t	total = 0;
	uint64_t	at = 0;
	BitWriter	w;
	uint32_t	width;

	if (flags)
		out[len++] = (uint8_t) flags;
	if (nblocks <= 1)
		return len;
	for (uint32_t b = 0; b < nblocks; b++)
		total += block_bytes[b];
	width = dir_width(total);
	out[len++] = (uint8_t) width;
	w.out = out + len;
	w.acc = 0;
	w.nacc = 0;
	w.len = 0;
	for (uint32_t b = 1; b < nblocks; b++)
	{
		at += block_bytes[b - 1];
		bw_put(&w, (uint32_t) at, width);
	}
	return len + bw_finish(&w);
}

const char *
gpx_posrec_head(const uint8_t *p, size_t avail, size_t len, uint32_t df, bool has_flags, GpxPosRecHead *head)
{
	size_t		at = 0;

	memset(head, 0, sizeof(*head));
	head->nblocks = (df + GPX_POSREC_BLOCK - 1) / GPX_POSREC_BLOCK;
	if (df == 0)
		return "positions record of no posting";
	if (has_flags)
	{
		if (at >= avail || at >= len)
			return "positions record is shorter than its head";
		head->flags = p[at++];
		if (head->flags == 0 || (head->flags & ~GPX_POSREC_FLAGS))
			return "positions record has unknown flags";
	}
	if (head->nblocks > 1)
	{
		if (at >= avail || at >= len)
			return "positions record is shorter than its head";
		head->width = p[at++];
		if (head->width == 0 || head->width > 32)
			return "positions record's directory has a bad width";
	}
	head->dir = (uint32_t) at;
	if (head->dir + gpx_posrec_dir_bytes(head->nblocks, head->width) >= len)
		return "positions record is shorter than its directory";
	head->blocks = head->dir + (uint32_t) gpx_posrec_dir_bytes(head->nblocks, head->width);
	return NULL;
}

const char *
gpx_posrec_block_range(const GpxPosRecHead *head, const uint8_t *dir, size_t len, uint32_t b, size_t *from,
					   size_t *to)
{
	uint64_t	f = 0;
	uint64_t	t = len - head->blocks;
	BitReader	r = {dir, gpx_posrec_dir_bytes(head->nblocks, head->width), 0, false};

	if (b >= head->nblocks)
		return "positions block past the record's";
	if (b > 0)
	{
		r.bit = (uint64_t) (b - 1) * head->width;
		f = br_get(&r, head->width);
	}
	if (b + 1 < head->nblocks)
	{
		r.bit = (uint64_t) b * head->width;
		t = br_get(&r, head->width);
	}
	if (r.bad || f >= t || head->blocks + t > len)
		return "positions record's directory is out of order";
	*from = head->blocks + f;
	*to = head->blocks + t;
	return NULL;
}
