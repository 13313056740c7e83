/*
 * match.c
 *	  The @@& operator, row by row: "the document contains every lexeme of
 *	  the query", for text documents (tokenized under gpuidx.text_config)
 *	  and tsvector documents (used as they are).  An index scan gives the
 *	  same rows; this is also its recheck.
 *
 * Queries' lexemes are cached per call site (a few thousand of them, so a
 * join of documents with a table of queries parses each query once).  So
 * is the last document: when the same document comes again (the outer side
 * of a nested loop matched against many queries) it is not parsed again.
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "gpuidx.h"
#include "text/tokenize.h"

GPUIDX_FUNCTION(gpuidx_text_match);
GPUIDX_FUNCTION(gpuidx_tsvector_match);

/* documents up to this size are kept for the next call */
#define CACHED_DOC_MAX (1024 * 1024)
/* queries shorter than this are kept, up to QUERY_CACHE_SIZE of them */
#define CACHED_QUERY_MAX 256
#define QUERY_CACHE_SIZE 4096

typedef struct QueryEntry
{
	char		key[CACHED_QUERY_MAX];	/* the query text, NUL-terminated */
	GpxLexemes	q;
} QueryEntry;

typedef struct MatchCache
{
	MemoryContext query_cxt;	/* the query table and lexemes */
	MemoryContext doc_cxt;
	char	   *setting;		/* gpuidx.text_config the cache is for */
	Oid			cfg;
	HTAB	   *queries;
	text	   *query;			/* the last query, or NULL */
	GpxLexemes	q;
	struct varlena *doc;		/* the last document as it came (maybe
								 * compressed or a TOAST pointer), or NULL */
	GpxLexemes	d;				/* its lexemes */
} MatchCache;

static bool
same_text(const text *a, const text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/*
 * The same value, compared as it is stored (compressed, or a pointer into
 * the TOAST table) rather than detoasted, which costs far more.  A TOAST
 * pointer names one value for as long as a snapshot that saw it runs, so
 * within the statement (the cache's life) equal pointers are equal values.
 * Pointers to values in memory are detoasted first.
 */
static bool
same_raw(const struct varlena *a, const struct varlena *b)
{
	return VARSIZE_ANY(a) == VARSIZE_ANY(b) && memcmp(a, b, VARSIZE_ANY(a)) == 0;
}

static text *
copy_text(MemoryContext cxt, const text *t)
{
	Size		len = VARSIZE_ANY_EXHDR(t);
	text	   *copy = MemoryContextAlloc(cxt, len + VARHDRSZ);

	SET_VARSIZE(copy, len + VARHDRSZ);
	memcpy(VARDATA(copy), VARDATA_ANY(t), len);
	return copy;
}

static void
reset_queries(MatchCache *c)
{
	HASHCTL		ctl;

	MemoryContextReset(c->query_cxt);
	ctl.keysize = CACHED_QUERY_MAX;
	ctl.entrysize = sizeof(QueryEntry);
	ctl.hcxt = c->query_cxt;
	c->queries = hash_create("gpuidx @@& queries", 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	c->query = NULL;
}

/* the lexemes of query, from the cache or parsed */
static void
query_lexemes(MatchCache *c, text *query)
{
	int			len = VARSIZE_ANY_EXHDR(query);
	char		key[CACHED_QUERY_MAX];
	QueryEntry *e;
	bool		found;
	MemoryContext old;

	if (c->query != NULL && same_text(c->query, query))
		return;
	if (len >= CACHED_QUERY_MAX)
	{
		/* too long to keep among the others: the last one only */
		if (hash_get_num_entries(c->queries) > 0 || c->query != NULL)
			reset_queries(c);
		gpx_note_query_syntax(VARDATA_ANY(query), len);
		old = MemoryContextSwitchTo(c->query_cxt);
		c->query = copy_text(c->query_cxt, query);
		gpx_lexemes_of_text(c->cfg, VARDATA_ANY(query), len, &c->q);
		MemoryContextSwitchTo(old);
		return;
	}
	memcpy(key, VARDATA_ANY(query), len);
	key[len] = '\0';
	e = hash_search(c->queries, key, HASH_FIND, NULL);
	if (e == NULL)
	{
		if (hash_get_num_entries(c->queries) >= QUERY_CACHE_SIZE)
			reset_queries(c);
		e = hash_search(c->queries, key, HASH_ENTER, &found);
		gpx_note_query_syntax(key, len);
		old = MemoryContextSwitchTo(c->query_cxt);
		gpx_lexemes_of_text(c->cfg, key, len, &e->q);
		MemoryContextSwitchTo(old);
	}
	c->q = e->q;
	c->query = NULL;
}

static MatchCache *
get_cache(FunctionCallInfo fcinfo, text *query)
{
	MatchCache *c = fcinfo->flinfo->fn_extra;

	if (c == NULL)
	{
		c = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(MatchCache));
		c->query_cxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt, "gpuidx @@& queries",
											 ALLOCSET_DEFAULT_SIZES);
		c->doc_cxt = AllocSetContextCreate(fcinfo->flinfo->fn_mcxt, "gpuidx @@& document",
										   ALLOCSET_DEFAULT_SIZES);
		fcinfo->flinfo->fn_extra = c;
	}
	if (c->setting == NULL || strcmp(c->setting, gpx_text_config) != 0)
	{
		Oid			cfg = gpx_current_config();

		if (c->setting)
			pfree(c->setting);
		c->setting = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt, gpx_text_config);
		c->cfg = cfg;
		reset_queries(c);
		MemoryContextReset(c->doc_cxt);
		c->doc = NULL;
	}
	query_lexemes(c, query);
	return c;
}

/* a document too big to keep: parse it, marking the query's lexemes it has */
typedef struct Marks
{
	const GpxLexemes *q;
	bool	   *found;
	int			nfound;
} Marks;

static void
mark_lexeme(void *arg, const char *lex, int len, uint32 pos)
{
	Marks	   *m = arg;
	int			lo = 0;
	int			hi = m->q->n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = gpx_lexeme_cmp(m->q->lex[mid], m->q->len[mid], lex, len);

		if (c == 0)
		{
			if (!m->found[mid])
			{
				m->found[mid] = true;
				m->nfound++;
			}
			return;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
}

Datum
gpuidx_text_match(PG_FUNCTION_ARGS)
{
	text	   *query = PG_GETARG_TEXT_PP(1);
	MatchCache *c = get_cache(fcinfo, query);
	struct varlena *raw = (struct varlena *) PG_GETARG_POINTER(0);
	text	   *doc;
	Marks		m;

	if (c->q.n == 0)
		PG_RETURN_BOOL(false);
	if (VARATT_IS_EXTERNAL(raw) && !VARATT_IS_EXTERNAL_ONDISK(raw))
		raw = (struct varlena *) PG_GETARG_TEXT_PP(0);
	if (c->doc != NULL && same_raw(c->doc, raw))
		PG_RETURN_BOOL(gpx_lexemes_contain(&c->d, &c->q));

	MemoryContextReset(c->doc_cxt);
	c->doc = NULL;
	doc = PG_GETARG_TEXT_PP(0);
	if (VARSIZE_ANY_EXHDR(doc) <= CACHED_DOC_MAX)
	{
		/* kept as a sorted set, in case the same document comes next */
		MemoryContext old = MemoryContextSwitchTo(c->doc_cxt);

		gpx_lexemes_of_text(c->cfg, VARDATA_ANY(doc), VARSIZE_ANY_EXHDR(doc), &c->d);
		c->doc = palloc(VARSIZE_ANY(raw));
		memcpy(c->doc, raw, VARSIZE_ANY(raw));
		MemoryContextSwitchTo(old);
		PG_RETURN_BOOL(gpx_lexemes_contain(&c->d, &c->q));
	}

	/* a big document: parsed piece by piece, only the query's lexemes kept */
	m.q = &c->q;
	m.found = palloc0(c->q.n * sizeof(bool));
	m.nfound = 0;
	gpx_tokenize(c->cfg, VARDATA_ANY(doc), VARSIZE_ANY_EXHDR(doc), mark_lexeme, &m);
	pfree(m.found);
	PG_RETURN_BOOL(m.nfound == c->q.n);
}

Datum
gpuidx_tsvector_match(PG_FUNCTION_ARGS)
{
	text	   *query = PG_GETARG_TEXT_PP(1);
	MatchCache *c = get_cache(fcinfo, query);
	TSVector	tsv;

	if (c->q.n == 0)
		PG_RETURN_BOOL(false);
	tsv = PG_GETARG_TSVECTOR(0);
	PG_RETURN_BOOL(gpx_tsvector_contains(tsv, &c->q));
}
