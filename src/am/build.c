/*
 * build.c
 *	  CREATE INDEX: one scan of the table in heap order; each document's
 *	  lexemes go to the postings accumulator (which spills sorted runs past
 *	  maintenance_work_mem) under a doc id given in scan order, so the doc
 *	  map is monotone; then the runs are merged into one segment.  Pages
 *	  are written without WAL and the whole index is WAL-logged at the end.
 *
 *	  A parallel build (max_parallel_maintenance_workers, as for B-trees)
 *	  cuts the table into as many ranges of blocks as there are
 *	  participants.  Each participant (the workers and the leader) takes the
 *	  next range, tokenizes its rows into an accumulator of its own and
 *	  hands the leader one sorted run and its rows' TIDs and lengths, in
 *	  files of a shared file set.  The ranges follow each other in heap
 *	  order, so the leader numbers the documents range by range (the doc
 *	  map stays monotone) and merges the runs in one pass, concatenating
 *	  each term's postings: the segment is the serial build's, page for page.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/parallel.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_ts_config.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/buffile.h"
#include "storage/bufmgr.h"
#include "storage/sharedfileset.h"
#include "storage/shm_toc.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/snapmgr.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "query/rankcache.h"
#include "store/accum.h"
#include "store/parse.h"
#include "store/segment.h"
#include "worker/worker.h"

/* what the writer and the tape buffers need besides the accumulator */
#define BUILD_RESERVE (256 * 1024)

typedef struct BuildShared BuildShared;

typedef struct BuildState
{
	uint32		kind;
	Oid			config;
	bool		freqs;
	bool		positions;
	GpxAccum   *accum;
	GpxSegWriter *writer;		/* serial: documents go straight to the segment */
	BufFile    *docs;			/* parallel: each document's TID and length */
	BuildShared *shared;		/* parallel: progress is counted there */
	struct BuildRange *range;	/* parallel: the range being scanned */
	bool		leader;			/* reports progress */
	uint32		ndocs;
	MemoryContext tmpcxt;
} BuildState;

/* a range of blocks, done by one participant of a parallel build */
typedef struct BuildRange
{
	BlockNumber start;
	pg_atomic_uint32 scanned;	/* blocks of it scanned, for progress */
	TapeShare	run;			/* its postings, one sorted run */
	uint32		ndocs;
	double		tuples;			/* live rows its scan counted */
	uint32		runs;			/* runs it spilled */
	uint64		peak;			/* its accumulator's peak memory */
	bool		broken_hot_chain;	/* the scan left out a recently dead HOT-updated row */
	bool		done;
} BuildRange;

struct BuildShared
{
	Oid			heap;
	Oid			index;
	bool		concurrent;
	uint32		kind;
	Oid			config;
	bool		freqs;
	bool		positions;
	Size		budget;			/* each participant's */
	BlockNumber nblocks;
	int			nranges;
	pg_atomic_uint32 next_range;
	pg_atomic_uint64 docs_done;
	SharedFileSet fileset;
	BuildRange	ranges[FLEXIBLE_ARRAY_MEMBER];
};

#define KEY_SHARED		UINT64CONST(0xB1D1000000000001)
#define KEY_SNAPSHOT	UINT64CONST(0xB1D1000000000002)
#define KEY_QUERY		UINT64CONST(0xB1D1000000000003)
#define KEY_BUFUSAGE	UINT64CONST(0xB1D1000000000004)
#define KEY_WALUSAGE	UINT64CONST(0xB1D1000000000005)

/* what one document costs in a range's file */
typedef struct BuildDoc
{
	ItemPointerData tid;
	uint32		dl;
} BuildDoc;

PGDLLEXPORT void gpx_build_worker(dsm_segment *seg, shm_toc *toc);

void
gpx_document_lexemes(uint32 kind, Oid cfg, Datum value, GpxLexemes *out)
{
	if (kind == GPX_KIND_TSVECTOR)
		gpx_lexemes_of_tsvector(DatumGetTSVector(value), out);
	else
	{
		text	   *t = DatumGetTextPP(value);

		gpx_lexemes_of_text(cfg, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), out);
	}
}

/* the leader's view of all participants: rows tokenized, blocks scanned */
static void
report_parallel_progress(BuildShared *sh, uint64 docs)
{
	const int	params[] = {PROGRESS_CREATEIDX_TUPLES_DONE, PROGRESS_SCAN_BLOCKS_DONE};
	int64		values[2];
	uint64		blocks = 0;

	for (int r = 0; r < sh->nranges; r++)
		blocks += pg_atomic_read_u32(&sh->ranges[r].scanned);
	values[0] = (int64) docs;
	values[1] = (int64) blocks;
	pgstat_progress_update_multi_param(2, params, values);
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	BuildState *bs = state;
	MemoryContext old;
	GpxLexemes	lex;

	if (isnull[0])
		return;
	old = MemoryContextSwitchTo(bs->tmpcxt);
	gpx_document_lexemes(bs->kind, bs->config, values[0], &lex);
	if (bs->docs)
	{
		BuildDoc	d;

		d.tid = *tid;
		d.dl = lex.dl;
		BufFileWrite(bs->docs, &d, sizeof(d));
	}
	else
		gpx_segw_add_doc(bs->writer, tid, lex.dl);
	if (bs->positions)
	{
		uint8		rec[GPX_POS_MAX_RECORD];

		/* each lexeme's record made where it is added: nothing to split again */
		for (int i = 0; i < lex.n; i++)
			gpx_accum_add(bs->accum, lex.lex[i], lex.len[i], bs->ndocs, lex.tf[i], rec,
						  gpx_lexeme_positions(&lex, i, rec));
	}
	else
		for (int i = 0; i < lex.n; i++)
			gpx_accum_add(bs->accum, lex.lex[i], lex.len[i], bs->ndocs, lex.tf[i], NULL, 0);
	gpx_accum_end_doc(bs->accum);
	bs->ndocs++;
	MemoryContextSwitchTo(old);
	MemoryContextReset(bs->tmpcxt);
	if (bs->ndocs % 256 == 0 && bs->shared)
	{
		uint64		done = pg_atomic_add_fetch_u64(&bs->shared->docs_done, 256);

		pg_atomic_write_u32(&bs->range->scanned, ItemPointerGetBlockNumber(tid) - bs->range->start);
		if (bs->leader)
			report_parallel_progress(bs->shared, done);
	}
	else if (bs->ndocs % 256 == 0)
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs->ndocs);
}

/* ---------------------------------------------------------------------------
 * Parallel build
 */

/*
 * Workers for a parallel build: PostgreSQL's choice for a B-tree of this
 * table (max_parallel_maintenance_workers, the table's parallel_workers,
 * 32 MB of maintenance_work_mem a participant, parallel-safe expressions).
 * Ranges of blocks are a heap's: other table access methods build serially.
 */
static int
build_workers(Relation heap, Relation index)
{
	if (!IsUnderPostmaster || !IsNormalProcessingMode() || IsInParallelMode() ||
		heap->rd_rel->relam != HEAP_TABLE_AM_OID)
		return 0;
	return plan_create_index_workers(RelationGetRelid(heap), RelationGetRelid(index));
}

static void
range_docs_name(char *name, int range)
{
	snprintf(name, MAXPGPATH, "gpuidx-docs.%d", range);
}

/*
 * One participant: take the next range of blocks until none is left.  Its
 * rows get doc ids from 0; the leader adds the documents of the ranges
 * before it.
 */
static void
build_ranges(BuildShared *sh, Relation heap, Relation index, IndexInfo *indexInfo,
			 Snapshot snapshot, bool leader)
{
	for (;;)
	{
		uint32		r = pg_atomic_fetch_add_u32(&sh->next_range, 1);
		BuildRange *range;
		BlockNumber start;
		BlockNumber end;
		BuildState	bs;
		MemoryContext cxt;
		MemoryContext old;
		char		name[MAXPGPATH];
		double		tuples = 0;

		if (r >= (uint32) sh->nranges)
			break;
		range = &sh->ranges[r];
		start = range->start;
		end = r + 1 < (uint32) sh->nranges ? sh->ranges[r + 1].start : sh->nblocks;

		cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx build range", ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(cxt);
		memset(&bs, 0, sizeof(bs));
		bs.kind = sh->kind;
		bs.config = sh->config;
		bs.freqs = sh->freqs;
		bs.positions = sh->positions;
		bs.shared = sh;
		bs.range = range;
		bs.leader = leader;
		bs.tmpcxt = AllocSetContextCreate(cxt, "gpuidx build document", ALLOCSET_DEFAULT_SIZES);
		bs.accum = gpx_accum_create_shared(sh->budget, sh->freqs, sh->positions, &sh->fileset, (int) r);
		range_docs_name(name, (int) r);
		bs.docs = BufFileCreateFileSet(&sh->fileset.fs, name);
		if (end > start)
		{
			/* the build scan's own checks of each row, on these blocks only */
			TableScanDesc scan = table_beginscan_strat(heap, snapshot, 0, NULL, true, false);

			heap_setscanlimits(scan, start, end - start);
			tuples = table_index_build_range_scan(heap, index, indexInfo, true, false, false,
												  0, InvalidBlockNumber, build_callback, &bs, scan);
		}
		gpx_accum_export(bs.accum, &range->run);
		BufFileExportFileSet(bs.docs);
		BufFileClose(bs.docs);
		pg_atomic_write_u32(&range->scanned, end - start);
		/* index.c must hear of it from the leader, or old snapshots would use the index */
		range->broken_hot_chain = indexInfo->ii_BrokenHotChain;
		range->ndocs = bs.ndocs;
		range->tuples = tuples;
		range->runs = gpx_accum_runs(bs.accum);
		range->peak = gpx_accum_peak(bs.accum);
		gpx_accum_free(bs.accum);
		pg_atomic_add_fetch_u64(&sh->docs_done, bs.ndocs % 256);
		pg_write_barrier();
		range->done = true;
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
	}
}

/* the leader's merge: the ranges' documents and runs in heap order */
static void
merge_ranges(BuildShared *sh, BuildState *bs, Size budget, uint32 *runs, Size *peak)
{
	GpxAccum   *merge = gpx_accum_create(budget, bs->freqs, bs->positions);
	BuildDoc   *docs = palloc(1024 * sizeof(BuildDoc));
	Size		ranges_peak = 0;
	uint64		base = 0;

	*runs = 0;
	for (int r = 0; r < sh->nranges; r++)
	{
		BuildRange *range = &sh->ranges[r];
		char		name[MAXPGPATH];
		BufFile    *file;
		uint32		left = range->ndocs;

		if (!range->done)
			elog(ERROR, "gpuidx: range %d of a parallel build was not built", r);
		range_docs_name(name, r);
		file = BufFileOpenFileSet(&sh->fileset.fs, name, O_RDONLY, false);
		while (left > 0)
		{
			uint32		n = Min(left, 1024);

			CHECK_FOR_INTERRUPTS();
			if (BufFileRead(file, docs, n * sizeof(BuildDoc)) != n * sizeof(BuildDoc))
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("gpuidx: could not read the documents of range %d of a parallel build", r)));
			for (uint32 i = 0; i < n; i++)
				gpx_segw_add_doc(bs->writer, &docs[i].tid, docs[i].dl);
			left -= n;
		}
		BufFileClose(file);
		gpx_accum_import(merge, &sh->fileset, r, &range->run, (uint32) base);
		base += range->ndocs;
		*runs += range->runs;
		ranges_peak += range->peak;
	}
	bs->ndocs = (uint32) base;
	gpx_accum_emit(merge, bs->writer);
	*peak = Max(ranges_peak, gpx_accum_peak(merge));
	gpx_accum_free(merge);
	pfree(docs);
}

/*
 * Scan and merge with workers; false when no dynamic shared memory could
 * be had (the caller builds serially).
 */
static bool
build_parallel(Relation heap, Relation index, IndexInfo *indexInfo, BuildState *bs, int workers,
			   Size budget, double *reltuples, uint32 *runs, Size *peak)
{
	ParallelContext *pcxt;
	BuildShared *sh;
	Snapshot	snapshot;
	Size		shsize;
	int			nranges = workers + 1;
	Size		querylen = debug_query_string ? strlen(debug_query_string) : 0;
	BufferUsage *bufusage;
	WalUsage   *walusage;
	char	   *query;

	EnterParallelMode();
	pcxt = CreateParallelContext("gpuidx", "gpx_build_worker", workers);

	/* as a B-tree's: every row for a plain build, the build's snapshot's for CONCURRENTLY */
	snapshot = indexInfo->ii_Concurrent ? RegisterSnapshot(GetTransactionSnapshot()) : SnapshotAny;

	shsize = add_size(offsetof(BuildShared, ranges), mul_size(nranges, sizeof(BuildRange)));
	shm_toc_estimate_chunk(&pcxt->estimator, shsize);
	if (IsMVCCSnapshot(snapshot))
		shm_toc_estimate_chunk(&pcxt->estimator, EstimateSnapshotSpace(snapshot));
	shm_toc_estimate_chunk(&pcxt->estimator, querylen + 1);
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(BufferUsage), pcxt->nworkers));
	shm_toc_estimate_chunk(&pcxt->estimator, mul_size(sizeof(WalUsage), pcxt->nworkers));
	shm_toc_estimate_keys(&pcxt->estimator, 5);
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		if (IsMVCCSnapshot(snapshot))
			UnregisterSnapshot(snapshot);
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return false;
	}

	sh = shm_toc_allocate(pcxt->toc, shsize);
	memset(sh, 0, shsize);
	sh->heap = RelationGetRelid(heap);
	sh->index = RelationGetRelid(index);
	sh->concurrent = indexInfo->ii_Concurrent;
	sh->kind = bs->kind;
	sh->config = bs->config;
	sh->freqs = bs->freqs;
	sh->positions = bs->positions;
	sh->budget = budget / nranges;
	/* after the snapshot: every row it sees lies in these blocks */
	sh->nblocks = RelationGetNumberOfBlocks(heap);
	sh->nranges = nranges;
	pg_atomic_init_u32(&sh->next_range, 0);
	pg_atomic_init_u64(&sh->docs_done, 0);
	for (int r = 0; r < nranges; r++)
	{
		sh->ranges[r].start = (BlockNumber) ((uint64) sh->nblocks * r / nranges);
		pg_atomic_init_u32(&sh->ranges[r].scanned, 0);
	}
	SharedFileSetInit(&sh->fileset, pcxt->seg);
	shm_toc_insert(pcxt->toc, KEY_SHARED, sh);
	if (IsMVCCSnapshot(snapshot))
	{
		char	   *snap = shm_toc_allocate(pcxt->toc, EstimateSnapshotSpace(snapshot));

		SerializeSnapshot(snapshot, snap);
		shm_toc_insert(pcxt->toc, KEY_SNAPSHOT, snap);
	}
	query = shm_toc_allocate(pcxt->toc, querylen + 1);
	if (querylen > 0)
		memcpy(query, debug_query_string, querylen);
	query[querylen] = '\0';
	shm_toc_insert(pcxt->toc, KEY_QUERY, query);
	bufusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(BufferUsage), pcxt->nworkers));
	shm_toc_insert(pcxt->toc, KEY_BUFUSAGE, bufusage);
	walusage = shm_toc_allocate(pcxt->toc, mul_size(sizeof(WalUsage), pcxt->nworkers));
	shm_toc_insert(pcxt->toc, KEY_WALUSAGE, walusage);

	LaunchParallelWorkers(pcxt);
	ereport(DEBUG1,
			(errmsg_internal("gpuidx: building index \"%s\" in %d ranges, %d of %d parallel workers launched",
							 RelationGetRelationName(index), nranges, pcxt->nworkers_launched,
							 pcxt->nworkers)));
	pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_TOTAL, sh->nblocks);
	/* the leader takes ranges too: all of those a worker that did not start leaves */
	build_ranges(sh, heap, index, indexInfo, snapshot, true);
	WaitForParallelWorkersToFinish(pcxt);
	for (int i = 0; i < pcxt->nworkers_launched; i++)
		InstrAccumParallelQuery(&bufusage[i], &walusage[i]);
	report_parallel_progress(sh, pg_atomic_read_u64(&sh->docs_done));

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPX_PHASE_MERGE);
	pg_read_barrier();
	*reltuples = 0;
	for (int r = 0; r < nranges; r++)
	{
		*reltuples += sh->ranges[r].tuples;
		if (sh->ranges[r].broken_hot_chain)
			indexInfo->ii_BrokenHotChain = true;
	}
	merge_ranges(sh, bs, budget, runs, peak);

	if (IsMVCCSnapshot(snapshot))
		UnregisterSnapshot(snapshot);
	DestroyParallelContext(pcxt);
	ExitParallelMode();
	return true;
}

/* a parallel worker, in the leader's lock group, with its snapshot */
void
gpx_build_worker(dsm_segment *seg, shm_toc *toc)
{
	BuildShared *sh = shm_toc_lookup(toc, KEY_SHARED, false);
	BufferUsage *bufusage = shm_toc_lookup(toc, KEY_BUFUSAGE, false);
	WalUsage   *walusage = shm_toc_lookup(toc, KEY_WALUSAGE, false);
	/* the locks index.c holds in the leader */
	LOCKMODE	heaplock = sh->concurrent ? ShareUpdateExclusiveLock : ShareLock;
	LOCKMODE	indexlock = sh->concurrent ? RowExclusiveLock : AccessExclusiveLock;
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	Snapshot	snapshot = SnapshotAny;

	debug_query_string = shm_toc_lookup(toc, KEY_QUERY, false);
	pgstat_report_activity(STATE_RUNNING, debug_query_string);
	heap = table_open(sh->heap, heaplock);
	index = index_open(sh->index, indexlock);
	indexInfo = BuildIndexInfo(index);
	indexInfo->ii_Concurrent = sh->concurrent;
	if (sh->concurrent)
		snapshot = RegisterSnapshot(RestoreSnapshot(shm_toc_lookup(toc, KEY_SNAPSHOT, false)));

	InstrStartParallelQuery();
	build_ranges(sh, heap, index, indexInfo, snapshot, false);
	InstrEndParallelQuery(&bufusage[ParallelWorkerNumber], &walusage[ParallelWorkerNumber]);

	if (sh->concurrent)
		UnregisterSnapshot(snapshot);
	index_close(index, indexlock);
	table_close(heap, heaplock);
}

/* the index depends on its configuration: dropping that needs CASCADE */
static void
record_config_dependency(Relation index, Oid config)
{
	ObjectAddress myself;
	ObjectAddress referenced;

	deleteDependencyRecordsForClass(RelationRelationId, RelationGetRelid(index),
									TSConfigRelationId, DEPENDENCY_NORMAL);
	ObjectAddressSet(myself, RelationRelationId, RelationGetRelid(index));
	ObjectAddressSet(referenced, TSConfigRelationId, config);
	recordDependencyOn(&myself, &referenced, DEPENDENCY_NORMAL);
}

IndexBuildResult *
gpx_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	BuildState	bs;
	MemoryContext buildcxt;
	MemoryContext old;
	Buffer		metabuf;
	PGAlignedBlock metaimage;
	GpxMetaPageData meta;
	double		reltuples;
	Size		budget = (Size) maintenance_work_mem * 1024;
	int			workers;
	uint32		runs;
	Size		peak;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	/* new storage: nothing cached under its relfilenode is this index's */
	gpx_forget_index(gpx_rel_locator(index));
	gpx_seg_forget_cached();
	gq_rank_cache_forget();
	memset(&bs, 0, sizeof(bs));
	bs.kind = gpx_kind_of(index);
	bs.config = gpx_build_config(index);
	gpx_check_config_option(index);
	record_config_dependency(index, bs.config);

	buildcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx build", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(buildcxt);
	bs.tmpcxt = AllocSetContextCreate(buildcxt, "gpuidx build document", ALLOCSET_DEFAULT_SIZES);

	/*
	 * Block 0 is the metapage, written last.  No lock is held on it
	 * meanwhile (nobody else sees the index yet): a buffer lock would hold
	 * off cancels for the whole build.
	 */
	metabuf = gpx_new_buffer(index, false);
	Assert(BufferGetBlockNumber(metabuf) == GPX_META_BLKNO);
	UnlockReleaseBuffer(metabuf);

	bs.freqs = gpx_index_freqs_option(index);
	bs.positions = gpx_index_positions_option(index, bs.kind, bs.freqs);
	bs.leader = true;
	bs.writer = gpx_segw_begin(index, 1, false, gpx_index_codec(index), bs.freqs, bs.positions);
	budget = budget > 2 * BUILD_RESERVE ? budget - BUILD_RESERVE : budget / 2;

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPX_PHASE_SCAN);
	workers = build_workers(heap, index);
	if (workers == 0 ||
		!build_parallel(heap, index, indexInfo, &bs, workers, budget, &reltuples, &runs, &peak))
	{
		bs.accum = gpx_accum_create(budget, bs.freqs, bs.positions);
		reltuples = table_index_build_range_scan(heap, index, indexInfo, false, false, true,
												 0, InvalidBlockNumber, build_callback, &bs, NULL);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs.ndocs);

		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPX_PHASE_MERGE);
		gpx_accum_emit(bs.accum, bs.writer);
		runs = gpx_accum_runs(bs.accum);
		peak = gpx_accum_peak(bs.accum);
		gpx_accum_free(bs.accum);
	}

	gpx_meta_init(&meta, bs.kind, bs.config);
	if (bs.freqs)
		meta.flags |= GPX_META_FREQS;
	if (bs.positions)
		meta.flags |= GPX_META_POSITIONS;
	if (bs.ndocs > 0)
	{
		gpx_segw_finish(bs.writer, &meta.segments[0]);
		meta.nsegments = 1;
		meta.next_segment_id = 2;
	}
	meta.build_runs = runs;
	meta.build_peak_kb = (uint32) (peak / 1024);
	gpx_page_init(metaimage.data, GPX_PAGE_META);
	gpx_meta_pack(metaimage.data, &meta);
	metabuf = ReadBuffer(index, GPX_META_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	gpx_put_page(index, metabuf, metaimage.data, false);

	if (RelationNeedsWAL(index))
	{
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPX_PHASE_WAL);
		log_newpage_range(index, MAIN_FORKNUM, 0, RelationGetNumberOfBlocks(index), true);
	}

	MemoryContextSwitchTo(old);
	MemoryContextDelete(buildcxt);
	gpx_record_build_config(index, bs.config);
	result->heap_tuples = reltuples;
	result->index_tuples = bs.ndocs;
	return result;
}

void
gpx_buildempty(Relation index)
{
	PGAlignedBlock page;
	GpxMetaPageData meta;

	gpx_meta_init(&meta, gpx_kind_of(index), gpx_build_config(index));
	if (gpx_index_freqs_option(index))
		meta.flags |= GPX_META_FREQS;
	if (gpx_index_positions_option(index, meta.kind, gpx_index_freqs_option(index)))
		meta.flags |= GPX_META_POSITIONS;
	gpx_page_init(page.data, GPX_PAGE_META);
	gpx_meta_pack(page.data, &meta);
	PageSetChecksumInplace(page.data, GPX_META_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, GPX_META_BLKNO, page.data, true);
	log_newpage(&gpx_rel_locator(index), INIT_FORKNUM, GPX_META_BLKNO, page.data, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
