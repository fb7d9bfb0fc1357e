/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hw/holders.h"
#include "core/fileutil.h"
#include "core/macro.h"
#include "core/strutil.h"

static bool fd_dir_has(const char *pid, const char *target)
{
	char dir[64], link[PATH_MAX + 1], path[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = strcmp(link, target) == 0;
	}
	closedir(d);
	return found;
}

/* The real uid of @pid, -1 when it is gone. The real one: a set-uid
 * program a user started (su waiting for a password) is still the user's,
 * and must not pass for a holder of root's, which drains the node. */
static long proc_uid(unsigned pid)
{
	char path[64], line[256];
	unsigned ruid;
	long uid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u", &ruid) == 1) {
			uid = (long)ruid;
			break;
		}
	fclose(f);
	return uid;
}

/* SIGKILL to @h if it still is a process of the same uid holding @target:
 * a pidfd pins the process, so a recycled pid is never signalled. */
static void holder_kill(const char *target, const struct device_holder *h)
{
	_cleanup_close_ int pfd =
		(int)syscall(SYS_pidfd_open, (pid_t)h->pid, 0);
	char pid[16];

	if (pfd < 0 && errno != ENOSYS)
		return; /* gone */
	snprintf(pid, sizeof(pid), "%d", (int)h->pid);
	if (proc_uid((unsigned)h->pid) != h->uid || !fd_dir_has(pid, target))
		return;
	if (pfd < 0) /* a kernel before 5.3: checked just now */
		kill(h->pid, SIGKILL);
	else
		syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
}

/* Every process other than ours with @target open: how many (or -errno);
 * @h gets a root one if there is, else the first. With @kill, each that is
 * not root's is sent SIGKILL. */
static int holders_scan(const char *target, bool kill, struct device_holder *h)
{
	struct device_holder cur;
	struct dirent *de;
	unsigned self = (unsigned)getpid(), p;
	int n = 0;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (str_to_uint(de->d_name, &p) < 0 || p == self)
			continue;
		if (!fd_dir_has(de->d_name, target))
			continue;
		cur.pid = (pid_t)p;
		cur.uid = proc_uid(p);
		if (proc_comm((pid_t)p, cur.comm) < 0)
			snprintf(cur.comm, sizeof(cur.comm), "?");
		if (n++ == 0 || cur.uid == 0)
			*h = cur;
		if (kill && cur.uid > 0)
			holder_kill(target, &cur);
	}
	closedir(d);
	return n;
}

int device_file_holder(const char *path, pid_t *pid, char *comm,
		       size_t comm_len)
{
	_cleanup_free_ char *target = realpath(path, NULL);
	struct device_holder h;
	int r;

	if (!target)
		return errno == ENOENT ? 0 : -errno;
	r = holders_scan(target, false, &h);
	if (r > 0) {
		*pid = h.pid;
		snprintf(comm, comm_len, "%s", h.comm);
	}
	return r > 0 ? 1 : r;
}

int device_file_free(const char *path, unsigned wait_ms,
		     struct device_holder *h, unsigned *killed)
{
	_cleanup_free_ char *target = realpath(path, NULL);
	unsigned waited = 0;
	int r;

	*killed = 0;
	if (!target)
		return errno == ENOENT ? 0 : -errno;
	while ((r = holders_scan(target, true, h)) > 0) {
		/* Root's: no leftover of a lending; the caller judges. */
		if (h->uid == 0 || waited >= wait_ms)
			return -EBUSY;
		if (*killed < (unsigned)r)
			*killed = (unsigned)r;
		usleep(20 * 1000);
		waited += 20;
	}
	return r;
}
