/*
 * harness.h
 *	  What the GPU checker and the GPU benchmark share: opening an engine by
 *	  name ("cpu" or the path of an engine shared object) and reading corpus
 *	  packs (real lists in gpuidx's own encoding plus real queries, written by
 *	  bench/gpu/make_pack from the codec benchmark's exports).
 *
 * Pack layout: "GPXPACK1" | u32 nlists | u32 nqueries |
 *   per list: u32 len | len bytes of an encoded list | zero padding to 8 |
 *   per query: u32 nterms | u32 list_index[nterms]
 */
#ifndef GPUIDX_HARNESS_H
#define GPUIDX_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "gpuidx_engine.h"

typedef struct engine_handle
{
	const gpuidx_engine_api *api;
	gpuidx_engine *engine;
	gpuidx_engine_info info;
} engine_handle;

/* 0 on success; otherwise a status with the reason in err */
extern int	engine_open(engine_handle *h, const char *spec, const gpuidx_engine_config *config,
						char *err, size_t errlen);
extern void engine_close(engine_handle *h);

typedef struct pack
{
	char		name[64];
	uint32_t	nlists;
	const uint8_t **lists;		/* 8-byte aligned encoded lists */
	uint32_t   *lens;
	uint32_t   *counts;			/* postings per list */
	uint32_t	nqueries;
	uint32_t   *query_first;	/* into terms */
	uint32_t   *query_nterms;
	uint32_t   *terms;
	uint8_t    *arena;
} pack;

/* exits with a message on a missing or malformed file */
extern void pack_load(pack *p, const char *path);
extern void pack_free(pack *p);

extern double harness_now(void);
extern void *harness_alloc(size_t size);
extern void harness_fail(const char *fmt,...) __attribute__((noreturn, format(printf, 1, 2)));

#endif							/* GPUIDX_HARNESS_H */
