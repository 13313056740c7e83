/*
 * positions.h
 *	  Phrases, weights and prefixes inside phrases settled in the index,
 *	  from the positions it stores.
 */
#ifndef GPUIDX_QUERY_POSITIONS_H
#define GPUIDX_QUERY_POSITIONS_H

#include "query/tsq.h"
#include "store/parse.h"
#include "store/pending.h"
#include "store/segment.h"

/*
 * The queries of a tree that positions can settle (gq_tree_positions_settle),
 * and one document's positions of their operands: for a document, clear,
 * then set each plain operand's has (and npos, wep) and add each of its
 * lexemes that has one of the prefixes, then ask gq_pos_match_doc.
 */
typedef struct GqPosTerm
{
	const char *lex;
	int			len;
	bool		has;			/* the document has it */
	uint32		npos;			/* with these positions and weights */
	uint16		wep[GPX_POS_MAX_COUNT];
} GqPosTerm;

/* a lexeme of the document with one of the queries' prefixes */
typedef struct GqPosLexeme
{
	const char *lex;
	int			len;
	uint32		npos;
	const uint16 *wep;
} GqPosLexeme;

/*
 * The queries compiled for gq_pos_match_doc's direct answer (positions.c):
 * a plain operand, an AND or OR of two nodes, or a phrase of plain operands
 * as its leaves, each at its offset from the phrase's last position.
 */
typedef struct GqPosNode
{
	int			kind;
	int			left;			/* AND, OR: the operands' nodes */
	int			right;
	int			term;			/* an operand: its index in terms */
	int			first;			/* a phrase: its leaves [first, first + nleaves) */
	int			nleaves;
} GqPosNode;

typedef struct GqPosLeaf
{
	int			term;
	int			offset;
} GqPosLeaf;

typedef struct GqPosMatch
{
	const GqTree *tree;
	GqPosTerm  *terms;			/* the queries' distinct plain operands, in tsvector order */
	int			nterms;
	const char **prefix;		/* their distinct prefix operands */
	int		   *prefix_len;
	int			nprefix;
	GqPosLexeme *lexemes;		/* the document's lexemes with a prefix, in lexeme order */
	int			nlexemes;
	int			lexemes_cap;
	MemoryContext doc_cxt;		/* their copies, emptied for each document */
	GqPosNode  *nodes;			/* the queries compiled, or NULL: each answered by ts_match_vq */
	int			nnodes;
	GqPosLeaf  *leaves;
	int			nleaves;
	int		   *roots;			/* each query's root node */
} GqPosMatch;

extern void gq_pos_match_begin(GqPosMatch *m, const GqTree *tree);
extern void gq_pos_match_end(GqPosMatch *m);
/* a new document: no operand had, no lexeme added */
extern void gq_pos_match_clear(GqPosMatch *m);
/* does the lexeme start with one of the queries' prefixes? */
extern bool gq_pos_match_prefixed(const GqPosMatch *m, const char *lex, int len);
/* the next of the document's lexemes with a prefix (in lexeme order), its positions copied */
extern void gq_pos_match_add(GqPosMatch *m, const char *lex, int len, uint32 npos, const uint16 *wep);
/* does the document match every query of the tree (PostgreSQL's ts_match_vq)? */
extern bool gq_pos_match_doc(GqPosMatch *m);
/*
 * The same for a pending entry: its lexemes [lex, lex_end) and their
 * positions records [pos, pos_end), as the pending area holds them
 */
extern bool gq_pos_match_pending(GqPosMatch *m, const uint8 *lex, const uint8 *lex_end, bool freqs,
								 const uint8 *pos, const uint8 *pos_end);
/*
 * A pending entry's answer to the tree; with pm (an index with positions,
 * the tree one they settle), never GQ_MAYBE.  In query.c.
 */
extern GqAnswer gq_pending_entry_answer(const GqTree *tree, GqPosMatch *pm, const GpxPendingReader *r);

/* the settled yes (ascending) joined to *sure (ascending), which is replaced */
extern void gq_settled_join(uint32 **sure, uint32 *nsure, uint32 *yes, uint32 nyes);

/*
 * The tree's unsure candidates of a segment with positions
 * (gq_tree_positions_settle true) settled: those that match join *sure (in
 * order), the others are dropped, and *unsure is left empty.
 */
extern void gq_settle_by_positions(GpxSegment *seg, const GqTree *tree, uint32 **sure, uint32 *nsure,
								   uint32 **unsure, uint32 *nunsure);

#endif							/* GPUIDX_QUERY_POSITIONS_H */
