/*
 * config.c
 *	  The text search configuration of an index.  A build uses the index's
 *	  option text_config, else the setting gpuidx.text_config, and writes
 *	  the name it used into the index's options, so that REINDEX, pg_dump
 *	  and pg_upgrade keep it.  The metapage records the configuration too
 *	  (OID and name); an index is opened by name, since OIDs do not survive
 *	  pg_upgrade.
 *
 *	  A tsvector index's documents are lexemes already: text_config has no
 *	  effect on it, and naming it is a warning (at CREATE INDEX, REINDEX and
 *	  ALTER INDEX ... SET), not an error, because indexes built before this
 *	  check carry the option (the build wrote it) and their dumps restore it.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_ts_config.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/array.h"
#include "commands/defrem.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "am/gpuidx_am.h"

/* the documents an index holds: text, or tsvector (lexemes already) */
uint32
gpx_kind_of(Relation index)
{
	Oid			type = index->rd_opcintype[0];

	if (type == TSVECTOROID)
		return GPX_KIND_TSVECTOR;
	if (type == TEXTOID)
		return GPX_KIND_TEXT;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("gpuidx indexes text and tsvector, not %s", format_type_be(type))));
	return 0;
}

/* "schema.name" of a configuration, or NULL if there is none of that OID */
char *
gpx_config_qualified_name(Oid config)
{
	HeapTuple	tuple = SearchSysCache1(TSCONFIGOID, ObjectIdGetDatum(config));
	Form_pg_ts_config cfg;
	char	   *nsp;
	char	   *result;

	if (!HeapTupleIsValid(tuple))
		return NULL;
	cfg = (Form_pg_ts_config) GETSTRUCT(tuple);
	nsp = get_namespace_name(cfg->cfgnamespace);
	result = quote_qualified_identifier(nsp, NameStr(cfg->cfgname));
	ReleaseSysCache(tuple);
	return result;
}

/* the configuration a name gives, or InvalidOid */
static Oid
config_by_name(const char *name)
{
	List	   *names = gpx_qualified_name_list(name);

	return get_ts_config_oid(names, true);
}

void
gpx_validate_text_config(const char *value)
{
	if (value == NULL)
		return;
	if (!gpx_is_config_name(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not a text search configuration name", value)));
	if (!OidIsValid(config_by_name(value)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("text search configuration \"%s\" does not exist", value)));
}

/* the option as given, or NULL */
static const char *
option_text_config(Relation index)
{
	GpxOptions *opts = (GpxOptions *) index->rd_options;

	if (opts == NULL || opts->text_config == 0)
		return NULL;
	return (const char *) opts + opts->text_config;
}

/*
 * Write text_config = name into the index's options: the index keeps the
 * configuration it was built with whatever the settings of a later REINDEX,
 * pg_dump or pg_upgrade.  Made visible at once (the build's caller updates
 * the same catalog row next).
 */
static void
record_config_option(Relation index, const char *name)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(RelationGetRelid(index)));
	Datum		values[Natts_pg_class] = {0};
	bool		nulls[Natts_pg_class] = {0};
	bool		replace[Natts_pg_class] = {0};
	Datum		old;
	bool		isnull;
	List	   *defs;
	HeapTuple	newtuple;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", RelationGetRelid(index));
	old = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
	defs = list_make1(makeDefElem("text_config", (Node *) makeString(pstrdup(name)), -1));
	values[Anum_pg_class_reloptions - 1] =
		transformRelOptions(isnull ? (Datum) 0 : old, defs, NULL, NULL, false, false);
	replace[Anum_pg_class_reloptions - 1] = true;
	newtuple = heap_modify_tuple(tuple, RelationGetDescr(pg_class), values, nulls, replace);
	CatalogTupleUpdate(pg_class, &newtuple->t_self, newtuple);
	heap_freetuple(newtuple);
	heap_freetuple(tuple);
	table_close(pg_class, RowExclusiveLock);
	CommandCounterIncrement();
}

Oid
gpx_build_config(Relation index)
{
	const char *option = option_text_config(index);
	const char *name = option ? option : gpx_text_config;
	Oid			config = config_by_name(name);

	if (!OidIsValid(config))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("text search configuration \"%s\" does not exist", name),
				 option ? errhint("Set the index's text_config to an existing configuration.") : 0));
	return config;
}

void
gpx_record_build_config(Relation index, Oid config)
{
	/* binary upgrade restores options as they were: an old index had none */
	if (gpx_kind_of(index) == GPX_KIND_TEXT && option_text_config(index) == NULL && !IsBinaryUpgrade)
		record_config_option(index, gpx_config_qualified_name(config));
}

static void
warn_config_unused(Relation index)
{
	ereport(WARNING,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("text_config has no effect on gpuidx index \"%s\", whose documents are tsvector",
					RelationGetRelationName(index)),
			 errdetail("A tsvector document's lexemes are indexed as they are; queries take their configuration from gpuidx.text_config."),
			 errhint("Remove the option: ALTER INDEX %s RESET (text_config).",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
												RelationGetRelationName(index)))));
}

void
gpx_check_config_option(Relation index)
{
	if (option_text_config(index) != NULL && gpx_kind_of(index) == GPX_KIND_TSVECTOR)
		warn_config_unused(index);
}

/*
 * ALTER INDEX ... SET (text_config = ...) on a tsvector index: the new
 * options, read with the command's own change visible, against the old
 * ones the relation cache still holds.
 */
static char *
new_text_config(Oid indexoid)
{
	Relation	pg_class = table_open(RelationRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *result = NULL;

	ScanKeyInit(&key, Anum_pg_class_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(indexoid));
	scan = systable_beginscan(pg_class, ClassOidIndexId, true, SnapshotSelf, 1, &key);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		options = heap_getattr(tuple, Anum_pg_class_reloptions, RelationGetDescr(pg_class), &isnull);
		List	   *defs = isnull ? NIL : untransformRelOptions(options);
		ListCell   *lc;

		foreach(lc, defs)
		{
			DefElem    *def = lfirst_node(DefElem, lc);

			if (strcmp(def->defname, "text_config") == 0)
				result = defGetString(def);
		}
	}
	systable_endscan(scan);
	table_close(pg_class, AccessShareLock);
	return result;
}

/*
 * ALTER INDEX ... SET on a gpuidx index (handler.c's hook): a text_config
 * newly named on a tsvector index is warned about, as at CREATE INDEX.
 */
void
gpx_check_altered_config(Relation index)
{
	char	   *now;
	const char *before;

	if (gpx_kind_of(index) != GPX_KIND_TSVECTOR)
		return;
	now = new_text_config(RelationGetRelid(index));
	before = option_text_config(index);
	if (now != NULL && (before == NULL || strcmp(before, now) != 0))
		warn_config_unused(index);
}

/*
 * The configuration the index's lexemes were made with, by the name its
 * options give (the metapage's for an index built before the option was
 * written).  That is the metapage's configuration when the two agree by OID
 * (a configuration renamed since, and the option too) or by name (after
 * pg_upgrade, where OIDs change); otherwise the option was changed by
 * ALTER INDEX and takes effect at REINDEX: until then the metapage's
 * configuration, if it still exists, else none.
 */
static Oid
content_config(Relation index, const GpxMetaPageData *meta)
{
	const char *option = option_text_config(index);
	char	   *built = psprintf("%s.%s", quote_identifier(NameStr(meta->config_schema)),
								 quote_identifier(NameStr(meta->config_name)));
	Oid			named = option ? config_by_name(option) : config_by_name(built);
	char	   *built_name;

	if (OidIsValid(named) && (named == meta->config || option == NULL))
		return named;
	if (OidIsValid(named))
	{
		char	   *named_name = gpx_config_qualified_name(named);

		if (named_name && strcmp(named_name, built) == 0)
			return named;
	}
	built_name = gpx_config_qualified_name(meta->config);
	return built_name ? meta->config : InvalidOid;
}

const GpxIndexInfo *
gpx_index_info(Relation index)
{
	if (index->rd_amcache == NULL)
	{
		GpxMetaPageData meta;
		GpxIndexInfo *info;

		gpx_meta_read(index, &meta);
		info = MemoryContextAlloc(index->rd_indexcxt, sizeof(GpxIndexInfo));
		info->kind = meta.kind;
		info->config = content_config(index, &meta);
		index->rd_amcache = info;
	}
	return (const GpxIndexInfo *) index->rd_amcache;
}

Oid
gpx_index_config(Relation index)
{
	Oid			config = gpx_index_info(index)->config;

	if (!OidIsValid(config))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the text search configuration index \"%s\" was built with no longer exists",
						RelationGetRelationName(index)),
				 errhint("Rebuild the index with REINDEX.")));
	return config;
}

bool
gpx_index_answers(Relation index, Oid config)
{
	const GpxIndexInfo *info = gpx_index_info(index);

	/* a tsvector's lexemes do not depend on it: the query's do, the same way */
	return info->kind == GPX_KIND_TSVECTOR || info->config == config;
}

void
gpx_note_config_passed_over(Relation index, Oid config)
{
	static TimestampTz noted_statement = 0;
	static Oid	noted_index = InvalidOid;
	Oid			built = gpx_index_config(index);

	/* once a statement and index: the planner prices an index's paths many times */
	if (noted_statement == GetCurrentStatementStartTimestamp() && noted_index == RelationGetRelid(index))
		return;
	noted_statement = GetCurrentStatementStartTimestamp();
	noted_index = RelationGetRelid(index);
	ereport(NOTICE,
			(errmsg("index \"%s\" is not used: it was built under text search configuration %s, and gpuidx.text_config is %s",
					RelationGetRelationName(index), gpx_config_qualified_name(built),
					gpx_config_qualified_name(config)),
			 errhint("Set gpuidx.text_config to %s to search it.", gpx_config_qualified_name(built))));
}
