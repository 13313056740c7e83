/*
 * gpuidx_am.h
 *	  The contract between the files of the gpuidx index access method, one
 *	  file per phase of an index's life: handler.c (the AM routine, options),
 *	  build.c, insert.c, scan.c (bitmap, plain and ranked scans), nulls.c
 *	  (the rows with no document, after the ranked ones), merge.c,
 *	  vacuum.c, cost.c, verify.c, stats.c and rank.c (BM25 row by row, and
 *	  binding a ranked query to its index).  On-disk layout: store/layout.h; query executor: query/.
 */
#ifndef GPUIDX_AM_H
#define GPUIDX_AM_H

#include "postgres.h"

#include "access/amapi.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"

#include "gpuidx.h"
#include "store/meta.h"
#include "text/tokenize.h"

/* reloptions */
typedef struct GpxOptions
{
	int32		vl_len_;
	int			codec;			/* GPUIDX_CODEC_* or -1 (auto) */
	int			pending_list_limit; /* kB */
	int			text_config;	/* offset of the name in this struct, or 0 */
	bool		freqs;			/* store tfs and doc lengths (at build) */
	bool		positions;		/* store positions (at build) */
	double		k1;				/* BM25 parameters of ranked queries */
	double		b;
} GpxOptions;

/*
 * The strategies of the operator classes: doc @@& query, ORDER BY doc <=>
 * query; and, for tsvector, PostgreSQL's doc @@ tsquery and doc @@@ tsquery
 */
#define GPX_STRATEGY_MATCH			1
#define GPX_STRATEGY_RANK			2
#define GPX_STRATEGY_TSQUERY		3
#define GPX_STRATEGY_TSQUERY_OLD	4
#define GPX_IS_TSQUERY_STRATEGY(s)	((s) == GPX_STRATEGY_TSQUERY || (s) == GPX_STRATEGY_TSQUERY_OLD)
#define GPX_STRATEGY_RANK_GIVEN		5	/* ORDER BY doc <=> bm25query */
#define GPX_IS_RANK_STRATEGY(s)		((s) == GPX_STRATEGY_RANK || (s) == GPX_STRATEGY_RANK_GIVEN)

#define GPX_DEFAULT_PENDING_LIMIT	4096	/* kB, as GIN's gin_pending_list_limit */
#define GPX_CODEC_AUTO				(-1)

/* progress phases of CREATE INDEX (PROGRESS_CREATEIDX_SUBPHASE) */
#define GPX_PHASE_SCAN		2
#define GPX_PHASE_MERGE		3
#define GPX_PHASE_WAL		4

/* what never changes in an index's life, cached in rd_amcache */
typedef struct GpxIndexInfo
{
	uint32		kind;			/* GPX_KIND_* */
	Oid			config;			/* of its lexemes; InvalidOid if gone */
} GpxIndexInfo;

/* handler.c */
extern void gpx_define_reloptions(void);
extern bytea *gpx_options(Datum reloptions, bool validate);
extern int	gpx_index_codec(Relation index);
extern Size gpx_pending_limit(Relation index);
extern bool gpx_index_freqs_option(Relation index);
/* the option positions, checked against the index's kind and freqs */
extern bool gpx_index_positions_option(Relation index, uint32 kind, bool freqs);
extern void gpx_index_bm25_params(Relation index, double *k1, double *b);
extern void gpx_check_index(Relation index);	/* ERROR unless a gpuidx index */
extern void gpx_alter_check_init(void);
/*
 * forget.c: what the backends share under an index's relfilenode, forgotten
 * when its storage is new (gpx_forget_index, from the build) or dropped
 * (the hook gpx_forget_init sets, from _PG_init)
 */
extern void gpx_forget_index(RelFileLocator node);
extern void gpx_forget_init(void);
extern void gpx_check_index_oid(Oid indexoid);	/* ERROR unless an index exists */

/* config.c: the index's text search configuration */
extern void gpx_validate_text_config(const char *value);	/* the option's validator */
extern char *gpx_config_qualified_name(Oid config);
/* for a build: the option's, else the setting's; then written into the options */
extern Oid	gpx_build_config(Relation index);
extern void gpx_record_build_config(Relation index, Oid config);
/* a WARNING when a tsvector index names a text_config, which it does not use */
extern void gpx_check_config_option(Relation index);
/* from _PG_init: the same warning at ALTER INDEX ... SET */
extern void gpx_check_altered_config(Relation index);
extern uint32 gpx_kind_of(Relation index);
extern const GpxIndexInfo *gpx_index_info(Relation index);
/* the configuration of the index's lexemes (ERROR if it no longer exists) */
extern Oid	gpx_index_config(Relation index);
/* can the index answer a query under config? */
extern bool gpx_index_answers(Relation index, Oid config);
/* a notice that the planner passes a text index over: built under another configuration */
extern void gpx_note_config_passed_over(Relation index, Oid config);

/* build.c */
extern IndexBuildResult *gpx_build(Relation heap, Relation index, IndexInfo *indexInfo);
extern void gpx_buildempty(Relation index);
/* the lexemes of a document: the sorted set, with tfs and its length */
extern void gpx_document_lexemes(uint32 kind, Oid cfg, Datum value, GpxLexemes *out);

/* insert.c */
extern bool gpx_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
					   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
					   IndexInfo *indexInfo);

/* scan.c */
extern IndexScanDesc gpx_beginscan(Relation index, int nkeys, int norderbys);
extern void gpx_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys);
extern int64 gpx_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern bool gpx_gettuple(IndexScanDesc scan, ScanDirection dir);
extern void gpx_endscan(IndexScanDesc scan);

/* what an ordered (ranked) scan did so far, for EXPLAIN ANALYZE of the rank custom scan */
typedef struct GpxRankScanInfo
{
	bool		ranked;			/* the scan ranked (false: nothing yet, or no key) */
	uint32		rounds;			/* top-k rounds */
	uint32		k;				/* the last round's k */
	uint64		cpu_segments;	/* segment rankings in this backend, every round */
	uint64		worker_segments;	/* segment rankings by the GPU worker */
	uint64		blocks_loaded;	/* WAND's blocks decoded (backend rankings) */
	uint64		blocks_skipped;
	uint64		lists_cached;	/* lists ranked from the backend's copy */
	uint32		pending;		/* pending entries scored */
	bool		nulls_read;		/* the table was read for the rows without a document */
	uint64		nulls;			/* how many of them came */
} GpxRankScanInfo;

extern void gpx_scan_rank_info(IndexScanDesc scan, GpxRankScanInfo *info);

/*
 * The first top-k round of a ranked scan computes k rows (0: the default,
 * 32): a LIMIT the scan's rows are all the query needs, so that a top 10
 * is not computed as a top 32.  With a tsquery key, whose check on the rows
 * may drop some, no fewer than the default.  Later rounds, when rows run
 * out, grow from it as before.
 */
extern void gpx_scan_set_first_k(IndexScanDesc scan, uint32 k);
/* the terms of a query string under cfg */
extern void gpx_query_terms(Oid cfg, text *query, GpxLexemes *out);

/*
 * The scan keys as one query tree (query/tsq.h) when any of them is a
 * tsquery; NULL when all are @@& queries (their terms are then ANDed).
 */
struct GqTree;
extern struct GqTree *gpx_keys_tree(ScanKey keys, int nkeys, Oid cfg);

/*
 * nulls.c: the rows an index does not hold (indexed value NULL, within its
 * predicate), in heap order, as the TIDs its entries would have
 */
typedef struct GpxNullScan GpxNullScan;

/* can the table hold such rows?  (not when the indexed column is NOT NULL) */
extern bool gpx_index_may_miss_rows(Relation heap, Relation index);
extern GpxNullScan *gpx_nulls_begin(Relation heap, Relation index, Snapshot snapshot);
extern bool gpx_nulls_next(GpxNullScan *ns, ItemPointer tid);
extern void gpx_nulls_end(GpxNullScan *ns);

/* merge.c: callers hold the merge lock */
extern void gpx_merge_lock(Relation index);
extern bool gpx_merge_trylock(Relation index);
extern void gpx_merge_unlock(Relation index);
extern uint64 gpx_merge_pending(Relation index, Size budget);
/*
 * vacuum: VACUUM's merges too (dead docs, all segments into one past
 * TOP_SHARE); compact: VACUUM then moves segments to the front of the file
 * (gpx_merge_relocate) and cuts its end off
 */
extern int	gpx_merge_tiers(Relation index, Size budget, bool vacuum, bool compact);
/* the pages of earlier merges recycled, the pending area merged, then the tiers */
extern uint64 gpx_merge_step(Relation index, Size budget);
/* VACUUM: segments ending the file rewritten into free pages before; returns how many */
extern int	gpx_merge_relocate(Relation index, Size budget, BufferAccessStrategy strategy);
extern uint32 gpx_reserve_segment_id(Relation index);

/* vacuum.c */
extern IndexBulkDeleteResult *gpx_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback, void *callback_state);
extern IndexBulkDeleteResult *gpx_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats);

/* recycle.c: callers hold the merge lock */
/* room in the metapage for need more retired sets (moving its sets to the chain) */
extern void gpx_retired_make_room(Relation index, int need);
/*
 * Free the retired sets no snapshot can read any more (all: every one, for
 * a caller that holds the index exclusively); returns the pages freed
 */
extern BlockNumber gpx_recycle(Relation index, bool all);
/* every page: free ones to the free space map, unreferenced ones freed; returns how many */
extern BlockNumber gpx_reclaim_pages(Relation index, BufferAccessStrategy strategy,
									 BlockNumber *nblocks);
/*
 * VACUUM: every retired set freed under an AccessExclusiveLock on the index
 * (no scan has it open), or those no snapshot reads when the lock does not
 * come at once; returns the pages freed
 */
extern BlockNumber gpx_recycle_exclusive(Relation index);
/* VACUUM: the free pages ending the file cut off, when the lock comes at once; returns how many */
extern BlockNumber gpx_truncate_free_end(Relation index, BufferAccessStrategy strategy);

/* cost.c */
typedef struct GpxEstimate
{
	double		docs;			/* live docs and pending entries */
	double		selectivity;
	double		postings;		/* of the query's terms, every segment */
	double		pages;			/* index pages a scan reads */
	double		pending_entries;
} GpxEstimate;

extern void gpx_estimate(Relation index, const GpxLexemes *terms, GpxEstimate *est);
/* the same for a query tree (query/tsq.h): its candidates */
extern void gpx_estimate_tree(Relation index, const struct GqTree *tree, GpxEstimate *est);
extern uint32 gpx_index_segments(Relation index);
extern void gpx_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
							 Cost *startup, Cost *total, Selectivity *selectivity,
							 double *correlation, double *pages);

/*
 * A clause "doc @@ tsquery" (tsquery) or "doc @@& text" on the index's
 * document, value its query or NULL when the planner cannot see it (a
 * parameter: the typical query): the share of the rows it keeps, and the
 * share of a table of heap_pages (and tuples) a sequential scan reads
 * before its k-th match: doc ids follow the heap, so the index finds the
 * first matches.  1 when the k-th lies past max_fraction of the table, or
 * there are fewer: only as far as the caller must know is read.  For an
 * unknown query, where a typical query's k-th match lies on average.
 */
extern double gpx_clause_selectivity(Relation index, Const *value, bool tsquery, double tuples);
extern double gpx_scan_fraction(Relation index, Const *value, bool tsquery, double k, BlockNumber heap_pages,
								double tuples, double max_fraction);

#endif							/* GPUIDX_AM_H */
