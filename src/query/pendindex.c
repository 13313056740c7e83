/*
 * pendindex.c
 *	  The pending area looked up by term instead of read entry by entry: each
 *	  backend keeps an inverted index of the pending areas it has read (per
 *	  lexeme, the ordinals of the entries that have it; per entry, its TID),
 *	  built the first time, then extended from where it ended with the
 *	  entries appended since, so a query reads only the new pages.
 *
 * An entry never changes once appended, and the pending area only grows at
 * its tail until a merge moves its head, so the index is valid for as long
 * as the head is where it was: it is keyed by the index's relfilenode and
 * the head's page, sequence number (handed out once) and offset, and
 * rebuilt after a merge, a VACUUM or a TRUNCATE.  A query takes only the
 * entries its copy of the metapage counts (the first of them), so the
 * index of a later, longer pending area also serves an older snapshot.
 * Rows are still checked for visibility one by one: they are new rows.
 * In an index with positions each entry's lexemes and positions are kept
 * too, so that phrases and weights are settled here as in a segment.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "port/pg_bitutils.h"
#include "query/positions.h"
#include "query/query.h"
#include "query/tsq.h"
#include "store/parse.h"
#include "store/pending.h"

/* pending areas indexed at once per backend; and the largest indexed */
#define PENDINDEX_SLOTS			4
#define PENDINDEX_MAX_BYTES		((uint64) gq_pending_index_max_kb * 1024)

int			gq_pending_index_max_kb = 64 * 1024;

typedef struct PendTermKey
{
	const char *lex;
	int			len;
} PendTermKey;

typedef struct PendTerm
{
	PendTermKey key;
	uint32	   *ords;			/* entries having it, ascending */
	uint32		n;
	uint32		cap;
} PendTerm;

typedef struct PendIndex
{
	bool		used;
	RelFileLocator node;
	ProcNumber	backend;
	BlockNumber head;
	uint32		head_seq;
	uint32		head_off;
	uint64		last_use;
	MemoryContext cxt;
	HTAB	   *terms;
	ItemPointerData *tids;		/* per entry */
	uint32		n;
	uint32		cap;
	/* with positions: per entry, its lexemes then their positions, in entries */
	bool		positions;
	bool		freqs;
	uint32	   *entry_at;		/* [n + 1]: where each entry's bytes start */
	uint32	   *lex_bytes;		/* [n]: its lexemes' bytes (the rest: positions) */
	StringInfoData entries;
	/* where reading goes on, and what was read of the metapage's counts */
	BlockNumber blk;
	uint32		seq;
	uint32		pos;
	uint64		bytes;
	uint64		dl;
	uint32		pages;
} PendIndex;

static PendIndex slots[PENDINDEX_SLOTS];
static uint64 use_clock = 0;

static uint32
term_hash(const void *key, Size keysize)
{
	const PendTermKey *k = key;

	return hash_bytes((const unsigned char *) k->lex, k->len);
}

static int
term_match(const void *x, const void *y, Size keysize)
{
	const PendTermKey *a = x;
	const PendTermKey *b = y;

	return a->len != b->len || memcmp(a->lex, b->lex, a->len) != 0;
}

static void
slot_reset(PendIndex *p, Relation index, const GpxMetaPageData *meta)
{
	HASHCTL		ctl;

	if (p->cxt == NULL)
		p->cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx pending index", ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(p->cxt);
	p->used = true;
	p->node = gpx_rel_locator(index);
	p->backend = index->rd_backend;
	p->head = meta->pend_head;
	p->head_seq = meta->pend_head_seq;
	p->head_off = meta->pend_head_off;
	ctl.keysize = sizeof(PendTermKey);
	ctl.entrysize = sizeof(PendTerm);
	ctl.hash = term_hash;
	ctl.match = term_match;
	ctl.hcxt = p->cxt;
	p->terms = hash_create("gpuidx pending terms", 1024, &ctl,
						   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	p->cap = 1024;
	p->tids = MemoryContextAlloc(p->cxt, p->cap * sizeof(ItemPointerData));
	p->n = 0;
	p->positions = (meta->flags & GPX_META_POSITIONS) != 0;
	p->freqs = (meta->flags & GPX_META_FREQS) != 0;
	p->entry_at = NULL;
	p->lex_bytes = NULL;
	if (p->positions)
	{
		MemoryContext old = MemoryContextSwitchTo(p->cxt);

		p->entry_at = palloc((p->cap + 1) * sizeof(uint32));
		p->lex_bytes = palloc(p->cap * sizeof(uint32));
		p->entry_at[0] = 0;
		initStringInfo(&p->entries);
		MemoryContextSwitchTo(old);
	}
	p->blk = InvalidBlockNumber;
	p->seq = p->pos = p->pages = 0;
	p->bytes = p->dl = 0;
}

/* the slot of this index's pending area as meta has it, made empty if new */
static PendIndex *
slot_for(Relation index, const GpxMetaPageData *meta)
{
	PendIndex  *victim = NULL;

	for (int i = 0; i < PENDINDEX_SLOTS; i++)
	{
		PendIndex  *p = &slots[i];

		if (p->used && RelFileLocatorEquals(p->node, gpx_rel_locator(index)) && p->backend == index->rd_backend)
		{
			if (p->head != meta->pend_head || p->head_seq != meta->pend_head_seq ||
				p->head_off != meta->pend_head_off)
				slot_reset(p, index, meta);
			return p;
		}
		if (victim == NULL || !p->used || (victim->used && p->last_use < victim->last_use))
			victim = p;
	}
	slot_reset(victim, index, meta);
	return victim;
}

/* the entries appended since the index was last extended, up to what meta counts */
static void
extend(PendIndex *p, Relation index, const GpxMetaPageData *meta)
{
	GpxPendingReader r;
	MemoryContext old;

	if (p->n == 0)
		gpx_pending_begin(&r, index, meta, InvalidBlockNumber, 0);
	else
		gpx_pending_resume(&r, index, meta, p->blk, p->seq, p->pos, p->bytes, p->n, p->dl, p->pages);
	old = MemoryContextSwitchTo(p->cxt);
	while (gpx_pending_next(&r))
	{
		const uint8 *lp = r.lex;
		const char *lex;
		int			len;
		uint32		tf;

		if (p->n == p->cap)
		{
			p->cap *= 2;
			p->tids = repalloc_huge(p->tids, (Size) p->cap * sizeof(ItemPointerData));
			if (p->positions)
			{
				p->entry_at = repalloc_huge(p->entry_at, ((Size) p->cap + 1) * sizeof(uint32));
				p->lex_bytes = repalloc_huge(p->lex_bytes, (Size) p->cap * sizeof(uint32));
			}
		}
		if (p->positions)
		{
			/* the area is at most PENDINDEX_MAX_BYTES (under 1 GB): offsets fit */
			p->lex_bytes[p->n] = (uint32) (r.end - r.lex);
			appendBinaryStringInfo(&p->entries, (const char *) r.lex, (int) (r.end - r.lex));
			appendBinaryStringInfo(&p->entries, (const char *) r.positions_at, (int) (r.entry_end - r.positions_at));
			p->entry_at[p->n + 1] = (uint32) p->entries.len;
		}
		while (gpx_pending_lexeme(&lp, r.end, r.freqs, &lex, &len, &tf))
		{
			PendTermKey key = {lex, len};
			PendTerm   *t;
			bool		found;

			t = hash_search(p->terms, &key, HASH_ENTER, &found);
			if (!found)
			{
				char	   *copy = palloc(len);

				memcpy(copy, lex, len);
				t->key.lex = copy;
				t->key.len = len;
				t->cap = 4;
				t->n = 0;
				t->ords = palloc(t->cap * sizeof(uint32));
			}
			else if (t->n == t->cap)
			{
				t->cap *= 2;
				t->ords = repalloc_huge(t->ords, (Size) t->cap * sizeof(uint32));
			}
			t->ords[t->n++] = p->n;
		}
		p->tids[p->n++] = r.tid;
		p->bytes += r.entry_bytes;
		p->dl += r.dl;
		/* where the next entry starts */
		p->blk = r.blk;
		p->seq = r.seq;
		p->pos = r.pos;
		p->pages = r.pages_read;
	}
	MemoryContextSwitchTo(old);
	gpx_pending_end(&r);
}

/*
 * This backend's index of the pending area meta counts, extended to it;
 * NULL when the area is too large to be indexed.
 */
static PendIndex *
pend_ready(Relation index, const GpxMetaPageData *meta)
{
	PendIndex  *p;

	if (meta->pend_bytes > PENDINDEX_MAX_BYTES || meta->pend_entries >= PG_UINT32_MAX)
		return NULL;
	p = slot_for(index, meta);
	p->last_use = ++use_clock;
	if (p->n < meta->pend_entries)
	{
		PG_TRY();
		{
			extend(p, index, meta);
		}
		PG_CATCH();
		{
			/* half extended: made again next time */
			p->used = false;
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	return p;
}

/*
 * The entries below limit having every term, in *ords (palloc'd, NULL
 * when none): the shortest term's entries walked, the others searched.
 */
static uint32
pend_and(PendIndex *p, uint32 limit, const GpxLexemes *terms, uint32 **ords)
{
	PendTerm  **lists = palloc(Max(terms->n, 1) * sizeof(PendTerm *));
	uint32	   *pos;
	uint32		shortest = 0;
	uint32		n = 0;

	*ords = NULL;
	for (int i = 0; i < terms->n; i++)
	{
		PendTermKey key = {terms->lex[i], terms->len[i]};

		lists[i] = hash_search(p->terms, &key, HASH_FIND, NULL);
		if (lists[i] == NULL)
		{
			pfree(lists);
			return 0;
		}
		if (lists[i]->n < lists[shortest]->n)
			shortest = i;
	}
	pos = palloc0(terms->n * sizeof(uint32));
	*ords = palloc(Max(lists[shortest]->n, 1) * sizeof(uint32));
	for (uint32 j = 0; j < lists[shortest]->n; j++)
	{
		uint32		ord = lists[shortest]->ords[j];
		bool		all = true;

		if (ord >= limit)
			break;
		for (int i = 0; all && i < terms->n; i++)
		{
			PendTerm   *t = lists[i];

			if (i == shortest)
				continue;
			while (pos[i] < t->n && t->ords[pos[i]] < ord)
				pos[i]++;
			all = pos[i] < t->n && t->ords[pos[i]] == ord;
		}
		if (all)
			(*ords)[n++] = ord;
	}
	pfree(pos);
	pfree(lists);
	return n;
}

/* the ordinals' TIDs to fn, in batches */
static void
emit_ords(PendIndex *p, const uint32 *ords, uint32 n, gq_tids_fn fn, void *arg)
{
	ItemPointerData tids[256];
	int			k = 0;

	for (uint32 i = 0; i < n; i++)
	{
		tids[k++] = p->tids[ords[i]];
		if (k == lengthof(tids))
		{
			fn(arg, tids, k);
			k = 0;
		}
	}
	if (k > 0)
		fn(arg, tids, k);
}

bool
gq_pending_lookup(GqIndex *gq, const GpxLexemes *terms, gq_tids_fn fn, void *arg)
{
	const GpxMetaPageData *meta = &gq->meta;
	PendIndex  *p;
	uint32	   *ords;
	uint32		n;

	if (meta->pend_entries == 0 || terms->n == 0)
		return meta->pend_bytes <= PENDINDEX_MAX_BYTES;
	p = pend_ready(gq->index, meta);
	if (p == NULL)
		return false;
	n = pend_and(p, (uint32) meta->pend_entries, terms, &ords);
	emit_ords(p, ords, n, fn, arg);
	if (ords)
		pfree(ords);
	return true;
}

/* ---------------------------------------------------------------------------
 * Query trees over the pending area: the same sets as in a segment, of
 * entry ordinals (tsq.h)
 */

typedef struct PendSource
{
	PendIndex  *p;
	uint32		limit;			/* the entries the query's metapage copy counts */
} PendSource;

static uint32
pend_all_of(void *arg, const GpxLexemes *terms, uint32 **docs)
{
	PendSource *ps = arg;

	return pend_and(ps->p, ps->limit, terms, docs);
}

static uint32
pend_docs_of(void *arg, const GqNode *term, uint32 **docs)
{
	PendSource *ps = arg;
	HASH_SEQ_STATUS status;
	PendTerm   *t;
	uint64	   *bits;
	uint32		words = (ps->limit + 63) / 64;
	uint32		n = 0;

	if (!term->prefix)
	{
		const char *lex = term->lex;
		int			len = term->len;
		GpxLexemes	one = {.n = 1, .lex = &lex, .len = &len};

		return pend_and(ps->p, ps->limit, &one, docs);
	}
	/* every lexeme with the prefix: a bitmap of the entries */
	bits = palloc0(Max(words, 1) * sizeof(uint64));
	hash_seq_init(&status, ps->p->terms);
	while ((t = hash_seq_search(&status)) != NULL)
	{
		if (t->key.len < term->len || memcmp(t->key.lex, term->lex, term->len) != 0)
			continue;
		for (uint32 i = 0; i < t->n && t->ords[i] < ps->limit; i++)
			bits[t->ords[i] / 64] |= UINT64CONST(1) << (t->ords[i] % 64);
	}
	*docs = palloc(Max(ps->limit, 1) * sizeof(uint32));
	for (uint32 w = 0; w < words; w++)
		for (uint64 b = bits[w]; b != 0; b &= b - 1)
			(*docs)[n++] = w * 64 + pg_rightmost_one_pos64(b);
	pfree(bits);
	return n;
}

/*
 * Of docs[0..n) (entry ordinals), in place, those having the term (or one
 * with its prefix) when keep, else those having none
 */
static uint32
pend_filter(void *arg, const GqNode *term, bool keep, uint32 *docs, uint32 n)
{
	PendSource *ps = arg;
	uint32	   *has = NULL;
	uint32		nhas;
	uint32		k;

	if (term->prefix)
		nhas = pend_docs_of(arg, term, &has);
	else
	{
		PendTermKey key = {term->lex, term->len};
		PendTerm   *t = hash_search(ps->p->terms, &key, HASH_FIND, NULL);

		if (t == NULL)
			return keep ? 0 : n;
		return keep ? cpu_merge_intersect(docs, n, t->ords, t->n, docs, n)
			: cpu_merge_difference(docs, n, t->ords, t->n, docs);
	}
	k = keep ? cpu_merge_intersect(docs, n, has, nhas, docs, n) : cpu_merge_difference(docs, n, has, nhas, docs);
	if (has)
		pfree(has);
	return k;
}

/* the entries having the term (a prefix: any of its lexemes, summed up to cap) */
static uint64
pend_frequency(void *arg, const GqNode *term, uint64 cap)
{
	PendSource *ps = arg;
	HASH_SEQ_STATUS status;
	PendTerm   *t;
	uint64		n = 0;

	if (!term->prefix)
	{
		PendTermKey key = {term->lex, term->len};

		t = hash_search(ps->p->terms, &key, HASH_FIND, NULL);
		return t ? t->n : 0;
	}
	hash_seq_init(&status, ps->p->terms);
	while ((t = hash_seq_search(&status)) != NULL)
	{
		if (t->key.len < term->len || memcmp(t->key.lex, term->lex, term->len) != 0)
			continue;
		n += t->n;
		if (n >= cap)
		{
			hash_seq_term(&status);
			break;
		}
	}
	return n;
}

/* the unsure entries settled from their positions: those that match join *sure */
static void
settle_by_positions(PendIndex *p, const GqTree *tree, uint32 **sure, uint32 *nsure, uint32 **unsure,
					uint32 *nunsure)
{
	GqPosMatch	m;
	uint32	   *yes = palloc(*nunsure * sizeof(uint32));
	uint32		nyes = 0;

	gq_pos_match_begin(&m, tree);
	for (uint32 i = 0; i < *nunsure; i++)
	{
		uint32		ord = (*unsure)[i];
		const uint8 *at = (const uint8 *) p->entries.data + p->entry_at[ord];
		const uint8 *lex_end = at + p->lex_bytes[ord];

		CHECK_FOR_INTERRUPTS();
		if (gq_pos_match_pending(&m, at, lex_end, p->freqs, lex_end,
								 (const uint8 *) p->entries.data + p->entry_at[ord + 1]))
			yes[nyes++] = ord;
	}
	gq_pos_match_end(&m);
	gq_settled_join(sure, nsure, yes, nyes);
	pfree(yes);
	pfree(*unsure);
	*unsure = NULL;
	*nunsure = 0;
}

bool
gq_pending_tree(GqIndex *gq, const GqTree *tree, gq_tree_tids_fn fn, void *arg)
{
	const GpxMetaPageData *meta = &gq->meta;
	PendSource	ps;
	GqSource	src = {0};
	uint32	   *sure;
	uint32	   *unsure;
	uint32		nsure;
	uint32		nunsure;
	GqFlaggedSink f = {fn, arg, false};

	if (meta->pend_entries == 0 || tree->root == NULL)
		return meta->pend_bytes <= PENDINDEX_MAX_BYTES;
	ps.p = pend_ready(gq->index, meta);
	if (ps.p == NULL)
		return false;
	ps.limit = (uint32) meta->pend_entries;
	src.arg = &ps;
	src.lo = 0;
	src.hi = ps.limit;
	src.all_of = pend_all_of;
	src.docs_of = pend_docs_of;
	src.filter = pend_filter;
	src.frequency = pend_frequency;
	gq_tree_eval_split(tree, &src, &sure, &nsure, &unsure, &nunsure);
	if (nunsure > 0 && ps.p->positions && gq_tree_positions_settle(tree))
		settle_by_positions(ps.p, tree, &sure, &nsure, &unsure, &nunsure);
	emit_ords(ps.p, sure, nsure, gq_flagged_tids, &f);
	f.recheck = true;
	emit_ords(ps.p, unsure, nunsure, gq_flagged_tids, &f);
	if (sure)
		pfree(sure);
	if (unsure)
		pfree(unsure);
	return true;
}
