/*
 * plio.c
 *	  postinglist input and output: text '{1,5,9}', binary (the encoded list
 *	  itself, fully validated on receipt) and casts from and to int4[]/int8[].
 *
 * Input from text and arrays is a set: it is sorted and duplicates dropped.
 * Binary input (the protocol, or a cast from bytea) must already be a valid
 * encoded list; it is checked in full and nothing is normalised.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "parser/scansup.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "cpu/cpu.h"
#include "type/postinglist.h"

GPUIDX_FUNCTION(postinglist_in);
GPUIDX_FUNCTION(postinglist_out);
GPUIDX_FUNCTION(postinglist_recv);
GPUIDX_FUNCTION(postinglist_send);
GPUIDX_FUNCTION(postinglist_from_int4_array);
GPUIDX_FUNCTION(postinglist_from_int8_array);
GPUIDX_FUNCTION(postinglist_to_int4_array);
GPUIDX_FUNCTION(postinglist_to_int8_array);
GPUIDX_FUNCTION(postinglist_from_bytea);
GPUIDX_FUNCTION(postinglist_to_bytea);

/* a growable array of ids that may hold more entries than a list (repeats) */
typedef struct id_buffer
{
	uint32	   *values;
	size_t		n;
	size_t		cap;
} id_buffer;

static void
id_buffer_push(id_buffer *buf, uint32 v)
{
	if (buf->n == buf->cap)
	{
		buf->cap = buf->cap ? buf->cap * 2 : 64;
		if (buf->cap * sizeof(uint32) > MaxAllocHugeSize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many document ids in posting list input")));
		buf->values = buf->values
			? repalloc_huge(buf->values, buf->cap * sizeof(uint32))
			: palloc_extended(buf->cap * sizeof(uint32), MCXT_ALLOC_HUGE);
	}
	buf->values[buf->n++] = v;
}

/* sort, drop repeats and encode */
static Datum
id_buffer_to_datum(id_buffer *buf)
{
	size_t		n = buf->n;
	uint32	   *tmp;

	if (n > 1)
	{
		tmp = palloc_extended(n * sizeof(uint32), MCXT_ALLOC_HUGE);
		cpu_sort_u32(buf->values, n, tmp);
		pfree(tmp);
		n = cpu_unique_u32(buf->values, n);
	}
	if (n > GPUIDX_MAX_POSTINGS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("posting list would have %zu document ids", n),
				 errdetail("A posting list holds at most %u document ids.", GPUIDX_MAX_POSTINGS)));
	return pl_make_datum(buf->values, (uint32) n);
}

static void
syntax_error(const char *input, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type postinglist: \"%s\"", input),
			 errdetail("%s", detail)));
}

Datum
postinglist_in(PG_FUNCTION_ARGS)
{
	char	   *input = PG_GETARG_CSTRING(0);
	const char *p = input;
	id_buffer	buf = {0};

	while (scanner_isspace(*p))
		p++;
	if (*p++ != '{')
		syntax_error(input, "A posting list starts with \"{\".");
	while (scanner_isspace(*p))
		p++;
	if (*p == '}')
		p++;
	else
	{
		for (;;)
		{
			uint64		v = 0;
			bool		negative;
			bool		overflow = false;
			const char *start;

			while (scanner_isspace(*p))
				p++;
			/* the whole number first: its form decides before its range */
			start = p;
			negative = *p == '-';
			if (negative)
				p++;
			if (!isdigit((unsigned char) *p))
				syntax_error(input, "Expected a document id.");
			while (isdigit((unsigned char) *p))
			{
				v = v * 10 + (uint64) (*p++ - '0');
				overflow |= v > PG_UINT32_MAX;
				if (overflow)
					v = 0;
			}
			while (scanner_isspace(*p))
				p++;
			if (*p != ',' && *p != '}')
				syntax_error(input, "Expected \",\" or \"}\" after a document id.");
			if (overflow || (negative && v != 0))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("document id %s is out of range for a posting list",
								pnstrdup(start, strspn(start + 1, "0123456789") + 1)),
						 errdetail("Document ids are integers from 0 to 4294967295.")));
			id_buffer_push(&buf, (uint32) v);
			if (*p++ == '}')
				break;
		}
	}
	while (scanner_isspace(*p))
		p++;
	if (*p != '\0')
		syntax_error(input, "Junk after the closing \"}\".");
	PG_RETURN_DATUM(id_buffer_to_datum(&buf));
}

Datum
postinglist_out(PG_FUNCTION_ARGS)
{
	pl_view		view;
	StringInfoData out;
	uint32		buf[GPUIDX_LRC_SEGMENT];

	PG_GETARG_PL_VIEW(0, &view);
	initStringInfo(&out);
	appendStringInfoChar(&out, '{');
	for (uint32 b = 0; b < view.nblocks; b++)
	{
		int			n = pl_decode_block(&view, b, buf);

		if (n < 0)
			pl_report_corrupt(PL_ERR_ORDER);
		for (int j = 0; j < n; j++)
		{
			char		digits[12];
			int			len = pg_ultoa_n(buf[j], digits);

			if (out.len > 1)
				appendStringInfoChar(&out, ',');
			appendBinaryStringInfo(&out, digits, len);
		}
	}
	appendStringInfoChar(&out, '}');
	PG_RETURN_CSTRING(out.data);
}

Datum
postinglist_send(PG_FUNCTION_ARGS)
{
	pl_view		view;
	struct varlena *v = PG_GETARG_PL_VIEW(0, &view);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendbytes(&buf, VARDATA(v), VARSIZE(v) - VARHDRSZ);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * An encoded list from untrusted bytes: checksum, structure and every
 * posting checked before it becomes a value.
 */
static struct varlena *
list_from_untrusted(const char *bytes, int len)
{
	struct varlena *result = palloc(len + VARHDRSZ);
	pl_view		view;
	pl_status	status;

	SET_VARSIZE(result, len + VARHDRSZ);
	memcpy(VARDATA(result), bytes, len);
	status = pl_open(&view, VARDATA(result), len, PL_OPEN_VERIFY_CHECKSUM);
	if (status == PL_OK)
		status = pl_validate(&view);
	if (status != PL_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid binary posting list"),
				 errdetail("%s.", pl_status_message(status))));
	return result;
}

Datum
postinglist_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			len = buf->len - buf->cursor;
	const char *bytes = pq_getmsgbytes(buf, len);

	PG_RETURN_POINTER(list_from_untrusted(bytes, len));
}

/* bytea <-> postinglist: the encoded list itself, as in the binary protocol */
Datum
postinglist_from_bytea(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_POINTER(list_from_untrusted(VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes)));
}

Datum
postinglist_to_bytea(PG_FUNCTION_ARGS)
{
	pl_view		view;
	struct varlena *v = PG_GETARG_PL_VIEW(0, &view);

	PG_RETURN_BYTEA_P(v);
}

/* the elements of a one-dimensional array without NULLs */
static void *
array_elements(ArrayType *arr, int *n)
{
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("posting lists are made from one-dimensional arrays")));
	if (array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("posting list cannot contain NULL document ids")));
	*n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	return ARR_DATA_PTR(arr);
}

Datum
postinglist_from_int4_array(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	int			n;
	const int32 *elems = array_elements(arr, &n);
	id_buffer	buf = {0};

	for (int i = 0; i < n; i++)
		id_buffer_push(&buf, pl_checked_id(elems[i]));
	PG_RETURN_DATUM(id_buffer_to_datum(&buf));
}

Datum
postinglist_from_int8_array(PG_FUNCTION_ARGS)
{
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	int			n;
	const int64 *elems = array_elements(arr, &n);
	id_buffer	buf = {0};

	for (int i = 0; i < n; i++)
		id_buffer_push(&buf, pl_checked_id(elems[i]));
	PG_RETURN_DATUM(id_buffer_to_datum(&buf));
}

/* a one-dimensional array of n elements of elemtype, without NULLs */
static ArrayType *
new_array(Oid elemtype, int elemsize, uint32 n)
{
	size_t		nbytes = ARR_OVERHEAD_NONULLS(1) + (size_t) n * elemsize;
	ArrayType  *result;

	if (nbytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("posting list of %u document ids is too long for an array", n)));
	result = palloc0(nbytes);
	SET_VARSIZE(result, nbytes);
	result->ndim = 1;
	result->dataoffset = 0;
	result->elemtype = elemtype;
	ARR_DIMS(result)[0] = (int) n;
	ARR_LBOUND(result)[0] = 1;
	return result;
}

Datum
postinglist_to_int4_array(PG_FUNCTION_ARGS)
{
	pl_view		view;
	uint32	   *values;
	ArrayType  *result;

	PG_GETARG_PL_VIEW(0, &view);
	if (view.count == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT4OID));
	if (view.last > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("document id %u is out of range for type integer", view.last),
				 errhint("Cast to bigint[] instead.")));
	values = pl_decode_palloc(&view);
	result = new_array(INT4OID, sizeof(int32), view.count);
	memcpy(ARR_DATA_PTR(result), values, (size_t) view.count * sizeof(int32));
	PG_RETURN_ARRAYTYPE_P(result);
}

Datum
postinglist_to_int8_array(PG_FUNCTION_ARGS)
{
	pl_view		view;
	uint32	   *values;
	ArrayType  *result;
	int64	   *out;

	PG_GETARG_PL_VIEW(0, &view);
	if (view.count == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	values = pl_decode_palloc(&view);
	result = new_array(INT8OID, sizeof(int64), view.count);
	out = (int64 *) ARR_DATA_PTR(result);
	for (uint32 i = 0; i < view.count; i++)
		out[i] = values[i];
	PG_RETURN_ARRAYTYPE_P(result);
}
