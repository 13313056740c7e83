/*
 * engine_sql.c
 *	  The intersection engine as this process sees it: the CUDA engine when
 *	  gpuidx.engine_library loads and finds a device, else the CPU engine,
 *	  with the reason kept for gpuidx_engine_info().  Queries never fail for
 *	  want of a GPU: any engine error answers on the CPU.
 *
 * gpuidx_engine_intersect() is the SQL door to the engine ABI: through the
 * GPU worker when gpuidx is preloaded (all its lists in one request, no
 * placement), else through an engine in the calling process.
 */
#include "gpuidx.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "cpu/cpu.h"
#include "engine/engine.h"
#include "type/postinglist.h"
#include "worker/worker.h"

GPUIDX_FUNCTION(gpuidx_engine_info_sql);
GPUIDX_FUNCTION(gpuidx_engine_intersect);

char	   *gpuidx_engine_library = NULL;

/* this process's engine; the library path it was made from */
static const gpuidx_engine_api *engine_api;
static gpuidx_engine *engine;
static char engine_path[MAXPGPATH];
static char engine_reason[512];
static gpuidx_engine_info engine_info;

static void
engine_release(void)
{
	if (engine != NULL)
		engine_api->destroy(engine);
	engine = NULL;
	engine_api = NULL;
}

/* gpuidx.engine_library as a path ("" for none) */
static void
engine_library_path(char *path, size_t len)
{
	if (gpuidx_engine_library == NULL || gpuidx_engine_library[0] == '\0')
		strlcpy(path, "", len);
	else if (strncmp(gpuidx_engine_library, "$libdir/", 8) == 0)
		snprintf(path, len, "%s/%s.so", pkglib_path, gpuidx_engine_library + 8);
	else
		strlcpy(path, gpuidx_engine_library, len);
}

const gpuidx_engine_api *
gpx_engine_open(const gpuidx_engine_config *cfg, gpuidx_engine **engine, char *path, size_t pathlen,
				char *why, size_t whylen)
{
	gpuidx_engine_config cpu_cfg = {sizeof(cpu_cfg), 0, 64 << 20, 0, 1, 0};
	const gpuidx_engine_api *api = NULL;
	gpuidx_engine_error err;

	memset(&err, 0, sizeof(err));
	*engine = NULL;
	why[0] = '\0';
	engine_library_path(path, pathlen);
	if (path[0] == '\0')
		strlcpy(why, "gpuidx.engine_library is empty", whylen);
	else if ((api = engine_load(path, why, whylen)) != NULL)
	{
		int			st = api->create(cfg, engine, &err);

		if (st == GPUIDX_ENGINE_OK)
			return api;
		snprintf(why, whylen, "engine \"%s\" did not start: %s: %s", path,
				 engine_status_name(st), err.message);
		*engine = NULL;
	}
	api = cpu_engine_api();
	if (api->create(&cpu_cfg, engine, &err) != GPUIDX_ENGINE_OK)
	{
		snprintf(why, whylen, "could not create the CPU engine: %s", err.message);
		return NULL;
	}
	return api;
}

/* the engine for the current setting, made or remade as needed */
static void
engine_acquire(void)
{
	char		path[MAXPGPATH];
	gpuidx_engine_config cfg = {sizeof(cfg), 0, 256 << 20, 64 << 20, 1, 0};

	engine_library_path(path, sizeof(path));
	if (engine != NULL && strcmp(path, engine_path) == 0)
		return;
	engine_release();
	engine_api = gpx_engine_open(&cfg, &engine, engine_path, sizeof(engine_path),
								 engine_reason, sizeof(engine_reason));
	if (engine_api == NULL)
		elog(ERROR, "%s", engine_reason);
	engine_api->get_info(engine, &engine_info);
}

/* never an error for the user because of the GPU: the CPU answers */
static uint32
intersect_on_cpu(const pl_view *views, int n, uint32 *out)
{
	const pl_view **order = palloc(n * sizeof(pl_view *));

	for (int i = 0; i < n; i++)
		order[i] = &views[i];
	return pl_checked_count(cpu_intersect_k(order, n, out, CPU_METHOD_AUTO, NULL));
}

Datum
gpuidx_engine_info_sql(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	engine_acquire();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = CStringGetTextDatum(engine_info.kind);
	values[1] = CStringGetTextDatum(engine_info.device_name);
	values[2] = CStringGetTextDatum(engine_path);
	if (engine_reason[0] != '\0')
		values[3] = CStringGetTextDatum(engine_reason);
	else
		nulls[3] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
gpuidx_engine_intersect(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *elem_nulls;
	int			n;
	pl_view    *views;
	const void **bytes;
	uint64	   *lens;
	gpuidx_term_ref *refs;
	gpuidx_query q;
	gpuidx_engine_error err;
	uint32		bound = PG_UINT32_MAX;
	uint32	   *out;
	uint32		count;
	int			st;

	deconstruct_array(arr, ARR_ELEMTYPE(arr), -1, false, TYPALIGN_INT, &elems, &elem_nulls, &n);
	if (n == 0)
		PG_RETURN_NULL();
	if (n > GPUIDX_ENGINE_MAX_TERMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("an engine query intersects at most %d lists", GPUIDX_ENGINE_MAX_TERMS)));
	views = palloc(n * sizeof(pl_view));
	bytes = palloc(n * sizeof(void *));
	lens = palloc(n * sizeof(uint64));
	for (int i = 0; i < n; i++)
	{
		struct varlena *v;

		if (elem_nulls[i])
			PG_RETURN_NULL();
		v = pl_open_datum(elems[i], &views[i]);
		bytes[i] = VARDATA(v);
		lens[i] = VARSIZE(v) - VARHDRSZ;
		bound = Min(bound, views[i].count);
	}
	out = palloc(Max((size_t) bound, 1) * sizeof(uint32));

	if (gpx_worker_present())
	{
		/* the worker owns the device: no engine in this session */
		GpxWorkerList *lists = palloc0(n * sizeof(GpxWorkerList));
		uint32		total;

		for (int i = 0; i < n; i++)
		{
			lists[i].bytes = bytes[i];
			lists[i].len = lens[i];
		}
		if (!gpx_worker_intersect(lists, n, GPUIDX_RESULT_IDS, out, bound, &count, &total))
			count = intersect_on_cpu(views, n, out);
		PG_RETURN_DATUM(pl_make_datum(out, count));
	}

	engine_acquire();
	refs = palloc0(n * sizeof(gpuidx_term_ref));
	for (int i = 0; i < n; i++)
	{
		refs[i].bytes = bytes[i];
		refs[i].len = lens[i];
	}
	memset(&q, 0, sizeof(q));
	q.terms = refs;
	q.nterms = n;
	q.out = out;
	q.out_capacity = bound;
	st = engine_api->run_batch(engine, &q, 1, NULL, &err);
	count = q.out_count;
	if (st != GPUIDX_ENGINE_OK || q.status != GPUIDX_ENGINE_OK)
	{
		if (st == GPUIDX_ENGINE_ERR_DEVICE_LOST)
			engine_release();
		ereport(DEBUG1,
				(errmsg("gpuidx engine failed (%s), intersecting on the CPU",
						engine_status_name(st != GPUIDX_ENGINE_OK ? st : q.status))));
		count = intersect_on_cpu(views, n, out);
	}
	PG_RETURN_DATUM(pl_make_datum(out, count));
}
