/*
 * engine.h
 *	  Finding an intersection engine: the CPU engine built into gpuidx, or an
 *	  engine shared object (the CUDA engine) loaded at run time.  No
 *	  PostgreSQL headers, so unit tests, the GPU checker and the benchmarks
 *	  use the same code as the extension.
 */
#ifndef GPUIDX_ENGINE_LOADER_H
#define GPUIDX_ENGINE_LOADER_H

#include <stddef.h>

#include "gpuidx_engine.h"

/* the CPU engine: src/cpu behind the engine table */
extern const gpuidx_engine_api *cpu_engine_api(void);

/*
 * Load the engine shared object at path and return its table, checked for
 * the ABI version and table size; NULL with a reason in errbuf otherwise.
 * The object stays loaded for the life of the process.
 */
extern const gpuidx_engine_api *engine_load(const char *path, char *errbuf, size_t errlen);

/* fill an error (helper for engines) */
extern void engine_set_error(gpuidx_engine_error *error, int status, const char *file,
							 int line, const char *fmt,...)
			__attribute__((format(printf, 5, 6)));

extern const char *engine_status_name(int status);

#endif							/* GPUIDX_ENGINE_LOADER_H */
