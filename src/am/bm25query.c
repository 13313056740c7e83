/*
 * bm25query.c
 *	  Ranking with the statistics of a whole collection (docs/SCALING.md).
 *
 * A table split over servers (postgres_fdw shards, each with its gpuidx
 * index) cannot rank with each shard's own N, avgdl and df: a score from
 * one shard would not compare with another's.  A bm25query carries
 * everything a score depends on besides the document: the text search
 * configuration of text documents, k1 and b, N and the sum of the
 * documents' lengths, and each query lexeme with its document frequency,
 * summed over the shards.  A shard's index ranks its rows with them, so
 * every shard scores as one index of all their rows would, and the
 * coordinator's merge of the shards' best rows is that index's top k.
 *
 * Its scoring functions depend on nothing else, so they are IMMUTABLE (as
 * to_tsvector(regconfig, text) is), which postgres_fdw requires of what
 * it sends to a shard: ORDER BY doc <=> bm25query runs there.
 *
 * Text form (canonical: lexemes sorted bytewise and distinct, the
 * configuration schema-qualified, numbers as float8 and int8 print them):
 *
 *	 config=pg_catalog.english k1=1.2 b=0.75 documents=1000 length=5120 terms='databas':40 'gpu':12
 *
 * The statistics come from gpuidx_term_stats(index) on each shard, one row
 * per lexeme and one (lexeme NULL) with the totals; gpuidx_bm25query(query,
 * relation) sums what a relation of such rows holds (the shards' rows
 * through foreign tables, or a materialized copy of them).
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_ts_config.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "tsearch/ts_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "gpuidx.h"
#include "am/gpuidx_am.h"
#include "am/rank.h"
#include "query/rank.h"
#include "query/tsq.h"
#include "rank/bm25.h"

#define MAX_LEXEME_LEN 2046		/* a tsvector's longest lexeme */

/* ---------------------------------------------------------------------------
 * Text form
 */
static void
syntax_error(const char *input, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type bm25query: \"%s\"", input),
			 errdetail("%s", detail),
			 errhint("The form is: config=pg_catalog.english k1=1.2 b=0.75 documents=N length=L "
					 "terms='lexeme':df ...; gpuidx_bm25query(query, statistics) makes one.")));
}

/* "name=" at *p: past it */
static void
expect_field(const char **p, const char *name, const char *input)
{
	int			n = strlen(name);

	if (strncmp(*p, name, n) != 0 || (*p)[n] != '=')
		syntax_error(input, psprintf("\"%s=\" expected at \"%.20s\".", name, *p));
	*p += n + 1;
}

/* the word at *p, up to a space or the end: a copy, *p past it and one space */
static char *
take_word(const char **p, const char *input)
{
	const char *s = *p;
	const char *e = s;

	while (*e && *e != ' ')
		e++;
	if (e == s)
		syntax_error(input, "a value is missing.");
	*p = *e ? e + 1 : e;
	return pnstrdup(s, e - s);
}

static uint64
take_count(const char **p, const char *input, const char *what)
{
	char	   *w = take_word(p, input);
	char	   *end;
	uint64		v;

	errno = 0;
	v = strtou64(w, &end, 10);
	if (errno != 0 || *end != '\0' || w[0] < '0' || w[0] > '9' || v > (uint64) PG_INT64_MAX)
		syntax_error(input, psprintf("%s must be a whole number from 0 to %lld.", what,
									 (long long) PG_INT64_MAX));
	return v;
}

static double
take_real(const char **p, const char *input, const char *what, double lo, double hi)
{
	char	   *w = take_word(p, input);
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(w, &end);
	if (errno != 0 || *end != '\0' || isnan(v) || v < lo || v > hi)
		syntax_error(input, psprintf("%s must be a number from %g to %g.", what, lo, hi));
	return v;
}

typedef struct SortedTerm
{
	const char *lex;
	int			len;
	uint64		df;
} SortedTerm;

static int
sorted_term_cmp(const void *a, const void *b)
{
	const SortedTerm *x = a;
	const SortedTerm *y = b;

	return gpx_lexeme_cmp(x->lex, x->len, y->lex, y->len);
}

/* lexemes and their dfs into q's arrays, sorted; ERROR on a lexeme given twice */
static void
set_terms(GpxBm25Query *q, SortedTerm *t, int n, const char *input)
{
	if (n > 1)
		qsort(t, n, sizeof(SortedTerm), sorted_term_cmp);
	q->terms.n = n;
	q->terms.lex = palloc(Max(n, 1) * sizeof(char *));
	q->terms.len = palloc(Max(n, 1) * sizeof(int));
	q->terms.tf = NULL;
	q->terms.dl = 0;
	q->df = palloc(Max(n, 1) * sizeof(uint64));
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && sorted_term_cmp(&t[i - 1], &t[i]) == 0)
			syntax_error(input, psprintf("lexeme \"%.*s\" is given twice.", t[i].len, t[i].lex));
		q->terms.lex[i] = t[i].lex;
		q->terms.len[i] = t[i].len;
		q->df[i] = t[i].df;
	}
}

static void
parse_bm25query(const char *input, GpxBm25Query *q)
{
	const char *p = input;
	char	   *config;
	SortedTerm *t = NULL;
	int			n = 0;
	int			cap = 0;

	expect_field(&p, "config", input);
	config = take_word(&p, input);
	/* the configuration's name, as regconfig reads it (an unknown one is an ERROR) */
	q->config = DatumGetObjectId(DirectFunctionCall1(regconfigin, CStringGetDatum(config)));
	expect_field(&p, "k1", input);
	q->k1 = take_real(&p, input, "k1", 0.0, 1000.0);
	expect_field(&p, "b", input);
	q->b = take_real(&p, input, "b", 0.0, 1.0);
	expect_field(&p, "documents", input);
	q->ndocs = take_count(&p, input, "documents");
	expect_field(&p, "length", input);
	q->length = take_count(&p, input, "length");
	expect_field(&p, "terms", input);
	while (*p)
	{
		StringInfoData lex;
		const char *start;
		char	   *end;

		if (*p != '\'')
			syntax_error(input, psprintf("a quoted lexeme expected at \"%.20s\".", p));
		initStringInfo(&lex);
		for (p++;; p++)
		{
			if (*p == '\0')
				syntax_error(input, "a lexeme's closing quote is missing.");
			if (*p == '\'')
			{
				if (p[1] != '\'')
					break;
				p++;
			}
			appendStringInfoChar(&lex, *p);
		}
		p++;
		if (lex.len == 0 || lex.len > MAX_LEXEME_LEN)
			syntax_error(input, psprintf("a lexeme is 1 to %d bytes long.", MAX_LEXEME_LEN));
		if (*p++ != ':')
			syntax_error(input, "a lexeme is followed by \":\" and its document frequency.");
		start = p;
		while (*p >= '0' && *p <= '9')
			p++;
		errno = 0;
		if (p == start)
			syntax_error(input, "a lexeme's document frequency is missing.");
		if (n == cap)
		{
			cap = Max(cap * 2, 8);
			t = t ? repalloc(t, cap * sizeof(SortedTerm)) : palloc(cap * sizeof(SortedTerm));
		}
		t[n].lex = lex.data;
		t[n].len = lex.len;
		t[n].df = strtou64(start, &end, 10);
		if (errno != 0 || end != p || t[n].df > q->ndocs)
			syntax_error(input, psprintf("lexeme \"%s\" has a document frequency above the documents, %llu.",
										 lex.data, (unsigned long long) q->ndocs));
		n++;
		if (*p == ' ' && p[1] != '\0')
			p++;
		else if (*p != '\0')
			syntax_error(input, psprintf("a space expected at \"%.20s\".", p));
	}
	set_terms(q, t, n, input);
}

static char *
format_bm25query(const GpxBm25Query *q)
{
	HeapTuple	tup = SearchSysCache1(TSCONFIGOID, ObjectIdGetDatum(q->config));
	Form_pg_ts_config cfg;
	StringInfoData s;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("text search configuration %u does not exist", q->config)));
	cfg = (Form_pg_ts_config) GETSTRUCT(tup);
	initStringInfo(&s);
	/* schema-qualified, so that a server with another search_path (a shard's) reads the same one */
	appendStringInfo(&s, "config=%s", quote_qualified_identifier(get_namespace_name(cfg->cfgnamespace),
																  NameStr(cfg->cfgname)));
	ReleaseSysCache(tup);
	appendStringInfo(&s, " k1=%s b=%s documents=%llu length=%llu terms=",
					 float8out_internal(q->k1), float8out_internal(q->b),
					 (unsigned long long) q->ndocs, (unsigned long long) q->length);
	for (int i = 0; i < q->terms.n; i++)
	{
		if (i > 0)
			appendStringInfoChar(&s, ' ');
		appendStringInfoChar(&s, '\'');
		for (int c = 0; c < q->terms.len[i]; c++)
		{
			if (q->terms.lex[i][c] == '\'')
				appendStringInfoChar(&s, '\'');
			appendStringInfoChar(&s, q->terms.lex[i][c]);
		}
		appendStringInfo(&s, "':%llu", (unsigned long long) q->df[i]);
	}
	return s.data;
}

GPUIDX_FUNCTION(bm25query_in);
Datum
bm25query_in(PG_FUNCTION_ARGS)
{
	GpxBm25Query q;

	parse_bm25query(PG_GETARG_CSTRING(0), &q);
	PG_RETURN_TEXT_P(cstring_to_text(format_bm25query(&q)));
}

GPUIDX_FUNCTION(bm25query_out);
Datum
bm25query_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(text_to_cstring(PG_GETARG_TEXT_PP(0)));
}

GPUIDX_FUNCTION(bm25query_recv);
Datum
bm25query_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	char	   *s = pq_getmsgtext(buf, buf->len - buf->cursor, NULL);
	GpxBm25Query q;

	parse_bm25query(s, &q);
	PG_RETURN_TEXT_P(cstring_to_text(format_bm25query(&q)));
}

GPUIDX_FUNCTION(bm25query_send);
Datum
bm25query_send(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendtext(&buf, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

void
gpx_bm25query_read(Datum value, GpxBm25Query *q)
{
	parse_bm25query(text_to_cstring(DatumGetTextPP(value)), q);
}

/* ---------------------------------------------------------------------------
 * Scoring rows: the query read once per expression
 */
typedef struct Bm25QueryCache
{
	text	   *value;
	GpxBm25Query q;
	double	   *idf;
	gpx_rank_query rq;
} Bm25QueryCache;

static Bm25QueryCache *
query_cache(FunctionCallInfo fcinfo)
{
	text	   *value = PG_GETARG_TEXT_PP(1);
	Bm25QueryCache *c = fcinfo->flinfo->fn_extra;
	MemoryContext old;

	if (c != NULL && VARSIZE_ANY(c->value) == VARSIZE_ANY(value) &&
		memcmp(c->value, value, VARSIZE_ANY(value)) == 0)
		return c;
	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	c = palloc0(sizeof(Bm25QueryCache));
	c->value = (text *) pg_detoast_datum_copy((struct varlena *) value);
	gpx_bm25query_read(PointerGetDatum(c->value), &c->q);
	c->idf = palloc(Max(c->q.terms.n, 1) * sizeof(double));
	for (int i = 0; i < c->q.terms.n; i++)
		c->idf[i] = gpx_bm25_idf((double) c->q.ndocs, (double) c->q.df[i]);
	c->rq.nterms = c->q.terms.n;
	c->rq.idf = c->idf;
	c->rq.k1 = c->q.k1;
	c->rq.b = c->q.b;
	c->rq.avgdl = gq_rank_avgdl(c->q.ndocs, c->q.length);
	MemoryContextSwitchTo(old);
	fcinfo->flinfo->fn_extra = c;
	return c;
}

static double
text_score(FunctionCallInfo fcinfo)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	Bm25QueryCache *c = query_cache(fcinfo);
	GpxLexemes	lex;

	gpx_lexemes_of_text(c->q.config, VARDATA_ANY(doc), VARSIZE_ANY_EXHDR(doc), &lex);
	return gpx_score_lexemes(&c->rq, &c->q.terms, &lex);
}

static double
tsvector_score(FunctionCallInfo fcinfo)
{
	TSVector	doc = PG_GETARG_TSVECTOR(0);
	Bm25QueryCache *c = query_cache(fcinfo);
	GpxLexemes	lex;

	gpx_lexemes_of_tsvector(doc, &lex);
	return gpx_score_lexemes(&c->rq, &c->q.terms, &lex);
}

GPUIDX_FUNCTION(gpuidx_bm25q_text);
Datum
gpuidx_bm25q_text(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(text_score(fcinfo));
}

GPUIDX_FUNCTION(gpuidx_bm25q_tsvector);
Datum
gpuidx_bm25q_tsvector(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(tsvector_score(fcinfo));
}

GPUIDX_FUNCTION(gpuidx_bm25q_distance_text);
Datum
gpuidx_bm25q_distance_text(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(gpx_rank_distance(text_score(fcinfo)));
}

GPUIDX_FUNCTION(gpuidx_bm25q_distance_tsvector);
Datum
gpuidx_bm25q_distance_tsvector(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(gpx_rank_distance(tsvector_score(fcinfo)));
}

/* ---------------------------------------------------------------------------
 * A shard's statistics: every lexeme of the index with its document
 * frequency, then the totals (lexeme NULL), as ranking counts them
 */
typedef struct TermRows
{
	Tuplestorestate *store;
	TupleDesc	desc;
} TermRows;

static void
put_term(void *arg, const char *term, int len, uint64 df)
{
	TermRows   *rows = arg;
	Datum		values[6] = {0};
	bool		nulls[6] = {false, false, true, true, true, true};

	values[0] = PointerGetDatum(cstring_to_text_with_len(term, len));
	values[1] = Int64GetDatum((int64) df);
	tuplestore_putvalues(rows->store, rows->desc, values, nulls);
}

GPUIDX_FUNCTION(gpuidx_term_stats);
Datum
gpuidx_term_stats(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index;
	GqIndex    *gq;
	TermRows	rows;
	uint64		ndocs;
	uint64		length;
	double		k1;
	double		b;
	Datum		values[6];
	bool		nulls[6] = {true, false, false, false, false, false};

	gpx_check_index_oid(indexoid);
	InitMaterializedSRF(fcinfo, 0);
	index = index_open(indexoid, AccessShareLock);
	gpx_check_index(index);
	gpx_check_index_read(index);
	gq = gq_open(index);
	gq_rank_require(gq);
	rows.store = rsinfo->setResult;
	rows.desc = rsinfo->setDesc;
	gq_term_dfs(gq, put_term, &rows);
	gq_rank_sums(gq, &ndocs, &length);
	gpx_index_bm25_params(index, &k1, &b);
	values[0] = (Datum) 0;
	values[1] = Int64GetDatum((int64) ndocs);
	values[2] = Int64GetDatum((int64) length);
	/* a text index's configuration; a tsvector index has none (the query's is the current one) */
	if (gpx_index_info(index)->kind == GPX_KIND_TEXT)
		values[3] = ObjectIdGetDatum(gpx_index_config(index));
	else
		nulls[3] = true;
	values[4] = Float8GetDatum(k1);
	values[5] = Float8GetDatum(b);
	tuplestore_putvalues(rows.store, rows.desc, values, nulls);
	gq_close(gq);
	index_close(index, AccessShareLock);
	return (Datum) 0;
}

/* ---------------------------------------------------------------------------
 * The coordinator: a query with the statistics a relation of
 * gpuidx_term_stats rows sums to
 */
static Datum
make_bm25query(const GpxLexemes *words, bool words_made, Datum query_text, Oid stats)
{
	char	   *name = get_rel_name(stats);
	char	   *relname;
	MemoryContext caller = CurrentMemoryContext;
	GpxBm25Query q = {0};
	bool		have_totals = false;
	bool		have_config = false;
	Oid			argtypes[1] = {TEXTARRAYOID};
	Datum		args[1];
	Datum	   *elems;
	int			ret;

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", stats)));
	relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(stats)), name);
	SPI_connect();
	/* the totals: one row a shard (or their sum); they must agree on the parameters */
	ret = SPI_execute(psprintf("SELECT documents, length, config, k1, b FROM %s WHERE lexeme IS NULL", relname),
					  true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(ret));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		n_docs,
					n_len,
					n_cfg,
					n_k1,
					n_b;
		int64		docs = DatumGetInt64(SPI_getbinval(tup, desc, 1, &n_docs));
		int64		len = DatumGetInt64(SPI_getbinval(tup, desc, 2, &n_len));
		Oid			cfg = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &n_cfg));
		double		k1 = DatumGetFloat8(SPI_getbinval(tup, desc, 4, &n_k1));
		double		b = DatumGetFloat8(SPI_getbinval(tup, desc, 5, &n_b));

		if (n_docs || n_len || n_k1 || n_b || docs < 0 || len < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("a totals row of \"%s\" lacks documents, length, k1 or b", relname)));
		if (have_totals && (k1 != q.k1 || b != q.b || n_cfg == have_config || (!n_cfg && cfg != q.config)))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("the shards in \"%s\" rank with different parameters", relname),
					 errdetail("Every shard's index needs the same k1, b and text search configuration.")));
		have_totals = true;
		have_config = !n_cfg;
		q.config = n_cfg ? InvalidOid : cfg;
		q.k1 = k1;
		q.b = b;
		q.ndocs += (uint64) docs;
		q.length += (uint64) len;
	}
	if (!have_totals)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("\"%s\" holds no totals row (lexeme NULL)", relname),
				 errhint("It should hold gpuidx_term_stats(index) of every shard.")));

	/* the query's lexemes: under the text indexes' configuration, else the current one */
	if (!OidIsValid(q.config))
		q.config = gpx_current_config();
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		if (!words_made)
		{
			text	   *t = DatumGetTextPP(query_text);

			gpx_lexemes_of_text(q.config, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &q.terms);
		}
		else
			q.terms = *words;
		q.df = palloc0(Max(q.terms.n, 1) * sizeof(uint64));
		MemoryContextSwitchTo(spi);
	}
	elems = palloc(Max(q.terms.n, 1) * sizeof(Datum));
	for (int i = 0; i < q.terms.n; i++)
		elems[i] = PointerGetDatum(cstring_to_text_with_len(q.terms.lex[i], q.terms.len[i]));
	args[0] = PointerGetDatum(construct_array(elems, q.terms.n, TEXTOID, -1, false, TYPALIGN_INT));
	ret = SPI_execute_with_args(psprintf("SELECT lexeme, documents FROM %s WHERE lexeme = ANY ($1)", relname),
								1, argtypes, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(ret));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		bool		n_lex,
					n_df;
		text	   *lex = DatumGetTextPP(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &n_lex));
		int64		df = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &n_df));
		int			lo = 0;
		int			hi = q.terms.n - 1;

		if (n_df || df < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("a lexeme of \"%s\" has no document count", relname)));
		/* the lexeme among the query's (sorted): binary search */
		while (lo <= hi)
		{
			int			mid = (lo + hi) / 2;
			int			c = gpx_lexeme_cmp(q.terms.lex[mid], q.terms.len[mid], VARDATA_ANY(lex),
										   VARSIZE_ANY_EXHDR(lex));

			if (c == 0)
			{
				q.df[mid] += (uint64) df;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
	}
	SPI_finish();
	for (int i = 0; i < q.terms.n; i++)
		if (q.df[i] > q.ndocs)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("lexeme \"%.*s\" is in more documents than \"%s\" counts",
							q.terms.len[i], q.terms.lex[i], relname)));
	PG_RETURN_TEXT_P(cstring_to_text(format_bm25query(&q)));
}

GPUIDX_FUNCTION(gpuidx_bm25query_text);
Datum
gpuidx_bm25query_text(PG_FUNCTION_ARGS)
{
	return make_bm25query(NULL, false, PG_GETARG_DATUM(0), PG_GETARG_OID(1));
}

GPUIDX_FUNCTION(gpuidx_bm25query_tsquery);
Datum
gpuidx_bm25query_tsquery(PG_FUNCTION_ARGS)
{
	GpxLexemes	words;

	/* its positive lexemes, as ranking by a tsquery takes them */
	gq_tsquery_positive_lexemes(PG_GETARG_TSQUERY(0), &words);
	return make_bm25query(&words, true, (Datum) 0, PG_GETARG_OID(1));
}
