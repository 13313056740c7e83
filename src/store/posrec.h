/*
 * posrec.h
 *	  A term's positions as a segment stores them (segments with
 *	  GPX_SEG_POSITIONS_V2): one record per term, its postings in list order
 *	  in blocks of 128, each block coded alone, so that one posting's
 *	  positions cost the decoding of one block.  No PostgreSQL header: the
 *	  unit tests and the fuzzers use it as it is.
 *
 * Positions are those of the document's tsvector (WordEntryPos: the
 * weight in the top 2 bits, the position in the low 14), strictly
 * increasing, at most 256 of a lexeme.  A decoder knows each posting's tf
 * (the FREQS stream, or the inline entry): it is the count of positions,
 * but for 256 positions (tf 255) and a lexeme stored without positions
 * (tf 1), which the record's flags allow for.
 *
 * Measured on real text (docs/INDEX.md, "Phrases and positions"): the
 * positions of a lexeme in the documents of one block are alike (a path's components stand where they
 * stood in the documents before it; many dictionary entries repeat the one
 * before), so each block picks how each of its streams is predicted and
 * coded, and postings whose positions are exactly the posting's before are
 * only marked.  The format in bits (each value least significant bit first,
 * as gpx_pack_bits packs them):
 *
 * record:	[flags: a byte, when the varint that gives the record's length says so]
 *			[more than one block: a byte w, then the byte offset of each block
 *			 after the first in w bits, padded to a byte]
 *			blocks, each from a byte, back to back
 *
 * block (n postings, tf[] known):
 *	 [flag 256: a bit per posting of tf 255, 1: 256 positions]
 *	 [flag NONE: a bit per posting, 1: no positions]
 *	 the postings with positions, P; a repeat has as many positions as the
 *	 one before it in P (E of them can be); when E > 0, a bit: repeats
 *	 listed, then 2 bits for how:
 *		0: a bit each of the E, 1 for a repeat
 *		1: gamma(r + 1), then the r repeats' ranks among the E as gamma gaps
 *		2: the same for the E - r that are not
 *		3: runs of not-repeats and repeats, alternating, each gamma(len + 1)
 *	 a repeat has the positions (and weights) of the posting before it; the
 *	 others are coded in three streams:
 *	 FIRST	each one's first position: predicted from the block's least
 *			(ABS: base gamma(min + 1), values F - min) or from the one before
 *			(DELTA: base gamma(F0 + 1), values zz(F - F before)); a bit says
 *			which when there are two or more
 *	 LAST	each one's last position, of those with two or more, as g = last
 *			- the one before it - 1: plain (GAP) or from the one before
 *			(GAPDELTA: base gamma(g0 + 1), values zz(g - g before)); a bit
 *			says which when there are two or more
 *	 MID	the positions between, as gap - 1, plain
 *	 each stream with values then, but for those predicted from the one
 *	 before (always PFOR), a bit for its coder:
 *		0 PFOR: b (4 bits), gamma(x + 1) exceptions, when x > 0 h (4 bits);
 *		  every value's low b bits, the exceptions' indexes as gamma gaps,
 *		  their high parts in h bits
 *		1 RICEL: d (3 bits), each value as (v >> k) zeros, a one, its low k
 *		  bits, k = bitlen(est) + d - 4 within 0..15 for est its doc's length
 *		  (gpx_dl_floor of its gpx_dl_code) over its positions (FIRST: over
 *		  their count + 1): where a position of a lexeme falls, and how far
 *		  apart they are, follow the document's length
 *	 [flag WEIGHTS: a bit, 1: every weight D; else 2 bits a position]
 *
 * gamma(v), v >= 1: bitlen(v) - 1 zeros, then v's bitlen(v) bits from its
 * highest; zz(x) = x >= 0 ? 2x : -2x - 1.
 */
#ifndef GPUIDX_STORE_POSREC_H
#define GPUIDX_STORE_POSREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPX_POSREC_BLOCK		128
#define GPX_POSREC_MAX_COUNT	256		/* a tsvector's positions per lexeme (MAXNUMPOS) */
#define GPX_POSREC_MAX_VALUE	0x3FFF	/* MAXENTRYPOS - 1 */

/* the record's flags: what its postings need beyond positions of weight D, tf of them */
#define GPX_POSREC_256		0x01	/* a posting has 256 positions (tf 255) */
#define GPX_POSREC_NONE		0x02	/* a posting has none (a stripped tsvector's lexeme) */
#define GPX_POSREC_WEIGHTS	0x04	/* a weight is not D */
#define GPX_POSREC_FLAGS	0x07

/* the most bytes a block takes: every position in 16 bits and its weight, and headers */
#define GPX_POSREC_BLOCK_MAX	(GPX_POSREC_BLOCK * GPX_POSREC_MAX_COUNT * 3 + 1024)

/* a block's postings, decoded (or handed to the encoder) */
typedef struct GpxPosBlock
{
	uint32_t	n;
	uint8_t		dlc[GPX_POSREC_BLOCK];	/* the encoder's: each one's doc length (gpx_dl_code) */
	uint16_t	npos[GPX_POSREC_BLOCK];
	uint32_t	start[GPX_POSREC_BLOCK + 1]; /* posting i's at wep[start[i] .. start[i + 1]) */
	uint16_t	wep[GPX_POSREC_BLOCK * GPX_POSREC_MAX_COUNT];
} GpxPosBlock;

/* the tf a posting of n positions has (1..255, as the index counts it) */
static inline uint32_t
gpx_posrec_tf(uint32_t n)
{
	return n == 0 ? 1 : n > 255 ? 255 : n;
}

/* the flags the postings of a block need (or'd over a record's blocks) */
extern uint32_t gpx_posrec_block_flags(const GpxPosBlock *b);

/* bytes of the memory coding and decoding work in (one for both, reused) */
extern size_t gpx_posrec_scratch_size(void);

/*
 * Block b coded for a record of flags at out (room: GPX_POSREC_BLOCK_MAX);
 * returns its bytes.  Its positions must be valid (strictly increasing,
 * within GPX_POSREC_MAX_VALUE, flags covering what they need).
 */
extern size_t gpx_posrec_encode_block(const GpxPosBlock *b, uint32_t flags, uint8_t *out, void *scratch);

/*
 * The block at p[0..len) of a record of flags, its n postings of tfs tf[]:
 * into out.  dl_fn(dl_arg, dlc) gives the n postings' doc length codes
 * (gpx_dl_code of each one's doc), asked only when a stream needs them.
 * NULL, or what is wrong (a read past len, a value out of its range,
 * positions past the largest, bytes past the positions): never a read
 * outside p[0..len).
 */
typedef void (*gpx_posrec_dl_fn) (void *arg, uint8_t *dlc);
extern const char *gpx_posrec_decode_block(const uint8_t *p, size_t len, uint32_t flags, uint32_t n,
										   const uint8_t *tf, gpx_posrec_dl_fn dl_fn, void *dl_arg,
										   GpxPosBlock *out, void *scratch);

/* how the record of df postings begins: flags byte, then a directory when more than one block */
typedef struct GpxPosRecHead
{
	uint32_t	flags;
	uint32_t	nblocks;
	uint32_t	width;			/* of the directory's offsets */
	uint32_t	dir;			/* where the directory's offsets start (bytes) */
	uint32_t	blocks;			/* where block 0 starts */
} GpxPosRecHead;

/*
 * The record's head, from its first bytes p[0..avail) (avail: at least
 * GPX_POSREC_HEAD_MAX or all of it), its length len and whether it has a
 * flags byte (the varint before it says).  NULL or what is wrong.
 */
#define GPX_POSREC_HEAD_MAX 2
extern const char *gpx_posrec_head(const uint8_t *p, size_t avail, size_t len, uint32_t df, bool has_flags,
								   GpxPosRecHead *head);

/* bytes of the directory of a record of nblocks blocks, offsets of width bits, after its width byte */
static inline size_t
gpx_posrec_dir_bytes(uint32_t nblocks, uint32_t width)
{
	return nblocks > 1 ? ((size_t) (nblocks - 1) * width + 7) / 8 : 0;
}

/*
 * Where block b starts and ends in the record: dir the directory's bytes
 * (gpx_posrec_dir_bytes), len the record's.  NULL or what is wrong.
 */
extern const char *gpx_posrec_block_range(const GpxPosRecHead *head, const uint8_t *dir, size_t len, uint32_t b,
										  size_t *from, size_t *to);

/*
 * A record's head and directory for blocks of the given byte sizes, into
 * out (room: gpx_posrec_head_size); returns its bytes.
 */
extern size_t gpx_posrec_head_size(uint32_t nblocks, uint64_t blocks_bytes, uint32_t flags);
extern size_t gpx_posrec_put_head(uint8_t *out, uint32_t flags, uint32_t nblocks, const uint32_t *block_bytes);

#endif							/* GPUIDX_STORE_POSREC_H */
