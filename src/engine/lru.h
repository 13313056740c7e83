/*
 * lru.h
 *	  A least-recently-used map from 64-bit keys to engine-owned entries,
 *	  with a byte budget: the bookkeeping both engines' list caches share.
 *	  The engine owns what an entry points to and frees it on eviction.
 */
#ifndef GPUIDX_LRU_H
#define GPUIDX_LRU_H

#include <stdint.h>

#include "gpuidx_engine.h"

typedef struct lru_entry
{
	uint64_t	key;
	uint64_t	bytes;			/* charged against the budget */
	void	   *data;			/* the engine's */
	struct lru_entry *hash_next;
	struct lru_entry *older;
	struct lru_entry *newer;
} lru_entry;

typedef struct lru_cache
{
	lru_entry **buckets;
	uint64_t	nbuckets;		/* a power of two */
	lru_entry	ring;			/* sentinel: ring.newer is the oldest entry */
	gpuidx_cache_stats stats;
} lru_cache;

/* false when out of memory */
extern int	lru_init(lru_cache *cache, uint64_t capacity_bytes);
extern void lru_free(lru_cache *cache);	/* entries must have been removed */

/* lookup that counts a hit or a miss and makes the entry the newest */
extern lru_entry *lru_use(lru_cache *cache, uint64_t key);

/* count a hit on an entry found by lru_find and make it the newest */
extern void lru_touch(lru_cache *cache, lru_entry *entry);

/* lookup without side effects (safe on many threads while nothing changes) */
extern lru_entry *lru_find(const lru_cache *cache, uint64_t key);

/*
 * Ask the processor for what lru_find(key) will read, a few lookups ahead:
 * step 0 the bucket, step 1 (later) the bucket's first entry.  Lookups of a
 * batch's many keys are bound by memory latency, not work.
 */
extern void lru_prefetch(const lru_cache *cache, uint64_t key, int step);

extern lru_entry *lru_oldest(const lru_cache *cache);

/* add a new entry (key not present) as the newest; false when out of memory */
extern int	lru_insert(lru_cache *cache, lru_entry *entry);

/* unlink an entry; the caller frees it and its data */
extern void lru_remove(lru_cache *cache, lru_entry *entry, int evicted);

#endif							/* GPUIDX_LRU_H */
