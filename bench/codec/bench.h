/*
 * bench.h
 *	  Shared declarations of the codec benchmark: the exported corpus
 *	  (bench/README.md gives the file layouts), timing helpers and the model
 *	  of GIN's posting-list encoding.
 */
#ifndef CODEC_BENCH_H
#define CODEC_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "codec/codec.h"
#include "cpu/cpu.h"
/* the plain references results are checked against (ref_intersect) */
#include "../../test/reference.h"

/* lists at least this long are "long": decode speed is measured on them */
#define BENCH_LONG_LIST 10000

typedef struct bench_list
{
	uint32_t	n;
	const uint32_t *docs;		/* dense doc ids, increasing */
	const uint64_t *tids;		/* heap TIDs: block << 16 | offset */
} bench_list;

typedef struct bench_query
{
	uint32_t	id;
	uint32_t	nlexemes;		/* lexemes of plainto_tsquery */
	uint32_t	nterms;			/* those that occur in the corpus */
	const uint32_t *terms;		/* indexes into the corpus' lists */
} bench_query;

typedef struct bench_corpus
{
	const char *name;
	uint32_t	ndocs;
	uint32_t	nlists;
	uint64_t	npostings;
	uint32_t	max_list;		/* longest list */
	bench_list *lists;
	uint32_t	nqueries;
	bench_query *queries;
	uint32_t   *doc_arena;
	uint64_t   *tid_arena;
	uint32_t   *term_arena;
} bench_corpus;

/* corpus.c */
extern void corpus_load(bench_corpus *corpus, const char *name, const char *dir);
extern void corpus_free(bench_corpus *corpus);

/* gin_model.c: bytes of GIN's compressed posting list over n items */
extern uint64_t gin_item_from_tid(uint64_t tid);
extern uint64_t gin_posting_list_bytes(const uint64_t *items, uint32_t n);

/* util.c */
typedef void (*bench_fn) (void *arg);

extern double bench_now(void);
extern double bench_time_per_call(bench_fn fn, void *arg, double min_sample, int nsamples);

/* never returns NULL: out of memory ends the benchmark */
extern void *bench_alloc(size_t size);
extern void bench_fail(const char *fmt,...) __attribute__((noreturn, format(printf, 1, 2)));

/* sink for checksums of timed work, so no call can be optimised away */
extern volatile uint64_t bench_sink;


/* encode lists[0..n) with codec into one arena and open them */
typedef struct bench_encoded
{
	uint8_t    *arena;
	pl_view    *views;
	uint64_t	bytes;
} bench_encoded;

extern void bench_encode(bench_encoded *enc, int codec, const bench_list *const *lists,
						 uint32_t n);
extern void bench_encoded_free(bench_encoded *enc);

/* intersect_bench.c */

/* skip ratios tried on the real queries, in place of CPU_SKIP_RATIO_DEFAULT */
#define NUM_SWEEP_RATIOS 8
extern const uint32_t sweep_ratios[NUM_SWEEP_RATIOS];

typedef struct query_result
{
	uint32_t	nrun;			/* queries of 2+ lexemes that all occur */
	uint32_t	nmissing;		/* queries with a lexeme not in the corpus */
	uint32_t	nsingle;		/* queries of fewer than 2 lexemes */
	uint64_t	nlists;			/* lists over the queries run */
	uint64_t	nresults;
	double		seconds[3];		/* one pass over the queries, by cpu_method */
	double		touched[3];		/* blocks touched / blocks of the lists */
	uint32_t	rounds_skip;	/* AUTO's choices, over all pairwise rounds */
	uint32_t	rounds_merge;
	double		sweep_seconds[NUM_SWEEP_RATIOS];	/* one pass, by sweep_ratios */
	uint32_t	skew_rounds;	/* (shortest, other) pairs of ratio >= 1000 */
	uint64_t	skew_touched;	/* the longer lists' blocks that skip read */
	uint64_t	skew_blocks;	/* the longer lists' blocks */
} query_result;

#define SYN_NRATIOS 11

typedef struct synth_result
{
	uint32_t	ratio;
	uint32_t	nlong;
	uint32_t	nshort;
	uint32_t	nresults;
	double		seconds[3];		/* per intersection, by cpu_method */
	double		touched[3];		/* fraction of the long list's blocks read */
	cpu_method	auto_pick;
} synth_result;

extern void bench_real_queries(const bench_corpus *corpus, const bench_encoded *ef,
							   query_result *res);
extern void bench_synthetic(synth_result *res);
extern int	synth_crossover(const synth_result *res);
extern void print_synthetic_table(FILE *out, const synth_result *res);

#endif							/* CODEC_BENCH_H */
