/*
 * plutils.c
 *	  Opening, building and decoding postinglist datums, and the errors that
 *	  go with them.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "cpu/cpu.h"
#include "type/postinglist.h"

int			gpuidx_codec_setting = PL_CODEC_AUTO;

/* no list is ever made with more ids than the limit: one that says so is damaged */
void
pl_report_corrupt(pl_status status)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("posting list is corrupt"),
			 errdetail("%s.", pl_status_message(status))));
}

uint32
pl_checked_count(uint32 count)
{
	if (count == CPU_CORRUPT)
		pl_report_corrupt(PL_ERR_ORDER);
	return count;
}

struct varlena *
pl_open_datum(Datum d, pl_view *view)
{
	struct varlena *v = PG_DETOAST_DATUM(d);
	pl_status	status;

	status = pl_open(view, VARDATA(v), VARSIZE(v) - VARHDRSZ, PL_OPEN_VERIFY_CHECKSUM);
	if (status != PL_OK)
		pl_report_corrupt(status);
	return v;
}

Datum
pl_make_datum_codec(const uint32 *values, uint32 n, int codec)
{
	size_t		size;
	struct varlena *result;

	if (n > GPUIDX_MAX_POSTINGS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("posting list would have %u document ids", n),
				 errdetail("A posting list holds at most %u document ids.", GPUIDX_MAX_POSTINGS)));
	if (codec == PL_CODEC_AUTO)
		codec = pl_choose_codec(values, n);
	size = pl_encoded_size(codec, values, n);
	if (size > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("posting list of %u document ids needs %zu bytes with codec %s",
						n, size, pl_codec_name(codec)),
				 errdetail("A value is limited to 1 GB; codec \"auto\" picks the smallest encoding.")));
	result = (struct varlena *) palloc(size + VARHDRSZ);
	SET_VARSIZE(result, size + VARHDRSZ);
	pl_encode(codec, values, n, VARDATA(result));
	return PointerGetDatum(result);
}

Datum
pl_make_datum(const uint32 *values, uint32 n)
{
	return pl_make_datum_codec(values, n, gpuidx_codec_setting);
}

uint32 *
pl_decode_palloc(const pl_view *view)
{
	uint32	   *out = palloc(Max((size_t) view->count, 1) * sizeof(uint32));
	pl_status	status = pl_decode(view, out);

	if (status != PL_OK)
		pl_report_corrupt(status);
	return out;
}

uint32
pl_sort_unique(uint32 *values, uint32 n)
{
	uint32	   *tmp;

	if (n < 2)
		return n;
	tmp = palloc_extended((size_t) n * sizeof(uint32), MCXT_ALLOC_HUGE);
	cpu_sort_u32(values, n, tmp);
	pfree(tmp);
	return (uint32) cpu_unique_u32(values, n);
}

uint32
pl_checked_id(int64 value)
{
	if (value < 0 || value > (int64) PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("document id %lld is out of range for a posting list", (long long) value),
				 errdetail("Document ids are integers from 0 to 4294967295.")));
	return (uint32) value;
}

static const char *const codec_names[GPUIDX_NUM_CODECS] = {"raw", "ef", "lrc"};

const char *
pl_codec_name(int codec)
{
	if (codec == PL_CODEC_AUTO)
		return "auto";
	Assert(codec >= 0 && codec < GPUIDX_NUM_CODECS);
	return codec_names[codec];
}

int
pl_codec_from_name(const char *name)
{
	for (int c = 0; c < GPUIDX_NUM_CODECS; c++)
		if (pg_strcasecmp(name, codec_names[c]) == 0)
			return c;
	if (pg_strcasecmp(name, "auto") == 0)
		return PL_CODEC_AUTO;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown posting list codec \"%s\"", name),
			 errhint("Valid codecs are \"auto\", \"ef\", \"lrc\" and \"raw\".")));
	return 0;					/* keep compiler quiet */
}
