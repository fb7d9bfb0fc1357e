/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest's side of hostcmd.h: the client (the agent binary named srun,
 * scontrol, ...) and the mux between the clients and the batch session's
 * PMI stream.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_shared/hostcmd.h"
#include "core/log.h"
#include "core/macro.h"
#include "channel/proto.h"
#include "core/strutil.h"
#include "agent_shared/util.h"

extern char **environ;

#define CLIENT_SESSION 1
/* The mux stops reading the host while a client has this much unread. */
#define CLIENT_BUF_MAX (1024u * 1024u)

/* ---- the client ---- */

static const int client_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1,
				      SIGUSR2 };

/* One frame from the mux: output, the end, or why not. */
static void client_frame(const char *name, const struct proto_frame *f)
{
	const uint8_t *data;
	struct proto_exit ex;
	struct proto_error er;
	size_t len;
	uint8_t st;

	switch (f->hdr.kind) {
	case PROTO_DATA:
		if (proto_decode_data(f->payload, f->length, &st, &data,
				      &len) == 0 &&
		    (st == PROTO_STDOUT || st == PROTO_STDERR))
			write_all(st, data, len);
		break;
	case PROTO_EXIT:
		if (proto_decode_exit(f->payload, f->length, &ex) < 0)
			break;
		exit_like(ex.how == PROTO_SIGNALED, (int)ex.value);
	case PROTO_ERROR:
		if (proto_decode_error(f->payload, f->length, &er) < 0)
			break;
		fprintf(stderr, "%s: %s\n", name, er.text);
		if (er.code)
			exit(255);
		break;
	}
}

int hostcmd_client_main(int argc, char **argv)
{
	const char *path = getenv(HOSTCMD_ENV), *name = argv[0];
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	struct proto_exec m = { .uid = getuid(), .gid = getgid() };
	struct proto_buf out = { 0 };
	struct proto_reader rd;
	struct proto_frame f;
	int fd, sig_fd;

	(void)argc;
	if (strrchr(name, '/'))
		name = strrchr(name, '/') + 1;
	if (!path) {
		fprintf(stderr,
			"%s: this is slurm-vm's %s for a --vm-batch script in "
			"the guest, and %s is not set: run it from the batch "
			"script\n",
			name, name, HOSTCMD_ENV);
		return 127;
	}
	fd = unix_connect(path);
	sig_fd = signalfd_open(client_signals, ARRAY_SIZE(client_signals));
	if (fd < 0 || sig_fd < 0 || proto_reader_init(&rd) < 0) {
		fprintf(stderr, "%s: cannot reach the host through %s: %s\n",
			name, path, strerror(fd < 0 ? -fd : ENOMEM));
		return 255;
	}
	argv[0] = (char *)name;
	m.argv = argv;
	m.env = environ;
	m.cwd = cwd && cwd[0] == '/' ? cwd : "/";
	if (proto_put_exec(&out, CLIENT_SESSION, &m) < 0 ||
	    proto_put_eof(&out, CLIENT_SESSION, PROTO_STDIN) < 0) {
		fprintf(stderr,
			"%s: the command line or environment is too "
			"large\n",
			name);
		return 255;
	}
	for (;;) {
		struct pollfd p[2] = {
			{ fd, POLLIN | (proto_buf_pending(&out) ? POLLOUT : 0),
			  0 },
			{ sig_fd, POLLIN, 0 },
		};
		struct signalfd_siginfo si;
		int k;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 255;
		if (p[1].revents & POLLIN &&
		    read(sig_fd, &si, sizeof(si)) == sizeof(si))
			proto_put_signal(&out, CLIENT_SESSION, si.ssi_signo);
		if (p[0].revents & POLLOUT)
			proto_buf_write(&out, fd);
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		k = proto_reader_pull(&rd, fd);
		while (proto_reader_next(&rd, &f) > 0)
			client_frame(name, &f);
		if (k < 0) {
			fprintf(stderr,
				"%s: the host's side ended before the command "
				"did (the job is ending?)\n",
				name);
			return 255;
		}
	}
}

/* ---- the mux ---- */

struct mux_client {
	int fd;
	uint32_t session; /* on the PMI stream; 0: a free slot */
	bool done;	  /* its EXIT is queued: close once written */
	struct proto_reader rd;
	struct proto_buf out;
};

static struct {
	int pmi, listen_fd, pidfd;
	pid_t script;
	uint32_t next_session;
	struct proto_reader rd;
	struct proto_buf out;
	struct mux_client c[HOSTCMD_MAX];
} mux = { .pmi = -1, .listen_fd = -1, .pidfd = -1 };

static struct mux_client *mux_client_by_session(uint32_t session)
{
	for (size_t i = 0; i < HOSTCMD_MAX; i++)
		if (mux.c[i].session == session && session)
			return &mux.c[i];
	return NULL;
}

static void mux_client_close(struct mux_client *c)
{
	/* Gone before its command ended (killed): end the command too. */
	if (!c->done)
		proto_put_signal(&mux.out, c->session, SIGTERM);
	close(c->fd);
	proto_reader_free(&c->rd);
	proto_buf_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static void mux_accept(void)
{
	int fd = accept4(mux.listen_fd, NULL, NULL,
			 SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	for (size_t i = 0; i < HOSTCMD_MAX; i++) {
		struct mux_client *c = &mux.c[i];

		if (c->session)
			continue;
		if (proto_reader_init(&c->rd) < 0)
			break;
		c->fd = fd;
		c->session = ++mux.next_session;
		return;
	}
	close(fd); /* the client says the host's side ended */
}

/* A client's frames go to the host under its session's number. */
static void mux_client_read(struct mux_client *c)
{
	struct proto_frame f;
	struct proto_exec m;
	int k = proto_reader_pull(&c->rd, c->fd);

	while (proto_reader_next(&c->rd, &f) > 0) {
		if (f.hdr.session != CLIENT_SESSION)
			continue;
		if (f.hdr.kind != PROTO_EXEC) {
			proto_put_frame(&mux.out, f.hdr.kind, f.hdr.flags,
					c->session, f.payload, f.length);
			continue;
		}
		/* An EXEC arrives reassembled: split it again. */
		if (proto_decode_exec(f.payload, f.length, &m) == 0) {
			proto_put_exec(&mux.out, c->session, &m);
			proto_exec_free(&m);
		}
	}
	if (k < 0)
		mux_client_close(c);
}

/* The host's frames go to the client whose session they name. */
static int mux_host_read(void)
{
	struct proto_frame f;
	int k = proto_reader_pull(&mux.rd, mux.pmi);

	while (proto_reader_next(&mux.rd, &f) > 0) {
		struct mux_client *c = mux_client_by_session(f.hdr.session);

		if (!c)
			continue;
		proto_put_frame(&c->out, f.hdr.kind, f.hdr.flags,
				CLIENT_SESSION, f.payload, f.length);
		if (f.hdr.kind == PROTO_EXIT)
			c->done = true;
	}
	return k;
}

static bool mux_script_alive(void)
{
	return kill(mux.script, 0) == 0 || errno == EPERM;
}

static size_t mux_buffered(void)
{
	size_t n = 0;

	for (size_t i = 0; i < HOSTCMD_MAX; i++)
		n += proto_buf_pending(&mux.c[i].out);
	return n;
}

static _Noreturn void mux_loop(void)
{
	for (;;) {
		struct pollfd p[3 + HOSTCMD_MAX];
		int n = 3, timeout = mux.pidfd >= 0 ? -1 : 1000;

		p[0] = (struct pollfd){ mux.listen_fd, POLLIN, 0 };
		p[1] = (struct pollfd){
			mux.pmi,
			(mux_buffered() < CLIENT_BUF_MAX ? POLLIN : 0) |
				(proto_buf_pending(&mux.out) ? POLLOUT : 0),
			0
		};
		p[2] = (struct pollfd){ mux.pidfd, POLLIN, 0 };
		for (size_t i = 0; i < HOSTCMD_MAX; i++) {
			struct mux_client *c = &mux.c[i];

			p[n++] = (struct pollfd){
				c->session ? c->fd : -1,
				(c->done ? 0 : POLLIN) |
					(proto_buf_pending(&c->out) ? POLLOUT
								    : 0),
				0
			};
		}
		if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
			_exit(1);
		/* The script ended: so do we, and with us its commands. */
		if ((p[2].revents & POLLIN) || !mux_script_alive())
			_exit(0);
		if (p[0].revents & POLLIN)
			mux_accept();
		if (p[1].revents & POLLOUT)
			proto_buf_write(&mux.out, mux.pmi);
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    mux_host_read() < 0)
			_exit(0);
		for (size_t i = 0; i < HOSTCMD_MAX; i++) {
			struct mux_client *c = &mux.c[i];
			short ev = p[3 + i].revents;

			if (!c->session || !ev)
				continue;
			if (ev & POLLOUT)
				proto_buf_write(&c->out, c->fd);
			if (c->done && !proto_buf_pending(&c->out))
				mux_client_close(c);
			else if (ev & (POLLIN | POLLHUP | POLLERR))
				mux_client_read(c);
		}
	}
}

/* DIR/srun, DIR/scontrol ...: this binary under those names. */
static int mux_make_commands(int dir)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	for (size_t i = 0; hostcmd_names[i]; i++)
		if (symlinkat(self, dir, hostcmd_names[i]) < 0 &&
		    errno != EEXIST)
			return -errno;
	return 0;
}

int hostcmd_mux_start(const char *dir)
{
	_cleanup_free_ char *sock = NULL;
	_cleanup_close_ int dfd = -1;
	const char *s = getenv("PMI_FD");
	unsigned fd;
	int null;
	pid_t pid;

	if (!s || str_to_uint(s, &fd) < 0 || fcntl((int)fd, F_GETFD) < 0)
		return log_errno(EBADF, "--host-commands needs the batch "
					"session's PMI_FD");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || mux_make_commands(dfd) < 0)
		return log_errno(errno, "cannot set up %s", dir);
	if (asprintf(&sock, "%s/" HOSTCMD_SOCKET, dir) < 0)
		return -ENOMEM;
	mux.listen_fd = unix_listen(sock, 0600);
	if (mux.listen_fd < 0)
		return log_errno(-mux.listen_fd, "cannot listen on %s", sock);
	mux.pmi = (int)fd;
	fd_set_cloexec(mux.pmi);
	fd_set_nonblock(mux.pmi, true);
	fd_set_nonblock(mux.listen_fd, true);
	/* Our parent is the shell that becomes the script (exec). */
	mux.script = getppid();
#ifdef SYS_pidfd_open
	mux.pidfd = (int)syscall(SYS_pidfd_open, mux.script, 0);
#endif
	if (proto_reader_init(&mux.rd) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < HOSTCMD_MAX; i++)
		mux.c[i].fd = -1;
	pid = fork();
	if (pid < 0)
		return log_errno(errno, "cannot fork");
	if (pid > 0)
		return 0;
	/* Nothing of the session's stdio: it ends with the script. */
	null = open("/dev/null", O_RDWR);
	for (int i = 0; i < 3 && null >= 0; i++)
		dup2(null, i);
	setsid();
	mux_loop();
}
