/*
 * page.c
 *	  Initialising, sealing and checking gpuidx pages; reading them with
 *	  their expected tag; allocating and freeing pages.
 *
 * A page's CRC covers the header from pd_lower on, the contents up to
 * pd_lower and the special space after the CRC field: what generic WAL
 * keeps (it zeroes the hole between pd_lower and pd_upper), and nothing
 * the buffer manager rewrites (the LSN, PostgreSQL's own checksum, flags).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "access/xlog.h"
#include "executor/instrument.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/shmem.h"
#include "storage/lmgr.h"

#include "codec/codec.h"
#include "store/page.h"

#define GPX_CRC_START offsetof(PageHeaderData, pd_lower)
#define GPX_SPECIAL_OFFSET (BLCKSZ - MAXALIGN(sizeof(GpxPageOpaqueData)))

void
gpx_page_init(Page page, uint16 type)
{
	GpxPageOpaque opaque;

	PageInit(page, BLCKSZ, MAXALIGN(sizeof(GpxPageOpaqueData)));
	opaque = GpxPageGetOpaque(page);
	memset(opaque, 0, sizeof(GpxPageOpaqueData));
	opaque->type = type;
	opaque->next = InvalidBlockNumber;
	opaque->page_id = GPX_PAGE_ID;
}

uint32
gpx_page_used(Page page)
{
	return ((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData);
}

void
gpx_page_set_used(Page page, uint32 used)
{
	Assert(used <= GPX_PAGE_CAPACITY);
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + used;
}

static uint32
gpx_page_crc(Page page)
{
	PageHeader	hdr = (PageHeader) page;
	uint32		crc;

	crc = pl_crc32c(0, (char *) page + GPX_CRC_START, hdr->pd_lower - GPX_CRC_START);
	return pl_crc32c(crc, (char *) page + GPX_SPECIAL_OFFSET + sizeof(uint32),
					 sizeof(GpxPageOpaqueData) - sizeof(uint32));
}

void
gpx_page_seal(Page page)
{
	GpxPageGetOpaque(page)->crc = gpx_page_crc(page);
}

static const char *
page_problem(Page page, bool check_crc)
{
	PageHeader	hdr = (PageHeader) page;
	GpxPageOpaque opaque;

	if (PageIsNew(page))
		return "Page is not initialized";
	if (hdr->pd_special != GPX_SPECIAL_OFFSET || hdr->pd_upper != hdr->pd_special ||
		hdr->pd_lower < MAXALIGN(SizeOfPageHeaderData) || hdr->pd_lower > hdr->pd_upper ||
		PageGetPageSize(page) != BLCKSZ)
		return "Page header is inconsistent";
	opaque = GpxPageGetOpaque(page);
	if (opaque->page_id != GPX_PAGE_ID)
		return "Page is not a gpuidx page";
	if (check_crc && opaque->crc != gpx_page_crc(page))
		return "Page checksum mismatch";
	if (opaque->type < GPX_PAGE_META || opaque->type > GPX_PAGE_RETIRED)
		return "Page type is unknown";
	return NULL;
}

const char *
gpx_page_problem(Page page)
{
	return page_problem(page, true);
}

bool
gpx_page_is_free(Page page)
{
	return gpx_page_problem(page) == NULL && GpxPageGetOpaque(page)->type == GPX_PAGE_FREE;
}

void
gpx_report_corrupt(Relation index, BlockNumber blkno, const char *fmt,...)
{
	char		detail[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(detail, sizeof(detail), fmt, args);
	va_end(args);
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" is corrupted at block %u",
					RelationGetRelationName(index), blkno),
			 errdetail("%s.", detail),
			 errhint("Rebuild the index with REINDEX.")));
	pg_unreachable();
}

static void check_page(Relation index, Buffer buf, BlockNumber blkno, Page page,
					   const GpxPageTag *expect);

static const char *const page_type_names[] = {
	"none", "metapage", "pending", "segment header", "page table", "segment data", "free",
	"retired list"
};

/*
 * Pages whose CRC this backend has checked, by buffer.  A page's CRC is
 * computed when a backend reads it into shared buffers from disk through
 * the index and the first time each backend reads it; read again while the
 * buffer holds the same block at the same LSN and no backend has read it
 * from disk since, its CRC is not recomputed (8 kB a page, several pages a
 * term: a fifth of a short query's time).  What changes a page moves its
 * LSN (generic WAL); a read from disk through the index counts in
 * shared memory, per buffer, so every backend checks that buffer again
 * (the one that read a damaged page reported it, but the page stays in the
 * buffer).  A page read from disk by other code (pg_prewarm) is checked
 * by each backend's first read, not by one that checked the same block in
 * the same buffer before.  Without shared memory (gpuidx not in
 * shared_preload_libraries) every read computes the CRC, and
 * gpuidx_verify() always does.
 */
#define CHECKED_SLOTS 2048

typedef struct CheckedPage
{
	Buffer		buf;
	BlockNumber blkno;
	RelFileLocator node;
	XLogRecPtr	lsn;
	uint32		loads;			/* the buffer's reads from disk then */
} CheckedPage;

static CheckedPage checked_pages[CHECKED_SLOTS];

/* per shared buffer, its reads from disk through an index of gpuidx */
static pg_atomic_uint32 *buffer_loads;

Size
gpx_page_shmem_size(void)
{
	return mul_size(NBuffers, sizeof(pg_atomic_uint32));
}

void
gpx_page_shmem_init(void)
{
	bool		found;
	pg_atomic_uint32 *loads = ShmemInitStruct("gpuidx buffer loads", gpx_page_shmem_size(), &found);

	if (!found)
		for (int i = 0; i < NBuffers; i++)
			pg_atomic_init_u32(&loads[i], 0);
	buffer_loads = loads;
}

static inline CheckedPage *
checked_slot(Buffer buf)
{
	return &checked_pages[(uint32) buf % CHECKED_SLOTS];
}

/* local buffers are this backend's alone: its own reads forget them */
static inline uint32
loads_of(Buffer buf)
{
	return buf > 0 ? pg_atomic_read_u32(&buffer_loads[buf - 1]) : 0;
}

static bool
page_was_checked(Relation index, Buffer buf, BlockNumber blkno)
{
	CheckedPage *c = checked_slot(buf);

	return buffer_loads != NULL && c->buf == buf && c->blkno == blkno &&
		RelFileLocatorEquals(c->node, gpx_rel_locator(index)) && c->loads == loads_of(buf) &&
		c->lsn == BufferGetLSNAtomic(buf);
}

static void
page_checked(Relation index, Buffer buf, BlockNumber blkno)
{
	CheckedPage *c = checked_slot(buf);

	if (buffer_loads == NULL)
		return;
	c->buf = buf;
	c->blkno = blkno;
	c->node = gpx_rel_locator(index);
	c->loads = loads_of(buf);
	c->lsn = BufferGetLSNAtomic(buf);
}

/* a read from disk: every backend's check of that buffer is gone */
static void
page_loaded(Buffer buf)
{
	if (buffer_loads == NULL)
		return;
	checked_slot(buf)->buf = InvalidBuffer;
	if (buf > 0)
		pg_atomic_fetch_add_u32(&buffer_loads[buf - 1], 1);
}

/* page_problem, the CRC (when wanted) computed unless the buffer's page was checked */
static const char *
buffer_page_problem(Relation index, Buffer buf, BlockNumber blkno, Page page, bool crc)
{
	bool		compute = crc && !(BufferIsValid(buf) && page_was_checked(index, buf, blkno));
	const char *problem = page_problem(page, compute);

	if (problem == NULL && compute && BufferIsValid(buf))
		page_checked(index, buf, blkno);
	return problem;
}

const char *
gpx_buffer_problem(Relation index, Buffer buf)
{
	return buffer_page_problem(index, buf, BufferGetBlockNumber(buf), BufferGetPage(buf), true);
}

void
gpx_check_page(Relation index, BlockNumber blkno, Page page, const GpxPageTag *expect)
{
	check_page(index, InvalidBuffer, blkno, page, expect);
}

static void
check_page(Relation index, Buffer buf, BlockNumber blkno, Page page, const GpxPageTag *expect)
{
	/* posting lists carry their own CRC, checked when they are opened */
	bool		lists = expect->type == GPX_PAGE_DATA && expect->stream == GPX_STREAM_LISTS;
	const char *problem = buffer_page_problem(index, buf, blkno, page, !lists);
	GpxPageOpaque opaque;

	if (problem != NULL)
		gpx_report_corrupt(index, blkno, "%s", problem);
	opaque = GpxPageGetOpaque(page);
	if (opaque->type == expect->type &&
		(expect->stream == GPX_ANY_STREAM || opaque->stream == expect->stream) &&
		(expect->owner == GPX_ANY_OWNER || opaque->owner == expect->owner) &&
		(expect->pageno == GPX_ANY_OWNER || opaque->pageno == expect->pageno))
		return;

	/*
	 * A sound page that is not the one expected.  On a primary, pages are
	 * recycled only once no scan can still read them, so this is damage.  A
	 * standby replays recycling whatever its scans do: cancel the scan, as a
	 * recovery conflict would.
	 */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("canceling scan of index \"%s\" because its pages were recycled during the scan",
						RelationGetRelationName(index)),
				 errdetail("Block %u was reused by the primary while a standby query read it.", blkno),
				 errhint("Retry the query.")));
	gpx_report_corrupt(index, blkno,
					   "Expected a %s page (stream %u, owner %u, page %u), found a %s page (stream %u, owner %u, page %u)",
					   page_type_names[expect->type], expect->stream, expect->owner, expect->pageno,
					   page_type_names[opaque->type], opaque->stream, opaque->owner, opaque->pageno);
}

/*
 * The size of each index this backend read lately, as last seen: an index
 * grows under its readers but never shrinks while they read it (a rewrite
 * gives it a new file; VACUUM cuts off only free pages, under a lock no
 * reader holds with it), so the size is asked again only for a block past
 * the one seen.  A size seen before such a cut is larger than the file:
 * it lets a damaged reference into the cut-off pages through to the
 * buffer manager, which reports the read past the end instead.  A few
 * indexes at a time (a join of several).
 */
#define KNOWN_SIZES 8

typedef struct KnownSize
{
	RelFileLocator node;
	BlockNumber nblocks;
} KnownSize;

static KnownSize known_sizes[KNOWN_SIZES];
static int	known_next;

bool
gpx_index_has_blocks(Relation index, uint64 nblocks)
{
	KnownSize  *k = NULL;

	for (int i = 0; i < KNOWN_SIZES && k == NULL; i++)
		if (RelFileLocatorEquals(known_sizes[i].node, gpx_rel_locator(index)))
			k = &known_sizes[i];
	if (k != NULL && nblocks <= k->nblocks)
		return true;
	if (k == NULL)
	{
		k = &known_sizes[known_next];
		known_next = (known_next + 1) % KNOWN_SIZES;
		k->node = gpx_rel_locator(index);
	}
	k->nblocks = RelationGetNumberOfBlocks(index);
	return nblocks <= k->nblocks;
}

void
gpx_forget_index_size(Relation index)
{
	for (int i = 0; i < KNOWN_SIZES; i++)
		if (RelFileLocatorEquals(known_sizes[i].node, gpx_rel_locator(index)))
			known_sizes[i].nblocks = 0;
}

Buffer
gpx_read_page(Relation index, BlockNumber blkno, int lockmode, const GpxPageTag *expect)
{
	Buffer		buf;
	int64		reads;

	if (blkno == InvalidBlockNumber)
		gpx_report_corrupt(index, blkno, "A reference points to no block");
	/* the buffer manager would fail on a block past the end, and not as damage */
	if (!gpx_index_has_blocks(index, (uint64) blkno + 1))
		gpx_report_corrupt(index, blkno, "A reference points past the end of the index");
	reads = pgBufferUsage.shared_blks_read + pgBufferUsage.local_blks_read;
	buf = ReadBuffer(index, blkno);
	LockBuffer(buf, lockmode);
	if (pgBufferUsage.shared_blks_read + pgBufferUsage.local_blks_read != reads)
		page_loaded(buf);
	check_page(index, buf, blkno, BufferGetPage(buf), expect);
	return buf;
}

Buffer
gpx_new_buffer(Relation index, bool use_fsm)
{
	Buffer		buf;
	bool		need_lock = !RELATION_IS_LOCAL(index);

	while (use_fsm)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		buf = ReadBuffer(index, blkno);

		/* the free space map is a hint: take the page only if it is free */
		if (ConditionalLockBuffer(buf))
		{
			Page		page = BufferGetPage(buf);

			if (PageIsNew(page) || gpx_page_is_free(page))
				return buf;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}

	if (need_lock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (need_lock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

void
gpx_put_page(Relation index, Buffer buf, Page image, bool use_wal)
{
	if (use_wal)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Page		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);

		memcpy(page, image, BLCKSZ);
		GenericXLogFinish(state);
	}
	else
	{
		START_CRIT_SECTION();
		memcpy(BufferGetPage(buf), image, BLCKSZ);
		MarkBufferDirty(buf);
		END_CRIT_SECTION();
	}
	UnlockReleaseBuffer(buf);
}

void
gpx_free_locked_page(Relation index, Buffer buf)
{
	GenericXLogState *state = GenericXLogStart(index);
	Page		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);

	gpx_page_init(page, GPX_PAGE_FREE);
	gpx_page_seal(page);
	GenericXLogFinish(state);
}

/* qsort order of block numbers */
int
gpx_block_cmp(const void *x, const void *y)
{
	BlockNumber a = *(const BlockNumber *) x;
	BlockNumber b = *(const BlockNumber *) y;

	return (a > b) - (a < b);
}

/*
 * Free blocks, in the order given (callers order them so that a crash
 * halfway leaves the rest findable).  A block listed twice can only come
 * from damaged references; locking it twice would hang the backend, so
 * that is an error before anything is freed.
 */
void
gpx_free_pages(Relation index, const BlockNumber *blocks, int n)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber *sorted = palloc_extended(Max(n, 1) * sizeof(BlockNumber), MCXT_ALLOC_HUGE);

	memcpy(sorted, blocks, n * sizeof(BlockNumber));
	qsort(sorted, n, sizeof(BlockNumber), gpx_block_cmp);
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && sorted[i] == sorted[i - 1])
			gpx_report_corrupt(index, sorted[i], "A page is referenced twice among the pages to free");
		if (sorted[i] == GPX_META_BLKNO || sorted[i] >= nblocks)
			gpx_report_corrupt(index, sorted[i], "A reference to free points outside the index's pages");
	}
	pfree(sorted);

	for (int i = 0; i < n; i += MAX_GENERIC_XLOG_PAGES)
	{
		int			batch = Min(n - i, MAX_GENERIC_XLOG_PAGES);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		GenericXLogState *state;

		/* stopping between batches leaves what a crash there would */
		CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < batch; j++)
		{
			bufs[j] = ReadBuffer(index, blocks[i + j]);
			LockBuffer(bufs[j], BUFFER_LOCK_EXCLUSIVE);
		}
		state = GenericXLogStart(index);
		for (int j = 0; j < batch; j++)
		{
			Page		page = GenericXLogRegisterBuffer(state, bufs[j], GENERIC_XLOG_FULL_IMAGE);

			gpx_page_init(page, GPX_PAGE_FREE);
			gpx_page_seal(page);
		}
		GenericXLogFinish(state);
		for (int j = 0; j < batch; j++)
		{
			UnlockReleaseBuffer(bufs[j]);
			RecordFreeIndexPage(index, blocks[i + j]);
		}
	}
}
