/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/macro.h"
#include "job/user.h"

#define USER_GROUPS_MAX 256

int user_become(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);
	gid_t groups[NGROUPS_MAX];
	int n = NGROUPS_MAX;

	if (!pw || getgrouplist(pw->pw_name, gid, groups, &n) < 0)
		n = 0;
	if (setgroups((size_t)n, groups) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		return -errno;
	return 0;
}

static int group_name(gid_t gid, struct user_group *g)
{
	struct group *gr = getgrgid(gid);

	g->gid = gid;
	if (!gr) {
		log_error("group %u is unknown to this host's NSS",
			  (unsigned)gid);
		return -ENOENT;
	}
	g->name = strdup(gr->gr_name);
	return g->name ? 0 : -ENOMEM;
}

int user_info_load(uid_t uid, gid_t gid, struct user_info *u)
{
	gid_t gids[USER_GROUPS_MAX];
	int n = USER_GROUPS_MAX, r;
	struct passwd *pw;

	memset(u, 0, sizeof(*u));
	errno = 0;
	pw = getpwuid(uid);
	if (!pw || pw->pw_uid != uid) {
		log_error("uid %u is unknown to this host's NSS",
			  (unsigned)uid);
		return errno ? -errno : -ENOENT;
	}
	u->uid = uid;
	u->gid = gid;
	u->name = strdup(pw->pw_name);
	u->home = strdup(pw->pw_dir);
	u->shell = strdup(pw->pw_shell && *pw->pw_shell ? pw->pw_shell
							: "/bin/sh");
	if (!u->name || !u->home || !u->shell) {
		r = -ENOMEM;
		goto out;
	}
	r = group_name(gid, &u->primary);
	if (r < 0)
		goto out;
	/* More groups than that: the first USER_GROUPS_MAX, said so. */
	if (getgrouplist(u->name, gid, gids, &n) < 0) {
		log_warn(
			"user %s has more than %d groups; the guest gets the first %d",
			u->name, USER_GROUPS_MAX, USER_GROUPS_MAX);
		n = USER_GROUPS_MAX;
	}
	u->groups = calloc((size_t)n, sizeof(*u->groups));
	if (!u->groups) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (gids[i] == gid)
			continue;
		/* A group without a name cannot be made in the guest. */
		if (group_name(gids[i], &u->groups[u->n_groups]) < 0)
			continue;
		u->n_groups++;
	}
out:
	if (r < 0)
		user_info_free(u);
	return r;
}

void user_info_free(struct user_info *u)
{
	free(u->name);
	free(u->home);
	free(u->shell);
	free(u->primary.name);
	for (size_t i = 0; i < u->n_groups; i++)
		free(u->groups[i].name);
	free(u->groups);
	memset(u, 0, sizeof(*u));
}

unsigned user_child_timeout_ms = USER_CHILD_TIMEOUT_S * 1000;

static ssize_t read_retry(int fd, char *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* What the child writes until it closes the pipe, within the deadline. */
static int user_collect(int fd, char *buf, size_t max, size_t *used)
{
	long deadline = (long)clock_now_ms() + (long)user_child_timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = deadline - (long)clock_now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		n = read_retry(fd, buf + *used, max + 1 - *used);
		if (n <= 0)
			return (int)n;
		*used += (size_t)n;
		if (*used > max)
			return -EFBIG;
	}
}

/* A child that is late or whose answer is refused is killed. One stuck in
 * the kernel (a hard NFS mount) may not die at once: it is then left to
 * init rather than holding the prolog. */
static int user_reap(pid_t pid, bool kill_it)
{
	int status = 0;
	pid_t w = 0;

	if (kill_it)
		kill(pid, SIGKILL);
	for (int i = 0; i < 200; i++) {
		w = waitpid(pid, &status, kill_it ? WNOHANG : 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -ECHILD;
		if (w == pid)
			break;
		usleep(10000);
	}
	if (w != pid) {
		log_warn("child %d that runs as a user did not die; it is left "
			 "to init",
			 (int)pid);
		return -ECHILD;
	}
	if (!WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

int user_run(uid_t uid, gid_t gid, user_child_fn fn, const void *arg,
	     size_t max, char **out, size_t *len)
{
	_cleanup_free_ char *buf = malloc(max + 1);
	int pipefd[2], r, rc;
	size_t used = 0;
	pid_t pid;

	*out = NULL;
	if (len)
		*len = 0;
	if (!buf)
		return -ENOMEM;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	}
	if (pid == 0) {
		close(pipefd[0]);
		r = user_become(uid, gid);
		if (r == 0)
			r = fn(arg, pipefd[1]);
		_exit(r < 0 ? (-r & 0xff ?: EIO) : 0);
	}
	close(pipefd[1]);
	r = user_collect(pipefd[0], buf, max, &used);
	close(pipefd[0]);
	rc = user_reap(pid, r < 0);
	if (r < 0)
		return r;
	buf[used] = '\0';
	if (len)
		*len = used;
	*out = TAKE_PTR(buf);
	return rc;
}

/* In the child, as the user: open without following the last link, copy
 * to @fd (the parent stops it past the maximum). */
static int read_child(const void *arg, int fd)
{
	_cleanup_close_ int in = -1;
	char buf[4096];
	struct stat st;
	ssize_t n;

	in = open(arg,
		  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	while ((n = read_retry(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n)
			return -EPIPE;
	return (int)n;
}

int user_read_file(uid_t uid, gid_t gid, const char *path, size_t max,
		   char **data)
{
	int r = user_run(uid, gid, read_child, path, max, data, NULL);

	if (r < 0)
		free(TAKE_PTR(*data));
	return r;
}

/* In the child, as the user: can it open @arg for reading? */
static int open_child(const void *arg, int fd)
{
	int in = open(arg, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (in < 0)
		return -errno;
	close(in);
	return 0;
}

int user_can_open(uid_t uid, gid_t gid, const char *path)
{
	_cleanup_free_ char *out = NULL;

	return user_run(uid, gid, open_child, path, 0, &out, NULL);
}
