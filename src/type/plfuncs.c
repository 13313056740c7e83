/*
 * plfuncs.c
 *	  SQL functions and operators on postinglist values: size and codec
 *	  inspection, re-encoding, unnest, membership, ranges and the set
 *	  operations, all working on the compressed lists.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "cpu/cpu.h"
#include "type/postinglist.h"
#include "worker/worker.h"

GPUIDX_FUNCTION(pl_length);
GPUIDX_FUNCTION(pl_codec);
GPUIDX_FUNCTION(pl_encode_sql);
GPUIDX_FUNCTION(pl_unnest);
GPUIDX_FUNCTION(pl_contains_sql);
GPUIDX_FUNCTION(pl_contained);
GPUIDX_FUNCTION(pl_range);
GPUIDX_FUNCTION(pl_intersect);
GPUIDX_FUNCTION(pl_union);
GPUIDX_FUNCTION(pl_stats);
GPUIDX_FUNCTION(pl_and);
GPUIDX_FUNCTION(pl_or);
GPUIDX_FUNCTION(pl_minus);
GPUIDX_FUNCTION(pl_overlap);
GPUIDX_FUNCTION(pl_eq);
GPUIDX_FUNCTION(pl_ne);

Datum
pl_length(PG_FUNCTION_ARGS)
{
	pl_view		view;

	PG_GETARG_PL_VIEW(0, &view);
	PG_RETURN_INT64(view.count);
}

Datum
pl_codec(PG_FUNCTION_ARGS)
{
	pl_view		view;

	PG_GETARG_PL_VIEW(0, &view);
	PG_RETURN_TEXT_P(cstring_to_text(pl_codec_name(view.codec)));
}

Datum
pl_encode_sql(PG_FUNCTION_ARGS)
{
	pl_view		view;
	int			codec = pl_codec_from_name(text_to_cstring(PG_GETARG_TEXT_PP(1)));

	PG_GETARG_PL_VIEW(0, &view);
	PG_RETURN_DATUM(pl_make_datum_codec(pl_decode_palloc(&view), view.count, codec));
}

/* pl_unnest: one block decoded at a time */
typedef struct unnest_state
{
	pl_view		view;
	uint32		block;
	uint32		pos;
	uint32		len;
	uint32		buf[GPUIDX_LRC_SEGMENT];
} unnest_state;

Datum
pl_unnest(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	unnest_state *st;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcxt;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcxt = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		st = palloc0(sizeof(unnest_state));
		/* detoasted into the multi-call context, so the view outlives this call */
		pl_open_datum(PointerGetDatum(PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0))), &st->view);
		funcctx->user_fctx = st;
		MemoryContextSwitchTo(oldcxt);
	}
	funcctx = SRF_PERCALL_SETUP();
	st = (unnest_state *) funcctx->user_fctx;
	if (st->pos == st->len)
	{
		int			n;

		if (st->block >= st->view.nblocks)
			SRF_RETURN_DONE(funcctx);
		n = pl_decode_block(&st->view, st->block++, st->buf);
		if (n < 0)
			pl_report_corrupt(PL_ERR_ORDER);
		st->len = (uint32) n;
		st->pos = 0;
	}
	SRF_RETURN_NEXT(funcctx, Int64GetDatum(st->buf[st->pos++]));
}

static bool
contains_id(Datum list, int64 id)
{
	pl_view		view;
	bool		found;
	pl_status	st;

	pl_open_datum(list, &view);
	if (id < 0 || id > (int64) PG_UINT32_MAX)
		return false;
	st = pl_contains(&view, (uint32) id, &found);
	if (st != PL_OK)
		pl_report_corrupt(st);
	return found;
}

Datum
pl_contains_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(contains_id(PG_GETARG_DATUM(0), PG_GETARG_INT64(1)));
}

Datum
pl_contained(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(contains_id(PG_GETARG_DATUM(1), PG_GETARG_INT64(0)));
}

Datum
pl_range(PG_FUNCTION_ARGS)
{
	uint32		lo = pl_checked_id(PG_GETARG_INT64(0));
	uint32		hi = pl_checked_id(PG_GETARG_INT64(1));
	uint64		n = lo <= hi ? (uint64) hi - lo + 1 : 0;
	uint32	   *values;

	if (n > GPUIDX_MAX_POSTINGS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("posting list would have %llu document ids", (unsigned long long) n),
				 errdetail("A posting list holds at most %u document ids.", GPUIDX_MAX_POSTINGS)));
	values = palloc(Max(n, 1) * sizeof(uint32));
	for (uint64 i = 0; i < n; i++)
		values[i] = lo + (uint32) i;
	PG_RETURN_DATUM(pl_make_datum(values, (uint32) n));
}

/*
 * Open every list of a postinglist[]; false when any element is NULL (the
 * variadic set operations then return NULL, as an operator chain would).
 */
static bool
open_list_array(ArrayType *arr, pl_view **views, const void ***bytes, int *n)
{
	Datum	   *elems;
	bool	   *nulls;

	deconstruct_array(arr, ARR_ELEMTYPE(arr), -1, false, TYPALIGN_INT, &elems, &nulls, n);
	*views = palloc(Max(*n, 1) * sizeof(pl_view));
	if (bytes)
		*bytes = palloc(Max(*n, 1) * sizeof(void *));
	for (int i = 0; i < *n; i++)
	{
		struct varlena *v;

		if (nulls[i])
			return false;
		v = pl_open_datum(elems[i], &(*views)[i]);
		if (bytes)
			(*bytes)[i] = VARDATA(v);
	}
	return true;
}

/*
 * The intersection of opened lists, its rounds placed between the GPU
 * worker and this backend (worker/worker.h); out has room for the shortest.
 */
static uint32
intersect_views(const pl_view *views, const void **bytes, int n, uint32 *out)
{
	const pl_view **order = palloc(n * sizeof(pl_view *));
	uint64	   *lens = palloc(n * sizeof(uint64));
	bool		used_worker;
	uint32		count;

	for (int i = 0; i < n; i++)
	{
		order[i] = &views[i];
		lens[i] = views[i].total_bytes;
	}
	count = gpx_intersect_placed(order, bytes, lens, n, out, &used_worker);
	pfree(order);
	pfree(lens);
	return pl_checked_count(count);
}

Datum
pl_intersect(PG_FUNCTION_ARGS)
{
	pl_view    *views;
	const void **bytes;
	int			n;
	uint32		shortest = PG_UINT32_MAX;
	uint32	   *out;

	if (!open_list_array(PG_GETARG_ARRAYTYPE_P(0), &views, &bytes, &n) || n == 0)
		PG_RETURN_NULL();
	for (int i = 0; i < n; i++)
		shortest = Min(shortest, views[i].count);
	out = palloc(Max((size_t) shortest, 1) * sizeof(uint32));
	PG_RETURN_DATUM(pl_make_datum(out, intersect_views(views, bytes, n, out)));
}

/* union of lists: fold each into a running array */
static Datum
union_views(const pl_view *views, int n)
{
	size_t		total = 0;
	uint32	   *acc;
	uint32	   *next;
	uint32		count = 0;

	for (int i = 0; i < n; i++)
		total += views[i].count;
	acc = palloc_extended(Max(total, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	next = palloc_extended(Max(total, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (int i = 0; i < n; i++)
	{
		uint32	   *t;

		count = pl_checked_count(cpu_union_array_list(acc, count, &views[i], next));
		t = acc;
		acc = next;
		next = t;
		if (count > GPUIDX_MAX_POSTINGS)
			break;
	}
	return pl_make_datum(acc, count);
}

Datum
pl_union(PG_FUNCTION_ARGS)
{
	pl_view    *views;
	int			n;

	if (!open_list_array(PG_GETARG_ARRAYTYPE_P(0), &views, NULL, &n))
		PG_RETURN_NULL();
	PG_RETURN_DATUM(union_views(views, n));
}

Datum
pl_stats(PG_FUNCTION_ARGS)
{
	pl_view		view;
	struct varlena *v = PG_GETARG_PL_VIEW(0, &view);
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = CStringGetTextDatum(pl_codec_name(view.codec));
	values[1] = Int64GetDatum(view.count);
	values[2] = Int32GetDatum(VARSIZE(v));
	if (view.count > 0)
		values[3] = Float8GetDatum((double) VARSIZE(v) * 8.0 / view.count);
	else
		nulls[3] = true;
	values[4] = Int32GetDatum(view.codec == GPUIDX_CODEC_RAW ? 0 : (int32) view.nblocks);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
pl_and(PG_FUNCTION_ARGS)
{
	pl_view		views[2];
	const void *bytes[2];
	uint32	   *out;

	bytes[0] = VARDATA(PG_GETARG_PL_VIEW(0, &views[0]));
	bytes[1] = VARDATA(PG_GETARG_PL_VIEW(1, &views[1]));
	out = palloc(Max((size_t) Min(views[0].count, views[1].count), 1) * sizeof(uint32));
	PG_RETURN_DATUM(pl_make_datum(out, intersect_views(views, bytes, 2, out)));
}

Datum
pl_or(PG_FUNCTION_ARGS)
{
	pl_view		views[2];

	PG_GETARG_PL_VIEW(0, &views[0]);
	PG_GETARG_PL_VIEW(1, &views[1]);
	PG_RETURN_DATUM(union_views(views, 2));
}

Datum
pl_minus(PG_FUNCTION_ARGS)
{
	pl_view		a,
				b;
	uint32	   *values;
	uint32		n;

	PG_GETARG_PL_VIEW(0, &a);
	PG_GETARG_PL_VIEW(1, &b);
	values = pl_decode_palloc(&a);
	n = pl_checked_count(cpu_difference_array_list(values, a.count, &b, values, CPU_METHOD_AUTO, NULL));
	PG_RETURN_DATUM(pl_make_datum(values, n));
}

Datum
pl_overlap(PG_FUNCTION_ARGS)
{
	pl_view		a,
				b;
	uint32		first;

	PG_GETARG_PL_VIEW(0, &a);
	PG_GETARG_PL_VIEW(1, &b);
	PG_RETURN_BOOL(pl_checked_count(cpu_intersect_lists(&a, &b, &first, CPU_METHOD_AUTO, 1, NULL)) > 0);
}

static bool
lists_equal(FunctionCallInfo fcinfo)
{
	pl_view		a,
				b;
	bool		equal;
	pl_status	st;

	PG_GETARG_PL_VIEW(0, &a);
	PG_GETARG_PL_VIEW(1, &b);
	st = cpu_lists_equal(&a, &b, &equal);
	if (st != PL_OK)
		pl_report_corrupt(st);
	return equal;
}

Datum
pl_eq(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(lists_equal(fcinfo));
}

Datum
pl_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(!lists_equal(fcinfo));
}
