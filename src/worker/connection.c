/*
 * connection.c
 *	  This backend's socket to the engine process (gpuidx_queue.h has the
 *	  protocol): made at its first request to an engine, greeted with its
 *	  id, kept for the session.  A backend waits on one wait set of its
 *	  latch, the postmaster's death and the socket, so an answer, a cancel
 *	  and the engine process's end all wake it at once.
 */
#include "gpuidx.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/memutils.h"

#include "worker/connection.h"
#include "worker/shmem.h"

static pgsocket conn_sock = PGINVALID_SOCKET;
static uint32 conn_generation = 0;	/* the engine it is connected to; 0: not greeted */
static uint32 conn_id;
static WaitEventSet *conn_waitset = NULL;

static void
conn_close(void)
{
	if (conn_waitset != NULL)
		FreeWaitEventSet(conn_waitset);
	conn_waitset = NULL;
	if (conn_sock != PGINVALID_SOCKET)
	{
		close(conn_sock);
		ReleaseExternalFD();
	}
	conn_sock = PGINVALID_SOCKET;
	conn_generation = 0;
}

/* read what came; false when the engine process closed the socket (it is gone) */
static bool
conn_drain(void)
{
	char		buf[256];

	for (;;)
	{
		ssize_t		n = recv(conn_sock, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return true;
		return false;
	}
}

bool
gpx_conn_ready(uint32 generation, uint32 *conn)
{
	struct sockaddr_un addr;
	GpxEngineHello hello;
	instr_time	start;
	instr_time	now;

	if (conn_sock != PGINVALID_SOCKET && conn_generation == generation)
	{
		*conn = conn_id;
		return true;
	}
	conn_close();
	if (!AcquireExternalFD())
		return false;
	conn_sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (conn_sock == PGINVALID_SOCKET)
	{
		ReleaseExternalFD();
		return false;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	strlcpy(addr.sun_path, GPX_ENGINE_SOCKET, sizeof(addr.sun_path));
	/* the data directory is every server process's working directory */
	if (connect(conn_sock, (struct sockaddr *) &addr, sizeof(addr)) != 0)
	{
		conn_close();
		return false;
	}
	conn_waitset = gpx_create_wait_set(3);
	AddWaitEventToSet(conn_waitset, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(conn_waitset, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	AddWaitEventToSet(conn_waitset, WL_SOCKET_READABLE, conn_sock, NULL, NULL);

	/* the greeting, within the wait a request may take */
	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		ssize_t		n = recv(conn_sock, &hello, sizeof(hello), MSG_DONTWAIT);
		long		left;

		if (n == (ssize_t) sizeof(hello))
			break;
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		{
			conn_close();
			return false;
		}
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		left = gpx_gpu_timeout_ms - (long) INSTR_TIME_GET_MILLISEC(now);
		if (left <= 0)
		{
			conn_close();
			return false;
		}
		/* not gpx_conn_wait: that would read the greeting away */
		{
			WaitEvent	events[3];
			int			nev = WaitEventSetWait(conn_waitset, left, events, lengthof(events), PG_WAIT_EXTENSION);

			for (int i = 0; i < nev; i++)
				if (events[i].events & WL_LATCH_SET)
					ResetLatch(MyLatch);
		}
		CHECK_FOR_INTERRUPTS();
	}
	if (hello.magic != GPX_QUEUE_MAGIC || hello.generation != generation)
	{
		/* another engine than the one serving (it is being replaced): not this time */
		conn_close();
		return false;
	}
	conn_generation = generation;
	conn_id = hello.conn;
	*conn = conn_id;
	return true;
}

bool
gpx_conn_notify(void)
{
	if (send(conn_sock, "s", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
		return true;
	/* a full socket: the engine is behind, and looks at every slot when it reads */
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return true;
	conn_close();
	return false;
}

GpxWaitResult
gpx_conn_wait(long timeout_ms)
{
	WaitEvent	events[3];
	int			n;
	GpxWaitResult result = GPX_WAIT_TIMEOUT;

	if (conn_waitset == NULL)
		return GPX_WAIT_LOST;
	n = WaitEventSetWait(conn_waitset, timeout_ms, events, lengthof(events), PG_WAIT_EXTENSION);
	for (int i = 0; i < n; i++)
	{
		if (events[i].events & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			if (result == GPX_WAIT_TIMEOUT)
				result = GPX_WAIT_WOKEN;
		}
		if (events[i].events & WL_SOCKET_READABLE)
		{
			if (!conn_drain())
			{
				conn_close();
				return GPX_WAIT_LOST;
			}
			result = GPX_WAIT_WOKEN;
		}
	}
	return result;
}
