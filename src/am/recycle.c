/*
 * recycle.c
 *	  Pages the index no longer uses.  Merges retire page sets (segments
 *	  merged away, pending pages merged into a segment): listed in the
 *	  metapage and, past its room, in a chain of retired-list pages, so that
 *	  merges never stop for want of room while an old snapshot holds them
 *	  back.  A set is freed once no snapshot that could still read it is
 *	  left.  VACUUM's pass over every page also frees pages nothing
 *	  references: what a crash or an error left halfway through a write.
 *	  Callers hold the merge lock (merge.c), which every change of the
 *	  retired lists and of the set of segments takes.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "catalog/storage.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "am/gpuidx_am.h"
#include "store/pending.h"
#include "store/segment.h"

static const GpxPageTag retired_tag = {GPX_PAGE_RETIRED, GPX_ANY_STREAM, GPX_ANY_OWNER, GPX_ANY_OWNER};

typedef struct BlockList
{
	BlockNumber *v;
	uint32		n;
	uint32		cap;
} BlockList;

static void
blocks_add(BlockList *l, BlockNumber b)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = l->v ? repalloc_huge(l->v, (Size) l->cap * sizeof(BlockNumber))
			: palloc((Size) l->cap * sizeof(BlockNumber));
	}
	l->v[l->n++] = b;
}

static bool
blocks_contain(const BlockList *sorted, BlockNumber b)
{
	return sorted->n > 0 &&
		bsearch(&b, sorted->v, sorted->n, sizeof(BlockNumber), gpx_block_cmp) != NULL;
}

/* ---------------------------------------------------------------------------
 * The retired lists
 */

/* the entries of a retired-list page, copied */
static uint32
read_retired_page(Relation index, BlockNumber blk, GpxRetired *out, BlockNumber *next)
{
	Buffer		buf = gpx_read_page(index, blk, BUFFER_LOCK_SHARE, &retired_tag);
	Page		page = BufferGetPage(buf);
	uint32		used = gpx_page_used(page);

	if (used % sizeof(GpxRetired) != 0 || used == 0)
		gpx_report_corrupt(index, blk, "Retired-list page holds %u bytes", used);
	memcpy(out, PageGetContents(page), used);
	*next = GpxPageGetOpaque(page)->next;
	UnlockReleaseBuffer(buf);
	return used / sizeof(GpxRetired);
}

void
gpx_retired_make_room(Relation index, int need)
{
	GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
	Buffer		metabuf = gpx_meta_lock(index, meta);
	Size		bytes = meta->nretired * sizeof(GpxRetired);
	Buffer		buf = InvalidBuffer;
	bool		fresh;
	GenericXLogState *state;
	Page		page;

	Assert(need <= GPX_MAX_RETIRED);
	if (meta->nretired + need <= GPX_MAX_RETIRED)
	{
		UnlockReleaseBuffer(metabuf);
		pfree(meta);
		return;
	}

	/* the metapage's sets move to the chain's first page, or a new one */
	if (meta->retired_more != InvalidBlockNumber)
	{
		buf = gpx_read_page(index, meta->retired_more, BUFFER_LOCK_EXCLUSIVE, &retired_tag);
		if (gpx_page_used(BufferGetPage(buf)) + bytes > GPX_PAGE_CAPACITY)
		{
			UnlockReleaseBuffer(buf);
			buf = InvalidBuffer;
		}
	}
	/* a new page is found (and the relation perhaps extended) before the record starts */
	fresh = !BufferIsValid(buf);
	if (fresh)
		buf = gpx_new_buffer(index, true);
	state = GenericXLogStart(index);
	if (!fresh)
		page = GenericXLogRegisterBuffer(state, buf, 0);
	else
	{
		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
		gpx_page_init(page, GPX_PAGE_RETIRED);
		GpxPageGetOpaque(page)->next = meta->retired_more;
		meta->retired_more = BufferGetBlockNumber(buf);
	}
	memcpy(PageGetContents(page) + gpx_page_used(page), meta->retired, bytes);
	gpx_page_set_used(page, gpx_page_used(page) + bytes);
	gpx_page_seal(page);
	meta->nretired_more += meta->nretired;
	meta->nretired = 0;
	gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), meta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
	pfree(meta);
}

/* every retired set, the metapage's and the chain's; the chain's pages in *chain */
static GpxRetired *
retired_all(Relation index, const GpxMetaPageData *meta, uint32 *n, BlockList *chain)
{
	uint32		cap = meta->nretired + meta->nretired_more + GPX_RETIRED_PER_PAGE;
	GpxRetired *all = palloc_extended((Size) cap * sizeof(GpxRetired), MCXT_ALLOC_HUGE);
	BlockNumber blk = meta->retired_more;
	uint32		pages = 0;

	memcpy(all, meta->retired, meta->nretired * sizeof(GpxRetired));
	*n = meta->nretired;
	while (blk != InvalidBlockNumber)
	{
		BlockNumber next;

		CHECK_FOR_INTERRUPTS();
		/* a chain longer than its count could fill is damaged (or a loop) */
		if (*n + GPX_RETIRED_PER_PAGE > cap || ++pages > meta->nretired_more)
			gpx_report_corrupt(index, blk, "Retired-list chain holds more than the %u sets the metapage counts",
							   meta->nretired_more);
		blocks_add(chain, blk);
		*n += read_retired_page(index, blk, all + *n, &next);
		blk = next;
	}
	if (*n != meta->nretired + meta->nretired_more)
		gpx_report_corrupt(index, GPX_META_BLKNO, "Retired lists hold %u sets, the metapage counts %u",
						   *n, meta->nretired + meta->nretired_more);
	return all;
}

/* ---------------------------------------------------------------------------
 * Freeing retired sets
 */

/*
 * Is this page (still) what a retired set left behind: same owner, not
 * reused?  For a pending page, seq is the sequence it must carry and *next,
 * *next_seq where its chain goes on.
 */
static bool
page_is_retired(Relation index, BlockNumber nblocks, BlockNumber blkno, const GpxRetired *r,
				uint32 seq, BlockNumber *next, uint32 *next_seq)
{
	Buffer		buf;
	Page		page;
	GpxPageOpaque opaque = NULL;
	bool		ok;

	/*
	 * VACUUM cuts off only free pages past every set's first page and stop
	 * (gpx_truncate_free_end), so these are always inside the index; a page
	 * a set's tables or chain reach past the end was freed and cut off.
	 */
	if (blkno == GPX_META_BLKNO || (blkno >= nblocks && (blkno == r->first || blkno == r->stop)))
		gpx_report_corrupt(index, blkno, "A retired set references a page outside the index");
	if (blkno >= nblocks)
		return false;
	gpx_vacuum_delay_point();
	buf = ReadBuffer(index, blkno);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (gpx_page_problem(page) != NULL)
		ok = false;
	else
	{
		opaque = GpxPageGetOpaque(page);
		if (r->kind == GPX_RETIRED_SEGMENT)
			ok = (opaque->type == GPX_PAGE_SEGHEAD || opaque->type == GPX_PAGE_TABLE ||
				  opaque->type == GPX_PAGE_DATA) && opaque->owner == r->owner;
		else
			ok = opaque->type == GPX_PAGE_PENDING && opaque->owner == seq;
	}
	if (next)
	{
		*next = ok ? opaque->next : InvalidBlockNumber;
		*next_seq = ok ? gpx_pending_next_seq(page) : 0;
	}
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
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	if (r->kind == GPX_RETIRED_SEGMENT)
	{
		GpxSegHeaderData *h;
		Buffer		hbuf;
		uint32		used;

		if (!page_is_retired(index, nblocks, r->first, r, 0, NULL, NULL))
			return;				/* freed already */
		hbuf = ReadBuffer(index, r->first);
		LockBuffer(hbuf, BUFFER_LOCK_SHARE);
		used = gpx_page_used(BufferGetPage(hbuf));
		/* in the current layout: an older build's header has fewer streams */
		h = gpx_seg_header_copy(PageGetContents(BufferGetPage(hbuf)), &used);
		UnlockReleaseBuffer(hbuf);
		if (used < offsetof(GpxSegHeaderData, table) ||
			used != offsetof(GpxSegHeaderData, table) + (h->ntables ? h->ntables : h->npages) * sizeof(BlockNumber))
			gpx_report_corrupt(index, r->first, "Retired segment header lists a page table of another size");
		if (h->ntables == 0)
		{
			for (uint32 i = 0; i < h->npages; i++)
				if (page_is_retired(index, nblocks, h->table[i], r, 0, NULL, NULL))
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

				if (!page_is_retired(index, nblocks, h->table[t], r, 0, NULL, NULL))
					continue;	/* freed with its data pages */
				buf = ReadBuffer(index, h->table[t]);
				LockBuffer(buf, BUFFER_LOCK_SHARE);
				page = BufferGetPage(buf);
				n = gpx_page_used(page) / sizeof(BlockNumber);
				entries = palloc(n * sizeof(BlockNumber));
				memcpy(entries, PageGetContents(page), n * sizeof(BlockNumber));
				UnlockReleaseBuffer(buf);
				for (uint32 i = 0; i < n; i++)
					if (page_is_retired(index, nblocks, entries[i], r, 0, NULL, NULL))
						blocks_add(out, entries[i]);
				pfree(entries);
			}
			for (uint32 t = 0; t < h->ntables; t++)
				if (page_is_retired(index, nblocks, h->table[t], r, 0, NULL, NULL))
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
			uint32		next_seq;

			if (!page_is_retired(index, nblocks, blk, r, seq, &next, &next_seq))
				break;
			if (chain.n >= nblocks)
				gpx_report_corrupt(index, blk, "A retired pending chain is longer than the index (a loop)");
			blocks_add(&chain, blk);
			blk = next;
			seq = next_seq;
		}
		for (int i = (int) chain.n - 1; i >= 0; i--)
			blocks_add(out, chain.v[i]);
		if (chain.v)
			pfree(chain.v);
	}
}

/*
 * Free a retired set's pages if no snapshot can read them any more (all:
 * whatever the snapshots, since no scan has the index open); *freed counts
 * them.
 */
static bool
free_if_removable(Relation index, const GpxRetired *r, bool all, BlockNumber *freed)
{
	BlockList	pages = {0};

	if (!all && !GlobalVisCheckRemovableFullXid(NULL, r->xid))
		return false;
	retired_pages(index, r, &pages);
	if (pages.n > 0)
		gpx_free_pages(index, pages.v, pages.n);
	*freed += pages.n;
	if (pages.v)
		pfree(pages.v);
	return true;
}

static bool
same_set(const GpxRetired *a, const GpxRetired *b)
{
	return a->kind == b->kind && a->first == b->first && a->owner == b->owner;
}

/* the sets in the metapage: each out of the list only once freed */
static void
recycle_metapage_sets(Relation index, bool all, BlockNumber *freed)
{
	GpxMetaPageData meta;

	gpx_meta_read(index, &meta);
	for (uint32 i = 0; i < meta.nretired; i++)
	{
		GpxRetired	r = meta.retired[i];
		Buffer		metabuf;
		GenericXLogState *state;
		GpxMetaPageData *m;

		if (!free_if_removable(index, &r, all, freed))
			continue;
		/* a crash before this record retries the set, harmlessly */
		m = palloc(sizeof(GpxMetaPageData));
		metabuf = gpx_meta_lock(index, m);
		for (uint32 k = 0; k < m->nretired; k++)
		{
			if (same_set(&m->retired[k], &r))
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
	}
}

/*
 * The chain: each page's removable sets freed, then the page rewritten with
 * the rest, or unlinked and freed when none is left (one record each).
 */
static void
recycle_chain(Relation index, bool all, BlockNumber *freed)
{
	GpxRetired *entries = palloc(GPX_RETIRED_PER_PAGE * sizeof(GpxRetired));
	GpxRetired *kept = palloc(GPX_RETIRED_PER_PAGE * sizeof(GpxRetired));
	GpxMetaPageData meta;
	BlockNumber prev = InvalidBlockNumber;
	BlockNumber blk;

	gpx_meta_read(index, &meta);
	blk = meta.retired_more;
	while (blk != InvalidBlockNumber)
	{
		BlockNumber next;
		uint32		n = read_retired_page(index, blk, entries, &next);
		uint32		nkept = 0;
		GpxMetaPageData *m;
		Buffer		metabuf;
		Buffer		prevbuf = InvalidBuffer;
		Buffer		buf;
		GenericXLogState *state;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		for (uint32 i = 0; i < n; i++)
			if (!free_if_removable(index, &entries[i], all, freed))
				kept[nkept++] = entries[i];
		if (nkept == n)
		{
			prev = blk;
			blk = next;
			continue;
		}

		m = palloc(sizeof(GpxMetaPageData));
		metabuf = gpx_meta_lock(index, m);
		if (nkept == 0 && prev != InvalidBlockNumber)
			prevbuf = gpx_read_page(index, prev, BUFFER_LOCK_EXCLUSIVE, &retired_tag);
		buf = gpx_read_page(index, blk, BUFFER_LOCK_EXCLUSIVE, &retired_tag);
		m->nretired_more -= n - nkept;
		state = GenericXLogStart(index);
		if (nkept > 0)
		{
			page = GenericXLogRegisterBuffer(state, buf, 0);
			memcpy(PageGetContents(page), kept, nkept * sizeof(GpxRetired));
			gpx_page_set_used(page, nkept * sizeof(GpxRetired));
			gpx_page_seal(page);
		}
		else
		{
			if (BufferIsValid(prevbuf))
			{
				Page		prevpage = GenericXLogRegisterBuffer(state, prevbuf, 0);

				GpxPageGetOpaque(prevpage)->next = next;
				gpx_page_seal(prevpage);
			}
			else
				m->retired_more = next;
			page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
			gpx_page_init(page, GPX_PAGE_FREE);
			gpx_page_seal(page);
		}
		gpx_meta_pack(GenericXLogRegisterBuffer(state, metabuf, 0), m);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
		if (BufferIsValid(prevbuf))
			UnlockReleaseBuffer(prevbuf);
		UnlockReleaseBuffer(metabuf);
		pfree(m);
		if (nkept == 0)
		{
			RecordFreeIndexPage(index, blk);
			(*freed)++;
		}
		else
			prev = blk;
		blk = next;
	}
	pfree(entries);
	pfree(kept);
}

/*
 * Every merge starts here, so that its pages come from the merges before it
 * rather than from the end of the file.  The free space map's upper levels
 * are brought up to date as well: without that a search does not find the
 * pages just recorded (RecordFreeIndexPage changes only the map's leaves),
 * and its search restarts at the lowest free page, which keeps the live
 * pages at the front, where VACUUM can cut the free end off.
 */
BlockNumber
gpx_recycle(Relation index, bool all)
{
	BlockNumber freed = 0;

	recycle_metapage_sets(index, all, &freed);
	recycle_chain(index, all, &freed);
	if (freed > 0)
		IndexFreeSpaceMapVacuum(index);
	return freed;
}

/* ---------------------------------------------------------------------------
 * Pages nothing references
 */

/* the blocks of a pending chain from blk (sequence seq) up to stop, excluded */
static void
pending_chain_blocks(Relation index, BlockNumber blk, uint32 seq, BlockNumber stop, BlockList *out)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	uint32		walked = 0;

	while (blk != InvalidBlockNumber && blk != stop)
	{
		GpxPageTag	tag = {GPX_PAGE_PENDING, GPX_ANY_STREAM, seq, GPX_ANY_OWNER};
		Buffer		buf;
		Page		page;

		gpx_vacuum_delay_point();
		if (++walked > nblocks)
			gpx_report_corrupt(index, blk, "The pending chain is longer than the index (a loop)");
		buf = gpx_read_page(index, blk, BUFFER_LOCK_SHARE, &tag);
		page = BufferGetPage(buf);
		blocks_add(out, blk);
		blk = GpxPageGetOpaque(page)->next;
		seq = gpx_pending_next_seq(page);
		UnlockReleaseBuffer(buf);
	}
}

/*
 * Free the pending pages among candidates that no chain reaches: pages an
 * insert wrote but never linked (it failed, or a crash came first).  Only
 * when no insert is writing such pages right now; else at a later VACUUM.
 */
static uint32
free_unlinked_pending(Relation index, const BlockList *candidates, const GpxRetired *retired,
					  uint32 nretired)
{
	GpxMetaPageData meta;
	BlockList	reachable = {0};
	uint32		freed = 0;

	if (candidates->n == 0 || !gpx_pending_writers_exclude(index))
		return 0;
	gpx_meta_read(index, &meta);
	pending_chain_blocks(index, meta.pend_head, meta.pend_head_seq, InvalidBlockNumber, &reachable);
	for (uint32 i = 0; i < nretired; i++)
		if (retired[i].kind == GPX_RETIRED_PENDING)
		{
			BlockList	chain = {0};

			/* only what is still the set's own: it may be freed in part */
			retired_pages(index, &retired[i], &chain);
			for (uint32 k = 0; k < chain.n; k++)
				blocks_add(&reachable, chain.v[k]);
			if (chain.v)
				pfree(chain.v);
		}
	if (reachable.n > 0)
		qsort(reachable.v, reachable.n, sizeof(BlockNumber), gpx_block_cmp);
	for (uint32 i = 0; i < candidates->n; i++)
	{
		BlockNumber b = candidates->v[i];
		Buffer		buf;
		bool		orphan;

		if (blocks_contain(&reachable, b))
			continue;
		gpx_vacuum_delay_point();
		buf = ReadBuffer(index, b);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		orphan = gpx_page_problem(BufferGetPage(buf)) == NULL &&
			GpxPageGetOpaque(BufferGetPage(buf))->type == GPX_PAGE_PENDING;
		if (orphan)
			gpx_free_locked_page(index, buf);
		UnlockReleaseBuffer(buf);
		if (orphan)
		{
			RecordFreeIndexPage(index, b);
			freed++;
		}
	}
	gpx_pending_writers_allow(index);
	if (reachable.v)
		pfree(reachable.v);
	return freed;
}

/* a segment page of no segment the metapage lists, live or retired */
static bool
segment_page_orphaned(const GpxPageOpaque opaque, const GpxMetaPageData *meta,
					  const GpxRetired *retired, uint32 nretired)
{
	if (gpx_meta_find_segment(meta, opaque->owner) >= 0)
		return false;
	for (uint32 i = 0; i < nretired; i++)
		if (retired[i].kind == GPX_RETIRED_SEGMENT && retired[i].owner == opaque->owner)
			return false;
	return true;
}

BlockNumber
gpx_reclaim_pages(Relation index, BufferAccessStrategy strategy, BlockNumber *nblocks_out)
{
	GpxMetaPageData meta;
	BlockList	chain = {0};
	BlockList	pending = {0};
	uint32		nretired;
	GpxRetired *retired;
	BlockNumber nblocks;
	BlockNumber nfree = 0;

	/* under the merge lock no segment is being written, no set retired */
	gpx_meta_read(index, &meta);
	retired = retired_all(index, &meta, &nretired, &chain);
	if (chain.n > 0)
		qsort(chain.v, chain.n, sizeof(BlockNumber), gpx_block_cmp);
	nblocks = RelationGetNumberOfBlocks(index);
	for (BlockNumber b = GPX_META_BLKNO + 1; b < nblocks; b++)
	{
		Buffer		buf;
		Page		page;
		GpxPageOpaque opaque;
		bool		orphan = false;

		gpx_vacuum_delay_point();
		buf = ReadBufferExtended(index, MAIN_FORKNUM, b, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || gpx_page_is_free(page))
		{
			UnlockReleaseBuffer(buf);
			RecordFreeIndexPage(index, b);
			nfree++;
			continue;
		}
		if (gpx_page_problem(page) == NULL)
		{
			opaque = GpxPageGetOpaque(page);
			if (opaque->type == GPX_PAGE_SEGHEAD || opaque->type == GPX_PAGE_TABLE ||
				opaque->type == GPX_PAGE_DATA)
				orphan = segment_page_orphaned(opaque, &meta, retired, nretired);
			else if (opaque->type == GPX_PAGE_RETIRED)
				orphan = !blocks_contain(&chain, b);
			else if (opaque->type == GPX_PAGE_PENDING)
				blocks_add(&pending, b);
		}
		UnlockReleaseBuffer(buf);
		/* segment and retired-list pages change only under the merge lock we hold */
		if (orphan)
		{
			buf = ReadBufferExtended(index, MAIN_FORKNUM, b, RBM_NORMAL, strategy);
			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
			gpx_free_locked_page(index, buf);
			UnlockReleaseBuffer(buf);
			RecordFreeIndexPage(index, b);
			nfree++;
		}
	}
	nfree += free_unlinked_pending(index, &pending, retired, nretired);
	pfree(retired);
	if (chain.v)
		pfree(chain.v);
	if (pending.v)
		pfree(pending.v);
	*nblocks_out = nblocks;
	return nfree;
}

/* ---------------------------------------------------------------------------
 * The free end of the file
 */

/* how many times, 50 ms apart, VACUUM tries for the lock to cut the end off */
#define TRUNCATE_LOCK_TRIES	20

static bool
block_is_free(Relation index, BlockNumber b, BufferAccessStrategy strategy)
{
	Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, b, RBM_NORMAL, strategy);
	bool		is_free;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	is_free = PageIsNew(BufferGetPage(buf)) || gpx_page_is_free(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	return is_free;
}

/*
 * The first block of the free pages that end the file (nblocks if none).
 * locked: under the AccessExclusiveLock, which no cost-based delay may
 * stretch.
 */
static BlockNumber
free_end_start(Relation index, BlockNumber nblocks, BufferAccessStrategy strategy, bool locked)
{
	BlockNumber b = nblocks;

	while (b > GPX_META_BLKNO + 1 && block_is_free(index, b - 1, strategy))
	{
		if (locked)
			CHECK_FOR_INTERRUPTS();
		else
			gpx_vacuum_delay_point();
		b--;
	}
	return b;
}

/* the AccessExclusiveLock on the index, taken without waiting, in tries 50 ms apart */
static bool
lock_exclusive(Relation index, int tries)
{
	for (int tried = 1; !ConditionalLockRelation(index, AccessExclusiveLock); tried++)
	{
		if (tried >= tries)
			return false;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(50 * 1000L);
	}
	return true;
}

static bool
has_retired(Relation index)
{
	GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
	bool		any;

	gpx_meta_read(index, meta);
	any = meta->nretired + meta->nretired_more > 0;
	pfree(meta);
	return any;
}

/* every retired set freed under the lock, no cost-based delay stretching it */
static BlockNumber
recycle_locked(Relation index)
{
	bool		cost_active = VacuumCostActive;
	BlockNumber freed;

	VacuumCostActive = false;
	freed = gpx_recycle(index, true);
	VacuumCostActive = cost_active;
	return freed;
}

BlockNumber
gpx_recycle_exclusive(Relation index)
{
	BlockNumber freed;

	if (!has_retired(index))
		return 0;
	/* one try: gpx_truncate_free_end tries again, longer */
	if (!lock_exclusive(index, 1))
		return gpx_recycle(index, false);
	freed = recycle_locked(index);
	UnlockRelation(index, AccessExclusiveLock);
	return freed;
}

/*
 * Cut the free pages at the end of the file off, as VACUUM does a table's.
 * Under an AccessExclusiveLock on the index, taken without waiting (a few
 * tries, then left to a later VACUUM): no scan reads the index meanwhile
 * and no insert or merge takes a page from the free space map or extends
 * the file.  So every retired set is freed first, whatever the snapshots:
 * what holds them back is scans that began before the merge, and none is
 * left (a cursor keeps its lock).  The lock is WAL-logged, so a hot
 * standby's queries on the index conflict with its replay, before the
 * pages are freed there, as with a table's truncation.  Scans that begin
 * afterwards read only pages the metapage reaches, none of them free.
 * Blocks a retired set still names first stay, so the sets' checks hold.
 * Returns the blocks cut off.
 */
BlockNumber
gpx_truncate_free_end(Relation index, BufferAccessStrategy strategy)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber keep;
	GpxMetaPageData *meta;
	GpxRetired *retired;
	uint32		nretired;
	BlockList	chain = {0};

	if (!has_retired(index) && free_end_start(index, nblocks, strategy, false) == nblocks)
		return 0;
	if (!lock_exclusive(index, TRUNCATE_LOCK_TRIES))
		return 0;
	recycle_locked(index);
	meta = palloc(sizeof(GpxMetaPageData));
	nblocks = RelationGetNumberOfBlocks(index);
	keep = free_end_start(index, nblocks, strategy, true);
	gpx_meta_read(index, meta);
	retired = retired_all(index, meta, &nretired, &chain);
	for (uint32 i = 0; i < nretired; i++)
	{
		if (retired[i].first != InvalidBlockNumber)
			keep = Max(keep, retired[i].first + 1);
		if (retired[i].stop != InvalidBlockNumber)
			keep = Max(keep, retired[i].stop + 1);
	}
	if (keep < nblocks)
	{
		RelationTruncate(index, keep);
		gpx_forget_index_size(index);
	}
	UnlockRelation(index, AccessExclusiveLock);
	pfree(retired);
	pfree(meta);
	if (chain.v)
		pfree(chain.v);
	return keep < nblocks ? nblocks - keep : 0;
}
