/*
 * supervisor.c
 *	  The GPU worker's supervisor: a background worker that owns no device.
 *	  It execs the engine process (src/engine_process) with the queue
 *	  segment and a control socket as its only shared descriptors, watches
 *	  it (its socket closes when it is gone; its heartbeat in the segment
 *	  says it makes progress), fails and frees what it held once it is
 *	  gone, starts a new one (backing off while they die young, trying the
 *	  GPU again while the CPU engine stands in), and stops it on exit.
 *
 * Like every loop of a server process, its loop processes interrupts and
 * ProcSignalBarriers (DROP DATABASE waits for those), and every wait is on
 * its latch.  It is connected to no database.
 */
#include "gpuidx.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/fork_process.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "worker/gpucache.h"
#include "worker/queue.h"
#include "worker/stats.h"

PGDLLEXPORT void gpx_worker_main(Datum arg);

/* the engine process this supervisor started */
typedef struct EngineChild
{
	pid_t		pid;			/* 0: none */
	uint32		generation;
	pgsocket	control;		/* our end of its control socket */
	bool		gone;			/* its socket closed: its memory is gone, it writes no more */
	bool		reaped;
	int			status;			/* waitpid's, once reaped */
	bool		retiring;		/* stopped on purpose (to try the GPU again): start another at once */
	bool		killed;			/* for a stall */
	bool		announced;		/* its serving was logged */
	bool		on_gpu;			/* ... with a GPU engine */
	int64		started_ns;
} EngineChild;

static EngineChild child;
static WaitEventSet *waitset = NULL;

/* engine processes that closed their socket but were not reaped yet */
static pid_t zombies[8];

static int64
ms_to_ns(int64 ms)
{
	return ms * 1000 * 1000;
}

static void
rebuild_waitset(void)
{
	if (waitset != NULL)
		FreeWaitEventSet(waitset);
	waitset = gpx_create_wait_set(3);
	AddWaitEventToSet(waitset, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(waitset, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	if (child.pid != 0 && !child.gone)
		AddWaitEventToSet(waitset, WL_SOCKET_READABLE, child.control, NULL, NULL);
}

static void
wake_owner(int i)
{
	int			procno = gpx_control->owners[i].procno;

	if (procno >= 0 && (uint32) procno < ProcGlobal->allProcCount)
		SetLatch(&GetPGProcByNumber(procno)->procLatch);
}

/*
 * Engine generation gen is gone (every generation before this supervisor's
 * first, with gen 0): the requests it ran fail, so their backends answer
 * on the CPU at once; what their backends gave up is freed.
 */
static void
fail_generation(uint32 gen)
{
	for (uint32 i = 0; i < gpx_layout.nslots; i++)
	{
		GpxQueueSlot *slot = gpx_slot((int) i);

		/*
		 * Until the slot is settled: a backend may abandon a running
		 * request between the read and the swap, and then the slot is
		 * this loop's to free (no engine of its generation will)
		 */
		for (;;)
		{
			uint32		w = gpx_load_acquire32(&slot->state);
			uint32		st = GPX_SLOT_STATE(w);

			if (GPX_SLOT_GEN(w) == 0 || (gen != 0 && GPX_SLOT_GEN(w) != gen))
				break;
			if (st == GPX_SLOT_RUNNING)
			{
				if (!gpx_cas32(&slot->state, w, GPX_SLOT_WORD(GPX_SLOT_FAILED, GPX_SLOT_GEN(w))))
					continue;	/* it changed meanwhile: read it again */
				wake_owner((int) i);
			}
			else if (st == GPX_SLOT_ABANDONED || st == GPX_SLOT_RECLAIM)
				gpx_slot_release((int) i);
			break;
		}
	}
}

/* free the bytes of requests whose backends gave up and whose engine let go of them */
static void
reclaim(void)
{
	for (uint32 i = 0; i < gpx_layout.nslots; i++)
		if (GPX_SLOT_STATE(gpx_load_acquire32(&gpx_slot((int) i)->state)) == GPX_SLOT_RECLAIM)
			gpx_slot_release((int) i);
}

static void
reap_zombies(void)
{
	for (int i = 0; i < lengthof(zombies); i++)
		if (zombies[i] != 0 && waitpid(zombies[i], NULL, WNOHANG) != 0)
			zombies[i] = 0;
}

/* the engine process is gone: what it held answered as failed, the next start planned */
static void
engine_gone(int64 *next_start_ns, int64 *backoff_ms)
{
	int64		now = gpx_monotonic_ns();

	(void) gpx_cas32(&gpx_queue->serving, child.generation, 0);
	fail_generation(child.generation);
	if (child.retiring)
		*next_start_ns = now;
	else
	{
		/* quick deaths back off, up to 10 s between starts */
		if (now - child.started_ns > ms_to_ns(10000))
			*backoff_ms = 100;
		else
			*backoff_ms = Min(*backoff_ms * 2, 10000);
		*next_start_ns = now + ms_to_ns(*backoff_ms);
		if (child.reaped)
			ereport(LOG,
					(errmsg("gpuidx engine process %d %s; starting another in %ld ms",
							(int) child.pid,
							WIFSIGNALED(child.status) ? "was terminated by a signal" : "exited",
							(long) *backoff_ms),
					 WIFSIGNALED(child.status) ? errdetail("Signal %d.", WTERMSIG(child.status)) :
					 errdetail("Exit code %d.", WEXITSTATUS(child.status))));
		else
			ereport(LOG,
					(errmsg("gpuidx engine process %d ended; starting another in %ld ms",
							(int) child.pid, (long) *backoff_ms)));
	}
	if (!child.reaped)
	{
		for (int i = 0; i < lengthof(zombies); i++)
			if (zombies[i] == 0)
			{
				zombies[i] = child.pid;
				break;
			}
	}
	closesocket(child.control);
	ReleaseExternalFD();
	pg_atomic_write_u32(&gpx_control->engine_pid, 0);
	memset(&child, 0, sizeof(child));
	child.control = PGINVALID_SOCKET;
	rebuild_waitset();
}

/* exec the engine process; false when it could not be started */
static bool
engine_launch(void)
{
	char		program[MAXPGPATH];
	char		library[MAXPGPATH];
	char		parent[32];
	char		generation[32];
	char		cache_bytes[32];
	char	   *argv[10];
	pgsocket	sv[2];
	pid_t		supervisor = MyProcPid;
	pid_t		pid;
	uint32		gen;

	snprintf(program, sizeof(program), "%s/gpuidx_engine", pkglib_path);
	if (access(program, X_OK) != 0)
	{
		ereport(LOG,
				(errmsg("gpuidx worker cannot start its engine process: \"%s\": %m", program),
				 errhint("The program is installed with the extension (make install).")));
		return false;
	}
	gpx_engine_library_path(library, sizeof(library));
	if (!AcquireExternalFD())
		return false;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
	{
		ReleaseExternalFD();
		ereport(LOG, (errmsg("gpuidx worker could not create a socket pair: %m")));
		return false;
	}
	/* from now on the cache directory counts what the old engine held as gone */
	gen = gpx_next_generation(pg_atomic_read_u32(&gpx_control->generation));
	pg_atomic_write_u32(&gpx_control->generation, gen);
	__atomic_store_n(&gpx_queue->generation, gen, __ATOMIC_RELAXED);

	snprintf(parent, sizeof(parent), "%d", (int) supervisor);
	snprintf(generation, sizeof(generation), "%u", gen);
	snprintf(cache_bytes, sizeof(cache_bytes), UINT64_FORMAT, (uint64) gpx_gpu_cache_mb << 20);
	argv[0] = program;
	argv[1] = "--parent";
	argv[2] = parent;
	argv[3] = "--generation";
	argv[4] = generation;
	argv[5] = "--library";
	argv[6] = library;
	argv[7] = "--cache-bytes";
	argv[8] = cache_bytes;
	argv[9] = NULL;

	pid = fork_process();
	if (pid == 0)
	{
		sigset_t	none;
		int			seg;
		int			ctl;

		/* dies with this process, which may have died already */
		(void) prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != supervisor)
			_exit(1);
		/* the segment on 3, the control socket on 4, nothing else but stdio */
		seg = fcntl(gpx_queue_fd, F_DUPFD_CLOEXEC, 10);
		ctl = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
		if (seg < 0 || ctl < 0 || dup2(seg, GPX_ENGINE_FD_SEGMENT) < 0 || dup2(ctl, GPX_ENGINE_FD_CONTROL) < 0)
			_exit(1);
		if (close_range(GPX_ENGINE_FD_CONTROL + 1, ~0U, 0) != 0)
		{
			for (int fd = GPX_ENGINE_FD_CONTROL + 1; fd < 65536; fd++)
				(void) close(fd);
		}
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(program, argv);
		_exit(127);
	}
	closesocket(sv[1]);
	if (pid < 0)
	{
		closesocket(sv[0]);
		ReleaseExternalFD();
		ereport(LOG, (errmsg("gpuidx worker could not fork its engine process: %m")));
		return false;
	}
	memset(&child, 0, sizeof(child));
	child.pid = pid;
	child.generation = gen;
	child.control = sv[0];
	child.started_ns = gpx_monotonic_ns();
	pg_atomic_write_u32(&gpx_control->engine_pid, (uint32) pid);
	gpx_count(GPX_STAT_ENGINE_STARTS, 1);
	rebuild_waitset();
	return true;
}

/* a stalled engine process (no turn of its loop, a batch too long, no start): killed */
static void
check_stall(void)
{
	int64		now = gpx_monotonic_ns();
	int64		limit = ms_to_ns(gpx_engine_stall_ms);
	int64		beat = gpx_load_relaxed_i64(&gpx_queue->heartbeat_ns);
	int64		batch = gpx_load_relaxed_i64(&gpx_queue->batch_started_ns);
	const char *what = NULL;

	if (child.pid == 0 || child.gone || child.killed)
		return;
	if (gpx_load_acquire32(&gpx_queue->serving) != child.generation)
	{
		if (now - child.started_ns > limit)
			what = "did not start serving";
	}
	else if (now - beat > limit)
		what = "made no progress";
	else if (batch != 0 && now - batch > limit)
		what = "ran one batch";
	if (what == NULL)
		return;
	ereport(LOG,
			(errmsg("gpuidx engine process %d %s for %d ms; killing it", (int) child.pid, what,
					gpx_engine_stall_ms),
			 errhint("gpuidx.engine_stall_timeout sets how long it may.")));
	gpx_count(GPX_STAT_ENGINE_STALLS, 1);
	(void) kill(child.pid, SIGKILL);
	/* it is gone when its socket closes */
	child.killed = true;
}

/* the engine process's socket: wake-ups to reclaim, or its end */
static void
control_readable(void)
{
	char		buf[64];

	for (;;)
	{
		ssize_t		n = recv(child.control, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		child.gone = true;
		return;
	}
}

/*
 * An engine process of an earlier supervisor died with it (its death
 * signal): wait until it is gone before freeing what it held.
 */
static void
wait_for_earlier_engine(void)
{
	pid_t		pid = (pid_t) pg_atomic_read_u32(&gpx_control->engine_pid);

	for (int i = 0; pid != 0 && i < 100; i++)
	{
		char		path[64];
		char		comm[32] = "";
		FILE	   *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
		f = AllocateFile(path, "r");
		if (f == NULL)
			break;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		FreeFile(f);
		/* gone, or its pid already another process's */
		if (strncmp(comm, "gpuidx engine", 13) != 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(1);
	}
	pg_atomic_write_u32(&gpx_control->engine_pid, 0);
	/* every earlier generation is gone */
	__atomic_store_n(&gpx_queue->serving, 0, __ATOMIC_RELEASE);
	fail_generation(0);
}

/* reap the engine process if it ends within ms */
static bool
reap_within(int ms)
{
	for (int waited = 0; waited <= ms; waited += 5)
	{
		if (waitpid(child.pid, NULL, WNOHANG) == child.pid)
			return true;
		pg_usleep(5000);
	}
	return false;
}

/*
 * On the supervisor's exit (shutdown, pg_terminate_backend, FATAL): its
 * engine process ends too, within about a second, and is reaped here when
 * it can be (its death signal ends it in any case).
 */
static void
supervisor_exit(int code, Datum arg)
{
	struct pollfd pfd;

	if (child.pid == 0)
		return;
	(void) gpx_cas32(&gpx_queue->serving, child.generation, 0);
	if (!child.gone)
	{
		/* a moment to finish its batches */
		(void) kill(child.pid, SIGTERM);
		pfd.fd = child.control;
		pfd.events = POLLIN;
		for (int i = 0; i < 20 && !child.gone; i++)
		{
			char		buf[64];

			if (poll(&pfd, 1, 50) > 0 && recv(child.control, buf, sizeof(buf), MSG_DONTWAIT) == 0)
				child.gone = true;
		}
	}
	if (child.gone && reap_within(200))
		return;
	(void) kill(child.pid, SIGKILL);
	(void) reap_within(200);
}

void
gpx_worker_main(Datum arg)
{
	int64		next_start_ns = 0;
	int64		backoff_ms = 100;
	int64		next_sweep_ns = 0;

	/*
	 * A shutdown or pg_terminate_backend ends it with exit code 1, so the
	 * postmaster starts it again unless the server is stopping
	 */
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGCHLD, SIG_DFL);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	if (gpx_queue == NULL)
		ereport(ERROR, (errmsg("gpuidx worker started without its shared memory")));

	memset(&child, 0, sizeof(child));
	child.control = PGINVALID_SOCKET;
	rebuild_waitset();
	wait_for_earlier_engine();
	gpx_control->supervisor_pid = MyProcPid;
	gpx_control->supervisor_procno = MyProcNumber;
	gpx_worker_publish_settings();
	before_shmem_exit(supervisor_exit, (Datum) 0);

	for (;;)
	{
		WaitEvent	events[3];
		int			n;

		/* cancels and ProcSignalBarriers (DROP DATABASE waits for them) */
		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			gpx_worker_publish_settings();
		}
		reap_zombies();
		if (child.pid != 0 && !child.reaped && waitpid(child.pid, &child.status, WNOHANG) == child.pid)
			child.reaped = true;
		if (child.pid != 0 && (child.gone || child.reaped))
			engine_gone(&next_start_ns, &backoff_ms);
		check_stall();
		if (child.pid == 0 && gpx_monotonic_ns() >= next_start_ns && !engine_launch())
			next_start_ns = gpx_monotonic_ns() + ms_to_ns(10000);
		if (child.pid != 0 && child.announced && !child.on_gpu &&
			__atomic_load_n(&gpx_queue->is_gpu, __ATOMIC_RELAXED))
		{
			/* the GPU came back while the CPU engine stood in */
			char		kind[sizeof(gpx_queue->kind) + 1];

			child.on_gpu = true;
			gpx_engine_text(kind, gpx_queue->kind, sizeof(gpx_queue->kind));
			ereport(LOG,
					(errmsg("gpuidx engine process %d serves with the %s engine now, after %lld tries",
							(int) child.pid, kind,
							(long long) __atomic_load_n(&gpx_queue->counters[GPX_ENGINE_GPU_RETRIES],
														__ATOMIC_RELAXED))));
		}
		if (child.pid != 0 && !child.announced &&
			gpx_load_acquire32(&gpx_queue->serving) == child.generation)
		{
			char		kind[sizeof(gpx_queue->kind) + 1];
			char		note[sizeof(gpx_queue->note) + 1];
			char		device[sizeof(gpx_queue->device_name) + 1];

			child.announced = true;
			child.on_gpu = __atomic_load_n(&gpx_queue->is_gpu, __ATOMIC_RELAXED) != 0;
			gpx_engine_text(kind, gpx_queue->kind, sizeof(gpx_queue->kind));
			gpx_engine_text(note, gpx_queue->note, sizeof(gpx_queue->note));
			gpx_engine_text(device, gpx_queue->device_name, sizeof(gpx_queue->device_name));
			/* the reason for the CPU engine once, here; retries only update the note */
			if (!child.on_gpu)
				ereport(LOG,
						(errmsg("gpuidx engine process %d serves with the CPU engine", (int) child.pid),
						 note[0] ? errdetail("%s", note) : 0));
			else
				ereport(LOG,
						(errmsg("gpuidx engine process %d serves with the %s engine on %s",
								(int) child.pid, kind, device[0] ? device : "its device")));
		}
		reclaim();
		if (gpx_monotonic_ns() >= next_sweep_ns)
		{
			gpx_cache_sweep();
			next_sweep_ns = gpx_monotonic_ns() + ms_to_ns(1000);
		}

		n = WaitEventSetWait(waitset, 100, events, lengthof(events), PG_WAIT_EXTENSION);
		for (int i = 0; i < n; i++)
		{
			if (events[i].events & WL_LATCH_SET)
				ResetLatch(MyLatch);
			if ((events[i].events & WL_SOCKET_READABLE) && child.pid != 0)
				control_readable();
		}
	}
}
