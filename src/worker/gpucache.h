/*
 * gpucache.h
 *	  The shared-memory directory of the posting lists the GPU worker's
 *	  engine holds in device memory, so that a backend sends a list's key
 *	  instead of its bytes.  Private to src/worker.
 *
 * The directory decides what is cached: backends look lists up, pin what
 * their requests use, and make room by CLOCK eviction; the engine process
 * only carries out what the directory decided (puts named by requests,
 * drops read from a ring), in that order: drops first, so the device never
 * holds more than the directory counted.  A list is known by where it is
 * (index, segment, place in the segment) and checked by its header (length,
 * count, last id, CRC): segments are immutable, and a relfilenode used again
 * by another index cannot pass for the old one.
 *
 * Entry states: FREE -> LOADING (a backend sends the bytes with a put) ->
 * RESIDENT (the engine put it) -> FREE (evicted, or the engine lost it).
 * An entry is valid only under the engine generation it was loaded in: a
 * new engine process starts with an empty device.
 */
#ifndef GPX_WORKER_GPUCACHE_H
#define GPX_WORKER_GPUCACHE_H

#include "worker/worker.h"

/* one list of a request in the queue's arena, as the cache fills it in */
#define GPX_TERM_PUT	1		/* cache the bytes under key (a LOADING entry) */

typedef struct GpxRequestTerm
{
	uint64		key;			/* the engine's cache key; 0: none */
	uint64		offset;			/* of the list's bytes from the request's start */
	uint64		len;			/* 0: no bytes, the engine has key cached */
	uint32		flags;			/* GPX_TERM_* */
	int32		entry;			/* the cache directory entry it pins, or -1 */
	int32		put_status;		/* set by the engine for a put: gpuidx_engine_status */
	uint32		kind;			/* GPX_PART_* */
} GpxRequestTerm;

/* what an attach found, for the statistics */
typedef struct GpxCacheCounts
{
	uint32		hits;			/* lists sent by key */
	uint32		misses;			/* cacheable lists sent with their bytes */
	uint32		evictions;
} GpxCacheCounts;

/* the directory for a cache of cache_bytes on the device */
extern Size gpx_cache_shmem_size(uint64 cache_bytes);
extern void gpx_cache_shmem_request(void);
extern void gpx_cache_shmem_init(uint64 cache_bytes);

/*
 * At submission: for each list, fill its request term.  Cached lists (bytes
 * NULL) are pinned, or false is returned when one is no longer resident
 * (nothing stays pinned then).  Lists with bytes that may be cached get a
 * LOADING entry (room made by eviction) and a put.  Backends only.
 */
extern bool gpx_cache_attach(const GpxWorkerList *lists, int n, GpxRequestTerm *terms,
							 GpxCacheCounts *counts);

/*
 * When a request's bytes are freed (or it is not sent): unpin its entries, make its loads
 * RESIDENT where the engine put them (a put status of OK in this engine
 * generation), else free them; forget its cached lists when the engine
 * lacked one of them (not_cached).  Backends and the supervisor.
 */
extern void gpx_cache_detach(GpxRequestTerm *terms, uint32 nterms, bool not_cached);

/* the engine process: a key the directory evicted, to drop (lock-free) */
extern bool gpx_cache_next_drop(uint64 *key);

/* the engine process, at start: earlier entries are gone from the device */
extern void gpx_cache_new_generation(void);

/* lists and bytes the directory counts now */
extern void gpx_cache_usage(uint64 *lists, uint64 *bytes, uint64 *capacity);

#endif							/* GPX_WORKER_GPUCACHE_H */
