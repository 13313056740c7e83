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

/* a term's document frequency in a segment, and what looking it up and reading its list cost */
static uint32
term_df(GpxSegment *seg, const char *lex, int len, GpxEstimate *est)
{
	GpxTermRef	ref;

	est->pages += seg->hdr->dict_levels + 1;
	if (!gpx_seg_find(seg, lex, len, &ref))
		return 0;
	est->postings += ref.df;
	if (ref.external)
		est->pages += 1 + ref.len / GPX_PAGE_CAPACITY;
	else
		pfree(ref.payload);
	return ref.df;
}

void
gpx_estimate(Relation index, const GpxLexemes *terms, GpxEstimate *est)
{
	GqIndex    *gq = gq_open(index);
	double	   *df = palloc0(Max(terms->n, 1) * sizeof(double));
	double		segment_docs = 0;
	double		total = 0;
	double		matches = 0;

	estimate_start(gq, est);
	for (uint32 s = 0; s < gq->meta.nsegments; s++)
	{
		GpxSegment *seg = gq_segment(gq, s);

		est->docs += seg->ref.ndocs - seg->ref.ndead;
		segment_docs += seg->ref.ndocs - seg->ref.ndead;
		total += seg->ref.ndocs;
		est->pages += 1;
		for (int t = 0; t < terms->n; t++)
			df[t] += term_df(seg, terms->lex[t], terms->len[t], est);
	}
	if (terms->n > 0 && total > 0)
	{
		for (int t = 0; t < terms->n; t++)
			df[t] /= total;
		matches = and_selectivity(df, terms->n) * segment_docs;
	}

	/*
	 * The pending area's matches, from a sample of its first pages (all of
	 * it when small): its rows count as much as the segments' (an index
	 * whose rows are all pending is estimated from them alone).
	 */
	if (terms->n > 0 && gq->meta.pend_entries > 0)
	{
		uint64		sampled;
		uint64		matched;

		gq_pending_sample(gq, terms, PENDING_SAMPLE_PAGES, &sampled, &matched);
		if (sampled > 0)
			matches += (double) matched / sampled * gq->meta.pend_entries;
	}
	est->selectivity = est->docs > 0 ? matches / est->docs : 0;
	/* the doc map chunks the results touch */
	est->pages += Min(est->selectivity * est->docs / GPX_DOCMAP_CHUNK,
					  est->docs / GPX_DOCMAP_CHUNK / 64 + 1);
	pfree(df);
	gq_close(gq);
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

/* a segment's side of a tree's estimate: its terms' frequencies, and what reading them costs */
typedef struct TreeEstimate
{
	GpxSegment *seg;
	GpxEstimate *est;
} TreeEstimate;

/*
 * A term's frequency in the segment; a prefix's is the sum of its terms'
 * (every one of their lists is read and unioned: a short prefix reads many)
 */
static double
tree_term_freq(void *arg, const GqNode *term)
{
	TreeEstimate *te = arg;
	GpxSegment *seg = te->seg;
	double		df = 0;

	if (!term->prefix)
		df = term_df(seg, term->lex, term->len, te->est);
	else
	{
		GpxDictIter it;
		uint32		leaf = PG_UINT32_MAX;

		te->est->pages += seg->hdr->dict_levels + 1;
		gpx_dict_iter_init(&it, seg);
		gpx_dict_iter_seek(&it, term->lex, term->len);
		while (gpx_dict_iter_next_prefixed(&it, term->lex, term->len))
		{
			df += it.df;
			if (it.external)
				te->est->pages += 1 + it.list_len / GPX_PAGE_CAPACITY;
			if (it.leaf_no != leaf)
				te->est->pages += 1;
			leaf = it.leaf_no;
		}
		gpx_dict_iter_end(&it);
		te->est->postings += df;
	}
	return seg->ref.ndocs > 0 ? df / seg->ref.ndocs : 0;
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
		TreeEstimate te = {seg, est};
		double		live = seg->ref.ndocs - seg->ref.ndead;

		est->docs += live;
		est->pages += 1;
		matches += gq_tree_selectivity(tree, tree_term_freq, &te) * live;
		/* a complement lists every doc of the segment */
		if (needs_all)
			est->postings += seg->ref.ndocs;
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
 * The typical query of a segment: its selectivity and the sum of its terms'
 * frequencies, the median of TYPICAL_DRAWS queries of TYPICAL_WORDS words
 * drawn from a sample of the segment's dictionary, each term as often as
 * documents have it.  False if the sample holds no term.
 */
static bool
typical_query(GpxSegment *seg, double *sel, double *freq)
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
		return false;
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
	*sel = draws[TYPICAL_DRAWS / 2].sel;
	*freq = draws[TYPICAL_DRAWS / 2].freq;
	pfree(draws);
	pfree(cum);
	pfree(dfs);
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
 * The planner asks twice about the same clause (its selectivity, then the
 * index path's cost): the last estimate is kept for the rest of the
 * command.  query NULL: the typical query's.
 */
typedef struct EstimateCache
{
	bool		valid;
	Oid			index;
	Oid			config;
	LocalTransactionId lxid;
	CommandId	cid;
	text	   *query;
	GpxEstimate est;
} EstimateCache;

static EstimateCache last_estimate;

static void
estimate_query(Relation index, Oid cfg, text *query, GpxEstimate *est)
{
	EstimateCache *c = &last_estimate;
	LocalTransactionId lxid = gpx_my_lxid();
	CommandId	cid = GetCurrentCommandId(false);
	GpxLexemes	terms;

	if (c->valid && c->index == RelationGetRelid(index) && c->config == cfg &&
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
	else
	{
		gpx_query_terms(cfg, query, &terms);
		gpx_estimate(index, &terms, est);
	}
	if (c->query)
		pfree(c->query);
	c->query = NULL;
	if (query != NULL)
	{
		c->query = (text *) MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(query));
		memcpy(c->query, query, VARSIZE_ANY(query));
	}
	c->valid = true;
	c->index = RelationGetRelid(index);
	c->config = cfg;
	c->lxid = lxid;
	c->cid = cid;
	c->est = *est;
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
	if (tree != NULL)
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
	*selectivity = est.selectivity;
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
			*sel = est.selectivity;
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
