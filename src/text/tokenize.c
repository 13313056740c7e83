/*
 * tokenize.c
 *	  The setting gpuidx.text_config, and documents and queries turned into
 *	  lexemes with PostgreSQL's parser and dictionaries (parsetext), the
 *	  same calls to_tsvector and plainto_tsquery make.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "mb/pg_wchar.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "access/xact.h"
#include "tsearch/ts_utils.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "pg_compat.h"

#include "store/parse.h"
#include "text/tokenize.h"

/* repalloc, or a first palloc; huge either way */
static void *
repalloc_huge_or_new(void *p, Size size)
{
	return p ? repalloc_huge(p, size) : palloc_extended(size, MCXT_ALLOC_HUGE);
}

/* text is parsed in pieces of about this size, cut at whitespace */
#define GPX_PARSE_PIECE (1024 * 1024)

char	   *gpx_text_config = NULL;

/* false while the setting is being defined, when the library loads */
static bool text_config_defined = false;

bool
gpx_is_config_name(const char *name)
{
	List	   *names;

	return SplitIdentifierString(pstrdup(name), '.', &names) && list_length(names) >= 1 &&
		list_length(names) <= 2;
}

/*
 * A configuration that does not exist is refused when set inside a
 * transaction.  A value set before the library was loaded (a placeholder)
 * or outside one (postgresql.conf at startup) is checked only for its
 * form: looking it up is not possible there, and refusing it at load would
 * only warn and quietly fall back to the default.  Such a name that does
 * not exist is an error at every use instead (gpx_current_config).
 */
static bool
check_text_config(char **newval, void **extra, GucSource source)
{
	if (!gpx_is_config_name(*newval))
	{
		GUC_check_errdetail("\"%s\" is not a text search configuration name.", *newval);
		return false;
	}
	/* names can only be looked up inside a transaction of a database */
	if (text_config_defined && IsTransactionState() && MyDatabaseId != InvalidOid &&
		!OidIsValid(get_ts_config_oid(gpx_qualified_name_list(*newval), true)))
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
	return true;
}

void
gpx_text_define_settings(void)
{
	DefineCustomStringVariable("gpuidx.text_config",
							   "Text search configuration of the @@& operator and of new gpuidx indexes.",
							   "A text index is used only for queries under the configuration it was "
							   "built with (its option text_config).",
							   &gpx_text_config,
							   "english",
							   PGC_USERSET,
							   0,
							   check_text_config, NULL, NULL);
	text_config_defined = true;
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
	config = get_ts_config_oid(gpx_qualified_name_list(gpx_text_config), false);
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
	int64		base = 0;		/* words of the pieces before */

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
			fn(arg, prs.words[i].word, prs.words[i].len,
			   (uint32) Min(base + prs.words[i].pos.pos, MAXENTRYPOS - 1));
		base += prs.pos;
		MemoryContextReset(parse_cxt);
		pos += n;
		CHECK_FOR_INTERRUPTS();
	}
}

/* ---------------------------------------------------------------------------
 * Lexeme sets
 *
 * A text's distinct lexemes are collected as it is parsed, in an open
 * addressing set over bytes kept in large chunks: memory follows the
 * distinct lexemes, not the occurrences (a 100 MB document of a few
 * thousand words costs a few hundred kB), and nothing is allocated per
 * occurrence.
 */
#define LEXEME_CHUNK	(64 * 1024)

typedef struct Collect
{
	int			n;				/* distinct lexemes */
	uint32		nslots;			/* a power of two; n at most half of it */
	int32	   *slots;			/* index into lex/len/hash, or -1 */
	uint32	   *hash;
	const char **lex;
	int		   *len;
	uint8	   *tf;				/* positions counted as to_tsvector keeps them */
	uint16	   *last_pos;		/* the last position counted */
	char	   *chunk;			/* where the next lexeme's bytes go */
	Size		chunk_left;
} Collect;

static void
collect_grow(Collect *c)
{
	uint32		nslots = c->nslots ? c->nslots * 2 : 256;
	Size		cap = nslots / 2;

	c->slots = repalloc_huge_or_new(c->slots, nslots * sizeof(int32));
	memset(c->slots, 0xFF, nslots * sizeof(int32));
	c->hash = repalloc_huge_or_new(c->hash, cap * sizeof(uint32));
	c->lex = repalloc_huge_or_new(c->lex, cap * sizeof(char *));
	c->len = repalloc_huge_or_new(c->len, cap * sizeof(int));
	c->tf = repalloc_huge_or_new(c->tf, cap * sizeof(uint8));
	c->last_pos = repalloc_huge_or_new(c->last_pos, cap * sizeof(uint16));
	for (int i = 0; i < c->n; i++)
	{
		uint32		slot = c->hash[i] & (nslots - 1);

		while (c->slots[slot] >= 0)
			slot = (slot + 1) & (nslots - 1);
		c->slots[slot] = i;
	}
	c->nslots = nslots;
}

/*
 * A lexeme's tf is its number of positions in to_tsvector's result: the
 * distinct positions it occurs at (all past MAXENTRYPOS - 1 count as that
 * one), at most MAXNUMPOS - 1 of them (to_tsany.c, uniqueWORD).  Positions
 * come in order, so distinct means different from the last one counted.
 */
static void
collect_lexeme(void *arg, const char *lex, int len, uint32 pos)
{
	Collect    *c = arg;
	uint32		hash = hash_bytes((const unsigned char *) lex, len);
	uint32		slot;
	char	   *copy;

	if ((uint32) c->n * 2 >= c->nslots)
		collect_grow(c);
	for (slot = hash & (c->nslots - 1); c->slots[slot] >= 0; slot = (slot + 1) & (c->nslots - 1))
	{
		int			i = c->slots[slot];

		if (c->hash[i] == hash && c->len[i] == len && memcmp(c->lex[i], lex, len) == 0)
		{
			if (c->tf[i] < MAXNUMPOS - 1 && c->last_pos[i] != MAXENTRYPOS - 1 && c->last_pos[i] != pos)
			{
				c->tf[i]++;
				c->last_pos[i] = (uint16) pos;
			}
			return;
		}
	}
	if ((Size) len > c->chunk_left)
	{
		c->chunk_left = Max(LEXEME_CHUNK, (Size) len);
		c->chunk = palloc(c->chunk_left);
	}
	copy = c->chunk;
	memcpy(copy, lex, len);
	c->chunk += len;
	c->chunk_left -= len;
	c->slots[slot] = c->n;
	c->hash[c->n] = hash;
	c->lex[c->n] = copy;
	c->len[c->n] = len;
	c->tf[c->n] = 1;
	c->last_pos[c->n] = (uint16) pos;
	c->n++;
}

typedef struct LexRef
{
	const char *lex;
	int			len;
	uint8		tf;
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

	gpx_tokenize(cfg, text, len, collect_lexeme, &c);
	out->n = 0;
	out->lex = NULL;
	out->len = NULL;
	out->tf = NULL;
	out->pos = NULL;
	out->npos = NULL;
	out->dl = 0;
	if (c.n == 0)
		return;
	refs = palloc_extended(c.n * sizeof(LexRef), MCXT_ALLOC_HUGE);
	for (int i = 0; i < c.n; i++)
	{
		refs[i].lex = c.lex[i];
		refs[i].len = c.len[i];
		refs[i].tf = c.tf[i];
	}
	qsort(refs, c.n, sizeof(LexRef), lexref_cmp);
	for (int i = 0; i < c.n; i++)
	{
		c.lex[i] = refs[i].lex;
		c.len[i] = refs[i].len;
		c.tf[i] = refs[i].tf;
		out->dl += refs[i].tf;
	}
	pfree(refs);
	pfree(c.slots);
	pfree(c.hash);
	pfree(c.last_pos);
	out->n = c.n;
	out->lex = c.lex;
	out->len = c.len;
	out->tf = c.tf;
}

void
gpx_lexemes_of_tsvector(TSVector tsv, GpxLexemes *out)
{
	WordEntry  *we = ARRPTR(tsv);
	char	   *str = STRPTR(tsv);

	out->n = tsv->size;
	out->lex = palloc(Max(tsv->size, 1) * sizeof(char *));
	out->len = palloc(Max(tsv->size, 1) * sizeof(int));
	out->tf = palloc(Max(tsv->size, 1) * sizeof(uint8));
	out->pos = palloc(Max(tsv->size, 1) * sizeof(WordEntryPos *));
	out->npos = palloc(Max(tsv->size, 1) * sizeof(uint16));
	out->dl = 0;
	for (int i = 0; i < tsv->size; i++)
	{
		/* a lexeme stored without positions counts once; more than 255 as 255 */
		int			npos = we[i].haspos ? POSDATALEN(tsv, &we[i]) : 0;

		out->lex[i] = str + we[i].pos;
		out->len[i] = we[i].len;
		out->tf[i] = (uint8) gpx_pos_tf(npos);
		out->pos[i] = npos > 0 ? POSDATAPTR(tsv, &we[i]) : NULL;
		out->npos[i] = (uint16) npos;
		out->dl += out->tf[i];
	}
}

uint32
gpx_lexeme_positions(const GpxLexemes *doc, int i, uint8 *out)
{
	uint32		k;

	if (doc->pos == NULL)
		elog(ERROR, "gpuidx: a document without positions where positions are stored");
	k = gpx_pos_encode(doc->pos[i], doc->npos[i], out);
	if (k == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("tsvector positions of lexeme \"%.*s\" are not in increasing order",
						doc->len[i], doc->lex[i])));
	return k;
}

uint8 *
gpx_lexemes_positions(const GpxLexemes *doc, uint32 *len)
{
	uint8	   *out;
	uint32		n = 0;

	if (doc->pos == NULL)
		elog(ERROR, "gpuidx: a document without positions where positions are stored");
	/* a count and each position take at most 3 bytes */
	for (int i = 0; i < doc->n; i++)
		n += 3 + 3 * doc->npos[i];
	out = palloc_extended(Max(n, 1), MCXT_ALLOC_HUGE);
	n = 0;
	for (int i = 0; i < doc->n; i++)
		n += gpx_lexeme_positions(doc, i, out + n);
	*len = n;
	return out;
}

void
gpx_lexemes_union(const GpxLexemes *a, const GpxLexemes *b, GpxLexemes *out)
{
	int			i = 0;
	int			j = 0;
	int			n = 0;

	out->lex = palloc(Max(a->n + b->n, 1) * sizeof(char *));
	out->len = palloc(Max(a->n + b->n, 1) * sizeof(int));
	out->tf = NULL;
	out->pos = NULL;
	out->npos = NULL;
	out->dl = 0;
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

/* does the text hold what websearch_to_tsquery reads as syntax? */
static bool
has_websearch_syntax(const char *q, int len)
{
	for (int i = 0; i < len; i++)
	{
		bool		word_start = i == 0 || isspace((unsigned char) q[i - 1]);

		if (q[i] == '"')
			return true;
		if (word_start && q[i] == '-' && i + 1 < len && isalnum((unsigned char) q[i + 1]))
			return true;
		/* "or" as a word of its own, with words before and after it */
		if (word_start && i > 0 && i + 2 < len && pg_strncasecmp(q + i, "or", 2) == 0 &&
			isspace((unsigned char) q[i + 2]))
			return true;
	}
	return false;
}

void
gpx_note_query_syntax(const char *query, int len)
{
	static TimestampTz noted_statement = 0;
	static uint32 noted_query = 0;
	uint32		h;

	if (!has_websearch_syntax(query, len))
		return;
	/* once a statement and query: a scan and the operator's checks of its rows read the same text */
	h = hash_bytes((const unsigned char *) query, len);
	if (noted_statement == GetCurrentStatementStartTimestamp() && noted_query == h)
		return;
	noted_statement = GetCurrentStatementStartTimestamp();
	noted_query = h;
	ereport(NOTICE,
			(errmsg("@@& requires every word of its query: quotes, \"-\" and \"or\" mean nothing to it"),
			 errdetail("The query was \"%.*s\".", pg_mbcliplen(query, len, 200), query),
			 errhint("For phrases, excluded words and alternatives, use to_tsvector(...) @@ websearch_to_tsquery(...), which a gpuidx index on to_tsvector(...) answers.")));
}
