/*
 * deadcount.c
 *	  Each long list's postings among its segment's dead docs, shared by the
 *	  backends (when gpuidx is in shared_preload_libraries).
 *
 * A ranked query counts what each term's list holds of the docs VACUUM
 * marked dead (src/query/rank.c add_live_dfs); for a long list that reads
 * every dead doc, 40 MB at 10 million dead.  Each backend remembers its
 * counts with its cached dictionary entries (segread.c), but a new
 * connection starts with none, so after a VACUUM every connection paid
 * again for every long list.  Here the counts of external lists are kept
 * once for all: known by the index, the segment (id, header block, docs and
 * their total length), the list's place, length and df, and the segment's
 * count of dead docs they were counted against.  Docs are only ever marked
 * dead and a segment's id is never reused within an index, so a count names
 * one set; an index built again in the same relfilenode has its entries
 * forgotten at its build (gpx_dead_counts_forget_index), and where no build
 * runs (a standby replaying one) the segment's docs and total length tell
 * its segments from the old ones'.
 *
 * A fixed table of DEAD_COUNT_SLOTS entries under one lock: a lookup probes
 * DEAD_COUNT_PROBES slots from the key's hash, a store takes the key's own
 * slot, else a free one, else the first (it is a cache: what falls out is
 * counted again).
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "store/segment.h"

#define DEAD_COUNT_SLOTS	16384
#define DEAD_COUNT_PROBES	4

typedef struct DeadCountKey
{
	uint64		sum_dl;			/* the segment's */
	RelFileLocator node;
	uint32		segment;
	BlockNumber head;
	uint32		ndocs;
	uint32		page;			/* the list's */
	uint32		offset;
	uint32		len;
	uint32		df;
} DeadCountKey;

typedef struct DeadCount
{
	DeadCountKey key;			/* df 0: a free slot */
	uint32		ndead;			/* the segment's dead docs it was counted against */
	uint64		postings;
} DeadCount;

StaticAssertDecl(sizeof(DeadCountKey) == 48, "DeadCountKey has no padding, so memcmp compares keys");

typedef struct DeadCountTable
{
	LWLock	   *lock;
	DeadCount	slots[DEAD_COUNT_SLOTS];
} DeadCountTable;

static DeadCountTable *table = NULL;

Size
gpx_dead_counts_shmem_size(void)
{
	return sizeof(DeadCountTable);
}

void
gpx_dead_counts_shmem_request(void)
{
	RequestNamedLWLockTranche("gpuidx_dead_counts", 1);
}

void
gpx_dead_counts_shmem_init(void)
{
	bool		found;
	DeadCountTable *t = ShmemInitStruct("gpuidx dead counts", sizeof(DeadCountTable), &found);

	if (!found)
	{
		memset(t, 0, sizeof(*t));
		t->lock = &(GetNamedLWLockTranche("gpuidx_dead_counts"))->lock;
	}
	table = t;
}

/* the key of seg's external list ref; false for an inline one (not kept) */
static bool
key_of(GpxSegment *seg, const GpxTermRef *ref, DeadCountKey *key)
{
	if (!ref->external || ref->df == 0)
		return false;
	memset(key, 0, sizeof(*key));
	key->node = gpx_rel_locator(seg->index);
	key->segment = seg->ref.id;
	key->head = seg->ref.head;
	key->ndocs = seg->ref.ndocs;
	key->sum_dl = seg->ref.sum_dl;
	key->page = ref->page;
	key->offset = ref->offset;
	key->len = ref->len;
	key->df = ref->df;
	return true;
}

static uint32
home_slot(const DeadCountKey *key)
{
	return hash_bytes((const unsigned char *) key, sizeof(*key)) % DEAD_COUNT_SLOTS;
}

bool
gpx_dead_counts_get(GpxSegment *seg, const GpxTermRef *ref, uint64 *postings)
{
	DeadCountKey key;
	uint32		home;
	bool		found = false;

	if (table == NULL || RelationUsesLocalBuffers(seg->index) || !key_of(seg, ref, &key))
		return false;
	home = home_slot(&key);
	LWLockAcquire(table->lock, LW_SHARED);
	for (int i = 0; i < DEAD_COUNT_PROBES && !found; i++)
	{
		const DeadCount *d = &table->slots[(home + i) % DEAD_COUNT_SLOTS];

		if (memcmp(&d->key, &key, sizeof(key)) == 0 && d->ndead == seg->ref.ndead)
		{
			*postings = d->postings;
			found = true;
		}
	}
	LWLockRelease(table->lock);
	return found;
}

void
gpx_dead_counts_put(GpxSegment *seg, const GpxTermRef *ref, uint64 postings)
{
	DeadCountKey key;
	uint32		home;
	DeadCount  *into = NULL;

	if (table == NULL || RelationUsesLocalBuffers(seg->index) || !key_of(seg, ref, &key))
		return;
	home = home_slot(&key);
	LWLockAcquire(table->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DEAD_COUNT_PROBES; i++)
	{
		DeadCount  *d = &table->slots[(home + i) % DEAD_COUNT_SLOTS];

		if (memcmp(&d->key, &key, sizeof(key)) == 0)
		{
			into = d;
			break;
		}
		if (into == NULL && d->key.df == 0)
			into = d;
	}
	if (into == NULL)
		into = &table->slots[home];
	into->key = key;
	into->ndead = seg->ref.ndead;
	into->postings = postings;
	LWLockRelease(table->lock);
}

void
gpx_dead_counts_forget_index(RelFileLocator node)
{
	if (table == NULL)
		return;
	LWLockAcquire(table->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DEAD_COUNT_SLOTS; i++)
		if (table->slots[i].key.df != 0 && RelFileLocatorEquals(table->slots[i].key.node, node))
			memset(&table->slots[i], 0, sizeof(DeadCount));
	LWLockRelease(table->lock);
}
