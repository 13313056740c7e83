/*
 * cost.c
 *	  Planner support from the index's own statistics: each query term's
 *	  document frequency is read from the dictionaries of the segments (the
 *	  same lookups a scan makes, without reading any list), so estimates are
 *	  real counts, not guesses from sampled statistics.
 *
 * Selectivity of an AND of terms: the terms' frequencies p1 <= p2 <= ...
 * combined with exponential backoff, p1 * p2^(1/2) * p3^(1/4) ..., since the
 * words of real queries are correlated and independence would underestimate;
 * the pending area's rows by counting the matches in a sample of it.
 * Cost: the pages a scan reads, the postings it decodes, the pending entries
 * it checks and the TIDs it maps.
 *
 * A text index built under another text search configuration than the
 * current one gets a prohibitive cost: it cannot answer the query (scan.c).
 */
#include "postgres.h"

#include <math.h>

#include "access/table.h"
#include "common/pg_prng.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/spccache.h"

#include "am/gpuidx_am.h"
#include "query/query.h"
#include "query/tsq.h"

GPUIDX_FUNCTION(gpuidx_matchsel);
GPUIDX_FUNCTION(gpuidx_matchjoinsel);

/* an index without segments, for a query the planner cannot see */
#define DEFAULT_MATCH_SEL 0.005
/* the typical query: its words, the dictionary leaves sampled, the queries drawn */
#define TYPICAL_WORDS 3
#define TYPICAL_LEAVES 64
#define TYPICAL_DRAWS 1001
/* CPU to decode and intersect one posting, in units of cpu_operator_cost */
#define POSTING_COST 0.1
/* pages of the pending area an estimate reads at most (1 MB) */
#define PENDING_SAMPLE_PAGES 128

static int
double_cmp(const void *x, const void *y)
{
	double		a = *(const double *) x;
	double		b = *(const double *) y;

	return (a > b) - (a < b);
}

static double and_selectivity(double *p, int n);

/* what every estimate starts from: the metapage, and the pending area's pages and entries */
static void
estimate_start(GqIndex *gq, GpxEstimate *est)
{
	memset(est, 0, sizeof(*est));
	est->pending_entries = gq->meta.pend_entries;
	est->pages = 1 + gq->meta.pend_pages;
	est->docs = gq->meta.pend_entries;
}

void
gpx_estimate(Relation index, const GpxLexemes *terms, GpxEstimate *est)
{
	GqTree	   *tree = gq_tree_new();

	if (terms->n == 0)
		gq_tree_add_nothing(tree);
	else
		gq_tree_add_lexemes(tree, terms);
	gpx_estimate_tree(index, tree, est);
}

/* the selectivity of an AND of terms of frequencies p (sorted in place): see above */
static double
and_selectivity(double *p, int n)
{
	double		sel = 1.0;
	double		exponent = 1.0;

	qsort(p, n, sizeof(double), double_cmp);
	for (int t = 0; t < n; t++)
	{
		sel *= pow(p[t], exponent);
		exponent /= 2;
	}
	return sel;
}

/*
 * A tree's estimate in one segment: what its terms' dictionary entries say
 * (remembered per term node: a prefix's terms are read once), and what the
 * evaluator reads of their lists.
 */
typedef struct TermStats
{
	const GqNode *term;
	double		df;				/* a prefix: its terms' sum */
	double		pages;			/* of their lists */
} TermStats;

typedef struct TreeEstimate
{
	GpxSegment *seg;
	GpxEstimate *est;
	TermStats  *terms;
	int			nterms;
} TreeEstimate;

static const TermStats *
term_stats(TreeEstimate *te, const GqNode *term)
{
	GpxSegment *seg = te->seg;
	TermStats  *ts;
	GpxTermRef	ref;

	for (int i = 0; i < te->nterms; i++)
		if (te->terms[i].term == term)
			return &te->terms[i];
	ts = &te->terms[te->nterms++];
	ts->term = term;
	ts->df = ts->pages = 0;
	/* the lookup: the inner nodes and a leaf */
	te->est->pages += seg->hdr->dict_levels + 1;
	if (!term->prefix)
	{
		if (gpx_seg_find(seg, term->lex, term->len, &ref))
		{
			ts->df = ref.df;
			if (ref.external)
				ts->pages = 1 + ref.len / GPX_PAGE_CAPACITY;
			else
				pfree(ref.payload);
		}
	}
	else
	{
		/* every term with the prefix: the leaves they are on, their lists */
		GpxPrefixStats ps;

		gpx_seg_prefix_stats(seg, term->lex, term->len, &ps);
		ts->df = ps.df;
		ts->pages = ps.list_pages;
		te->est->pages += ps.leaves;
	}
	return ts;
}

/* a term's frequency in the segment (the tree's selectivity) */
static double
tree_term_freq(void *arg, const GqNode *term)
{
	TreeEstimate *te = arg;

	return te->seg->ref.ndocs > 0 ? term_stats(te, term)->df / te->seg->ref.ndocs : 0;
}

/* what listing a node's set, or searching it at candidates, reads (query/tsq.c's evaluation) */
typedef struct TreeWork
{
	double		docs;			/* the set's docs, at most (GQ_EST_ALL's way: a complement is all) */
	double		postings;		/* decoded, or met by searches */
	double		pages;			/* of lists */
} TreeWork;

static TreeWork listed(TreeEstimate *te, const GqNode *node, bool upper);

/* a search for n candidates reads at most a block of the list for each */
static TreeWork
term_searched(const TermStats *ts, double n)
{
	TreeWork	w;
	double		skip_pages = ts->df / GPUIDX_EF_BLOCK * 8 / GPX_PAGE_CAPACITY;

	w.docs = Min(ts->df, n);
	w.postings = Min(ts->df, n * GPUIDX_EF_BLOCK);
	w.pages = ts->pages <= 1 ? ts->pages : Min(ts->pages, 1 + skip_pages + n);
	return w;
}

static void
add_work(TreeWork *to, TreeWork w)
{
	to->postings += w.postings;
	to->pages += w.pages;
}

/* searching the node's set at n candidates (restrict_set) */
static TreeWork
searched(TreeEstimate *te, const GqNode *node, bool upper, double n)
{
	TreeWork	w = {0, 0, 0};

	check_stack_depth();
	switch (node->kind)
	{
		case GQ_TERM:
			if (!upper && !node->exact)
				return w;
			return term_searched(term_stats(te, node), n);
		case GQ_NOT:
			return searched(te, node->args[0], !upper, n);
		case GQ_PHRASE:
		case GQ_AND:
		case GQ_OR:
			if (node->kind == GQ_PHRASE && !upper)
				return w;
			for (int i = 0; i < node->nargs; i++)
				add_work(&w, searched(te, node->args[i], upper, n));
			w.docs = n;
			return w;
	}
	return w;
}

/*
 * listing the node's set (eval): an AND lists its operand with the fewest
 * docs and searches the others at those
 */
static TreeWork
listed(TreeEstimate *te, const GqNode *node, bool upper)
{
	TreeWork	w = {0, 0, 0};
	TreeWork	start;
	int			first = -1;

	check_stack_depth();
	switch (node->kind)
	{
		case GQ_TERM:
			if (!upper && !node->exact)
				return w;
			w.docs = w.postings = term_stats(te, node)->df;
			w.pages = term_stats(te, node)->pages;
			return w;
		case GQ_NOT:
			/* its operand's other bound, listed; the complement's docs are counted at the root */
			w = listed(te, node->args[0], !upper);
			w.docs = te->seg->ref.ndocs;
			return w;
		case GQ_OR:
			for (int i = 0; i < node->nargs; i++)
			{
				TreeWork	c = listed(te, node->args[i], upper);

				add_work(&w, c);
				w.docs += c.docs;
			}
			w.docs = Min(w.docs, te->seg->ref.ndocs);
			return w;
		case GQ_PHRASE:
		case GQ_AND:
			if (node->kind == GQ_PHRASE && !upper)
				return w;
			start.docs = te->seg->ref.ndocs;
			for (int i = 0; i < node->nargs; i++)
			{
				TreeWork	c;

				if (node->args[i]->kind == GQ_NOT)
					continue;
				c = listed(te, node->args[i], upper);
				if (first < 0 || c.docs < start.docs)
				{
					start = c;
					first = i;
				}
			}
			if (first < 0)
			{
				/* NOTs alone: each operand listed, the complement of their union */
				for (int i = 0; i < node->nargs; i++)
					add_work(&w, listed(te, node->args[i], upper));
				w.docs = te->seg->ref.ndocs;
				return w;
			}
			w = start;
			for (int i = 0; i < node->nargs; i++)
				if (i != first)
					add_work(&w, searched(te, node->args[i], upper, start.docs));
			return w;
	}
	return w;
}

void
gpx_estimate_tree(Relation index, const GqTree *tree, GpxEstimate *est)
{
	GqIndex    *gq = gq_open(index);
	double		matches = 0;
	bool		needs_all = gq_tree_needs_all(tree);

	estimate_start(gq, est);
	for (uint32 s = 0; s < gq->meta.nsegments && tree->root != NULL; s++)
	{
		GpxSegment *seg = gq_segment(gq, s);
		TreeEstimate te = {seg, est, palloc(Max(tree->nterms, 1) * sizeof(TermStats)), 0};
		double		live = seg->ref.ndocs - seg->ref.ndead;
		TreeWork	w;

		est->docs += live;
		est->pages += 1;
		matches += gq_tree_selectivity(tree, tree_term_freq, &te) * live;
		w = listed(&te, tree->root, true);
		/* the unsure candidates' sure ones, searched for */
		if (tree->recheck)
			add_work(&w, searched(&te, tree->root, false, w.docs));
		est->postings += w.postings;
		est->pages += w.pages;
		/* a complement lists every doc of the segment */
		if (needs_all)
			est->postings += seg->ref.ndocs;
		pfree(te.terms);
	}
	if (tree->root != NULL && gq->meta.pend_entries > 0)
	{
		uint64		sampled;
		uint64		matched;

		gq_pending_tree_sample(gq, tree, PENDING_SAMPLE_PAGES, &sampled, &matched);
		if (sampled > 0)
			matches += (double) matched / sampled * gq->meta.pend_entries;
	}
	est->selectivity = est->docs > 0 ? Min(matches / est->docs, 1.0) : 0;
	est->pages += Min(est->selectivity * est->docs / GPX_DOCMAP_CHUNK,
					  est->docs / GPX_DOCMAP_CHUNK / 64 + 1);
	gq_close(gq);
}

typedef struct TypicalDraw
{
	double		sel;
	double		freq;			/* the sum of its terms' frequencies */
} TypicalDraw;

static int
draw_cmp(const void *x, const void *y)
{
	return double_cmp(&((const TypicalDraw *) x)->sel, &((const TypicalDraw *) y)->sel);
}

/*
 * TYPICAL_DRAWS queries of TYPICAL_WORDS words drawn from a sample of the
 * segment's dictionary, each term as often as documents have it, sorted by
 * selectivity (palloc'd); NULL if the sample holds no term.
 */
static TypicalDraw *
typical_draws(GpxSegment *seg)
{
	uint32		n;
	uint32	   *dfs = gpx_seg_sample_dfs(seg, TYPICAL_LEAVES, &n);
	double	   *cum = palloc((n + 1) * sizeof(double));
	TypicalDraw *draws;
	pg_prng_state rng;

	cum[0] = 0;
	for (uint32 i = 0; i < n; i++)
		cum[i + 1] = cum[i] + dfs[i];
	if (cum[n] <= 0 || seg->ref.ndocs == 0)
	{
		pfree(cum);
		pfree(dfs);
		return NULL;
	}
	draws = palloc(TYPICAL_DRAWS * sizeof(TypicalDraw));
	pg_prng_seed(&rng, UINT64CONST(0x9e3779b97f4a7c15));
	for (int d = 0; d < TYPICAL_DRAWS; d++)
	{
		double		p[TYPICAL_WORDS];
		uint32		picked[TYPICAL_WORDS];
		int			words = 0;

		draws[d].freq = 0;
		/* distinct terms: a few tries, then fewer words */
		for (int tries = 0; words < TYPICAL_WORDS && tries < 4 * TYPICAL_WORDS; tries++)
		{
			double		r = pg_prng_double(&rng) * cum[n];
			uint32		lo = 0;
			uint32		hi = n - 1;
			bool		dup = false;

			/* the first term whose cumulative frequency passes r */
			while (lo < hi)
			{
				uint32		mid = lo + (hi - lo) / 2;

				if (cum[mid + 1] > r)
					hi = mid;
				else
					lo = mid + 1;
			}
			for (int w = 0; w < words; w++)
				dup |= picked[w] == lo;
			if (dup)
				continue;
			picked[words] = lo;
			p[words] = Min((double) dfs[lo] / seg->ref.ndocs, 1.0);
			draws[d].freq += p[words];
			words++;
		}
		draws[d].sel = and_selectivity(p, words);
	}
	qsort(draws, TYPICAL_DRAWS, sizeof(TypicalDraw), draw_cmp);
	pfree(cum);
	pfree(dfs);
	return draws;
}

/*
 * The typical query of a segment: its selectivity and the sum of its terms'
 * frequencies, the median of the draws.  False if the sample holds no term.
 */
static bool
typical_query(GpxSegment *seg, double *sel, double *freq)
{
	TypicalDraw *draws = typical_draws(seg);

	if (draws == NULL)
		return false;
	*sel = draws[TYPICAL_DRAWS / 2].sel;
	*freq = draws[TYPICAL_DRAWS / 2].freq;
	pfree(draws);
	return true;
}

/*
 * The estimate of a query the planner cannot see (a parameter, a generic
 * plan, an outer query's column): the typical query of the largest segment
 * (typical_query), estimated as a known query is (docs/INDEX.md, "Cost
 * model", says why).  The sample is whole dictionary leaves spread over it
 * (terms are in byte order there, so the sample does not depend on their
 * frequencies); the draws come from a fixed seed, so the same index gives
 * the same estimate.  An index without segments gets DEFAULT_MATCH_SEL.
 */
static void
estimate_typical(Relation index, GpxEstimate *est)
{
	GqIndex    *gq = gq_open(index);
	GpxSegment *largest = NULL;
	double		segment_docs = 0;
	double		list_pages = 0;
	double		terms_pages = 0;
	double		postings = 0;
	double		freq;

	estimate_start(gq, est);
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		GpxSegment *seg = gq_segment(gq, s);

		est->docs += seg->ref.ndocs - seg->ref.ndead;
		segment_docs += seg->ref.ndocs - seg->ref.ndead;
		est->pages += 1;
		terms_pages += TYPICAL_WORDS * (seg->hdr->dict_levels + 1);
		list_pages += seg->hdr->streams[GPX_STREAM_LISTS].npages;
		postings += seg->hdr->npostings;
		if (largest == NULL || seg->ref.ndocs > largest->ref.ndocs)
			largest = seg;
	}
	if (largest == NULL || !typical_query(largest, &est->selectivity, &freq))
	{
		est->selectivity = DEFAULT_MATCH_SEL;
		est->postings = DEFAULT_MATCH_SEL * est->docs * 2;
		gq_close(gq);
		return;
	}
	/* its lists: their postings in every segment, and the pages that many postings take */
	est->postings = freq * segment_docs;
	est->pages += terms_pages;
	if (postings > 0)
		est->pages += est->postings * list_pages / postings;
	est->pages += Min(est->selectivity * est->docs / GPX_DOCMAP_CHUNK,
					  est->docs / GPX_DOCMAP_CHUNK / 64 + 1);
	gq_close(gq);
}

/*
 * The planner asks several times about the same clause (its rows, the
 * index path's cost, the custom scans'): the last estimate is kept for the
 * rest of the command.  query: a text query (tsquery false) or a tsquery's
 * bytes; NULL: the typical query's.
 */
typedef struct EstimateCache
{
	bool		valid;
	Oid			index;
	Oid			config;
	LocalTransactionId lxid;
	CommandId	cid;
	bool		tsquery;
	struct varlena *query;
	GpxEstimate est;
} EstimateCache;

static EstimateCache last_estimate;

static void
cached_estimate(Relation index, Oid cfg, bool tsquery, struct varlena *query, GpxEstimate *est)
{
	EstimateCache *c = &last_estimate;
	LocalTransactionId lxid = gpx_my_lxid();
	CommandId	cid = GetCurrentCommandId(false);
	GpxLexemes	terms;

	if (c->valid && c->index == RelationGetRelid(index) && c->config == cfg && c->tsquery == tsquery &&
		c->lxid == lxid && c->cid == cid && (c->query == NULL) == (query == NULL) &&
		(query == NULL ||
		 (VARSIZE_ANY_EXHDR(c->query) == VARSIZE_ANY_EXHDR(query) &&
		  memcmp(VARDATA_ANY(c->query), VARDATA_ANY(query), VARSIZE_ANY_EXHDR(query)) == 0)))
	{
		*est = c->est;
		return;
	}
	c->valid = false;
	if (query == NULL)
		estimate_typical(index, est);
	else if (tsquery)
	{
		GqTree	   *tree = gq_tree_new();

		gq_tree_add_tsquery(tree, (TSQuery) query);
		gpx_estimate_tree(index, tree, est);
	}
	else
	{
		gpx_query_terms(cfg, (text *) query, &terms);
		gpx_estimate(index, &terms, est);
	}
	if (c->query)
		pfree(c->query);
	c->query = NULL;
	if (query != NULL)
	{
		c->query = MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(query));
		memcpy(c->query, query, VARSIZE_ANY(query));
	}
	c->valid = true;
	c->index = RelationGetRelid(index);
	c->config = cfg;
	c->tsquery = tsquery;
	c->lxid = lxid;
	c->cid = cid;
	c->est = *est;
}

static void
estimate_query(Relation index, Oid cfg, text *query, GpxEstimate *est)
{
	cached_estimate(index, cfg, false, (struct varlena *) query, est);
}

/* a tsquery's estimate (a tsvector index: under any configuration) */
static void
estimate_tsquery(Relation index, TSQuery query, GpxEstimate *est)
{
	cached_estimate(index, InvalidOid, true, (struct varlena *) query, est);
}

/* the value "indexed op value" compares with, if the planner knows it */
static Const *
known_value(PlannerInfo *root, Node *clause)
{
	Node	   *right;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return NULL;
	right = estimate_expression_value(root, lsecond(((OpExpr *) clause)->args));
	return IsA(right, Const) ? (Const *) right : NULL;
}

/* is the index clause "tsvector @@ tsquery" (its family's strategy says, not its name)? */
static bool
is_tsquery_clause(RestrictInfo *rinfo, Oid opfamily)
{
	return IsA(rinfo->clause, OpExpr) &&
		GPX_IS_TSQUERY_STRATEGY(get_op_opfamily_strategy(((OpExpr *) rinfo->clause)->opno, opfamily));
}

/* does another gpuidx index of the table answer under cfg (one per configuration)? */
static bool
other_index_answers(IndexOptInfo *info, Oid cfg)
{
	ListCell   *lc;

	foreach(lc, info->rel->indexlist)
	{
		IndexOptInfo *other = lfirst(lc);
		Relation	r;
		bool		answers;

		if (other->indexoid == info->indexoid || other->relam != info->relam)
			continue;
		r = index_open(other->indexoid, NoLock);
		answers = gpx_index_answers(r, cfg);
		index_close(r, NoLock);
		if (answers)
			return true;
	}
	return false;
}

/*
 * The share of the relation's tuples that a selectivity over the index's
 * docs is: a row without a document (a NULL) is not in the index and
 * matches nothing, so a table of many of them matches fewer of its rows
 */
static double
share_of_rows(const GpxEstimate *est, double tuples)
{
	if (tuples <= est->docs || est->docs <= 0)
		return est->selectivity;
	return est->selectivity * est->docs / tuples;
}

/* the query text of "indexed @@& query", if the planner knows it */
static text *
known_query(PlannerInfo *root, Node *clause)
{
	Const	   *c = known_value(root, clause);

	if (c == NULL)
		return NULL;
	if (c->constisnull)
		return cstring_to_text("");
	return DatumGetTextPP(c->constvalue);
}

void
gpx_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *startup, Cost *total, Selectivity *selectivity,
				 double *correlation, double *pages)
{
	IndexOptInfo *info = path->indexinfo;
	Relation	index = index_open(info->indexoid, NoLock);
	Oid			cfg = gpx_current_config();
	GpxLexemes	terms = {0};
	bool		unknown = false;
	int			nknown = 0;
	text	   *single = NULL;
	GqTree	   *tree = NULL;
	GpxEstimate est;
	double		spc_random_page_cost;
	ListCell   *lc;

	*correlation = 0;
	/* no key and no ORDER BY: every row, and NULLs are not indexed */
	if (!gpx_index_answers(index, cfg) || (path->indexclauses == NIL && path->indexorderbys == NIL))
	{
		if (!gpx_index_answers(index, cfg) && !other_index_answers(info, cfg))
			gpx_note_config_passed_over(index, cfg);
		*startup = *total = disable_cost;
		*selectivity = 1.0;
		*pages = info->pages;
		index_close(index, NoLock);
		return;
	}
	foreach(lc, path->indexclauses)
	{
		IndexClause *ic = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		foreach(lc2, ic->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);
			text	   *q;
			GpxLexemes	qt;
			GpxLexemes	u;

			if (is_tsquery_clause(rinfo, info->opfamily[0]))
			{
				Const	   *c = known_value(root, (Node *) rinfo->clause);

				if (c == NULL)
					unknown = true;
				else
				{
					if (tree == NULL)
						tree = gq_tree_new();
					if (c->constisnull)
						gq_tree_add_nothing(tree);
					else
						gq_tree_add_tsquery(tree, DatumGetTSQuery(c->constvalue));
				}
				continue;
			}
			q = known_query(root, (Node *) rinfo->clause);
			if (q == NULL)
			{
				unknown = true;
				continue;
			}
			single = q;
			nknown++;
			gpx_query_terms(cfg, q, &qt);
			gpx_lexemes_union(&terms, &qt, &u);
			terms = u;
		}
	}
	if (tree != NULL && tree->root != NULL && tree->nqueries == 1 && terms.n == 0)
		estimate_tsquery(index, tree->queries[0], &est);
	else if (tree != NULL)
	{
		gq_tree_add_lexemes(tree, &terms);
		gpx_estimate_tree(index, tree, &est);
	}
	else if (nknown == 1)
		estimate_query(index, cfg, single, &est);
	else if (unknown && terms.n == 0)
		estimate_query(index, cfg, NULL, &est);
	else
		gpx_estimate(index, &terms, &est);
	if (terms.n == 0 && !unknown && tree == NULL)
		est.selectivity = path->indexorderbys != NIL ? 1.0 : 0;
	get_tablespace_page_costs(info->reltablespace, &spc_random_page_cost, NULL);
	/* a ranking without a key returns every row, those without a document last */
	*selectivity = path->indexclauses == NIL ? est.selectivity : share_of_rows(&est, info->rel->tuples);
	*pages = est.pages;
	*startup = est.pages * spc_random_page_cost +
		est.postings * POSTING_COST * cpu_operator_cost +
		est.pending_entries * cpu_operator_cost +
		est.selectivity * est.docs * cpu_index_tuple_cost;
	*total = *startup;
	if (path->indexorderbys != NIL)
	{
		/*
		 * Ranked: the top k comes first, then rows one by one, all of them
		 * if the query takes them all.  Without a key, block-max WAND reads
		 * a part of the ranked lists, taken as a tenth of the postings of
		 * all the documents.  With one ("WHERE doc @@& q ORDER BY doc <=> q
		 * LIMIT k", the usual filtered ranking) the ranking is the key's
		 * own work (its lists, priced above, and their frequencies) and
		 * never leaves its matches: nothing more is added.  Priced as the
		 * key plus a tenth of the documents, a filtered ranking cost more
		 * than fetching every match, scoring each row and sorting them
		 * when the typical query has few matches, and a generic plan chose
		 * that: seconds for a query that matches millions.
		 */
		if (path->indexclauses == NIL)
			*startup += 0.1 * est.docs * POSTING_COST * cpu_operator_cost;
		*total = *startup + est.selectivity * est.docs * cpu_index_tuple_cost;
		/* without a key, the rows without a document come last, from a read of the table */
		if (path->indexclauses == NIL)
		{
			Relation	heap = table_open(index->rd_index->indrelid, NoLock);
			double		spc_seq_page_cost;

			get_tablespace_page_costs(info->rel->reltablespace, NULL, &spc_seq_page_cost);
			if (gpx_index_may_miss_rows(heap, index))
				*total += info->rel->pages * spc_seq_page_cost + info->rel->tuples * cpu_tuple_cost;
			table_close(heap, NoLock);
		}
	}
	index_close(index, NoLock);
}

/*
 * The selectivity of "doc @@& query" from a gpuidx index on doc's column
 * under the current configuration, if there is one (query NULL: not known
 * at planning time, the typical query's).  Only the search operator of the
 * index's operator family: another operator naming these estimators may
 * take another type of query.
 */
static bool
index_selectivity(Oid operator, VariableStatData *vardata, text *query, double *sel)
{
	ListCell   *lc;

	if (vardata->rel == NULL)
		return false;
	foreach(lc, vardata->rel->indexlist)
	{
		IndexOptInfo *info = lfirst_node(IndexOptInfo, lc);
		bool		same_key;
		bool		found = false;
		Relation	index;
		Oid			cfg;

		if (info->amcostestimate != gpx_costestimate || info->ncolumns != 1 ||
			get_op_opfamily_strategy(operator, info->opfamily[0]) != GPX_STRATEGY_MATCH)
			continue;
		if (info->indexkeys[0] != 0)
			same_key = IsA(vardata->var, Var) &&
				((Var *) vardata->var)->varattno == info->indexkeys[0];
		else
			same_key = info->indexprs != NIL && equal(linitial(info->indexprs), vardata->var);
		if (!same_key)
			continue;
		index = index_open(info->indexoid, AccessShareLock);
		cfg = gpx_current_config();
		if (gpx_index_answers(index, cfg))
		{
			GpxEstimate est;

			estimate_query(index, cfg, query, &est);
			*sel = share_of_rows(&est, vardata->rel->tuples);
			found = true;
		}
		index_close(index, AccessShareLock);
		if (found)
			return true;
	}
	return false;
}

/*
 * RESTRICT estimator of @@&: the frequencies of a gpuidx index on the same
 * column (the typical query's when the query is not known yet: a
 * parameter, an outer query's column), else a default.
 */
Datum
gpuidx_matchsel(PG_FUNCTION_ARGS)
{
	PlannerInfo *root = (PlannerInfo *) PG_GETARG_POINTER(0);
	Oid			operator = PG_GETARG_OID(1);
	List	   *args = (List *) PG_GETARG_POINTER(2);
	int			varRelid = PG_GETARG_INT32(3);
	VariableStatData vardata;
	Node	   *other;
	bool		varonleft;
	double		sel = DEFAULT_MATCH_SEL;
	text	   *query = NULL;

	if (!get_restriction_variable(root, args, varRelid, &vardata, &other, &varonleft))
		PG_RETURN_FLOAT8(sel);
	if (!varonleft)
	{
		ReleaseVariableStats(vardata);
		PG_RETURN_FLOAT8(sel);
	}
	if (IsA(other, Const))
	{
		if (((Const *) other)->constisnull)
		{
			ReleaseVariableStats(vardata);
			PG_RETURN_FLOAT8(0.0);
		}
		query = DatumGetTextPP(((Const *) other)->constvalue);
	}
	index_selectivity(operator, &vardata, query, &sel);
	ReleaseVariableStats(vardata);
	CLAMP_PROBABILITY(sel);
	PG_RETURN_FLOAT8(sel);
}

/*
 * JOIN estimator of @@&: "doc @@& other.query", the query one per row of
 * the other relation, each the typical query of a gpuidx index on doc's
 * column, as the inner side's parameterized index scan is estimated; else
 * a default.
 */
Datum
gpuidx_matchjoinsel(PG_FUNCTION_ARGS)
{
	PlannerInfo *root = (PlannerInfo *) PG_GETARG_POINTER(0);
	Oid			operator = PG_GETARG_OID(1);
	List	   *args = (List *) PG_GETARG_POINTER(2);
	VariableStatData vardata;
	double		sel = DEFAULT_MATCH_SEL;

	if (list_length(args) != 2)
		PG_RETURN_FLOAT8(sel);
	examine_variable(root, linitial(args), 0, &vardata);
	index_selectivity(operator, &vardata, NULL, &sel);
	ReleaseVariableStats(vardata);
	CLAMP_PROBABILITY(sel);
	PG_RETURN_FLOAT8(sel);
}

/* segments the index has now (the custom scan's startup estimate) */
uint32
gpx_index_segments(Relation index)
{
	GpxMetaPageData *meta = palloc(sizeof(GpxMetaPageData));
	uint32		n;

	gpx_meta_read(index, meta);
	n = meta->nsegments;
	pfree(meta);
	return n;
}

/* ---------------------------------------------------------------------------
 * What the planner learns of a relation's rows from the index (scan/estimates.c)
 */

/* a clause's query as a tree: a tsquery, or the lexemes of a text query ANDed */
static GqTree *
clause_tree(Const *value, bool tsquery)
{
	GqTree	   *tree = gq_tree_new();

	if (value->constisnull)
		gq_tree_add_nothing(tree);
	else if (tsquery)
		gq_tree_add_tsquery(tree, DatumGetTSQuery(value->constvalue));
	else
	{
		GpxLexemes	terms;

		gpx_query_terms(gpx_current_config(), DatumGetTextPP(value->constvalue), &terms);
		if (terms.n == 0)
			gq_tree_add_nothing(tree);
		else
			gq_tree_add_lexemes(tree, &terms);
	}
	return tree;
}

double
gpx_clause_selectivity(Relation index, Const *value, bool tsquery, double tuples)
{
	GpxEstimate est;

	if (value != NULL && tsquery && !value->constisnull)
		estimate_tsquery(index, DatumGetTSQuery(value->constvalue), &est);
	else if (value != NULL && tsquery)
		return 0;
	else
		estimate_query(index, gpx_current_config(),
					   value == NULL ? NULL : value->constisnull ? cstring_to_text("") :
					   DatumGetTextPP(value->constvalue), &est);
	return share_of_rows(&est, tuples);
}

/*
 * Where the k-th of a typical query's matches lies: the mean over the draws
 * of k / (m + 1) of the table for m expected matches spread evenly, all of
 * it for fewer than k.  The mean, not the median query's: a scan for a rare
 * query reads most of the table, and those weigh most in what a plan made
 * for any query costs.
 */
static double
typical_scan_fraction(Relation index, double k)
{
	GqIndex    *gq = gq_open(index);
	GpxSegment *largest = NULL;
	TypicalDraw *draws;
	double		docs = gq->meta.pend_entries;
	double		sum = 0;

	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		GpxSegment *seg = gq_segment(gq, s);

		docs += seg->ref.ndocs - seg->ref.ndead;
		if (largest == NULL || seg->ref.ndocs > largest->ref.ndocs)
			largest = seg;
	}
	draws = largest ? typical_draws(largest) : NULL;
	if (draws == NULL)
	{
		gq_close(gq);
		return Min(k / (DEFAULT_MATCH_SEL * docs + 1), 1.0);
	}
	for (int d = 0; d < TYPICAL_DRAWS; d++)
	{
		double		m = draws[d].sel * docs;

		sum += m < k ? 1.0 : k / (m + 1);
	}
	pfree(draws);
	gq_close(gq);
	return sum / TYPICAL_DRAWS;
}

double
gpx_scan_fraction(Relation index, Const *value, bool tsquery, double k, BlockNumber heap_pages,
				  double tuples, double max_fraction)
{
	GqIndex    *gq;
	BlockNumber block;
	BlockNumber max_block;
	double		win;
	bool		found;

	if (value == NULL)
		return typical_scan_fraction(index, k);
	if (heap_pages == 0)
		return 1.0;
	/* the blocks that matter, and about twice the docs they hold (the segments' first) */
	max_block = (BlockNumber) Min(ceil(max_fraction * heap_pages), (double) heap_pages - 1);
	win = Max(2.0 * (max_block + 1) * tuples / heap_pages, 256.0);
	gq = gq_open(index);
	found = gq_kth_match_block(gq, clause_tree(value, tsquery), (uint32) Min(ceil(k), (double) PG_UINT32_MAX),
							   max_block, (uint32) Min(win, (double) Max(gq_tree_window, 256)), &block);
	gq_close(gq);
	/* past the blocks that matter: the whole table, as far as the caller can tell */
	if (!found)
		return 1.0;
	return Min(((double) block + 1) / heap_pages, 1.0);
}
