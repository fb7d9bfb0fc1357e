/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The pid files of a guest's host processes in the job's state directory
 * (qemu.pid, relay.pid, virtiofsd-I.pid): "PID [START_TIME]". The start
 * time (clock ticks after boot, /proc/PID/stat field 22) tells a reused
 * pid apart, so root never signals or adopts a stranger's process. In
 * core (libc only): the relay writes its own.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* From /proc/@pid/stat: its command (comm, at most @comm_len - 1 bytes),
 * state letter (if @state), parent (if @ppid) and start time (if
 * @start_time). */
int proc_stat(pid_t pid, char *comm, size_t comm_len, char *state, pid_t *ppid,
	      unsigned long long *start_time);

/* Writes @name in @dirfd (AT_FDCWD and a path: there): @pid and its start
 * time (the pid alone if it ended already). */
int pidfile_write(int dirfd, const char *name, pid_t pid);

/* Reads @name (a file directly in @dirfd, no symlink): -ENOENT when it is
 * missing, -ENODATA when empty, -EINVAL when it does not hold "PID
 * [START_TIME]" with PID > 1;
 * *@start_time is 0 when the file has none. */
int pidfile_read(int dirfd, const char *name, pid_t *pid,
		 unsigned long long *start_time);

/* The command name (comm) the kernel gives the program at @path: its last
 * component's first 15 bytes, into @comm. */
const char *path_comm(const char *path, char comm[16]);

/* Is @pid the process a pid file named: alive (a zombie counts as gone),
 * its command @comm (NULL: any) and, when @start_time is not 0, started
 * then? */
bool pid_is_process(pid_t pid, const char *comm, unsigned long long start_time);
