/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Small fd and socket helpers shared by slurm-vm-agent, -relay and -exec
 * (libc only: the agent is linked statically). */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"    /* clock_now_ms */
#include "fileutil.h" /* write_all */

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
