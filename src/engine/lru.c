/*
 * lru.c
 *	  Chained hash table plus a recency ring (see lru.h).
 */
#include "lru.h"

#include <stdlib.h>
#include <string.h>

static uint64_t
lru_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return key;
}

int
lru_init(lru_cache *cache, uint64_t capacity_bytes)
{
	memset(cache, 0, sizeof(*cache));
	cache->nbuckets = 1024;
	cache->buckets = calloc(cache->nbuckets, sizeof(lru_entry *));
	if (cache->buckets == NULL)
		return 0;
	cache->ring.older = cache->ring.newer = &cache->ring;
	cache->stats.bytes_capacity = capacity_bytes;
	return 1;
}

void
lru_free(lru_cache *cache)
{
	free(cache->buckets);
	cache->buckets = NULL;
}

lru_entry *
lru_find(const lru_cache *cache, uint64_t key)
{
	lru_entry  *e = cache->buckets[lru_hash(key) & (cache->nbuckets - 1)];

	while (e != NULL && e->key != key)
		e = e->hash_next;
	return e;
}

void
lru_prefetch(const lru_cache *cache, uint64_t key, int step)
{
	lru_entry  *const *slot = &cache->buckets[lru_hash(key) & (cache->nbuckets - 1)];

	if (step == 0)
		__builtin_prefetch(slot);
	else if (*slot != NULL)
		__builtin_prefetch(*slot);
}

static void
ring_unlink(lru_entry *e)
{
	e->older->newer = e->newer;
	e->newer->older = e->older;
}

static void
ring_push_newest(lru_cache *cache, lru_entry *e)
{
	e->newer = &cache->ring;
	e->older = cache->ring.older;
	cache->ring.older->newer = e;
	cache->ring.older = e;
}

lru_entry *
lru_use(lru_cache *cache, uint64_t key)
{
	lru_entry  *e = lru_find(cache, key);

	if (e == NULL)
	{
		cache->stats.misses++;
		return NULL;
	}
	lru_touch(cache, e);
	return e;
}

void
lru_touch(lru_cache *cache, lru_entry *e)
{
	cache->stats.hits++;
	ring_unlink(e);
	ring_push_newest(cache, e);
}

lru_entry *
lru_oldest(const lru_cache *cache)
{
	return cache->ring.newer == &cache->ring ? NULL : cache->ring.newer;
}

/* double the bucket array when entries outnumber buckets */
static int
lru_grow(lru_cache *cache)
{
	uint64_t	n = cache->nbuckets * 2;
	lru_entry **b = calloc(n, sizeof(lru_entry *));

	if (b == NULL)
		return 0;
	for (uint64_t i = 0; i < cache->nbuckets; i++)
	{
		lru_entry  *e = cache->buckets[i];

		while (e != NULL)
		{
			lru_entry  *next = e->hash_next;
			uint64_t	h = lru_hash(e->key) & (n - 1);

			e->hash_next = b[h];
			b[h] = e;
			e = next;
		}
	}
	free(cache->buckets);
	cache->buckets = b;
	cache->nbuckets = n;
	return 1;
}

int
lru_insert(lru_cache *cache, lru_entry *entry)
{
	uint64_t	h;

	if (cache->stats.entries >= cache->nbuckets && !lru_grow(cache))
		return 0;
	h = lru_hash(entry->key) & (cache->nbuckets - 1);
	entry->hash_next = cache->buckets[h];
	cache->buckets[h] = entry;
	ring_push_newest(cache, entry);
	cache->stats.entries++;
	cache->stats.inserts++;
	cache->stats.bytes_used += entry->bytes;
	return 1;
}

void
lru_remove(lru_cache *cache, lru_entry *entry, int evicted)
{
	lru_entry **p = &cache->buckets[lru_hash(entry->key) & (cache->nbuckets - 1)];

	while (*p != entry)
		p = &(*p)->hash_next;
	*p = entry->hash_next;
	ring_unlink(entry);
	cache->stats.entries--;
	cache->stats.bytes_used -= entry->bytes;
	if (evicted)
		cache->stats.evictions++;
}
