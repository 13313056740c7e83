/*
 * tsq.c
 *	  Query trees: built from tsqueries and @@& terms, answered as sets of
 *	  doc ids over a source (a segment, the pending area), or per document.
 *
 * Each node is evaluated as a superset of its rows ("upper": every doc it
 * may match) or a subset ("lower": every doc it surely matches), as NOT
 * swaps the two; for an exact node both are its rows.  A phrase is "maybe"
 * (upper: its operands' documents, a NOT inside it taken as any document,
 * since "!a <-> b" may match a document that has a elsewhere; lower:
 * none); so is a weighted term (upper: its list; lower: none).  That is
 * what GIN's three-valued consistent function does (TS_EXEC_PHRASE_NO_POS).
 *
 * Sets are arrays or complements of arrays, combined without ever listing
 * a complement.  An AND starts from its operand with the fewest documents
 * by the dictionary's frequencies, whatever its kind (a term, an OR, a
 * prefix, a phrase's operands, a nested AND), and searches every other
 * operand only at those candidates, smallest first, its NOTs last: a long
 * list that a shorter operand bounds is never decoded whole, and NOT
 * subtracts by search.  When a plain term is the smallest, the plain terms
 * start together through the shortest-first rounds (the worker takes them
 * when it is there).  OR unions.  The tree's sure matches are its lower
 * set searched at its candidates.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "tsearch/ts_utils.h"

#include "cpu/cpu.h"
#include "query/tsq.h"

GqTree *
gq_tree_new(void)
{
	GqTree	   *tree = palloc0(sizeof(GqTree));
	GqNode	   *root = palloc0(sizeof(GqNode));

	root->kind = GQ_AND;
	root->exact = true;
	tree->root = root;
	return tree;
}

static void
add_arg(GqNode *parent, GqNode *child)
{
	if (parent->nargs == 0)
		parent->args = palloc(4 * sizeof(GqNode *));
	else if ((parent->nargs & (parent->nargs - 1)) == 0 && parent->nargs >= 4)
		parent->args = repalloc(parent->args, 2 * parent->nargs * sizeof(GqNode *));
	parent->args[parent->nargs++] = child;
	parent->exact &= child->exact;
}

static GqNode *
term_node(const char *lex, int len, bool prefix, uint8 weight)
{
	GqNode	   *n = palloc0(sizeof(GqNode));

	n->kind = GQ_TERM;
	n->lex = lex;
	n->len = len;
	n->prefix = prefix;
	n->weight = weight;
	n->exact = weight == 0;
	return n;
}

/* an AND or OR node's operand, flattened into it when of the same kind */
static void
add_flat(GqNode *parent, GqNode *child)
{
	if (child->kind == parent->kind && (child->kind == GQ_AND || child->kind == GQ_OR))
	{
		for (int i = 0; i < child->nargs; i++)
			add_arg(parent, child->args[i]);
		return;
	}
	add_arg(parent, child);
}

static GqNode *
from_item(TSQuery query, QueryItem *item, GqTree *tree)
{
	GqNode	   *n;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	if (item->type == QI_VAL)
	{
		QueryOperand *op = &item->qoperand;

		tree->nterms++;
		tree->nprefix += op->prefix ? 1 : 0;
		return term_node(GETOPERAND(query) + op->distance, op->length, op->prefix, op->weight);
	}
	if (item->type != QI_OPR)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("tsquery holds an item of unknown type %d", item->type)));
	n = palloc0(sizeof(GqNode));
	n->exact = true;
	switch (item->qoperator.oper)
	{
		case OP_NOT:
			n->kind = GQ_NOT;
			add_arg(n, from_item(query, item + 1, tree));
			return n;
		case OP_AND:
			n->kind = GQ_AND;
			break;
		case OP_OR:
			n->kind = GQ_OR;
			break;
		case OP_PHRASE:
			n->kind = GQ_PHRASE;
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("tsquery holds an unknown operator %d", item->qoperator.oper)));
	}
	/* binary: the right operand follows, the left one is at an offset */
	add_flat(n, from_item(query, item + item->qoperator.left, tree));
	add_flat(n, from_item(query, item + 1, tree));
	if (n->kind == GQ_PHRASE)
		n->exact = false;
	return n;
}

void
gq_tree_add_lexemes(GqTree *tree, const GpxLexemes *terms)
{
	if (tree->root == NULL)
		return;
	for (int i = 0; i < terms->n; i++)
		add_arg(tree->root, term_node(terms->lex[i], terms->len[i], false, 0));
	tree->nterms += terms->n;
}

void
gq_tree_add_tsquery(GqTree *tree, TSQuery query)
{
	if (tree->root == NULL)
		return;
	/* no lexeme (only stop words, or ''): nothing matches, as for @@ */
	if (query->size == 0)
	{
		gq_tree_add_nothing(tree);
		return;
	}
	add_flat(tree->root, from_item(query, GETQUERY(query), tree));
	tree->recheck = !tree->root->exact;
	tree->queries = tree->queries ? repalloc(tree->queries, (tree->nqueries + 1) * sizeof(TSQuery))
		: palloc(sizeof(TSQuery));
	tree->queries[tree->nqueries++] = query;
}

bool
gq_tree_positions_settle(const GqTree *tree)
{
	return tree->root != NULL && tree->recheck && tree->nqueries > 0;
}

void
gq_tree_add_nothing(GqTree *tree)
{
	tree->root = NULL;
	tree->recheck = false;
}

/* ---------------------------------------------------------------------------
 * Sets
 */

static inline GqSet
set_of(uint32 *docs, uint32 n, bool neg)
{
	GqSet		s = {docs, n, neg};

	return s;
}

static inline bool
set_empty(GqSet s)
{
	return !s.neg && s.n == 0;
}

static void
set_free(GqSet *s)
{
	if (s->docs)
		pfree(s->docs);
	s->docs = NULL;
	s->n = 0;
}

static uint32 *
alloc_docs(uint64 n)
{
	return palloc_extended(Max(n, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
}

/* a[0..na) less b[0..nb), in place in a */
static uint32
array_minus(uint32 *a, uint32 na, const uint32 *b, uint32 nb)
{
	return cpu_merge_difference(a, na, b, nb, a);
}

/* a[0..na) and b[0..nb), merged in place in a */
static uint32
array_and(uint32 *a, uint32 na, const uint32 *b, uint32 nb)
{
	return cpu_merge_intersect(a, na, b, nb, a, na);
}

/* the union of two arrays, freeing both */
static GqSet
union_arrays(GqSet a, GqSet b, bool neg)
{
	uint32	   *out;
	uint32		n;

	if (a.n == 0)
	{
		set_free(&a);
		return set_of(b.docs, b.n, neg);
	}
	if (b.n == 0)
	{
		set_free(&b);
		return set_of(a.docs, a.n, neg);
	}
	out = alloc_docs((uint64) a.n + b.n);
	n = cpu_merge_union(a.docs, a.n, b.docs, b.n, out);
	set_free(&a);
	set_free(&b);
	return set_of(out, n, neg);
}

/* a AND b, freeing both */
static GqSet
and_sets(GqSet a, GqSet b)
{
	if (!a.neg && !b.neg)
	{
		/* the shorter one is kept */
		if (a.n > b.n)
		{
			GqSet		t = a;

			a = b;
			b = t;
		}
		a.n = array_and(a.docs, a.n, b.docs, b.n);
		set_free(&b);
		return a;
	}
	if (!a.neg)
	{
		a.n = array_minus(a.docs, a.n, b.docs, b.n);
		set_free(&b);
		return a;
	}
	if (!b.neg)
	{
		b.n = array_minus(b.docs, b.n, a.docs, a.n);
		set_free(&a);
		return b;
	}
	/* not x and not y: not (x or y) */
	return union_arrays(a, b, true);
}

/* a OR b, freeing both */
static GqSet
or_sets(GqSet a, GqSet b)
{
	if (!a.neg && !b.neg)
		return union_arrays(a, b, false);
	if (a.neg && b.neg)
	{
		/* not x or not y: not (x and y) */
		a.n = array_and(a.docs, a.n, b.docs, b.n);
		set_free(&b);
		return a;
	}
	if (a.neg)
	{
		/* not x or y: not (x less y) */
		a.n = array_minus(a.docs, a.n, b.docs, b.n);
		set_free(&b);
		return a;
	}
	b.n = array_minus(b.docs, b.n, a.docs, a.n);
	set_free(&a);
	return b;
}

/* ---------------------------------------------------------------------------
 * Evaluation
 */

#define GQ_EST_ALL PG_UINT64_MAX	/* a complement: no count bounds it */

static GqSet eval(const GqSource *src, const GqNode *node, bool upper, bool in_phrase);

static bool
plain_term(const GqNode *n)
{
	return n->kind == GQ_TERM && !n->prefix;
}

static int
lexeme_ptr_cmp(const void *x, const void *y)
{
	const GqNode *a = *(const GqNode *const *) x;
	const GqNode *b = *(const GqNode *const *) y;

	return gpx_lexeme_cmp(a->lex, a->len, b->lex, b->len);
}

/* the terms' lexemes, sorted and distinct, in out (arrays palloc'd) */
static void
terms_lexemes(GqNode **t, int n, GpxLexemes *out)
{
	memset(out, 0, sizeof(*out));
	if (n > 1)
		qsort(t, n, sizeof(GqNode *), lexeme_ptr_cmp);
	out->lex = palloc(Max(n, 1) * sizeof(char *));
	out->len = palloc(Max(n, 1) * sizeof(int));
	for (int i = 0; i < n; i++)
	{
		if (out->n > 0 && gpx_lexeme_cmp(out->lex[out->n - 1], out->len[out->n - 1], t[i]->lex, t[i]->len) == 0)
			continue;
		out->lex[out->n] = t[i]->lex;
		out->len[out->n] = t[i]->len;
		out->n++;
	}
}

/*
 * The AND node's plain terms that its evaluation takes as lists, in out.
 * false: one of them is empty in this evaluation (a weighted term's lower
 * set), so the AND is.
 */
static bool
and_plain_terms(const GqNode *node, bool upper, GpxLexemes *out)
{
	GqNode	  **t = palloc(Max(node->nargs, 1) * sizeof(GqNode *));
	int			n = 0;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < node->nargs; i++)
	{
		const GqNode *c = node->args[i];

		if (!plain_term(c))
			continue;
		if (!upper && !c->exact)
		{
			pfree(t);
			return false;
		}
		t[n++] = (GqNode *) c;
	}
	terms_lexemes(t, n, out);
	pfree(t);
	return true;
}

/*
 * Does the AND's NOT operand subtract a plain term's list?  NOT x needs x's
 * other bound: a weighted x's lower one is empty (nothing subtracted).
 */
static bool
subtracts_list(const GqNode *c, bool upper)
{
	const GqNode *x = c->kind == GQ_NOT ? c->args[0] : NULL;

	return x != NULL && plain_term(x) && (x->exact || !upper);
}

void
gq_tree_required_terms(const GqTree *tree, GpxLexemes *out)
{
	memset(out, 0, sizeof(*out));
	if (tree->root != NULL && tree->root->kind == GQ_AND)
		(void) and_plain_terms(tree->root, true, out);
}

/* the lexemes of an OR of plain terms alone, in one bound (false: not such an OR) */
static bool
or_plain_terms(const GqNode *node, bool upper, GpxLexemes *out)
{
	GqNode	  **t;
	int			n = 0;

	if (node->kind != GQ_OR)
		return false;
	for (int i = 0; i < node->nargs; i++)
		if (!plain_term(node->args[i]))
			return false;
	t = palloc(node->nargs * sizeof(GqNode *));
	for (int i = 0; i < node->nargs; i++)
		if (upper || node->args[i]->exact)
			t[n++] = node->args[i];		/* a weighted term's lower set is empty */
	terms_lexemes(t, n, out);
	pfree(t);
	return true;
}

/*
 * How many docs the node's set in this bound has at most, by the
 * dictionary's frequencies (GQ_EST_ALL: a complement, which cannot start
 * an AND); once past cap, any count past it.
 */
static uint64
estimate(const GqSource *src, const GqNode *node, bool upper, bool in_phrase, uint64 cap)
{
	uint64		e = 0;

	check_stack_depth();
	switch (node->kind)
	{
		case GQ_TERM:
			if (!upper && !node->exact)
				return 0;
			return src->frequency(src->arg, node, cap);
		case GQ_NOT:
			return GQ_EST_ALL;
		case GQ_PHRASE:
		case GQ_AND:
			/* a phrase is the AND of its operands, or nothing for sure */
			if (node->kind == GQ_PHRASE && !upper)
				return 0;
			e = GQ_EST_ALL;
			for (int i = 0; i < node->nargs && e > 0; i++)
				if (node->args[i]->kind != GQ_NOT)
					e = Min(e, estimate(src, node->args[i], upper, in_phrase || node->kind == GQ_PHRASE,
										Min(cap, e)));
			return e;
		case GQ_OR:
			for (int i = 0; i < node->nargs && e < cap; i++)
			{
				uint64		a = estimate(src, node->args[i], upper, in_phrase, cap - e);

				if (a == GQ_EST_ALL)
					return GQ_EST_ALL;
				e += a;
			}
			return e;
	}
	return GQ_EST_ALL;
}

static uint32 *
copy_docs(const uint32 *docs, uint32 n)
{
	uint32	   *c = alloc_docs(n);

	memcpy(c, docs, (Size) n * sizeof(uint32));
	return c;
}

static uint32 restrict_and(const GqSource *src, const GqNode *node, bool upper, bool in_phrase,
						   const bool *done, uint32 *docs, uint32 n);

/*
 * Of docs[0..n), in place, those in the term's set in this bound (keep),
 * or in its NOT's (!keep).  A weighted term's upper set is its lexeme's
 * docs and its lower set empty; a prefix left to the rows has the docs in
 * every upper set and in no lower one, whether negated or not.
 */
static uint32
restrict_term(const GqSource *src, const GqNode *t, bool keep, bool upper, uint32 *docs, uint32 n)
{
	if (t->prefix && src->rows_cheaper != NULL && src->rows_cheaper(src->arg, t, n))
	{
		*src->left_to_rows = true;
		return upper ? n : 0;
	}
	if (!t->exact && upper != keep)
		return keep ? 0 : n;
	return src->filter(src->arg, t, keep, docs, n);
}

/*
 * Of docs[0..n), in place, those in the node's set in this bound: its
 * lists searched at the docs, never listed whole.  Returns how many.
 */
static uint32
restrict_set(const GqSource *src, const GqNode *node, bool upper, bool in_phrase, uint32 *docs, uint32 n)
{
	const GqNode *x;
	uint32	   *rest;
	uint32		nrest;
	uint32	   *hits;
	uint32		k;

	CHECK_FOR_INTERRUPTS();
	check_stack_depth();
	if (n == 0)
		return 0;
	switch (node->kind)
	{
		case GQ_TERM:
			return restrict_term(src, node, true, upper, docs, n);
		case GQ_NOT:
			if (in_phrase)
				return n;		/* any document */
			x = node->args[0];
			if (x->kind == GQ_TERM)
				return restrict_term(src, x, false, upper, docs, n);
			/* the docs less those its operand keeps in the other bound */
			hits = copy_docs(docs, n);
			k = restrict_set(src, x, !upper, false, hits, n);
			n = array_minus(docs, n, hits, k);
			pfree(hits);
			return n;
		case GQ_PHRASE:
			if (!upper)
				return 0;
			return restrict_and(src, node, true, true, NULL, docs, n);
		case GQ_AND:
			return restrict_and(src, node, upper, in_phrase, NULL, docs, n);
		case GQ_OR:
			/* rest: the docs no operand has kept yet, the only ones each next operand is searched at */
			rest = copy_docs(docs, n);
			nrest = n;
			for (int i = 0; i < node->nargs && nrest > 0; i++)
			{
				const GqNode *c = node->args[i];

				if (c->kind == GQ_TERM)
				{
					/* those outside c's set in this bound: NOT c's in the other */
					nrest = restrict_term(src, c, false, !upper, rest, nrest);
					continue;
				}
				hits = copy_docs(rest, nrest);
				k = restrict_set(src, c, upper, in_phrase, hits, nrest);
				nrest = array_minus(rest, nrest, hits, k);
				pfree(hits);
			}
			n = array_minus(docs, n, rest, nrest);
			pfree(rest);
			return n;
	}
	elog(ERROR, "gpuidx: unknown query node %d", (int) node->kind);
	pg_unreachable();
}

typedef struct Operand
{
	const GqNode *node;
	uint64		est;
} Operand;

static int
operand_est_cmp(const void *x, const void *y)
{
	const Operand *a = x;
	const Operand *b = y;

	/* the NOTs (GQ_EST_ALL) last */
	return (a->est > b->est) - (a->est < b->est);
}

/*
 * Of docs[0..n), in place, those in the AND's set in this bound, skipping
 * the operands done[] marks (NULL: none): the plain terms together (one
 * request, which the worker may take), then the others, fewest documents
 * first, the NOTs last.
 */
static uint32
restrict_and(const GqSource *src, const GqNode *node, bool upper, bool in_phrase, const bool *done,
			 uint32 *docs, uint32 n)
{
	GpxLexemes	plain;
	Operand    *ops;
	int			nops = 0;
	bool		plain_done = false;

	if (!and_plain_terms(node, upper, &plain))
		return 0;
	for (int i = 0; i < node->nargs && done; i++)
		plain_done |= done[i] && plain_term(node->args[i]);
	if (plain.n > 0 && !plain_done)
	{
		if (src->filter_all)
			n = src->filter_all(src->arg, &plain, docs, n);
		else
		{
			for (int i = 0; i < plain.n && n > 0; i++)
			{
				GqNode		t = {.kind = GQ_TERM,.exact = true,.lex = plain.lex[i],.len = plain.len[i]};

				n = src->filter(src->arg, &t, true, docs, n);
			}
		}
	}
	ops = palloc(Max(node->nargs, 1) * sizeof(Operand));
	for (int i = 0; i < node->nargs && n > 0; i++)
	{
		const GqNode *c = node->args[i];

		if (plain_term(c) || (done && done[i]))
			continue;
		ops[nops].node = c;
		ops[nops].est = c->kind == GQ_NOT ? GQ_EST_ALL : estimate(src, c, upper, in_phrase, GQ_EST_ALL);
		nops++;
	}
	qsort(ops, nops, sizeof(Operand), operand_est_cmp);
	for (int i = 0; i < nops && n > 0; i++)
		n = restrict_set(src, ops[i].node, upper, in_phrase, docs, n);
	pfree(ops);
	return n;
}

/*
 * The AND's plain terms' docs, the NOT terms' subtracted in the same
 * request where the source can (done[] marks those NOTs and the terms)
 */
static GqSet
eval_plain_terms(const GqSource *src, const GqNode *node, bool upper, bool in_phrase,
				 const GpxLexemes *plain, bool *done)
{
	GqNode	  **neg = palloc(Max(node->nargs, 1) * sizeof(GqNode *));
	int			nneg = 0;
	GqSet		acc = {NULL, 0, false};

	for (int i = 0; i < node->nargs; i++)
	{
		done[i] = plain_term(node->args[i]);
		if (!in_phrase && src->all_but && subtracts_list(node->args[i], upper))
		{
			neg[nneg++] = node->args[i]->args[0];
			done[i] = true;
		}
	}
	if (nneg > 0)
	{
		GpxLexemes	negl;

		terms_lexemes(neg, nneg, &negl);
		acc.n = src->all_but(src->arg, plain, &negl, &acc.docs);
	}
	else
		acc.n = src->all_of(src->arg, plain, &acc.docs);
	pfree(neg);
	return acc;
}

/*
 * An AND: its operand with the fewest docs by the dictionary's frequencies
 * (whatever its kind) starts, listed; every other operand is then searched
 * at those candidates only (restrict_and), so a long list that a short
 * operand bounds is never decoded whole, and a NOT subtracts by search.
 * When a plain term is the smallest, the plain terms start together through
 * the shortest-first rounds (the worker takes them when it serves).  Only
 * NOTs and complements alone make a complement.
 */
static GqSet
eval_and(const GqSource *src, const GqNode *node, bool upper, bool in_phrase)
{
	GpxLexemes	plain;
	GqSet		acc = {NULL, 0, true};	/* every doc, so far */
	bool	   *done;
	uint64		best = GQ_EST_ALL;
	int			start = -1;

	if (!and_plain_terms(node, upper, &plain))
		return set_of(NULL, 0, false);
	for (int i = 0; i < node->nargs && best > 0; i++)
	{
		const GqNode *c = node->args[i];
		uint64		e;

		if (c->kind == GQ_NOT)
			continue;
		e = estimate(src, c, upper, in_phrase, best);
		if (e < best)
		{
			best = e;
			start = i;
		}
	}
	if (start < 0)
	{
		/* nothing to start from: the complement of what the operands exclude */
		for (int i = 0; i < node->nargs; i++)
		{
			acc = and_sets(acc, eval(src, node->args[i], upper, in_phrase));
			if (set_empty(acc))
				break;
		}
		return acc;
	}
	if (best == 0)
		return set_of(NULL, 0, false);
	done = palloc0(node->nargs * sizeof(bool));
	if (plain_term(node->args[start]))
		acc = eval_plain_terms(src, node, upper, in_phrase, &plain, done);
	else
	{
		acc = eval(src, node->args[start], upper, in_phrase);
		done[start] = true;
	}
	/* a finite estimate bounds a list, never a complement */
	Assert(!acc.neg);
	if (acc.n > 0)
		acc.n = restrict_and(src, node, upper, in_phrase, done, acc.docs, acc.n);
	pfree(done);
	if (acc.n == 0)
		set_free(&acc);
	return acc;
}

/* an OR of plain terms alone: their union in one request where it can be */
static bool
eval_or_terms(const GqSource *src, const GqNode *node, bool upper, GqSet *out)
{
	GpxLexemes	terms;

	if (src->any_of == NULL || !or_plain_terms(node, upper, &terms))
		return false;
	*out = set_of(NULL, 0, false);
	if (terms.n > 0)
		out->n = src->any_of(src->arg, &terms, &out->docs);
	return true;
}

static GqSet
eval(const GqSource *src, const GqNode *node, bool upper, bool in_phrase)
{
	GqSet		acc;

	CHECK_FOR_INTERRUPTS();
	check_stack_depth();
	switch (node->kind)
	{
		case GQ_TERM:
			if (!upper && !node->exact)
				return set_of(NULL, 0, false);
			acc.neg = false;
			acc.n = src->docs_of(src->arg, node, &acc.docs);
			return acc;
		case GQ_NOT:
			if (in_phrase)
				return set_of(NULL, 0, true);
			acc = eval(src, node->args[0], !upper, false);
			acc.neg = !acc.neg;
			return acc;
		case GQ_PHRASE:
			if (!upper)
				return set_of(NULL, 0, false);
			return eval_and(src, node, true, true);
		case GQ_AND:
			return eval_and(src, node, upper, in_phrase);
		case GQ_OR:
			if (eval_or_terms(src, node, upper, &acc))
				return acc;
			acc = set_of(NULL, 0, false);
			for (int i = 0; i < node->nargs; i++)
				acc = or_sets(acc, eval(src, node->args[i], upper, in_phrase));
			return acc;
	}
	elog(ERROR, "gpuidx: unknown query node %d", (int) node->kind);
	pg_unreachable();
}

/* the root's upper set, listed (a complement against the source's window) */
static uint32
eval_root(const GqTree *tree, const GqSource *src, uint32 **docs)
{
	GqSet		s;
	uint32	   *all;
	uint32		n = 0;
	uint32		j = 0;

	*docs = NULL;
	if (tree->root == NULL || src->lo >= src->hi)
		return 0;
	s = eval(src, tree->root, true, false);
	if (!s.neg)
	{
		if (s.n == 0)
			set_free(&s);
		*docs = s.docs;
		return s.n;
	}
	/* every doc of the source but those */
	all = alloc_docs((uint64) (src->hi - src->lo) - Min(s.n, src->hi - src->lo));
	for (uint32 d = src->lo; d < src->hi; d++)
	{
		if (j < s.n && s.docs[j] == d)
		{
			j++;
			continue;
		}
		all[n++] = d;
		if ((d & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	set_free(&s);
	if (n == 0)
	{
		pfree(all);
		all = NULL;
	}
	*docs = all;
	return n;
}

uint64
gq_tree_bound(const GqTree *tree, const GqSource *src)
{
	uint64		e;

	if (tree->root == NULL || src->lo >= src->hi)
		return 0;
	e = estimate(src, tree->root, true, false, GQ_EST_ALL);
	return Min(e, (uint64) (src->hi - src->lo));
}

void
gq_tree_eval_split(const GqTree *tree, const GqSource *src, uint32 **sure, uint32 *nsure,
				   uint32 **unsure, uint32 *nunsure)
{
	uint32	   *lower;
	uint32		nlower;

	*unsure = NULL;
	*nunsure = 0;
	*nsure = eval_root(tree, src, sure);
	if ((!tree->recheck && !(src->left_to_rows && *src->left_to_rows)) || *nsure == 0)
		return;
	/*
	 * The candidates the tree surely matches need no check: its lower set,
	 * searched for at the candidates (a subset of them), goes apart.
	 */
	lower = copy_docs(*sure, *nsure);
	nlower = restrict_set(src, tree->root, false, false, lower, *nsure);
	*unsure = *sure;
	*nunsure = array_minus(*unsure, *nsure, lower, nlower);
	*sure = lower;
	*nsure = nlower;
	if (nlower == 0)
	{
		pfree(lower);
		*sure = NULL;
	}
	if (*nunsure == 0)
	{
		pfree(*unsure);
		*unsure = NULL;
	}
}

bool
gq_tree_needs_all(const GqTree *tree)
{
	const GqNode *r = tree->root;

	/* the common shapes: a lone NOT, or an OR with a NOT */
	if (r == NULL)
		return false;
	if (r->kind == GQ_AND && r->nargs == 1)
		r = r->args[0];
	if (r->kind == GQ_NOT)
		return true;
	if (r->kind == GQ_AND)
	{
		for (int i = 0; i < r->nargs; i++)
			if (r->args[i]->kind != GQ_NOT)
				return false;
		return true;
	}
	if (r->kind == GQ_OR)
		for (int i = 0; i < r->nargs; i++)
			if (r->args[i]->kind == GQ_NOT)
				return true;
	return false;
}

/* ---------------------------------------------------------------------------
 * One document at a time: the same three-valued logic
 */

static GqAnswer
tern(const GqNode *node, gq_has_fn has, void *arg, bool in_phrase)
{
	GqAnswer	r;

	check_stack_depth();
	switch (node->kind)
	{
		case GQ_TERM:
			if (!has(arg, node->lex, node->len, node->prefix))
				return GQ_NO;
			return node->exact && !in_phrase ? GQ_YES : GQ_MAYBE;
		case GQ_NOT:
			if (in_phrase)
				return GQ_MAYBE;
			return (GqAnswer) (GQ_YES - tern(node->args[0], has, arg, false));
		case GQ_PHRASE:
		case GQ_AND:
			r = GQ_YES;
			for (int i = 0; i < node->nargs && r != GQ_NO; i++)
				r = Min(r, tern(node->args[i], has, arg, in_phrase || node->kind == GQ_PHRASE));
			return node->kind == GQ_PHRASE ? Min(r, GQ_MAYBE) : r;
		case GQ_OR:
			r = GQ_NO;
			for (int i = 0; i < node->nargs && r != GQ_YES; i++)
				r = Max(r, tern(node->args[i], has, arg, in_phrase));
			return r;
	}
	elog(ERROR, "gpuidx: unknown query node %d", (int) node->kind);
	pg_unreachable();
}

GqAnswer
gq_tree_answer(const GqTree *tree, gq_has_fn has, void *arg)
{
	return tree->root != NULL ? tern(tree->root, has, arg, false) : GQ_NO;
}

/* ---------------------------------------------------------------------------
 * Estimates
 */

static int
double_cmp(const void *x, const void *y)
{
	double		a = *(const double *) x;
	double		b = *(const double *) y;

	return (a > b) - (a < b);
}

static double
node_selectivity(const GqNode *node, double (*freq) (void *arg, const GqNode *term), void *arg)
{
	double	   *p;
	double		sel;
	double		exponent = 1.0;

	check_stack_depth();
	switch (node->kind)
	{
		case GQ_TERM:
			return Min(Max(freq(arg, node), 0.0), 1.0);
		case GQ_NOT:
			return 1.0 - node_selectivity(node->args[0], freq, arg);
		case GQ_OR:
			sel = 1.0;
			for (int i = 0; i < node->nargs; i++)
				sel *= 1.0 - node_selectivity(node->args[i], freq, arg);
			return 1.0 - sel;
		case GQ_AND:
		case GQ_PHRASE:
			/* correlated words: exponential backoff, the rarest first (cost.c) */
			p = palloc(Max(node->nargs, 1) * sizeof(double));
			for (int i = 0; i < node->nargs; i++)
				p[i] = node_selectivity(node->args[i], freq, arg);
			qsort(p, node->nargs, sizeof(double), double_cmp);
			sel = 1.0;
			for (int i = 0; i < node->nargs; i++)
			{
				sel *= pow(p[i], exponent);
				exponent /= 2;
			}
			pfree(p);
			return sel;
	}
	return 1.0;
}

double
gq_tree_selectivity(const GqTree *tree, double (*freq) (void *arg, const GqNode *term), void *arg)
{
	if (tree->root == NULL || tree->root->nargs == 0)
		return tree->root == NULL ? 0.0 : 1.0;
	return node_selectivity(tree->root, freq, arg);
}

/* ---------------------------------------------------------------------------
 * Ranking a tsquery: its positive lexemes
 */

static void
positive_lexemes(TSQuery query, QueryItem *item, bool negated, List **out)
{
	check_stack_depth();
	if (item->type == QI_VAL)
	{
		if (!negated && !item->qoperand.prefix)
			*out = lappend(*out, item);
		return;
	}
	if (item->qoperator.oper == OP_NOT)
	{
		positive_lexemes(query, item + 1, !negated, out);
		return;
	}
	positive_lexemes(query, item + item->qoperator.left, negated, out);
	positive_lexemes(query, item + 1, negated, out);
}

static int
operand_cmp(const void *x, const void *y, void *arg)
{
	TSQuery		query = arg;
	QueryOperand *a = &(*(QueryItem *const *) x)->qoperand;
	QueryOperand *b = &(*(QueryItem *const *) y)->qoperand;

	return gpx_lexeme_cmp(GETOPERAND(query) + a->distance, a->length,
						  GETOPERAND(query) + b->distance, b->length);
}

void
gq_tsquery_positive_lexemes(TSQuery query, GpxLexemes *out)
{
	List	   *items = NIL;
	QueryItem **v;
	int			n;

	memset(out, 0, sizeof(*out));
	if (query->size > 0)
		positive_lexemes(query, GETQUERY(query), false, &items);
	n = list_length(items);
	v = palloc(Max(n, 1) * sizeof(QueryItem *));
	for (int i = 0; i < n; i++)
		v[i] = list_nth(items, i);
	if (n > 1)
		qsort_arg(v, n, sizeof(QueryItem *), operand_cmp, query);
	out->lex = palloc(Max(n, 1) * sizeof(char *));
	out->len = palloc(Max(n, 1) * sizeof(int));
	for (int i = 0; i < n; i++)
	{
		const char *lex = GETOPERAND(query) + v[i]->qoperand.distance;
		int			len = v[i]->qoperand.length;

		if (out->n > 0 && gpx_lexeme_cmp(out->lex[out->n - 1], out->len[out->n - 1], lex, len) == 0)
			continue;
		out->lex[out->n] = lex;
		out->len[out->n] = len;
		out->n++;
	}
	pfree(v);
	list_free(items);
}
