/*
 * tokenize.h
 *	  Documents and queries as lexemes, with PostgreSQL's text search: a
 *	  document's lexemes are those of to_tsvector(config, text), a query's
 *	  those of plainto_tsquery(config, text).  The configuration is the
 *	  setting gpuidx.text_config; an index records the one it was built with.
 */
#ifndef GPUIDX_TEXT_TOKENIZE_H
#define GPUIDX_TEXT_TOKENIZE_H

#include "postgres.h"

#include "tsearch/ts_type.h"

/* gpuidx.text_config */
extern char *gpx_text_config;
extern void gpx_text_define_settings(void);

/* the configuration gpuidx.text_config names (ERROR if there is none) */
extern Oid	gpx_current_config(void);

/* is name a possibly qualified name (one or two identifiers)? */
extern bool gpx_is_config_name(const char *name);

/* called for every lexeme of a text, repeats included, with its position */
typedef void (*gpx_lexeme_fn) (void *arg, const char *lex, int len, uint32 pos);

/*
 * Every lexeme of text under cfg.  Text over a megabyte is parsed in pieces
 * cut at whitespace, so no size limit applies and memory stays bounded.
 */
extern void gpx_tokenize(Oid cfg, const char *text, int len, gpx_lexeme_fn fn, void *arg);

/*
 * A set of distinct lexemes, sorted bytewise (as in a tsvector).  A
 * document's also has each lexeme's tf (its number of positions in the
 * document's tsvector, 1..255) and their sum, the document's length; a
 * query's has tf NULL.
 */
typedef struct GpxLexemes
{
	int			n;
	const char **lex;
	int		   *len;
	uint8	   *tf;
	uint32		dl;
	/* a tsvector's: each lexeme's positions (npos 0: stored without), or NULL */
	const WordEntryPos **pos;
	uint16	   *npos;
} GpxLexemes;

/*
 * The positions records (store/parse.h) of a document's lexemes, in order,
 * concatenated (palloc'd; *len their bytes).  ERROR for a tsvector whose
 * positions are out of order (PostgreSQL makes none).
 */
extern uint8 *gpx_lexemes_positions(const GpxLexemes *doc, uint32 *len);
/* lexeme i's record alone into out (room for GPX_POS_MAX_RECORD); its bytes */
extern uint32 gpx_lexeme_positions(const GpxLexemes *doc, int i, uint8 *out);

extern void gpx_lexemes_of_text(Oid cfg, const char *text, int len, GpxLexemes *out);

/*
 * A @@& query (every lexeme required) that holds web search syntax
 * (quotes, a "-" before a word, "or" between words) gets a notice, once a
 * statement: none of it has a meaning there
 */
extern void gpx_note_query_syntax(const char *query, int len);
extern void gpx_lexemes_of_tsvector(TSVector tsv, GpxLexemes *out);
/* union of two sets */
extern void gpx_lexemes_union(const GpxLexemes *a, const GpxLexemes *b, GpxLexemes *out);
/* is every lexeme of query in doc (both sorted)? false for an empty query */
extern bool gpx_lexemes_contain(const GpxLexemes *doc, const GpxLexemes *query);
extern bool gpx_tsvector_contains(TSVector tsv, const GpxLexemes *query);

static inline int
gpx_lexeme_cmp(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

#endif							/* GPUIDX_TEXT_TOKENIZE_H */
