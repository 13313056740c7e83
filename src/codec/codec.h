/*
 * codec.h
 *	  Encoding, checking and decoding of compressed posting lists (raw, EF,
 *	  LRC), independent of PostgreSQL.
 *
 * The layout is defined in include/gpuidx_format.h.  A list is opened into a
 * pl_view (pointers into the encoded bytes) after its header, its structure
 * and optionally its checksum were checked; a view that opened is safe to
 * decode: no decoder reads outside the bytes, whatever they hold.
 *
 * Bytes can be damaged in ways a checksum does not catch (or be crafted
 * with a matching one), so nothing trusts the order of the postings:
 * decoding a block checks that its postings strictly increase inside the
 * block's range, and searches check every posting they meet.  A violation
 * is reported (PL_ERR_ORDER, PL_SEARCH_CORRUPT), never returned as ids.
 * pl_validate() decodes everything, for untrusted bytes (binary input).
 */
#ifndef GPUIDX_CODEC_H
#define GPUIDX_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuidx_format.h"

typedef enum pl_status
{
	PL_OK = 0,
	PL_ERR_TRUNCATED,			/* fewer bytes than the header or payload needs */
	PL_ERR_VERSION,				/* unknown format version */
	PL_ERR_CODEC,				/* unknown codec id */
	PL_ERR_FLAGS,				/* reserved bits set */
	PL_ERR_TOO_MANY,			/* count above GPUIDX_MAX_POSTINGS */
	PL_ERR_LENGTH,				/* byte length does not match the structure */
	PL_ERR_CHECKSUM,			/* checksum mismatch */
	PL_ERR_STRUCTURE,			/* skip entries, offsets or widths inconsistent */
	PL_ERR_ORDER,				/* postings not strictly increasing or out of
								 * their block's range */
	PL_ERR_ALIGNMENT			/* bytes not 4-byte aligned */
} pl_status;

extern const char *pl_status_message(pl_status status);

/* a list opened for reading; pointers into the caller's bytes */
typedef struct pl_view
{
	int			codec;
	uint32_t	count;
	uint32_t	last;
	uint32_t	nblocks;		/* EF blocks, LRC segments, raw: 128-value
								 * pseudo-blocks */
	size_t		total_bytes;	/* header + payload */
	const uint32_t *block_first;	/* EF */
	const uint32_t *block_bitoff;	/* EF */
	const gpuidx_lrc_segment *segs; /* LRC */
	const uint32_t *values;		/* raw */
	const uint8_t *data;		/* EF/LRC data area */
	uint64_t	data_bits;		/* bits used in the data area */
} pl_view;

#define PL_OPEN_VERIFY_CHECKSUM 0x01

/*
 * A raw view over n strictly increasing values held elsewhere (lists the
 * caller decoded itself, such as the index's inline lists): no header and
 * no bytes of its own, so nothing to check; values must outlive the view.
 */
extern void pl_view_from_array(pl_view *view, const uint32_t *values, uint32_t n);

/* CRC-32C (Castagnoli), hardware-accelerated where the CPU has it */
extern uint32_t pl_crc32c(uint32_t crc, const void *data, size_t len);

/* the checksum a list's header must carry (its own field taken as 0) */
extern uint32_t pl_list_checksum(const void *bytes, size_t len);

/* open: header, length and structure checks; checksum when asked */
extern pl_status pl_open(pl_view *view, const void *bytes, size_t len, int flags);

/* decode everything and check order and ranges (for untrusted bytes) */
extern pl_status pl_validate(const pl_view *view);

/* encoded size of n strictly increasing values with codec, in bytes */
extern size_t pl_encoded_size(int codec, const uint32_t *values, uint32_t n);

/* the codec that gives the fewest bytes (ties go to the faster decoder) */
extern int	pl_choose_codec(const uint32_t *values, uint32_t n);

/*
 * Encode n strictly increasing values into out, which has room for
 * pl_encoded_size(codec, values, n) bytes; returns the bytes written.
 */
extern size_t pl_encode(int codec, const uint32_t *values, uint32_t n, void *out);

/* decode the whole list into out[count]; PL_ERR_ORDER on damaged bits */
extern pl_status pl_decode(const pl_view *view, uint32_t *out);

/*
 * The postings in [lo, hi) into out (room for min(count, hi - lo)), decoding
 * only the blocks that can hold them; returns how many, or
 * PL_SEARCH_CORRUPT when a block's postings are out of order.
 */
extern uint32_t pl_decode_range(const pl_view *view, uint32_t lo, uint32_t hi, uint32_t *out);

/* blocks: 128 postings (EF, raw) or 256 (LRC) */
extern uint32_t pl_block_capacity(const pl_view *view);
extern uint32_t pl_block_len(const pl_view *view, uint32_t block);
extern uint32_t pl_block_first(const pl_view *view, uint32_t block);

/*
 * Decode one block into out (room for pl_block_capacity); returns its
 * length, or -1 when its postings do not strictly increase from the block's
 * skip entry to below the next one (damaged bytes).
 */
extern int	pl_decode_block(const pl_view *view, uint32_t block, uint32_t *out);

/* the largest posting block b may hold: below the next skip entry, or last */
extern uint32_t pl_block_limit(const pl_view *view, uint32_t block);

/* posting i (random access: LRC and raw directly, EF through its block); unchecked */
extern uint32_t pl_get(const pl_view *view, uint32_t i);

/* last block whose first posting is <= x, searching from block lo; -1 if none */
extern int64_t pl_find_block(const pl_view *view, uint32_t lo, uint32_t x);

/* first k in [from, n) with a[k] >= x, galloping from 'from' */
extern uint32_t pl_gallop(const uint32_t *a, uint32_t from, uint32_t n, uint32_t x);

/*
 * Membership without decoding the list: skip search, then one block.
 * PL_ERR_ORDER when the postings it meets are out of order.
 */
extern pl_status pl_contains(const pl_view *view, uint32_t x, bool *found);

/* returned by the in-block searches instead of an index: postings out of order */
#define PL_SEARCH_CORRUPT UINT32_MAX

/*
 * A forward cursor for next_geq: the first posting >= x at or after the
 * current position, touching only the blocks that can hold it.
 */
typedef struct pl_cursor
{
	const pl_view *view;
	uint32_t	block;			/* current block */
	uint32_t	pos;			/* position inside the block */
	uint32_t	touched;		/* block whose payload was last read, or UINT32_MAX */
	uint32_t	decoded;		/* EF block held in buf, or UINT32_MAX */
	uint64_t	blocks_touched; /* blocks whose payload was read */
	uint32_t	answer;			/* the last posting returned, if any */
	bool		answered;
	pl_status	status;			/* PL_ERR_ORDER once damage was met */
	uint32_t	buf[GPUIDX_LRC_SEGMENT];
} pl_cursor;

extern void pl_cursor_init(pl_cursor *cur, const pl_view *view);

/*
 * Move to the first posting >= x at or after the cursor; returns false when
 * there is none (the cursor is then at the end) and when the postings it
 * met are out of order (cur->status is then PL_ERR_ORDER).
 */
extern bool pl_cursor_next_geq(pl_cursor *cur, uint32_t x, uint32_t *value);

/* per-codec entry points used by codec.c and the unit tests */
extern pl_status raw_check(pl_view *view, const uint8_t *payload, size_t len);
extern size_t raw_encoded_size(uint32_t n);
extern size_t raw_encode(const uint32_t *values, uint32_t n, uint8_t *payload);

extern pl_status ef_check(pl_view *view, const uint8_t *payload, size_t len);
/*
 * ef_check's checks of the data area's end (padding, guard word, the final
 * block ending on the last posting) alone, for a view whose skip entries
 * were checked when it was opened on other bytes of the same list.
 */
extern pl_status ef_check_tail(const pl_view *view);
extern size_t ef_encoded_size(const uint32_t *values, uint32_t n);
extern size_t ef_encode(const uint32_t *values, uint32_t n, uint8_t *payload);
extern int	ef_decode_block(const pl_view *view, uint32_t block, uint32_t *out);
extern uint32_t ef_get(const pl_view *view, uint32_t i);

/*
 * First index k >= from in EF block b with posting >= x (x below the next
 * block's first posting), found by select over the unary field without
 * decoding the block; sets *value when k < the block's length.
 * PL_SEARCH_CORRUPT when the postings it walks are out of order.
 */
extern uint32_t ef_block_lower_bound(const pl_view *view, uint32_t b, uint32_t from,
									 uint32_t x, uint32_t *value);

/*
 * One EF block: v[0..n), v[0] its skip entry, in universe U, written at bit
 * pos of a zeroed data area; returns the bits used (gpuidx_ef_block_bits).
 * Lets a writer produce a list block by block without holding its postings.
 */
extern uint64_t ef_encode_block(const uint32_t *v, uint32_t n, uint64_t universe,
								uint8_t *data, uint64_t pos);

/*
 * One LRC segment: v[0..n) (n <= 256), its record in *seg (bitoff = pos)
 * and its deviations at bit pos of a zeroed data area; returns the bits
 * used.  Lets a writer produce a list segment by segment.
 */
extern uint64_t lrc_encode_segment(const uint32_t *v, uint32_t n, gpuidx_lrc_segment *seg,
								   uint8_t *data, uint64_t pos);

extern pl_status lrc_check(pl_view *view, const uint8_t *payload, size_t len);
extern size_t lrc_encoded_size(const uint32_t *values, uint32_t n);
extern size_t lrc_encode(const uint32_t *values, uint32_t n, uint8_t *payload);
extern int	lrc_decode_block(const pl_view *view, uint32_t seg, uint32_t *out);
extern uint32_t lrc_get(const pl_view *view, uint32_t i);
/* as ef_block_lower_bound, for LRC segment seg (PL_SEARCH_CORRUPT likewise) */
extern uint32_t lrc_lower_bound(const pl_view *view, uint32_t seg, uint32_t from, uint32_t x,
								uint32_t *value);
extern pl_status lrc_validate(const pl_view *view);

#endif							/* GPUIDX_CODEC_H */
