/*
 * loader.c
 *	  Loading an engine shared object with dlopen, and the error helpers
 *	  engines share.
 */
#include "engine.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const gpuidx_engine_api *
engine_load(const char *path, char *errbuf, size_t errlen)
{
	void	   *handle;
	gpuidx_engine_entry_fn entry;
	const gpuidx_engine_api *api;

	/* RTLD_LOCAL: the engine's own symbols (CUDA runtime, C++) stay its own */
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL)
	{
		const char *why = dlerror();

		snprintf(errbuf, errlen, "could not load engine \"%s\": %s", path, why ? why : "unknown error");
		return NULL;
	}
	*(void **) (&entry) = dlsym(handle, GPUIDX_ENGINE_ENTRY_SYMBOL);
	if (entry == NULL)
	{
		snprintf(errbuf, errlen, "\"%s\" is not a gpuidx engine: it has no symbol %s",
				 path, GPUIDX_ENGINE_ENTRY_SYMBOL);
		dlclose(handle);
		return NULL;
	}
	api = entry(GPUIDX_ENGINE_ABI_VERSION);
	if (api == NULL || api->abi_version != GPUIDX_ENGINE_ABI_VERSION ||
		api->struct_size < sizeof(gpuidx_engine_api))
	{
		snprintf(errbuf, errlen, "engine \"%s\" was built for another engine ABI (this is version %d)",
				 path, GPUIDX_ENGINE_ABI_VERSION);
		dlclose(handle);
		return NULL;
	}
	return api;
}

void
engine_set_error(gpuidx_engine_error *error, int status, const char *file, int line,
				 const char *fmt,...)
{
	va_list		args;
	const char *base = strrchr(file, '/');

	if (error == NULL)
		return;
	error->status = status;
	error->line = line;
	snprintf(error->file, sizeof(error->file), "%s", base ? base + 1 : file);
	va_start(args, fmt);
	vsnprintf(error->message, sizeof(error->message), fmt, args);
	va_end(args);
}

const char *
engine_status_name(int status)
{
	switch (status)
	{
		case GPUIDX_ENGINE_OK:
			return "ok";
		case GPUIDX_ENGINE_ERR_INVALID:
			return "invalid argument";
		case GPUIDX_ENGINE_ERR_NOT_CACHED:
			return "list not cached";
		case GPUIDX_ENGINE_ERR_TOO_LARGE:
			return "too large";
		case GPUIDX_ENGINE_ERR_NO_DEVICE:
			return "no device";
		case GPUIDX_ENGINE_ERR_NO_DRIVER:
			return "no driver";
		case GPUIDX_ENGINE_ERR_OUT_OF_MEMORY:
			return "out of memory";
		case GPUIDX_ENGINE_ERR_LAUNCH:
			return "launch failure";
		case GPUIDX_ENGINE_ERR_DEVICE_LOST:
			return "device lost";
		default:
			return "internal error";
	}
}
