/*
 * handler.c
 *	  The gpuidx access method routine, its reloptions, the operator class
 *	  validator, the names of its build phases, and the check of its options
 *	  at ALTER INDEX.
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_class.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/guc.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "am/gpuidx_am.h"
#include "rank/bm25.h"

GPUIDX_FUNCTION(gpuidx_handler);

static relopt_kind gpx_relopt_kind;

static relopt_enum_elt_def codec_values[] = {
	{"auto", GPX_CODEC_AUTO},
	{"ef", GPUIDX_CODEC_EF},
	{"lrc", GPUIDX_CODEC_LRC},
	{"raw", GPUIDX_CODEC_RAW},
	{NULL}
};

void
gpx_define_reloptions(void)
{
	gpx_relopt_kind = add_reloption_kind();
	add_enum_reloption(gpx_relopt_kind, "codec",
					   "Codec of posting lists too long to be stored inline",
					   codec_values, GPX_CODEC_AUTO,
					   "Valid values are \"auto\", \"ef\", \"lrc\" and \"raw\".",
					   ShareUpdateExclusiveLock);
	add_int_reloption(gpx_relopt_kind, "pending_list_limit",
					  "Size in kB of the pending area past which inserts merge it into a segment",
					  GPX_DEFAULT_PENDING_LIMIT, 64, MAX_KILOBYTES,
					  ShareUpdateExclusiveLock);
	add_string_reloption(gpx_relopt_kind, "text_config",
						 "Text search configuration of the index (default: gpuidx.text_config when built)",
						 NULL, gpx_validate_text_config, AccessExclusiveLock);
	add_bool_reloption(gpx_relopt_kind, "freqs",
					   "Store term frequencies and document lengths, which ranking needs (takes effect at REINDEX)",
					   true, AccessExclusiveLock);
	add_bool_reloption(gpx_relopt_kind, "positions",
					   "Store where each lexeme stands in its tsvector, so that phrases, weights and prefixes in phrases are settled in the index (default on for tsvector documents; takes effect at REINDEX)",
					   true, AccessExclusiveLock);
	add_real_reloption(gpx_relopt_kind, "k1",
					   "BM25 term frequency saturation of ranked queries",
					   GPX_BM25_K1_DEFAULT, 0.0, 1000.0, ShareUpdateExclusiveLock);
	add_real_reloption(gpx_relopt_kind, "b",
					   "BM25 document length normalization of ranked queries (0 to 1)",
					   GPX_BM25_B_DEFAULT, 0.0, 1.0, ShareUpdateExclusiveLock);
}

bytea *
gpx_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"codec", RELOPT_TYPE_ENUM, offsetof(GpxOptions, codec)},
		{"pending_list_limit", RELOPT_TYPE_INT, offsetof(GpxOptions, pending_list_limit)},
		{"text_config", RELOPT_TYPE_STRING, offsetof(GpxOptions, text_config)},
		{"freqs", RELOPT_TYPE_BOOL, offsetof(GpxOptions, freqs)},
		{"positions", RELOPT_TYPE_BOOL, offsetof(GpxOptions, positions)},
		{"k1", RELOPT_TYPE_REAL, offsetof(GpxOptions, k1)},
		{"b", RELOPT_TYPE_REAL, offsetof(GpxOptions, b)},
	};

	return (bytea *) build_reloptions(reloptions, validate, gpx_relopt_kind,
									  sizeof(GpxOptions), tab, lengthof(tab));
}

int
gpx_index_codec(Relation index)
{
	GpxOptions *opts = (GpxOptions *) index->rd_options;

	return opts ? opts->codec : GPX_CODEC_AUTO;
}

bool
gpx_index_freqs_option(Relation index)
{
	GpxOptions *opts = (GpxOptions *) index->rd_options;

	return opts ? opts->freqs : true;
}

/* was the index's option set by name (pg_class.reloptions), not taken by default? */
static bool
option_given(Relation index, const char *name)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(RelationGetRelid(index)));
	size_t		len = strlen(name);
	bool		given = false;
	bool		isnull;
	Datum		d;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", RelationGetRelid(index));
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
		for (int i = 0; i < n && !given; i++)
		{
			char	   *opt = TextDatumGetCString(elems[i]);

			given = strncmp(opt, name, len) == 0 && opt[len] == '=';
			pfree(opt);
		}
	}
	ReleaseSysCache(tup);
	return given;
}

/*
 * Positions are stored by default in indexes on tsvector (a column or an
 * expression), which phrase and weight queries read, with freqs; an index
 * of text, or without freqs, stores none unless the option asks, which is
 * then an error.
 */
bool
gpx_index_positions_option(Relation index, uint32 kind, bool freqs)
{
	GpxOptions *opts = (GpxOptions *) index->rd_options;

	if (opts != NULL && !opts->positions)
		return false;
	if (kind != GPX_KIND_TSVECTOR)
	{
		if (option_given(index, "positions"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("gpuidx option \"positions\" applies to indexes on tsvector"),
					 errdetail("Positions are those of the indexed tsvector, which phrase and weight queries (@@ tsquery) read.")));
		return false;
	}
	if (!freqs)
	{
		if (option_given(index, "positions"))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("gpuidx option \"positions\" needs \"freqs\"")));
		return false;
	}
	return true;
}

void
gpx_index_bm25_params(Relation index, double *k1, double *b)
{
	GpxOptions *opts = (GpxOptions *) index->rd_options;

	*k1 = opts ? opts->k1 : GPX_BM25_K1_DEFAULT;
	*b = opts ? opts->b : GPX_BM25_B_DEFAULT;
}

Size
gpx_pending_limit(Relation index)
{
	GpxOptions *opts = (GpxOptions *) index->rd_options;

	return (Size) (opts ? opts->pending_list_limit : GPX_DEFAULT_PENDING_LIMIT) * 1024;
}

void
gpx_check_index_oid(Oid indexoid)
{
	char		relkind = get_rel_relkind(indexoid);

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("index with OID %u does not exist", indexoid)));
	if (relkind != RELKIND_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", get_rel_name(indexoid))));
}

void
gpx_check_index(Relation index)
{
	if (index->rd_rel->relkind != RELKIND_INDEX || index->rd_indam == NULL ||
		index->rd_indam->ambuild != gpx_build)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a gpuidx index", RelationGetRelationName(index))));
}

static object_access_hook_type prev_object_access_hook = NULL;

/* ALTER INDEX ... SET on a gpuidx index: its new options checked (config.c) */
static void
check_altered_index(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	Relation	index;

	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_POST_ALTER || classId != RelationRelationId || subId != 0 ||
		get_rel_relkind(objectId) != RELKIND_INDEX)
		return;
	/* the altering command holds it locked */
	index = relation_open(objectId, NoLock);
	if (index->rd_indam != NULL && index->rd_indam->ambuild == gpx_build)
		gpx_check_altered_config(index);
	relation_close(index, NoLock);
}

void
gpx_alter_check_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = check_altered_index;
}

static char *
gpx_phasename(int64 phase)
{
	switch (phase)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case GPX_PHASE_SCAN:
			return "scanning table";
		case GPX_PHASE_MERGE:
			return "merging sorted runs";
		case GPX_PHASE_WAL:
			return "WAL-logging index";
		default:
			return NULL;
	}
}

/*
 * The operator classes must hold @@& (strategy 1) and <=> (2) for text or
 * tsvector, <=> with a bm25query (5), and for tsvector also @@ (3) and @@@
 * (4) with a tsquery; nothing else
 */
static bool
gpx_validate(Oid opclassoid)
{
	HeapTuple	tuple = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	Form_pg_opclass opclass;
	Oid			intype;
	char	   *name;
	CatCList   *oprs;
	bool		ok = true;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	opclass = (Form_pg_opclass) GETSTRUCT(tuple);
	intype = opclass->opcintype;
	name = pstrdup(NameStr(opclass->opcname));
	if (intype != TEXTOID && intype != TSVECTOROID)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("gpuidx operator class \"%s\" indexes type %s; only text and tsvector are supported",
						name, format_type_be(intype))));
		ok = false;
	}
	oprs = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opclass->opcfamily));
	for (int i = 0; i < oprs->n_members; i++)
	{
		Form_pg_amop amop = (Form_pg_amop) GETSTRUCT(&oprs->members[i]->tuple);

		bool		search = amop->amopstrategy == GPX_STRATEGY_MATCH && amop->amoppurpose == AMOP_SEARCH;
		bool		order = amop->amopstrategy == GPX_STRATEGY_RANK && amop->amoppurpose == AMOP_ORDER;
		bool		given = amop->amopstrategy == GPX_STRATEGY_RANK_GIVEN && amop->amoppurpose == AMOP_ORDER &&
			amop->amoplefttype == intype && amop->amoprighttype != TEXTOID;
		bool		tsquery = GPX_IS_TSQUERY_STRATEGY(amop->amopstrategy) &&
			amop->amoppurpose == AMOP_SEARCH && amop->amoplefttype == TSVECTOROID &&
			amop->amoprighttype == TSQUERYOID;

		if (!((search || order) && amop->amoprighttype == TEXTOID) && !tsquery && !given)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("gpuidx operator family of \"%s\" holds operator %s, which gpuidx cannot use",
							name, format_operator(amop->amopopr))));
			ok = false;
		}
	}
	ReleaseCatCacheList(oprs);
	ReleaseSysCache(tuple);
	return ok;
}

Datum
gpuidx_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	am->amstrategies = 5;
	am->amsupport = 0;
	am->amoptsprocnum = 0;
	am->amcanorder = false;
	am->amcanorderbyop = true;
#if PG_VERSION_NUM >= 180000
	am->amcanhash = false;
	am->amconsistentequality = false;
	am->amconsistentordering = false;
#endif
	am->amcanbackward = false;
	am->amcanunique = false;
	am->amcanmulticol = false;
	am->amoptionalkey = true;	/* an ORDER BY alone can use the index */
	am->amsearcharray = false;
	am->amsearchnulls = false;
	am->amstorage = false;
	am->amclusterable = false;
	am->ampredlocks = false;
	am->amcanparallel = false;
#if PG_VERSION_NUM >= 170000
	/* a parallel build picks its own workers (build.c) */
	am->amcanbuildparallel = false;
#endif
	am->amcaninclude = false;
	am->amusemaintenanceworkmem = true;
#if PG_VERSION_NUM >= 160000
	am->amsummarizing = false;
#endif
	/*
	 * VACUUM's leader vacuums the index, beside workers that take the
	 * table's other indexes: a parallel VACUUM cannot take the lock that
	 * cuts the file's free end off (vacuum.c), and a table with one other
	 * index (its primary key) is then vacuumed with no parallel mode at all.
	 */
	am->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	am->amkeytype = InvalidOid;

	am->ambuild = gpx_build;
	am->ambuildempty = gpx_buildempty;
	am->aminsert = gpx_insert;
#if PG_VERSION_NUM >= 170000
	am->aminsertcleanup = NULL;
#endif
	am->ambulkdelete = gpx_bulkdelete;
	am->amvacuumcleanup = gpx_vacuumcleanup;
	am->amcanreturn = NULL;
	am->amcostestimate = gpx_costestimate;
#if PG_VERSION_NUM >= 180000
	am->amgettreeheight = NULL;
#endif
	am->amoptions = gpx_options;
	am->amproperty = NULL;
	am->ambuildphasename = gpx_phasename;
	am->amvalidate = gpx_validate;
	am->amadjustmembers = NULL;
	am->ambeginscan = gpx_beginscan;
	am->amrescan = gpx_rescan;
	am->amgettuple = gpx_gettuple;
	am->amgetbitmap = gpx_getbitmap;
	am->amendscan = gpx_endscan;
	am->ammarkpos = NULL;
	am->amrestrpos = NULL;
	am->amestimateparallelscan = NULL;
	am->aminitparallelscan = NULL;
	am->amparallelrescan = NULL;
#if PG_VERSION_NUM >= 180000
	am->amtranslatestrategy = NULL;
	am->amtranslatecmptype = NULL;
#endif

	PG_RETURN_POINTER(am);
}
