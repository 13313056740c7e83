/*
 * vacuum.c
 *	  VACUUM: the pending area is merged first (so every row's TID is in a
 *	  segment), then each segment's doc map is read and the docs whose rows
 *	  are gone are marked in its dead-doc bitmap; scans skip them.  Their
 *	  space comes back when the segment is merged (merge.c).  The cleanup
 *	  pass merges tiers, recycles retired pages once no scan can read them,
 *	  rebuilds the free space map, reclaiming pages a crash left behind,
 *	  and cuts the free end of the file off (recycle.c).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "postmaster/autovacuum.h"
#include "storage/indexfsm.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "am/gpuidx_am.h"
#include "store/pending.h"
#include "store/segment.h"

/* dead docs marked per batch */
#define DEAD_BATCH	8192

/* set the bits of docs (increasing) on their dead-bitmap pages */
static uint32
mark_dead(Relation index, GpxSegment *seg, const uint32 *docs, uint32 n)
{
	uint32		marked = 0;
	uint32		i = 0;

	while (i < n)
	{
		uint32		pageno = docs[i] / GPX_DEAD_BITS_PER_PAGE;
		GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
		Buffer		metabuf = gpx_meta_lock(index, meta);
		Buffer		buf = gpx_seg_read(seg, GPX_STREAM_DEAD, pageno);
		GenericXLogState *state;
		Page		page;
		int			k;
		uint32		newly = 0;
		uint64		newly_dl = 0;
		uint32		last = i;
		uint32	   *dls;

		/* their lengths first: nothing may fail once the record is begun */
		while (last < n && docs[last] / GPX_DEAD_BITS_PER_PAGE == pageno)
			last++;
		dls = palloc((last - i) * sizeof(uint32));
		for (uint32 j = i; j < last; j++)
			dls[j - i] = (seg->hdr->flags & GPX_SEG_FREQS) ? gpx_seg_doclen(seg, docs[j]) : 0;

		/* gpx_seg_read share-locks: take it exclusively */
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		if ((docs[last - 1] % GPX_DEAD_BITS_PER_PAGE) / 8 >= gpx_page_used(BufferGetPage(buf)))
			gpx_seg_corrupt(seg, GPX_STREAM_DEAD, pageno, "bitmap page is too short");
		k = gpx_meta_find_segment(meta, seg->ref.id);
		if (k < 0)
			elog(ERROR, "gpuidx: segment %u vanished during VACUUM", seg->ref.id);

		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, 0);
		for (uint32 first = i; i < last; i++)
		{
			uint32		bit = docs[i] % GPX_DEAD_BITS_PER_PAGE;
			uint8	   *byte = (uint8 *) PageGetContents(page) + bit / 8;

			if (!(*byte & (1 << (bit % 8))))
			{
				*byte |= 1 << (bit % 8);
				newly++;
				newly_dl += dls[i - first];
			}
		}
		meta->segments[k].ndead += newly;
		meta->segments[k].dead_dl += newly_dl;
		seg->ref.ndead = meta->segments[k].ndead;
		gpx_page_seal(page);
		gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
		GenericXLogFinish(state);
		pfree(meta);
		pfree(dls);
		UnlockReleaseBuffer(buf);
		UnlockReleaseBuffer(metabuf);
		marked += newly;
		seg->dead_page = PG_UINT32_MAX;
	}
	return marked;
}

/*
 * The entries the merge left in the pending area were appended after it
 * began, for rows inserted after VACUUM read the table: none can hold a TID
 * VACUUM is about to free.  Checked, since a VACUUM that went on would
 * leave an entry pointing at a TID the heap may hand to another row.
 */
static void
check_pending_survivors(Relation index, IndexBulkDeleteCallback callback, void *callback_state)
{
	GpxMetaPageData meta;
	GpxPendingReader r;

	gpx_meta_read(index, &meta);
	gpx_pending_begin(&r, index, &meta, InvalidBlockNumber, 0);
	while (gpx_pending_next(&r))
	{
		gpx_vacuum_delay_point();
		if (callback(&r.tid, callback_state))
			elog(ERROR, "gpuidx index \"%s\": pending entry (%u,%u) was not merged before VACUUM frees its row",
				 RelationGetRelationName(index), ItemPointerGetBlockNumber(&r.tid),
				 ItemPointerGetOffsetNumber(&r.tid));
	}
	gpx_pending_end(&r);
}

IndexBulkDeleteResult *
gpx_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	GpxMetaPageData meta;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx vacuum",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ItemPointerData tids[GPX_DOCMAP_CHUNK];
	uint32	   *dead = palloc(DEAD_BATCH * sizeof(uint32));
	double		live = 0;

	if (stats == NULL)
		stats = MemoryContextAllocZero(old, sizeof(IndexBulkDeleteResult));
	gpx_merge_lock(index);
	/* every row's TID into a segment first, where dead docs are marked */
	gpx_recycle(index, false);
	gpx_merge_pending(index, (Size) maintenance_work_mem * 1024);
	check_pending_survivors(index, callback, callback_state);
	gpx_meta_read(index, &meta);
	for (uint32 s = 0; s < meta.nsegments; s++)
	{
		GpxSegment *seg = gpx_seg_open(index, &meta.segments[s]);
		uint32		ndead = 0;

		for (uint32 c = 0; c < seg->hdr->docmap_chunks; c++)
		{
			uint32		len = gpx_seg_chunk(seg, c, tids);

			gpx_vacuum_delay_point();
			for (uint32 j = 0; j < len; j++)
			{
				uint32		d = c * GPX_DOCMAP_CHUNK + j;

				if (gpx_seg_is_dead(seg, d))
					continue;
				if (callback(&tids[j], callback_state))
					dead[ndead++] = d;
				else
					live++;
			}
			/* marked in batches: memory stays the same at any segment size */
			if (ndead > DEAD_BATCH - GPX_DOCMAP_CHUNK)
			{
				stats->tuples_removed += mark_dead(index, seg, dead, ndead);
				ndead = 0;
			}
		}
		if (ndead > 0)
			stats->tuples_removed += mark_dead(index, seg, dead, ndead);
		gpx_seg_close(seg);
	}
	gpx_merge_unlock(index);
	stats->num_index_tuples = live;
	stats->estimated_count = false;
	stats->num_pages = RelationGetNumberOfBlocks(index);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return stats;
}

/* ---------------------------------------------------------------------------
 * Cleanup
 */

/*
 * The table's vacuum_truncate option (false where a standby's queries must
 * not be cancelled by the lock a truncation takes) holds for its indexes.
 * A parallel VACUUM (of a table with two or more large indexes beside this
 * one) cannot take that lock: logging it for standbys needs a transaction
 * id, which a parallel operation may not assign.  It leaves the end of the
 * file to the next VACUUM that is not parallel (autovacuum's never is).
 */
static bool
table_allows_truncate(Relation index)
{
	Relation	heap;
	StdRdOptions *opts;
	bool		allowed;

	if (IsInParallelMode())
		return false;
	heap = table_open(IndexGetRelation(RelationGetRelid(index), false), NoLock);
	opts = (StdRdOptions *) heap->rd_options;
#if PG_VERSION_NUM >= 180000
	/* the setting vacuum_truncate where the table does not set the option */
	allowed = opts != NULL && opts->vacuum_truncate_set ? opts->vacuum_truncate : vacuum_truncate;
#else
	allowed = opts == NULL || opts->vacuum_truncate;
#endif

	table_close(heap, NoLock);
	return allowed;
}

IndexBulkDeleteResult *
gpx_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	Size		budget = (Size) maintenance_work_mem * 1024;
	GpxMetaPageData meta;
	BlockNumber nblocks;
	BlockNumber nfree = 0;
	BlockNumber truncated;
	bool		truncate;
	double		docs = 0;

	if (info->analyze_only)
	{
		/* autovacuum's ANALYZE of an insert-only table: merge, as GIN does */
		if (AmAutoVacuumWorkerProcess() && gpx_merge_trylock(index))
		{
			gpx_merge_pending(index, budget);
			gpx_merge_unlock(index);
		}
		return stats;
	}
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	truncate = table_allows_truncate(index);
	gpx_merge_lock(index);
	gpx_recycle(index, false);
	gpx_merge_pending(index, budget);
	gpx_merge_tiers(index, budget, true, truncate);
	/* what these merges retired too, if no scan has the index open */
	if (truncate)
		gpx_recycle_exclusive(index);
	else
		gpx_recycle(index, false);
	/* every page: free ones into the free space map, orphans freed */
	nfree = gpx_reclaim_pages(index, info->strategy, &nblocks);
	IndexFreeSpaceMapVacuum(index);
	/* the free end of the file given back, unless the table's VACUUM keeps its own */
	if (truncate)
	{
		gpx_merge_relocate(index, budget, info->strategy);
		truncated = gpx_truncate_free_end(index, info->strategy);
		nblocks -= Min(nblocks, truncated);
		nfree -= Min(nfree, truncated);
	}
	gpx_merge_unlock(index);

	gpx_meta_read(index, &meta);
	for (uint32 s = 0; s < meta.nsegments; s++)
		docs += meta.segments[s].ndocs - meta.segments[s].ndead;
	stats->num_index_tuples = docs + meta.pend_entries;
	stats->estimated_count = false;
	stats->num_pages = nblocks;
	stats->pages_free = nfree;
	return stats;
}
