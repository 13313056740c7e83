/*
 * gpucache.h
 *	  The shared-memory directory of the posting lists the GPU worker's
 *	  engine holds in device memory, so that a backend sends a list's key
 *	  instead of its bytes.  Private to src/worker.
 *
 * The directory decides what is cached: backends look lists up, pin what
 * their requests use, and make room by CLOCK eviction; the engine process
 * only carries out what the directory decided (puts named by requests,
 * drops read from a ring in the queue segment), in that order: drops
 * first, so the device never holds more than the directory counted.  The
 * directory itself is in PostgreSQL's shared memory, out of the engine
 * process's reach.  A list is known by where it is
 * (index, segment, place in the segment) and checked by its header (length,
 * count, last id, CRC): segments are immutable, and a relfilenode used again
 * by another index cannot pass for the old one.
 *
 * Entry states: FREE -> LOADING (a backend sends the bytes with a put) ->
 * RESIDENT (the engine put it) -> FREE (evicted, or the engine lost it).
 * An entry is valid only under the engine generation it was loaded in (the
 * supervisor counts one for each engine process it starts): a new engine
 * process starts with an empty device.
 */
#ifndef GPX_WORKER_GPUCACHE_H
#define GPX_WORKER_GPUCACHE_H

#include "worker/shmem.h"

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
 * At submission: for each list, fill its request term (key, len, flags,
 * kind) and what it pins.  Cached lists (bytes NULL) are pinned, or false
 * is returned when one is no longer resident (nothing stays pinned then).
 * Lists with bytes that may be cached get a LOADING entry (room made by
 * eviction) and a put.  Backends only.
 */
extern bool gpx_cache_attach(const GpxWorkerList *lists, int n, GpxRequestTerm *terms,
							 GpxCachePins *pins, GpxCacheCounts *counts);

/*
 * When a request's bytes are freed (or it is not sent): unpin its entries,
 * make its loads RESIDENT where the engine put them (terms[i].put_status
 * OK in this engine generation; terms NULL: none was put), else free them;
 * forget its cached lists when the engine lacked one of them (not_cached).
 * Backends and the supervisor.
 */
extern void gpx_cache_detach(GpxCachePins *pins, const GpxRequestTerm *terms, bool not_cached);

/*
 * The supervisor, now and then: what the directory holds of indexes whose
 * storage is gone (dropped or rewritten, also by a primary this server
 * replays) is forgotten.
 */
extern void gpx_cache_sweep(void);

/* lists and bytes the directory counts now */
extern void gpx_cache_usage(uint64 *lists, uint64 *bytes, uint64 *capacity);

#endif							/* GPX_WORKER_GPUCACHE_H */
