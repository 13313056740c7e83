/*
 * accum.h
 *	  Postings accumulated in memory within a budget, spilled as sorted runs
 *	  to a logical tape set when the budget is reached, and merged into a
 *	  segment writer in term order.
 *
 * Documents are added in increasing doc id order, each with its lexemes
 * (repeats within a document are ignored).  Runs hold consecutive ranges of
 * doc ids, so merging them concatenates each term's postings run by run:
 * no posting is ever sorted.
 */
#ifndef GPUIDX_STORE_ACCUM_H
#define GPUIDX_STORE_ACCUM_H

#include "storage/sharedfileset.h"
#include "utils/logtape.h"

#include "store/segment.h"

typedef struct GpxAccum GpxAccum;

/*
 * budget: bytes the accumulator and its merge may use; freqs: keep tfs;
 * positions (with freqs): keep each posting's positions record
 */
extern GpxAccum *gpx_accum_create(Size budget, bool freqs, bool positions);
/*
 * tf: the term's frequency in doc (with freqs: each term once per doc);
 * pos: with positions, its positions record (store/parse.h) of poslen bytes
 */
extern void gpx_accum_add(GpxAccum *a, const char *term, int len, uint32 doc, uint32 tf,
						  const uint8 *pos, uint32 poslen);
/* between documents: spill a run if over budget */
extern void gpx_accum_end_doc(GpxAccum *a);
/* every term, in order, into the writer */
extern void gpx_accum_emit(GpxAccum *a, GpxSegWriter *w);
extern uint32 gpx_accum_runs(GpxAccum *a);

/*
 * Parallel build.  A participant's accumulator keeps its runs in fileset
 * under fileno; gpx_accum_export merges them into one run frozen for the
 * leader (instead of gpx_accum_emit).  The leader's accumulator imports
 * the participants' runs in doc order, each with the number of documents
 * before it, and gpx_accum_emit merges them in one pass.
 */
extern GpxAccum *gpx_accum_create_shared(Size budget, bool freqs, bool positions,
										 SharedFileSet *fileset, int fileno);
extern void gpx_accum_export(GpxAccum *a, TapeShare *share);
extern void gpx_accum_import(GpxAccum *a, SharedFileSet *fileset, int fileno, TapeShare *share,
							 uint32 base);
extern Size gpx_accum_peak(GpxAccum *a);
extern void gpx_accum_free(GpxAccum *a);

#endif							/* GPUIDX_STORE_ACCUM_H */
