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

/* the CPU engine, noting why the configured one is not used */
static void
engine_use_cpu(const char *why)
{
	gpuidx_engine_config cfg = {sizeof(cfg), 0, 64 << 20, 0, 1, 0};
	gpuidx_engine_error err;

	strlcpy(engine_reason, why, sizeof(engine_reason));
	engine_api = cpu_engine_api();
	if (engine_api->create(&cfg, &engine, &err) != GPUIDX_ENGINE_OK)
		elog(ERROR, "could not create the CPU engine: %s", err.message);
	engine_api->get_info(engine, &engine_info);
}

/* the engine for the current setting, made or remade as needed */
static void
engine_acquire(void)
{
	char		path[MAXPGPATH];
	char		err[512];
	const gpuidx_engine_api *api;
	gpuidx_engine_config cfg = {sizeof(cfg), 0, 256 << 20, 64 << 20, 1, 0};
	gpuidx_engine_error eerr;
	int			st;

	if (gpuidx_engine_library == NULL || gpuidx_engine_library[0] == '\0')
		strlcpy(path, "", sizeof(path));
	else if (strncmp(gpuidx_engine_library, "$libdir/", 8) == 0)
		snprintf(path, sizeof(path), "%s/%s.so", pkglib_path, gpuidx_engine_library + 8);
	else
		strlcpy(path, gpuidx_engine_library, sizeof(path));
	if (engine != NULL && strcmp(path, engine_path) == 0)
		return;
	engine_release();
	strlcpy(engine_path, path, sizeof(engine_path));
	if (path[0] == '\0')
	{
		engine_use_cpu("gpuidx.engine_library is empty");
		return;
	}
	api = engine_load(path, err, sizeof(err));
	if (api == NULL)
	{
		engine_use_cpu(err);
		return;
	}
	memset(&eerr, 0, sizeof(eerr));
	st = api->create(&cfg, &engine, &eerr);
	if (st != GPUIDX_ENGINE_OK)
	{
		snprintf(err, sizeof(err), "engine \"%s\" did not start: %s: %s", path,
				 engine_status_name(st), eerr.message);
		engine = NULL;
		engine_use_cpu(err);
		return;
	}
	engine_api = api;
	engine_api->get_info(engine, &engine_info);
	engine_reason[0] = '\0';
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
	gpuidx_term_ref *refs;
	pl_view    *views;
	gpuidx_query q;
	gpuidx_engine_error err;
	uint32		bound = PG_UINT32_MAX;
	int			st;

	deconstruct_array(arr, ARR_ELEMTYPE(arr), -1, false, TYPALIGN_INT, &elems, &elem_nulls, &n);
	if (n == 0)
		PG_RETURN_NULL();
	if (n > GPUIDX_ENGINE_MAX_TERMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("an engine query intersects at most %d lists", GPUIDX_ENGINE_MAX_TERMS)));
	refs = palloc0(n * sizeof(gpuidx_term_ref));
	views = palloc(n * sizeof(pl_view));
	for (int i = 0; i < n; i++)
	{
		struct varlena *v;

		if (elem_nulls[i])
			PG_RETURN_NULL();
		v = pl_open_datum(elems[i], &views[i]);
		refs[i].bytes = VARDATA(v);
		refs[i].len = VARSIZE(v) - VARHDRSZ;
		bound = Min(bound, views[i].count);
	}
	if (gpx_worker_present())
	{
		/* the worker owns the device: no engine in this session */
		const void **bytes = palloc(n * sizeof(void *));
		uint64	   *lens = palloc(n * sizeof(uint64));
		uint32	   *out = palloc(Max((size_t) bound, 1) * sizeof(uint32));
		uint32		count;

		for (int i = 0; i < n; i++)
		{
			bytes[i] = refs[i].bytes;
			lens[i] = refs[i].len;
		}
		if (!gpx_worker_intersect(bytes, lens, n, out, bound, &count))
		{
			const pl_view **order = palloc(n * sizeof(pl_view *));

			for (int i = 0; i < n; i++)
				order[i] = &views[i];
			count = pl_checked_count(cpu_intersect_k(order, n, out, CPU_METHOD_AUTO, NULL));
		}
		PG_RETURN_DATUM(pl_make_datum(out, count));
	}
	engine_acquire();
	memset(&q, 0, sizeof(q));
	q.terms = refs;
	q.nterms = n;
	q.out = palloc(Max((size_t) bound, 1) * sizeof(uint32));
	q.out_capacity = bound;
	st = engine_api->run_batch(engine, &q, 1, NULL, &err);
	if (st != GPUIDX_ENGINE_OK || q.status != GPUIDX_ENGINE_OK)
	{
		/* never an error for the user because of the GPU: the CPU answers */
		const pl_view **order = palloc(n * sizeof(pl_view *));

		if (st == GPUIDX_ENGINE_ERR_DEVICE_LOST)
			engine_release();
		ereport(DEBUG1,
				(errmsg("gpuidx engine failed (%s), intersecting on the CPU",
						engine_status_name(st != GPUIDX_ENGINE_OK ? st : q.status))));
		for (int i = 0; i < n; i++)
			order[i] = &views[i];
		q.out_count = pl_checked_count(cpu_intersect_k(order, n, q.out, CPU_METHOD_AUTO, NULL));
	}
	PG_RETURN_DATUM(pl_make_datum(q.out, q.out_count));
}
