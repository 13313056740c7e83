/*
 * conn.c
 *	  The engine process's socket: backends connect once per session, are
 *	  greeted with their connection's id, send a byte after each submission
 *	  and are sent the index of each slot answered (gpuidx_queue.h).  A
 *	  backend waits on its socket and its latch together, so an answer
 *	  wakes it at once, and the end of the engine process (its descriptors
 *	  close after its memory is gone) wakes every waiting backend.
 *
 * A connection's id is its descriptor and a serial number: an answer for a
 * connection closed meanwhile finds another serial and goes nowhere.  The
 * runner thread answers while the main thread accepts and closes, so the
 * serials are read and written atomically; a wake-up that reaches the
 * wrong backend is harmless, since slots, not messages, say what happened.
 */
#include "engine_process/engine_process.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

bool
conns_open(EngineConns *c, uint32_t generation, int epoll_fd, char *why, size_t whylen)
{
	struct sockaddr_un addr;
	struct epoll_event ev;
	mode_t		old_mask;
	int			fd;

	memset(c, 0, sizeof(*c));
	c->listen_fd = -1;
	c->generation = generation;
	c->next_serial = 1;
	/* ids hold a descriptor in 16 bits */
	c->nfds = 65536;
	c->serial = calloc(c->nfds, sizeof(uint32_t));
	if (c->serial == NULL)
	{
		snprintf(why, whylen, "out of memory");
		return false;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", GPX_ENGINE_SOCKET);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
	{
		snprintf(why, whylen, "could not create a socket: %s", strerror(errno));
		return false;
	}
	/* an earlier engine's socket goes: its connections end with it */
	(void) unlink(GPX_ENGINE_SOCKET);
	old_mask = umask(077);
	if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) != 0 || listen(fd, 1024) != 0)
	{
		snprintf(why, whylen, "could not listen on \"%s\": %s", GPX_ENGINE_SOCKET, strerror(errno));
		umask(old_mask);
		close(fd);
		return false;
	}
	umask(old_mask);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u64 = (uint64_t) fd;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
	{
		snprintf(why, whylen, "epoll_ctl: %s", strerror(errno));
		close(fd);
		return false;
	}
	c->listen_fd = fd;
	return true;
}

static void
conn_drop(EngineConns *c, int epoll_fd, int fd)
{
	__atomic_store_n(&c->serial[fd], 0, __ATOMIC_RELEASE);
	(void) epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
}

void
conns_accept(EngineConns *c, int epoll_fd)
{
	for (;;)
	{
		int			fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		GpxEngineHello hello;
		struct epoll_event ev;
		uint32_t	serial;

		if (fd < 0)
			return;				/* EAGAIN: all taken; else retried at the next event */
		if (fd >= c->nfds)
		{
			/* no id for it: the backend finds the socket closed and uses the CPU */
			close(fd);
			continue;
		}
		serial = c->next_serial;
		c->next_serial = (c->next_serial + 1) & 0xFFFF;
		if (c->next_serial == 0)
			c->next_serial = 1;
		memset(&hello, 0, sizeof(hello));
		hello.magic = GPX_QUEUE_MAGIC;
		hello.generation = c->generation;
		hello.conn = (serial << 16) | (uint32_t) fd;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.u64 = (uint64_t) fd;
		if (send(fd, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t) sizeof(hello) ||
			epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
		{
			close(fd);
			continue;
		}
		__atomic_store_n(&c->serial[fd], serial, __ATOMIC_RELEASE);
	}
}

void
conns_readable(EngineConns *c, int epoll_fd, int fd)
{
	char		buf[256];

	if (fd < 0 || fd >= c->nfds)
		return;
	/* the bytes are wake-ups: the main loop looks at the slots next */
	for (;;)
	{
		ssize_t		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		/* closed by the backend (it ended), or broken */
		conn_drop(c, epoll_fd, fd);
		return;
	}
}

void
conns_answer(EngineConns *c, uint32_t conn, uint32_t slot)
{
	int			fd = (int) (conn & 0xFFFF);
	uint32_t	serial = conn >> 16;

	if (serial == 0 || fd >= c->nfds || __atomic_load_n(&c->serial[fd], __ATOMIC_ACQUIRE) != serial)
		return;
	/* a full socket means its backend is not reading: it will look at its slot anyway */
	(void) send(fd, &slot, sizeof(slot), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void
conns_close(EngineConns *c)
{
	/* the socket's name stays: a newer engine may have bound it already */
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	c->listen_fd = -1;
}
