/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "user.h"

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

/* The child: become the user, open without following the last link, copy
 * at most @max + 1 bytes to @fd. Exit status: 0, or an errno value. */
static void read_child(uid_t uid, gid_t gid, const char *path, size_t max,
		       int fd)
{
	char buf[4096];
	struct stat st;
	size_t total = 0;
	int in, r;

	r = user_become(uid, gid);
	if (r < 0)
		_exit(-r);
	in = open(path,
		  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		_exit(errno);
	if (fstat(in, &st) < 0)
		_exit(errno);
	if (!S_ISREG(st.st_mode))
		_exit(EINVAL);
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			_exit(errno);
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > max)
			_exit(EFBIG);
		if (write(fd, buf, (size_t)n) != n)
			_exit(EPIPE);
	}
	_exit(0);
}

int user_read_file(uid_t uid, gid_t gid, const char *path, size_t max,
		   char **data)
{
	_cleanup_free_ char *buf = malloc(max + 1);
	int pipefd[2], status = 0, r = 0;
	size_t used = 0;
	pid_t pid;

	*data = NULL;
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
		read_child(uid, gid, path, max, pipefd[1]);
	}
	close(pipefd[1]);
	for (;;) {
		ssize_t n = read(pipefd[0], buf + used, max - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == max) {
			char extra;
			/* one byte more: the child then fails with EFBIG */
			if (read(pipefd[0], &extra, 1) > 0)
				r = -EFBIG;
			break;
		}
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == 0 && !WIFEXITED(status))
		r = -ECHILD;
	else if (r == 0 && WEXITSTATUS(status))
		r = -WEXITSTATUS(status);
	if (r < 0)
		return r;
	buf[used] = '\0';
	*data = TAKE_PTR(buf);
	return 0;
}
