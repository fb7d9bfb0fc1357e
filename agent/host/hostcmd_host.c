/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's side of hostcmd.h: runs the Slurm commands a --vm-batch script
 * starts in the guest, as the job user (a child of the batch task's own
 * slurm-vm-exec), each with the command line and working directory it had
 * in the guest, the batch step's environment with the guest's Slurm option
 * variables and, renamed for the tasks, its others (hostcmd_env.h), its
 * output back, then its exit status.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_shared/hostcmd.h"
#include "hostcmd_env.h"
#include "core/log.h"
#include "core/macro.h"
#include "channel/proto.h"
#include "core/strutil.h"
#include "agent_shared/util.h"

/* While this much waits for the guest, stop reading the commands' output
 * and the guest's requests (each may be answered by a refusal): a guest
 * that does not read its answers is not heard, as the relay does with its
 * clients. The queue stays under this plus a frame and the EXITs. */
#define SERVER_BUF_MAX (1024u * 1024u)

extern char **environ;

struct hcmd {
	uint32_t session; /* 0: a free slot */
	pid_t pid;	  /* 0 once reaped */
	int status;
	int fd[3]; /* [PROTO_STDOUT], [PROTO_STDERR]: -1 at EOF */
};

static struct {
	int fd, sig_fd;
	struct proto_reader rd;
	struct proto_buf out;
	struct hcmd c[HOSTCMD_MAX];
} srv = { .fd = -1, .sig_fd = -1 };

/* The command's binary, by name, from this process's PATH (the batch
 * step's): nothing from the guest names a path on the host. */
static char *hcmd_path(const char *name)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *dirs =
		strdup(path && *path ? path : "/usr/bin:/bin");
	char *save = NULL, *full;

	if (!dirs || !hostcmd_is_name(name))
		return NULL;
	for (char *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/' || asprintf(&full, "%s/%s", d, name) < 0)
			continue;
		if (access(full, X_OK) == 0)
			return full;
		free(full);
	}
	return NULL;
}

static void hcmd_refuse(uint32_t session, const char *text)
{
	struct proto_exit ex = { .how = PROTO_EXITED, .value = 127 };

	proto_put_data(&srv.out, session, PROTO_STDERR, text, strlen(text));
	proto_put_exit(&srv.out, session, &ex);
}

static _Noreturn void hcmd_child(const struct proto_exec *m, const char *path,
				 char *const *env, const int out[2],
				 const int err[2])
{
	sigset_t none;
	int null = open("/dev/null", O_RDONLY);

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL); /* slurm-vm-exec ignores it */
	setpgid(0, 0);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 ||
	    dup2(err[1], 2) < 0)
		_exit(127);
	/* The guest's directory is the host's when it is shared; else the
	 * batch script's own. */
	if (chdir(m->cwd) < 0)
		fprintf(stderr,
			"slurm-vm: %s: %s is not on the host, running "
			"in the job's directory\n",
			m->argv[0], m->cwd);
	execve(path, m->argv, env);
	fprintf(stderr, "slurm-vm: cannot run %s: %s\n", path, strerror(errno));
	_exit(127);
}

static void hcmd_start(uint32_t session, const struct proto_exec *m)
{
	_cleanup_free_ char *path = hcmd_path(m->argv[0]);
	_cleanup_strv_free_ char **env = NULL;
	struct hcmd *c = NULL;
	int out[2], err[2];

	for (size_t i = 0; i < HOSTCMD_MAX && !c; i++)
		if (!srv.c[i].session)
			c = &srv.c[i];
	if (!path || !c) {
		char text[512];

		snprintf(
			text, sizeof(text),
			!c ? "slurm-vm: too many Slurm commands at once (%s)\n"
			   : "slurm-vm: %s: not a Slurm command that a "
			     "--vm-batch script can run from the guest (or not "
			     "in the batch step's PATH)\n",
			m->argv[0]);
		hcmd_refuse(session, text);
		return;
	}
	/* The batch step's environment, with the guest's option variables
	 * and, renamed, its others (hostcmd_env.h). */
	env = hostcmd_env_build(environ, m->env);
	if (!env || pipe2(out, O_CLOEXEC) < 0)
		goto fail;
	if (pipe2(err, O_CLOEXEC) < 0) {
		close(out[0]);
		close(out[1]);
		goto fail;
	}
	c->pid = fork();
	if (c->pid == 0)
		hcmd_child(m, path, env, out, err);
	close(out[1]);
	close(err[1]);
	if (c->pid < 0) {
		close(out[0]);
		close(err[0]);
		goto fail;
	}
	c->session = session;
	c->fd[PROTO_STDIN] = -1;
	c->fd[PROTO_STDOUT] = out[0];
	c->fd[PROTO_STDERR] = err[0];
	fd_set_nonblock(out[0], true);
	fd_set_nonblock(err[0], true);
	return;
fail:
	c->pid = 0;
	hcmd_refuse(session, "slurm-vm: cannot start the command on the "
			     "host\n");
}

static struct hcmd *hcmd_by_session(uint32_t session)
{
	for (size_t i = 0; i < HOSTCMD_MAX; i++)
		if (srv.c[i].session == session && session)
			return &srv.c[i];
	return NULL;
}

/* Its exit status once its output is all out. */
static void hcmd_maybe_finish(struct hcmd *c)
{
	struct proto_exit ex = { .how = PROTO_EXITED };

	if (c->pid || c->fd[PROTO_STDOUT] >= 0 || c->fd[PROTO_STDERR] >= 0)
		return;
	if (WIFSIGNALED(c->status)) {
		ex.how = PROTO_SIGNALED;
		ex.value = (uint32_t)WTERMSIG(c->status);
	} else {
		ex.value = (uint32_t)WEXITSTATUS(c->status);
	}
	proto_put_exit(&srv.out, c->session, &ex);
	memset(c, 0, sizeof(*c));
}

static void hcmd_read(struct hcmd *c, int st)
{
	uint8_t buf[PROTO_MAX_DATA];
	ssize_t n = read(c->fd[st], buf, sizeof(buf));

	if (n > 0) {
		proto_put_data(&srv.out, c->session, (uint8_t)st, buf,
			       (size_t)n);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	close(c->fd[st]);
	c->fd[st] = -1;
	hcmd_maybe_finish(c);
}

static void srv_reap(void)
{
	struct signalfd_siginfo si;
	int status;
	pid_t pid;

	while (read(srv.sig_fd, &si, sizeof(si)) > 0)
		;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (size_t i = 0; i < HOSTCMD_MAX; i++) {
			struct hcmd *c = &srv.c[i];

			if (c->session && c->pid == pid) {
				c->pid = 0;
				c->status = status;
				hcmd_maybe_finish(c);
			}
		}
}

static void srv_frame(const struct proto_frame *f)
{
	struct hcmd *c = hcmd_by_session(f->hdr.session);
	struct proto_exec m;
	uint32_t sig;

	switch (f->hdr.kind) {
	case PROTO_EXEC:
		if (c || !f->hdr.session ||
		    proto_decode_exec(f->payload, f->length, &m) < 0)
			break;
		hcmd_start(f->hdr.session, &m);
		proto_exec_free(&m);
		break;
	case PROTO_SIGNAL:
		if (c && c->pid > 0 &&
		    proto_decode_signal(f->payload, f->length, &sig) == 0)
			kill(-c->pid, (int)sig);
		break;
	}
}

static bool srv_room(void)
{
	return proto_buf_pending(&srv.out) < SERVER_BUF_MAX;
}

/* The guest's requests while their answers have room; the rest wait in the
 * reader (of bounded size) until the guest reads. */
static void srv_dispatch(void)
{
	struct proto_frame f;

	while (srv_room() && proto_reader_next(&srv.rd, &f) > 0)
		srv_frame(&f);
}

/* The guest's side is gone (the script ended): so are its commands. */
static _Noreturn void srv_end(void)
{
	for (size_t i = 0; i < HOSTCMD_MAX; i++)
		if (srv.c[i].session && srv.c[i].pid > 0)
			kill(-srv.c[i].pid, SIGTERM);
	_exit(0);
}

_Noreturn void hostcmd_serve(int fd)
{
	static const int sigs[] = { SIGCHLD };
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	srv.fd = fd;
	fd_set_nonblock(fd, true);
	srv.sig_fd = signalfd_open(sigs, ARRAY_SIZE(sigs));
	if (srv.sig_fd < 0 || proto_reader_init(&srv.rd) < 0)
		_exit(1);
	for (;;) {
		struct pollfd p[2 + 2 * HOSTCMD_MAX];
		bool room;
		int n = 2;

		srv_dispatch();
		room = srv_room();
		p[0] = (struct pollfd){
			srv.fd,
			(room ? POLLIN : 0) |
				(proto_buf_pending(&srv.out) ? POLLOUT : 0),
			0
		};
		p[1] = (struct pollfd){ srv.sig_fd, POLLIN, 0 };
		for (size_t i = 0; i < HOSTCMD_MAX; i++)
			for (int st = PROTO_STDOUT; st <= PROTO_STDERR; st++)
				p[n++] = (struct pollfd){
					room && srv.c[i].session
						? srv.c[i].fd[st]
						: -1,
					POLLIN, 0
				};
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			srv_end();
		if (p[1].revents & POLLIN)
			srv_reap();
		if (p[0].revents & POLLOUT) {
			ssize_t w = proto_buf_write(&srv.out, srv.fd);

			if (w < 0 && w != -EAGAIN)
				srv_end();
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR) &&
		    proto_reader_pull(&srv.rd, srv.fd) < 0)
			srv_end();
		/* Room is checked again for each read: one read adds at most
		 * a frame. */
		n = 2;
		for (size_t i = 0; i < HOSTCMD_MAX; i++)
			for (int st = PROTO_STDOUT; st <= PROTO_STDERR; st++)
				if (p[n++].revents && srv_room() &&
				    srv.c[i].session && srv.c[i].fd[st] >= 0)
					hcmd_read(&srv.c[i], st);
	}
}
