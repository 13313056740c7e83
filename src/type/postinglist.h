/*
 * postinglist.h
 *	  The postinglist SQL type: a varlena whose data is one encoded list
 *	  (include/gpuidx_format.h).  Helpers shared by the type's files and by
 *	  the index code that builds or reads lists.
 */
#ifndef GPUIDX_POSTINGLIST_H
#define GPUIDX_POSTINGLIST_H

#include "gpuidx.h"

#include "codec/codec.h"

/* gpuidx.codec: which codec new lists get; -1 means auto (the smallest) */
#define PL_CODEC_AUTO (-1)
extern int	gpuidx_codec_setting;

/*
 * Detoast d and open it, checksum and structure checked; any failure is
 * reported as corrupt data.  Returns the detoasted varlena (the view points
 * into it).
 */
extern struct varlena *pl_open_datum(Datum d, pl_view *view);

#define PG_GETARG_PL_VIEW(n, view) pl_open_datum(PG_GETARG_DATUM(n), (view))

/* a new list datum from n strictly increasing values, codec as configured */
extern Datum pl_make_datum(const uint32 *values, uint32 n);
extern Datum pl_make_datum_codec(const uint32 *values, uint32 n, int codec);

/* decode a whole list into a palloc'd array */
extern uint32 *pl_decode_palloc(const pl_view *view);

/* sort and drop duplicates in place; returns the new length */
extern uint32 pl_sort_unique(uint32 *values, uint32 n);

/* a bigint as a document id, or an ERROR naming what it came from */
extern uint32 pl_checked_id(int64 value);

/* report a failed pl_status as corrupt data */
pg_noreturn extern void pl_report_corrupt(pl_status status);

/* a count from a src/cpu set operation, or corrupt data reported (CPU_CORRUPT) */
extern uint32 pl_checked_count(uint32 count);

/* the codec named by a string ("raw", "ef", "lrc", "auto") or an ERROR */
extern int	pl_codec_from_name(const char *name);
extern const char *pl_codec_name(int codec);

#endif							/* GPUIDX_POSTINGLIST_H */
