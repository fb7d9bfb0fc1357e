/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SharedDirTransport=virtiofs: one Rust virtiofsd per share, run as the job
 * user with the user's groups, listening on a socket root made in the state
 * directory (qemu, the user's too, connects to it). Journaled VIRTIOFSD
 * before it starts; the epilog stops it (common/vm/teardown.c). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "job/journal.h"
#include "job/share_transport.h"
#include "job/user.h"
#include "prolog.h"
#include "vm/pidfile.h"
#include "vm/teardown.h"

#define SOCK_DIR       "sock"
#define CHILD_ERR_FD   4 /* the exec-error pipe, close-on-exec */
#define FIRST_SPARE_FD 10

/* sock/: root's, 0711, as the relay makes it: the user reaches the sockets
 * given to them by name, and can make or swap nothing there. */
static int sock_dir_open(struct prolog *p)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (mkdirat(p->state_fd, SOCK_DIR, 0700) < 0 && errno != EEXIST)
		return log_errno(errno, "cannot create %s/" SOCK_DIR,
				 p->state_path);
	fd = openat(p->state_fd, SOCK_DIR,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return log_errno(errno, "cannot open %s/" SOCK_DIR,
				 p->state_path);
	if (st.st_uid != 0 && st.st_uid != p->req.uid)
		return log_errno(EPERM, "%s/" SOCK_DIR " belongs to uid %u",
				 p->state_path, (unsigned)st.st_uid);
	if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0711) < 0)
		return log_errno(errno, "cannot make %s/" SOCK_DIR " root's",
				 p->state_path);
	return TAKE_FD(fd);
}

/* A listening socket at @path (in sock/, @name there), the job user's,
 * 0600. */
static int virtiofs_listen(struct prolog *p, int dirfd, const char *name,
			   const char *path)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return log_errno(ENAMETOOLONG,
				 "socket path %s is too long "
				 "(shorten StateDir=)",
				 path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_errno(errno, "cannot make a socket");
	/* a killed prolog's leftover */
	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return log_errno(errno, "cannot replace %s", path);
	old = umask(077);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 1) < 0)
		return log_errno(errno, "cannot listen on %s", path);
	if (fchownat(dirfd, name, p->req.uid, p->req.gid, AT_SYMLINK_NOFOLLOW) <
		    0 ||
	    fchmodat(dirfd, name, 0600, 0) < 0)
		return log_errno(errno, "cannot give %s to uid %u", path,
				 (unsigned)p->req.uid);
	return TAKE_FD(fd);
}

/* Puts @fd on @target; 0 or -errno. */
static int fd_move(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0) < 0 ? -errno : 0;
	return dup2(fd, target) < 0 ? -errno : 0;
}

/*
 * virtiofsd's output into its log, by a root process: virtiofsd is the
 * user's, who may trace it (where Yama allows) and make it write without
 * end to the log on /run, a tmpfs; rlimits bound every file it writes,
 * the share's too. So it writes into a pipe and this copies at most
 * VIRTIOFSD_LOG_MAX bytes, then drains. It stays in virtiofsd's process
 * group (the teardown's SIGTERM and the extern step's adoption reach it)
 * and ends at EOF, when virtiofsd has. Nothing else of the prolog's stays
 * open in it (the state directory's lock, slurmd's pipe).
 */
static int virtiofsd_log_copier(int pipe_r, int log_fd, int null_fd)
{
	sigset_t none;
	ssize_t r;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid > 0)
		return 0;
	if (fd_move(pipe_r, STDIN_FILENO) < 0 ||
	    fd_move(log_fd, STDOUT_FILENO) < 0 ||
	    fd_move(null_fd, STDERR_FILENO) < 0)
		_exit(1);
	/* not even the exec-error pipe: the prolog reads it to its EOF */
	if (syscall(SYS_close_range, STDERR_FILENO + 1, ~0u, 0) < 0)
		for (int fd = STDERR_FILENO + 1; fd < 65536; fd++)
			close(fd);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signals_ignore_job_wide();
	signal(SIGTERM, SIG_DFL);
	r = fd_copy_bounded(STDIN_FILENO, STDOUT_FILENO, VIRTIOFSD_LOG_MAX);
	_exit(r < 0 ? 1 : 0);
}

/* The child: what it runs with is set as root (its log, its open-file
 * bound), then it becomes the user for good and runs virtiofsd. Reports
 * a failure's errno on @err_fd; exec closes it. */
static _Noreturn void virtiofsd_child(struct prolog *p, unsigned i,
				      int listen_fd, int err_fd,
				      char *const *argv)
{
	/* The bound on the host's files a job's guest can hold open through
	 * one share; more is refused to it, not to the node. */
	const struct rlimit nofile = { VIRTIOFSD_NOFILE, VIRTIOFSD_NOFILE };
	char log_name[64];
	int log_fd, null_fd, out[2] = { -1, -1 }, r = 0;

	setsid();
	snprintf(log_name, sizeof(log_name), VIRTIOFSD_LOG_FMT, i);
	/* root's, 0600: opened before the user has no say over it */
	log_fd = openat(p->state_fd, log_name,
			O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			0600);
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (log_fd < 0 || null_fd < 0 || pipe2(out, O_CLOEXEC) < 0)
		r = -errno;
	/* Above every target first, so that no dup2 overwrites a source. */
	if (!r) {
		listen_fd = fcntl(listen_fd, F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
		err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
		log_fd = fcntl(log_fd, F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
		null_fd = fcntl(null_fd, F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
		out[0] = fcntl(out[0], F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
		out[1] = fcntl(out[1], F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
		if (listen_fd < 0 || err_fd < 0 || log_fd < 0 || null_fd < 0 ||
		    out[0] < 0 || out[1] < 0)
			r = -errno;
	}
	if (!r)
		r = virtiofsd_log_copier(out[0], log_fd, null_fd);
	/* virtiofsd holds the pipe's end only, never the log */
	if (!r)
		r = fd_move(null_fd, STDIN_FILENO)
			    ?: fd_move(out[1], STDOUT_FILENO)
			    ?: fd_move(out[1], STDERR_FILENO)
			    ?: fd_move(listen_fd, VIRTIOFSD_LISTEN_FD);
	if (!r && dup3(err_fd, CHILD_ERR_FD, O_CLOEXEC) < 0)
		r = -errno;
	if (!r) {
		err_fd = CHILD_ERR_FD;
		/* nothing of the prolog's (libvirt, the journal) goes on */
		if (syscall(SYS_close_range, CHILD_ERR_FD + 1, ~0u, 0) < 0)
			for (int fd = CHILD_ERR_FD + 1; fd < 65536; fd++)
				close(fd);
		if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
			r = -errno;
	}
	if (!r)
		r = user_become(p->req.uid, p->req.gid);
	if (!r) {
		sigset_t none;

		/* the prolog's signal handling is not virtiofsd's */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signals_ignore_job_wide();
		execv(argv[0], argv);
		r = -errno;
	}
	(void)!write(err_fd, &r, sizeof(r));
	_exit(127);
}

/* Starts share @i's virtiofsd; its socket's path in *@sock. */
static int virtiofsd_start(struct prolog *p, unsigned i, int dirfd, char **sock)
{
	const char *dir = p->conf.shared_dirs[i];
	struct virtiofsd_args args;
	_cleanup_close_ int listen_fd = -1;
	char name[64], pidfile[64];
	int pipefd[2], err = 0, r;
	pid_t pid;
	ssize_t n;

	snprintf(pidfile, sizeof(pidfile), VIRTIOFSD_PID_FMT, i);
	r = state_journal(p, JOURNAL_VIRTIOFSD, pidfile);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), VIRTIOFSD_SOCK_FMT, i);
	*sock = state_file(p, name);
	if (!*sock)
		return -ENOMEM;
	listen_fd = virtiofs_listen(p, dirfd, strrchr(name, '/') + 1, *sock);
	if (listen_fd < 0)
		return listen_fd;
	r = virtiofsd_argv(p->conf.virtiofsd_path, dir, &args);
	if (r < 0)
		return log_errno(r, "SharedDirs=%s: no virtiofsd command line",
				 dir);
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		r = log_errno(errno, "cannot make a pipe");
		goto out;
	}
	pid = fork();
	if (pid == 0)
		virtiofsd_child(p, i, listen_fd, pipefd[1], args.argv);
	close(pipefd[1]);
	if (pid < 0) {
		r = log_errno(errno, "cannot fork virtiofsd");
		close(pipefd[0]);
		goto out;
	}
	/* At once: a prolog killed from here on leaves the epilog its pid
	 * (its start time is the fork's). */
	r = pidfile_write(p->state_fd, pidfile, pid);
	/* EOF: it runs virtiofsd now. */
	n = read(pipefd[0], &err, sizeof(err));
	close(pipefd[0]);
	if (n == sizeof(err) && err < 0) {
		waitpid(pid, NULL, 0); /* it exited at once */
		r = log_errno(
			err, "SharedDirs=%s: %s could not be run as uid %u",
			dir, p->conf.virtiofsd_path, (unsigned)p->req.uid);
	} else if (r < 0) {
		/* no pid file: nothing could stop it later */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (r == 0)
		log_info("job %u: virtiofsd %ld serves %s on %s", p->req.job_id,
			 (long)pid, dir, *sock);
out:
	virtiofsd_args_free(&args);
	return r;
}

enum prolog_result prolog_virtiofs(struct prolog *p)
{
	size_t n = vmconf_n_shared_dirs(&p->conf);
	_cleanup_close_ int dirfd = -1;
	int r;

	/* a warm start that fell back to a cold boot started them already */
	if (p->share_transport != SHARED_DIR_VIRTIOFS || n == 0 ||
	    p->share_sockets)
		return PROLOG_OK;
	p->share_sockets = calloc(n + 1, sizeof(*p->share_sockets));
	if (!p->share_sockets)
		return PROLOG_NODE_FAULT;
	dirfd = sock_dir_open(p);
	if (dirfd < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		r = virtiofsd_start(p, (unsigned)i, dirfd,
				    &p->share_sockets[i]);
		if (r < 0)
			goto fail;
	}
	return PROLOG_OK;
fail:
	/* The share is the admin's (vm.conf) and virtiofsd the node's: the
	 * node's fault, and the admin is told what to look at. */
	state_record_reason(
		p,
		"job %u: the virtiofsd of SharedDirs= could not be started on node %s: %s (see %s/virtiofsd-*.log)",
		p->req.job_id, p->alloc.node, log_last_error(), p->state_path);
	return PROLOG_NODE_FAULT;
}
