/*
 * cpu.h
 *	  Set operations on compressed posting lists, on the CPU: intersection
 *	  (block-streaming merge for similar lengths, next_geq skipping for skewed
 *	  ones, shortest-first SvS for k lists), union and difference.
 *
 * Independent of PostgreSQL: the extension, the CPU engine, the unit tests
 * and the benchmarks share it, and the GPU engine is checked against it.
 * Results are plain sorted uint32 arrays; every output buffer must have room
 * for the bound given with each function.  Arrays passed in must be sorted
 * and distinct; lists may hold anything that opened: a function that meets
 * postings out of order returns CPU_CORRUPT instead of a count (what it
 * wrote to out is then meaningless).
 */
#ifndef GPUIDX_CPU_H
#define GPUIDX_CPU_H

#include "../codec/codec.h"

typedef enum cpu_method
{
	CPU_METHOD_AUTO = 0,		/* by length ratio: merge below the skip ratio */
	CPU_METHOD_MERGE,			/* stream both sides block by block */
	CPU_METHOD_SKIP				/* walk the shorter side, next_geq on the longer */
} cpu_method;

/* returned instead of a count: a list's postings are out of order (damaged) */
#define CPU_CORRUPT UINT32_MAX

/* length ratio from which AUTO searches instead of merging (bench/codec) */
#define CPU_SKIP_RATIO_DEFAULT 32

typedef struct cpu_stats
{
	uint64_t	blocks_touched; /* blocks of compressed lists that were read */
	uint64_t	blocks_total;	/* blocks of the lists involved */
	uint32_t	rounds_merge;
	uint32_t	rounds_skip;
} cpu_stats;

/* the method AUTO picks for lengths short <= long */
extern cpu_method cpu_pick_method(uint64_t short_len, uint64_t long_len);

/*
 * a[0..na) (sorted, distinct) intersected with list b into out, which may be
 * a itself.  Stops after limit results (0: no limit); out needs room for
 * min(na, limit).
 */
extern uint32_t cpu_intersect_array_list(const uint32_t *a, uint32_t na, const pl_view *b,
										 uint32_t *out, cpu_method method, uint32_t limit,
										 cpu_stats *stats);

/* two lists; out needs room for min(a->count, b->count, limit) */
extern uint32_t cpu_intersect_lists(const pl_view *a, const pl_view *b, uint32_t *out,
									cpu_method method, uint32_t limit, cpu_stats *stats);

/*
 * k lists, shortest first (SvS); out has room for the shortest list.  The
 * lists array is reordered.
 */
extern uint32_t cpu_intersect_k(const pl_view **lists, int k, uint32_t *out,
								cpu_method method, cpu_stats *stats);

/* a[0..na) union list b; out (room: na + b->count) must not be a */
extern uint32_t cpu_union_array_list(const uint32_t *a, uint32_t na, const pl_view *b,
									 uint32_t *out);

/* a[0..na) minus list b; out (room: na) may be a */
extern uint32_t cpu_difference_array_list(const uint32_t *a, uint32_t na, const pl_view *b,
										  uint32_t *out, cpu_method method, cpu_stats *stats);

/* plain sorted arrays */
extern uint32_t cpu_merge_intersect(const uint32_t *a, uint32_t na, const uint32_t *b,
									uint32_t nb, uint32_t *out, uint32_t cap);
extern uint32_t cpu_merge_union(const uint32_t *a, uint32_t na, const uint32_t *b,
								uint32_t nb, uint32_t *out);
/* a less b; out (room: na) may be a */
extern uint32_t cpu_merge_difference(const uint32_t *a, uint32_t na, const uint32_t *b,
									 uint32_t nb, uint32_t *out);

/* sort v[0..n) ascending; tmp has room for n values */
extern void cpu_sort_u32(uint32_t *v, size_t n, uint32_t *tmp);

/* drop repeats from sorted v; returns the new length */
extern size_t cpu_unique_u32(uint32_t *v, size_t n);

/* same set of postings, whatever the codecs, in *equal; PL_ERR_ORDER on damage */
extern pl_status cpu_lists_equal(const pl_view *a, const pl_view *b, bool *equal);

#endif							/* GPUIDX_CPU_H */
