/*
 * gpuidx_engine.h
 *	  The only door between gpuidx and a set-operation engine: the CUDA engine
 *	  (cuda/, built as gpuidx_cuda.so and loaded with dlopen) or the CPU engine
 *	  (src/engine/cpu_engine.c) that implements the same table on machines
 *	  without a GPU.
 *
 * Plain C types only; no CUDA or PostgreSQL type crosses it.  An engine
 * object is used by one thread at a time.  Lists are passed in the encoded
 * format of gpuidx_format.h (header included), either inline for one batch
 * or uploaded once into the engine's cache under a caller-chosen key.
 *
 * Bump GPUIDX_ENGINE_ABI_VERSION on any change to this file's types or
 * functions; a loader refuses an engine built for another version.
 */
#ifndef GPUIDX_ENGINE_H
#define GPUIDX_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

#define GPUIDX_ENGINE_ABI_VERSION 6

/* most lists one query may name */
#define GPUIDX_ENGINE_MAX_TERMS 64

/* the symbol every engine shared object exports */
#define GPUIDX_ENGINE_ENTRY_SYMBOL "gpuidx_engine_entry"

typedef enum gpuidx_engine_status
{
	GPUIDX_ENGINE_OK = 0,
	GPUIDX_ENGINE_ERR_INVALID,		/* bad argument, or a list whose structure does not check */
	GPUIDX_ENGINE_ERR_NOT_CACHED,	/* a query names a key the cache does not hold (any more) */
	GPUIDX_ENGINE_ERR_TOO_LARGE,	/* a list or batch larger than the engine's memory allows */
	GPUIDX_ENGINE_ERR_NO_DEVICE,	/* no usable device, or no driver or runtime */
	GPUIDX_ENGINE_ERR_OUT_OF_MEMORY,	/* device or pinned memory exhausted */
	GPUIDX_ENGINE_ERR_LAUNCH,		/* a kernel failed to launch or to run */
	GPUIDX_ENGINE_ERR_DEVICE_LOST,	/* the device failed; the engine must be destroyed */
	GPUIDX_ENGINE_ERR_INTERNAL,
	GPUIDX_ENGINE_ERR_NO_DRIVER		/* no GPU driver on the machine at all: trying again cannot help */
} gpuidx_engine_status;

/* an error travels back as data; the caller decides how to report it */
typedef struct gpuidx_engine_error
{
	int32_t		status;			/* gpuidx_engine_status */
	int32_t		line;
	char		file[48];
	char		message[208];
} gpuidx_engine_error;

typedef struct gpuidx_engine_config
{
	uint32_t	struct_size;	/* sizeof(gpuidx_engine_config) */
	int32_t		device;			/* device ordinal (CUDA engine) */
	uint64_t	cache_bytes;	/* memory for cached lists; 0: engine default */
	uint64_t	batch_bytes;	/* staging and scratch memory for one batch; 0: default */
	uint32_t	threads;		/* CPU engine: worker threads; 0: one.  GPU engine:
								 * host threads for large staging and result
								 * copies; 0: one */
	uint32_t	skip_ratio;		/* length ratio from which a round searches instead of
								 * merging; 0: engine default */
} gpuidx_engine_config;

typedef struct gpuidx_engine_info
{
	char		kind[16];		/* "cuda" or "cpu" */
	char		device_name[96];
	int32_t		device;
	int32_t		compute_major;
	int32_t		compute_minor;
	uint32_t	multiprocessors;
	uint64_t	device_memory;	/* bytes */
	uint32_t	abi_version;
} gpuidx_engine_info;

/* one list of a query: a cache key, or the encoded bytes for this batch only */
typedef struct gpuidx_term_ref
{
	uint64_t	key;			/* used when bytes == NULL */
	const void *bytes;			/* encoded list (4-byte aligned), or NULL */
	uint64_t	len;
} gpuidx_term_ref;

/* what a query computes (gpuidx_query.op) */
#define GPUIDX_OP_AND	0			/* the intersection, less the excluded terms' lists */
#define GPUIDX_OP_OR	1			/* the union */

/* what a query asks back (gpuidx_query.result) */
#define GPUIDX_RESULT_IDS	0			/* every id of the result */
#define GPUIDX_RESULT_COUNT UINT32_MAX	/* its length alone: no id is written */
/* any other value n: the first (smallest) n ids, and the length */

/*
 * One query, by op:
 *	- GPUIDX_OP_AND (what a zeroed query asks): the intersection of its
 *	  terms' lists (at most GPUIDX_ENGINE_MAX_TERMS) and of 'initial' when
 *	  given (an intermediate result handed over from an earlier round:
 *	  sorted, distinct), less the lists of its LAST nexclude terms ("a & b &
 *	  !c & !d" is terms a, b, c, d with nexclude 2).  At least one term is
 *	  not excluded, unless initial is given.  'out' has room for
 *	  out_capacity ids, which must be at least what 'result' asks for of a
 *	  result as long as the smallest of the counts of the terms not excluded
 *	  and ninitial.
 *	- GPUIDX_OP_OR: the union of its terms' lists (1 to
 *	  GPUIDX_ENGINE_MAX_TERMS); nexclude 0, no initial.  out_capacity must be
 *	  at least what 'result' asks for of the union, which the caller may
 *	  bound better than by the sum of the lists' counts (a segment's
 *	  documents): a union that asks for more is INVALID, and nothing is
 *	  written to out.
 * Anything else is INVALID.  For GPUIDX_RESULT_COUNT out needs no room (it
 * may be NULL).  No id the query does not ask for leaves the device.
 */
typedef struct gpuidx_query
{
	const gpuidx_term_ref *terms;
	uint32_t	nterms;
	uint32_t	op;				/* GPUIDX_OP_* */
	uint32_t	nexclude;		/* AND: its last nexclude terms are subtracted */
	uint32_t	ninitial;
	const uint32_t *initial;	/* AND: or NULL */
	uint32_t   *out;
	uint32_t	out_capacity;
	uint32_t	result;			/* GPUIDX_RESULT_IDS, GPUIDX_RESULT_COUNT or n */
	uint32_t	out_count;		/* set by the engine: ids written to out */
	uint32_t	total;			/* set by the engine: the result's length */
	int32_t		status;			/* set by the engine: gpuidx_engine_status */
} gpuidx_query;

/* the CUDA engine's kernels share the helper below */
#ifdef __CUDACC__
#define GPUIDX_ENGINE_INLINE static inline __host__ __device__
#else
#define GPUIDX_ENGINE_INLINE static inline
#endif

/* ids a query with this result asks for, of a result of n ids */
GPUIDX_ENGINE_INLINE uint32_t
gpuidx_result_wanted(uint32_t result, uint32_t n)
{
	if (result == GPUIDX_RESULT_IDS)
		return n;
	if (result == GPUIDX_RESULT_COUNT)
		return 0;
	return result < n ? result : n;
}

/*
 * The most ids a valid query's result can hold, given the counts of its
 * terms' lists (in its order): an AND's out_capacity must hold what
 * 'result' asks of that many (a union's, of the union itself).  UINT64_MAX
 * for an AND of excluded terms only with no initial set, which is invalid.
 */
GPUIDX_ENGINE_INLINE uint64_t
gpuidx_query_bound(const gpuidx_query *q, const uint64_t *counts)
{
	uint64_t	bound = q->op == GPUIDX_OP_OR ? 0 : q->initial != NULL ? q->ninitial : UINT64_MAX;

	for (uint32_t t = 0; t < q->nterms; t++)
		if (q->op == GPUIDX_OP_OR)
			bound += counts[t];
		else if (t + q->nexclude < q->nterms && counts[t] < bound)
			bound = counts[t];
	return bound;
}

/* is the query's shape valid (op, nterms, nexclude, initial)? its lists are checked apart */
GPUIDX_ENGINE_INLINE int
gpuidx_query_shape_ok(const gpuidx_query *q)
{
	if (q->nterms > GPUIDX_ENGINE_MAX_TERMS)
		return 0;
	if (q->op == GPUIDX_OP_OR)
		return q->nterms >= 1 && q->nexclude == 0 && q->initial == NULL;
	return q->op == GPUIDX_OP_AND && q->nexclude <= q->nterms &&
		(q->nexclude < q->nterms || q->initial != NULL);
}

/*
 * Ranked queries (BM25 top-k over one segment, docs/RANKING.md).  Besides
 * lists, the cache holds the data ranking reads, put with cache_put_data:
 * a list's frequency record (GPUIDX_DATA_FREQS: src/store/parse.h's
 * GpxFreqHeader record, as the index stores it) and a segment's document
 * lengths (GPUIDX_DATA_DOCLENS: gpuidx_doclens_header below).  A query
 * naming a key of another kind fails with INVALID.
 */
#define GPUIDX_DATA_FREQS	1
#define GPUIDX_DATA_DOCLENS 2

/*
 * A segment's document lengths as ranking reads them on a device: the
 * index's LENS chunks laid end to end with a directory.
 *
 *	 gpuidx_doclens_header | uint32 chunk_offset[nchunks] | data | 8 zero bytes
 *
 * Chunk c covers docs 128 c .. 128 c + 127 (the last one the rest); at
 * data + chunk_offset[c] it is a byte, the width (0..32), then each doc's
 * length in width bits, little-endian bit order (store/parse.h
 * gpx_pack_bits).  The CRC-32C covers the whole blob with crc taken as 0.
 */
#define GPUIDX_DOCLENS_MAGIC	0x4C445047u	/* "GPDL" */
#define GPUIDX_DOCLENS_CHUNK	128

typedef struct gpuidx_doclens_header
{
	uint32_t	magic;
	uint32_t	crc;
	uint32_t	ndocs;
	uint32_t	nchunks;		/* ceil(ndocs / GPUIDX_DOCLENS_CHUNK) */
	uint64_t	nbytes;			/* the whole blob, guard included */
} gpuidx_doclens_header;

/* one term of a ranked query: its list, and its postings' tfs */
typedef struct gpuidx_rank_term
{
	gpuidx_term_ref list;
	gpuidx_term_ref freqs;		/* its GPUIDX_DATA_FREQS record; unused when tfs is set */
	const uint8_t *tfs;			/* or every posting's tf (1..255), sent with the batch */
	double		idf;			/* the term's idf over the whole index (log on the host) */
} gpuidx_rank_term;

/* the largest k a ranked query may ask */
#define GPUIDX_RANK_MAX_K	65536

/*
 * A ranked query over one segment: every doc with at least one term (with
 * every term when every_term) scored as src/rank/bm25.h says, the terms'
 * contributions added in the order given (bytewise order of the lexemes),
 * and the best min(k, matched) written to out_docs and out_scores, best
 * first: higher score, then smaller doc id.  The scores are the CPU's to
 * the bit (no fused multiply-add, no reordered sum).  A doc of length 0 in
 * doclens is not scored, nor counted in matched: no doc with a term has
 * that length, so the caller gives its dead docs length 0 to leave them out.
 */
typedef struct gpuidx_rank_query
{
	const gpuidx_rank_term *terms;
	uint32_t	nterms;			/* 1..GPUIDX_ENGINE_MAX_TERMS */
	uint32_t	every_term;
	gpuidx_term_ref doclens;	/* the segment's GPUIDX_DATA_DOCLENS */
	double		k1;
	double		b;
	double		avgdl;
	uint32_t	k;				/* 1..GPUIDX_RANK_MAX_K, at most out_capacity */
	uint32_t	out_capacity;
	uint32_t   *out_docs;
	double	   *out_scores;
	uint32_t	out_count;		/* set by the engine: min(k, matched) */
	uint32_t	matched;		/* set by the engine: docs scored */
	int32_t		status;			/* set by the engine: gpuidx_engine_status */
	uint32_t	pad;
} gpuidx_rank_query;

typedef struct gpuidx_batch_stats
{
	uint32_t	queries;
	uint32_t	rounds;			/* SvS rounds: the CPU engine's total; the GPU
								 * engine's most of any query (all run in one kernel) */
	uint32_t	launches;		/* kernel launches asked by the engine (0 for the CPU engine) */
	uint32_t	merge_rounds;	/* rounds merged: the CPU engine's query rounds, the GPU
								 * engine's (block of candidates, list) steps */
	uint32_t	search_rounds;	/* rounds searched, counted the same way */
	uint64_t	bytes_uploaded;	/* inline lists and initial sets copied to the device */
	uint64_t	bytes_returned;	/* results copied back */
	uint64_t	list_bytes;		/* encoded bytes of the lists the batch read */
	double		seconds;		/* wall time of run_batch */
	/* where that time went (GPU engine; the CPU engine reports all as host) */
	double		host_seconds;	/* planning and staging on the host */
	double		device_seconds; /* uploads, kernels and their round trips */
	double		return_seconds; /* results copied back into the queries' arrays */
} gpuidx_batch_stats;

typedef struct gpuidx_cache_stats
{
	uint64_t	entries;
	uint64_t	bytes_used;
	uint64_t	bytes_capacity;
	uint64_t	hits;
	uint64_t	misses;
	uint64_t	inserts;
	uint64_t	evictions;
} gpuidx_cache_stats;

typedef struct gpuidx_engine gpuidx_engine;

typedef struct gpuidx_engine_api
{
	uint32_t	abi_version;	/* GPUIDX_ENGINE_ABI_VERSION */
	uint32_t	struct_size;	/* sizeof(gpuidx_engine_api) */

	int			(*create) (const gpuidx_engine_config *config, gpuidx_engine **engine,
						   gpuidx_engine_error *error);
	void		(*destroy) (gpuidx_engine *engine);
	int			(*get_info) (gpuidx_engine *engine, gpuidx_engine_info *info);

	/*
	 * Cache: put uploads (or replaces) a list under key, evicting the least
	 * recently used entries to make room; a list larger than the whole cache
	 * is refused (TOO_LARGE).  Every query that names a key refreshes it.
	 */
	int			(*cache_put) (gpuidx_engine *engine, uint64_t key, const void *bytes,
							  uint64_t len, gpuidx_engine_error *error);
	int			(*cache_contains) (gpuidx_engine *engine, uint64_t key);
	int			(*cache_remove) (gpuidx_engine *engine, uint64_t key);
	void		(*cache_get_stats) (gpuidx_engine *engine, gpuidx_cache_stats *stats);

	/*
	 * The same for ranking's data (GPUIDX_DATA_*): the engine checks its
	 * structure and CRC and refuses it (INVALID) when they do not hold.
	 */
	int			(*cache_put_data) (gpuidx_engine *engine, uint64_t key, uint32_t kind,
								   const void *bytes, uint64_t len, gpuidx_engine_error *error);

	/*
	 * Run a batch: every query's status and result are set.  Returns OK when
	 * the batch ran (individual queries may still carry an error, e.g.
	 * NOT_CACHED); any other status means no result can be trusted and the
	 * caller should answer the batch on the CPU.  stats may be NULL.
	 */
	int			(*run_batch) (gpuidx_engine *engine, gpuidx_query *queries, uint32_t nqueries,
							  gpuidx_batch_stats *stats, gpuidx_engine_error *error);

	/* the same for ranked queries; stats as for run_batch */
	int			(*run_ranked) (gpuidx_engine *engine, gpuidx_rank_query *queries, uint32_t nqueries,
							   gpuidx_batch_stats *stats, gpuidx_engine_error *error);
} gpuidx_engine_api;

/*
 * The entry point a loadable engine exports under GPUIDX_ENGINE_ENTRY_SYMBOL:
 * its table, or NULL when it was built for another ABI version.
 */
typedef const gpuidx_engine_api *(*gpuidx_engine_entry_fn) (uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIDX_ENGINE_H */
