/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			poll(&pfd, 1, 1000);
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int file_replace_as(const char *path, const void *data, size_t len, mode_t mode,
		    uid_t uid, gid_t gid)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	int r = 0;

	if (asprintf(&tmp, "%s" FILE_REPLACE_TMP_SUFFIX, path) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  mode & 0700);
	if (fd < 0)
		return log_errno(errno, "%s: cannot write", tmp);
	/* Owner first, then the mode (a chown clears set-id bits); EPERM:
	 * not root, the file stays the caller's. */
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
	    fchown(fd, uid, gid) < 0 && errno != EPERM)
		r = -errno;
	/* A leftover taken over keeps its mode unless told. */
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0)
		r = write_all(fd, data, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return log_errno(-r, "%s: cannot replace", path);
	}
	return 0;
}

int file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	return file_replace_as(path, data, len, mode, (uid_t)-1, (gid_t)-1);
}

int file_link_name(const char *dir, const char *name, char *out, size_t size)
{
	_cleanup_free_ char *path = NULL;
	char target[PATH_MAX];
	const char *base;
	ssize_t n;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) >= size || !*base)
		return -EINVAL;
	strcpy(out, base);
	return 0;
}

bool file_is_replace_tmp(const char *name)
{
	size_t n = strlen(name), s = strlen(FILE_REPLACE_TMP_SUFFIX);

	return n >= s && strcmp(name + n - s, FILE_REPLACE_TMP_SUFFIX) == 0;
}

int dir_open_root_private(const char *path, mode_t mode, const char *what)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return log_errno(errno, "cannot create %s %s", what, path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return log_errno(errno, "cannot open %s %s", what, path);
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_error("%s %s must be root's and writable only by root",
			  what, path);
		return -EPERM;
	}
	return TAKE_FD(fd);
}

ssize_t file_read_small(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	return (ssize_t)got;
}

int proc_comm(pid_t pid, char comm[16])
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	n = file_read_small(path, comm, 16);
	if (n < 0) {
		comm[0] = '\0';
		return (int)n;
	}
	comm[strcspn(comm, "\n")] = '\0';
	return 0;
}

/* Does child @pid have, or take within @wait_ms from @parent_comm, the
 * command @comm? */
static bool child_named(pid_t pid, const char *parent_comm, const char *comm,
			unsigned wait_ms)
{
	char now[16] = "";

	for (unsigned waited = 0;; waited += 10) {
		if (proc_comm(pid, now) < 0 || strcmp(now, parent_comm) != 0 ||
		    waited >= wait_ms)
			break;
		usleep(10 * 1000);
	}
	return strcmp(now, comm) == 0;
}

pid_t proc_child_named(pid_t parent, const char *comm, unsigned wait_ms)
{
	_cleanup_closedir_ DIR *tasks = NULL;
	char path[PATH_MAX], parent_comm[16];
	struct dirent *de;

	if (proc_comm(parent, parent_comm) < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/task", (long)parent);
	tasks = opendir(path);
	while (tasks && (de = readdir(tasks))) {
		_cleanup_fclose_ FILE *f = NULL;
		long pid;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%s/children",
			 (long)parent, de->d_name);
		f = fopen(path, "re");
		while (f && fscanf(f, "%ld", &pid) == 1)
			if (pid > 1 &&
			    child_named((pid_t)pid, parent_comm, comm, wait_ms))
				return (pid_t)pid;
	}
	return 0;
}

ssize_t fd_copy_bounded(int in_fd, int out_fd, off_t max)
{
	static const char cut[] = "\n[slurm-vm: log bound reached; "
				  "the rest is discarded]\n";
	char buf[16384];
	struct stat st;
	off_t left = max, copied = 0;
	bool cut_noted = false;
	ssize_t n, take;

	if (fstat(out_fd, &st) == 0 && S_ISREG(st.st_mode))
		left = st.st_size < max ? max - st.st_size : 0;
	for (;;) {
		n = read(in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return copied;
		take = n < left ? n : (ssize_t)left;
		if (take > 0 && write_all(out_fd, buf, (size_t)take) == 0)
			copied += take;
		left -= take;
		if (take < n && !cut_noted) {
			cut_noted = true;
			(void)!write_all(out_fd, cut, sizeof(cut) - 1);
		}
	}
}
