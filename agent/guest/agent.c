/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-agent: the guest side of the channel. Runs as root in the guest,
 * statically linked, no NSS. Speaks common/proto on the virtio-serial port
 * org.slurm-vm.agent.0: answers HELLO with HELLO and READY, runs each EXEC
 * as the given identity, streams stdio with credit-based flow control,
 * delivers signals to the task's process group, reports exit status, reaps
 * everything, and waits for the host again when it goes away.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_shared/hostcmd.h"
#include "persona.h"
#include "core/log.h"
#include "core/macro.h"
#include "channel/pmixenv.h"
#include "channel/proto.h"
#include "spawn.h"
#include "agent_shared/util.h"

#define PORT_NAME	    "org.slurm-vm.agent.0"
#define MAX_SESSIONS	    1024
#define CHANNEL_HIGH_WATER  (4u * 1024 * 1024)
#define DRAIN_AFTER_EXIT_MS 5000
/* How soon the agent tries the port again while no host is connected: a
 * guest restored from a saved one (issue #30) finds its new host this
 * soon; an unconnected port costs an open and a read per try. */
#define RETRY_MS 100

struct session {
	struct session *next;
	uint32_t id;
	pid_t pid;	       /* 0 once reaped */
	int fd[PROTO_STREAMS]; /* our ends, -1 when closed */
	int report;	       /* spawn error pipe */
	int pmix_listen;       /* a PMIx task's server until it connects */
	bool pmix;	       /* the PMI stream is a PMIx server's */
	struct pmixenv_key_hider host_keys; /* in that server's bytes */
	uint32_t uid, gid; /* the job's, which the task started with */
	uint8_t hello[PMIXENV_HELLO_MAX]; /* the PMIx client's first bytes */
	uint8_t hello_len;		  /* UINT8_MAX once they are checked */
	struct proto_buf to_task[PROTO_STREAMS]; /* STDIN, PMI */
	uint32_t credit[PROTO_STREAMS];		 /* we may send */
	uint32_t window[PROTO_STREAMS];		 /* the host may still send */
	bool host_eof[PROTO_STREAMS];		 /* EOF from the host */
	bool out_done[PROTO_STREAMS];		 /* EOF sent to the host */
	bool exited, exit_sent, orphan, pty;
	bool gone; /* freed by sessions_sweep(), outside dispatch */
	int status;
	uint64_t exited_at;
};

static struct {
	const char *port, *listen_path;
	const char *sys_root, *dev_root; /* /sys and /dev; tests move them */
	char identity[PROTO_MAX_IDENTITY + 1];
	bool allow_poweroff;
	int listen_fd, chan_fd, sig_fd;
	bool chan_idle; /* the port is open, no host: polled again later */
	bool chan_is_socket, greeted;
	uint64_t retry_at;
	struct proto_reader rd;
	struct proto_buf out;
	struct session *sessions;
	unsigned nsessions;
	struct persona_parts persona; /* PERSONA frames until the last */
	bool quit;
} agent = {
	.listen_fd = -1,
	.chan_fd = -1,
	.sig_fd = -1,
	.sys_root = "/sys",
	.dev_root = "/dev",
};

/* ---- sessions ---- */

static struct session *session_find(uint32_t id)
{
	for (struct session *s = agent.sessions; s; s = s->next)
		if (s->id == id && !s->orphan && !s->gone)
			return s;
	return NULL;
}

static void session_close_fd(struct session *s, int stream)
{
	int fd = s->fd[stream];

	if (fd < 0)
		return;
	s->fd[stream] = -1;
	/* STDIN and PMI share the fd with the read side for a pty/PMI. */
	for (int i = 0; i < PROTO_STREAMS; i++)
		if (s->fd[i] == fd)
			return;
	close(fd);
}

/* Poll references may still point at @s: it is freed later. */
static void session_release(struct session *s)
{
	for (int i = 0; i < PROTO_STREAMS; i++) {
		session_close_fd(s, i);
		proto_buf_free(&s->to_task[i]);
	}
	if (s->report >= 0)
		close(s->report);
	s->report = -1;
	if (s->pmix_listen >= 0)
		close(s->pmix_listen);
	s->pmix_listen = -1;
	s->gone = true;
}

static void sessions_sweep(void)
{
	struct session **pp = &agent.sessions;

	while (*pp) {
		struct session *s = *pp;

		if (!s->gone) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		agent.nsessions--;
		free(s);
	}
}

/* The host is gone: its sessions end with it. */
static void session_orphan(struct session *s)
{
	if (s->pid > 0 && !s->exited)
		kill(-s->pid, SIGKILL);
	for (int i = 0; i < PROTO_STREAMS; i++)
		session_close_fd(s, i);
	s->orphan = true;
	if (s->pid == 0)
		session_release(s);
}

static void sessions_orphan_all(void)
{
	struct session *s = agent.sessions, *next;

	for (; s; s = next) {
		next = s->next;
		if (!s->orphan && !s->gone)
			session_orphan(s);
	}
}

static void send_error(uint32_t session, int code, const char *fmt, ...)
	_printf_(3, 4);
static void send_error(uint32_t session, int code, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_msg(code ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN, "session %u: %s",
		session, text);
	proto_put_error(&agent.out, session,
			(uint32_t)(code < 0 ? -code : code), text);
}

/* ---- channel ---- */

/* The conversation is over: its sessions and anything unsent go. */
static void conversation_end(const char *why)
{
	/* An unconnected virtio port reads as EOF: that is no news. */
	if (agent.greeted)
		log_info("host disconnected (%s); waiting for it to come back",
			 why);
	else
		log_debug("channel: %s", why);
	agent.greeted = false;
	persona_parts_free(&agent.persona);
	proto_buf_consume(&agent.out, proto_buf_pending(&agent.out));
	proto_reader_reset(&agent.rd, true);
	sessions_orphan_all();
	agent.retry_at = clock_now_ms() + RETRY_MS;
}

static void channel_close(const char *why)
{
	if (agent.chan_fd < 0)
		return;
	conversation_end(why);
	close(agent.chan_fd);
	agent.chan_fd = -1;
}

/* The host went away. A virtio port stays open: closing it would drop
 * what the next host already sent (the guest's driver discards a closed
 * port's data), as a guest restored from a saved one meets a new host
 * before it has seen the old one go. It reads as EOF until a host is
 * back, so it is polled again every RETRY_MS. */
static void channel_host_gone(void)
{
	conversation_end("end of file");
	agent.chan_idle = true;
}

static int read_line(const char *path, char *buf, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f || !fgets(buf, (int)size, f))
		return -ENOENT;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The port's device node, made from the sysfs dev numbers if missing. */
static int port_node(const char *port, char *path, size_t size)
{
	char file[512], dev[32];
	unsigned maj, min;
	struct stat st;

	snprintf(path, size, "%s/%s", agent.dev_root, port);
	if (stat(path, &st) == 0)
		return S_ISCHR(st.st_mode) ? 0 : -ENOTTY;
	snprintf(file, sizeof(file), "%s/class/virtio-ports/%s/dev",
		 agent.sys_root, port);
	if (read_line(file, dev, sizeof(dev)) < 0 ||
	    sscanf(dev, "%u:%u", &maj, &min) != 2)
		return -ENODEV;
	if (mknod(path, S_IFCHR | 0600, makedev(maj, min)) < 0)
		return -errno;
	log_info("created %s (%u:%u) for %s", path, maj, min, PORT_NAME);
	return 0;
}

/* busybox mdev may not create /dev/virtio-ports/NAME: search sysfs. */
static int port_find(char *path, size_t size)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	char dir[512];

	snprintf(path, size, "%s/virtio-ports/%s", agent.dev_root, PORT_NAME);
	if (access(path, F_OK) == 0)
		return 0;
	snprintf(dir, sizeof(dir), "%s/class/virtio-ports", agent.sys_root);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char file[1024], name[128];

		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/name", dir, de->d_name);
		if (read_line(file, name, sizeof(name)) == 0 &&
		    strcmp(name, PORT_NAME) == 0)
			return port_node(de->d_name, path, size);
	}
	return -ENOENT;
}

static int channel_open_port(void)
{
	char path[512];
	int fd, r;

	if (agent.port) {
		snprintf(path, sizeof(path), "%s", agent.port);
	} else {
		r = port_find(path, sizeof(path));
		if (r < 0)
			return r;
	}
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	log_debug("opened %s", path);
	return fd;
}

static void channel_try_open(void)
{
	int fd;

	if (agent.chan_fd >= 0 || agent.listen_fd >= 0 ||
	    clock_now_ms() < agent.retry_at)
		return;
	fd = channel_open_port();
	if (fd < 0) {
		agent.retry_at = clock_now_ms() + RETRY_MS;
		return;
	}
	agent.chan_fd = fd;
}

static void channel_accept(void)
{
	int fd = accept4(agent.listen_fd, NULL, NULL,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (agent.chan_fd >= 0) {
		/* One host at a time, like a virtio port. */
		close(fd);
		return;
	}
	agent.chan_fd = fd;
	log_info("host connected");
}

/* ---- messages from the host ---- */

static void handle_hello(const struct proto_frame *f)
{
	struct proto_hello h, me = { .min_version = PROTO_VERSION_MIN };

	if (proto_decode_hello(f->payload, f->length, &h) < 0) {
		send_error(0, EBADMSG, "malformed HELLO");
		return;
	}
	if (h.min_version > PROTO_VERSION_MAX ||
	    h.max_version < PROTO_VERSION_MIN) {
		send_error(0, EPROTO,
			   "no common protocol version (host %u-%u, agent "
			   "%u-%u): update slurm-vm-agent in the image",
			   h.min_version, h.max_version, PROTO_VERSION_MIN,
			   PROTO_VERSION_MAX);
		return;
	}
	/* A new conversation: the old one's sessions are gone. */
	sessions_orphan_all();
	persona_parts_free(&agent.persona);
	me.min_version = me.max_version = PROTO_VERSION_MAX;
	me.nonce = h.nonce;
	memcpy(me.identity, agent.identity, sizeof(me.identity));
	proto_put_hello(&agent.out, &me);
	proto_put_ready(&agent.out);
	agent.greeted = true;
	log_info("host said hello; ready");
}

static int exec_check_identity(const struct proto_exec *m)
{
	bool root = m->uid == 0 || m->gid == 0;

	for (uint32_t i = 0; i < m->ngroups; i++)
		root = root || m->groups[i] == 0;
	if (root && !(m->flags & PROTO_EXEC_ALLOW_ROOT))
		return -EPERM;
	return 0;
}

static void handle_exec(const struct proto_frame *f)
{
	uint32_t id = f->hdr.session;
	struct proto_exec m;
	struct spawned sp;
	struct session *s;
	int r;

	if (session_find(id)) {
		send_error(id, EEXIST, "session %u already exists", id);
		return;
	}
	if (agent.nsessions >= MAX_SESSIONS) {
		send_error(id, EAGAIN, "too many tasks in this guest (%u)",
			   MAX_SESSIONS);
		return;
	}
	r = proto_decode_exec(f->payload, f->length, &m);
	if (r < 0) {
		send_error(id, EBADMSG, "malformed EXEC: %s", strerror(-r));
		return;
	}
	if (exec_check_identity(&m) < 0) {
		send_error(id, EPERM,
			   "refusing to run as root (uid %u gid %u): root "
			   "in the guest is not allowed for this job",
			   m.uid, m.gid);
		proto_exec_free(&m);
		return;
	}
	r = spawn_task(&m, &sp);
	if (r < 0) {
		send_error(id, -r, "cannot start %s: %s", m.argv[0],
			   strerror(-r));
		proto_exec_free(&m);
		return;
	}
	log_debug("session %u: started %s as pid %d (uid %u)", id, m.argv[0],
		  (int)sp.pid, m.uid);
	s = calloc(1, sizeof(*s));
	if (!s) {
		kill(-sp.pid, SIGKILL);
		proto_exec_free(&m);
		return;
	}
	s->uid = m.uid;
	s->gid = m.gid;
	proto_exec_free(&m);
	s->id = id;
	s->pid = sp.pid;
	s->fd[PROTO_STDIN] = sp.in;
	s->fd[PROTO_STDOUT] = sp.out;
	s->fd[PROTO_STDERR] = sp.err;
	s->fd[PROTO_PMI] = sp.pmi;
	s->report = sp.report;
	s->pmix_listen = sp.pmix_listen;
	s->pmix = sp.pmix_listen >= 0;
	s->pty = sp.err < 0;
	for (int i = 0; i < PROTO_STREAMS; i++) {
		s->credit[i] = s->window[i] = PROTO_WINDOW;
		if (s->fd[i] >= 0)
			fd_set_nonblock(s->fd[i], true);
	}
	fd_set_nonblock(s->report, true);
	s->out_done[PROTO_STDIN] = true;
	if (s->fd[PROTO_STDERR] < 0) {
		s->out_done[PROTO_STDERR] = true;
		proto_put_eof(&agent.out, id, PROTO_STDERR);
	}
	if (s->fd[PROTO_PMI] < 0 && s->pmix_listen < 0)
		s->out_done[PROTO_PMI] = true;
	s->next = agent.sessions;
	agent.sessions = s;
	agent.nsessions++;
}

/* Bytes for the task's stdin or PMI socket. */
static void handle_data(struct session *s, const struct proto_frame *f)
{
	static uint8_t shown[PROTO_MAX_DATA + PMIXENV_HOST_KEY_MAX];
	const uint8_t *data;
	size_t len;
	uint8_t st;

	if (proto_decode_data(f->payload, f->length, &st, &data, &len) < 0 ||
	    (st != PROTO_STDIN && st != PROTO_PMI)) {
		send_error(s->id, 0, "malformed DATA from the host ignored");
		return;
	}
	if (len > s->window[st] || s->host_eof[st]) {
		send_error(s->id, 0, "host sent %zu bytes beyond its credit",
			   len);
		return;
	}
	s->window[st] -= (uint32_t)len;
	if (s->fd[st] < 0) {
		/* Nobody reads any more: drop, but keep the host going. */
		proto_put_credit(&agent.out, s->id, st, (uint32_t)len);
		s->window[st] += (uint32_t)len;
		return;
	}
	if (st == PROTO_PMI && s->pmix) {
		unsigned renamed = s->host_keys.renamed;

		if (len > PROTO_MAX_DATA) /* proto_decode_data() bounds it */
			return;
		len = pmixenv_hide_host_keys(&s->host_keys, data, len, shown);
		data = shown;
		if (s->host_keys.renamed != renamed)
			log_debug("session %u: the host's topology and scratch "
				  "directories hidden from PMIx",
				  s->id);
	}
	if (proto_buf_append(&s->to_task[st], data, len) < 0)
		send_error(s->id, 0, "out of memory for the task's input");
}

static void handle_session_frame(const struct proto_frame *f)
{
	struct session *s = session_find(f->hdr.session);
	struct winsize ws = { 0 };
	uint32_t v;
	uint8_t st;

	if (!s) {
		log_debug("%s for unknown session %u dropped",
			  proto_kind_name(f->hdr.kind), f->hdr.session);
		return;
	}
	switch (f->hdr.kind) {
	case PROTO_DATA:
		handle_data(s, f);
		break;
	case PROTO_EOF:
		if (proto_decode_eof(f->payload, f->length, &st) < 0)
			break;
		if (st == PROTO_STDIN && s->pty && !s->host_eof[st]) {
			/* A terminal has no EOF: type ^D, as a user would. */
			s->host_eof[st] = true;
			proto_buf_append(&s->to_task[st], "\x04", 1);
		} else if (st == PROTO_STDIN || st == PROTO_PMI) {
			s->host_eof[st] = true;
		} else if (!s->out_done[st]) {
			/* Nobody reads this stream on the host any more: the
			 * task's next write gets EPIPE/SIGPIPE, as there. */
			s->out_done[st] = true;
			session_close_fd(s, st);
		}
		break;
	case PROTO_CREDIT:
		if (proto_decode_credit(f->payload, f->length, &st, &v) < 0 ||
		    proto_credit_add(&s->credit[st], v) < 0)
			send_error(s->id, 0, "bad CREDIT from the host");
		break;
	case PROTO_SIGNAL:
		if (proto_decode_signal(f->payload, f->length, &v) == 0 &&
		    s->pid > 0 && !s->exited)
			kill(-s->pid, (int)v);
		break;
	case PROTO_WINSIZE:
		/* The kernel sends SIGWINCH to the terminal's process group. */
		if (proto_decode_winsize(f->payload, f->length, &ws.ws_row,
					 &ws.ws_col) == 0 &&
		    s->pty && s->fd[PROTO_STDIN] >= 0)
			ioctl(s->fd[PROTO_STDIN], TIOCSWINSZ, &ws);
		break;
	default:
		log_debug("unexpected %s for session %u",
			  proto_kind_name(f->hdr.kind), s->id);
	}
}

/* The job's identity for a guest restored from a template (persona.h):
 * gathered over its frames (channel/persona_format.h), applied, then answered
 * once with what failed. */
static void handle_persona(const struct proto_frame *f)
{
	_cleanup_free_ struct persona_result *res = malloc(sizeof(*res));
	struct proto_persona m;
	int r = proto_decode_persona(f->payload, f->length, &m);

	if (r < 0 || !res) {
		persona_parts_free(&agent.persona);
		send_error(0, 0, "malformed PERSONA: %s",
			   strerror(r < 0 ? -r : ENOMEM));
		proto_put_persona_answer(&agent.out, 1, "malformed PERSONA");
		return;
	}
	r = persona_parts_take(&agent.persona, m.entries);
	proto_persona_free(&m);
	if (r == 0)
		return;
	if (r < 0) {
		persona_parts_free(&agent.persona);
		proto_put_persona_answer(&agent.out, 1,
					 r == -E2BIG
						 ? "persona: beyond its bounds"
						 : "persona: out of memory");
		return;
	}
	log_info("host sent the job's identity (%zu entries)",
		 agent.persona.count);
	persona_apply(agent.persona.entries, "/", agent.identity,
		      sizeof(agent.identity), res);
	persona_parts_free(&agent.persona);
	proto_put_persona_answer(&agent.out, res->failures, res->text);
	if (res->failures == 0)
		log_info("took the job's identity (now %s)", agent.identity);
}

static void handle_shutdown(const struct proto_frame *f)
{
	uint32_t flags;

	if (proto_decode_shutdown(f->payload, f->length, &flags) < 0)
		return;
	log_info("host asked for shutdown%s",
		 flags & PROTO_SHUTDOWN_POWEROFF ? " and power-off" : "");
	sessions_orphan_all();
	if ((flags & PROTO_SHUTDOWN_POWEROFF) && agent.allow_poweroff) {
		sync();
		reboot(RB_POWER_OFF);
	}
}

static void handle_frame(const struct proto_frame *f)
{
	uint64_t cookie;

	if (f->hdr.kind == PROTO_HELLO) {
		handle_hello(f);
		return;
	}
	if (!agent.greeted)
		return;
	switch (f->hdr.kind) {
	case PROTO_EXEC:
		handle_exec(f);
		break;
	case PROTO_PING:
		if (proto_decode_ping(f->payload, f->length, &cookie) == 0)
			proto_put_ping(&agent.out, PROTO_PONG, f->hdr.session,
				       cookie);
		break;
	case PROTO_SHUTDOWN:
		handle_shutdown(f);
		break;
	case PROTO_PERSONA:
		handle_persona(f);
		break;
	case PROTO_ERROR:
	case PROTO_PONG:
		break;
	default:
		handle_session_frame(f);
	}
}

static void channel_read(void)
{
	struct proto_frame f;
	int k = proto_reader_pull(&agent.rd, agent.chan_fd);

	if (k == -EPIPE && agent.listen_fd < 0) {
		channel_host_gone();
		return;
	}
	if (k < 0) {
		channel_close(k == -EPIPE ? "end of file" : strerror(-k));
		return;
	}
	while ((k = proto_reader_next(&agent.rd, &f)) != 0) {
		if (k < 0) {
			send_error(0, 0, "framing error (%s), resyncing",
				   strerror(-k));
			continue;
		}
		handle_frame(&f);
	}
}

/* ---- tasks ---- */

static void session_pump_in(struct session *s, int st)
{
	struct proto_buf *b = &s->to_task[st];
	ssize_t n = proto_buf_write(b, s->fd[st]);

	if (n > 0) {
		s->window[st] += (uint32_t)n;
		proto_put_credit(&agent.out, s->id, (uint8_t)st, (uint32_t)n);
	} else if (n < 0 && n != -EAGAIN) {
		/* The task closed its end: drop what is pending. */
		size_t left = proto_buf_pending(b);

		proto_buf_consume(b, left);
		if (left) {
			s->window[st] += (uint32_t)left;
			proto_put_credit(&agent.out, s->id, (uint8_t)st,
					 (uint32_t)left);
		}
		if (st == PROTO_STDIN)
			session_close_fd(s, st);
	}
}

static void session_stream_eof(struct session *s, int st)
{
	s->out_done[st] = true;
	proto_put_eof(&agent.out, s->id, (uint8_t)st);
	if (st != PROTO_PMI)
		session_close_fd(s, st);
}

/* Slurm's PMIx server refuses a client whose credential is not the job's
 * (psec "native": the uid and primary gid it claims) and the client only
 * learns "invalid credential": say which ID differs and what to do. */
static void session_check_pmix_hello(struct session *s, const uint8_t *buf,
				     size_t len)
{
	size_t take = sizeof(s->hello) - s->hello_len;
	uint32_t uid, gid;
	int r;

	if (take > len)
		take = len;
	memcpy(s->hello + s->hello_len, buf, take);
	s->hello_len += (uint8_t)take;
	r = pmixenv_client_ids(s->hello, s->hello_len, &uid, &gid);
	if (r == 0 && s->hello_len < sizeof(s->hello))
		return;
	s->hello_len = UINT8_MAX;
	if (r == 1 && (uid != s->uid || gid != s->gid))
		send_error(s->id, 0,
			   "PMIx: this task's client runs as uid %u gid %u, "
			   "but the job's are uid %u gid %u: Slurm's PMIx "
			   "server refuses it. Keep the job's primary group "
			   "in MPI tasks (no sg, newgrp or setgid programs)",
			   uid, gid, s->uid, s->gid);
}

static void session_pump_out(struct session *s, int st)
{
	uint8_t buf[PROTO_MAX_DATA];
	size_t want = s->credit[st] < sizeof(buf) ? s->credit[st] : sizeof(buf);
	ssize_t n = read(s->fd[st], buf, want);

	if (n > 0) {
		if (st == PROTO_PMI && s->pmix && s->hello_len != UINT8_MAX)
			session_check_pmix_hello(s, buf, (size_t)n);
		s->credit[st] -= (uint32_t)n;
		proto_put_data(&agent.out, s->id, (uint8_t)st, buf, (size_t)n);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		/* EIO is how a pty says its last writer went away. */
		session_stream_eof(s, st);
	}
}

static void session_read_report(struct session *s)
{
	struct spawn_report rep;
	ssize_t n = read(s->report, &rep, sizeof(rep));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == (ssize_t)sizeof(rep)) {
		send_error(s->id, 0, "cannot %s: %s",
			   rep.stage == SPAWN_EXEC ? "execute the task"
			   : rep.stage == SPAWN_IDENTITY
				   ? "take the job's identity"
			   : rep.stage == SPAWN_CHDIR
				   ? "change to the working directory or /tmp"
				   : "set up the task",
			   strerror(rep.err));
		return;
	}
	close(s->report);
	s->report = -1;
}

/* Exit status goes out after the output: the task's last words first. */
/* The PMIx task's one connection becomes its PMI stream; the listener goes,
 * so a second connection is refused as by a server that is not there. */
static void session_pmix_accept(struct session *s)
{
	int fd = accept4(s->pmix_listen, NULL, NULL,
			 SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	close(s->pmix_listen);
	s->pmix_listen = -1;
	s->fd[PROTO_PMI] = fd;
}

static void session_maybe_finish(struct session *s)
{
	struct proto_exit ex = { 0 };
	bool drained = true;

	if (!s->exited || s->exit_sent || s->orphan || s->report >= 0)
		return;
	if (s->pmix_listen >= 0) {
		/* The task never spoke PMIx: its stream ends unused. */
		close(s->pmix_listen);
		s->pmix_listen = -1;
		session_stream_eof(s, PROTO_PMI);
	}
	for (int st = PROTO_STDOUT; st < PROTO_STREAMS; st++) {
		if (s->out_done[st])
			continue;
		if (s->credit[st] > 0 &&
		    clock_now_ms() > s->exited_at + DRAIN_AFTER_EXIT_MS)
			session_stream_eof(s, st); /* held open by an escapee */
		else
			drained = false;
	}
	if (!drained)
		return;
	if (WIFSIGNALED(s->status)) {
		ex.how = PROTO_SIGNALED;
		ex.value = (uint32_t)WTERMSIG(s->status);
		ex.core_dumped = WCOREDUMP(s->status);
	} else {
		ex.how = PROTO_EXITED;
		ex.value = (uint32_t)WEXITSTATUS(s->status);
	}
	proto_put_exit(&agent.out, s->id, &ex);
	s->exit_sent = true;
	log_debug("session %u: finished (status 0x%x)", s->id, s->status);
	session_release(s);
}

static struct session *session_by_pid(pid_t pid)
{
	for (struct session *s = agent.sessions; s; s = s->next)
		if (s->pid == pid && !s->gone)
			return s;
	return NULL;
}

static void reap_children(void)
{
	struct signalfd_siginfo si;
	int status;
	pid_t pid;

	while (read(agent.sig_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			agent.quit = true;
	}
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct session *s = session_by_pid(pid);

		if (!s)
			continue;
		/* What the task left behind in its group goes too. */
		kill(-pid, SIGKILL);
		s->pid = 0;
		s->exited = true;
		s->status = status;
		s->exited_at = clock_now_ms();
		if (s->orphan)
			session_release(s);
	}
}

/* ---- event loop ---- */

enum ref_kind {
	REF_CHANNEL,
	REF_LISTEN,
	REF_SIGNAL,
	REF_REPORT,
	REF_STREAM,
	REF_PMIX,
};

static void pollset_sessions(struct pollset *ps)
{
	bool room = proto_buf_pending(&agent.out) < CHANNEL_HIGH_WATER;

	for (struct session *s = agent.sessions; s; s = s->next) {
		if (s->orphan || s->gone)
			continue;
		if (s->report >= 0)
			pollset_add(ps, s->report, POLLIN, REF_REPORT, s, 0);
		if (s->pmix_listen >= 0)
			pollset_add(ps, s->pmix_listen, POLLIN, REF_PMIX, s, 0);
		for (int st = 0; st < PROTO_STREAMS; st++) {
			short ev = 0;

			if (s->fd[st] < 0)
				continue;
			if (proto_buf_pending(&s->to_task[st]) &&
			    (st == PROTO_STDIN || st == PROTO_PMI))
				ev |= POLLOUT;
			if (st != PROTO_STDIN && !s->out_done[st] &&
			    s->credit[st] > 0 && room)
				ev |= POLLIN;
			if (ev)
				pollset_add(ps, s->fd[st], ev, REF_STREAM, s,
					    st);
		}
	}
}

/* Work that needs no poll event: EOF towards tasks, finished sessions. */
static void sessions_housekeeping(void)
{
	struct session *s = agent.sessions, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->orphan || s->gone)
			continue;
		if (s->host_eof[PROTO_STDIN] && s->fd[PROTO_STDIN] >= 0 &&
		    !proto_buf_pending(&s->to_task[PROTO_STDIN]) && !s->pty)
			session_close_fd(s, PROTO_STDIN);
		if (s->host_eof[PROTO_PMI] && s->fd[PROTO_PMI] >= 0 &&
		    !proto_buf_pending(&s->to_task[PROTO_PMI]))
			shutdown(s->fd[PROTO_PMI], SHUT_WR);
		session_maybe_finish(s);
	}
}

static void dispatch(struct pollset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		const struct pollref *ref = &ps->refs[i];
		struct session *s = ref->obj;
		int st = ref->num;
		short re = ps->fds[i].revents;

		if (!re)
			continue;
		switch ((enum ref_kind)ref->kind) {
		case REF_SIGNAL:
			reap_children();
			break;
		case REF_LISTEN:
			channel_accept();
			break;
		case REF_CHANNEL:
			if (re & POLLOUT)
				proto_buf_write(&agent.out, agent.chan_fd);
			if (re & (POLLIN | POLLHUP | POLLERR))
				channel_read();
			break;
		case REF_REPORT:
			if (!s->orphan && !s->gone && s->report >= 0)
				session_read_report(s);
			break;
		case REF_PMIX:
			if (!s->orphan && !s->gone && s->pmix_listen >= 0)
				session_pmix_accept(s);
			break;
		case REF_STREAM:
			if (s->orphan || s->gone || s->fd[st] < 0)
				break;
			if ((re & (POLLOUT | POLLERR | POLLHUP)) &&
			    proto_buf_pending(&s->to_task[st]) &&
			    (st == PROTO_STDIN || st == PROTO_PMI))
				session_pump_in(s, st);
			if ((re & (POLLIN | POLLHUP | POLLERR)) &&
			    st != PROTO_STDIN && !s->out_done[st] &&
			    s->fd[st] >= 0)
				session_pump_out(s, st);
			break;
		}
	}
}

static int run(void)
{
	struct pollset ps = { 0 };

	while (!agent.quit) {
		int timeout = -1;

		channel_try_open();
		sessions_housekeeping();
		sessions_sweep();
		ps.n = 0;
		pollset_add(&ps, agent.sig_fd, POLLIN, REF_SIGNAL, NULL, 0);
		if (agent.listen_fd >= 0)
			pollset_add(&ps, agent.listen_fd, POLLIN, REF_LISTEN,
				    NULL, 0);
		if (agent.chan_idle && clock_now_ms() < agent.retry_at)
			timeout = RETRY_MS;
		else if (agent.chan_fd >= 0)
			agent.chan_idle = false;
		if (agent.chan_fd >= 0 && !agent.chan_idle)
			pollset_add(&ps, agent.chan_fd,
				    POLLIN | (proto_buf_pending(&agent.out)
						      ? POLLOUT
						      : 0),
				    REF_CHANNEL, NULL, 0);
		else if (agent.listen_fd < 0)
			timeout = RETRY_MS;
		if (agent.chan_fd >= 0)
			pollset_sessions(&ps);
		for (struct session *s = agent.sessions; s; s = s->next)
			if (s->exited && !s->orphan && !s->gone)
				timeout = 500;
		if (pollset_wait(&ps, timeout) < 0) {
			pollset_free(&ps);
			return log_errno(errno, "poll");
		}
		dispatch(&ps);
	}
	pollset_free(&ps);
	sessions_orphan_all();
	sessions_sweep();
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: slurm-vm-agent [OPTIONS]\n"
		"Runs slurm-vm tasks in this guest for the host.\n\n"
		"  --port PATH      use this character device (default: the\n"
		"                   virtio port " PORT_NAME
		", found in sysfs)\n"
		"  --listen PATH    listen on a unix socket instead (tests)\n"
		"  --sysfs DIR      where sysfs is (default /sys; tests)\n"
		"  --devdir DIR     where device nodes are (default /dev; tests)\n"
		"  --identity NAME  name to tell the host (default: hostname)\n"
		"  --allow-poweroff power off on SHUTDOWN with power-off\n"
		"  --log-file PATH  also log to PATH\n"
		"  --debug          log debug messages\n"
		"  --help\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'l' },
		{ "sysfs", required_argument, NULL, 'S' },
		{ "devdir", required_argument, NULL, 'V' },
		{ "identity", required_argument, NULL, 'i' },
		{ "allow-poweroff", no_argument, NULL, 'P' },
		{ "log-file", required_argument, NULL, 'L' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct utsname u;
	int c, r;

	if (uname(&u) == 0)
		snprintf(agent.identity, sizeof(agent.identity), "%s",
			 u.nodename);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			agent.port = optarg;
			break;
		case 'l':
			agent.listen_path = optarg;
			break;
		case 'S':
			agent.sys_root = optarg;
			break;
		case 'V':
			agent.dev_root = optarg;
			break;
		case 'i':
			snprintf(agent.identity, sizeof(agent.identity), "%s",
				 optarg);
			break;
		case 'P':
			agent.allow_poweroff = true;
			break;
		case 'L':
			r = log_open_file(optarg);
			if (r < 0)
				return log_errno(r, "cannot open %s", optarg);
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
	if (optind < argc || (agent.port && agent.listen_path)) {
		usage(stderr);
		return -EINVAL;
	}
	for (char *p = agent.identity; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			*p = '_';
	return 0;
}

int main(int argc, char **argv)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT };
	const char *name =
		strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int r;

	/* srun, scontrol ... in a --vm-batch script (hostcmd.h). */
	if (hostcmd_is_name(name))
		return hostcmd_client_main(argc, argv);
	log_open("slurm-vm-agent");
	if (stdio_ensure_open() < 0)
		return 2;
	if (argc == 3 && !strcmp(argv[1], "--host-commands"))
		return hostcmd_mux_start(argv[2]) < 0 ? 1 : 0;
	if (parse_args(argc, argv) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	agent.sig_fd = signalfd_open(sigs, ARRAY_SIZE(sigs));
	if (agent.sig_fd < 0)
		return log_errno(agent.sig_fd, "signalfd") < 0 ? 1 : 1;
	r = proto_reader_init(&agent.rd);
	if (r < 0)
		return 1;
	agent.rd.resync = true;
	if (agent.listen_path) {
		agent.listen_fd = unix_listen(agent.listen_path, 0600);
		if (agent.listen_fd < 0) {
			log_errno(agent.listen_fd, "cannot listen on %s",
				  agent.listen_path);
			return 1;
		}
	}
	log_info("started (identity %s)", agent.identity);
	r = run();
	proto_reader_free(&agent.rd);
	proto_buf_free(&agent.out);
	return r < 0 ? 1 : 0;
}
