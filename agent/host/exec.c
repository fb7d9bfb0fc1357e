/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-exec: a task of a VM job. Runs as the job user on the host,
 * connects to the job's relay, has the guest run COMMAND with this
 * process's identity, environment and working directory, forwards stdio
 * (and PMI_FD, or the PMIx client's connection) with flow control and the usual
 * job signals, and ends the way the guest process ended: same exit code, or the
 * same signal.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "agent_shared/hostcmd.h"
#include "core/log.h"
#include "core/macro.h"
#include "channel/pmixenv.h"
#include "channel/proto.h"
#include "core/strutil.h"
#include "agent_shared/util.h"

#define SESSION		   1
#define EXIT_FAILURE_INFRA 255

extern char **environ;

/* SIGWINCH is not forwarded but becomes WINSIZE with --pty. */
static const int forwarded_signals[] = {
	SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGCONT, SIGTSTP, SIGWINCH,
};

static struct {
	const char *socket_path, *cwd;
	unsigned timeout_s, rank;
	bool pty, wait_ready, have_rank, host_commands;
	char **argv;
	int fd, sig_fd, pmi_fd;
	uint16_t pmix_port; /* the host's PMIx server, for a PMIx task */
	int fl_saved[3];
	struct proto_reader rd;
	struct proto_buf out;
	struct proto_buf to_fd[PROTO_STREAMS]; /* STDOUT, STDERR, PMI */
	uint32_t credit[PROTO_STREAMS];	       /* STDIN, PMI: we may send */
	bool in_eof[PROTO_STREAMS];	       /* our STDIN/PMI side ended */
	bool peer_eof[PROTO_STREAMS];	       /* the guest's side ended */
	bool ready, exec_sent, exited, tty_raw;
	struct termios tty_saved;
	bool out_closed[PROTO_STREAMS]; /* our STDOUT/STDERR broke */
	uint64_t deadline;
	struct proto_exit exit;
	char identity[PROTO_MAX_IDENTITY + 1];
} ex = { .fd = -1, .sig_fd = -1, .pmi_fd = -1, .fl_saved = { -1, -1, -1 } };

static void restore_fds(void)
{
	if (ex.tty_raw)
		tcsetattr(0, TCSADRAIN, &ex.tty_saved);
	for (int i = 0; i < 3; i++)
		if (ex.fl_saved[i] >= 0)
			fcntl(i, F_SETFL, ex.fl_saved[i]);
}

static _Noreturn void finish(int code)
{
	restore_fds();
	exit(code);
}

static _Noreturn void fail(const char *fmt, ...) _printf_(1, 2);
static _Noreturn void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
	finish(EXIT_FAILURE_INFRA);
}

/* Output that is still queued goes out before we end. */
static void flush_outputs(void)
{
	for (int st = PROTO_STDOUT; st <= PROTO_STDERR; st++) {
		struct proto_buf *b = &ex.to_fd[st];

		if (proto_buf_pending(b))
			write_all(st, proto_buf_head(b), proto_buf_pending(b));
		proto_buf_consume(b, proto_buf_pending(b));
	}
}

static _Noreturn void end_like_the_task(void)
{
	flush_outputs();
	restore_fds();
	exit_like(ex.exit.how == PROTO_SIGNALED, (int)ex.exit.value);
}

/* ---- setup ---- */

static int connect_relay(void)
{
	uint64_t deadline = clock_now_ms() + (uint64_t)ex.timeout_s * 1000;

	for (;;) {
		int fd = unix_connect(ex.socket_path);

		if (fd >= 0)
			return fd;
		if ((fd != -ENOENT && fd != -ECONNREFUSED) ||
		    clock_now_ms() >= deadline)
			return fd;
		usleep(200 * 1000);
	}
}

static int send_exec(void)
{
	_cleanup_free_ char *cwd = NULL;
	_cleanup_free_ uint32_t *groups = NULL;
	_cleanup_free_ gid_t *gids = NULL;
	struct proto_exec m = { 0 };
	struct winsize ws;
	int n = getgroups(0, NULL);

	if (n < 0 || n > (int)PROTO_MAX_GROUPS)
		return -E2BIG;
	gids = calloc((size_t)n + 1, sizeof(gid_t));
	groups = calloc((size_t)n + 1, sizeof(uint32_t));
	if (!gids || !groups)
		return -ENOMEM;
	n = getgroups(n, gids);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++)
		groups[i] = gids[i];
	cwd = ex.cwd ? strdup(ex.cwd) : getcwd(NULL, 0);
	m.uid = getuid();
	m.gid = getgid();
	m.ngroups = (uint32_t)n;
	m.groups = groups;
	m.cwd = cwd && cwd[0] == '/' ? cwd : "/";
	m.rank = ex.rank;
	m.argv = ex.argv;
	m.env = environ;
	if (ex.pmi_fd >= 0)
		m.flags |= PROTO_EXEC_PMI;
	else if (ex.pmix_port)
		m.flags |= PROTO_EXEC_PMIX;
	if (ex.pty) {
		m.flags |= PROTO_EXEC_PTY;
		if (ioctl(0, TIOCGWINSZ, &ws) == 0) {
			m.rows = ws.ws_row;
			m.cols = ws.ws_col;
		}
	}
	return proto_put_exec(&ex.out, SESSION, &m);
}

/* PMI_FD from slurmstepd's pmi2 plugin: forward that socket's bytes. */
static void find_pmi_fd(void)
{
	const char *s = getenv("PMI_FD");
	unsigned fd;

	if (!s || str_to_uint(s, &fd) < 0 || fd < 3 || fd > 65535 ||
	    fcntl((int)fd, F_GETFD) < 0)
		return;
	ex.pmi_fd = (int)fd;
	fd_set_cloexec(ex.pmi_fd);
	fd_set_nonblock(ex.pmi_fd, true);
}

/* srun --mpi=pmix: the server in slurmstepd listens on the 127.0.0.1 port
 * that our own environment names; nothing from the guest chooses it. */
static void find_pmix_server(void)
{
	int r;

	if (ex.pmi_fd >= 0)
		return;
	r = pmixenv_server_port(environ, &ex.pmix_port);
	if (r == -EINVAL)
		log_warn("PMIX_SERVER_URI* does not name one TCP port on "
			 "127.0.0.1: PMIx will not work in the VM (is the "
			 "PMIx server a version other than 4?)");
}

/* The guest's PMIx client spoke first: reach the host's server for it, as
 * the job user. Failing that, the client sees its server close. */
static void connect_pmix_server(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(ex.pmix_port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ex.pmix_port = 0;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		log_warn("cannot reach the PMIx server at 127.0.0.1:%u: %m",
			 ntohs(sa.sin_port));
		if (fd >= 0)
			close(fd);
		ex.in_eof[PROTO_PMI] = true;
		proto_put_eof(&ex.out, SESSION, PROTO_PMI);
		return;
	}
	fd_set_nonblock(fd, true);
	ex.pmi_fd = fd;
}

static void setup_fds(void)
{
	for (int i = 0; i < 3; i++) {
		ex.fl_saved[i] = fcntl(i, F_GETFL);
		if (ex.fl_saved[i] >= 0)
			fd_set_nonblock(i, true);
	}
	if (ex.fl_saved[0] < 0)
		ex.in_eof[PROTO_STDIN] = true;
	/* With --pty the guest's terminal does the line editing. */
	if (ex.pty && isatty(0) && tcgetattr(0, &ex.tty_saved) == 0) {
		struct termios raw = ex.tty_saved;

		cfmakeraw(&raw);
		ex.tty_raw = tcsetattr(0, TCSADRAIN, &raw) == 0;
	}
	if (ex.pmi_fd < 0 && !ex.pmix_port)
		ex.in_eof[PROTO_PMI] = ex.peer_eof[PROTO_PMI] = true;
	for (int st = 0; st < PROTO_STREAMS; st++)
		ex.credit[st] = PROTO_WINDOW;
}

/* ---- frames from the relay ---- */

static void on_error(const struct proto_frame *f)
{
	struct proto_error *er = malloc(sizeof(*er));

	if (!er || proto_decode_error(f->payload, f->length, er) < 0)
		fail("malformed error message from the relay");
	if (er->code == 0) {
		log_warn("%s", er->text);
		free(er);
		return;
	}
	flush_outputs();
	fail("%s", er->text);
}

static void on_hello(const struct proto_frame *f)
{
	struct proto_hello h;

	if (proto_decode_hello(f->payload, f->length, &h) < 0)
		fail("malformed HELLO from the relay");
	memcpy(ex.identity, h.identity, sizeof(ex.identity));
}

static void on_data(const struct proto_frame *f)
{
	const uint8_t *data;
	size_t len;
	uint8_t st;

	if (proto_decode_data(f->payload, f->length, &st, &data, &len) < 0 ||
	    st == PROTO_STDIN)
		fail("malformed data from the relay");
	if (proto_buf_pending(&ex.to_fd[st]) + len > PROTO_WINDOW)
		fail("the guest sent more than its credit");
	if (st == PROTO_PMI && ex.pmi_fd < 0 && ex.pmix_port)
		connect_pmix_server();
	if (st == PROTO_PMI && ex.pmi_fd < 0) {
		/* Nobody to hear it: drop, but keep the guest going. */
		proto_put_credit(&ex.out, SESSION, PROTO_PMI, (uint32_t)len);
		return;
	}
	if (ex.out_closed[st])
		return;
	proto_buf_append(&ex.to_fd[st], data, len);
}

static void on_session_frame(const struct proto_frame *f)
{
	uint8_t st;
	uint32_t v;

	switch (f->hdr.kind) {
	case PROTO_DATA:
		on_data(f);
		break;
	case PROTO_EOF:
		if (proto_decode_eof(f->payload, f->length, &st) < 0)
			fail("malformed EOF from the relay");
		ex.peer_eof[st] = true;
		break;
	case PROTO_CREDIT:
		if (proto_decode_credit(f->payload, f->length, &st, &v) < 0 ||
		    (st != PROTO_STDIN && st != PROTO_PMI) ||
		    proto_credit_add(&ex.credit[st], v) < 0)
			fail("malformed credit from the relay");
		break;
	case PROTO_EXIT:
		if (proto_decode_exit(f->payload, f->length, &ex.exit) < 0)
			fail("malformed exit status from the relay");
		ex.exited = true;
		break;
	default:
		break;
	}
}

static void on_frame(const struct proto_frame *f)
{
	if (f->hdr.kind == PROTO_ERROR) {
		on_error(f);
		return;
	}
	if (f->hdr.kind == PROTO_HELLO) {
		on_hello(f);
		return;
	}
	if (f->hdr.kind == PROTO_READY) {
		ex.ready = true;
		return;
	}
	if (!ex.ready || f->hdr.session != SESSION)
		return;
	on_session_frame(f);
}

static void read_relay(void)
{
	struct proto_frame f;
	int k;

	if (proto_reader_pull(&ex.rd, ex.fd) < 0) {
		flush_outputs();
		fail("lost the connection to the VM relay %s", ex.socket_path);
	}
	while ((k = proto_reader_next(&ex.rd, &f)) != 0) {
		if (k < 0)
			fail("malformed data from the VM relay (%s)",
			     strerror(-k));
		on_frame(&f);
	}
}

/* ---- our side ---- */

static void read_input(int fd, int st)
{
	uint8_t buf[PROTO_MAX_DATA];
	size_t want = ex.credit[st] < sizeof(buf) ? ex.credit[st] : sizeof(buf);
	ssize_t n = read(fd, buf, want);

	if (n > 0) {
		ex.credit[st] -= (uint32_t)n;
		proto_put_data(&ex.out, SESSION, (uint8_t)st, buf, (size_t)n);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		ex.in_eof[st] = true;
		proto_put_eof(&ex.out, SESSION, (uint8_t)st);
	}
}

static void write_output(int fd, int st)
{
	ssize_t n = proto_buf_write(&ex.to_fd[st], fd);
	size_t left;

	if (n > 0) {
		proto_put_credit(&ex.out, SESSION, (uint8_t)st, (uint32_t)n);
		return;
	}
	if (n == -EAGAIN || n == 0)
		return;
	/* Nobody reads any more: discard, and have the agent close the
	 * task's end, so that it sees EPIPE/SIGPIPE as it would here. */
	left = proto_buf_pending(&ex.to_fd[st]);
	proto_buf_consume(&ex.to_fd[st], left);
	if (st != PROTO_PMI && !ex.out_closed[st]) {
		ex.out_closed[st] = true;
		proto_put_eof(&ex.out, SESSION, (uint8_t)st);
	} else if (st == PROTO_PMI) {
		proto_put_credit(&ex.out, SESSION, (uint8_t)st, (uint32_t)left);
	}
}

static void forward_signals(void)
{
	struct signalfd_siginfo si;

	while (read(ex.sig_fd, &si, sizeof(si)) == sizeof(si)) {
		struct winsize ws;

		if (!ex.exec_sent)
			continue;
		if (si.ssi_signo != SIGWINCH)
			proto_put_signal(&ex.out, SESSION, si.ssi_signo);
		else if (ex.pty && ioctl(0, TIOCGWINSZ, &ws) == 0 &&
			 ws.ws_row && ws.ws_col)
			proto_put_winsize(&ex.out, SESSION, ws.ws_row,
					  ws.ws_col);
	}
}

static void write_relay(void)
{
	ssize_t n = proto_buf_write(&ex.out, ex.fd);

	/* The relay hung up: drop what we had to say and read why. */
	if (n < 0 && n != -EAGAIN)
		proto_buf_consume(&ex.out, proto_buf_pending(&ex.out));
}

/* --host-commands: the PMI stream goes to the server of the Slurm commands
 * a --vm-batch script runs in the guest (hostcmd.h), our child. */
static void start_host_commands(void)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fail("cannot make a socket pair: %m");
	pid = fork();
	if (pid < 0)
		fail("cannot fork: %m");
	if (pid == 0) {
		close(sv[0]);
		close(ex.fd);
		hostcmd_serve(sv[1]);
	}
	close(sv[1]);
	ex.pmi_fd = sv[0];
	fd_set_nonblock(ex.pmi_fd, true);
}

static void start_task(void)
{
	int r;

	if (ex.host_commands)
		start_host_commands();
	else
		find_pmi_fd();
	find_pmix_server();
	r = send_exec();
	if (r < 0)
		fail("cannot send the command: %s (argument list or "
		     "environment too large?)",
		     strerror(-r));
	setup_fds();
	ex.exec_sent = true;
}

static int out_fd(int st)
{
	return st == PROTO_PMI ? ex.pmi_fd : st;
}

enum { SRC_RELAY, SRC_SIGNAL, SRC_STREAM };

static void build_pollset(struct pollset *ps)
{
	ps->n = 0;
	pollset_add(ps, ex.fd,
		    POLLIN | (proto_buf_pending(&ex.out) ? POLLOUT : 0),
		    SRC_RELAY, NULL, 0);
	pollset_add(ps, ex.sig_fd, POLLIN, SRC_SIGNAL, NULL, 0);
	for (int st = 0; ex.exec_sent && st < PROTO_STREAMS; st++) {
		int fd = st == PROTO_STDIN ? 0 : out_fd(st);
		short ev = 0;

		if ((st == PROTO_STDIN || st == PROTO_PMI) && !ex.in_eof[st] &&
		    ex.credit[st] > 0 && !ex.exited)
			ev |= POLLIN;
		if (st != PROTO_STDIN && proto_buf_pending(&ex.to_fd[st]))
			ev |= POLLOUT;
		if (ev && fd >= 0)
			pollset_add(ps, fd, ev, SRC_STREAM, NULL, st);
	}
}

static void handle_stream(int st, short re)
{
	/* A broken pipe shows as POLLERR: write to find out. */
	if (st != PROTO_STDIN && (re & (POLLOUT | POLLERR | POLLHUP)) &&
	    proto_buf_pending(&ex.to_fd[st]))
		write_output(out_fd(st), st);
	if ((re & (POLLIN | POLLHUP | POLLERR)) &&
	    (st == PROTO_STDIN || st == PROTO_PMI) && !ex.in_eof[st])
		read_input(st == PROTO_STDIN ? 0 : ex.pmi_fd, st);
}

static void handle_events(const struct pollset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		short re = ps->fds[i].revents;

		if (!re)
			continue;
		if (ps->refs[i].kind == SRC_RELAY) {
			if (re & POLLOUT)
				write_relay();
			if (re & (POLLIN | POLLHUP | POLLERR))
				read_relay();
		} else if (ps->refs[i].kind == SRC_SIGNAL) {
			forward_signals();
		} else {
			handle_stream(ps->refs[i].num, re);
		}
	}
}

static _Noreturn void loop(void)
{
	struct pollset ps = { 0 };

	for (;;) {
		if (ex.exited && !proto_buf_pending(&ex.to_fd[PROTO_STDOUT]) &&
		    !proto_buf_pending(&ex.to_fd[PROTO_STDERR]))
			end_like_the_task();
		if (ex.wait_ready && ex.ready) {
			printf("%s\n", ex.identity);
			finish(0);
		}
		if (ex.ready && !ex.exec_sent)
			start_task();
		build_pollset(&ps);
		if (pollset_wait(&ps, ex.ready ? -1 : 200) < 0)
			fail("poll: %m");
		if (!ex.ready && clock_now_ms() > ex.deadline)
			fail("the job's VM did not become ready within %u s",
			     ex.timeout_s);
		handle_events(&ps);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: slurm-vm-exec [OPTIONS] -- COMMAND [ARG...]\n"
		"       slurm-vm-exec [OPTIONS] --wait-ready\n"
		"Runs COMMAND in the job's VM as the calling user.\n\n"
		"  --socket PATH   the relay's task socket (default: "
		"$SLURM_VM_SOCKET)\n"
		"  --cwd DIR       working directory in the guest (default: "
		"the current one)\n"
		"  --rank N        task rank (default: $SLURM_PROCID)\n"
		"  --pty           run COMMAND on a terminal in the guest\n"
		"  --timeout SECS  wait that long for the relay (default 30)\n"
		"  --wait-ready    only wait until the guest agent is ready\n"
		"  --host-commands run the Slurm commands COMMAND starts in "
		"the guest\n"
		"                  (a --vm-batch script: srun, scontrol ...)\n"
		"  --debug         log debug messages\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "cwd", required_argument, NULL, 'C' },
		{ "rank", required_argument, NULL, 'r' },
		{ "pty", no_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "wait-ready", no_argument, NULL, 'w' },
		{ "host-commands", no_argument, NULL, 'H' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *procid = getenv("SLURM_PROCID");
	int c;

	ex.socket_path = getenv("SLURM_VM_SOCKET");
	ex.timeout_s = 30;
	if (procid && str_to_uint(procid, &ex.rank) < 0)
		ex.rank = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			ex.socket_path = optarg;
			break;
		case 'C':
			ex.cwd = optarg;
			break;
		case 'r':
			if (str_to_uint(optarg, &ex.rank) < 0)
				return log_errno(EINVAL, "bad --rank");
			break;
		case 't':
			ex.pty = true;
			break;
		case 'T':
			if (str_to_uint(optarg, &ex.timeout_s) < 0)
				return log_errno(EINVAL, "bad --timeout");
			break;
		case 'w':
			ex.wait_ready = true;
			break;
		case 'H':
			ex.host_commands = true;
			break;
		case 'd':
			log_set_level(LOG_LEVEL_DEBUG);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	ex.argv = argv + optind;
	if (!ex.socket_path || (!ex.wait_ready && optind >= argc) ||
	    (ex.wait_ready && optind < argc)) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct proto_hello hello = { .min_version = PROTO_VERSION_MIN,
				     .max_version = PROTO_VERSION_MAX };

	log_open("slurm-vm-exec");
	if (stdio_ensure_open() < 0)
		return 2;
	if (parse_args(argc, argv) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	ex.sig_fd =
		signalfd_open(forwarded_signals, ARRAY_SIZE(forwarded_signals));
	if (ex.sig_fd < 0 || proto_reader_init(&ex.rd) < 0)
		fail("cannot set up: %s", strerror(ENOMEM));
	ex.fd = connect_relay();
	if (ex.fd < 0)
		fail("cannot reach the VM relay at %s: %s", ex.socket_path,
		     strerror(-ex.fd));
	hello.nonce = random_u64();
	proto_put_hello(&ex.out, &hello);
	ex.exec_sent = ex.wait_ready;
	ex.deadline = clock_now_ms() + (uint64_t)ex.timeout_s * 1000;
	loop();
}
