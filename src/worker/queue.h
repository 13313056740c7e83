/*
 * queue.h
 *	  A backend's requests to the GPU worker (queue.c), as the rest of
 *	  src/worker needs them: a slot's request freed.
 */
#ifndef GPX_WORKER_QUEUE_H
#define GPX_WORKER_QUEUE_H

#include "worker/shmem.h"

/* a slot's request freed (cache pins settled, arena extent freed), the slot FREE */
extern void gpx_slot_release(int i);

#endif							/* GPX_WORKER_QUEUE_H */
