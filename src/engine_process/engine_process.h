/*
 * engine_process.h
 *	  The engine process: a program of its own (gpuidx_engine), exec'd by
 *	  the GPU worker's supervisor, that owns the device.  It maps the queue
 *	  segment (include/gpuidx_queue.h) and nothing else of PostgreSQL's,
 *	  links no PostgreSQL code, takes no lock the server's processes take,
 *	  and answers the queue in batches through an engine (the CUDA engine,
 *	  else the CPU engine).  docs/WORKER.md has the process model.
 *
 * Two threads: the main thread waits for events (connections, wake-ups,
 * its supervisor) and gathers batches; the runner thread has the engine
 * run them and hands the answers back.  Only the runner calls the engine.
 */
#ifndef GPX_ENGINE_PROCESS_H
#define GPX_ENGINE_PROCESS_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpuidx_engine.h"
#include "gpuidx_queue.h"

/* exit codes the supervisor logs */
#define ENGINE_EXIT_OK			0
#define ENGINE_EXIT_SETUP		2	/* bad arguments, segment or resources */
#define ENGINE_EXIT_DEVICE_LOST 3	/* only a new process can use the device again */

/* the backends' connections (conn.c) */
typedef struct EngineConns
{
	int			listen_fd;
	uint32_t	generation;
	uint32_t	next_serial;
	int			nfds;			/* entries of serial */
	uint32_t   *serial;			/* per descriptor: its connection's serial, 0: none */
} EngineConns;

/* one gathered batch: requests of both kinds, each kind in its engine call's array */
typedef enum
{
	BATCH_FREE,
	BATCH_READY					/* gathered: the runner's */
} BatchState;

typedef struct EngineBatch
{
	BatchState	state;
	int			nq;				/* requests */
	int			nplain;			/* of them intersections, in queries */
	int			nranked;		/* ranked, in ranked */
	gpuidx_query *queries;
	gpuidx_rank_query *ranked;
	gpuidx_rank_term *rank_terms;	/* GPUIDX_ENGINE_MAX_TERMS per ranked query */
	gpuidx_term_ref *terms;		/* GPX_RANK_MAX_PARTS per request */
	int		   *taken;			/* each request's slot */
	int		   *index;			/* its place in queries or ranked */
	GpxRequest **reqs;
	int			status;			/* run_batch's */
	int			rank_status;	/* run_ranked's */
	gpuidx_batch_stats stats;
	gpuidx_batch_stats rank_stats;
	gpuidx_engine_error err;
	gpuidx_engine_error rank_err;
} EngineBatch;

typedef struct EngineProcess
{
	GpxQueueHeader *hdr;
	GpxQueueSlot *slots;
	char	   *arena;
	uint32_t	generation;
	int			control_fd;		/* to the supervisor */
	int			epoll_fd;
	int			freed_fd;		/* eventfd: the runner freed a batch */
	EngineConns conns;

	const gpuidx_engine_api *api;
	gpuidx_engine *engine;

	/*
	 * While the GPU engine's library loaded but the engine did not start
	 * (a device busy or not there yet), the CPU engine stands in and the
	 * runner tries the GPU again, backing off.
	 */
	const gpuidx_engine_api *gpu_api;	/* NULL: none to try */
	gpuidx_engine_config gpu_config;
	int64_t		gpu_next_try_ns;
	int64_t		gpu_backoff_ms;

	/* main thread: the latest submission time of the requests it has taken */
	int64_t		last_submitted_ns;

	pthread_mutex_t lock;
	pthread_cond_t ready;		/* a batch is READY, or stop */
	EngineBatch batches[2];
	bool		stop;			/* under lock: the runner ends */
	bool		lost;			/* under lock: the device failed, the process must end */
} EngineProcess;

/* engines.c: CLOCK_MONOTONIC in nanoseconds */
extern int64_t engine_now_ns(void);

/* a bounded, terminated copy into one of the header's strings */
extern void engine_set_text(char *dst, size_t size, const char *src);

/*
 * The configured engine (library; "" for none), else the CPU engine, with
 * why in the header's note; false only when even the CPU engine cannot be
 * created.  A library that loads but whose engine does not start is tried
 * again later (engine_retry_gpu).
 */
extern bool engine_open(EngineProcess *e, const char *library, uint64_t cache_bytes);

/* conn.c */
extern bool conns_open(EngineConns *c, uint32_t generation, int epoll_fd, char *why, size_t whylen);
extern void conns_accept(EngineConns *c, int epoll_fd);
extern void conns_readable(EngineConns *c, int epoll_fd, int fd);
extern void conns_answer(EngineConns *c, uint32_t conn, uint32_t slot);
extern void conns_close(EngineConns *c);

/* engines.c: the GPU engine tried again in place of the CPU engine when due (the runner) */
extern void engine_retry_gpu(EngineProcess *e);

/* serve.c */
extern bool serve_init(EngineProcess *e);
extern int	serve_gather(EngineProcess *e, EngineBatch *b, bool runner_idle, int64_t *sleep_ns);
extern void *serve_runner_main(void *arg);

#endif							/* GPX_ENGINE_PROCESS_H */
