/*
 * rank_ops.cuh
 *	  The steps of ranked queries on the device (docs/RANKING.md, after Ding
 *	  et al.): a term pass adds one term's BM25 contributions into each
 *	  query's accumulator table, then the k-th best of 96-bit keys (score
 *	  bits, then the doc id reversed) is found by a radix select over the
 *	  candidates at or above a bound (or over the whole table when too many
 *	  are), and every doc at or above it is collected.  The table has a slot per candidate, not per
 *	  document: open addressing over twice the query's postings, or the
 *	  segment's docs themselves when that is no larger, so a query's memory
 *	  and sweeps follow its postings and not the segment.  The kernels (rank_kernels.cu) glue these
 *	  steps with warps and shared memory, the host emulation (host_ops.cu)
 *	  and the host test (test_host.cu) with loops, so the same per-posting
 *	  and per-doc code is checked without a GPU.
 *
 * Scores must be the CPU's to the bit (src/rank/wand.c gpx_rank_score):
 * every file that includes this header is compiled without FMA contraction
 * (nvcc -fmad=false, host -ffp-contract=off), each accumulator gets its
 * terms' contributions in the query's term order (one launch per term, a
 * doc once per list: no atomic, no reordered sum), and the norm is the same
 * expression of the same inputs.
 */
#ifndef GPUIDX_RANK_OPS_CUH
#define GPUIDX_RANK_OPS_CUH

#include <string.h>

#include "gpuidx_engine.h"
#include "device_list.cuh"
#include "block_ops.cuh"
#include "rank/bm25.h"

/* a term of a ranked query, device pointers */
struct rank_term_desc
{
	list_desc	list;
	const uint8_t *tfs;			/* every posting's tf, or NULL: read them from freq */
	const uint8_t *freq;		/* its frequency record (store/parse.h GpxFreqHeader) */
	double		idf;
};

/* the selection's state of one query, in device memory, zero before the first pass */
struct rank_select
{
	uint64_t	thr_lo;			/* the threshold key: its low 64 bits, */
	uint64_t	thr_hi;			/* and its high 32 */
	uint32_t	remaining;		/* of the k, still to find below the fixed digits */
	uint32_t	done;			/* the threshold is final */
	uint32_t	matched;		/* candidates: docs with a term (every term) */
	uint32_t	taken;			/* docs collected */
	uint64_t	bound_lo;		/* the bound key (0: none, every candidate survives): */
	uint64_t	bound_hi;		/* at or below the k-th best's */
	uint32_t	survivors;		/* candidates at or above the bound, counted as gathered */
	uint32_t	overflow;		/* more than RANK_SURVIVORS: the radix passes select from the table */
};

/*
 * A slot of a query's accumulator table: a doc's sum, its count of terms
 * and, in a hashed table, the doc itself, in 16 bytes of one cache line, so
 * that a posting's claim, read and write touch one sector (as three
 * arrays they touched three, and a term pass waits for memory).
 */
struct alignas(16) rank_slot
{
	double		sum;
	uint32_t	key;			/* hashed: doc + 1 (0: free); dense: 0 */
	uint32_t	count;
};

/* one ranked query of a chunk, device pointers */
struct rank_job
{
	const uint8_t *doclens;		/* gpuidx_doclens_header blob */
	uint32_t	ndocs;
	uint32_t	nchunks;
	uint32_t	first_term;		/* terms[first_term, + nterms), in the query's order */
	uint32_t	nterms;
	uint32_t	every_term;
	uint32_t	k;
	double		k1;
	double		b;
	double		avgdl;
	/*
	 * The accumulator table, zeroed: nslots = 2^(32 - hash_shift) slots
	 * found by hashing the doc when hashed, else a slot per doc (nslots is
	 * ndocs, the slot is the doc).
	 */
	rank_slot  *slots;
	uint32_t	hashed;
	uint32_t	nslots;
	uint32_t	hash_shift;
	uint32_t   *hist;			/* RANK_BINS, zeroed; each pick leaves it zeroed */
	uint64_t   *best;			/* each part's best key (low word, high word; 0: none), zeroed */
	uint32_t   *surv_docs;		/* RANK_SURVIVORS each: the candidates at or above the bound */
	double	   *surv_scores;
	rank_select *sel;
	uint32_t   *out_docs;		/* k each: the docs at or above the threshold, */
	double	   *out_scores;		/* in no order */
};

/* what every ranked kernel reads */
struct rank_launch
{
	const rank_job *jobs;
	uint32_t	njobs;
	const rank_term_desc *terms;
	const uint64_t *slot_prefix;	/* slot items (RANK_SLOT_CHUNK slots) before each job; njobs + 1 */
	uint64_t	slot_items;
	int32_t    *bad;			/* set when a list fails to decode or names a doc >= ndocs */
};

/* a term pass: term 'term' of every query that has one, a work item per list block */
struct rank_pass
{
	const uint32_t *jobs;		/* the queries */
	const uint64_t *prefix;		/* blocks before each; njobs + 1 */
	uint32_t	njobs;
	uint64_t	items;
	uint32_t	term;
};

/* table slots per work item of the selection kernels */
#define RANK_SLOT_CHUNK		4096

/*
 * The bound (docs/ENGINE.md "Selection"): a part is the slots a warp of a
 * selection item sweeps (every eighth run of 32); the k-th best of the
 * parts' best keys is the key of k distinct docs, so it is at or below the
 * k-th best key of the query.  A thread of the bound's block takes the best
 * of every RANK_BOUND_THREADS-th part, so k above that has no bound.
 */
#define RANK_PARTS_PER_ITEM	8
#define RANK_PART_RUN		32
#define RANK_BOUND_THREADS	1024
/* the candidates at or above the bound selected within one block; more: the radix passes */
#define RANK_SURVIVORS		4096

/* keys: 64 bits of score, 32 of 0xFFFFFFFF - doc; digits of 11 bits from the top */
#define RANK_KEY_BITS		96
#define RANK_DIGIT_BITS		11
#define RANK_BINS			(1u << RANK_DIGIT_BITS)
#define RANK_PASSES			((RANK_KEY_BITS + RANK_DIGIT_BITS - 1) / RANK_DIGIT_BITS)

typedef unsigned __int128 rank_key;

/* ------------------------------------------------------------ reading */

/*
 * A little-endian uint32 at a 4-byte aligned address, in one read: the
 * directory of doc lengths and the frequency records' block entries are at
 * multiples of 4 from the start of their blob, and the engine places every
 * blob at a multiple of 256 (the host reads it through memcpy).
 */
GPUIDX_DEV uint32_t
dev_le32(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return *(const uint32_t *) p;
#else
	uint32_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
#endif
}

/*
 * The tf of posting i of a checked frequency record of df postings (as
 * gpx_freq_record_tf): block i / 128's width and offset, then the bits; a
 * second byte only when the bits reach into it, so no read passes the
 * record.
 */
GPUIDX_DEV uint32_t
dev_freq_tf(const uint8_t *rec, uint32_t df, uint32_t i)
{
	uint32_t	nb = (df + GPX_RANK_BLOCK - 1) / GPX_RANK_BLOCK;
	const uint8_t *entry = rec + 16 + (size_t) (i / GPX_RANK_BLOCK) * 12;	/* GpxFreqHeader, GpxFreqBlock */
	uint32_t	width = entry[8];
	const uint8_t *data;
	uint32_t	bit;
	uint32_t	acc;

	if (width == 0)
		return 1;
	data = rec + 16 + (size_t) nb * 12 + dev_le32(entry + 4);
	bit = (i % GPX_RANK_BLOCK) * width;
	acc = data[bit / 8];
	if (bit % 8 + width > 8)
		acc |= (uint32_t) data[bit / 8 + 1] << 8;
	return ((acc >> (bit % 8)) & ((1u << width) - 1)) + 1;
}

/*
 * doc's length from a checked doclens blob (as gpx_doclens_get): chunk
 * doc / 128 through the directory, its width byte, then the bits.  Always
 * five bytes from the first the bits touch, width 0 too (the blob's 8
 * guard bytes keep that in bounds, as for the host's read), so the reads
 * are straight-line code the device issues together: a lane scoring
 * several postings waits for their lengths once, not once per posting.
 */
GPUIDX_DEV uint32_t
dev_doclens_get(const uint8_t *blob, uint32_t nchunks, uint32_t doc)
{
	const uint32_t header = (uint32_t) sizeof(gpuidx_doclens_header);
	const uint8_t *chunk = blob + header + (size_t) nchunks * 4 +
		dev_le32(blob + header + (size_t) (doc / GPUIDX_DOCLENS_CHUNK) * 4);
	uint32_t	width = chunk[0];
	uint32_t	bit = (doc % GPUIDX_DOCLENS_CHUNK) * width;
	uint64_t	acc = 0;

GPUIDX_UNROLL
	for (uint32_t i = 0; i < 5; i++)
		acc |= (uint64_t) chunk[1 + bit / 8 + i] << (8 * i);
	acc >>= bit % 8;
	return (uint32_t) (acc & (width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1)));
}

/* postings per block of a list: its work items' size (LRC segments are 256) */
GPUIDX_DEV uint32_t
dev_block_capacity(const list_desc &d)
{
	return d.codec == GPUIDX_CODEC_LRC ? GPUIDX_LRC_SEGMENT : GPUIDX_EF_BLOCK;
}

/* *p from 0 to v if it was 0; what *p held (the device's atomicCAS) */
GPUIDX_DEV uint32_t
rank_claim(uint32_t *p, uint32_t v)
{
#ifdef __CUDA_ARCH__
	return atomicCAS(p, 0u, v);
#else
	uint32_t	old = *p;

	if (old == 0)
		*p = v;
	return old;
#endif
}

/* the slot where doc's probing starts (Fibonacci hashing), or the doc itself in a dense table */
GPUIDX_DEV uint32_t
rank_slot_home(const rank_job &q, uint32_t doc)
{
	return q.hashed ? (doc * 2654435761u) >> q.hash_shift : doc;
}

/*
 * Is slot s doc's?  One compare-and-swap both claims a free slot and tells
 * whose a held one is: one round trip to memory where a read first would
 * take two.  Always in a dense table.
 */
GPUIDX_DEV bool
rank_slot_take(const rank_job &q, uint32_t s, uint32_t doc)
{
	uint32_t	held;

	if (!q.hashed)
		return true;
	held = rank_claim(&q.slots[s].key, doc + 1);
	return held == 0 || held == doc + 1;
}

/* the slot after s, probing linearly */
GPUIDX_DEV uint32_t
rank_slot_next(const rank_job &q, uint32_t s)
{
	return (s + 1) & (q.nslots - 1);
}

/* doc's slot, claimed if it has none: from its home, each next slot until one is doc's */
GPUIDX_DEV uint32_t
rank_slot_of(const rank_job &q, uint32_t doc)
{
	uint32_t	s = rank_slot_home(q, doc);

	while (!rank_slot_take(q, s, doc))
		s = rank_slot_next(q, s);
	return s;
}

/* the doc slot s of q's table holds (meaningful for a slot with a count) */
GPUIDX_DEV uint32_t
rank_slot_doc(const rank_job &q, uint32_t s)
{
	return q.hashed ? q.slots[s].key - 1 : s;
}

/* posting i's tf: the inline tfs, or its block's bits in the frequency record */
GPUIDX_DEV uint32_t
rank_posting_tf(const rank_term_desc &t, uint32_t i)
{
	return t.tfs != NULL ? t.tfs[i] : dev_freq_tf(t.freq, t.list.count, i);
}

/* postings a lane (or the host, in turn) scores together */
#define RANK_LANE_POSTINGS 4

/*
 * Postings pos[u] (doc[u]; UINT32_MAX: none) of term t of query q, u <
 * RANK_LANE_POSTINGS: each one's contribution added to its doc's sum, the
 * doc's count of terms raised.  Each step is taken for all of them before
 * the next - lengths, tfs, slots (Fibonacci hashing, linear probing), sums
 * - with no branch inside a step (a missing posting reads doc 0's length
 * and posting 0's tf, and claims nothing), so the device issues a step's
 * reads and compare-and-swaps together and a lane waits for memory once a
 * step rather than once a posting: a warp's time in a pass is mostly
 * waiting.  The caller runs one term of a query per launch and each doc
 * is once in a list, so nothing else touches a doc's slot meanwhile (docs
 * race only for free slots, through the compare-and-swap), and the table
 * has twice the slots of the query's postings, so a free one is always
 * found.  A doc of length 0 is not scored (no doc with a term has one: the
 * caller marks dead docs so).  False when a doc is past the segment (a
 * list damaged behind a valid checksum): it is not added.
 */
GPUIDX_DEV bool
rank_add_postings(const rank_job &q, const rank_term_desc &t, const uint32_t *pos, const uint32_t *doc)
{
	bool		has[RANK_LANE_POSTINGS];
	uint32_t	len[RANK_LANE_POSTINGS];
	uint32_t	tf[RANK_LANE_POSTINGS];
	uint32_t	slot[RANK_LANE_POSTINGS];
	rank_slot	held_slot[RANK_LANE_POSTINGS];
	bool		ok = true;

GPUIDX_UNROLL
	for (int u = 0; u < RANK_LANE_POSTINGS; u++)
	{
		has[u] = doc[u] < q.ndocs;
		ok &= has[u] || doc[u] == UINT32_MAX;
	}
GPUIDX_UNROLL
	for (int u = 0; u < RANK_LANE_POSTINGS; u++)
		len[u] = dev_doclens_get(q.doclens, q.nchunks, has[u] ? doc[u] : 0);
GPUIDX_UNROLL
	for (int u = 0; u < RANK_LANE_POSTINGS; u++)
	{
		len[u] = has[u] ? len[u] : 0;
		tf[u] = rank_posting_tf(t, has[u] ? pos[u] : 0);
		slot[u] = has[u] ? rank_slot_home(q, doc[u]) : 0;
	}
	if (q.hashed)
	{
		uint32_t	held[RANK_LANE_POSTINGS];

GPUIDX_UNROLL
		for (int u = 0; u < RANK_LANE_POSTINGS; u++)
			held[u] = len[u] != 0 ? rank_claim(&q.slots[slot[u]].key, doc[u] + 1) : 0;
GPUIDX_UNROLL
		for (int u = 0; u < RANK_LANE_POSTINGS; u++)
			while (held[u] != 0 && held[u] != doc[u] + 1)
			{
				slot[u] = rank_slot_next(q, slot[u]);
				held[u] = rank_claim(&q.slots[slot[u]].key, doc[u] + 1);
			}
	}
	/* the whole slot read and written back in one piece, the key as claimed (0 in a dense table) */
GPUIDX_UNROLL
	for (int u = 0; u < RANK_LANE_POSTINGS; u++)
		held_slot[u] = q.slots[slot[u]];
GPUIDX_UNROLL
	for (int u = 0; u < RANK_LANE_POSTINGS; u++)
		if (len[u] != 0)
		{
			double		norm = gpx_bm25_norm(q.k1, q.b, q.avgdl, len[u]);

			held_slot[u].sum = held_slot[u].sum + gpx_bm25_term(t.idf, q.k1, tf[u], norm);
			held_slot[u].key = q.hashed ? doc[u] + 1 : 0;
			held_slot[u].count++;
			q.slots[slot[u]] = held_slot[u];
		}
	return ok;
}

/* ------------------------------------------------------------ selection */

/*
 * A doc's key: scores are >= +0 (idf >= 0, tf >= 1, norm >= 0), so their
 * IEEE bits order as the values do; ties go to the smaller doc id.
 */
GPUIDX_DEV rank_key
rank_key_of(double score, uint32_t doc)
{
	uint64_t	bits;

#ifdef __CUDA_ARCH__
	bits = (uint64_t) __double_as_longlong(score);
#else
	memcpy(&bits, &score, sizeof(bits));
#endif
	return (rank_key) bits << 32 | (rank_key) (0xFFFFFFFFu - doc);
}

GPUIDX_DEV rank_key
rank_threshold(const rank_select &s)
{
	return (rank_key) s.thr_hi << 64 | s.thr_lo;
}

/* does slot s hold a candidate of q: a doc with a term, or every term? (a free slot counts 0) */
GPUIDX_DEV bool
rank_candidate(const rank_job &q, uint32_t s)
{
	uint32_t	c = q.slots[s].count;

	return q.every_term ? c == q.nterms : c > 0;
}

/* the lowest bit of pass p's digit, and its width */
GPUIDX_DEV uint32_t
rank_digit_shift(uint32_t pass)
{
	uint32_t	top = RANK_KEY_BITS - pass * RANK_DIGIT_BITS;

	return top > RANK_DIGIT_BITS ? top - RANK_DIGIT_BITS : 0;
}

/*
 * Pass p's histogram step for one key: a key whose bits agree with the
 * threshold's digits fixed so far counts in the bin of its next digit.
 */
GPUIDX_DEV bool
rank_key_digit(rank_key key, rank_key thr, uint32_t pass, uint32_t *digit)
{
	uint32_t	fixed_from = RANK_KEY_BITS - pass * RANK_DIGIT_BITS;	/* keys' bits above it are fixed */

	if ((key >> fixed_from) != (thr >> fixed_from))
		return false;
	*digit = (uint32_t) (key >> rank_digit_shift(pass)) & ((1u << (fixed_from - rank_digit_shift(pass))) - 1);
	return true;
}

/* the histogram step for slot 'slot' of q's table: only a candidate counts */
GPUIDX_DEV bool
rank_slot_digit(const rank_job &q, const rank_select &s, uint32_t pass, uint32_t slot, uint32_t *digit)
{
	if (!rank_candidate(q, slot))
		return false;
	return rank_key_digit(rank_key_of(q.slots[slot].sum, rank_slot_doc(q, slot)), rank_threshold(s), pass, digit);
}

/*
 * After pass p's histogram: the first pass counts the candidates (matched)
 * and ends the selection when they are at most k (threshold 0: every one);
 * otherwise 'digit' is the bin where the count from the top reaches the
 * remaining k ('above' keys in higher bins, 'in_digit' in it).  The
 * selection ends when that bin is taken whole or no digit is left.
 */
GPUIDX_DEV void
rank_select_step(rank_select *s, uint32_t k, uint32_t pass, uint32_t total, uint32_t digit,
				 uint32_t above, uint32_t in_digit)
{
	rank_key	thr;

	if (pass == 0)
	{
		s->matched = total;
		s->remaining = k;
		if (total <= k)
		{
			s->done = 1;
			return;
		}
	}
	s->remaining -= above;
	thr = rank_threshold(*s) | (rank_key) digit << rank_digit_shift(pass);
	s->thr_lo = (uint64_t) thr;
	s->thr_hi = (uint64_t) (thr >> 64);
	if (in_digit == s->remaining || rank_digit_shift(pass) == 0)
		s->done = 1;
}

/* what pass p looks for: k in the first pass, then what the last step left */
GPUIDX_DEV uint32_t
rank_select_wanted(const rank_select &s, uint32_t k, uint32_t pass)
{
	return pass == 0 ? k : s.remaining;
}

/* does slot s hold one of the best: a candidate with a key at or above the threshold? */
GPUIDX_DEV bool
rank_slot_selected(const rank_job &q, const rank_select &s, uint32_t slot)
{
	return rank_candidate(q, slot) && rank_key_of(q.slots[slot].sum, rank_slot_doc(q, slot)) >= rank_threshold(s);
}

/* the selection item 'item' covers: job *job, slots [*s0, *s1) */
GPUIDX_DEV void
rank_slot_item(const rank_launch &l, uint64_t item, uint32_t *job, uint32_t *s0, uint32_t *s1)
{
	uint32_t	j = find_job(l.slot_prefix, l.njobs, item);
	uint64_t	first = (item - l.slot_prefix[j]) * RANK_SLOT_CHUNK;
	uint32_t	nslots = l.jobs[j].nslots;

	*job = j;
	*s0 = (uint32_t) first;
	*s1 = nslots - first < RANK_SLOT_CHUNK ? nslots : (uint32_t) (first + RANK_SLOT_CHUNK);
}

/* ------------------------------------------------------------ the bound and the survivors */

/*
 * Slot s's key if it holds a candidate, else 0: no candidate's key is 0, its
 * doc being below 0xFFFFFFFF (ndocs is a uint32).
 */
GPUIDX_DEV rank_key
rank_slot_key(const rank_job &q, uint32_t s)
{
	return rank_candidate(q, s) ? rank_key_of(q.slots[s].sum, rank_slot_doc(q, s)) : 0;
}

/* the part of q's table slot s is in (selection items start at multiples of RANK_SLOT_CHUNK) */
GPUIDX_DEV uint32_t
rank_slot_part(uint32_t s)
{
	return s / RANK_SLOT_CHUNK * RANK_PARTS_PER_ITEM + s / RANK_PART_RUN % RANK_PARTS_PER_ITEM;
}

GPUIDX_DEV uint32_t
rank_nparts(const rank_job &q)
{
	return (q.nslots + RANK_SLOT_CHUNK - 1) / RANK_SLOT_CHUNK * RANK_PARTS_PER_ITEM;
}

GPUIDX_DEV rank_key
rank_part_best(const rank_job &q, uint32_t part)
{
	return (rank_key) q.best[2 * (size_t) part + 1] << 64 | q.best[2 * (size_t) part];
}

GPUIDX_DEV void
rank_set_part_best(const rank_job &q, uint32_t part, rank_key key)
{
	q.best[2 * (size_t) part] = (uint64_t) key;
	q.best[2 * (size_t) part + 1] = (uint64_t) (key >> 64);
}

GPUIDX_DEV rank_key
rank_bound(const rank_select &s)
{
	return (rank_key) s.bound_hi << 64 | s.bound_lo;
}

GPUIDX_DEV void
rank_set_bound(rank_select *s, rank_key key)
{
	s->bound_lo = (uint64_t) key;
	s->bound_hi = (uint64_t) (key >> 64);
}

/* survivor i's key */
GPUIDX_DEV rank_key
rank_survivor_key(const rank_job &q, uint32_t i)
{
	return rank_key_of(q.surv_scores[i], q.surv_docs[i]);
}

/* survivor number 'at' (counted by the caller): kept while there is room */
GPUIDX_DEV void
rank_keep_survivor(const rank_job &q, uint32_t at, uint32_t slot)
{
	if (at < RANK_SURVIVORS)
	{
		q.surv_docs[at] = rank_slot_doc(q, slot);
		q.surv_scores[at] = q.slots[slot].sum;
	}
}

/* Host only: pass p's pick for one query from its histogram, as the pick kernel does it */
static inline void
host_rank_pick(const rank_job &q, uint32_t pass)
{
	rank_select *s = q.sel;
	uint32_t	total = 0;
	uint32_t	wanted;
	uint32_t	above = 0;
	uint32_t	digit = 0;

	if (s->done)
		return;
	for (uint32_t d = 0; d < RANK_BINS; d++)
		total += q.hist[d];
	wanted = rank_select_wanted(*s, q.k, pass);
	for (uint32_t d = RANK_BINS; d-- > 0;)
	{
		if (above + q.hist[d] >= wanted)
		{
			digit = d;
			break;
		}
		above += q.hist[d];
	}
	rank_select_step(s, q.k, pass, total, digit, above, q.hist[digit]);
	memset(q.hist, 0, RANK_BINS * sizeof(uint32_t));
}

/*
 * Host only, the bound's steps for one query as the kernels do them:
 * slots [s0, s1) of a selection item into their parts' bests and the
 * candidate count (rank_best_kernel)
 */
static inline void
host_rank_best(const rank_job &q, uint32_t s0, uint32_t s1)
{
	for (uint32_t s = s0; s < s1; s++)
	{
		rank_key	key = rank_slot_key(q, s);

		if (key != 0)
		{
			q.sel->matched++;
			if (key > rank_part_best(q, rank_slot_part(s)))
				rank_set_part_best(q, rank_slot_part(s), key);
		}
	}
}

/* the k-th best of the strides' bests, if there are k (rank_bound_kernel) */
static inline void
host_rank_bound(const rank_job &q)
{
	rank_key	bests[RANK_BOUND_THREADS] = {0};
	uint32_t	nparts = rank_nparts(q);

	for (uint32_t p = 0; p < nparts; p++)
		if (rank_part_best(q, p) > bests[p % RANK_BOUND_THREADS])
			bests[p % RANK_BOUND_THREADS] = rank_part_best(q, p);
	for (uint32_t t = 0; t < RANK_BOUND_THREADS && q.k <= RANK_BOUND_THREADS; t++)
	{
		uint32_t	above = 0;

		if (bests[t] == 0)
			continue;
		for (uint32_t i = 0; i < RANK_BOUND_THREADS; i++)
			above += bests[i] > bests[t];
		if (above == q.k - 1)
			rank_set_bound(q.sel, bests[t]);
	}
}

/* slots [s0, s1)'s candidates at or above the bound (rank_gather_kernel) */
static inline void
host_rank_gather(const rank_job &q, uint32_t s0, uint32_t s1)
{
	rank_select s = *q.sel;

	if (rank_bound(s) == 0 && s.matched > RANK_SURVIVORS)
	{
		q.sel->overflow = 1;
		return;
	}
	for (uint32_t slot = s0; slot < s1; slot++)
	{
		rank_key	key = rank_slot_key(q, slot);

		if (key != 0 && key >= rank_bound(s))
			rank_keep_survivor(q, q.sel->survivors++, slot);
	}
}

/* the best k of the survivors by a radix select of their keys, or overflow (rank_final_kernel) */
static inline void
host_rank_final(const rank_job &q)
{
	uint32_t	n = q.sel->survivors;
	rank_select st;
	uint32_t	hist[RANK_BINS] = {0};
	rank_job	local = q;
	rank_key	thr;

	if (q.sel->overflow || n > RANK_SURVIVORS)
	{
		q.sel->overflow = 1;
		return;
	}
	memset(&st, 0, sizeof(st));
	local.sel = &st;
	local.hist = hist;
	for (uint32_t pass = 0; pass < RANK_PASSES && n > q.k && !st.done; pass++)
	{
		for (uint32_t i = 0; i < n; i++)
		{
			uint32_t	digit;

			if (rank_key_digit(rank_survivor_key(q, i), rank_threshold(st), pass, &digit))
				hist[digit]++;
		}
		host_rank_pick(local, pass);
	}
	thr = rank_threshold(st);
	for (uint32_t i = 0; i < n; i++)
		if (rank_survivor_key(q, i) >= thr)
		{
			uint32_t	out = q.sel->taken++;

			if (out < q.k)
			{
				q.out_docs[out] = q.surv_docs[i];
				q.out_scores[out] = q.surv_scores[i];
			}
		}
	q.sel->done = 1;
}

#endif							/* GPUIDX_RANK_OPS_CUH */
