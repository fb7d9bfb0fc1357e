/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"
#include "core/pidfile.h"

int proc_stat(pid_t pid, char *comm, size_t comm_len, char *state, pid_t *ppid,
	      unsigned long long *start_time)
{
	char path[64], stat[1024] = "";
	char *open, *close;
	unsigned long long start = 0;
	long parent = 0;
	char st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(stat, sizeof(stat), f))
		stat[0] = '\0';
	fclose(f);
	/* "<pid> (<comm>) <state> <ppid> <fields 5..21> <starttime> ...":
	 * comm may hold spaces and parentheses, the last ')' ends it. */
	open = strchr(stat, '(');
	close = strrchr(stat, ')');
	if (!open || !close || close < open ||
	    sscanf(close + 1,
		   " %c %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		   "%*s %*s %*s %*s %*s %llu",
		   &st, &parent, &start) != 3)
		return -EBADMSG;
	snprintf(comm, comm_len, "%.*s", (int)(close - open - 1), open + 1);
	if (state)
		*state = st;
	if (ppid)
		*ppid = (pid_t)parent;
	if (start_time)
		*start_time = start;
	return 0;
}

int pidfile_write(int dirfd, const char *name, pid_t pid)
{
	_cleanup_close_ int fd = -1;
	unsigned long long start = 0;
	char comm[64];

	if (proc_stat(pid, comm, sizeof(comm), NULL, NULL, &start) < 0)
		start = 0; /* ended already: the pid alone */
	fd = openat(dirfd, name,
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0644);
	if (fd < 0 || dprintf(fd, "%ld %llu\n", (long)pid, start) < 0)
		return log_errno(errno ?: EIO, "cannot write the pid file %s",
				 name);
	return 0;
}

int pidfile_read(int dirfd, const char *name, pid_t *pid,
		 unsigned long long *start_time)
{
	_cleanup_close_ int fd = -1;
	char buf[64] = "", *sp;
	unsigned long long start = 0;
	unsigned n_pid;
	ssize_t n;

	if (strchr(name, '/'))
		return -EINVAL;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENODATA; /* its process died before it wrote it */
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	sp = strchr(buf, ' ');
	if (sp) {
		*sp++ = '\0';
		if (sscanf(sp, "%llu", &start) != 1)
			return -EINVAL;
	}
	if (str_to_uint(buf, &n_pid) < 0 || n_pid < 2)
		return -EINVAL;
	*pid = (pid_t)n_pid;
	*start_time = start;
	return 0;
}

bool pid_is_process(pid_t pid, const char *comm, unsigned long long start_time)
{
	unsigned long long start;
	char name[64], state;

	if (proc_stat(pid, name, sizeof(name), &state, NULL, &start) < 0)
		return false;
	if ((comm && strcmp(name, comm) != 0) || state == 'Z' || state == 'X')
		return false;
	return !start_time || start == start_time;
}

const char *path_comm(const char *path, char comm[16])
{
	const char *slash;

	path = path ? path : "";
	slash = strrchr(path, '/');
	snprintf(comm, 16, "%s", slash ? slash + 1 : path);
	return comm;
}
