/*
 * gpucache.c
 *	  The directory of the lists the GPU worker's engine holds on the device:
 *	  lookups, pins, CLOCK eviction and the ring of keys to drop
 *	  (gpucache.h says who does what).  One LWLock guards it: lookups take it
 *	  shared (a pin is an atomic add, a CLOCK reference a byte store), loads
 *	  and evictions exclusive.  CLOCK rather than LRU because a hit must not
 *	  need the exclusive lock; bench/cache measures the two on real queries.
 */
#include "gpuidx.h"

#include <sys/stat.h>

#include "common/hashfn.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "worker/gpucache.h"
#include "worker/worker.h"

#define ENTRY_FREE		0
#define ENTRY_LOADING	1
#define ENTRY_RESIDENT	2

/* the engines' allocation unit (the CUDA engine aligns lists to 256 bytes) */
#define CACHE_ALIGN		256
/* an entry never valid: generations start at 1 */
#define NO_GENERATION	0

typedef struct CacheEntry
{
	GpxListKey	key;
	/* the list's identity: its length and header */
	uint64		len;
	uint32		count;
	uint32		last;
	uint32		checksum;
	uint8		state;			/* ENTRY_* */
	uint8		referenced;		/* CLOCK's bit */
	uint64		engine_key;
	uint64		bytes;			/* counted against the capacity */
	uint32		generation;		/* the engine's when loaded; NO_GENERATION: forget */
	int32		next_free;
	pg_atomic_uint32 pins;		/* requests in flight that use it */
} CacheEntry;

/*
 * Claims on data a backend is building to send (a segment's doc lengths:
 * seconds at 100M docs): slot hash % BUILD_CLAIMS holds the claimed data's
 * hash (high 32 bits) and the second it was claimed (low 32 bits).
 */
#define BUILD_CLAIMS		64
#define BUILD_CLAIM_SECONDS	10

typedef struct CacheShared
{
	LWLock	   *lock;
	pg_atomic_uint64 build_claims[BUILD_CLAIMS];
	int32		nentries;
	int32		free_head;
	int32		hand;			/* CLOCK's */
	uint64		lists;
	uint64		bytes_used;
	uint64		bytes_capacity;
	uint64		next_key;
	CacheEntry	entries[FLEXIBLE_ARRAY_MEMBER];
} CacheShared;

typedef struct CacheSlot
{
	GpxListKey	key;
	int32		index;
} CacheSlot;

static CacheShared *cache = NULL;
static HTAB *cache_index = NULL;

static int
cache_entries(uint64 cache_bytes)
{
	uint64		n = cache_bytes / (32 * 1024);

	return (int) Min(Max(n, 1024), 1 << 20);
}

static Size
cache_struct_size(uint64 cache_bytes)
{
	return add_size(offsetof(CacheShared, entries), mul_size(cache_entries(cache_bytes), sizeof(CacheEntry)));
}

Size
gpx_cache_shmem_size(uint64 cache_bytes)
{
	return add_size(cache_struct_size(cache_bytes),
					hash_estimate_size(cache_entries(cache_bytes), sizeof(CacheSlot)));
}

void
gpx_cache_shmem_request(void)
{
	RequestNamedLWLockTranche("gpuidx_gpu_cache", 1);
}

void
gpx_cache_shmem_init(uint64 cache_bytes)
{
	bool		found;
	HASHCTL		info;
	int			n = cache_entries(cache_bytes);

	cache = ShmemInitStruct("gpuidx gpu cache", cache_struct_size(cache_bytes), &found);
	if (!found)
	{
		memset(cache, 0, offsetof(CacheShared, entries));
		cache->lock = &(GetNamedLWLockTranche("gpuidx_gpu_cache"))->lock;
		for (int i = 0; i < BUILD_CLAIMS; i++)
			pg_atomic_init_u64(&cache->build_claims[i], 0);
		cache->nentries = n;
		/* a little under the engine's room, for its alignment and holes */
		cache->bytes_capacity = cache_bytes / 16 * 15;
		cache->next_key = 1;
		for (int i = 0; i < n; i++)
		{
			memset(&cache->entries[i], 0, sizeof(CacheEntry));
			cache->entries[i].next_free = i + 1 < n ? i + 1 : -1;
			pg_atomic_init_u32(&cache->entries[i].pins, 0);
		}
		cache->free_head = 0;
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(GpxListKey);
	info.entrysize = sizeof(CacheSlot);
	cache_index = ShmemInitHash("gpuidx gpu cache index", n, n, &info, HASH_ELEM | HASH_BLOBS);
}

/* ---------------------------------------------------------------------------
 * Under the lock
 */

/* the engine process serving now loaded what this generation holds */
static uint32
current_generation(void)
{
	return pg_atomic_read_u32(&gpx_control->generation);
}

/* len 0: a part known by its header alone (a segment's doc lengths) */
static bool
same_list(const CacheEntry *e, const gpuidx_list_header *hdr, uint64 len)
{
	return (len == 0 || e->len == len) && e->count == hdr->count && e->last == hdr->last &&
		e->checksum == hdr->checksum;
}

static CacheEntry *
find_entry(const GpxListKey *key)
{
	CacheSlot  *slot = hash_search(cache_index, key, HASH_FIND, NULL);

	return slot != NULL ? &cache->entries[slot->index] : NULL;
}

/* usable by a request now: loaded into this engine, the same list */
static bool
entry_resident(const CacheEntry *e, const gpuidx_list_header *hdr, uint64 len)
{
	return e->state == ENTRY_RESIDENT &&
		e->generation == current_generation() && same_list(e, hdr, len);
}

/*
 * Keys the engine process has yet to drop.  Its drop_tail is its to write:
 * one it moved past the head (it cannot, unless it scribbles) reads as a
 * full ring, which only stops evictions.
 */
static uint64
drops_pending(void)
{
	return gpx_queue->drop_head - gpx_load_acquire64(&gpx_queue->drop_tail);
}

/* ask the engine process to drop key; false when the ring is full */
static bool
push_drop(uint64 key)
{
	uint64		head = gpx_queue->drop_head;

	if (drops_pending() >= gpx_layout.ndrops)
		return false;
	gpx_drop_ring()[head % gpx_layout.ndrops] = key;
	/* release: the key is there before the engine sees the new head */
	gpx_store_release64(&gpx_queue->drop_head, head + 1);
	return true;
}

/* exclusive lock, entry unpinned: gone from the directory, dropped on the device */
static void
remove_entry(CacheEntry *e)
{
	int32		index = (int32) (e - cache->entries);

	Assert(pg_atomic_read_u32(&e->pins) == 0);
	/* a full ring only costs the engine's own eviction of the list later */
	if (e->generation == current_generation())
		(void) push_drop(e->engine_key);
	hash_search(cache_index, &e->key, HASH_REMOVE, NULL);
	cache->bytes_used -= e->bytes;
	cache->lists--;
	e->state = ENTRY_FREE;
	e->next_free = cache->free_head;
	cache->free_head = index;
}

/* CLOCK: the next unpinned entry not referenced since the hand last passed */
static CacheEntry *
clock_victim(void)
{
	uint32		gen = current_generation();

	for (int step = 0; step < 2 * cache->nentries; step++)
	{
		CacheEntry *e = &cache->entries[cache->hand];

		cache->hand = (cache->hand + 1) % cache->nentries;
		if (e->state == ENTRY_FREE || pg_atomic_read_u32(&e->pins) > 0)
			continue;
		if (e->generation == gen && e->referenced)
		{
			e->referenced = 0;
			continue;
		}
		return e;
	}
	return NULL;
}

/* room for bytes more and a free entry, evicting (counted); false when none can be made */
static bool
make_room(uint64 bytes, uint32 *evictions)
{
	while (cache->bytes_used + bytes > cache->bytes_capacity || cache->free_head < 0)
	{
		CacheEntry *victim;

		/* an eviction the engine cannot hear of would overfill the device */
		if (drops_pending() >= gpx_layout.ndrops)
			return false;
		victim = clock_victim();
		if (victim == NULL)
			return false;
		remove_entry(victim);
		(*evictions)++;
	}
	return true;
}

/* exclusive lock: a LOADING entry for a list the request sends, or NULL */
static CacheEntry *
load_entry(const GpxWorkerList *l, uint32 *evictions)
{
	uint64		bytes = TYPEALIGN(CACHE_ALIGN, l->len);
	CacheSlot  *slot;
	CacheEntry *e;
	bool		found;

	if (bytes > cache->bytes_capacity || !make_room(bytes, evictions))
		return NULL;
	e = &cache->entries[cache->free_head];
	cache->free_head = e->next_free;
	slot = hash_search(cache_index, &l->key, HASH_ENTER_NULL, &found);
	if (slot == NULL)
	{
		e->next_free = cache->free_head;
		cache->free_head = (int32) (e - cache->entries);
		return NULL;
	}
	Assert(!found);
	slot->index = (int32) (e - cache->entries);
	e->key = l->key;
	e->len = l->len;
	e->count = l->hdr.count;
	e->last = l->hdr.last;
	e->checksum = l->hdr.checksum;
	e->state = ENTRY_LOADING;
	e->referenced = 1;
	e->engine_key = cache->next_key++;
	e->bytes = bytes;
	e->generation = current_generation();
	pg_atomic_write_u32(&e->pins, 1);
	cache->bytes_used += bytes;
	cache->lists++;
	return e;
}

/* ---------------------------------------------------------------------------
 * Backends
 */

bool
gpx_cache_holds(const GpxListKey *key, const gpuidx_list_header *hdr, uint64 len)
{
	CacheEntry *e;
	bool		held;

	if (cache == NULL)
		return false;
	LWLockAcquire(cache->lock, LW_SHARED);
	e = find_entry(key);
	held = e != NULL && entry_resident(e, hdr, len);
	LWLockRelease(cache->lock);
	return held;
}

/*
 * May this backend build the data known by key and hdr to send it?  False
 * when another claimed the same data in the last BUILD_CLAIM_SECONDS (it is
 * building it; its request will cache it): this one answers without it.  A
 * claim that never led to a cached entry (its backend failed or fell back)
 * lapses; one overwritten by other data's claim in the same slot costs
 * only a second build.
 */
bool
gpx_cache_claim_build(const GpxListKey *key, const gpuidx_list_header *hdr)
{
	uint32		h;
	uint32		now;
	pg_atomic_uint64 *slot;
	uint64		old;

	if (cache == NULL)
		return true;
	h = hash_bytes((const unsigned char *) key, sizeof(*key)) ^
		hash_bytes((const unsigned char *) hdr, sizeof(*hdr));
	now = (uint32) (GetCurrentTimestamp() / USECS_PER_SEC);
	slot = &cache->build_claims[h % BUILD_CLAIMS];
	old = pg_atomic_read_u64(slot);
	if ((uint32) (old >> 32) == h && now - (uint32) old < BUILD_CLAIM_SECONDS)
		return false;
	return pg_atomic_compare_exchange_u64(slot, &old, (uint64) h << 32 | now);
}

static void
use_entry(CacheEntry *e, GpxRequestTerm *t, GpxCachePins *pins, int i)
{
	pg_atomic_fetch_add_u32(&e->pins, 1);
	e->referenced = 1;
	t->key = e->engine_key;
	t->len = 0;
	pins->entry[i] = (int32) (e - cache->entries);
}

static void
unpin_all(GpxCachePins *pins)
{
	for (uint32 i = 0; i < pins->n; i++)
		if (pins->entry[i] >= 0)
		{
			pg_atomic_fetch_sub_u32(&cache->entries[pins->entry[i]].pins, 1);
			pins->entry[i] = -1;
		}
}

/* exclusive lock: settle the pinned entries (gpx_cache_detach) */
static void
detach_locked(GpxCachePins *pins, const GpxRequestTerm *terms, bool not_cached)
{
	uint32		gen = current_generation();

	for (uint32 i = 0; i < pins->n; i++)
	{
		CacheEntry *e;

		if (pins->entry[i] < 0)
			continue;
		e = &cache->entries[pins->entry[i]];
		pg_atomic_fetch_sub_u32(&e->pins, 1);
		if (pins->put[i])
		{
			/* only this request pins a LOADING entry; its put status is the engine's word */
			if (terms != NULL && terms[i].put_status == GPUIDX_ENGINE_OK && e->generation == gen)
				e->state = ENTRY_RESIDENT;
			else
				remove_entry(e);
		}
		else if (not_cached)
		{
			/* the engine lacked one of the request's lists: forget them all */
			e->generation = NO_GENERATION;
		}
		pins->entry[i] = -1;
	}
}

bool
gpx_cache_attach(const GpxWorkerList *lists, int n, GpxRequestTerm *terms, GpxCachePins *pins,
				 GpxCacheCounts *counts)
{
	bool		loads = false;

	memset(counts, 0, sizeof(*counts));
	pins->n = (uint32) n;
	for (int i = 0; i < n; i++)
	{
		memset(&terms[i], 0, sizeof(GpxRequestTerm));
		pins->entry[i] = -1;
		pins->put[i] = false;
		terms[i].put_status = -1;
		terms[i].len = lists[i].bytes != NULL ? lists[i].len : 0;
		terms[i].kind = lists[i].kind;
		loads |= cache != NULL && lists[i].cacheable && lists[i].bytes != NULL &&
			lists[i].len >= GPX_CACHE_MIN_BYTES;
	}
	if (cache == NULL)
	{
		for (int i = 0; i < n; i++)
			if (lists[i].bytes == NULL)
				return false;
		return true;
	}
	LWLockAcquire(cache->lock, loads ? LW_EXCLUSIVE : LW_SHARED);
	for (int i = 0; i < n; i++)
	{
		const GpxWorkerList *l = &lists[i];
		CacheEntry *e;

		if (!l->cacheable)
			continue;
		e = find_entry(&l->key);
		if (e != NULL && entry_resident(e, &l->hdr, l->len))
		{
			use_entry(e, &terms[i], pins, i);
			counts->hits++;
			continue;
		}
		if (l->bytes == NULL)
		{
			/*
			 * Evicted or lost since the caller looked: it answers on the CPU.
			 * What the earlier lists pinned or began to load is let go.
			 */
			if (loads)
				detach_locked(pins, NULL, false);
			else
				unpin_all(pins);
			LWLockRelease(cache->lock);
			memset(counts, 0, sizeof(*counts));
			return false;
		}
		if (l->len < GPX_CACHE_MIN_BYTES)
			continue;
		counts->misses++;
		if (!loads)
			continue;
		if (e != NULL)
		{
			/* being loaded by another request, or in use: sent as bytes this time */
			if (pg_atomic_read_u32(&e->pins) > 0)
				continue;
			/* stale: another engine's, forgotten, or another list at that place */
			remove_entry(e);
		}
		e = load_entry(l, &counts->evictions);
		if (e != NULL)
		{
			terms[i].key = e->engine_key;
			terms[i].flags = GPX_TERM_PUT;
			pins->entry[i] = (int32) (e - cache->entries);
			pins->put[i] = true;
		}
	}
	LWLockRelease(cache->lock);
	return true;
}

void
gpx_cache_detach(GpxCachePins *pins, const GpxRequestTerm *terms, bool not_cached)
{
	bool		loads = false;
	bool		any = false;

	if (cache == NULL)
		return;
	for (uint32 i = 0; i < pins->n; i++)
	{
		any |= pins->entry[i] >= 0;
		loads |= pins->entry[i] >= 0 && pins->put[i];
	}
	if (!any)
		return;
	if (!loads && !not_cached)
	{
		unpin_all(pins);
		return;
	}
	LWLockAcquire(cache->lock, LW_EXCLUSIVE);
	detach_locked(pins, terms, not_cached);
	LWLockRelease(cache->lock);
}

void
gpx_cache_forget_index(RelFileLocator node)
{
	if (cache == NULL)
		return;
	LWLockAcquire(cache->lock, LW_EXCLUSIVE);
	for (int i = 0; i < cache->nentries; i++)
	{
		CacheEntry *e = &cache->entries[i];

		if (e->state == ENTRY_FREE || !RelFileLocatorEquals(e->key.node, node))
			continue;
		/* a pinned one goes when its request lets go of it */
		if (pg_atomic_read_u32(&e->pins) == 0)
			remove_entry(e);
		else
			e->generation = NO_GENERATION;
	}
	LWLockRelease(cache->lock);
}

void
gpx_cache_sweep(void)
{
	RelFileLocator *nodes;
	int			n = 0;

	if (cache == NULL)
		return;
	nodes = palloc(cache->nentries * sizeof(RelFileLocator));
	LWLockAcquire(cache->lock, LW_SHARED);
	for (int i = 0; i < cache->nentries; i++)
	{
		CacheEntry *e = &cache->entries[i];
		bool		seen = false;

		if (e->state == ENTRY_FREE)
			continue;
		for (int k = 0; k < n && !seen; k++)
			seen = RelFileLocatorEquals(nodes[k], e->key.node);
		if (!seen)
			nodes[n++] = e->key.node;
	}
	LWLockRelease(cache->lock);
	for (int k = 0; k < n; k++)
	{
		char		path[MAXPGPATH];
		struct stat st;

		gpx_relpathperm(nodes[k], MAIN_FORKNUM, path);
		/* dropped or rewritten: the file is gone, or truncated until the next checkpoint */
		if ((stat(path, &st) != 0 && errno == ENOENT) || (stat(path, &st) == 0 && st.st_size == 0))
			gpx_cache_forget_index(nodes[k]);
	}
	pfree(nodes);
}

/* fixed at startup: read without the lock */
uint64
gpx_worker_cache_bytes(void)
{
	return cache != NULL ? cache->bytes_capacity : 0;
}

void
gpx_cache_usage(uint64 *lists, uint64 *bytes, uint64 *capacity)
{
	*lists = *bytes = *capacity = 0;
	if (cache == NULL)
		return;
	LWLockAcquire(cache->lock, LW_SHARED);
	*lists = cache->lists;
	*bytes = cache->bytes_used;
	*capacity = cache->bytes_capacity;
	LWLockRelease(cache->lock);
}
