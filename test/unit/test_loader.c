/*
 * test_loader.c
 *	  Loading engines: a missing object, an object that is no engine, and the
 *	  CUDA engine when it was built (without a GPU its creation must fail
 *	  cleanly with NO_DEVICE, which sends gpuidx to the CPU engine).
 */
#include "unit.h"
#include "engine/engine.h"

#include <unistd.h>

int
main(void)
{
	char		err[512];
	const gpuidx_engine_api *api;

	api = engine_load("/nonexistent/gpuidx_cuda.so", err, sizeof(err));
	CHECK(api == NULL && strstr(err, "could not load engine") != NULL, "missing file: %s", err);
	api = engine_load("libm.so.6", err, sizeof(err));
	CHECK(api == NULL && strstr(err, "is not a gpuidx engine") != NULL, "not an engine: %s", err);

	api = cpu_engine_api();
	CHECK(api != NULL && api->abi_version == GPUIDX_ENGINE_ABI_VERSION, "CPU engine table");

	if (access("cuda/build/gpuidx_cuda.so", R_OK) == 0)
	{
		gpuidx_engine_config cfg = {sizeof(cfg), 0, 1 << 20, 0, 1, 0};
		gpuidx_engine_config small = {4, 0, 0, 0, 0, 0};
		gpuidx_engine_error e;
		gpuidx_engine *engine = NULL;
		int			st;

		api = engine_load("cuda/build/gpuidx_cuda.so", err, sizeof(err));
		CHECK(api != NULL, "the CUDA engine loads: %s", err);
		if (api != NULL)
		{
			CHECK(api->create(&small, &engine, &e) == GPUIDX_ENGINE_ERR_INVALID,
				  "a configuration of the wrong size is refused");
			st = api->create(&cfg, &engine, &e);
			if (st == GPUIDX_ENGINE_OK)
			{
				printf("test_loader: a GPU is present (%s)\n", e.message);
				api->destroy(engine);
			}
			else
				CHECK(st == GPUIDX_ENGINE_ERR_NO_DEVICE || st == GPUIDX_ENGINE_ERR_NO_DRIVER,
					  "no GPU: NO_DEVICE or NO_DRIVER, got %d (%s)", st, e.message);
		}
	}
	else
		printf("test_loader: cuda/build/gpuidx_cuda.so not built; CUDA engine part skipped\n");
	return unit_report("test_loader");
}
