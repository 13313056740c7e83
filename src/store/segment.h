/*
 * segment.h
 *	  Immutable segments: writing one (from a build, the pending area or a
 *	  merge of segments) and reading one (term lookup, lists, doc map, dead
 *	  docs).  Layout: store/layout.h.
 */
#ifndef GPUIDX_STORE_SEGMENT_H
#define GPUIDX_STORE_SEGMENT_H

#include "storage/itemptr.h"

#include "codec/codec.h"
#include "store/page.h"
#include "store/parse.h"

/* ---------------------------------------------------------------------------
 * Writing
 *
 * Documents are added in doc id order (their TIDs form the doc map), then
 * terms in strictly increasing bytewise order, each with its postings in
 * increasing order, in as many pieces as the caller likes.
 */
typedef struct GpxSegWriter GpxSegWriter;

/*
 * codec: GPUIDX_CODEC_* for long lists, or -1 (PL_CODEC_AUTO) for the
 * smallest; freqs: store each doc's length and each posting's tf (then
 * tfs may not be NULL below); positions (with freqs): each posting's
 * positions too (then pos may not be NULL)
 */
extern GpxSegWriter *gpx_segw_begin(Relation index, uint32 segid, bool use_wal, int codec, bool freqs,
									bool positions);
/* the segment's pages past the end of the index, none from the free space map */
extern void gpx_segw_past_end(GpxSegWriter *w);
extern void gpx_segw_add_doc(GpxSegWriter *w, ItemPointer tid, uint32 dl);
extern uint32 gpx_segw_ndocs(GpxSegWriter *w);
extern void gpx_segw_term_begin(GpxSegWriter *w, const char *term, int len, uint64 df_hint);
/* pos: with positions, the n postings' positions records (store/parse.h), poslen bytes */
extern void gpx_segw_term_add(GpxSegWriter *w, const uint32 *ids, const uint8 *tfs, const uint8 *pos,
							  Size poslen, uint32 n);
extern void gpx_segw_term_end(GpxSegWriter *w);

/* write what is left and the header; fills ref (ndead 0) */
extern void gpx_segw_finish(GpxSegWriter *w, GpxSegRef *ref);

/* bytes the writer holds besides its term buffer (for memory budgets) */
extern Size gpx_segw_memory(GpxSegWriter *w);

/* ---------------------------------------------------------------------------
 * Reading
 */
/* a copy of a page's contents, kept while a reader goes on using it */
typedef struct GpxPageCopy
{
	uint32		pageno;			/* or UINT32_MAX */
	uint32		used;
	char	   *data;			/* GPX_PAGE_CAPACITY bytes */
} GpxPageCopy;

typedef struct GpxSegment
{
	Relation	index;
	GpxSegRef	ref;			/* as the metapage listed it */
	GpxSegHeaderData *hdr;		/* copy of the header page's contents */
	BlockNumber **tables;		/* table pages read so far (ntables > 0) */
	uint32		dead_page;		/* DEAD page held in dead_bits, or UINT32_MAX */
	uint8	   *dead_bits;
	GpxPageCopy docdir;			/* doc map pages last read */
	GpxPageCopy docmap;
	uint32		chunk;			/* doc map chunk held in chunk_tids, or UINT32_MAX */
	uint32		chunk_len;
	ItemPointerData chunk_tids[GPX_DOCMAP_CHUNK];
	GpxPageCopy lendir;			/* doc length pages last read */
	GpxPageCopy lens;
	uint32		dl_chunk;		/* doc length chunk held in dl_bits, or UINT32_MAX */
	uint32		dl_width;		/* its width and base (parse.h) */
	uint32		dl_base;
	uint8		dl_bits[GPX_DOCMAP_CHUNK * 4];	/* its lengths' bits */
	MemoryContext mcxt;			/* where it was opened: what it keeps lives there */
	struct GpxPartList *parts;	/* long lists read in part, kept (segread.c) */
	uint32		nparts;
	uint32		maxparts;
	struct GpxPartsKept *kept;	/* their bytes, in the backend's sum (segread.c) */
} GpxSegment;

/* one term's postings in one segment, opened for the CPU set operations */
typedef struct GpxList
{
	uint32		df;
	pl_view		view;
	void	   *mem;			/* palloc'd bytes the view points into */
} GpxList;

/*
 * A palloc'd copy of a segment header page's contents in the current
 * layout, whatever format version wrote it; *used becomes its size there
 */
extern GpxSegHeaderData *gpx_seg_header_copy(const char *contents, uint32 *used);
extern GpxSegment *gpx_seg_open(Relation index, const GpxSegRef *ref);
extern void gpx_seg_close(GpxSegment *seg);
extern BlockNumber gpx_seg_block(GpxSegment *seg, int stream, uint32 pageno);
extern Buffer gpx_seg_read(GpxSegment *seg, int stream, uint32 pageno);

/* where a term's list is, as its dictionary entry says */
typedef struct GpxTermRef
{
	uint32		df;
	bool		external;
	uint32		len;			/* bytes of the list */
	uint32		page;			/* external: where it starts in the LISTS stream */
	uint32		offset;
	uint32		freq_page;		/* external, with freqs: its frequency record */
	uint32		freq_offset;
	uint8	   *payload;		/* inline: a palloc'd copy of the list (then
								 * its df tfs, with freqs; then its
								 * positions record, pos_len bytes) */
	uint32		pos_page;		/* with positions: its positions record */
	uint32		pos_offset;
	uint32		pos_len;		/* or in the payload (GPX_SEG_POSITIONS_V2) */
	bool		pos_flags;		/* the record begins with a flags byte */
} GpxTermRef;

/* the bytes of an inline ref's payload */
extern uint32 gpx_term_payload_len(GpxSegment *seg, const GpxTermRef *ref);

/*
 * A term's dictionary entry; false if the segment does not have the term.
 * Remembered by the backend (segread.c); gpx_seg_forget_cached forgets all.
 */
extern bool gpx_seg_find(GpxSegment *seg, const char *term, int len, GpxTermRef *ref);
extern void gpx_seg_forget_cached(void);

/*
 * The terms that begin with a prefix, in sum: their document frequencies,
 * the pages of their external lists, the dictionary leaves they lie on.
 * Remembered by the backend with the entries above (a segment never
 * changes): a query and its plan ask for them several times, and a prefix
 * of three letters can cover tens of thousands of terms.
 */
typedef struct GpxPrefixStats
{
	uint64		terms;			/* how many terms have the prefix */
	uint64		df;
	double		list_pages;
	uint32		leaves;
} GpxPrefixStats;

extern void gpx_seg_prefix_stats(GpxSegment *seg, const char *prefix, int len, GpxPrefixStats *st);

/*
 * A found term's postings among the segment's dead docs, remembered with
 * its entry for the count of dead docs (seg->ref.ndead) they were counted
 * against; and whether the metapage still counts seg->ref.ndead.
 */
extern bool gpx_seg_dead_postings_known(GpxSegment *seg, const char *term, int len, uint64 *postings);
extern void gpx_seg_dead_postings_remember(GpxSegment *seg, const char *term, int len, uint64 postings);
extern bool gpx_seg_dead_unchanged(GpxSegment *seg);

/*
 * The same for an external list, shared by the backends for the count of
 * dead docs seg->ref.ndead (deadcount.c; shared memory exists only when
 * gpuidx is preloaded, else nothing is kept); an index built again forgets
 * its entries.
 */
extern bool gpx_dead_counts_get(GpxSegment *seg, const GpxTermRef *ref, uint64 *postings);
extern void gpx_dead_counts_put(GpxSegment *seg, const GpxTermRef *ref, uint64 postings);
extern void gpx_dead_counts_forget_index(RelFileLocator node);
extern Size gpx_dead_counts_shmem_size(void);
extern void gpx_dead_counts_shmem_request(void);
extern void gpx_dead_counts_shmem_init(void);
/* the leaf the inner nodes lead term to (for verification) */
extern bool gpx_seg_leaf_for(GpxSegment *seg, const char *term, int len, uint32 *leaf);
/* open the list of a found term (the ref's payload is freed) */
extern void gpx_seg_list(GpxSegment *seg, GpxTermRef *ref, GpxList *list);

/*
 * The same for a search with probes (ascending): of a long EF list only the
 * header, the skip entries and the blocks probes can reach are read (each
 * page checked by its own checksum), so block skipping reads little.
 * Searches may touch nothing else of the list.  A probe that is a block's
 * first posting is found in the skip entries without the block, unless
 * whole_blocks: then every block a probe falls in is read, for a caller
 * that decodes the blocks of the postings it finds (positions do).
 */
extern void gpx_seg_list_probed(GpxSegment *seg, GpxTermRef *ref, const uint32 *probes,
								uint32 nprobes, bool whole_blocks, GpxList *list);
/* the same for the docs of [lo, hi) alone: the blocks that hold them */
extern void gpx_seg_list_window(GpxSegment *seg, GpxTermRef *ref, uint32 lo, uint32 hi, GpxList *list);
extern void gpx_list_free(GpxList *list);

/* the header of an external list (its page's checksum checked), for the GPU cache */
extern void gpx_seg_list_header(GpxSegment *seg, const GpxTermRef *ref, gpuidx_list_header *hdr);

/* TIDs of docs (increasing) that are not dead; returns how many */
extern uint32 gpx_seg_map(GpxSegment *seg, const uint32 *docs, uint32 n, ItemPointerData *tids);
/* the TIDs of one doc map chunk (GPX_DOCMAP_CHUNK docs, the last one fewer) */
extern uint32 gpx_seg_chunk(GpxSegment *seg, uint32 chunk, ItemPointerData *tids);
extern bool gpx_seg_is_dead(GpxSegment *seg, uint32 doc);

/*
 * Every dead doc of the segment as its bitmap holds it now, in order (*n
 * of them; NULL if none), and seg->ref.ndead set to their number.  VACUUM
 * may have marked more since the metapage was copied: damage is a bitmap
 * holding fewer than the copy counts, or more than the metapage counts
 * now.  *now (if given): the metapage's entry for the segment the count
 * was checked against (seg->ref as it was, a newer one, or id 0 when the
 * segment was merged away meanwhile).
 */
extern uint32 *gpx_seg_dead_docs(GpxSegment *seg, uint32 *n, GpxSegRef *now);
/* a doc of the segment that is not dead; a doc id past the segment is corruption */
extern bool gpx_seg_is_live(GpxSegment *seg, uint32 doc);

/* the document frequencies of the terms of nleaves leaves spread over the dictionary (estimates) */
extern uint32 *gpx_seg_sample_dfs(GpxSegment *seg, uint32 nleaves, uint32 *n);

/* every term in order, with its list (merges, VACUUM, verification) */
typedef struct GpxDictIter
{
	GpxSegment *seg;
	uint32		leaf;			/* next leaf page to read */
	uint32		ordinal;		/* terms returned so far */
	char	   *page;			/* contents of the current leaf */
	uint32		page_len;
	uint32		pos;			/* next entry's offset in page */
	uint32		left;			/* entries left on this leaf */
	uint32		leaf_no;		/* the leaf held */
	bool		sought;			/* started at a leaf: its first ordinal is taken */
	/* the current term */
	char		term[GPX_MAX_TERM_LEN + 1];
	int			term_len;
	uint32		df;
	bool		external;
	uint32		list_len;
	uint32		list_page;
	uint32		list_off;
	const uint8 *inline_data;	/* points into page */
	const uint8 *inline_tfs;	/* with freqs: as inline_tf_width says */
	uint8		inline_tf_width;	/* GPX_TFS_ONES, 1..8 bits, GPX_TFS_BYTES */
	uint32		freq_page;
	uint32		freq_off;
	uint32		pos_page;		/* with positions */
	uint32		pos_off;
	const uint8 *pos_record;	/* or the record in the entry: points into page */
	uint32		pos_len;
	bool		pos_flags;
} GpxDictIter;

extern void gpx_dict_iter_init(GpxDictIter *it, GpxSegment *seg);
/* start instead at the leaf where term would be (the terms before it come first) */
extern void gpx_dict_iter_seek(GpxDictIter *it, const char *term, int len);
/* after a seek to prefix: the next term that starts with it; false past the last */
extern bool gpx_dict_iter_next_prefixed(GpxDictIter *it, const char *prefix, int len);
extern bool gpx_dict_iter_next(GpxDictIter *it);
/* the current term's whole list, opened (verification: its checksum checked too) */
extern void gpx_dict_iter_list(GpxDictIter *it, GpxList *list);
/* the same for a search with probes, as gpx_seg_list_probed */
extern void gpx_dict_iter_list_probed(GpxDictIter *it, const uint32 *probes, uint32 nprobes,
									  bool whole_blocks, GpxList *list);
extern void gpx_dict_iter_end(GpxDictIter *it);

/*
 * The current term's list read a block at a time, in order, in the same
 * memory whatever its length (merges); its structure, order and bounds
 * checked as it goes, each page by its own checksum.  Blocks hold up
 * to GPUIDX_LRC_SEGMENT postings; 0 after the last.
 */
typedef struct GpxListReader GpxListReader;

extern GpxListReader *gpx_list_reader_begin(GpxDictIter *it);
extern uint32 gpx_list_reader_next(GpxListReader *r, uint32 *out);
extern void gpx_list_reader_end(GpxListReader *r);

/*
 * Term frequencies (segments with GPX_SEG_FREQS).  Before gpx_seg_list
 * (which frees an inline ref's payload): a list's tfs, either its checked
 * frequency record (external lists: blocks, maxima, packed tfs) or an
 * array of df tfs (inline lists).
 */
typedef struct GpxFreqs
{
	uint32		df;
	uint8	   *record;
	uint32		record_len;
	uint8	   *tfs;
} GpxFreqs;

extern void gpx_seg_freqs(GpxSegment *seg, GpxTermRef *ref, GpxFreqs *out);
extern void gpx_dict_iter_freqs(GpxDictIter *it, GpxFreqs *out);
/* the tfs of postings 128 block .. 128 block + 127 */
extern void gpx_freqs_tfs(const GpxFreqs *f, uint32 block, uint8 *tfs);
extern void gpx_freqs_free(GpxFreqs *f);

/* an external list's frequency record header alone (for the GPU cache) */
struct GpxFreqHeader;
extern void gpx_seg_freq_header(GpxSegment *seg, const GpxTermRef *ref, struct GpxFreqHeader *h);

/*
 * The segment's doc lengths as one blob for an engine (store/rankdata.h),
 * palloc'd; the docs the dead-doc bitmap marks now have length 0, which
 * engines do not score.
 */
extern uint8 *gpx_seg_doclens_blob(GpxSegment *seg, uint64 *len);

/*
 * A term's tfs a block at a time: in order alongside gpx_list_reader
 * (merges), or by block number (positions)
 */
typedef struct GpxFreqReader GpxFreqReader;
extern GpxFreqReader *gpx_freq_reader_begin(GpxDictIter *it);
extern GpxFreqReader *gpx_seg_freq_reader(GpxSegment *seg, GpxTermRef *ref);
extern void gpx_freq_reader_next(GpxFreqReader *r, uint8 *tfs, uint32 n);
/* block b's tfs (128, fewer in the last block), by number */
extern void gpx_freq_reader_block(GpxFreqReader *r, uint32 b, uint8 *tfs);
extern void gpx_freq_reader_end(GpxFreqReader *r);

/*
 * Positions (segments with GPX_SEG_POSITIONS): a term's positions record,
 * opened from its dictionary entry (found or iterated), then the positions
 * of the posting of each rank in the term's list (WordEntryPos values, at
 * most GPX_POS_MAX_COUNT; returns how many, 0 for a lexeme stored without
 * them).  Ranks asked in increasing order read the record forward.
 */
typedef struct GpxPositions GpxPositions;

/* before gpx_seg_list, which frees an inline ref's payload (its tfs and record) */
extern GpxPositions *gpx_seg_positions(GpxSegment *seg, GpxTermRef *ref);
/* the iterator's term's, read in list order alone (merges, verification; memory stays small) */
extern GpxPositions *gpx_dict_iter_positions(GpxDictIter *it);
/* the same, any rank asked */
extern GpxPositions *gpx_dict_iter_positions_at(GpxDictIter *it);
/* list: the term's list as the caller opened it (a search's: the block holding rank read) */
extern uint32 gpx_positions_get(GpxPositions *p, uint32 rank, const pl_view *list, uint16 *wep);
/* the next posting's positions, in list order (merges, verification) */
extern uint32 gpx_positions_next(GpxPositions *p, uint16 *wep);
/* after the last posting: its record ends where the data does, each block where its entry says */
extern void gpx_positions_check_end(GpxPositions *p);
extern void gpx_positions_free(GpxPositions *p);

/* doc lengths: of one chunk (returns its docs), or of one doc */
extern uint32 gpx_seg_chunk_lengths(GpxSegment *seg, uint32 chunk, uint32 *dls);
extern uint32 gpx_seg_doclen(GpxSegment *seg, uint32 doc);
/* the doc length codes (gpx_dl_code) of n docs, kept by the backend for chunks read again */
extern void gpx_seg_dl_codes(GpxSegment *seg, const uint32 *docs, uint32 n, uint8 *codes);

/* decoded leaf entries and inner nodes, shared by lookup and iteration */
pg_noreturn extern void gpx_seg_corrupt(GpxSegment *seg, int stream, uint32 pageno, const char *what);

#endif							/* GPUIDX_STORE_SEGMENT_H */
