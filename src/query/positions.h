/*
 * positions.h
 *	  Phrases and weights settled in the index, from the positions it
 *	  stores (option positions).
 */
#ifndef GPUIDX_QUERY_POSITIONS_H
#define GPUIDX_QUERY_POSITIONS_H

#include "query/tsq.h"
#include "store/segment.h"

/*
 * The tree's unsure candidates of a segment with positions
 * (gq_tree_positions_settle true) settled: those that match join *sure (in
 * order), the others are dropped, and *unsure is left empty.
 */
extern void gq_settle_by_positions(GpxSegment *seg, const GqTree *tree, uint32 **sure, uint32 *nsure,
								   uint32 **unsure, uint32 *nunsure);

#endif							/* GPUIDX_QUERY_POSITIONS_H */
