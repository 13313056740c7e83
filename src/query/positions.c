/*
 * positions.c
 *	  A tree's unsure candidates settled from the positions an index stores,
 *	  so that phrases, weights and prefixes inside phrases need no row.
 *
 * For each candidate, a tsvector is made of the query's lexemes that the
 * document has (for a prefix, every lexeme of the document that has it),
 * each with its positions and weights exactly as the document's own
 * tsvector holds them, and each tsquery of the tree is run on it by
 * PostgreSQL's ts_match_vq.  A tsquery looks only at its own operands, so
 * its answer on that tsvector is its answer on the document's: the same rows
 * as the check on the heap, without reading or parsing them.  The pending
 * area's entries carry their lexemes' positions, so its candidates are
 * settled the same way (gq_pos_match_pending).
 *
 * The queries users write most (phrases of plain operands, ANDed and ORed
 * with plain operands) are compiled once and answered from the operands'
 * positions directly (gq_pos_match_doc's fast path): making and searching a
 * tsvector cost ts_match_vq about 800 instructions a candidate, most of a
 * phrase count's time.  The compiled form follows PostgreSQL's rules for
 * phrases exactly (TS_phrase_execute: the left side's match lies the
 * distance plus the right side's width before the right side's), and a
 * document where a phrase's operand has no positions (a stripped
 * tsvector's lexeme, which PostgreSQL answers "maybe") goes to ts_match_vq.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "tsearch/ts_type.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "query/positions.h"
#include "store/segment.h"
#include "worker/worker.h"

static void compile_queries(GqPosMatch *m, const GqTree *tree, int cap);

static int
posterm_cmp(const void *a, const void *b)
{
	const GqPosTerm *x = a;
	const GqPosTerm *y = b;

	return gpx_lexeme_cmp(x->lex, x->len, y->lex, y->len);
}

/* prefixes in lexeme order (insertion sort: a query has few) */
static void
sort_prefixes(const char **lex, int *len, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && gpx_lexeme_cmp(lex[j - 1], len[j - 1], lex[j], len[j]) > 0; j--)
		{
			const char *tl = lex[j];
			int			tn = len[j];

			lex[j] = lex[j - 1];
			len[j] = len[j - 1];
			lex[j - 1] = tl;
			len[j - 1] = tn;
		}
}

void
gq_pos_match_begin(GqPosMatch *m, const GqTree *tree)
{
	int			cap = 0;
	int			k = 0;
	GqPosTerm  *t;

	Assert(gq_tree_positions_settle(tree));
	memset(m, 0, sizeof(*m));
	for (int q = 0; q < tree->nqueries; q++)
		cap += tree->queries[q]->size;
	t = palloc0(Max(cap, 1) * sizeof(GqPosTerm));
	m->prefix = palloc(Max(cap, 1) * sizeof(char *));
	m->prefix_len = palloc(Max(cap, 1) * sizeof(int));
	for (int q = 0; q < tree->nqueries; q++)
	{
		TSQuery		query = tree->queries[q];
		QueryItem  *item = GETQUERY(query);

		for (int i = 0; i < query->size; i++)
		{
			const char *lex;
			int			len;
			bool		dup = false;

			if (item[i].type != QI_VAL)
				continue;
			lex = GETOPERAND(query) + item[i].qoperand.distance;
			len = item[i].qoperand.length;
			if (!item[i].qoperand.prefix)
			{
				t[k].lex = lex;
				t[k].len = len;
				k++;
				continue;
			}
			for (int p = 0; p < m->nprefix && !dup; p++)
				dup = gpx_lexeme_cmp(m->prefix[p], m->prefix_len[p], lex, len) == 0;
			if (!dup)
			{
				m->prefix[m->nprefix] = lex;
				m->prefix_len[m->nprefix++] = len;
			}
		}
	}
	/*
	 * the prefixes sorted, none that a shorter one covers: the lexemes
	 * having them, read prefix after prefix in dictionary order, come sorted
	 * and distinct
	 */
	if (m->nprefix > 1)
	{
		int			kept = 0;

		sort_prefixes(m->prefix, m->prefix_len, m->nprefix);
		for (int p = 0; p < m->nprefix; p++)
			if (kept == 0 || m->prefix_len[p] < m->prefix_len[kept - 1] ||
				memcmp(m->prefix[p], m->prefix[kept - 1], m->prefix_len[kept - 1]) != 0)
			{
				m->prefix[kept] = m->prefix[p];
				m->prefix_len[kept++] = m->prefix_len[p];
			}
		m->nprefix = kept;
	}
	/* the distinct plain operands, sorted as a tsvector's lexemes are */
	qsort(t, k, sizeof(GqPosTerm), posterm_cmp);
	for (int i = 0; i < k; i++)
		if (m->nterms == 0 || posterm_cmp(&t[m->nterms - 1], &t[i]) != 0)
			t[m->nterms++] = t[i];
	m->terms = t;
	m->tree = tree;
	m->doc_cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx positions match", ALLOCSET_SMALL_SIZES);
	compile_queries(m, tree, cap);
}

#define POS_TERM	0
#define POS_AND		1
#define POS_OR		2
#define POS_PHRASE	3

/* the index of a plain operand in m->terms (sorted, distinct), or -1 */
static int
term_index(const GqPosMatch *m, const char *lex, int len)
{
	int			lo = 0;
	int			hi = m->nterms - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			c = gpx_lexeme_cmp(m->terms[mid].lex, m->terms[mid].len, lex, len);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* an operand without a prefix or weights: its term, else -1 */
static int
plain_term(const GqPosMatch *m, TSQuery query, const QueryItem *item)
{
	if (item->type != QI_VAL || item->qoperand.prefix || item->qoperand.weight != 0)
		return -1;
	return term_index(m, GETOPERAND(query) + item->qoperand.distance, item->qoperand.length);
}

/*
 * A phrase of plain operands: its leaves at their offsets from its last
 * position (shift: this part's offset); its width, or -1 for anything else
 */
static int
compile_phrase(GqPosMatch *m, TSQuery query, const QueryItem *item, int shift)
{
	int			rw;
	int			lw;

	check_stack_depth();
	if (item->type == QI_VAL)
	{
		int			t = plain_term(m, query, item);

		if (t < 0)
			return -1;
		m->leaves[m->nleaves].term = t;
		m->leaves[m->nleaves++].offset = shift;
		return 0;
	}
	if (item->type != QI_OPR || item->qoperator.oper != OP_PHRASE)
		return -1;
	rw = compile_phrase(m, query, item + 1, shift);
	if (rw < 0)
		return -1;
	lw = compile_phrase(m, query, item + item->qoperator.left, shift + item->qoperator.distance + rw);
	if (lw < 0)
		return -1;
	return item->qoperator.distance + lw + rw;
}

/* a query's node, or -1 when it is not of the compiled forms */
static int
compile_node(GqPosMatch *m, TSQuery query, const QueryItem *item)
{
	GqPosNode	node = {0};

	check_stack_depth();
	if (item->type == QI_VAL)
	{
		node.kind = POS_TERM;
		if ((node.term = plain_term(m, query, item)) < 0)
			return -1;
	}
	else if (item->type == QI_OPR && (item->qoperator.oper == OP_AND || item->qoperator.oper == OP_OR))
	{
		node.kind = item->qoperator.oper == OP_AND ? POS_AND : POS_OR;
		if ((node.left = compile_node(m, query, item + item->qoperator.left)) < 0 ||
			(node.right = compile_node(m, query, item + 1)) < 0)
			return -1;
	}
	else if (item->type == QI_OPR && item->qoperator.oper == OP_PHRASE)
	{
		node.kind = POS_PHRASE;
		node.first = m->nleaves;
		if (compile_phrase(m, query, item, 0) < 0)
			return -1;
		node.nleaves = m->nleaves - node.first;
	}
	else
		return -1;				/* NOT, or anything else: ts_match_vq */
	m->nodes[m->nnodes] = node;
	return m->nnodes++;
}

/* the compiled form dropped: each document answered by ts_match_vq */
static void
forget_compiled(GqPosMatch *m)
{
	if (m->nodes == NULL)
		return;
	pfree(m->nodes);
	pfree(m->leaves);
	pfree(m->roots);
	m->nodes = NULL;
	m->leaves = NULL;
	m->roots = NULL;
}

/* every query compiled, or none (m->nodes NULL) */
static void
compile_queries(GqPosMatch *m, const GqTree *tree, int cap)
{
	if (m->nprefix > 0)
		return;
	m->nodes = palloc(Max(cap, 1) * sizeof(GqPosNode));
	m->leaves = palloc(Max(cap, 1) * sizeof(GqPosLeaf));
	m->roots = palloc(Max(tree->nqueries, 1) * sizeof(int));
	for (int q = 0; q < tree->nqueries; q++)
		if ((m->roots[q] = compile_node(m, tree->queries[q], GETQUERY(tree->queries[q]))) < 0)
		{
			forget_compiled(m);
			return;
		}
}

/* has the operand's list of positions (ascending) the position pos? */
static bool
has_position(const GqPosTerm *t, int pos)
{
	int			lo = 0;
	int			hi = (int) t->npos - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			p = WEP_GETPOS(t->wep[mid]);

		if (p == pos)
			return true;
		if (p < pos)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/* a compiled node's answer: 1 yes, 0 no, -1 only ts_match_vq knows */
static int
eval_node(const GqPosMatch *m, int n)
{
	const GqPosNode *node = &m->nodes[n];
	const GqPosLeaf *leaf;
	const GqPosTerm *anchor;
	int			l = 0;
	int			r = 0;

	switch (node->kind)
	{
		case POS_TERM:
			return m->terms[node->term].has;
		case POS_AND:
			if ((l = eval_node(m, node->left)) == 0 || (r = eval_node(m, node->right)) == 0)
				return 0;
			return l < 0 || r < 0 ? -1 : 1;
		case POS_OR:
			if ((l = eval_node(m, node->left)) == 1 || (r = eval_node(m, node->right)) == 1)
				return 1;
			return l < 0 || r < 0 ? -1 : 0;
		default:
			leaf = &m->leaves[node->first];
			for (int i = 0; i < node->nleaves; i++)
			{
				if (!m->terms[leaf[i].term].has)
					return 0;
				if (m->terms[leaf[i].term].npos == 0)
					return -1;
			}
			/* each position of the first leaf, and the others where the phrase puts them */
			anchor = &m->terms[leaf[0].term];
			for (uint32 k = 0; k < anchor->npos; k++)
			{
				int			end = WEP_GETPOS(anchor->wep[k]) + leaf[0].offset;
				int			i = 1;

				while (i < node->nleaves && has_position(&m->terms[leaf[i].term], end - leaf[i].offset))
					i++;
				if (i == node->nleaves)
					return 1;
			}
			return 0;
	}
}

void
gq_pos_match_end(GqPosMatch *m)
{
	pfree(m->terms);
	pfree(m->prefix);
	pfree(m->prefix_len);
	forget_compiled(m);
	MemoryContextDelete(m->doc_cxt);
	m->terms = NULL;
	m->doc_cxt = NULL;
}

void
gq_pos_match_clear(GqPosMatch *m)
{
	for (int x = 0; x < m->nterms; x++)
		m->terms[x].has = false;
	m->nlexemes = 0;
	m->lexemes_cap = 0;
	m->lexemes = NULL;
	MemoryContextReset(m->doc_cxt);
}

bool
gq_pos_match_prefixed(const GqPosMatch *m, const char *lex, int len)
{
	for (int p = 0; p < m->nprefix; p++)
		if (len >= m->prefix_len[p] && memcmp(lex, m->prefix[p], m->prefix_len[p]) == 0)
			return true;
	return false;
}

void
gq_pos_match_add(GqPosMatch *m, const char *lex, int len, uint32 npos, const uint16 *wep)
{
	MemoryContext old = MemoryContextSwitchTo(m->doc_cxt);
	GqPosLexeme *l;

	Assert(m->doc_cxt != NULL && npos <= GPX_POS_MAX_COUNT);
	if (m->nlexemes == m->lexemes_cap)
	{
		m->lexemes_cap = Max(m->lexemes_cap * 2, 16);
		m->lexemes = m->lexemes ? repalloc(m->lexemes, m->lexemes_cap * sizeof(GqPosLexeme))
			: palloc(m->lexemes_cap * sizeof(GqPosLexeme));
	}
	l = &m->lexemes[m->nlexemes++];
	l->lex = pnstrdup(lex, len);
	l->len = len;
	l->npos = npos;
	l->wep = npos > 0 ? memcpy(palloc(npos * sizeof(uint16)), wep, npos * sizeof(uint16)) : NULL;
	MemoryContextSwitchTo(old);
}

static int
poslexeme_cmp(const void *a, const void *b)
{
	const GqPosLexeme *x = a;
	const GqPosLexeme *y = b;

	return gpx_lexeme_cmp(x->lex, x->len, y->lex, y->len);
}

/*
 * The tsvector of the lexemes l[0..n) (sorted, distinct), made as
 * tsvector_in makes one: lexemes, then each one's positions after it
 */
static TSVector
doc_tsvector(const GqPosLexeme *l, int n)
{
	Size		strlen_total = 0;
	TSVector	tsv;
	WordEntry  *we;
	char	   *str;
	Size		at = 0;

	for (int i = 0; i < n; i++)
	{
		strlen_total = SHORTALIGN(strlen_total + l[i].len);
		if (l[i].npos > 0)
			strlen_total += sizeof(uint16) + l[i].npos * sizeof(WordEntryPos);
	}
	tsv = palloc0(CALCDATASIZE(n, strlen_total));
	SET_VARSIZE(tsv, CALCDATASIZE(n, strlen_total));
	tsv->size = n;
	we = ARRPTR(tsv);
	str = STRPTR(tsv);
	for (int i = 0; i < n; i++)
	{
		we->haspos = l[i].npos > 0;
		we->len = l[i].len;
		we->pos = at;
		memcpy(str + at, l[i].lex, l[i].len);
		at = SHORTALIGN(at + l[i].len);
		if (l[i].npos > 0)
		{
			uint16		npos = (uint16) l[i].npos;

			memcpy(str + at, &npos, sizeof(uint16));
			memcpy(str + at + sizeof(uint16), l[i].wep, l[i].npos * sizeof(WordEntryPos));
			at += sizeof(uint16) + l[i].npos * sizeof(WordEntryPos);
		}
		we++;
	}
	Assert(at == strlen_total);
	return tsv;
}

static bool pos_match_vq(GqPosMatch *m);

bool
gq_pos_match_doc(GqPosMatch *m)
{
	if (m->nodes != NULL)
	{
		int			answer = 1;

		for (int q = 0; q < m->tree->nqueries && answer == 1; q++)
			answer = eval_node(m, m->roots[q]);
		if (answer >= 0)
		{
#ifdef GPX_CHECK_POS_FAST
			if ((answer == 1) != pos_match_vq(m))
				elog(ERROR, "gpuidx: positions fast path differs from ts_match_vq");
#endif
			return answer == 1;
		}
	}
	return pos_match_vq(m);
}

/* the document's answer by PostgreSQL's ts_match_vq on a tsvector of its operands */
static bool
pos_match_vq(GqPosMatch *m)
{
	/* what the match allocates (ts_match_vq's prefixes too) goes with the document */
	MemoryContext old = MemoryContextSwitchTo(m->doc_cxt);
	GqPosLexeme *l = palloc((m->nterms + m->nlexemes + 1) * sizeof(GqPosLexeme));
	int			n = 0;
	int			k = 0;
	TSVector	tsv;
	bool		match = true;

	/*
	 * the plain operands the document has and its prefixed lexemes (both
	 * sorted and distinct), merged: a lexeme that is both comes once
	 */
	for (int x = 0; x < m->nterms || k < m->nlexemes;)
	{
		GqPosLexeme t;
		int			c;

		if (x < m->nterms && !m->terms[x].has)
		{
			x++;
			continue;
		}
		if (x < m->nterms)
		{
			t.lex = m->terms[x].lex;
			t.len = m->terms[x].len;
			t.npos = m->terms[x].npos;
			t.wep = m->terms[x].wep;
		}
		c = x == m->nterms ? 1 : k == m->nlexemes ? -1 : poslexeme_cmp(&t, &m->lexemes[k]);
		if (c <= 0)
		{
			l[n++] = t;
			x++;
			k += c == 0;
		}
		else
			l[n++] = m->lexemes[k++];
	}
	tsv = doc_tsvector(l, n);
	for (int q = 0; q < m->tree->nqueries && match; q++)
		match = DatumGetBool(DirectFunctionCall2(ts_match_vq, PointerGetDatum(tsv),
												 PointerGetDatum(m->tree->queries[q])));
	MemoryContextSwitchTo(old);
	return match;
}

bool
gq_pos_match_pending(GqPosMatch *m, const uint8 *lex, const uint8 *lex_end, bool freqs,
					 const uint8 *pos, const uint8 *pos_end)
{
	const char *l;
	int			ll;
	uint32		tf;
	int			i = 0;
	uint16		wep[GPX_POS_MAX_COUNT];

	gq_pos_match_clear(m);
	/* both in lexeme order: each lexeme's positions record follows the one before */
	while (gpx_pending_lexeme(&lex, lex_end, freqs, &l, &ll, &tf))
	{
		GqPosTerm  *t;
		int			c = 1;
		bool		prefixed = gq_pos_match_prefixed(m, l, ll);
		uint32		npos;

		while (i < m->nterms && (c = gpx_lexeme_cmp(m->terms[i].lex, m->terms[i].len, l, ll)) < 0)
			i++;
		t = i < m->nterms && c == 0 ? &m->terms[i] : NULL;
		if (!gpx_pos_decode(&pos, pos_end, t ? t->wep : prefixed ? wep : NULL, t ? &t->npos : &npos))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("a pending entry's positions are malformed")));
		if (t)
		{
			t->has = true;
			i++;
		}
		else if (prefixed)
			gq_pos_match_add(m, l, ll, npos, wep);
	}
	return gq_pos_match_doc(m);
}

void
gq_settled_join(uint32 **sure, uint32 *nsure, uint32 *yes, uint32 nyes)
{
	uint32	   *merged;
	uint32		i,
				j,
				k;

	merged = nyes + *nsure > 0 ? palloc((nyes + *nsure) * sizeof(uint32)) : NULL;
	for (i = j = k = 0; i < *nsure || j < nyes;)
		merged[k++] = j == nyes || (i < *nsure && (*sure)[i] < yes[j]) ? (*sure)[i++] : yes[j++];
	if (*sure)
		pfree(*sure);
	*sure = merged;
	*nsure = k;
}

/* a term's list in the segment, opened for the candidates */
typedef struct SegTerm
{
	bool		found;
	GpxList		list;
	pl_cursor	cur;
	uint32		cap;			/* postings a block of the list holds */
	GpxPositions *pos;
} SegTerm;

/* a lexeme with a prefix that a candidate of a window has: its positions in an arena */
typedef struct PrefixHit
{
	uint32		cand;			/* the candidate's index in the window */
	uint32		lex;			/* the lexeme's offset in the names arena */
	uint16		len;
	uint16		npos;
	uint32		wep;			/* its positions' offset in the positions arena */
} PrefixHit;

typedef struct PrefixHits
{
	PrefixHit  *hits;
	uint32		n;
	uint32		cap;
	StringInfoData names;		/* the lexemes, back to back */
	uint16	   *wep;
	uint64		nwep;
	uint64		wep_cap;
} PrefixHits;

/*
 * The hits by candidate (of n), each candidate's in the order they came
 * (a counting sort: stable, and linear)
 */
static void
sort_hits(PrefixHits *ph, uint32 n)
{
	uint32	   *start = palloc0((n + 1) * sizeof(uint32));
	PrefixHit  *sorted = palloc_extended(Max((Size) ph->n, 1) * sizeof(PrefixHit), MCXT_ALLOC_HUGE);

	for (uint32 h = 0; h < ph->n; h++)
		start[ph->hits[h].cand + 1]++;
	for (uint32 c = 0; c < n; c++)
		start[c + 1] += start[c];
	for (uint32 h = 0; h < ph->n; h++)
		sorted[start[ph->hits[h].cand]++] = ph->hits[h];
	memcpy(ph->hits, sorted, (Size) ph->n * sizeof(PrefixHit));
	pfree(sorted);
	pfree(start);
}

/* a hit, its lexeme (the first time: new_lexeme) and positions into the arenas */
static void
add_hit(PrefixHits *ph, uint32 cand, const char *lex, int len, uint32 npos, const uint16 *wep, bool new_lexeme,
		uint32 *lex_at)
{
	PrefixHit  *h;

	if (new_lexeme)
	{
		*lex_at = ph->names.len;
		appendBinaryStringInfo(&ph->names, lex, len);
	}
	if (ph->n == ph->cap)
	{
		ph->cap = Max(ph->cap * 2, 1024);
		ph->hits = ph->hits ? repalloc_huge(ph->hits, (Size) ph->cap * sizeof(PrefixHit))
			: palloc_extended((Size) ph->cap * sizeof(PrefixHit), MCXT_ALLOC_HUGE);
	}
	if (ph->nwep + npos > ph->wep_cap)
	{
		ph->wep_cap = Max(ph->wep_cap * 2, ph->nwep + npos + 4096);
		ph->wep = ph->wep ? repalloc_huge(ph->wep, (Size) ph->wep_cap * sizeof(uint16))
			: palloc_extended((Size) ph->wep_cap * sizeof(uint16), MCXT_ALLOC_HUGE);
	}
	h = &ph->hits[ph->n++];
	h->cand = cand;
	h->lex = *lex_at;
	h->len = (uint16) len;
	h->npos = (uint16) npos;
	h->wep = (uint32) ph->nwep;
	memcpy(ph->wep + ph->nwep, wep, npos * sizeof(uint16));
	ph->nwep += npos;
}

/*
 * Of the candidates cand[0..n), those having a lexeme with one of the
 * queries' prefixes, with its positions, into ph (sorted by candidate): the
 * dictionary read from each prefix on, each such term's list searched for
 * the candidates (only the blocks they fall in read).
 */
static void
prefix_hits(GpxSegment *seg, const GqPosMatch *m, const uint32 *cand, uint32 n, PrefixHits *ph)
{
	uint16		wep[GPX_POS_MAX_COUNT];

	ph->n = 0;
	ph->nwep = 0;
	resetStringInfo(&ph->names);
	for (int p = 0; p < m->nprefix; p++)
	{
		GpxDictIter it;

		gpx_dict_iter_init(&it, seg);
		gpx_dict_iter_seek(&it, m->prefix[p], m->prefix_len[p]);
		while (gpx_dict_iter_next_prefixed(&it, m->prefix[p], m->prefix_len[p]))
		{
			GpxList		list;
			pl_cursor	cur;
			GpxPositions *pos = NULL;
			uint32		cap;
			uint32		lex_at = 0;
			bool		first = true;

			CHECK_FOR_INTERRUPTS();
			if (it.df <= (uint64) n * 4)
			{
				/* a short list: its postings decoded, the candidates searched for each */
				uint32	   *ids = palloc(Max(it.df, 1) * sizeof(uint32));
				uint32		c = 0;

				gpx_dict_iter_list(&it, &list);
				if (pl_decode(&list.view, ids) != PL_OK)
					gpx_seg_corrupt(seg, GPX_STREAM_LISTS, PG_UINT32_MAX, "list's postings are out of order");
				gpx_local_stats.list_blocks += list.view.nblocks;
				for (uint32 i = 0; i < it.df && c < n; i++)
				{
					c = pl_gallop(cand, c, n, ids[i]);
					if (c == n || cand[c] != ids[i])
						continue;
					if (pos == NULL)
						pos = gpx_dict_iter_positions_at(&it);
					add_hit(ph, c, it.term, it.term_len, gpx_positions_get(pos, i, &list.view, wep), wep, first, &lex_at);
					first = false;
				}
				pfree(ids);
			}
			else
			{
				/* a long one: searched for each candidate, only the blocks they fall in read */
				gpx_dict_iter_list_probed(&it, cand, n, true, &list);
				pl_cursor_init(&cur, &list.view);
				cap = pl_block_capacity(&list.view);
				for (uint32 c = 0; c < n; c++)
				{
					uint32		v;

					if (!pl_cursor_next_geq(&cur, cand[c], &v))
					{
						if (cur.status != PL_OK)
							gpx_seg_corrupt(seg, GPX_STREAM_LISTS, PG_UINT32_MAX, "list's postings are out of order");
						break;
					}
					if (v != cand[c])
						continue;
					if (pos == NULL)
						pos = gpx_dict_iter_positions_at(&it);
					add_hit(ph, c, it.term, it.term_len,
							gpx_positions_get(pos, cur.block * cap + cur.pos, &list.view, wep), wep, first, &lex_at);
					first = false;
				}
				gpx_local_stats.list_blocks += cur.blocks_touched;
			}
			if (pos)
				gpx_positions_free(pos);
			gpx_list_free(&list);
		}
		gpx_dict_iter_end(&it);
	}
	sort_hits(ph, n);
}

/*
 * Candidates settled a window at a time when the queries have prefixes: a
 * window's hits take about this many bytes a candidate (a few lexemes with
 * the prefixes, their positions)
 */
#define PREFIX_BYTES_PER_CANDIDATE 256

void
gq_settle_by_positions(GpxSegment *seg, const GqTree *tree, uint32 **sure, uint32 *nsure,
					   uint32 **unsure, uint32 *nunsure)
{
	GqPosMatch	m;
	SegTerm    *st;
	uint32	   *yes;
	uint32		nyes = 0;
	PrefixHits	ph = {0};
	uint32		win;

	Assert(gq_tree_positions_settle(tree) && (seg->hdr->flags & GPX_SEG_POSITIONS));
	if (*nunsure == 0)
		return;
	gq_pos_match_begin(&m, tree);
	st = palloc0(Max(m.nterms, 1) * sizeof(SegTerm));
	for (int x = 0; x < m.nterms; x++)
	{
		GpxTermRef	ref;

		st[x].found = gpx_seg_find(seg, m.terms[x].lex, m.terms[x].len, &ref);
		if (!st[x].found)
			continue;
		st[x].pos = gpx_seg_positions(seg, &ref);
		/* only the blocks that can hold a candidate are read (whole: a hit's positions decode its block's docs) */
		gpx_seg_list_probed(seg, &ref, *unsure, *nunsure, true, &st[x].list);
		pl_cursor_init(&st[x].cur, &st[x].list.view);
		st[x].cap = pl_block_capacity(&st[x].list.view);
	}
	if (m.nprefix > 0)
		initStringInfo(&ph.names);
	win = m.nprefix > 0 ? (uint32) Max((uint64) work_mem * 1024 / PREFIX_BYTES_PER_CANDIDATE, 1024) : *nunsure;

	yes = palloc(*nunsure * sizeof(uint32));
	for (uint32 w0 = 0; w0 < *nunsure; w0 += win)
	{
		uint32		wn = Min(win, *nunsure - w0);
		uint32		h = 0;

		if (m.nprefix > 0)
			prefix_hits(seg, &m, *unsure + w0, wn, &ph);
		for (uint32 u = 0; u < wn; u++)
		{
			uint32		doc = (*unsure)[w0 + u];

			CHECK_FOR_INTERRUPTS();
			gq_pos_match_clear(&m);
			for (int x = 0; x < m.nterms; x++)
			{
				GqPosTerm  *t = &m.terms[x];
				uint32		v;

				if (!st[x].found)
					continue;
				if (pl_cursor_next_geq(&st[x].cur, doc, &v) && v == doc)
				{
					uint32		rank = st[x].cur.block * st[x].cap + st[x].cur.pos;

					t->npos = gpx_positions_get(st[x].pos, rank, &st[x].list.view, t->wep);
					t->has = true;
				}
				else if (st[x].cur.status != PL_OK)
					gpx_seg_corrupt(seg, GPX_STREAM_LISTS, PG_UINT32_MAX, "list's postings are out of order");
			}
			for (; h < ph.n && ph.hits[h].cand == u; h++)
				gq_pos_match_add(&m, ph.names.data + ph.hits[h].lex, ph.hits[h].len, ph.hits[h].npos,
								 ph.wep + ph.hits[h].wep);
			if (gq_pos_match_doc(&m))
				yes[nyes++] = doc;
		}
	}
	for (int x = 0; x < m.nterms; x++)
		if (st[x].found)
		{
			gpx_local_stats.list_blocks += st[x].cur.blocks_touched;
			gpx_positions_free(st[x].pos);
			gpx_list_free(&st[x].list);
		}
	pfree(st);
	if (ph.hits)
		pfree(ph.hits);
	if (ph.wep)
		pfree(ph.wep);
	if (ph.names.data)
		pfree(ph.names.data);
	gq_pos_match_end(&m);

	/* the settled ones join the sure ones, in order */
	gq_settled_join(sure, nsure, yes, nyes);
	pfree(yes);
	pfree(*unsure);
	*unsure = NULL;
	*nunsure = 0;
}
