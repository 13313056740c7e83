/*
 * flaky_engine.c
 *	  A test engine for the GPU worker's retries: the CPU engine under the
 *	  kind "flaky", whose create fails (as a busy or missing device does)
 *	  until a file named gpuidx_flaky_engine.ok exists in the engine
 *	  process's working directory (the data directory).  t/019 installs it
 *	  as gpuidx.engine_library and checks that the engine process tries it
 *	  again, backing off, and serves with it once it starts.  Never
 *	  installed by `make install`: `make install-test-engine`.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"

#define FLAKY_READY_FILE "gpuidx_flaky_engine.ok"

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

__attribute__((visibility("default"))) const gpuidx_engine_api *
gpuidx_engine_entry(uint32_t abi_version)
{
	if (abi_version != GPUIDX_ENGINE_ABI_VERSION)
		return NULL;
	flaky_api = *cpu_engine_api();
	flaky_api.create = flaky_create;
	flaky_api.get_info = flaky_get_info;
	return &flaky_api;
}
