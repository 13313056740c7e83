/*
 * meta.c
 *	  Reading, checking and changing the metapage.  Every change to the
 *	  structure of the index (a new segment, merged segments, the start of
 *	  the pending area) is one update of the metapage, so a reader that
 *	  copies it under a share lock sees one consistent index.
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/namespace.h"
#include "access/htup_details.h"
#include "catalog/pg_ts_config.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "rank/bm25.h"
#include "store/meta.h"

static const GpxPageTag meta_tag = {GPX_PAGE_META, GPX_ANY_STREAM, GPX_ANY_OWNER, GPX_ANY_OWNER};

static void
gpx_meta_check_version(Relation index, const GpxMetaPageData *meta)
{
	if (meta->magic != GPX_MAGIC)
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage has a wrong magic number");
	if (meta->version != GPX_INDEX_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" has gpuidx format version %u, this build reads versions 1 to %u",
						RelationGetRelationName(index), meta->version, GPX_INDEX_VERSION),
				 errhint("Rebuild the index with REINDEX.")));
}

void
gpx_meta_init(GpxMetaPageData *meta, uint32 kind, Oid config)
{
	HeapTuple	tuple;

	memset(meta, 0, sizeof(GpxMetaPageData));
	meta->magic = GPX_MAGIC;
	meta->version = GPX_INDEX_VERSION;
	meta->kind = kind;
	meta->config = config;
	tuple = SearchSysCache1(TSCONFIGOID, ObjectIdGetDatum(config));
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_ts_config cfg = (Form_pg_ts_config) GETSTRUCT(tuple);
		char	   *nsp = get_namespace_name(cfg->cfgnamespace);

		namestrcpy(&meta->config_name, NameStr(cfg->cfgname));
		namestrcpy(&meta->config_schema, nsp ? nsp : "");
		ReleaseSysCache(tuple);
	}
	meta->next_segment_id = 1;
	meta->next_pending_seq = 1;
	meta->pend_head = InvalidBlockNumber;
	meta->pend_tail = InvalidBlockNumber;
	meta->retired_more = InvalidBlockNumber;
}

void
gpx_meta_pack(Page page, const GpxMetaPageData *meta)
{
	char	   *p = PageGetContents(page);
	Size		segs = meta->nsegments * sizeof(GpxSegRef);
	Size		retired = meta->nretired * sizeof(GpxRetired);

	Assert(meta->nsegments <= GPX_MAX_SEGMENTS && meta->nretired <= GPX_MAX_RETIRED);
	memcpy(p, meta, GPX_META_FIXED);
	memcpy(p + GPX_META_FIXED, meta->segments, segs);
	memcpy(p + GPX_META_FIXED + segs, meta->retired, retired);
	gpx_page_set_used(page, GPX_META_FIXED + segs + retired);
	gpx_page_seal(page);
}

/*
 * Version 1 metapages lack the fields from retired_more on, version 2
 * metapages those from flags on and their segments' sum_dl and dead_dl,
 * version 3 metapages those from merge_bytes on.  They read as version 4
 * with none of those in use (no freqs: such an index answers @@& and
 * cannot rank until REINDEX; merges counted from then on), and are written
 * back as version 4 (nothing else in the index differs).
 */
void
gpx_meta_unpack(Relation index, Page page, GpxMetaPageData *meta)
{
	const char *p = PageGetContents(page);
	uint32		used = gpx_page_used(page);
	Size		fixed = GPX_META_FIXED;
	Size		segsize = sizeof(GpxSegRef);
	uint32		version;

	if (used < GPX_META_FIXED_V1)
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage has %u bytes of contents", used);
	memset(meta, 0, GPX_META_FIXED);
	memcpy(meta, p, GPX_META_FIXED_V1);
	version = meta->version;
	if (version < 1 || version > 3)
		gpx_meta_check_version(index, meta);
	if (version == 1)
		fixed = GPX_META_FIXED_V1;
	else if (version == 2)
		fixed = GPX_META_FIXED_V2;
	else if (version == 3)
		fixed = GPX_META_FIXED_V3;
	if (version < 3)
		segsize = GPX_SEGREF_SIZE_V2;
	if (used < fixed)
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage has %u bytes of contents", used);
	memcpy(meta, p, fixed);
	if (version == 1)
	{
		meta->retired_more = InvalidBlockNumber;
		meta->nretired_more = 0;
	}
	meta->version = GPX_INDEX_VERSION;
	if (meta->nsegments > GPX_MAX_SEGMENTS || meta->nretired > GPX_MAX_RETIRED ||
		used != fixed + meta->nsegments * segsize + meta->nretired * sizeof(GpxRetired))
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage lists %u segments and %u retired page sets in %u bytes",
						   meta->nsegments, meta->nretired, used);
	for (uint32 i = 0; i < meta->nsegments; i++)
	{
		memset(&meta->segments[i], 0, sizeof(GpxSegRef));
		memcpy(&meta->segments[i], p + fixed + i * segsize, segsize);
	}
	memcpy(meta->retired, p + fixed + meta->nsegments * segsize, meta->nretired * sizeof(GpxRetired));
	gpx_meta_check(index, meta);
}

static void
most_block(BlockNumber *most, BlockNumber blkno)
{
	if (blkno != InvalidBlockNumber && blkno > *most)
		*most = blkno;
}

/*
 * The counters held to what the index's pages can hold, since they size
 * memory, plans and reads: entries take at least GPX_PENDING_MIN_ENTRY
 * bytes of the pending pages, a segment's docs a bit each of its pages, a
 * posting a doc and a term, a doc's length is the sum of its tfs (1 to
 * GPX_MAX_TF a posting); the pages of the pending chain, the segments and
 * the retired-list chain are distinct, and every block referenced exists.
 */
static void
check_bounds(Relation index, const GpxMetaPageData *meta)
{
	bool		freqs = (meta->flags & GPX_META_FREQS) != 0;
	uint64		pages = 1 + (uint64) meta->pend_pages +
		((uint64) meta->nretired_more + GPX_RETIRED_PER_PAGE - 1) / GPX_RETIRED_PER_PAGE;
	BlockNumber most = GPX_META_BLKNO;

	if ((meta->pend_head == InvalidBlockNumber ?
		 (meta->pend_pages | meta->pend_entries | meta->pend_bytes | meta->pend_dl) != 0 :
		 meta->pend_pages == 0) ||
		(meta->pend_entries == 0) != (meta->pend_bytes == 0) ||
		meta->pend_bytes > (uint64) meta->pend_pages * GPX_PAGE_CAPACITY ||
		meta->pend_entries > meta->pend_bytes / GPX_PENDING_MIN_ENTRY ||
		meta->pend_dl > (freqs ? GPX_MAX_TF * meta->pend_bytes : 0))
		gpx_report_corrupt(index, GPX_META_BLKNO,
						   "Metapage counts %llu pending entries of %llu bytes on %u pages",
						   (unsigned long long) meta->pend_entries,
						   (unsigned long long) meta->pend_bytes, meta->pend_pages);
	most_block(&most, meta->pend_head);
	most_block(&most, meta->pend_tail);
	for (uint32 i = 0; i < meta->nsegments; i++)
	{
		const GpxSegRef *s = &meta->segments[i];

		if (s->npages == 0 || s->ndocs > (uint64) s->npages * GPX_DEAD_BITS_PER_PAGE ||
			s->nterms > s->npostings || s->npostings > (uint64) s->ndocs * s->nterms ||
			(freqs ? s->sum_dl < s->npostings || s->sum_dl > GPX_MAX_TF * s->npostings :
			 (s->sum_dl | s->dead_dl) != 0))
			gpx_report_corrupt(index, GPX_META_BLKNO,
							   "Metapage counts %u docs, %u terms and %llu postings on %u pages in segment %u",
							   s->ndocs, s->nterms, (unsigned long long) s->npostings, s->npages, s->id);
		pages += s->npages;
		most_block(&most, s->head);
	}
	for (uint32 i = 0; i < meta->nretired; i++)
	{
		most_block(&most, meta->retired[i].first);
		most_block(&most, meta->retired[i].stop);
	}
	most_block(&most, meta->retired_more);
	if (!gpx_index_has_blocks(index, Max(pages, (uint64) most + 1)))
		gpx_report_corrupt(index, GPX_META_BLKNO,
						   "Metapage references %llu pages and block %u, more than the index has",
						   (unsigned long long) pages, most);
}

void
gpx_meta_check(Relation index, const GpxMetaPageData *meta)
{
	gpx_meta_check_version(index, meta);
	if (meta->kind != GPX_KIND_TEXT && meta->kind != GPX_KIND_TSVECTOR)
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage has an unknown document kind %u", meta->kind);
	if ((meta->flags & ~(GPX_META_FREQS | GPX_META_POSITIONS)) ||
		((meta->flags & GPX_META_POSITIONS) && (!(meta->flags & GPX_META_FREQS) || meta->kind != GPX_KIND_TSVECTOR)))
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage has unknown flags %x", meta->flags);
	for (uint32 i = 0; i < meta->nsegments; i++)
	{
		const GpxSegRef *s = &meta->segments[i];

		if (s->id == 0 || s->id >= meta->next_segment_id || s->ndead > s->ndocs || s->dead_dl > s->sum_dl ||
			s->head == GPX_META_BLKNO || s->head == InvalidBlockNumber)
			gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage entry of segment %u is inconsistent", s->id);
	}
	if ((meta->pend_head == InvalidBlockNumber) != (meta->pend_tail == InvalidBlockNumber) ||
		meta->pend_head == GPX_META_BLKNO || meta->pend_tail == GPX_META_BLKNO ||
		meta->pend_head_off > GPX_PAGE_CAPACITY)
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage pending area bounds are inconsistent");
	if (meta->retired_more == GPX_META_BLKNO ||
		(meta->retired_more == InvalidBlockNumber) != (meta->nretired_more == 0))
		gpx_report_corrupt(index, GPX_META_BLKNO, "Metapage retired-list chain is inconsistent");
	check_bounds(index, meta);
}


void
gpx_meta_read(Relation index, GpxMetaPageData *meta)
{
	Buffer		buf = gpx_read_page(index, GPX_META_BLKNO, BUFFER_LOCK_SHARE, &meta_tag);

	gpx_meta_unpack(index, BufferGetPage(buf), meta);
	UnlockReleaseBuffer(buf);
}

Buffer
gpx_meta_share(Relation index, GpxMetaPageData *meta)
{
	Buffer		buf = gpx_read_page(index, GPX_META_BLKNO, BUFFER_LOCK_SHARE, &meta_tag);

	gpx_meta_unpack(index, BufferGetPage(buf), meta);
	return buf;
}

Buffer
gpx_meta_lock(Relation index, GpxMetaPageData *meta)
{
	Buffer		buf = gpx_read_page(index, GPX_META_BLKNO, BUFFER_LOCK_EXCLUSIVE, &meta_tag);

	gpx_meta_unpack(index, BufferGetPage(buf), meta);
	return buf;
}

int
gpx_meta_find_segment(const GpxMetaPageData *meta, uint32 id)
{
	for (uint32 i = 0; i < meta->nsegments; i++)
		if (meta->segments[i].id == id)
			return (int) i;
	return -1;
}

void
gpx_meta_remove_segment(GpxMetaPageData *meta, uint32 id)
{
	int			i = gpx_meta_find_segment(meta, id);

	Assert(i >= 0);
	memmove(&meta->segments[i], &meta->segments[i + 1],
			(meta->nsegments - i - 1) * sizeof(GpxSegRef));
	meta->nsegments--;
}

void
gpx_meta_retire(GpxMetaPageData *meta, uint32 kind, uint32 owner,
				BlockNumber first, BlockNumber stop)
{
	GpxRetired *r;

	/* callers made room first (gpx_retired_make_room) */
	if (meta->nretired >= GPX_MAX_RETIRED)
		elog(ERROR, "gpuidx: no room in the metapage for a retired page set");
	r = &meta->retired[meta->nretired++];
	r->kind = kind;
	r->owner = owner;
	r->first = first;
	r->stop = stop;
	r->xid = ReadNextFullTransactionId();
}

char *
gpx_meta_config_name(const GpxMetaPageData *meta)
{
	return psprintf("%s.%s", NameStr(meta->config_schema), NameStr(meta->config_name));
}
