/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"

/* Is every controller of the comma-separated @ctrls among the
 * comma-separated super options @opts of a v1 mount? */
static bool opts_hold_all(const char *opts, const char *ctrls)
{
	const char *c = ctrls;

	while (*c) {
		size_t len = strcspn(c, ",");
		const char *o = opts;
		bool found = false;

		while (*o && !found) {
			size_t olen = strcspn(o, ",");

			found = olen == len && strncmp(o, c, len) == 0;
			o += olen + (o[olen] == ',');
		}
		if (!found)
			return false;
		c += len + (c[len] == ',');
	}
	return true;
}

/* The mount point of the hierarchy of @ctrls ("" for v2) into @mnt, and
 * its root (the path of the hierarchy mounted there) into @root. */
static int hierarchy_mount(const char *mountinfo, const char *ctrls, char *mnt,
			   size_t mnt_size, char *root, size_t root_size)
{
	_cleanup_fclose_ FILE *f = fopen(mountinfo, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char r[PATH_MAX], m[PATH_MAX], fstype[32], opts[512];
		const char *dash = strstr(line, " - ");

		if (!dash ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", r, m) != 2 ||
		    sscanf(dash + 3, "%31s %*s %511s", fstype, opts) != 2)
			continue;
		if (*ctrls ? strcmp(fstype, "cgroup") != 0 ||
				     !opts_hold_all(opts, ctrls)
			   : strcmp(fstype, "cgroup2") != 0)
			continue;
		snprintf(mnt, mnt_size, "%s", m);
		snprintf(root, root_size, "%s", strcmp(r, "/") == 0 ? "" : r);
		return 0;
	}
	return -ENOENT;
}

/* Writes @pid into @dir/cgroup.procs. */
static int cgroup_move(const char *dir, pid_t pid)
{
	char path[PATH_MAX], text[24];
	_cleanup_close_ int fd = -1;
	int n;

	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = snprintf(text, sizeof(text), "%ld\n", (long)pid);
	return write_all(fd, text, (size_t)n);
}

/* Does cgroup path @path lie in job @job_id's cgroup? */
static bool path_in_job(const char *path, unsigned job_id)
{
	char want[32];
	const char *at;
	size_t len;

	len = (size_t)snprintf(want, sizeof(want), "/job_%u", job_id);
	for (at = strstr(path, want); at; at = strstr(at + 1, want))
		if (at[len] == '/' || at[len] == '\0')
			return true;
	return false;
}

int cgroup_join_at(const char *proc_root, const char *mountinfo, pid_t pid,
		   pid_t model, unsigned job_id)
{
	_cleanup_free_ char *line = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	char path[PATH_MAX];
	unsigned joined = 0;
	size_t cap = 0;
	int r = 0;

	snprintf(path, sizeof(path), "%s/%ld/cgroup", proc_root, (long)model);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (r == 0 && getline(&line, &cap, f) > 0) {
		char *ctrls, *cg, mnt[PATH_MAX], root[PATH_MAX], dir[PATH_MAX];
		size_t root_len;

		line[strcspn(line, "\n")] = '\0';
		ctrls = strchr(line, ':');
		cg = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!cg)
			continue;
		*ctrls++ = '\0';
		*cg++ = '\0';
		if (!path_in_job(cg, job_id) ||
		    hierarchy_mount(mountinfo, ctrls, mnt, sizeof(mnt), root,
				    sizeof(root)) < 0)
			continue;
		root_len = strlen(root);
		if (strncmp(cg, root, root_len) != 0)
			continue; /* outside what is mounted here */
		if (snprintf(dir, sizeof(dir), "%s%s", mnt, cg + root_len) >=
		    (int)sizeof(dir)) {
			r = -ENAMETOOLONG;
			break;
		}
		r = cgroup_move(dir, pid);
		if (r < 0)
			log_errno(r, "cannot move pid %ld into %s", (long)pid,
				  dir);
		else
			joined++;
	}
	if (r == 0 && joined == 0)
		r = -ENOENT;
	return r;
}

int cgroup_join(pid_t pid, pid_t model, unsigned job_id)
{
	return cgroup_join_at("/proc", "/proc/self/mountinfo", pid, model,
			      job_id);
}
