/*
 * engines.c
 *	  Which engine the engine process runs: the configured GPU engine, else
 *	  the CPU engine standing in while the GPU engine is tried again, backing
 *	  off; what it is, written into the queue segment for PostgreSQL to read.
 *	  And the small helpers the process's files share.
 */
#include "engine_process/engine_process.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"

int64_t
engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
engine_set_text(char *dst, size_t size, const char *src)
{
	size_t		n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* the GPU engine's config for cache_bytes of cached lists */
static gpuidx_engine_config
gpu_config(uint64_t cache_bytes)
{
	gpuidx_engine_config cfg = {sizeof(cfg), 0, cache_bytes, 0, 1, 0};

	return cfg;
}

static bool
cpu_engine_start(EngineProcess *e, char *why, size_t whylen)
{
	gpuidx_engine_config cfg = {sizeof(cfg), 0, 64 << 20, 0, 1, 0};
	gpuidx_engine_error err;

	memset(&err, 0, sizeof(err));
	e->api = cpu_engine_api();
	if (e->api->create(&cfg, &e->engine, &err) != GPUIDX_ENGINE_OK)
	{
		snprintf(why, whylen, "could not create the CPU engine: %s", err.message);
		return false;
	}
	return true;
}

/* what the engine is, into the header */
static void
publish_engine(EngineProcess *e, const char *note)
{
	gpuidx_engine_info info;

	memset(&info, 0, sizeof(info));
	e->api->get_info(e->engine, &info);
	info.kind[sizeof(info.kind) - 1] = '\0';
	info.device_name[sizeof(info.device_name) - 1] = '\0';
	engine_set_text(e->hdr->kind, sizeof(e->hdr->kind), info.kind);
	engine_set_text(e->hdr->device_name, sizeof(e->hdr->device_name), info.device_name);
	engine_set_text(e->hdr->note, sizeof(e->hdr->note), note);
	__atomic_store_n(&e->hdr->is_gpu, strcmp(info.kind, "cpu") != 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->hdr->gpu_failed, e->gpu_api != NULL && e->api != e->gpu_api, __ATOMIC_RELAXED);
}

/*
 * The configured engine, else the CPU engine, with why in the header's
 * note; false only when even the CPU engine cannot be created.  A library
 * that loads but whose engine does not start is tried again later.
 */
bool
engine_open(EngineProcess *e, const char *library, uint64_t cache_bytes)
{
	gpuidx_engine_error err;
	char		why[512] = "";

	memset(&err, 0, sizeof(err));
	e->gpu_config = gpu_config(cache_bytes);
	e->gpu_backoff_ms = 1000;
	if (library[0] == '\0')
		snprintf(why, sizeof(why), "gpuidx.engine_library is empty");
	else if ((e->gpu_api = engine_load(library, why, sizeof(why))) != NULL)
	{
		int			st = e->gpu_api->create(&e->gpu_config, &e->engine, &err);

		if (st == GPUIDX_ENGINE_OK)
		{
			e->api = e->gpu_api;
			publish_engine(e, "");
			return true;
		}
		e->engine = NULL;
		if (st == GPUIDX_ENGINE_ERR_NO_DRIVER)
		{
			/* a machine without a GPU: nothing to wait for */
			snprintf(why, sizeof(why), "engine \"%s\" did not start: %s; not tried again until the server restarts",
					 library, err.message[0] ? err.message : engine_status_name(st));
			e->gpu_api = NULL;
		}
		else
		{
			snprintf(why, sizeof(why), "engine \"%s\" did not start: %s; trying again", library,
					 err.message[0] ? err.message : engine_status_name(st));
			e->gpu_next_try_ns = engine_now_ns() + e->gpu_backoff_ms * 1000000;
		}
	}
	if (!cpu_engine_start(e, why, sizeof(why)))
	{
		engine_set_text(e->hdr->note, sizeof(e->hdr->note), why);
		return false;
	}
	publish_engine(e, why);
	return true;
}

void
engine_retry_gpu(EngineProcess *e)
{
	gpuidx_engine *gpu = NULL;
	gpuidx_engine_error err;
	char		why[512];
	int			st;

	if (e->gpu_api == NULL || e->api == e->gpu_api || engine_now_ns() < e->gpu_next_try_ns)
		return;
	gpx_add_relaxed64(&e->hdr->counters[GPX_ENGINE_GPU_RETRIES], 1);
	memset(&err, 0, sizeof(err));
	st = e->gpu_api->create(&e->gpu_config, &gpu, &err);
	if (st != GPUIDX_ENGINE_OK)
	{
		/* 1 s, doubling to 5 minutes */
		e->gpu_backoff_ms = e->gpu_backoff_ms * 2 > 300000 ? 300000 : e->gpu_backoff_ms * 2;
		e->gpu_next_try_ns = engine_now_ns() + e->gpu_backoff_ms * 1000000;
		snprintf(why, sizeof(why), "the GPU engine did not start: %s; trying again in %lld s",
				 err.message[0] ? err.message : engine_status_name(st), (long long) (e->gpu_backoff_ms / 1000));
		engine_set_text(e->hdr->note, sizeof(e->hdr->note), why);
		return;
	}
	/*
	 * The GPU serves from the next batch.  The lists the CPU engine cached
	 * are not on the device: requests naming them are answered NOT_CACHED,
	 * and their backends forget them (gpucache.h).
	 */
	e->api->destroy(e->engine);
	e->engine = gpu;
	e->api = e->gpu_api;
	publish_engine(e, "");
}
