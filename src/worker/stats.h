/*
 * stats.h
 *	  The GPU worker's counters (stats.c), as the rest of src/worker adds to
 *	  them, and the engine process's strings as PostgreSQL reads them.
 */
#ifndef GPX_WORKER_STATS_H
#define GPX_WORKER_STATS_H

#include "worker/shmem.h"

extern void gpx_count(GpxCounter c, uint64 n);
/* a request's wait since 'since', into the histogram */
extern void gpx_count_wait(instr_time since);

/*
 * One of the engine process's strings (size bytes in the segment), into
 * dst (size + 1 bytes) whatever it wrote: terminated, printable ASCII.
 */
extern void gpx_engine_text(char *dst, const char *src, size_t size);

#endif							/* GPX_WORKER_STATS_H */
