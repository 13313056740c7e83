/*
 * rankcache.c
 *	  Long lists' ranking data, kept by the backend between queries.
 *
 * Block-max WAND reads little of a frequent term's list: a rare term's docs
 * and the blocks around them.  Yet opening the list read all of it, checked
 * its CRC, read its frequency record (12 bytes a block of 128 postings:
 * 680 kB for a term in every path of debian-paths), checked that, and
 * copied the blocks' bounds into arrays, at every query: most of the time of
 * a query with such a term.  Queries come back to the same frequent terms,
 * so a backend keeps what it read of lists of GQ_RANK_CACHE_MIN_BYTES or
 * more, least recently used first out, within gpuidx.rank_cache_size.
 *
 * A segment never changes once written, but for its dead-doc bitmap, which
 * is read apart, so a copy is known for good by the index's relfilenode,
 * the segment's id and header block, and the list's place in it.  Copies of
 * an index are dropped on its relation cache invalidation (an index
 * dropped, rebuilt or truncated sends one; a lost queue, InvalidOid, drops
 * all) and when this backend builds an index, so a reused relfilenode never
 * finds an old copy.  Temporary indexes are not kept (their relfilenodes
 * may repeat).  Like the worker's GPU cache, a copy is not checked again:
 * damage to the pages after it was read is noticed by the next reader.
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "query/rankcache.h"

static int	rank_cache_kb = 32 * 1024;

typedef struct RankCacheKey
{
	RelFileLocator node;
	uint32		segment;
	BlockNumber head;
	uint32		page;			/* the list's place in the LISTS stream */
	uint32		offset;
} RankCacheKey;

typedef struct RankCacheEntry
{
	RankCacheKey key;
	Oid			index;			/* for invalidations */
	MemoryContext cxt;			/* holds data's parts */
	Size		bytes;
	uint64		used;			/* clock of its last use */
	uint64		epoch;			/* the ranking that last used it */
	bool		doomed;			/* invalidated while in use: freed next ranking */
	GqTermData	data;
} RankCacheEntry;

static HTAB *rank_cache = NULL;
static MemoryContext rank_cache_cxt = NULL;
static Size rank_cache_bytes = 0;
static uint32 rank_cache_ndoomed = 0;	/* entries with doomed set */
static uint64 rank_cache_clock = 0;
static uint64 rank_cache_epoch = 1;

static void
entry_free(RankCacheEntry *e)
{
	rank_cache_bytes -= e->bytes;
	if (e->doomed)
		rank_cache_ndoomed--;
	MemoryContextDelete(e->cxt);
	hash_search(rank_cache, &e->key, HASH_REMOVE, NULL);
}

/* entries of index (InvalidOid: all) out of use now, the others once their ranking is over */
static void
doom(Oid index)
{
	HASH_SEQ_STATUS seq;
	RankCacheEntry *e;

	if (rank_cache == NULL)
		return;
	hash_seq_init(&seq, rank_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (OidIsValid(index) && e->index != index)
			continue;
		if (e->epoch == rank_cache_epoch)
		{
			if (!e->doomed)
				rank_cache_ndoomed++;
			e->doomed = true;
		}
		else
			entry_free(e);		/* removing the entry just returned is allowed */
	}
}

static void
invalidate(Datum arg, Oid relid)
{
	doom(relid);
}

void
gq_rank_cache_forget(void)
{
	doom(InvalidOid);
}

void
gq_rank_cache_begin(void)
{
	HASH_SEQ_STATUS seq;
	RankCacheEntry *e;

	rank_cache_epoch++;
	/* every segment's ranking comes here: look for doomed copies only when there are some */
	if (rank_cache == NULL || rank_cache_ndoomed == 0)
		return;
	hash_seq_init(&seq, rank_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->doomed)
			entry_free(e);
}

static void
rank_cache_init(void)
{
	HASHCTL		ctl;

	rank_cache_cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx rank cache", ALLOCSET_SMALL_SIZES);
	ctl.keysize = sizeof(RankCacheKey);
	ctl.entrysize = sizeof(RankCacheEntry);
	ctl.hcxt = rank_cache_cxt;
	rank_cache = hash_create("gpuidx rank cache", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(invalidate, (Datum) 0);
}

/* evicts the least recently used copies no ranking uses now until bytes more fit */
static bool
make_room(Size bytes, Size budget)
{
	while (rank_cache_bytes + bytes > budget)
	{
		HASH_SEQ_STATUS seq;
		RankCacheEntry *e;
		RankCacheEntry *oldest = NULL;

		hash_seq_init(&seq, rank_cache);
		while ((e = hash_seq_search(&seq)) != NULL)
			if (e->epoch != rank_cache_epoch && (oldest == NULL || e->used < oldest->used))
				oldest = e;
		if (oldest == NULL)
			return false;
		entry_free(oldest);
	}
	return true;
}

GqTermSource
gq_rank_cache_get(GpxSegment *seg, GpxTermRef *ref, gq_term_reader read, GqTermData *d)
{
	Size		budget = (Size) rank_cache_kb * 1024;
	RankCacheKey key;
	RankCacheEntry *e;
	MemoryContext cxt;
	MemoryContext old;
	Size		bytes;
	bool		found;

	memset(d, 0, sizeof(*d));
	/* a list too short to keep, or whose list bytes alone are more than a copy may take */
	if (budget == 0 || !ref->external || ref->len < GQ_RANK_CACHE_MIN_BYTES / 2 || ref->len > budget / 2 ||
		RelationUsesLocalBuffers(seg->index))
	{
		read(seg, ref, d);
		return GQ_TERM_READ;
	}
	if (rank_cache == NULL)
		rank_cache_init();
	memset(&key, 0, sizeof(key));
	key.node = gpx_rel_locator(seg->index);
	key.segment = seg->ref.id;
	key.head = seg->ref.head;
	key.page = ref->page;
	key.offset = ref->offset;
	e = hash_search(rank_cache, &key, HASH_FIND, NULL);
	if (e != NULL && !e->doomed)
	{
		e->used = ++rank_cache_clock;
		e->epoch = rank_cache_epoch;
		*d = e->data;
		return GQ_TERM_CACHED;
	}
	if (e != NULL)
	{
		/* invalidated during this ranking, which may still use it: read apart */
		read(seg, ref, d);
		return GQ_TERM_READ;
	}

	/* read in a context of its own under the caller's: an error frees it */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx ranked list", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	read(seg, ref, d);
	MemoryContextSwitchTo(old);
	bytes = MemoryContextMemAllocated(cxt, true);
	if (bytes < GQ_RANK_CACHE_MIN_BYTES || bytes > budget / 2 || !make_room(bytes, budget))
	{
		d->cxt = cxt;			/* the caller's to delete */
		return GQ_TERM_READ;
	}
	e = hash_search(rank_cache, &key, HASH_ENTER, &found);
	Assert(!found);
	MemoryContextSetParent(cxt, rank_cache_cxt);
	e->index = RelationGetRelid(seg->index);
	e->cxt = cxt;
	e->bytes = bytes;
	e->used = ++rank_cache_clock;
	e->epoch = rank_cache_epoch;
	e->doomed = false;
	e->data = *d;
	rank_cache_bytes += bytes;
	return GQ_TERM_KEPT;
}

void
gq_rank_cache_define_settings(void)
{
	DefineCustomIntVariable("gpuidx.rank_cache_size",
							"Memory each backend keeps long lists' ranking data in between queries.",
							"A ranked query reads and checks a frequent term's list and frequencies whole; "
							"kept, later queries rank from them at once. 0 turns it off.",
							&rank_cache_kb,
							32 * 1024, 0, MAX_KILOBYTES,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
}
