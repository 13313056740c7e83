/*
 * tokenize.c
 *	  The setting gpuidx.text_config, and documents and queries turned into
 *	  lexemes with PostgreSQL's parser and dictionaries (parsetext), the
 *	  same calls to_tsvector and plainto_tsquery make.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "miscadmin.h"
#include "access/xact.h"
#include "tsearch/ts_utils.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "text/tokenize.h"

/* text is parsed in pieces of about this size, cut at whitespace */
#define GPX_PARSE_PIECE (1024 * 1024)

char	   *gpx_text_config = NULL;

static bool
check_text_config(char **newval, void **extra, GucSource source)
{
	/* names can only be looked up inside a transaction of a database */
	if (IsTransactionState() && MyDatabaseId != InvalidOid)
	{
		List	   *names;
		Oid			cfg;

		if (!SplitIdentifierString(pstrdup(*newval), '.', &names) || list_length(names) > 2)
		{
			GUC_check_errdetail("\"%s\" is not a text search configuration name.", *newval);
			return false;
		}
		cfg = get_ts_config_oid(stringToQualifiedNameList(*newval), true);
		if (!OidIsValid(cfg))
		{
			if (source == PGC_S_TEST)
			{
				ereport(NOTICE,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("text search configuration \"%s\" does not exist", *newval)));
				return true;
			}
			GUC_check_errdetail("Text search configuration \"%s\" does not exist.", *newval);
			return false;
		}
	}
	return true;
}

void
gpx_text_define_settings(void)
{
	DefineCustomStringVariable("gpuidx.text_config",
							   "Text search configuration of the @@& operator and of new gpuidx indexes.",
							   "An index records the configuration it was built with and is used "
							   "only for queries under that same configuration.",
							   &gpx_text_config,
							   "english",
							   PGC_USERSET,
							   0,
							   check_text_config, NULL, NULL);
}

/*
 * The configuration is looked up once for a given setting, search_path and
 * user, until a configuration or schema changes (every query asks: planning
 * twice, the scan once).
 */
static struct
{
	bool		valid;
	bool		registered;
	Oid			config;
	Oid			user;
	char	   *setting;
	char	   *search_path;
}			config_cache;

static void
config_cache_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	config_cache.valid = false;
}

Oid
gpx_current_config(void)
{
	Oid			config;

	if (config_cache.valid && config_cache.user == GetUserId() &&
		strcmp(config_cache.setting, gpx_text_config) == 0 &&
		strcmp(config_cache.search_path, namespace_search_path) == 0)
		return config_cache.config;
	if (!config_cache.registered)
	{
		CacheRegisterSyscacheCallback(TSCONFIGOID, config_cache_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, config_cache_invalidate, (Datum) 0);
		config_cache.registered = true;
	}
	config = get_ts_config_oid(stringToQualifiedNameList(gpx_text_config), false);
	if (config_cache.setting)
		pfree(config_cache.setting);
	if (config_cache.search_path)
		pfree(config_cache.search_path);
	config_cache.setting = MemoryContextStrdup(TopMemoryContext, gpx_text_config);
	config_cache.search_path = MemoryContextStrdup(TopMemoryContext, namespace_search_path);
	config_cache.user = GetUserId();
	config_cache.config = config;
	config_cache.valid = true;
	return config;
}

static inline bool
is_space_byte(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void
gpx_tokenize(Oid cfg, const char *text, int len, gpx_lexeme_fn fn, void *arg)
{
	static MemoryContext parse_cxt = NULL;
	int			pos = 0;

	if (parse_cxt == NULL)
		parse_cxt = AllocSetContextCreate(TopMemoryContext, "gpuidx parse", ALLOCSET_DEFAULT_SIZES);
	while (pos < len)
	{
		int			n = len - pos;
		ParsedText	prs;
		MemoryContext old;

		/* cut at whitespace: no token of PostgreSQL's parser contains any */
		if (n > GPX_PARSE_PIECE)
		{
			n = GPX_PARSE_PIECE;
			while (pos + n < len && !is_space_byte(text[pos + n]))
				n++;
		}
		MemoryContextReset(parse_cxt);
		old = MemoryContextSwitchTo(parse_cxt);
		prs.lenwords = Max(Min(n / 6, 65536), 16);
		prs.curwords = 0;
		prs.pos = 0;
		prs.words = palloc(sizeof(ParsedWord) * prs.lenwords);
		parsetext(cfg, &prs, (char *) text + pos, n);
		MemoryContextSwitchTo(old);
		for (int i = 0; i < prs.curwords; i++)
			fn(arg, prs.words[i].word, prs.words[i].len);
		MemoryContextReset(parse_cxt);
		pos += n;
		CHECK_FOR_INTERRUPTS();
	}
}

/* ---------------------------------------------------------------------------
 * Lexeme sets
 */
typedef struct Collect
{
	int			n;
	int			cap;
	const char **lex;
	int		   *len;
} Collect;

static void
collect_lexeme(void *arg, const char *lex, int len)
{
	Collect    *c = arg;
	char	   *copy;

	if (c->n == c->cap)
	{
		c->cap = c->cap ? c->cap * 2 : 64;
		c->lex = c->lex ? repalloc_huge(c->lex, c->cap * sizeof(char *)) : palloc(c->cap * sizeof(char *));
		c->len = c->len ? repalloc_huge(c->len, c->cap * sizeof(int)) : palloc(c->cap * sizeof(int));
	}
	copy = palloc(len);
	memcpy(copy, lex, len);
	c->lex[c->n] = copy;
	c->len[c->n] = len;
	c->n++;
}

typedef struct LexRef
{
	const char *lex;
	int			len;
} LexRef;

static int
lexref_cmp(const void *x, const void *y)
{
	const LexRef *a = x;
	const LexRef *b = y;

	return gpx_lexeme_cmp(a->lex, a->len, b->lex, b->len);
}

void
gpx_lexemes_of_text(Oid cfg, const char *text, int len, GpxLexemes *out)
{
	Collect		c = {0};
	LexRef	   *refs;
	int			n = 0;

	gpx_tokenize(cfg, text, len, collect_lexeme, &c);
	out->n = 0;
	out->lex = NULL;
	out->len = NULL;
	if (c.n == 0)
		return;
	refs = palloc_extended(c.n * sizeof(LexRef), MCXT_ALLOC_HUGE);
	for (int i = 0; i < c.n; i++)
	{
		refs[i].lex = c.lex[i];
		refs[i].len = c.len[i];
	}
	qsort(refs, c.n, sizeof(LexRef), lexref_cmp);
	for (int i = 0; i < c.n; i++)
	{
		if (n > 0 && lexref_cmp(&refs[n - 1], &refs[i]) == 0)
			continue;
		refs[n++] = refs[i];
	}
	for (int i = 0; i < n; i++)
	{
		c.lex[i] = refs[i].lex;
		c.len[i] = refs[i].len;
	}
	pfree(refs);
	out->n = n;
	out->lex = c.lex;
	out->len = c.len;
}

void
gpx_lexemes_of_tsvector(TSVector tsv, GpxLexemes *out)
{
	WordEntry  *we = ARRPTR(tsv);
	char	   *str = STRPTR(tsv);

	out->n = tsv->size;
	out->lex = palloc(Max(tsv->size, 1) * sizeof(char *));
	out->len = palloc(Max(tsv->size, 1) * sizeof(int));
	for (int i = 0; i < tsv->size; i++)
	{
		out->lex[i] = str + we[i].pos;
		out->len[i] = we[i].len;
	}
}

void
gpx_lexemes_union(const GpxLexemes *a, const GpxLexemes *b, GpxLexemes *out)
{
	int			i = 0;
	int			j = 0;
	int			n = 0;

	out->lex = palloc(Max(a->n + b->n, 1) * sizeof(char *));
	out->len = palloc(Max(a->n + b->n, 1) * sizeof(int));
	while (i < a->n || j < b->n)
	{
		int			c = i == a->n ? 1 : j == b->n ? -1 :
			gpx_lexeme_cmp(a->lex[i], a->len[i], b->lex[j], b->len[j]);

		if (c <= 0)
		{
			out->lex[n] = a->lex[i];
			out->len[n++] = a->len[i++];
			if (c == 0)
				j++;
		}
		else
		{
			out->lex[n] = b->lex[j];
			out->len[n++] = b->len[j++];
		}
	}
	out->n = n;
}

bool
gpx_lexemes_contain(const GpxLexemes *doc, const GpxLexemes *query)
{
	int			lo = 0;

	if (query->n == 0)
		return false;
	for (int q = 0; q < query->n; q++)
	{
		int			hi = doc->n - 1;
		bool		found = false;

		/* both sorted: each search starts where the last one ended */
		while (lo <= hi)
		{
			int			mid = lo + (hi - lo) / 2;
			int			c = gpx_lexeme_cmp(doc->lex[mid], doc->len[mid], query->lex[q], query->len[q]);

			if (c == 0)
			{
				found = true;
				lo = mid + 1;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
		if (!found)
			return false;
	}
	return true;
}

bool
gpx_tsvector_contains(TSVector tsv, const GpxLexemes *query)
{
	GpxLexemes	doc;
	bool		result;

	if (query->n == 0)
		return false;
	gpx_lexemes_of_tsvector(tsv, &doc);
	result = gpx_lexemes_contain(&doc, query);
	pfree(doc.lex);
	pfree(doc.len);
	return result;
}
