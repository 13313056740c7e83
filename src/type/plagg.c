/*
 * plagg.c
 *	  Aggregates building posting lists: pl_agg(bigint), pl_union_agg and
 *	  pl_intersect_agg, with combine, serialize and deserialize functions so
 *	  they run in parallel plans.
 *
 * The collecting aggregates append ids and sort them once at the end (with a
 * compaction whenever the buffer fills); the intersecting one keeps a sorted
 * array and intersects each input list into it in place.
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "cpu/cpu.h"
#include "type/postinglist.h"

GPUIDX_FUNCTION(pl_agg_transfn);
GPUIDX_FUNCTION(pl_collect_transfn);
GPUIDX_FUNCTION(pl_collect_combinefn);
GPUIDX_FUNCTION(pl_collect_finalfn);
GPUIDX_FUNCTION(pl_intersect_transfn);
GPUIDX_FUNCTION(pl_intersect_combinefn);
GPUIDX_FUNCTION(pl_intersect_finalfn);
GPUIDX_FUNCTION(pl_state_serialize);
GPUIDX_FUNCTION(pl_state_deserialize);

typedef struct pl_agg_state
{
	uint32	   *values;
	size_t		n;
	size_t		cap;
	size_t		sorted_upto;	/* values[0..sorted_upto) is sorted and unique */
} pl_agg_state;

static MemoryContext
agg_context(FunctionCallInfo fcinfo)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "aggregate function called in non-aggregate context");
	return aggcxt;
}

static pl_agg_state *
state_new(MemoryContext cxt, size_t cap)
{
	pl_agg_state *st = MemoryContextAllocZero(cxt, sizeof(pl_agg_state));

	st->cap = Max(cap, 64);
	st->values = MemoryContextAllocHuge(cxt, st->cap * sizeof(uint32));
	return st;
}

static pl_agg_state *
state_copy(MemoryContext cxt, const pl_agg_state *src)
{
	pl_agg_state *st = state_new(cxt, src->n);

	memcpy(st->values, src->values, src->n * sizeof(uint32));
	st->n = src->n;
	st->sorted_upto = src->sorted_upto;
	return st;
}

/*
 * A state that may not exist yet (no list seen): SQL NULL then, never a
 * NULL pointer the next call or the final function would take for a state.
 */
static Datum
state_or_null(FunctionCallInfo fcinfo, pl_agg_state *st)
{
	if (st == NULL)
		PG_RETURN_NULL();
	PG_RETURN_POINTER(st);
}

/* sort and drop repeats; the state then holds a set */
static void
state_compact(pl_agg_state *st)
{
	if (st->sorted_upto == st->n)
		return;
	st->n = pl_sort_unique(st->values, (uint32) Min(st->n, (size_t) PG_UINT32_MAX));
	st->sorted_upto = st->n;
}

/* make room for more ids: compact first, grow only if that was not enough */
static void
state_reserve(pl_agg_state *st, size_t more)
{
	if (st->n + more <= st->cap)
		return;
	state_compact(st);
	if (st->n + more <= st->cap && st->n < st->cap / 2)
		return;
	if (st->n > GPUIDX_MAX_POSTINGS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("posting list would have more than %u document ids", GPUIDX_MAX_POSTINGS)));
	st->cap = Max(st->cap * 2, st->n + more);
	st->values = repalloc_huge(st->values, st->cap * sizeof(uint32));
}

Datum
pl_agg_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	pl_agg_state *st = PG_ARGISNULL(0) ? state_new(cxt, 64) : (pl_agg_state *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		uint32		id = pl_checked_id(PG_GETARG_INT64(1));

		state_reserve(st, 1);
		st->values[st->n++] = id;
	}
	PG_RETURN_POINTER(st);
}

Datum
pl_collect_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	pl_agg_state *st = PG_ARGISNULL(0) ? state_new(cxt, 64) : (pl_agg_state *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		pl_view		view;

		PG_GETARG_PL_VIEW(1, &view);
		state_reserve(st, view.count);
		if (pl_decode(&view, st->values + st->n) != PL_OK)
			pl_report_corrupt(PL_ERR_ORDER);
		st->n += view.count;
	}
	PG_RETURN_POINTER(st);
}

Datum
pl_collect_combinefn(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	pl_agg_state *a = PG_ARGISNULL(0) ? NULL : (pl_agg_state *) PG_GETARG_POINTER(0);
	pl_agg_state *b = PG_ARGISNULL(1) ? NULL : (pl_agg_state *) PG_GETARG_POINTER(1);

	if (b == NULL)
		return state_or_null(fcinfo, a);
	if (a == NULL)
		PG_RETURN_POINTER(state_copy(cxt, b));
	state_reserve(a, b->n);
	memcpy(a->values + a->n, b->values, b->n * sizeof(uint32));
	a->n += b->n;
	PG_RETURN_POINTER(a);
}

Datum
pl_collect_finalfn(PG_FUNCTION_ARGS)
{
	pl_agg_state *st;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (pl_agg_state *) PG_GETARG_POINTER(0);
	state_compact(st);
	if (st->n > GPUIDX_MAX_POSTINGS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("posting list would have more than %u document ids", GPUIDX_MAX_POSTINGS)));
	PG_RETURN_DATUM(pl_make_datum(st->values, (uint32) st->n));
}

Datum
pl_intersect_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	pl_agg_state *st = PG_ARGISNULL(0) ? NULL : (pl_agg_state *) PG_GETARG_POINTER(0);
	pl_view		view;

	if (PG_ARGISNULL(1))
		return state_or_null(fcinfo, st);
	PG_GETARG_PL_VIEW(1, &view);
	if (st == NULL)
	{
		/* the first list is the running intersection */
		st = state_new(cxt, view.count);
		if (pl_decode(&view, st->values) != PL_OK)
			pl_report_corrupt(PL_ERR_ORDER);
		st->n = st->sorted_upto = view.count;
	}
	else if (st->n > 0)
		st->n = st->sorted_upto =
			pl_checked_count(cpu_intersect_array_list(st->values, (uint32) st->n, &view,
													  st->values, CPU_METHOD_AUTO, 0, NULL));
	PG_RETURN_POINTER(st);
}

Datum
pl_intersect_combinefn(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = agg_context(fcinfo);
	pl_agg_state *a = PG_ARGISNULL(0) ? NULL : (pl_agg_state *) PG_GETARG_POINTER(0);
	pl_agg_state *b = PG_ARGISNULL(1) ? NULL : (pl_agg_state *) PG_GETARG_POINTER(1);

	if (b == NULL)
		return state_or_null(fcinfo, a);
	if (a == NULL)
		PG_RETURN_POINTER(state_copy(cxt, b));
	a->n = a->sorted_upto = cpu_merge_intersect(a->values, (uint32) a->n, b->values,
												(uint32) b->n, a->values, PG_UINT32_MAX);
	PG_RETURN_POINTER(a);
}

Datum
pl_intersect_finalfn(PG_FUNCTION_ARGS)
{
	pl_agg_state *st;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (pl_agg_state *) PG_GETARG_POINTER(0);
	PG_RETURN_DATUM(pl_make_datum(st->values, (uint32) st->n));
}

/* a partial state as bytes: the sorted, unique ids */
Datum
pl_state_serialize(PG_FUNCTION_ARGS)
{
	pl_agg_state *st = (pl_agg_state *) PG_GETARG_POINTER(0);
	bytea	   *result;

	state_compact(st);
	if (st->n * sizeof(uint32) > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("partial posting list aggregate state too large")));
	result = palloc(VARHDRSZ + st->n * sizeof(uint32));
	SET_VARSIZE(result, VARHDRSZ + st->n * sizeof(uint32));
	memcpy(VARDATA(result), st->values, st->n * sizeof(uint32));
	PG_RETURN_BYTEA_P(result);
}

Datum
pl_state_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	size_t		len = VARSIZE_ANY_EXHDR(bytes);
	pl_agg_state *st;

	if (len % sizeof(uint32) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid posting list aggregate state")));
	st = state_new(agg_context(fcinfo), len / sizeof(uint32));
	memcpy(st->values, VARDATA_ANY(bytes), len);
	st->n = st->sorted_upto = len / sizeof(uint32);
	PG_RETURN_POINTER(st);
}
