/*
 * positions.c
 *	  A tree's unsure candidates settled from the positions an index stores
 *	  (option positions), so that phrases and weights need no row.
 *
 * For each candidate, a tsvector is made of the query's lexemes that the
 * document has, each with its positions and weights exactly as the
 * document's own tsvector holds them, and each tsquery of the tree is run
 * on it by PostgreSQL's ts_match_vq.  A tsquery looks up only its own
 * operands (the tree settles nothing when one is a prefix), so its answer
 * on that tsvector is its answer on the document's: the same rows as the
 * check on the heap, without reading or parsing them.  The pending area's
 * entries carry their lexemes' positions, so its candidates are settled the
 * same way (gq_pos_match_pending).
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "tsearch/ts_type.h"
#include "utils/builtins.h"

#include "query/positions.h"
#include "store/segment.h"
#include "worker/worker.h"

static int
posterm_cmp(const void *a, const void *b)
{
	const GqPosTerm *x = a;
	const GqPosTerm *y = b;

	return gpx_lexeme_cmp(x->lex, x->len, y->lex, y->len);
}

void
gq_pos_match_begin(GqPosMatch *m, const GqTree *tree)
{
	int			cap = 0;
	int			k = 0;
	GqPosTerm  *t;

	Assert(gq_tree_positions_settle(tree));
	for (int q = 0; q < tree->nqueries; q++)
		cap += tree->queries[q]->size;
	t = palloc0(Max(cap, 1) * sizeof(GqPosTerm));
	for (int q = 0; q < tree->nqueries; q++)
	{
		TSQuery		query = tree->queries[q];
		QueryItem  *item = GETQUERY(query);

		for (int i = 0; i < query->size; i++)
			if (item[i].type == QI_VAL)
			{
				t[k].lex = GETOPERAND(query) + item[i].qoperand.distance;
				t[k].len = item[i].qoperand.length;
				k++;
			}
	}
	/* the distinct operands, sorted as a tsvector's lexemes are */
	qsort(t, k, sizeof(GqPosTerm), posterm_cmp);
	m->nterms = 0;
	for (int i = 0; i < k; i++)
		if (m->nterms == 0 || posterm_cmp(&t[m->nterms - 1], &t[i]) != 0)
			t[m->nterms++] = t[i];
	m->terms = t;
	m->tree = tree;
}

void
gq_pos_match_end(GqPosMatch *m)
{
	pfree(m->terms);
	m->terms = NULL;
}

/*
 * The tsvector of the terms the document has (sorted, distinct), made as
 * tsvector_in makes one: lexemes, then each one's positions after it
 */
static TSVector
doc_tsvector(const GqPosTerm *t, int n)
{
	int			nlex = 0;
	Size		strlen_total = 0;
	TSVector	tsv;
	WordEntry  *we;
	char	   *str;
	Size		at = 0;

	for (int i = 0; i < n; i++)
		if (t[i].has)
		{
			nlex++;
			strlen_total = SHORTALIGN(strlen_total + t[i].len);
			if (t[i].npos > 0)
				strlen_total += sizeof(uint16) + t[i].npos * sizeof(WordEntryPos);
		}
	tsv = palloc0(CALCDATASIZE(nlex, strlen_total));
	SET_VARSIZE(tsv, CALCDATASIZE(nlex, strlen_total));
	tsv->size = nlex;
	we = ARRPTR(tsv);
	str = STRPTR(tsv);
	for (int i = 0; i < n; i++)
	{
		if (!t[i].has)
			continue;
		we->haspos = t[i].npos > 0;
		we->len = t[i].len;
		we->pos = at;
		memcpy(str + at, t[i].lex, t[i].len);
		at = SHORTALIGN(at + t[i].len);
		if (t[i].npos > 0)
		{
			uint16		npos = (uint16) t[i].npos;

			memcpy(str + at, &npos, sizeof(uint16));
			memcpy(str + at + sizeof(uint16), t[i].wep, t[i].npos * sizeof(WordEntryPos));
			at += sizeof(uint16) + t[i].npos * sizeof(WordEntryPos);
		}
		we++;
	}
	Assert(at == strlen_total);
	return tsv;
}

bool
gq_pos_match_doc(GqPosMatch *m)
{
	TSVector	tsv = doc_tsvector(m->terms, m->nterms);
	bool		match = true;

	for (int q = 0; q < m->tree->nqueries && match; q++)
		match = DatumGetBool(DirectFunctionCall2(ts_match_vq, PointerGetDatum(tsv),
												 PointerGetDatum(m->tree->queries[q])));
	pfree(tsv);
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

	for (int x = 0; x < m->nterms; x++)
		m->terms[x].has = false;
	/* both in lexeme order: each lexeme's positions record follows the one before */
	while (i < m->nterms && gpx_pending_lexeme(&lex, lex_end, freqs, &l, &ll, &tf))
	{
		GqPosTerm  *t;
		int			c = 1;

		while (i < m->nterms && (c = gpx_lexeme_cmp(m->terms[i].lex, m->terms[i].len, l, ll)) < 0)
			i++;
		t = i < m->nterms && c == 0 ? &m->terms[i] : NULL;
		if (!gpx_pos_decode(&pos, pos_end, t ? t->wep : NULL, t ? &t->npos : &tf))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("a pending entry's positions are malformed")));
		if (t)
		{
			t->has = true;
			i++;
		}
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

void
gq_settle_by_positions(GpxSegment *seg, const GqTree *tree, uint32 **sure, uint32 *nsure,
					   uint32 **unsure, uint32 *nunsure)
{
	GqPosMatch	m;
	SegTerm    *st;
	uint32	   *yes;
	uint32		nyes = 0;

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
		/* only the blocks that can hold a candidate are read */
		gpx_seg_list_probed(seg, &ref, *unsure, *nunsure, &st[x].list);
		pl_cursor_init(&st[x].cur, &st[x].list.view);
		st[x].cap = pl_block_capacity(&st[x].list.view);
	}

	yes = palloc(*nunsure * sizeof(uint32));
	for (uint32 u = 0; u < *nunsure; u++)
	{
		uint32		doc = (*unsure)[u];

		CHECK_FOR_INTERRUPTS();
		for (int x = 0; x < m.nterms; x++)
		{
			GqPosTerm  *t = &m.terms[x];
			uint32		v;

			t->has = false;
			if (!st[x].found)
				continue;
			if (pl_cursor_next_geq(&st[x].cur, doc, &v) && v == doc)
			{
				uint32		rank = st[x].cur.block * st[x].cap + st[x].cur.pos;

				t->npos = gpx_positions_get(st[x].pos, rank, t->wep);
				t->has = true;
			}
			else if (st[x].cur.status != PL_OK)
				gpx_seg_corrupt(seg, GPX_STREAM_LISTS, PG_UINT32_MAX, "list's postings are out of order");
		}
		if (gq_pos_match_doc(&m))
			yes[nyes++] = doc;
	}
	for (int x = 0; x < m.nterms; x++)
		if (st[x].found)
		{
			gpx_local_stats.list_blocks += st[x].cur.blocks_touched;
			gpx_positions_free(st[x].pos);
			gpx_list_free(&st[x].list);
		}
	pfree(st);
	gq_pos_match_end(&m);

	/* the settled ones join the sure ones, in order */
	gq_settled_join(sure, nsure, yes, nyes);
	pfree(yes);
	pfree(*unsure);
	*unsure = NULL;
	*nunsure = 0;
}
