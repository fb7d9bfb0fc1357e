/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "core/macro.h"
#include "channel/netenv.h"
#include "channel/pmixenv.h"
#include "spawn.h"
#include "workdir.h"

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

/* Replaces NAME=... of @entry's name in @env, or appends it (task_env()
 * leaves room for one more). */
static void env_put(char **env, char *entry)
{
	size_t len = strcspn(entry, "=") + 1;

	for (; *env; env++)
		if (strncmp(*env, entry, len) == 0) {
			*env = entry;
			return;
		}
	env[0] = entry;
	env[1] = NULL;
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

/* To the task's own stderr, as slurmstepd's errors before exec. */
static void child_error(const char *fmt, ...) _printf_(1, 2);
static void child_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dprintf(2, "slurm-vm-agent: error: %s\n", msg);
}

/* PROTO_ENV_AFFINITY: the host task's CPUs as vCPUs (taskenv.h). */
static void child_affinity(char **env)
{
	const char *s = env_get(env, PROTO_ENV_AFFINITY);
	cpu_set_t set;

	if (!s || !*s)
		return;
	CPU_ZERO(&set);
	while (*s) {
		char *end;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;

		if (end == s)
			return;
		if (*end == '-') {
			s = end + 1;
			hi = strtoul(s, &end, 10);
			if (end == s)
				return;
		}
		for (unsigned long c = lo; c <= hi && c < CPU_SETSIZE; c++)
			CPU_SET(c, &set);
		if (*end != ',' && *end != '\0')
			return;
		s = *end ? end + 1 : end;
	}
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		child_error("cannot bind the task to vCPUs %s: %s",
			    env_get(env, PROTO_ENV_AFFINITY), strerror(errno));
}

static void child_umask(char **env)
{
	const char *s = env_get(env, "SLURM_UMASK");
	char *end;
	unsigned long mask;

	if (!s)
		return;
	mask = strtoul(s, &end, 8);
	if (end != s && !*end && mask <= 0777)
		umask((mode_t)mask);
}

static const struct {
	const char *name;
	int resource;
} propagated_limits[] = {
	{ "CPU", RLIMIT_CPU },	   { "FSIZE", RLIMIT_FSIZE },
	{ "DATA", RLIMIT_DATA },   { "STACK", RLIMIT_STACK },
	{ "CORE", RLIMIT_CORE },   { "RSS", RLIMIT_RSS },
	{ "NPROC", RLIMIT_NPROC }, { "NOFILE", RLIMIT_NOFILE },
	{ "AS", RLIMIT_AS },
};

/* The submit host's soft limits srun propagates (SLURM_RLIMIT_<NAME>,
 * "U" first when asked for with --propagate), as slurmstepd sets them
 * (ulimits.c _set_limit): soft limits only; one above the hard limit is
 * reduced to it, or, when the user asked for it, an error. MEMLOCK stays
 * unlimited: RDMA in the guest needs it (spank_vm(8)). */
static void child_limits(char **env)
{
	char name[32];

	for (size_t i = 0; i < ARRAY_SIZE(propagated_limits); i++) {
		const char *s;
		char *end;
		unsigned long long v;
		struct rlimit r;
		bool asked;

		snprintf(name, sizeof(name), "SLURM_RLIMIT_%s",
			 propagated_limits[i].name);
		s = env_get(env, name);
		if (!s)
			continue;
		asked = *s == 'U';
		s += asked;
		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || end == s || *end ||
		    getrlimit(propagated_limits[i].resource, &r) < 0 ||
		    r.rlim_cur == (rlim_t)v)
			continue;
		r.rlim_cur = (rlim_t)v;
		if (!asked && r.rlim_cur > r.rlim_max)
			r.rlim_cur = r.rlim_max;
		if (setrlimit(propagated_limits[i].resource, &r) < 0 && asked)
			child_error("Can't propagate RLIMIT_%s of %llu from "
				    "submit host: %s",
				    propagated_limits[i].name, v,
				    strerror(errno));
	}
}

/* TMPDIR as slurmstepd makes it (task.c _make_tmpdir): created 0700 as the
 * user, or /tmp with the reason. */
static void child_tmpdir(char **env)
{
	static char fallback[] = "TMPDIR=/tmp";
	const char *dir = env_get(env, "TMPDIR");
	struct stat st;
	int err;

	if (!dir) {
		env_put(env, fallback);
		return;
	}
	if (mkdir(dir, 0700) == 0)
		return;
	err = errno;
	if (stat(dir, &st) < 0)
		child_error("Unable to create TMPDIR [%s]: %s", dir,
			    strerror(err));
	else if (!S_ISDIR(st.st_mode))
		child_error("TMPDIR [%s] is not a directory", dir);
	else if (access(dir, X_OK | W_OK) < 0)
		child_error("TMPDIR [%s] is not writeable", dir);
	else
		return;
	child_error("Setting TMPDIR to /tmp");
	env_put(env, fallback);
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
	char why[128];
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
	child_affinity(m->env);
	err = child_identity(m);
	if (err)
		child_fail(report, SPAWN_IDENTITY, err);
	child_umask(m->env);
	child_limits(m->env);
	/* As slurmstepd on bare metal (mgr.c), in the same words, and why:
	 * the host's directories are here only when vm.conf shares them. */
	err = workdir_enter(m->cwd, "/proc/self/mountinfo", why, sizeof(why));
	if (err)
		child_error("couldn't chdir to `%s': %s: going to /tmp instead "
			    "(the guest has the host's directories only "
			    "under vm.conf SharedDirs=)",
			    m->cwd, why);
	if (err < 0) {
		child_error("couldn't chdir to /tmp either. dying.");
		child_fail(report, SPAWN_CHDIR, -err);
	}
	child_tmpdir(env);
	child_fail(report, SPAWN_EXEC, child_exec(m->argv, env));
}

/* "SLURM_VM_AGENT=<this binary>", or empty. */
static char agent_env[PATH_MAX + 16];

static void agent_env_init(void)
{
	char self[PATH_MAX];
	ssize_t n;

	if (agent_env[0])
		return;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		snprintf(agent_env, sizeof(agent_env), "SLURM_VM_AGENT=%.*s",
			 (int)n, self);
}

/* Variables the agent consumes: the host's PMI_FD means nothing here (ours
 * is 3, or there is none); the affinity and the limits are applied; for a
 * PMIx task, what points at the host's server and stores (pmixenv.h). */
static bool consumed_var(const struct proto_exec *m, const char *entry)
{
	return ((m->flags & PROTO_EXEC_PMIX) && pmixenv_consumed(entry)) ||
	       strncmp(entry, "PMI_FD=", 7) == 0 ||
	       strncmp(entry, "SLURM_VM_AGENT=", 15) == 0 ||
	       strncmp(entry, PROTO_ENV_AFFINITY "=",
		       strlen(PROTO_ENV_AFFINITY) + 1) == 0 ||
	       strncmp(entry, "SLURM_RLIMIT_", 13) == 0;
}

/* The task's environment, with PMI_FD=3 when it gets a PMI socket, the job
 * network's defaults for MPI (netenv.h: only the guest knows its interface
 * and InfiniBand names; @net holds them), the PMIx variables of a PMIx task
 * (@pmix holds them) and room for child_tmpdir() to add TMPDIR. */
static char **task_env(const struct proto_exec *m, char **net, char **pmix)
{
	size_t n = 0, j = 0;
	char **env;

	if (netenv_defaults("/sys", m->env, net) < 0)
		return NULL;
	agent_env_init();
	while (m->env[n])
		n++;
	env = calloc(n + NETENV_MAX + PMIXENV_MAX + 4, sizeof(char *));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!consumed_var(m, m->env[i]))
			env[j++] = m->env[i];
	for (size_t i = 0; net[i]; i++)
		env[j++] = net[i];
	for (size_t i = 0; pmix[i]; i++)
		env[j++] = pmix[i];
	if (m->flags & PROTO_EXEC_PMI)
		env[j++] = "PMI_FD=3";
	/* This binary, for what runs a --vm-batch script (hostcmd.h). */
	if (agent_env[0])
		env[j++] = agent_env;
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

/* A PMIx task's server in the guest: a listener on 127.0.0.1 (any port)
 * whose one connection the agent carries to the host's server. */
static int open_pmix_listener(int *fd, char **pmix, const struct proto_exec *m)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int r;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (*fd < 0)
		return -errno;
	if (bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(*fd, 1) < 0 ||
	    getsockname(*fd, (struct sockaddr *)&sa, &len) < 0)
		return -errno;
	r = pmixenv_guest(m->env, ntohs(sa.sin_port), pmix);
	return r < 0 ? r : 0;
}

static void pmix_free(char *(*pmix)[PMIXENV_MAX + 1])
{
	pmixenv_free(*pmix);
}

int spawn_task(const struct proto_exec *m, struct spawned *s)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int pmi[2] = { -1, -1 }, rep[2] = { -1, -1 }, master = -1;
	int pmix_fd = -1;
	_cleanup_netenv_ char *net[NETENV_MAX + 1] = { NULL };
	__attribute__((
		cleanup(pmix_free))) char *pmix[PMIXENV_MAX + 1] = { NULL };
	_cleanup_free_ char **env = NULL;
	int r = 0;

	if (m->flags & PROTO_EXEC_PMIX)
		r = open_pmix_listener(&pmix_fd, pmix, m);
	if (r < 0)
		goto fail;
	env = task_env(m, net, pmix);
	if (!env) {
		r = -ENOMEM;
		goto fail;
	}
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
	s->pmix_listen = pmix_fd;
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
	if (pmix_fd >= 0)
		close(pmix_fd);
	return r;
}
