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
 * check on the heap, without reading or parsing them.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "tsearch/ts_type.h"
#include "utils/builtins.h"

#include "query/positions.h"
#include "store/segment.h"

/* one of the queries' lexemes in the segment */
typedef struct PosTerm
{
	const char *lex;
	int			len;
	bool		found;			/* in the segment */
	GpxList		list;			/* opened for the candidates */
	pl_cursor	cur;
	uint32		cap;			/* postings a block of the list holds */
	GpxPositions *pos;
	/* the current candidate's */
	bool		has;
	uint32		npos;
	uint16		wep[GPX_POS_MAX_COUNT];
} PosTerm;

static int
posterm_cmp(const void *a, const void *b)
{
	const PosTerm *x = a;
	const PosTerm *y = b;

	return gpx_lexeme_cmp(x->lex, x->len, y->lex, y->len);
}

/* the distinct operands of the queries, sorted as a tsvector's lexemes are */
static PosTerm *
query_terms(const GqTree *tree, int *n)
{
	int			cap = 0;
	int			k = 0;
	PosTerm    *t;

	for (int q = 0; q < tree->nqueries; q++)
		cap += tree->queries[q]->size;
	t = palloc0(Max(cap, 1) * sizeof(PosTerm));
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
	qsort(t, k, sizeof(PosTerm), posterm_cmp);
	*n = 0;
	for (int i = 0; i < k; i++)
		if (*n == 0 || posterm_cmp(&t[*n - 1], &t[i]) != 0)
			t[(*n)++] = t[i];
	return t;
}

/*
 * The tsvector of the terms the candidate has (sorted, distinct), made as
 * tsvector_in makes one: lexemes, then each one's positions after it
 */
static TSVector
candidate_tsvector(PosTerm *t, int n)
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

void
gq_settle_by_positions(GpxSegment *seg, const GqTree *tree, uint32 **sure, uint32 *nsure,
					   uint32 **unsure, uint32 *nunsure)
{
	int			nterms;
	PosTerm    *t;
	uint32	   *yes;
	uint32		nyes = 0;
	uint32	   *merged;
	uint32		i,
				j,
				k;

	Assert(gq_tree_positions_settle(tree) && (seg->hdr->flags & GPX_SEG_POSITIONS));
	if (*nunsure == 0)
		return;
	t = query_terms(tree, &nterms);
	for (int x = 0; x < nterms; x++)
	{
		GpxTermRef	ref;

		t[x].found = gpx_seg_find(seg, t[x].lex, t[x].len, &ref);
		if (!t[x].found)
			continue;
		t[x].pos = gpx_seg_positions(seg, &ref);
		/* only the blocks that can hold a candidate are read */
		gpx_seg_list_probed(seg, &ref, *unsure, *nunsure, &t[x].list);
		pl_cursor_init(&t[x].cur, &t[x].list.view);
		t[x].cap = pl_block_capacity(&t[x].list.view);
	}

	yes = palloc(*nunsure * sizeof(uint32));
	for (uint32 u = 0; u < *nunsure; u++)
	{
		uint32		doc = (*unsure)[u];
		TSVector	tsv;
		bool		match = true;

		CHECK_FOR_INTERRUPTS();
		for (int x = 0; x < nterms; x++)
		{
			uint32		v;

			t[x].has = false;
			if (!t[x].found)
				continue;
			if (pl_cursor_next_geq(&t[x].cur, doc, &v) && v == doc)
			{
				uint32		rank = t[x].cur.block * t[x].cap + t[x].cur.pos;

				t[x].npos = gpx_positions_get(t[x].pos, rank, t[x].wep);
				t[x].has = true;
			}
			else if (t[x].cur.status != PL_OK)
				gpx_seg_corrupt(seg, GPX_STREAM_LISTS, PG_UINT32_MAX, "list's postings are out of order");
		}
		tsv = candidate_tsvector(t, nterms);
		for (int q = 0; q < tree->nqueries && match; q++)
			match = DatumGetBool(DirectFunctionCall2(ts_match_vq, PointerGetDatum(tsv),
													 PointerGetDatum(tree->queries[q])));
		pfree(tsv);
		if (match)
			yes[nyes++] = doc;
	}
	for (int x = 0; x < nterms; x++)
		if (t[x].found)
		{
			gpx_positions_free(t[x].pos);
			gpx_list_free(&t[x].list);
		}
	pfree(t);

	/* the settled ones join the sure ones, in order */
	merged = nyes + *nsure > 0 ? palloc((nyes + *nsure) * sizeof(uint32)) : NULL;
	for (i = j = k = 0; i < *nsure || j < nyes;)
		merged[k++] = j == nyes || (i < *nsure && (*sure)[i] < yes[j]) ? (*sure)[i++] : yes[j++];
	if (*sure)
		pfree(*sure);
	pfree(yes);
	pfree(*unsure);
	*sure = merged;
	*nsure = k;
	*unsure = NULL;
	*nunsure = 0;
}
