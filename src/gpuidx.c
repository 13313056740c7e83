/*
 * gpuidx.c
 *	  Module entry: the magic block, _PG_init, the settings and the index's
 *	  reloptions.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "am/gpuidx_am.h"
#include "query/rankcache.h"
#include "text/tokenize.h"
#include "type/postinglist.h"
#include "scan/customscan.h"
#include "worker/worker.h"

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);

static const struct config_enum_entry codec_options[] = {
	{"auto", PL_CODEC_AUTO, false},
	{"ef", GPUIDX_CODEC_EF, false},
	{"lrc", GPUIDX_CODEC_LRC, false},
	{"raw", GPUIDX_CODEC_RAW, false},
	{NULL, 0, false}
};

void
_PG_init(void)
{
	DefineCustomEnumVariable("gpuidx.codec",
							 "Codec for new posting lists.",
							 "\"auto\" stores each list in whichever of ef, lrc and raw is smallest.",
							 &gpuidx_codec_setting,
							 PL_CODEC_AUTO,
							 codec_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	gpx_text_define_settings();
	gpx_worker_define_settings();
	gq_rank_cache_define_settings();
	gpx_define_reloptions();
	gpx_forget_init();
	gpx_alter_check_init();
	gpx_customscan_init();
	gpx_rankplan_init();
	gpx_rankscan_init();
	MarkGUCPrefixReserved("gpuidx");
	/* the GPU worker and its shared memory exist only when preloaded */
	if (process_shared_preload_libraries_in_progress)
		gpx_worker_register();
}
