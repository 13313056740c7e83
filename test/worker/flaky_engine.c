/*
 * flaky_engine.c
 *	  A test engine for the GPU worker: the CPU engine under the kind
 *	  "flaky", whose create fails (as a busy or missing device does) until a
 *	  file named gpuidx_flaky_engine.ok exists in the engine process's
 *	  working directory (the data directory), and whose answers are wrong
 *	  while a file gpuidx_flaky_engine.lie exists there (ids out of order,
 *	  counts past the lists, ranked docs past the segment).  t/019 installs
 *	  it as gpuidx.engine_library and checks that the engine process tries
 *	  it again, backing off, serves with it once it starts, and that
 *	  backends refuse its wrong answers.  Never installed by `make install`:
 *	  `make install-test-engine`.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"

#define FLAKY_READY_FILE "gpuidx_flaky_engine.ok"
#define FLAKY_LIE_FILE "gpuidx_flaky_engine.lie"

static gpuidx_engine_api flaky_api;

static int
flaky_create(const gpuidx_engine_config *config, gpuidx_engine **engine, gpuidx_engine_error *error)
{
	if (access(FLAKY_READY_FILE, F_OK) != 0)
	{
		engine_set_error(error, GPUIDX_ENGINE_ERR_NO_DEVICE, __FILE__, __LINE__,
						 "the flaky test device is busy (no %s yet)", FLAKY_READY_FILE);
		return GPUIDX_ENGINE_ERR_NO_DEVICE;
	}
	return cpu_engine_api()->create(config, engine, error);
}

static int
flaky_get_info(gpuidx_engine *engine, gpuidx_engine_info *info)
{
	int			st = cpu_engine_api()->get_info(engine, info);

	snprintf(info->kind, sizeof(info->kind), "flaky");
	snprintf(info->device_name, sizeof(info->device_name), "flaky test device");
	return st;
}

static int
flaky_run_batch(gpuidx_engine *engine, gpuidx_query *queries, uint32_t n, gpuidx_batch_stats *stats,
				gpuidx_engine_error *error)
{
	int			st = cpu_engine_api()->run_batch(engine, queries, n, stats, error);

	if (st != GPUIDX_ENGINE_OK || access(FLAKY_LIE_FILE, F_OK) != 0)
		return st;
	for (uint32_t q = 0; q < n; q++)
	{
		gpuidx_query *qq = &queries[q];

		if (qq->status != GPUIDX_ENGINE_OK)
			continue;
		if (qq->out_count >= 2)
		{
			uint32_t	first = qq->out[0];

			qq->out[0] = qq->out[1];
			qq->out[1] = first;
		}
		else
			qq->total = UINT32_MAX;
	}
	return st;
}

static int
flaky_run_ranked(gpuidx_engine *engine, gpuidx_rank_query *queries, uint32_t n, gpuidx_batch_stats *stats,
				 gpuidx_engine_error *error)
{
	int			st = cpu_engine_api()->run_ranked(engine, queries, n, stats, error);

	if (st != GPUIDX_ENGINE_OK || access(FLAKY_LIE_FILE, F_OK) != 0)
		return st;
	for (uint32_t q = 0; q < n; q++)
		if (queries[q].status == GPUIDX_ENGINE_OK && queries[q].out_count > 0)
			queries[q].out_docs[0] = UINT32_MAX - 1;
		else
			queries[q].matched = UINT32_MAX;
	return st;
}

__attribute__((visibility("default"))) const gpuidx_engine_api *
gpuidx_engine_entry(uint32_t abi_version)
{
	if (abi_version != GPUIDX_ENGINE_ABI_VERSION)
		return NULL;
	flaky_api = *cpu_engine_api();
	flaky_api.create = flaky_create;
	flaky_api.get_info = flaky_get_info;
	flaky_api.run_batch = flaky_run_batch;
	flaky_api.run_ranked = flaky_run_ranked;
	return &flaky_api;
}
