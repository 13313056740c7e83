/*
 * vacuum.c
 *	  VACUUM: the pending area is merged first (so every row's TID is in a
 *	  segment), then each segment's doc map is read and the docs whose rows
 *	  are gone are marked in its dead-doc bitmap; scans skip them.  Their
 *	  space comes back when the segment is merged (merge.c).  The cleanup
 *	  pass merges tiers, recycles retired pages once no scan can read them,
 *	  and rebuilds the free space map, reclaiming pages a crash left behind.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "postmaster/autovacuum.h"
#include "storage/indexfsm.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "am/gpuidx_am.h"
#include "store/segment.h"

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

		uint32		last = i;

		/* gpx_seg_read share-locks: take it exclusively */
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		while (last < n && docs[last] / GPX_DEAD_BITS_PER_PAGE == pageno)
			last++;
		if ((docs[last - 1] % GPX_DEAD_BITS_PER_PAGE) / 8 >= gpx_page_used(BufferGetPage(buf)))
			gpx_seg_corrupt(seg, GPX_STREAM_DEAD, pageno, "bitmap page is too short");
		k = gpx_meta_find_segment(meta, seg->ref.id);
		if (k < 0)
			elog(ERROR, "gpuidx: segment %u vanished during VACUUM", seg->ref.id);

		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, 0);
		for (; i < last; i++)
		{
			uint32		bit = docs[i] % GPX_DEAD_BITS_PER_PAGE;
			uint8	   *byte = (uint8 *) PageGetContents(page) + bit / 8;

			if (!(*byte & (1 << (bit % 8))))
			{
				*byte |= 1 << (bit % 8);
				newly++;
			}
		}
		meta->segments[k].ndead += newly;
		seg->ref.ndead = meta->segments[k].ndead;
		gpx_page_seal(page);
		gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
		GenericXLogFinish(state);
		pfree(meta);
		UnlockReleaseBuffer(buf);
		UnlockReleaseBuffer(metabuf);
		marked += newly;
		seg->dead_page = PG_UINT32_MAX;
	}
	return marked;
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
	double		live = 0;

	if (stats == NULL)
		stats = MemoryContextAllocZero(old, sizeof(IndexBulkDeleteResult));
	gpx_merge_lock(index);
	gpx_merge_pending(index, (Size) maintenance_work_mem * 1024);
	gpx_meta_read(index, &meta);
	for (uint32 s = 0; s < meta.nsegments; s++)
	{
		GpxSegment *seg = gpx_seg_open(index, &meta.segments[s]);
		uint32	   *dead = palloc(Max(seg->hdr->ndocs, 1) * sizeof(uint32));
		uint32		ndead = 0;

		for (uint32 c = 0; c < seg->hdr->docmap_chunks; c++)
		{
			uint32		len = gpx_seg_chunk(seg, c, tids);

			vacuum_delay_point();
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
		}
		if (ndead > 0)
			stats->tuples_removed += mark_dead(index, seg, dead, ndead);
		pfree(dead);
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
 * Recycling
 */
typedef struct BlockList
{
	BlockNumber *v;
	int			n;
	int			cap;
} BlockList;

static void
blocks_add(BlockList *l, BlockNumber b)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = l->v ? repalloc_huge(l->v, l->cap * sizeof(BlockNumber)) : palloc(l->cap * sizeof(BlockNumber));
	}
	l->v[l->n++] = b;
}

/* is this page (still) what a retired set left behind: same owner, not reused? */
static bool
page_is_retired(Relation index, BlockNumber blkno, const GpxRetired *r, uint32 seq, BlockNumber *next)
{
	Buffer		buf = ReadBuffer(index, blkno);
	Page		page;
	GpxPageOpaque opaque;
	bool		ok;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	opaque = GpxPageGetOpaque(page);
	if (gpx_page_problem(page) != NULL)
		ok = false;
	else if (r->kind == GPX_RETIRED_SEGMENT)
		ok = (opaque->type == GPX_PAGE_SEGHEAD || opaque->type == GPX_PAGE_TABLE ||
			  opaque->type == GPX_PAGE_DATA) && opaque->owner == r->owner;
	else
		ok = opaque->type == GPX_PAGE_PENDING && opaque->owner == seq;
	if (next)
		*next = ok ? opaque->next : InvalidBlockNumber;
	UnlockReleaseBuffer(buf);
	return ok;
}

/*
 * The pages of a retired set that are still its own, in the order to free
 * them: data before the tables and header that list them, a pending chain
 * from its end, so that a crash halfway leaves what is left findable.
 */
static void
retired_pages(Relation index, const GpxRetired *r, BlockList *out)
{
	if (r->kind == GPX_RETIRED_SEGMENT)
	{
		GpxSegHeaderData *h;
		Buffer		hbuf;

		if (!page_is_retired(index, r->first, r, 0, NULL))
			return;				/* freed already */
		hbuf = ReadBuffer(index, r->first);
		LockBuffer(hbuf, BUFFER_LOCK_SHARE);
		h = palloc(BLCKSZ);
		memcpy(h, PageGetContents(BufferGetPage(hbuf)), gpx_page_used(BufferGetPage(hbuf)));
		UnlockReleaseBuffer(hbuf);
		if (h->ntables == 0)
		{
			for (uint32 i = 0; i < h->npages; i++)
				if (page_is_retired(index, h->table[i], r, 0, NULL))
					blocks_add(out, h->table[i]);
		}
		else
		{
			for (uint32 t = 0; t < h->ntables; t++)
			{
				Buffer		buf;
				Page		page;
				BlockNumber *entries;
				uint32		n;

				if (!page_is_retired(index, h->table[t], r, 0, NULL))
					continue;	/* freed with its data pages */
				buf = ReadBuffer(index, h->table[t]);
				LockBuffer(buf, BUFFER_LOCK_SHARE);
				page = BufferGetPage(buf);
				n = gpx_page_used(page) / sizeof(BlockNumber);
				entries = palloc(n * sizeof(BlockNumber));
				memcpy(entries, PageGetContents(page), n * sizeof(BlockNumber));
				UnlockReleaseBuffer(buf);
				for (uint32 i = 0; i < n; i++)
					if (page_is_retired(index, entries[i], r, 0, NULL))
						blocks_add(out, entries[i]);
				pfree(entries);
			}
			for (uint32 t = 0; t < h->ntables; t++)
				if (page_is_retired(index, h->table[t], r, 0, NULL))
					blocks_add(out, h->table[t]);
		}
		blocks_add(out, r->first);
		pfree(h);
	}
	else
	{
		BlockList	chain = {0};
		BlockNumber blk = r->first;
		uint32		seq = r->owner;

		while (blk != r->stop && blk != InvalidBlockNumber)
		{
			BlockNumber next;

			if (!page_is_retired(index, blk, r, seq, &next))
				break;
			blocks_add(&chain, blk);
			blk = next;
			seq++;
		}
		for (int i = chain.n - 1; i >= 0; i--)
			blocks_add(out, chain.v[i]);
	}
}

void
gpx_recycle(Relation index)
{
	GpxMetaPageData meta;

	gpx_meta_read(index, &meta);
	for (uint32 i = 0; i < meta.nretired; i++)
	{
		GpxRetired	r = meta.retired[i];
		BlockList	pages = {0};
		Buffer		metabuf;
		GenericXLogState *state;
		GpxMetaPageData *m = palloc(sizeof(GpxMetaPageData));

		if (!GlobalVisCheckRemovableFullXid(NULL, r.xid))
			continue;
		retired_pages(index, &r, &pages);
		if (pages.n > 0)
			gpx_free_pages(index, pages.v, pages.n);

		/* out of the list only once freed: a crash before retries (harmlessly) */
		metabuf = gpx_meta_lock(index, m);
		for (uint32 k = 0; k < m->nretired; k++)
		{
			if (m->retired[k].kind == r.kind && m->retired[k].first == r.first &&
				m->retired[k].owner == r.owner)
			{
				memmove(&m->retired[k], &m->retired[k + 1], (m->nretired - k - 1) * sizeof(GpxRetired));
				m->nretired--;
				break;
			}
		}
		state = GenericXLogStart(index);
		gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), m);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(metabuf);
		pfree(m);
		if (pages.v)
			pfree(pages.v);
	}
}

/* ---------------------------------------------------------------------------
 * Cleanup
 */

/* could this page be one a crash left behind, reachable from nothing? */
static bool
maybe_orphan(Page page, const GpxMetaPageData *meta)
{
	GpxPageOpaque opaque = GpxPageGetOpaque(page);

	if (gpx_page_problem(page) != NULL)
		return false;
	if (opaque->type == GPX_PAGE_SEGHEAD || opaque->type == GPX_PAGE_TABLE ||
		opaque->type == GPX_PAGE_DATA)
	{
		/* under the merge lock no segment is being written */
		if (gpx_meta_find_segment(meta, opaque->owner) >= 0)
			return false;
		for (uint32 i = 0; i < meta->nretired; i++)
			if (meta->retired[i].kind == GPX_RETIRED_SEGMENT && meta->retired[i].owner == opaque->owner)
				return false;
		return true;
	}
	/* pages an insert wrote but never linked carry unissued sequence numbers */
	return opaque->type == GPX_PAGE_PENDING && opaque->owner >= meta->next_pending_seq;
}

/*
 * Free block b if it is an orphan, checked again under the metapage's lock
 * (taken first, as inserts do), so no insert is halfway through.
 */
static bool
free_if_orphan(Relation index, BlockNumber b, const GpxMetaPageData *segments)
{
	GpxMetaPageData *now = palloc(sizeof(GpxMetaPageData));
	Buffer		metabuf = gpx_meta_share(index, now);
	Buffer		buf;
	bool		orphan;

	buf = ReadBuffer(index, b);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	orphan = maybe_orphan(BufferGetPage(buf), segments) &&
		(GpxPageGetOpaque(BufferGetPage(buf))->type != GPX_PAGE_PENDING ||
		 GpxPageGetOpaque(BufferGetPage(buf))->owner >= now->next_pending_seq);
	if (orphan)
		gpx_free_locked_page(index, buf);
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	pfree(now);
	if (orphan)
		RecordFreeIndexPage(index, b);
	return orphan;
}

IndexBulkDeleteResult *
gpx_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	Size		budget = (Size) maintenance_work_mem * 1024;
	GpxMetaPageData meta;
	BlockNumber nblocks;
	BlockNumber nfree = 0;
	double		docs = 0;

	if (info->analyze_only)
	{
		/* autovacuum's ANALYZE of an insert-only table: merge, as GIN does */
		if (IsAutoVacuumWorkerProcess() && gpx_merge_trylock(index))
		{
			gpx_merge_pending(index, budget);
			gpx_merge_unlock(index);
		}
		return stats;
	}
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	gpx_merge_lock(index);
	gpx_merge_pending(index, budget);
	gpx_merge_tiers(index, budget, true);
	gpx_recycle(index);

	/* every page: free ones into the free space map, orphans freed */
	gpx_meta_read(index, &meta);
	nblocks = RelationGetNumberOfBlocks(index);
	for (BlockNumber b = GPX_META_BLKNO + 1; b < nblocks; b++)
	{
		Buffer		buf;
		Page		page;
		bool		orphan;

		vacuum_delay_point();
		buf = ReadBufferExtended(index, MAIN_FORKNUM, b, RBM_NORMAL, info->strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || gpx_page_is_free(page))
		{
			UnlockReleaseBuffer(buf);
			RecordFreeIndexPage(index, b);
			nfree++;
			continue;
		}
		orphan = maybe_orphan(page, &meta);
		UnlockReleaseBuffer(buf);
		if (orphan && free_if_orphan(index, b, &meta))
			nfree++;
	}
	gpx_merge_unlock(index);
	IndexFreeSpaceMapVacuum(index);

	gpx_meta_read(index, &meta);
	for (uint32 s = 0; s < meta.nsegments; s++)
		docs += meta.segments[s].ndocs - meta.segments[s].ndead;
	stats->num_index_tuples = docs + meta.pend_entries;
	stats->estimated_count = false;
	stats->num_pages = nblocks;
	stats->pages_free = nfree;
	return stats;
}
