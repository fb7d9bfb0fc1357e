/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "macro.h"
#include "spawn.h"

static void child_report(int fd, int stage, int err)
{
	struct spawn_report rep = { stage, err };
	ssize_t n _unused_ = write(fd, &rep, sizeof(rep));
}

static _Noreturn void child_fail(int fd, int stage, int err)
{
	child_report(fd, stage, err);
	_exit(err == ENOENT ? 127 : 126);
}

static void child_reset_signals(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static const char *env_get(char **env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/* execve with a PATH search in the task's environment, like execvpe but
 * without looking at the agent's own environment. */
static int child_exec(char **argv, char **env)
{
	const char *path = env_get(env, "PATH");
	const char *p;
	int err = ENOENT;

	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, env);
		return errno;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; p;) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);
		char file[4096];

		if (dlen == 0)
			snprintf(file, sizeof(file), "%s", argv[0]);
		else
			snprintf(file, sizeof(file), "%.*s/%s", (int)dlen, p,
				 argv[0]);
		execve(file, argv, env);
		/* Like a shell: EACCES only for a file that exists. */
		if (errno == EACCES) {
			if (access(file, F_OK) == 0)
				err = EACCES;
		} else if (errno != ENOENT && errno != ENOTDIR) {
			return errno;
		}
		p = end ? end + 1 : NULL;
	}
	return err;
}

static int child_identity(const struct proto_exec *m)
{
	gid_t *groups = calloc(m->ngroups + 1, sizeof(gid_t));

	if (!groups)
		return ENOMEM;
	for (uint32_t i = 0; i < m->ngroups; i++)
		groups[i] = m->groups[i];
	if (setgroups(m->ngroups, groups) < 0 || setgid(m->gid) < 0 ||
	    setuid(m->uid) < 0)
		return errno;
	free(groups);
	/* Paranoia: make sure root cannot be regained. */
	if (m->uid != 0 && setuid(0) == 0)
		return EPERM;
	return 0;
}

static void child_close_range(unsigned first, unsigned last)
{
	if (first > last)
		return;
	if (syscall(SYS_close_range, first, last, 0) == 0)
		return;
	for (unsigned fd = first; fd <= last && fd < 65536; fd++)
		close((int)fd);
}

/* Places @fds at 0..n-1 and keeps only those and @report (>= 10). */
static int child_place_fds(int *fds, int n, int report)
{
	int moved[4];

	for (int i = 0; i < n; i++) {
		moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
		if (moved[i] < 0)
			return errno;
	}
	for (int i = 0; i < n; i++)
		if (dup2(moved[i], i) < 0)
			return errno;
	child_close_range((unsigned)n, (unsigned)report - 1);
	child_close_range((unsigned)report + 1, ~0u);
	return 0;
}

static int child_pty(const struct proto_exec *m, int master, int *fds)
{
	struct winsize ws = { .ws_row = m->rows, .ws_col = m->cols };
	const char *name = ptsname(master);
	int slave = name ? open(name, O_RDWR) : -1;

	if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
		return errno;
	if (m->rows && m->cols)
		ioctl(slave, TIOCSWINSZ, &ws);
	fds[0] = fds[1] = fds[2] = slave;
	return 0;
}

static _Noreturn void child_main(const struct proto_exec *m, char **env,
				 int *fds, int report, int pty_master)
{
	struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY };
	int nfd = fds[3] >= 0 ? 4 : 3;
	int err;

	child_reset_signals();
	report = fcntl(report, F_DUPFD_CLOEXEC, 10);
	if (report < 0)
		_exit(126);
	if (setsid() < 0)
		child_fail(report, SPAWN_SETUP, errno);
	if (pty_master >= 0) {
		err = child_pty(m, pty_master, fds);
		if (err)
			child_fail(report, SPAWN_SETUP, err);
	}
	err = child_place_fds(fds, nfd, report);
	if (err)
		child_fail(report, SPAWN_SETUP, err);
	setrlimit(RLIMIT_MEMLOCK, &unlimited);
	err = child_identity(m);
	if (err)
		child_fail(report, SPAWN_IDENTITY, err);
	if (chdir(m->cwd) < 0) {
		child_report(report, SPAWN_CHDIR, errno);
		if (chdir("/tmp") < 0)
			child_fail(report, SPAWN_CHDIR, errno);
	}
	child_fail(report, SPAWN_EXEC, child_exec(m->argv, env));
}

/* The task's environment, with PMI_FD=3 when it gets a PMI socket. */
static char **task_env(const struct proto_exec *m)
{
	size_t n = 0, j = 0;
	char **env;

	while (m->env[n])
		n++;
	env = calloc(n + 2, sizeof(char *));
	if (!env)
		return NULL;
	/* The host's PMI_FD means nothing here: ours is 3, or there is none. */
	for (size_t i = 0; i < n; i++)
		if (strncmp(m->env[i], "PMI_FD=", 7) != 0)
			env[j++] = m->env[i];
	if (m->flags & PROTO_EXEC_PMI)
		env[j++] = "PMI_FD=3";
	env[j] = NULL;
	return env;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

static int open_pty(int *master)
{
	int fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (grantpt(fd) < 0 || unlockpt(fd) < 0) {
		close(fd);
		return -errno;
	}
	*master = fd;
	return 0;
}

/* Our ends: in = pipe to the task's stdin, out/err from its stdout/stderr. */
static int open_channels(const struct proto_exec *m, int in[2], int out[2],
			 int err[2], int pmi[2], int rep[2])
{
	if (pipe2(rep, O_CLOEXEC) < 0)
		return -errno;
	if ((m->flags & PROTO_EXEC_PMI) &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pmi) < 0)
		return -errno;
	if (m->flags & PROTO_EXEC_PTY)
		return 0;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0)
		return -errno;
	return 0;
}

int spawn_task(const struct proto_exec *m, struct spawned *s)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int pmi[2] = { -1, -1 }, rep[2] = { -1, -1 }, master = -1;
	_cleanup_free_ char **env = task_env(m);
	int r;

	if (!env)
		return -ENOMEM;
	r = open_channels(m, in, out, err, pmi, rep);
	if (r == 0 && (m->flags & PROTO_EXEC_PTY))
		r = open_pty(&master);
	if (r < 0)
		goto fail;
	s->pid = fork();
	if (s->pid < 0) {
		r = -errno;
		goto fail;
	}
	if (s->pid == 0) {
		int fds[4] = { in[0], out[1], err[1], pmi[1] };

		close(rep[0]);
		child_main(m, env, fds, rep[1], master);
	}
	close(rep[1]);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (pmi[1] >= 0)
		close(pmi[1]);
	s->report = rep[0];
	s->pmi = pmi[0];
	if (master >= 0) {
		s->in = master;
		s->out = fcntl(master, F_DUPFD_CLOEXEC, 3);
		s->err = -1;
	} else {
		s->in = in[1];
		s->out = out[0];
		s->err = err[0];
	}
	return 0;
fail:
	close_pair(in);
	close_pair(out);
	close_pair(err);
	close_pair(pmi);
	close_pair(rep);
	if (master >= 0)
		close(master);
	return r;
}
