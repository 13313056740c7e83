/*
 * pending.h
 *	  The pending area: new rows appended cheaply at its tail, read by every
 *	  scan without being merged, and merged into a segment past a size limit
 *	  or by VACUUM.  Layout: store/layout.h.
 */
#ifndef GPUIDX_STORE_PENDING_H
#define GPUIDX_STORE_PENDING_H

#include "lib/stringinfo.h"
#include "storage/itemptr.h"

#include "store/meta.h"
#include "text/tokenize.h"

/*
 * Append one document (its distinct lexemes, sorted bytewise, with their
 * tfs and the doc's length, kept when the index has freqs, and their
 * positions, kept when it has positions) at the tail.  Returns the pending
 * area's size in bytes afterwards.
 */
extern uint64 gpx_pending_insert(Relation index, ItemPointer tid, const GpxLexemes *doc);

/* the sequence number of the page a pending page links to */
extern uint32 gpx_pending_next_seq(Page page);

/*
 * Inserts hold the writers' lock (shared) while they write pages that
 * nothing links to yet; VACUUM frees unlinked pages only while it holds it
 * exclusively (a conditional lock: it never waits for inserts).
 */
extern void gpx_pending_writers_lock(Relation index);
extern void gpx_pending_writers_unlock(Relation index);
extern bool gpx_pending_writers_exclude(Relation index);
extern void gpx_pending_writers_allow(Relation index);

typedef struct GpxPendingReader
{
	Relation	index;
	BlockNumber blk;			/* page held in page */
	uint32		seq;			/* its sequence number */
	BlockNumber next;			/* the page after it */
	uint32		next_seq;		/* and its sequence number */
	uint32		pos;			/* next byte to read on it */
	uint32		used;
	char	   *page;
	BlockNumber stop_blk;		/* stop here (a merge), or InvalidBlockNumber */
	uint32		stop_off;
	StringInfoData assembly;	/* an entry straddling pages */
	uint32		pages_read;
	bool		freqs;			/* entries carry tfs and lengths */
	bool		positions;		/* and positions */
	/* what the metapage copy counts that is not read yet */
	uint64		bytes_left;
	uint64		entries_left;
	uint64		dl_left;
	uint32		pages_max;
	/* the current entry */
	ItemPointerData tid;
	uint32		nlex;
	uint32		dl;				/* its doc's length (with freqs) */
	const uint8 *lex;			/* its lexemes */
	const uint8 *end;
	const uint8 *positions_at;	/* with positions: each lexeme's record, in order */
	const uint8 *entry_end;		/* the end of the positions */
	uint32		entry_bytes;	/* as counted in pend_bytes */
} GpxPendingReader;

/*
 * Read from the head a copy of the metapage gives, its pend_bytes of
 * entries (or up to stop_blk/off first): the entries it counts, whatever
 * was appended since.  At their end their number, bytes and lengths are
 * checked against its counters.
 */
extern void gpx_pending_begin(GpxPendingReader *r, Relation index, const GpxMetaPageData *meta,
							  BlockNumber stop_blk, uint32 stop_off);
/*
 * Go on where a reader of the same chain (the same head) stopped: at byte
 * pos of page blk (sequence seq), having read done_bytes, done_entries,
 * done_dl and done_pages of what meta counts; on to the end of what meta
 * counts.
 */
extern void gpx_pending_resume(GpxPendingReader *r, Relation index, const GpxMetaPageData *meta,
							   BlockNumber blk, uint32 seq, uint32 pos, uint64 done_bytes,
							   uint64 done_entries, uint64 done_dl, uint32 done_pages);
extern bool gpx_pending_next(GpxPendingReader *r);
extern void gpx_pending_end(GpxPendingReader *r);

#endif							/* GPUIDX_STORE_PENDING_H */
