/*
 * main.c
 *	  The engine process's start, main loop and end (engine_process.h).
 *
 *	  gpuidx_engine --parent PID --generation G --library PATH --cache-bytes N
 *
 * It starts with the queue segment on descriptor 3 and a socket to its
 * supervisor on descriptor 4.  It dies with its parent (PR_SET_PDEATHSIG,
 * set before exec and checked again here), ends when its supervisor's
 * socket closes or on SIGTERM (finishing the batches it holds), and at
 * once on SIGQUIT.
 */
#include "engine_process/engine_process.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"

static volatile sig_atomic_t stop_requested = 0;

static void
handle_sigterm(int signo)
{
	(void) signo;
	stop_requested = 1;
}

static void
handle_sigquit(int signo)
{
	(void) signo;
	_exit(ENGINE_EXIT_SETUP);
}

static void
set_signals(void)
{
	struct sigaction sa;
	sigset_t	none;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = handle_sigterm;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = handle_sigquit;
	sigaction(SIGQUIT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* the segment on GPX_ENGINE_FD_SEGMENT, mapped and checked; NULL when it does not hold */
static GpxQueueHeader *
map_segment(void)
{
	struct stat st;
	void	   *p;

	if (fstat(GPX_ENGINE_FD_SEGMENT, &st) != 0 || st.st_size < (off_t) sizeof(GpxQueueHeader))
		return NULL;
	p = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, GPX_ENGINE_FD_SEGMENT, 0);
	if (p == MAP_FAILED)
		return NULL;
	close(GPX_ENGINE_FD_SEGMENT);
	if (!gpx_queue_layout_holds((GpxQueueHeader *) p, (uint64_t) st.st_size))
		return NULL;
	/* a core dump of this process need not hold the queued lists */
	(void) madvise(p, (size_t) st.st_size, MADV_DONTDUMP);
	return (GpxQueueHeader *) p;
}

static bool
epoll_add(int epoll_fd, int fd)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP;
	ev.data.u64 = (uint64_t) fd;
	return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

/* events for at most timeout_ns (< 0: none), handled; false when the supervisor is gone */
static bool
wait_events(EngineProcess *e, int64_t timeout_ns)
{
	struct epoll_event ev[64];
	struct timespec ts;
	int			n;

	if (timeout_ns < 0)
		timeout_ns = 0;
	ts.tv_sec = timeout_ns / 1000000000;
	ts.tv_nsec = timeout_ns % 1000000000;
	n = epoll_pwait2(e->epoll_fd, ev, 64, &ts, NULL);
	if (n < 0 && errno == ENOSYS)
		n = epoll_wait(e->epoll_fd, ev, 64, (int) ((timeout_ns + 999999) / 1000000));
	for (int i = 0; i < n; i++)
	{
		int			fd = (int) ev[i].data.u64;

		if (fd == e->conns.listen_fd)
			conns_accept(&e->conns, e->epoll_fd);
		else if (fd == e->freed_fd)
		{
			uint64_t	count;

			/* reset the count; nonblocking, and nothing to read is no matter */
			if (read(e->freed_fd, &count, sizeof(count)) < 0)
			{
			}
		}
		else if (fd == e->control_fd)
		{
			char		buf[64];
			ssize_t		r = recv(e->control_fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
				return false;
		}
		else
			conns_readable(&e->conns, e->epoll_fd, fd);
	}
	return true;
}

static void
usage_exit(const char *why)
{
	fprintf(stderr, "gpuidx_engine: %s\n"
			"usage: gpuidx_engine --parent PID --generation G --library PATH --cache-bytes N\n"
			"(started by the gpuidx worker, with its queue segment on descriptor %d)\n",
			why, GPX_ENGINE_FD_SEGMENT);
	exit(ENGINE_EXIT_SETUP);
}

int
main(int argc, char **argv)
{
	static const struct option options[] = {
		{"parent", required_argument, NULL, 'p'},
		{"generation", required_argument, NULL, 'g'},
		{"library", required_argument, NULL, 'l'},
		{"cache-bytes", required_argument, NULL, 'c'},
		{NULL, 0, NULL, 0}
	};
	EngineProcess e;
	pthread_t	runner;
	sigset_t	all,
				old;
	long		parent = 0;
	unsigned long generation = 0;
	unsigned long long cache_bytes = 0;
	const char *library = NULL;
	char		why[512];
	bool		supervisor_alive = true;
	bool		lost = false;
	int			fill = 0;
	int			opt;
	struct rlimit rl;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1)
	{
		switch (opt)
		{
			case 'p':
				parent = strtol(optarg, NULL, 10);
				break;
			case 'g':
				generation = strtoul(optarg, NULL, 10);
				break;
			case 'l':
				library = optarg;
				break;
			case 'c':
				cache_bytes = strtoull(optarg, NULL, 10);
				break;
			default:
				usage_exit("unknown option");
		}
	}
	if (parent <= 1 || generation == 0 || generation > GPX_GENERATION_MASK || library == NULL)
		usage_exit("missing or bad arguments");

	/* die with the supervisor; it may have died before the exec */
	(void) prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != (pid_t) parent)
		exit(ENGINE_EXIT_SETUP);
	(void) prctl(PR_SET_NAME, "gpuidx engine");
	set_signals();
	/* a descriptor a backend connection (one each, ids of 16 bits) */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
	{
		rl.rlim_cur = rl.rlim_max;
		(void) setrlimit(RLIMIT_NOFILE, &rl);
	}

	memset(&e, 0, sizeof(e));
	e.generation = (uint32_t) generation;
	e.control_fd = GPX_ENGINE_FD_CONTROL;
	e.hdr = map_segment();
	if (e.hdr == NULL)
	{
		fprintf(stderr, "gpuidx_engine: descriptor %d is no gpuidx queue segment\n", GPX_ENGINE_FD_SEGMENT);
		exit(ENGINE_EXIT_SETUP);
	}
	e.slots = gpx_queue_slots(e.hdr);
	e.arena = gpx_queue_arena(e.hdr);
	e.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	e.freed_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e.epoll_fd < 0 || e.freed_fd < 0 || !epoll_add(e.epoll_fd, e.freed_fd) ||
		!epoll_add(e.epoll_fd, e.control_fd) || !serve_init(&e))
	{
		engine_set_text(e.hdr->note, sizeof(e.hdr->note), "the engine process could not set up");
		exit(ENGINE_EXIT_SETUP);
	}

	if (!engine_open(&e, library, cache_bytes))
		exit(ENGINE_EXIT_SETUP);
	if (!conns_open(&e.conns, e.generation, e.epoll_fd, why, sizeof(why)))
	{
		engine_set_text(e.hdr->note, sizeof(e.hdr->note), why);
		exit(ENGINE_EXIT_SETUP);
	}

	pthread_mutex_init(&e.lock, NULL);
	{
		pthread_condattr_t attr;

		/* timed waits (the GPU's next try) on the monotonic clock */
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&e.ready, &attr);
		pthread_condattr_destroy(&attr);
	}
	/* signals go to the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&runner, NULL, serve_runner_main, &e) != 0)
		exit(ENGINE_EXIT_SETUP);
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	__atomic_store_n(&e.hdr->engine_pid, (uint32_t) getpid(), __ATOMIC_RELAXED);
	gpx_store_relaxed_i64(&e.hdr->heartbeat_ns, engine_now_ns());
	/* a process killed in a batch left its start here: not this one's */
	gpx_store_relaxed_i64(&e.hdr->batch_started_ns, 0);
	/* serving: backends may connect and submit */
	gpx_store_release32(&e.hdr->serving, e.generation);

	while (!stop_requested && supervisor_alive)
	{
		bool		busy;
		bool		runner_idle;
		int64_t		sleep_ns = 0;

		gpx_store_relaxed_i64(&e.hdr->heartbeat_ns, engine_now_ns());
		pthread_mutex_lock(&e.lock);
		lost = e.lost;
		busy = e.batches[fill].state != BATCH_FREE;
		runner_idle = e.batches[fill ^ 1].state == BATCH_FREE;
		pthread_mutex_unlock(&e.lock);
		if (lost)
			break;
		if (busy)
		{
			/* both batches with the runner: until it frees one (a while at most, to beat) */
			supervisor_alive = wait_events(&e, 100 * 1000 * 1000);
			continue;
		}
		if (serve_gather(&e, &e.batches[fill], runner_idle, &sleep_ns) == 0)
		{
			supervisor_alive = wait_events(&e, sleep_ns);
			continue;
		}
		pthread_mutex_lock(&e.lock);
		e.batches[fill].state = BATCH_READY;
		pthread_cond_signal(&e.ready);
		pthread_mutex_unlock(&e.lock);
		fill ^= 1;
		/* wake-ups and connections that came meanwhile, without waiting */
		supervisor_alive = wait_events(&e, 0);
	}

	/* no new requests; the runner finishes (and hands back) what it holds */
	(void) gpx_cas32(&e.hdr->serving, e.generation, 0);
	conns_close(&e.conns);
	pthread_mutex_lock(&e.lock);
	e.stop = true;
	pthread_cond_signal(&e.ready);
	pthread_mutex_unlock(&e.lock);
	pthread_join(runner, NULL);
	lost |= e.lost;
	e.api->destroy(e.engine);
	return lost ? ENGINE_EXIT_DEVICE_LOST : ENGINE_EXIT_OK;
}
