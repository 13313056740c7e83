/*
 * gpuidx.h
 *	  Declarations shared by the extension's PostgreSQL-facing files.
 */
#ifndef GPUIDX_H
#define GPUIDX_H

#include "postgres.h"
#include "fmgr.h"

#include "pg_compat.h"

/*
 * The module is built with -fvisibility=hidden so that only SQL-callable
 * functions leave it; PostgreSQL 15's PG_FUNCTION_INFO_V1 exports the info
 * record but not the function, so export that too.
 */
#define GPUIDX_FUNCTION(name) \
	PG_FUNCTION_INFO_V1(name); \
	extern PGDLLEXPORT Datum name(PG_FUNCTION_ARGS)

#endif							/* GPUIDX_H */
