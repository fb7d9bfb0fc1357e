/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Files replaced whole: readers see the old file or the new one, never a
 * part of either.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The temporary file beside @path that file_replace() writes first. A
 * writer killed meanwhile leaves it; the next writer of @path takes it over
 * and readers of the directory skip names that end with it. */
#define FILE_REPLACE_TMP_SUFFIX ".slurm-vm.tmp"

/* Writes all of @len bytes to a blocking or non-blocking fd: 0 or -errno
 * (-EIO when write() wrote nothing). */
int write_all(int fd, const void *buf, size_t len);

/* Copies @in_fd to @out_fd until EOF on @in_fd, stopping the copy once
 * @out_fd holds @max bytes (its size counts: an O_APPEND log), with a line
 * that says so, then reading on and discarding, so that the writer never
 * blocks. For the output of a process its user may trace (and so make
 * write without end) to a file on a tmpfs. Bytes copied, or -errno of a
 * read. */
ssize_t fd_copy_bounded(int in_fd, int out_fd, off_t max);

/* Replaces @path with @len bytes of @data, mode @mode: written to @path
 * FILE_REPLACE_TMP_SUFFIX (never through a link), synced, renamed over
 * @path; on failure the temporary file is removed and the reason logged. */
int file_replace(const char *path, const void *data, size_t len, mode_t mode);
/* file_replace() giving the file to @uid:@gid ((uid_t)-1, (gid_t)-1: the
 * caller's); where the caller may not (EPERM), it stays the caller's. */
int file_replace_as(const char *path, const void *data, size_t len, mode_t mode,
		    uid_t uid, gid_t gid);
/* Does @name end with FILE_REPLACE_TMP_SUFFIX? */
bool file_is_replace_tmp(const char *name);

/* The last component of the target of the link @dir/@name (a sysfs link:
 * iommu_group, driver, physfn, virtfn<n>) into @out of @size bytes: 0,
 * -ENOENT when there is no such link, -EINVAL when the name does not fit. */
int file_link_name(const char *dir, const char *name, char *out, size_t size);

/* Up to @size - 1 bytes of @path (a /proc or sysfs file, NULs kept) into
 * @buf, NUL-terminated: how many, or -errno. */
ssize_t file_read_small(const char *path, char *buf, size_t size);

/* Process @pid's command name (/proc/PID/comm, at most 15 bytes) into
 * @comm: 0, or -errno (@comm "") when the process is gone. */
int proc_comm(pid_t pid, char comm[16]);

/* A child of @parent (of any of its threads) whose command is @comm, or
 * becomes it within @wait_ms while the child still has its parent's
 * (forked, not yet exec'd): its pid, or 0 when there is none. */
pid_t proc_child_named(pid_t parent, const char *comm, unsigned wait_ms);

/* Makes the directory @path (@mode) unless it exists and opens it, never
 * through a link, as a directory root may trust: root's and writable only
 * by root. The fd, or a negative errno, logged with @what (OverlayDir,
 * --seed-dir, ...) naming it. */
int dir_open_root_private(const char *path, mode_t mode, const char *what);
