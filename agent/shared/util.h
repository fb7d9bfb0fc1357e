/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Small fd and socket helpers shared by slurm-vm-agent, -relay and -exec
 * (libc only: the agent is linked statically). */
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/clock.h"	   /* clock_now_ms */
#include "core/fileutil.h" /* write_all */

int fd_set_nonblock(int fd, bool on);
int fd_set_cloexec(int fd);
/* Binds and listens on a unix socket at @path (an old socket there is
 * replaced; anything else is refused). Returns the fd or -errno. */
int unix_listen(const char *path, mode_t mode);
/* Connects to a unix socket, non-blocking. Returns the fd or -errno. */
int unix_connect(const char *path);
/* Blocks @sigs and returns a non-blocking signalfd for them. */
int signalfd_open(const int *sigs, size_t n);
/* Random 64 bits (getrandom, falling back to time and pid). */
uint64_t random_u64(void);
/* Opens /dev/null on whichever of fds 0, 1, 2 is closed, so that no socket
 * we open later lands there and gets mistaken for stdio. */
int stdio_ensure_open(void);
/* Ends this process as another ended: exit(@value), or death by signal
 * @value (without a core file of ours). */
_Noreturn void exit_like(bool signaled, int value);

/* One round of a program's event loop: the descriptors poll() waits on and,
 * beside each, what it is to the program (a kind of its own, and the
 * object and number it belongs to: a session and its stream, a client).
 * The loop empties it, adds what it waits for, waits, and dispatches on
 * the kinds; the memory is kept from round to round. */
struct pollref {
	int kind;
	void *obj;
	int num;
};

struct pollset {
	struct pollfd *fds;
	struct pollref *refs;
	size_t n, cap;
};

/* 0, or -ENOMEM (@fd is then not waited on this round). */
int pollset_add(struct pollset *ps, int fd, short events, int kind, void *obj,
		int num);
/* poll() for at most @timeout_ms (-1: no end): 0, also when a signal cut
 * the wait short, or -errno (errno set). */
int pollset_wait(struct pollset *ps, int timeout_ms);
void pollset_free(struct pollset *ps);
