/*
 * engine_sql.c
 *	  The engine as SQL sees it.  The GPU engine runs only in the GPU
 *	  worker's engine process, never in a backend (a driver fault there
 *	  would restart the whole server): gpuidx_engine_info() reports the
 *	  worker's engine, and gpuidx_engine_intersect() goes through the worker
 *	  when gpuidx is preloaded, else through the CPU engine in this backend.
 *	  Queries never fail for want of a GPU: any engine error answers on the
 *	  CPU.
 */
#include "gpuidx.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "cpu/cpu.h"
#include "engine/engine.h"
#include "type/postinglist.h"
#include "worker/shmem.h"
#include "worker/stats.h"

GPUIDX_FUNCTION(gpuidx_engine_info_sql);
GPUIDX_FUNCTION(gpuidx_engine_intersect);

/* this backend's CPU engine, made at first use */
static gpuidx_engine *cpu_engine = NULL;

static const gpuidx_engine_api *
cpu_engine_acquire(void)
{
	const gpuidx_engine_api *api = cpu_engine_api();
	gpuidx_engine_config cfg = {sizeof(cfg), 0, 64 << 20, 0, 1, 0};
	gpuidx_engine_error err;

	if (cpu_engine == NULL && api->create(&cfg, &cpu_engine, &err) != GPUIDX_ENGINE_OK)
	{
		cpu_engine = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create the CPU engine: %s", err.message)));
	}
	return api;
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
	char		library[MAXPGPATH];

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	gpx_engine_library_path(library, sizeof(library));
	values[2] = CStringGetTextDatum(library);
	if (gpx_queue != NULL && gpx_serving_generation() != 0)
	{
		/* the worker's engine, as its process reported it */
		char		kind[sizeof(gpx_queue->kind) + 1];
		char		device[sizeof(gpx_queue->device_name) + 1];
		char		note[sizeof(gpx_queue->note) + 1];

		gpx_engine_text(kind, gpx_queue->kind, sizeof(gpx_queue->kind));
		gpx_engine_text(device, gpx_queue->device_name, sizeof(gpx_queue->device_name));
		gpx_engine_text(note, gpx_queue->note, sizeof(gpx_queue->note));
		values[0] = CStringGetTextDatum(kind);
		values[1] = CStringGetTextDatum(device);
		if (strcmp(kind, "cpu") == 0 && note[0] != '\0')
			values[3] = CStringGetTextDatum(note);
		else
			nulls[3] = true;
	}
	else
	{
		values[0] = CStringGetTextDatum("cpu");
		values[1] = CStringGetTextDatum("");
		values[3] = CStringGetTextDatum(gpx_queue == NULL ?
										"the GPU engine runs in the GPU worker, which needs shared_preload_libraries = 'gpuidx'" :
										"the GPU worker's engine process is not serving");
	}
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
	const gpuidx_engine_api *api;

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

	api = cpu_engine_acquire();
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
	st = api->run_batch(cpu_engine, &q, 1, NULL, &err);
	count = q.out_count;
	if (st != GPUIDX_ENGINE_OK || q.status != GPUIDX_ENGINE_OK)
	{
		ereport(DEBUG1,
				(errmsg("gpuidx engine failed (%s), intersecting on the CPU",
						engine_status_name(st != GPUIDX_ENGINE_OK ? st : q.status))));
		count = intersect_on_cpu(views, n, out);
	}
	PG_RETURN_DATUM(pl_make_datum(out, count));
}
