/*
 * tsq.h
 *	  Query trees: PostgreSQL's tsquery (AND, OR, NOT at any depth, prefix
 *	  terms, phrases, weights) and the terms of @@& keys, ANDed into one
 *	  tree, answered from the index as sets of doc ids.
 *
 * The sets of doc ids alone cannot tell where a lexeme stands or with
 * which weight, so a tree is answered as GIN answers it (three-valued): a
 * phrase or a weighted term is "maybe" for every document that has its
 * lexemes, and those candidates are settled by the positions the index
 * stores, or rechecked by the operator on the heap where it stores none.
 * A tree without phrases and weights is exact.  Each node evaluates to a
 * set that is a superset of its true rows (the candidates) or a subset
 * (under NOT: NOT of a superset is a subset), either as a sorted array or
 * as the complement of one, so that "!a", "!a | b" and "a & !b" cost no
 * more than their lists: only a tree whose root is a complement reads the
 * segment's whole doc range (all documents minus the set).  An AND starts
 * from its operand with the fewest documents, whatever its kind, and
 * searches the others only at those (tsq.c).
 */
#ifndef GPUIDX_QUERY_TSQ_H
#define GPUIDX_QUERY_TSQ_H

#include "postgres.h"

#include "tsearch/ts_type.h"

#include "text/tokenize.h"

typedef enum GqNodeKind
{
	GQ_TERM,
	GQ_AND,
	GQ_OR,
	GQ_NOT,
	GQ_PHRASE					/* its operands' documents, positions unchecked */
} GqNodeKind;

typedef struct GqNode
{
	GqNodeKind	kind;
	bool		exact;			/* no phrase or weight within: no recheck needed */
	/* GQ_TERM */
	const char *lex;
	int			len;
	bool		prefix;			/* every term that starts with lex */
	uint8		weight;			/* tsquery weight mask; 0: any */
	/* operators: their operands (AND and OR flattened) */
	int			nargs;
	struct GqNode **args;
} GqNode;

typedef struct GqTree
{
	GqNode	   *root;			/* NULL: nothing matches (an empty tsquery, a NULL key) */
	bool		recheck;		/* the rows found are candidates: recheck each */
	/*
	 * The caller checks each unsure candidate's row (set by the scans that
	 * do): a prefix whose many terms cost more to search at an AND's few
	 * candidates than their rows is then left to those rows.
	 */
	bool		rows_checked;
	int			nterms;			/* term nodes */
	int			nprefix;		/* of them prefix terms */
	/* the tsqueries ANDed in (not copied), which positions can settle */
	TSQuery    *queries;
	int			nqueries;
} GqTree;

/* a tree ANDing what is added to it */
extern GqTree *gq_tree_new(void);
/* the terms of a @@& query, all required */
extern void gq_tree_add_lexemes(GqTree *tree, const GpxLexemes *terms);
/* a tsquery (detoasted); an empty one matches nothing */
extern void gq_tree_add_tsquery(GqTree *tree, TSQuery query);
/* nothing can match */
extern void gq_tree_add_nothing(GqTree *tree);

/*
 * A set of doc ids (ascending, distinct) of the source's window [lo, hi):
 * the docs themselves, or, when neg, every doc of the window but them.
 */
typedef struct GqSet
{
	uint32	   *docs;
	uint32		n;
	bool		neg;
} GqSet;

/*
 * Where the sets come from: a segment's lists, or the pending area's
 * per-lexeme entry ordinals.  Every array returned is palloc'd and becomes
 * the evaluator's.
 */
typedef struct GqSource
{
	void	   *arg;
	/* the docs asked about, [lo, hi): every set returned holds only those */
	uint32		lo;
	uint32		hi;
	/* docs having every term (plain lexemes, distinct), in *docs; returns how many */
	uint32		(*all_of) (void *arg, const GpxLexemes *terms, uint32 **docs);
	/* docs having the term, or any term with its prefix */
	uint32		(*docs_of) (void *arg, const GqNode *term, uint32 **docs);
	/*
	 * Of docs[0..n), in place, those having the term (or a term with its
	 * prefix) when keep, else those having none; returns how many are left.
	 * The lists are searched for the docs, not decoded, where they are long.
	 */
	uint32		(*filter) (void *arg, const GqNode *term, bool keep, uint32 *docs, uint32 n);
	/*
	 * How many docs have the term (a prefix: its terms' sum), from the
	 * dictionary; a count past cap may stop anywhere past it.
	 */
	uint64		(*frequency) (void *arg, const GqNode *term, uint64 cap);
	/* optional: of docs[0..n), in place, those having every term (plain lexemes, distinct) */
	uint32		(*filter_all) (void *arg, const GpxLexemes *terms, uint32 *docs, uint32 n);
	/* optional: docs having every term of pos (n >= 1) and none of neg */
	uint32		(*all_but) (void *arg, const GpxLexemes *pos, const GpxLexemes *neg, uint32 **docs);
	/* optional: docs having any of the terms (plain lexemes, distinct) */
	uint32		(*any_of) (void *arg, const GpxLexemes *terms, uint32 **docs);
	/*
	 * optional: would searching the prefix's terms at n docs cost more than
	 * checking those docs' rows?  Yes: the prefix is unsure at each of them
	 * (in no lower set, in every upper one) and *left_to_rows is set, so
	 * that even an exact tree's candidates are split for the rows.
	 */
	bool		(*rows_cheaper) (void *arg, const GqNode *prefix, uint32 n);
	bool	   *left_to_rows;
} GqSource;

/*
 * The tree's candidates in one source (a superset of the true rows), in
 * two parts: those the tree surely matches (the lower bound: no check
 * needed) and the rest, which the row must confirm (none when the tree is
 * exact).  Both palloc'd, NULL when empty.
 */
extern void gq_tree_eval_split(const GqTree *tree, const GqSource *src, uint32 **sure, uint32 *nsure,
							   uint32 **unsure, uint32 *nunsure);

/*
 * How many docs of the source's window the tree's candidates are at most,
 * by the dictionary's frequencies (the whole window for a complement)
 */
extern uint64 gq_tree_bound(const GqTree *tree, const GqSource *src);

/*
 * One document's answer (the pending area read entry by entry): has(arg,
 * lex, len, prefix) says whether it has the lexeme (or one with that
 * prefix).  GQ_MAYBE: a candidate the row must confirm.
 */
typedef enum GqAnswer
{
	GQ_NO = 0,
	GQ_MAYBE = 1,
	GQ_YES = 2
} GqAnswer;

typedef bool (*gq_has_fn) (void *arg, const char *lex, int len, bool prefix);
extern GqAnswer gq_tree_answer(const GqTree *tree, gq_has_fn has, void *arg);

/* the tree's selectivity from its terms' frequencies, freq(arg, term) in [0, 1] */
extern double gq_tree_selectivity(const GqTree *tree, double (*freq) (void *arg, const GqNode *term),
								  void *arg);

/*
 * Can the index's positions settle the tree's unsure candidates?  Every
 * unsure candidate comes from a tsquery's phrase or weight, whose operands
 * (plain lexemes or prefixes) the positions of the document's lexemes
 * answer.
 */
extern bool gq_tree_positions_settle(const GqTree *tree);

/* does the tree's root need every document (a complement)? */
extern bool gq_tree_needs_all(const GqTree *tree);

/* the plain lexemes every candidate has (sorted, distinct; none: n = 0) */
extern void gq_tree_required_terms(const GqTree *tree, GpxLexemes *out);

/*
 * The lexemes a tsquery ranks by: those not under a NOT, prefixes left out
 * (sorted, distinct; pointing into the query)
 */
extern void gq_tsquery_positive_lexemes(TSQuery query, GpxLexemes *out);

#endif							/* GPUIDX_QUERY_TSQ_H */
