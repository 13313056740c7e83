/*
 * stats.c
 *	  SQL functions about one index: gpuidx_index_stats (what it holds and
 *	  where its bytes go), gpuidx_segments (one row per segment) and
 *	  gpuidx_merge_pending (merge the pending area now, like GIN's
 *	  gin_clean_pending_list).
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "am/gpuidx_am.h"
#include "store/segment.h"

GPUIDX_FUNCTION(gpuidx_index_stats);
GPUIDX_FUNCTION(gpuidx_segments);
GPUIDX_FUNCTION(gpuidx_merge_pending);

/* open a gpuidx index for reading, the caller allowed to read its table */
static Relation
open_for_stats(Oid indexoid)
{
	Relation	index;
	Oid			heapoid;

	gpx_check_index_oid(indexoid);
	index = index_open(indexoid, AccessShareLock);
	heapoid = IndexGetRelation(indexoid, false);

	gpx_check_index(index);
	if (pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(heapoid));
	return index;
}

Datum
gpuidx_index_stats(PG_FUNCTION_ARGS)
{
	Relation	index = open_for_stats(PG_GETARG_OID(0));
	GpxMetaPageData meta;
	TupleDesc	tupdesc;
	Datum		values[26];
	bool		nulls[26] = {0};
	int64		docs = 0;
	int64		dead = 0;
	int64		terms = 0;
	int64		postings = 0;
	int64		pages[GPX_NSTREAMS] = {0};
	int64		headers = 0;
	int64		total = (int64) RelationGetNumberOfBlocks(index);
	int64		used;
	int			i = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	/*
	 * Version 0.1's definition, in a database not yet updated, lacks the
	 * last three columns (position_bytes, merge_bytes, merge_docs): the
	 * others are the same and come first
	 */
	if (tupdesc->natts != (int) lengthof(values) - 3 && tupdesc->natts != (int) lengthof(values))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function gpuidx_index_stats returns %d columns, this build of gpuidx makes %d",
						tupdesc->natts, (int) lengthof(values)),
				 errhint("Update the extension with ALTER EXTENSION gpuidx UPDATE.")));
	gpx_meta_read(index, &meta);
	for (uint32 s = 0; s < meta.nsegments; s++)
	{
		GpxSegment *seg = gpx_seg_open(index, &meta.segments[s]);

		docs += seg->hdr->ndocs;
		dead += seg->ref.ndead;
		terms += seg->hdr->nterms;
		postings += seg->hdr->npostings;
		for (int k = 0; k < GPX_NSTREAMS; k++)
			pages[k] += seg->hdr->streams[k].npages;
		headers += 1 + seg->hdr->ntables;
		gpx_seg_close(seg);
	}
	used = 1 + headers + meta.pend_pages;
	for (int k = 0; k < GPX_NSTREAMS; k++)
		used += pages[k];

	values[i++] = CStringGetTextDatum(gpx_meta_config_name(&meta));
	values[i++] = CStringGetTextDatum(meta.kind == GPX_KIND_TEXT ? "text" : "tsvector");
	values[i++] = Int32GetDatum(meta.nsegments);
	values[i++] = Int64GetDatum(docs);
	values[i++] = Int64GetDatum(dead);
	values[i++] = Int64GetDatum(terms);
	values[i++] = Int64GetDatum(postings);
	values[i++] = Int64GetDatum(meta.pend_entries);
	values[i++] = Int32GetDatum(meta.pend_pages);
	values[i++] = Int64GetDatum(total * BLCKSZ);
	values[i++] = Int64GetDatum((pages[GPX_STREAM_LEAF] + pages[GPX_STREAM_INNER]) * BLCKSZ);
	values[i++] = Int64GetDatum(pages[GPX_STREAM_LISTS] * BLCKSZ);
	values[i++] = Int64GetDatum((pages[GPX_STREAM_DOCDIR] + pages[GPX_STREAM_DOCMAP]) * BLCKSZ);
	values[i++] = Int64GetDatum(pages[GPX_STREAM_DEAD] * BLCKSZ);
	values[i++] = Int64GetDatum((int64) meta.pend_pages * BLCKSZ);
	values[i++] = Int64GetDatum((1 + headers) * BLCKSZ);
	values[i++] = Int64GetDatum(Max(total - used, 0) * BLCKSZ);
	values[i++] = Int32GetDatum(meta.build_runs);
	values[i++] = Int32GetDatum(meta.build_peak_kb);
	values[i++] = Int64GetDatum((int64) meta.nretired + meta.nretired_more);
	values[i++] = Int64GetDatum(pages[GPX_STREAM_FREQS] * BLCKSZ);
	values[i++] = Int64GetDatum((pages[GPX_STREAM_LENDIR] + pages[GPX_STREAM_LENS]) * BLCKSZ);
	if (meta.flags & GPX_META_FREQS)
	{
		uint64		ndocs = meta.pend_entries;
		uint64		sum = meta.pend_dl;

		for (uint32 s = 0; s < meta.nsegments; s++)
		{
			ndocs += meta.segments[s].ndocs - meta.segments[s].ndead;
			sum += meta.segments[s].sum_dl - meta.segments[s].dead_dl;
		}
		values[i++] = Float8GetDatum(ndocs > 0 ? (double) sum / (double) ndocs : 0.0);
	}
	else
		nulls[i++] = true;
	/* an index without the option positions has none: NULL, not 0 */
	if (meta.flags & GPX_META_POSITIONS)
		values[i++] = Int64GetDatum(pages[GPX_STREAM_POSITIONS] * BLCKSZ);
	else
		nulls[i++] = true;
	values[i++] = Int64GetDatum((int64) meta.merge_bytes);
	values[i++] = Int64GetDatum((int64) meta.merge_docs);
	Assert(i == lengthof(values));
	index_close(index, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
gpuidx_segments(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index = open_for_stats(PG_GETARG_OID(0));
	GpxMetaPageData meta;

	InitMaterializedSRF(fcinfo, 0);
	gpx_meta_read(index, &meta);
	for (uint32 s = 0; s < meta.nsegments; s++)
	{
		GpxSegment *seg = gpx_seg_open(index, &meta.segments[s]);
		GpxSegHeaderData *h = seg->hdr;
		Datum		values[9];
		bool		nulls[9] = {0};
		uint32		external = 0;

		for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
			external += h->nlists[c];
		values[0] = Int64GetDatum(h->id);
		values[1] = Int64GetDatum(h->ndocs);
		values[2] = Int64GetDatum(seg->ref.ndead);
		values[3] = Int64GetDatum(h->nterms);
		values[4] = Int64GetDatum(h->npostings);
		values[5] = Int64GetDatum(h->ninline);
		values[6] = Int64GetDatum(external);
		values[7] = Int32GetDatum(seg->ref.npages);
		values[8] = Int64GetDatum((int64) seg->ref.npages * BLCKSZ);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		gpx_seg_close(seg);
	}
	index_close(index, AccessShareLock);
	return (Datum) 0;
}

Datum
gpuidx_merge_pending(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	index;
	uint64		merged;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery is in progress"),
				 errhint("The pending area of a gpuidx index cannot be merged during recovery.")));
	gpx_check_index_oid(indexoid);
	index = index_open(indexoid, RowExclusiveLock);
	gpx_check_index(index);
	if (!gpx_class_ownercheck(indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, RelationGetRelationName(index));
	gpx_merge_lock(index);
	merged = gpx_merge_step(index, (Size) maintenance_work_mem * 1024);
	gpx_merge_unlock(index);
	index_close(index, RowExclusiveLock);
	PG_RETURN_INT64((int64) merged);
}
