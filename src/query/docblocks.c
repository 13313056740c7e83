/*
 * docblocks.c
 *	  Where a segment's docs lie in the heap: per chunk of its doc map (128
 *	  docs), the lowest and highest heap block of its docs.  A count(*)
 *	  checks the chunks against the heap blocks the visibility map does not
 *	  mark all-visible: a chunk none of them falls in is counted from the
 *	  index alone, its docs never mapped to TIDs.
 *
 * A segment never changes but for its dead-doc bitmap, which this does not
 * read, so each backend keeps a segment's summary once built (8 bytes per
 * 128 docs), keyed by the index's relfilenode and the segment's id, header
 * block and doc count: REINDEX and TRUNCATE give the index a new
 * relfilenode, and segment ids are never reused within one.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pg_compat.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "query/query.h"

/* what a backend keeps at most; past it, every summary is dropped */
#define DOCBLOCKS_MAX_BYTES (64 * 1024 * 1024)

typedef struct DocBlocksKey
{
	RelFileLocator node;
	ProcNumber	backend;		/* a temporary index's relfilenode may be a permanent one's */
	uint32		segid;
	BlockNumber head;
	uint32		ndocs;
} DocBlocksKey;

typedef struct DocBlocksEntry
{
	DocBlocksKey key;
	GqSegBlocks blocks;
} DocBlocksEntry;

static MemoryContext docblocks_cxt = NULL;
static HTAB *docblocks = NULL;
static Size docblocks_bytes = 0;

static void
docblocks_reset(void)
{
	HASHCTL		ctl;

	if (docblocks_cxt == NULL)
		docblocks_cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx doc blocks", ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(docblocks_cxt);
	ctl.keysize = sizeof(DocBlocksKey);
	ctl.entrysize = sizeof(DocBlocksEntry);
	ctl.hcxt = docblocks_cxt;
	docblocks = hash_create("gpuidx doc blocks", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	docblocks_bytes = 0;
}

const GqSegBlocks *
gq_segment_blocks(GqIndex *gq, int s)
{
	GpxSegment *seg = gq_segment(gq, s);
	DocBlocksKey key;
	DocBlocksEntry *e;
	uint32		nchunks = (seg->ref.ndocs + GPX_DOCMAP_CHUNK - 1) / GPX_DOCMAP_CHUNK;
	uint32		ngroups = (nchunks + GQ_CHUNK_GROUP - 1) / GQ_CHUNK_GROUP;
	Size		bytes = (Size) (nchunks + ngroups) * 2 * sizeof(BlockNumber);
	BlockNumber *lo;
	BlockNumber *hi;
	ItemPointerData tids[GPX_DOCMAP_CHUNK];
	bool		found;

	if (docblocks == NULL)
		docblocks_reset();
	memset(&key, 0, sizeof(key));
	key.node = gpx_rel_locator(gq->index);
	key.backend = gq->index->rd_backend;
	key.segid = seg->ref.id;
	key.head = seg->ref.head;
	key.ndocs = seg->ref.ndocs;
	e = hash_search(docblocks, &key, HASH_FIND, NULL);
	if (e != NULL)
		return &e->blocks;

	/* built here first, kept only once whole (an error leaves nothing half made) */
	lo = palloc_extended(bytes / 2, MCXT_ALLOC_HUGE);
	hi = palloc_extended(bytes / 2, MCXT_ALLOC_HUGE);
	for (uint32 g = 0; g < ngroups; g++)
	{
		lo[nchunks + g] = InvalidBlockNumber;
		hi[nchunks + g] = 0;
	}
	for (uint32 c = 0; c < nchunks; c++)
	{
		uint32		n = gpx_seg_chunk(seg, c, tids);
		uint32		g = nchunks + c / GQ_CHUNK_GROUP;

		lo[c] = InvalidBlockNumber;
		hi[c] = 0;
		for (uint32 i = 0; i < n; i++)
		{
			BlockNumber b = ItemPointerGetBlockNumber(&tids[i]);

			lo[c] = Min(lo[c], b);
			hi[c] = Max(hi[c], b);
		}
		lo[g] = Min(lo[g], lo[c]);
		hi[g] = Max(hi[g], hi[c]);
		if (c % 1024 == 0)
			CHECK_FOR_INTERRUPTS();
	}

	if (docblocks_bytes + bytes > DOCBLOCKS_MAX_BYTES)
		docblocks_reset();
	e = hash_search(docblocks, &key, HASH_ENTER, &found);
	e->blocks.nchunks = nchunks;
	e->blocks.lo = MemoryContextAllocHuge(docblocks_cxt, bytes / 2);
	e->blocks.hi = MemoryContextAllocHuge(docblocks_cxt, bytes / 2);
	memcpy(e->blocks.lo, lo, bytes / 2);
	memcpy(e->blocks.hi, hi, bytes / 2);
	docblocks_bytes += bytes;
	pfree(lo);
	pfree(hi);
	return &e->blocks;
}

/*
 * Is a block of [lo, hi] in the set?  A range wider than 64 words (a chunk
 * of a merged segment can span the table) is taken as holding one: its
 * docs are then mapped and checked one by one, which is always right.
 */
static bool
any_set(const uint64 *words, BlockNumber nblocks, BlockNumber lo, BlockNumber hi)
{
	uint32		first;
	uint32		last;

	if (lo > hi)
		return false;			/* an empty chunk (none is) */
	if (hi >= nblocks || hi - lo >= 64 * 64)
		return true;
	first = lo / 64;
	last = hi / 64;
	for (uint32 w = first; w <= last; w++)
	{
		uint64		bits = words[w];

		if (w == first)
			bits &= ~UINT64CONST(0) << (lo % 64);
		if (w == last && hi % 64 != 63)
			bits &= (UINT64CONST(1) << (hi % 64 + 1)) - 1;
		if (bits != 0)
			return true;
	}
	return false;
}

uint32
gq_dirty_chunks(const GqSegBlocks *sb, const uint64 *words, BlockNumber nblocks, uint32 *chunks)
{
	uint32		ngroups = (sb->nchunks + GQ_CHUNK_GROUP - 1) / GQ_CHUNK_GROUP;
	uint32		k = 0;

	for (uint32 g = 0; g < ngroups; g++)
	{
		uint32		end = Min(sb->nchunks, (g + 1) * GQ_CHUNK_GROUP);

		if (!any_set(words, nblocks, sb->lo[sb->nchunks + g], sb->hi[sb->nchunks + g]))
			continue;
		for (uint32 c = g * GQ_CHUNK_GROUP; c < end; c++)
			if (any_set(words, nblocks, sb->lo[c], sb->hi[c]))
				chunks[k++] = c;
	}
	return k;
}
