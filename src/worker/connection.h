/*
 * connection.h
 *	  This backend's socket to the engine process (connection.c).
 */
#ifndef GPX_WORKER_CONNECTION_H
#define GPX_WORKER_CONNECTION_H

#include "postgres.h"

typedef enum GpxWaitResult
{
	GPX_WAIT_WOKEN,				/* a message came, or the latch: look at the slot */
	GPX_WAIT_TIMEOUT,
	GPX_WAIT_LOST				/* the engine process is gone */
} GpxWaitResult;

/* connected to (and greeted by) the engine of this generation: true with its id for the slots */
extern bool gpx_conn_ready(uint32 generation, uint32 *conn);
/* a byte that wakes the engine after a submission; false when the connection is gone */
extern bool gpx_conn_notify(void);
/* wait for a message, the latch or the engine's end, at most timeout_ms */
extern GpxWaitResult gpx_conn_wait(long timeout_ms);

#endif							/* GPX_WORKER_CONNECTION_H */
