/*
 * build.c
 *	  CREATE INDEX: one scan of the table in heap order; each document's
 *	  lexemes go to the postings accumulator (which spills sorted runs past
 *	  maintenance_work_mem) under a doc id given in scan order, so the doc
 *	  map is monotone; then the runs are merged into one segment.  Pages
 *	  are written without WAL and the whole index is WAL-logged at the end.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/dependency.h"
#include "catalog/pg_ts_config.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "store/accum.h"
#include "store/segment.h"
#include "worker/worker.h"

/* what the writer and the tape buffers need besides the accumulator */
#define BUILD_RESERVE (256 * 1024)

typedef struct BuildState
{
	uint32		kind;
	Oid			config;
	bool		freqs;
	GpxAccum   *accum;
	GpxSegWriter *writer;
	uint32		ndocs;
	MemoryContext tmpcxt;
} BuildState;

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
	gpx_segw_add_doc(bs->writer, tid, lex.dl);
	for (int i = 0; i < lex.n; i++)
		gpx_accum_add(bs->accum, lex.lex[i], lex.len[i], bs->ndocs, lex.tf[i]);
	gpx_accum_end_doc(bs->accum);
	bs->ndocs++;
	MemoryContextSwitchTo(old);
	MemoryContextReset(bs->tmpcxt);
	if (bs->ndocs % 256 == 0)
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs->ndocs);
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

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	/* new storage: nothing cached under its relfilenode is this index's */
	gpx_cache_forget_index(index->rd_node);
	gpx_seg_forget_cached();
	bs.kind = gpx_kind_of(index);
	bs.config = gpx_build_config(index);
	gpx_check_config_option(index);
	record_config_dependency(index, bs.config);

	buildcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx build", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(buildcxt);
	bs.tmpcxt = AllocSetContextCreate(buildcxt, "gpuidx build document", ALLOCSET_DEFAULT_SIZES);
	bs.ndocs = 0;

	/*
	 * Block 0 is the metapage, written last.  No lock is held on it
	 * meanwhile (nobody else sees the index yet): a buffer lock would hold
	 * off cancels for the whole build.
	 */
	metabuf = gpx_new_buffer(index, false);
	Assert(BufferGetBlockNumber(metabuf) == GPX_META_BLKNO);
	UnlockReleaseBuffer(metabuf);

	bs.freqs = gpx_index_freqs_option(index);
	bs.writer = gpx_segw_begin(index, 1, false, gpx_index_codec(index), bs.freqs);
	bs.accum = gpx_accum_create(budget > 2 * BUILD_RESERVE ? budget - BUILD_RESERVE : budget / 2,
								bs.freqs);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPX_PHASE_SCAN);
	reltuples = table_index_build_range_scan(heap, index, indexInfo, false, false, true,
											 0, InvalidBlockNumber, build_callback, &bs, NULL);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs.ndocs);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPX_PHASE_MERGE);
	gpx_accum_emit(bs.accum, bs.writer);

	gpx_meta_init(&meta, bs.kind, bs.config);
	if (bs.freqs)
		meta.flags |= GPX_META_FREQS;
	if (bs.ndocs > 0)
	{
		gpx_segw_finish(bs.writer, &meta.segments[0]);
		meta.nsegments = 1;
		meta.next_segment_id = 2;
	}
	meta.build_runs = gpx_accum_runs(bs.accum);
	meta.build_peak_kb = (uint32) (gpx_accum_peak(bs.accum) / 1024);
	gpx_page_init(metaimage.data, GPX_PAGE_META);
	gpx_meta_pack(metaimage.data, &meta);
	metabuf = ReadBuffer(index, GPX_META_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	gpx_put_page(index, metabuf, metaimage.data, false);
	gpx_accum_free(bs.accum);

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
	gpx_page_init(page.data, GPX_PAGE_META);
	gpx_meta_pack(page.data, &meta);
	PageSetChecksumInplace(page.data, GPX_META_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, GPX_META_BLKNO, page.data, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM, GPX_META_BLKNO,
				page.data, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
