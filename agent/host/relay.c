/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-relay: one per guest, root, on the host. Connects to qemu's unix
 * socket for the virtio-serial port, says HELLO to the agent, and accepts
 * task connections (slurm-vm-exec) on a socket in a per-job directory owned
 * by the job user. Task connections speak the same protocol; the relay maps
 * their session ids onto the channel's, checks every EXEC against the
 * peer's credentials, and fails every session with a clear message when the
 * guest dies. The guest is untrusted: everything it sends is validated and
 * what it may make the relay buffer is bounded.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/macro.h"
#include "core/pidfile.h"
#include "channel/persona_format.h"
#include "channel/proto.h"
#include "core/run.h"
#include "core/strutil.h"
#include "agent_shared/util.h"

#define MAX_CLIENTS	    256
#define MAX_CLIENT_SESSIONS 16
/* Tasks running in the guest at once: a session lives no longer than its
 * task connection, whatever the guest does, and no more than this many. */
#define MAX_SESSIONS	   512
#define SESSION_BUCKETS	   256 /* power of two; ids are sequential */
#define MAX_GROUPS	   PROTO_MAX_GROUPS
#define CHANNEL_HIGH_WATER (4u * 1024 * 1024)
/* A well-behaved agent never has more than a window per stream in flight
 * towards one session; what goes beyond is the guest ignoring credits. */
#define CLIENT_OUT_LIMIT (PROTO_STREAMS * PROTO_WINDOW + 256u * 1024)
#define RETRY_MS	 1000
#define HELLO_AGAIN_MS	 1000
#define GUEST_LOG_BURST	 20
/* --persona FILE: the job's identity for a restored guest (issue #30). */
#define PERSONA_ENTROPY 64 /* bytes, fresh for every PERSONA */

struct client {
	struct client *next;
	int fd;
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	int ngroups;
	struct proto_reader rd;
	struct proto_buf out;
	bool said_hello, answered, closing;
	uint64_t nonce;
	struct rsession *sessions;
	unsigned nsessions;
};

/* A task of a connected client: it ends with the client. */
struct rsession {
	struct rsession *hnext; /* in relay.by_id[] */
	struct rsession *cnext; /* in c->sessions */
	uint32_t id, local;
	struct client *c;
};

/* PERSONA_SENT: the agent said READY, but the guest is ready for tasks
 * only once it has taken the job's identity (--persona). */
enum chan_state { CHAN_DOWN, CHAN_HELLO_SENT, CHAN_PERSONA_SENT, CHAN_READY };

#define MEMCG_PATH_MAX 768

static struct {
	const char *channel_path, *socket_path, *pidfile, *log_file;
	const char *oom_file; /* made when the job's cgroup OOM-kills qemu */
	const char *expect_identity;
	const char *persona_file;
	char **persona; /* its entries, NULL-terminated; NULL without one */
	uint64_t hello_again_at; /* HELLO unanswered: sent again then */
	char *persona_text;
	/* the identity the guest took refused it: dead_reason says why */
	bool persona_failed;
	uid_t uid;
	gid_t gid;
	bool have_uid, have_gid, allow_root, daemon;
	int listen_fd, dir_fd, sig_fd, chan_fd;
	char sock_name[256];
	enum chan_state state;
	bool was_ready, hello_ok;
	char dead_reason[1024];
	/* memcg_oom_kills() when the guest was ready, and of which cgroup */
	unsigned long oom_kills;
	char oom_counter[MEMCG_PATH_MAX];
	char identity[PROTO_MAX_IDENTITY + 1];
	uint64_t nonce, retry_at;
	struct proto_reader rd;
	struct proto_buf out;
	struct client *clients;
	unsigned nclients;
	struct rsession *by_id[SESSION_BUCKETS];
	unsigned nsessions;
	uint32_t next_id;
	bool quit;
} relay = {
	.listen_fd = -1, .dir_fd = -1, .sig_fd = -1, .chan_fd = -1, .next_id = 1
};

/* ---- sessions and clients ---- */

static void client_error(struct client *c, uint32_t session, int code,
			 const char *fmt, ...) _printf_(4, 5);

static struct rsession **session_bucket(uint32_t id)
{
	return &relay.by_id[id & (SESSION_BUCKETS - 1)];
}

static struct rsession *session_by_id(uint32_t id)
{
	for (struct rsession *s = *session_bucket(id); s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

static struct rsession *session_by_local(struct client *c, uint32_t local)
{
	for (struct rsession *s = c->sessions; s; s = s->cnext)
		if (s->local == local)
			return s;
	return NULL;
}

static void session_add(struct rsession *s)
{
	struct rsession **bucket = session_bucket(s->id);

	s->hnext = *bucket;
	*bucket = s;
	s->cnext = s->c->sessions;
	s->c->sessions = s;
	s->c->nsessions++;
	relay.nsessions++;
}

static void session_free(struct rsession *s)
{
	struct rsession **pp;

	for (pp = session_bucket(s->id); *pp; pp = &(*pp)->hnext)
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
	for (pp = &s->c->sessions; *pp; pp = &(*pp)->cnext)
		if (*pp == s) {
			*pp = s->cnext;
			break;
		}
	s->c->nsessions--;
	relay.nsessions--;
	free(s);
}

/* Its task is gone on the host: end it in the guest and forget it now, not
 * when the guest says it exited (a hostile guest never does). */
static void session_end(struct rsession *s)
{
	if (relay.state == CHAN_READY) {
		proto_put_signal(&relay.out, s->id, SIGKILL);
		proto_put_eof(&relay.out, s->id, PROTO_STDOUT);
		proto_put_eof(&relay.out, s->id, PROTO_STDERR);
	}
	session_free(s);
}

/* Every session ends with @code and @reason for its task. */
static void sessions_fail_all(int code, const char *reason, bool forget)
{
	for (struct client *c = relay.clients; c; c = c->next)
		for (struct rsession *s = c->sessions, *next; s; s = next) {
			next = s->cnext;
			client_error(c, s->local, code, "%s", reason);
			if (forget)
				session_free(s);
		}
}

static void client_error(struct client *c, uint32_t session, int code,
			 const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	proto_put_error(&c->out, session, (uint32_t)code, text);
}

/* Flush what is queued, then hang up. */
static void client_close_later(struct client *c)
{
	c->closing = true;
}

static void client_free(struct client *c)
{
	struct client **pp;

	while (c->sessions)
		session_end(c->sessions);
	for (pp = &relay.clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	close(c->fd);
	proto_reader_free(&c->rd);
	proto_buf_free(&c->out);
	relay.nclients--;
	free(c);
}

static void client_hello(struct client *c)
{
	struct proto_hello h = { .min_version = PROTO_VERSION_MAX,
				 .max_version = PROTO_VERSION_MAX };

	h.nonce = c->nonce;
	memcpy(h.identity, relay.identity, sizeof(h.identity));
	proto_put_hello(&c->out, &h);
	proto_put_ready(&c->out);
	c->answered = true;
}

static void client_guest_dead(struct client *c)
{
	client_error(c, 0, EHOSTDOWN, "%s", relay.dead_reason);
	client_close_later(c);
}

/* Clients that wait for a guest that will not be ready are told why. */
static bool guest_is_dead(void)
{
	return relay.was_ready || relay.persona_failed;
}

/* ---- channel ---- */

/* What the guest makes us log is rate limited: it must not fill the disk. */
static bool guest_log_ok(void)
{
	static uint64_t window_start;
	static unsigned count;
	uint64_t now = clock_now_ms();

	if (now - window_start > 60000) {
		if (count > GUEST_LOG_BURST)
			log_warn("%u more messages about the guest suppressed",
				 count - GUEST_LOG_BURST);
		window_start = now;
		count = 0;
	}
	if (++count == GUEST_LOG_BURST + 1)
		log_warn("the guest keeps misbehaving: suppressing further "
			 "messages for a minute");
	return count <= GUEST_LOG_BURST;
}

/* How many processes the kernel's OOM killer took from the memory cgroup
 * the relay is in (its counter file's path in @path): once the extern
 * step has adopted the guest (the relay with qemu), the job's; 0 when that
 * cannot be read. cgroup v1 memory.oom_control or v2 memory.events,
 * "oom_kill N". */
static unsigned long memcg_oom_kills(char path[MEMCG_PATH_MAX])
{
	_cleanup_fclose_ FILE *self = fopen("/proc/self/cgroup", "re");
	char line[512];
	unsigned long n = 0;

	path[0] = '\0';
	while (self && fgets(line, sizeof(line), self)) {
		char *rest = strchr(line, ':');
		char *cg = rest ? strchr(rest + 1, ':') : NULL;

		if (!cg)
			continue;
		cg[strcspn(cg, "\n")] = '\0';
		if (strncmp(rest, ":memory:", 8) == 0) {
			snprintf(path, MEMCG_PATH_MAX,
				 "/sys/fs/cgroup/memory%s/memory.oom_control",
				 cg + 1);
			break;
		}
		if (strncmp(line, "0::", 3) == 0)
			snprintf(path, MEMCG_PATH_MAX,
				 "/sys/fs/cgroup%s/memory.events", cg + 1);
	}
	_cleanup_fclose_ FILE *f = path[0] ? fopen(path, "re") : NULL;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %lu", &n) == 1)
			break;
	return n;
}

/* Did the OOM killer take a process from the relay's memory cgroup since
 * the guest was ready? The extern step's adoption moved the relay since:
 * a new cgroup counts from 0. */
static bool guest_oom_killed(void)
{
	char path[MEMCG_PATH_MAX];
	unsigned long n = memcg_oom_kills(path);

	return n > (strcmp(path, relay.oom_counter) == 0 ? relay.oom_kills : 0);
}

/* @text into @path, made anew (root's state directory: no links). */
static int write_small_file(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(
		path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		0644);

	if (fd < 0)
		return log_errno(errno, "cannot write %s", path);
	return write_all(fd, text, strlen(text));
}

static void channel_reset(const char *fmt, ...) _printf_(1, 2);
static void channel_reset(const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (relay.chan_fd >= 0)
		close(relay.chan_fd);
	relay.chan_fd = -1;
	proto_buf_consume(&relay.out, proto_buf_pending(&relay.out));
	proto_reader_reset(&relay.rd, true);
	relay.retry_at = clock_now_ms() + RETRY_MS;
	if (relay.state == CHAN_DOWN)
		return;
	if (relay.persona_failed) {
		/* dead_reason keeps why the guest is no use */
	} else if (relay.was_ready && guest_oom_killed()) {
		snprintf(relay.dead_reason, sizeof(relay.dead_reason),
			 "the guest died: the job's memory cgroup killed its "
			 "qemu, out of memory (the guest and qemu needed more "
			 "than the job's --mem: raise --mem, or lower "
			 "--vm-mem)");
		if (guest_log_ok())
			log_error("%s", relay.dead_reason);
		/* The batch step ends the job OUT_OF_MEMORY (spank_vm). */
		if (relay.oom_file)
			write_small_file(relay.oom_file, relay.dead_reason);
	} else if (relay.was_ready) {
		snprintf(relay.dead_reason, sizeof(relay.dead_reason),
			 "the guest died: its agent channel %s (the job's VM "
			 "crashed, was shut down or its agent failed)",
			 why);
		if (guest_log_ok())
			log_error("%s", relay.dead_reason);
	} else if (guest_log_ok()) {
		log_warn("guest agent channel %s before the agent was ready",
			 why);
	}
	relay.state = CHAN_DOWN;
	sessions_fail_all(EHOSTDOWN, relay.dead_reason, true);
	if (relay.was_ready)
		for (struct client *c = relay.clients; c; c = c->next)
			client_guest_dead(c);
}

static void channel_try_connect(void)
{
	struct proto_hello h = { .min_version = PROTO_VERSION_MIN,
				 .max_version = PROTO_VERSION_MAX };
	int fd;

	if (relay.chan_fd >= 0 || clock_now_ms() < relay.retry_at)
		return;
	fd = unix_connect(relay.channel_path);
	if (fd < 0) {
		relay.retry_at = clock_now_ms() + RETRY_MS;
		return;
	}
	relay.chan_fd = fd;
	relay.state = CHAN_HELLO_SENT;
	relay.hello_ok = false;
	relay.nonce = random_u64();
	h.nonce = relay.nonce;
	proto_reader_reset(&relay.rd, true);
	proto_put_hello(&relay.out, &h);
	relay.hello_again_at = clock_now_ms() + HELLO_AGAIN_MS;
	/* A guest can make us reconnect every RETRY_MS. */
	if (guest_log_ok())
		log_info("connected to the guest channel %s",
			 relay.channel_path);
}

/* A guest restored from a template met us before it saw the template's
 * host go, and may have dropped our HELLO with that host's connection
 * (design.md section 7): it gets it again until it answers. A duplicate
 * comes before anything else we send; its answer is ignored. Cold guests
 * are left alone: their agent reads the one HELLO when it starts. */
static void hello_again(void)
{
	struct proto_hello h = { .min_version = PROTO_VERSION_MIN,
				 .max_version = PROTO_VERSION_MAX,
				 .nonce = relay.nonce };

	if (!relay.persona || relay.chan_fd < 0 ||
	    relay.state != CHAN_HELLO_SENT || relay.hello_ok ||
	    clock_now_ms() < relay.hello_again_at)
		return;
	proto_put_hello(&relay.out, &h);
	relay.hello_again_at = clock_now_ms() + HELLO_AGAIN_MS;
}

static void guest_hello(const struct proto_frame *f)
{
	struct proto_hello h;

	if (proto_decode_hello(f->payload, f->length, &h) < 0 ||
	    h.nonce != relay.nonce) {
		if (guest_log_ok())
			log_warn(
				"ignoring a stale or malformed HELLO from the guest");
		return;
	}
	if (h.max_version != PROTO_VERSION_MAX) {
		channel_reset("speaks protocol version %u, not %u",
			      h.max_version, PROTO_VERSION_MAX);
		return;
	}
	if (relay.expect_identity &&
	    strcmp(h.identity, relay.expect_identity) != 0) {
		channel_reset("belongs to '%s', not '%s'", h.identity,
			      relay.expect_identity);
		return;
	}
	memcpy(relay.identity, h.identity, sizeof(relay.identity));
	relay.hello_ok = true;
}

static void guest_ready(void)
{
	relay.state = CHAN_READY;
	relay.was_ready = true;
	relay.persona_failed = false;
	relay.dead_reason[0] = '\0';
	relay.oom_kills = memcg_oom_kills(relay.oom_counter);
	if (guest_log_ok())
		log_info("guest agent '%s' is ready", relay.identity);
	for (struct client *c = relay.clients; c; c = c->next)
		if (c->said_hello && !c->answered)
			client_hello(c);
}

/* Is the payload well formed for a frame of this kind from the guest? */
static bool guest_frame_valid(const struct proto_frame *f)
{
	struct proto_persona_answer *pa;
	struct proto_exit ex;
	struct proto_error *er;
	const uint8_t *d;
	size_t n;
	uint8_t st;
	uint32_t v;
	uint64_t c;
	bool ok;

	switch (f->hdr.kind) {
	case PROTO_DATA:
		return proto_decode_data(f->payload, f->length, &st, &d, &n) ==
			       0 &&
		       st != PROTO_STDIN;
	case PROTO_EOF:
		return proto_decode_eof(f->payload, f->length, &st) == 0 &&
		       st != PROTO_STDIN;
	case PROTO_CREDIT:
		return proto_decode_credit(f->payload, f->length, &st, &v) ==
			       0 &&
		       (st == PROTO_STDIN || st == PROTO_PMI);
	case PROTO_EXIT:
		return proto_decode_exit(f->payload, f->length, &ex) == 0;
	case PROTO_ERROR:
		er = malloc(sizeof(*er));
		ok = er && proto_decode_error(f->payload, f->length, er) == 0;
		free(er);
		return ok;
	case PROTO_PONG:
		return proto_decode_ping(f->payload, f->length, &c) == 0;
	case PROTO_PERSONA:
		pa = malloc(sizeof(*pa));
		ok = pa && proto_decode_persona_answer(f->payload, f->length,
						       pa) == 0;
		free(pa);
		return ok;
	default:
		return false;
	}
}

/* ---- the job's identity for a restored guest (--persona) ---- */

/* "time=SEC.NSEC" and "entropy=HEX", made anew for every PERSONA: the
 * restored guest's clock is the template's, and so is its RNG's state. */
static int persona_fresh(char *time_kv, size_t time_size, char *entropy_kv,
			 size_t entropy_size)
{
	uint8_t bytes[PERSONA_ENTROPY];
	struct timespec ts;
	size_t n;

	if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
		return log_errno(errno, "getrandom");
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(time_kv, time_size, "time=%lld.%09ld", (long long)ts.tv_sec,
		 ts.tv_nsec);
	n = (size_t)snprintf(entropy_kv, entropy_size, "entropy=");
	for (size_t i = 0; i < sizeof(bytes) && n + 3 <= entropy_size; i++)
		n += (size_t)snprintf(entropy_kv + n, entropy_size - n, "%02x",
				      bytes[i]);
	explicit_bzero(bytes, sizeof(bytes));
	return 0;
}

/* The file's entries and the fresh two, as PERSONA frames into @b. */
static int persona_send(struct proto_buf *b)
{
	size_t n = 0;
	_cleanup_free_ char **v = NULL;
	char time_kv[64], entropy_kv[16 + 2 * PERSONA_ENTROPY];
	int r;

	while (relay.persona[n])
		n++;
	v = calloc(n + 3, sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, relay.persona, n * sizeof(*v));
	r = persona_fresh(time_kv, sizeof(time_kv), entropy_kv,
			  sizeof(entropy_kv));
	if (r < 0)
		return r;
	v[n] = time_kv;
	v[n + 1] = entropy_kv;
	r = persona_frames_put(b, v);
	explicit_bzero(entropy_kv, sizeof(entropy_kv));
	return r;
}

/* The guest will not be ready for this job: waiting clients, and those
 * still to come, are told why (its agent's own words). */
static void persona_refused(const char *why)
{
	relay.persona_failed = true;
	snprintf(relay.dead_reason, sizeof(relay.dead_reason),
		 "the guest could not take the job's identity: %s", why);
	if (guest_log_ok())
		log_error("%s", relay.dead_reason);
	for (struct client *c = relay.clients; c; c = c->next)
		if (c->said_hello && !c->answered && !c->closing)
			client_guest_dead(c);
}

/* The guest's HELLO names the template it was saved from; once it took
 * the job's hostname, tasks see that name. */
static void persona_take_hostname(void)
{
	for (char **e = relay.persona; *e; e++)
		if (strncmp(*e, "hostname=", 9) == 0 &&
		    persona_hostname_ok(*e + 9))
			snprintf(relay.identity, sizeof(relay.identity), "%s",
				 *e + 9);
}

static void guest_persona_answer(const struct proto_frame *f)
{
	struct proto_persona_answer *a;

	if (!guest_frame_valid(f)) {
		channel_reset("sent a malformed PERSONA answer");
		return;
	}
	a = malloc(sizeof(*a));
	if (!a || proto_decode_persona_answer(f->payload, f->length, a) < 0) {
		free(a);
		channel_reset("cannot read the PERSONA answer");
		return;
	}
	if (a->failures == 0) {
		persona_take_hostname();
		log_info("the guest took the job's identity");
		guest_ready();
	} else {
		persona_refused(a->text);
	}
	free(a);
}

/* While the guest takes the job's identity: its answer, or an agent that
 * does not know PERSONA (it reports a framing error, never answers). */
static void guest_persona_frame(const struct proto_frame *f)
{
	struct proto_error *er;
	char *why = NULL;

	if (relay.persona_failed || f->hdr.session != 0)
		return;
	if (f->hdr.kind == PROTO_PERSONA) {
		guest_persona_answer(f);
		return;
	}
	if (f->hdr.kind != PROTO_ERROR)
		return;
	er = malloc(sizeof(*er));
	if (er && proto_decode_error(f->payload, f->length, er) == 0 &&
	    asprintf(&why,
		     "its agent does not know the message (older than the "
		     "host's slurm-vm?): %s",
		     er->text) >= 0)
		persona_refused(why);
	free(why);
	free(er);
}

/* The agent is ready: for tasks at once, or once it took the identity. */
static void guest_agent_ready(void)
{
	int r;

	if (!relay.persona) {
		guest_ready();
		return;
	}
	relay.state = CHAN_PERSONA_SENT;
	r = persona_send(&relay.out);
	if (r < 0) {
		log_errno(r, "cannot send the job's identity to the guest");
		persona_refused("the relay could not send it");
	} else if (guest_log_ok()) {
		log_info("guest agent '%s' is up; sending the job's identity",
			 relay.identity);
	}
}

static void guest_session_frame(const struct proto_frame *f)
{
	struct rsession *s = session_by_id(f->hdr.session);
	struct client *c;
	struct proto_error *er = NULL;
	bool fatal = false;

	if (!guest_frame_valid(f)) {
		if (guest_log_ok())
			log_warn(
				"dropping a malformed or unexpected %s from the "
				"guest (session %u)",
				proto_kind_name(f->hdr.kind), f->hdr.session);
		return;
	}
	if (!s) {
		log_debug("%s for unknown session %u dropped",
			  proto_kind_name(f->hdr.kind), f->hdr.session);
		return;
	}
	if (f->hdr.kind == PROTO_ERROR) {
		er = malloc(sizeof(*er));
		fatal = !er ||
			(proto_decode_error(f->payload, f->length, er) == 0 &&
			 er->code != 0);
		free(er);
	}
	c = s->c;
	if (proto_buf_pending(&c->out) > CLIENT_OUT_LIMIT) {
		log_error("the guest ignored flow control on session %u: "
			  "killing it",
			  s->id);
		client_error(c, s->local, EPROTO,
			     "the guest agent ignored flow control; the task "
			     "was killed");
		client_close_later(c);
		session_end(s);
		return;
	}
	proto_put_frame(&c->out, f->hdr.kind, 0, s->local, f->payload,
			f->length);
	if (f->hdr.kind == PROTO_EXIT || fatal)
		session_free(s);
}

static void guest_frame(const struct proto_frame *f)
{
	struct proto_error *er;
	uint64_t cookie;

	if (f->hdr.kind == PROTO_HELLO) {
		if (relay.state == CHAN_HELLO_SENT)
			guest_hello(f);
		return;
	}
	if (relay.state == CHAN_HELLO_SENT) {
		if (f->hdr.kind == PROTO_READY && relay.hello_ok)
			guest_agent_ready();
		return;
	}
	if (relay.state == CHAN_PERSONA_SENT && f->hdr.kind != PROTO_PING) {
		guest_persona_frame(f);
		return;
	}
	if (relay.state != CHAN_READY && relay.state != CHAN_PERSONA_SENT)
		return;
	if (f->hdr.session != 0) {
		guest_session_frame(f);
		return;
	}
	switch (f->hdr.kind) {
	case PROTO_ERROR:
		er = malloc(sizeof(*er));
		if (er && proto_decode_error(f->payload, f->length, er) == 0 &&
		    guest_log_ok())
			log_warn("guest agent: %s", er->text);
		free(er);
		break;
	case PROTO_PING:
		/* Answered only while the guest reads what we send. */
		if (proto_decode_ping(f->payload, f->length, &cookie) == 0 &&
		    proto_buf_pending(&relay.out) < CHANNEL_HIGH_WATER)
			proto_put_ping(&relay.out, PROTO_PONG, 0, cookie);
		break;
	default:
		break;
	}
}

static void channel_read(void)
{
	struct proto_frame f;
	int k = proto_reader_pull(&relay.rd, relay.chan_fd);

	if (k == -EPIPE) {
		channel_reset("closed");
		return;
	}
	if (k < 0) {
		channel_reset("failed: %s", strerror(-k));
		return;
	}
	while (relay.chan_fd >= 0 && (k = proto_reader_next(&relay.rd, &f))) {
		if (k < 0) {
			/* Garbage: start over with a clean conversation. */
			if (guest_log_ok())
				log_error("malformed data from the guest (%s)",
					  strerror(-k));
			channel_reset("sent malformed data");
			return;
		}
		guest_frame(&f);
	}
}

/* ---- task connections ---- */

static bool client_has_gid(const struct client *c, uint32_t gid)
{
	if (gid == c->gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* The task runs as the job user (or root, where vm.conf allows it), with
 * groups the connecting process really has. */
static int exec_check(struct client *c, struct proto_exec *m)
{
	bool root_ok = relay.allow_root;

	if (m->uid == 0 && root_ok)
		goto groups_done;
	if (m->uid != relay.uid)
		return -EPERM;
	if (c->uid != 0) {
		if (!client_has_gid(c, m->gid))
			return -EPERM;
		for (uint32_t i = 0; i < m->ngroups; i++)
			if (!client_has_gid(c, m->groups[i]))
				return -EPERM;
	}
groups_done:
	m->flags &= ~(uint32_t)PROTO_EXEC_ALLOW_ROOT;
	if (root_ok)
		m->flags |= PROTO_EXEC_ALLOW_ROOT;
	return 0;
}

static uint32_t session_new_id(void)
{
	for (;;) {
		uint32_t id = relay.next_id++;

		if (relay.next_id == 0)
			relay.next_id = 1;
		if (id != 0 && !session_by_id(id))
			return id;
	}
}

static int session_start(struct client *c, uint32_t local,
			 const struct proto_exec *m)
{
	struct rsession *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->id = session_new_id();
	s->local = local;
	s->c = c;
	r = proto_put_exec(&relay.out, s->id, m);
	if (r < 0) {
		free(s);
		return r;
	}
	session_add(s);
	return 0;
}

static int client_exec(struct client *c, const struct proto_frame *f)
{
	struct proto_exec m;
	int r;

	if (session_by_local(c, f->hdr.session))
		return -EBADMSG;
	r = proto_decode_exec(f->payload, f->length, &m);
	if (r < 0)
		return r;
	if (c->nsessions >= MAX_CLIENT_SESSIONS ||
	    relay.nsessions >= MAX_SESSIONS)
		client_error(c, f->hdr.session, EAGAIN,
			     "too many tasks: this job's VM runs at most %u "
			     "at once, %u per connection; start fewer tasks "
			     "on this node",
			     MAX_SESSIONS, MAX_CLIENT_SESSIONS);
	else if (exec_check(c, &m) < 0)
		client_error(c, f->hdr.session, EPERM,
			     "permission denied: a task of this job runs as "
			     "uid %u with the caller's groups",
			     (unsigned)relay.uid);
	else
		r = session_start(c, f->hdr.session, &m);
	proto_exec_free(&m);
	return r;
}

static bool client_frame_valid(const struct proto_frame *f)
{
	uint16_t rows, cols;
	const uint8_t *d;
	size_t n;
	uint8_t st;
	uint32_t v;

	switch (f->hdr.kind) {
	case PROTO_DATA:
		return proto_decode_data(f->payload, f->length, &st, &d, &n) ==
			       0 &&
		       (st == PROTO_STDIN || st == PROTO_PMI);
	case PROTO_EOF:
		/* On STDOUT/STDERR: the task's reader went away. */
		return proto_decode_eof(f->payload, f->length, &st) == 0;
	case PROTO_CREDIT:
		return proto_decode_credit(f->payload, f->length, &st, &v) ==
			       0 &&
		       st != PROTO_STDIN;
	case PROTO_SIGNAL:
		return proto_decode_signal(f->payload, f->length, &v) == 0;
	case PROTO_WINSIZE:
		return proto_decode_winsize(f->payload, f->length, &rows,
					    &cols) == 0;
	default:
		return false;
	}
}

static int client_hello_in(struct client *c, const struct proto_frame *f)
{
	struct proto_hello h;

	if (c->said_hello || proto_decode_hello(f->payload, f->length, &h) < 0)
		return -EBADMSG;
	if (h.min_version > PROTO_VERSION_MAX ||
	    h.max_version < PROTO_VERSION_MIN)
		return -EPROTO;
	c->said_hello = true;
	c->nonce = h.nonce;
	if (relay.state == CHAN_READY)
		client_hello(c);
	else if (guest_is_dead())
		client_guest_dead(c);
	return 0;
}

static int client_frame(struct client *c, const struct proto_frame *f)
{
	struct rsession *s;
	uint64_t cookie;

	if (f->hdr.kind == PROTO_HELLO)
		return client_hello_in(c, f);
	if (!c->answered)
		return -EBADMSG;
	if (f->hdr.kind == PROTO_EXEC)
		return client_exec(c, f);
	if (f->hdr.kind == PROTO_PING) {
		if (proto_decode_ping(f->payload, f->length, &cookie) < 0)
			return -EBADMSG;
		return proto_put_ping(&c->out, PROTO_PONG, f->hdr.session,
				      cookie);
	}
	if (f->hdr.session == 0 || !client_frame_valid(f))
		return -EBADMSG;
	s = session_by_local(c, f->hdr.session);
	if (!s)
		return 0; /* it just ended */
	return proto_put_frame(&relay.out, f->hdr.kind, 0, s->id, f->payload,
			       f->length);
}

static void client_read(struct client *c)
{
	struct proto_frame f;
	int k;

	if (proto_reader_pull(&c->rd, c->fd) < 0) {
		client_close_later(c);
		proto_buf_consume(&c->out, proto_buf_pending(&c->out));
		return;
	}
	while (!c->closing && (k = proto_reader_next(&c->rd, &f))) {
		if (k > 0)
			k = client_frame(c, &f);
		if (k < 0) {
			log_warn("task connection of uid %u: protocol error "
				 "(%s): closing it",
				 (unsigned)c->uid, strerror(-k));
			client_error(c, 0, EPROTO, "protocol error: %s",
				     strerror(-k));
			client_close_later(c);
		}
	}
}

static int client_credentials(struct client *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t groups[MAX_GROUPS];
	socklen_t glen = sizeof(groups);

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	c->uid = cred.uid;
	c->gid = cred.gid;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0)
		c->ngroups = (int)(glen / sizeof(gid_t));
	memcpy(c->groups, groups, (size_t)c->ngroups * sizeof(gid_t));
	if (c->uid != relay.uid && c->uid != 0)
		return -EACCES;
	return 0;
}

static void client_accept(void)
{
	struct client *c;
	int fd = accept4(relay.listen_fd, NULL, NULL,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);
	int r;

	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c || proto_reader_init(&c->rd) < 0) {
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	c->next = relay.clients;
	relay.clients = c;
	relay.nclients++;
	r = client_credentials(c);
	if (r == -EACCES) {
		log_warn("refused a task connection from uid %u: this relay "
			 "serves uid %u",
			 (unsigned)c->uid, (unsigned)relay.uid);
		client_error(c, 0, EACCES,
			     "permission denied: this VM belongs to uid %u",
			     (unsigned)relay.uid);
		client_close_later(c);
	} else if (r < 0 || relay.nclients > MAX_CLIENTS) {
		client_error(c, 0, EAGAIN, "too many task connections");
		client_close_later(c);
	}
}

/* ---- event loop ---- */

enum { REF_SIGNAL, REF_LISTEN, REF_CHANNEL, REF_CLIENT };

static void clients_reap(void)
{
	for (struct client *c = relay.clients, *next; c; c = next) {
		next = c->next;
		if (c->closing && !proto_buf_pending(&c->out))
			client_free(c);
	}
}

static void build_pollset(struct pollset *ps)
{
	bool room = proto_buf_pending(&relay.out) < CHANNEL_HIGH_WATER;

	ps->n = 0;
	pollset_add(ps, relay.sig_fd, POLLIN, REF_SIGNAL, NULL, 0);
	pollset_add(ps, relay.listen_fd,
		    relay.nclients <= MAX_CLIENTS ? POLLIN : 0, REF_LISTEN,
		    NULL, 0);
	if (relay.chan_fd >= 0)
		pollset_add(
			ps, relay.chan_fd,
			POLLIN | (proto_buf_pending(&relay.out) ? POLLOUT : 0),
			REF_CHANNEL, NULL, 0);
	for (struct client *c = relay.clients; c; c = c->next) {
		short ev = proto_buf_pending(&c->out) ? POLLOUT : 0;

		/* A client that does not read its answers is not heard. */
		if (!c->closing && room &&
		    proto_buf_pending(&c->out) < CLIENT_OUT_LIMIT)
			ev |= POLLIN;
		pollset_add(ps, c->fd, ev, REF_CLIENT, c, 0);
	}
}

static void handle_signals(void)
{
	struct signalfd_siginfo si;

	while (read(relay.sig_fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGTERM)
			relay.quit = true;
}

static void dispatch(struct pollset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		short re = ps->fds[i].revents;
		int kind = ps->refs[i].kind;
		struct client *c = ps->refs[i].obj;

		if (!re)
			continue;
		if (kind == REF_CLIENT) {
			if (re & POLLOUT &&
			    proto_buf_write(&c->out, c->fd) == -EPIPE)
				proto_buf_consume(&c->out,
						  proto_buf_pending(&c->out));
			if (re & (POLLIN | POLLHUP | POLLERR) && !c->closing)
				client_read(c);
			else if (re & (POLLHUP | POLLERR))
				proto_buf_consume(&c->out,
						  proto_buf_pending(&c->out));
		} else if (kind == REF_SIGNAL) {
			handle_signals();
		} else if (kind == REF_LISTEN) {
			client_accept();
		} else if (kind == REF_CHANNEL) {
			ssize_t w = 0;

			if (re & POLLOUT)
				w = proto_buf_write(&relay.out, relay.chan_fd);
			if (w < 0 && w != -EAGAIN)
				channel_reset("failed: %s", strerror((int)-w));
			else if (re & (POLLIN | POLLHUP | POLLERR))
				channel_read();
		}
	}
}

static int run(void)
{
	struct pollset ps = { 0 };
	int r = 0;

	while (!relay.quit && r == 0) {
		channel_try_connect();
		hello_again();
		clients_reap();
		build_pollset(&ps);
		r = pollset_wait(
			&ps,
			relay.chan_fd < 0 || (relay.persona &&
					      relay.state == CHAN_HELLO_SENT)
				? RETRY_MS
				: -1);
		if (r < 0)
			log_errno(-r, "poll");
		else
			dispatch(&ps);
	}
	pollset_free(&ps);
	return r;
}

/* ---- setup ---- */

/* The socket's directory is root's (0711): the job user may connect to the
 * socket, which is theirs (0600), but store nothing there (it is on /run,
 * a tmpfs). Its parent, the job's state directory, must be root's and not
 * writable by others. */
static int socket_setup(void)
{
	_cleanup_free_ char *dir = strdup(relay.socket_path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	struct stat st;
	mode_t old;
	int r;

	if (!slash || slash == dir || !slash[1])
		return log_errno(EINVAL, "--socket %s: need DIR/NAME",
				 relay.socket_path);
	*slash = '\0';
	snprintf(relay.sock_name, sizeof(relay.sock_name), "%s", slash + 1);
	char *parent_end = strrchr(dir, '/');

	if (parent_end) {
		*parent_end = '\0';
		if (lstat(parent_end == dir ? "/" : dir, &st) < 0)
			return log_errno(errno, "cannot stat %s", dir);
		if (!S_ISDIR(st.st_mode) || st.st_uid != 0 ||
		    (st.st_mode & 0022))
			return log_errno(EPERM,
					 "%s must be a directory owned by root "
					 "and writable only by root",
					 dir);
		*parent_end = '/';
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return log_errno(errno, "cannot create %s", dir);
	relay.dir_fd =
		open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (relay.dir_fd < 0)
		return log_errno(errno, "cannot open %s", dir);
	if (fstat(relay.dir_fd, &st) < 0 ||
	    (st.st_uid != 0 && st.st_uid != relay.uid))
		return log_errno(EPERM, "%s belongs to someone else", dir);
	/* Root's for good: the user gets the socket only. */
	if (fchown(relay.dir_fd, 0, 0) < 0 || fchmod(relay.dir_fd, 0700) < 0)
		return log_errno(errno, "cannot secure %s", dir);
	unlinkat(relay.dir_fd, relay.sock_name, 0);
	old = umask(077);
	r = unix_listen(relay.socket_path, 0600);
	umask(old);
	if (r < 0)
		return log_errno(r, "cannot listen on %s", relay.socket_path);
	relay.listen_fd = r;
	if (fchownat(relay.dir_fd, relay.sock_name, relay.uid, relay.gid,
		     AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmod(relay.dir_fd, 0711) < 0)
		return log_errno(errno, "cannot give %s to uid %u",
				 relay.socket_path, (unsigned)relay.uid);
	return 0;
}

/* "PID START_TIME" (core/pidfile.h): whoever signals or adopts the pid
 * later can tell it from a process that reused it. */
static int write_pidfile(void)
{
	if (!relay.pidfile)
		return 0;
	return pidfile_write(AT_FDCWD, relay.pidfile, getpid());
}

static void close_inherited(int keep1, int keep2)
{
	int lo = keep1 < keep2 ? keep1 : keep2,
	    hi = keep1 < keep2 ? keep2 : keep1;

	if (syscall(SYS_close_range, 3, lo - 1, 0) < 0 ||
	    syscall(SYS_close_range, lo + 1, hi - 1, 0) < 0 ||
	    syscall(SYS_close_range, hi + 1, ~0u, 0) < 0)
		for (int fd = 3; fd < 65536; fd++)
			if (fd != keep1 && fd != keep2)
				close(fd);
}

/* Double fork: own session, no controlling terminal, nothing inherited
 * (slurmd waits for EOF on the prolog's output). The parent returns once
 * the daemon has written its pidfile. */
static int daemonize(void)
{
	int pipefd[2], null;
	char ok = 0;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(pipefd[1]);
		exit(read(pipefd[0], &ok, 1) == 1 && ok == 1 ? 0 : 1);
	}
	close(pipefd[0]);
	if (setsid() < 0)
		_exit(1);
	pid = fork();
	if (pid != 0)
		_exit(pid < 0 ? 1 : 0);
	if (chdir("/") < 0)
		_exit(1);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(null, 2) < 0)
		_exit(1);
	close_inherited(relay.listen_fd, pipefd[1]);
	relay.dir_fd = -1; /* closed above */
	if (relay.log_file && log_open_file(relay.log_file) < 0)
		_exit(1);
	if (write_pidfile() < 0)
		_exit(1);
	ok = 1;
	if (write(pipefd[1], &ok, 1) != 1)
		_exit(1);
	close(pipefd[1]);
	return 0;
}

/* The file's bytes: root's and written by root only (the prolog's, in the
 * job's state directory), at most PERSONA_FILE_MAX, no NUL. */
static int persona_read(char **text)
{
	_cleanup_close_ int fd =
		open(relay.persona_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t n = 0;

	if (fd < 0)
		return log_errno(errno, "--persona %s", relay.persona_file);
	if (fstat(fd, &st) < 0)
		return log_errno(errno, "--persona %s", relay.persona_file);
	if (!S_ISREG(st.st_mode) ||
	    (geteuid() == 0 && (st.st_uid != 0 || (st.st_mode & 0022))))
		return log_errno(EPERM,
				 "--persona %s: must be a regular file "
				 "written only by root",
				 relay.persona_file);
	if (st.st_size > (off_t)PERSONA_FILE_MAX)
		return log_errno(EFBIG, "--persona %s: larger than %u KiB",
				 relay.persona_file, PERSONA_FILE_MAX / 1024);
	buf = malloc((size_t)st.st_size + 2);
	if (!buf)
		return -ENOMEM;
	while (n <= (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size + 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return log_errno(errno, "--persona %s",
					 relay.persona_file);
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (n > (size_t)st.st_size)
		return log_errno(EFBIG, "--persona %s: grew while read",
				 relay.persona_file);
	buf[n] = '\0';
	if (memchr(buf, '\0', n))
		return log_errno(EINVAL, "--persona %s: a NUL byte",
				 relay.persona_file);
	*text = TAKE_PTR(buf);
	return 0;
}

/* Reads --persona at startup, as root: a bad file is no job. Its entries
 * are checked as the prolog's writer and the agent check them
 * (channel/persona_format.h); any size goes, in as many frames as it takes. */
static int persona_load(void)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ char **v = NULL;
	struct proto_buf trial = { 0 };
	char why[512] = "";
	size_t n;
	int r;

	r = persona_read(&text);
	if (r < 0)
		return r;
	r = persona_text_parse(text, &v, &n, why, sizeof(why));
	if (r < 0)
		return log_errno(r, "--persona %s: %s", relay.persona_file,
				 why);
	relay.persona = v;
	relay.persona_text = text;
	r = persona_send(&trial);
	proto_buf_free(&trial);
	if (r < 0) {
		relay.persona = NULL;
		relay.persona_text = NULL;
		return log_errno(r, "--persona %s: cannot be sent",
				 relay.persona_file);
	}
	TAKE_PTR(v);
	TAKE_PTR(text);
	log_debug("--persona %s: %zu entries", relay.persona_file, n);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: slurm-vm-relay --channel PATH --socket DIR/NAME --uid "
		"UID [OPTIONS]\n"
		"Relays the job's tasks to the guest agent of one VM.\n\n"
		"  --channel PATH   qemu's unix socket of the agent port\n"
		"  --socket PATH    task socket to create; DIR is made the "
		"job\n"
		"                   user's (0700), its parent must be root's\n"
		"  --uid UID        the job user (peers must be UID or root)\n"
		"  --gid GID        the job user's group (default: UID)\n"
		"  --allow-root     tasks may run as root in the guest\n"
		"  --identity NAME  refuse a guest that names itself "
		"otherwise\n"
		"  --daemon         detach (double fork, setsid, close fds)\n"
		"  --pidfile PATH   write the daemon's pid there\n"
		"  --log-file PATH  also log to PATH\n"
		"  --oom-file PATH  made when the job's memory cgroup kills "
		"the guest\n"
		"  --persona FILE   key=value lines: the job's identity for a "
		"guest\n"
		"                   restored from a template, sent before it "
		"is ready\n"
		"  --debug          log debug messages\n");
}

static int parse_id(const char *s, unsigned *out)
{
	return str_to_uint(s, out) < 0 || *out == (unsigned)-1 ? -EINVAL : 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "channel", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "allow-root", no_argument, NULL, 'R' },
		{ "identity", required_argument, NULL, 'i' },
		{ "daemon", no_argument, NULL, 'D' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "log-file", required_argument, NULL, 'L' },
		{ "oom-file", required_argument, NULL, 'O' },
		{ "persona", required_argument, NULL, 'P' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned v;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			relay.channel_path = optarg;
			break;
		case 's':
			relay.socket_path = optarg;
			break;
		case 'u':
		case 'g':
			if (parse_id(optarg, &v) < 0)
				return log_errno(EINVAL, "bad id '%s'", optarg);
			if (c == 'u')
				relay.uid = v, relay.have_uid = true;
			else
				relay.gid = v, relay.have_gid = true;
			break;
		case 'R':
			relay.allow_root = true;
			break;
		case 'i':
			relay.expect_identity = optarg;
			break;
		case 'D':
			relay.daemon = true;
			break;
		case 'p':
			relay.pidfile = optarg;
			break;
		case 'L':
			relay.log_file = optarg;
			break;
		case 'O':
			relay.oom_file = optarg;
			break;
		case 'P':
			relay.persona_file = optarg;
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
	/* A root job's relay only where vm.conf's AllowRoot=yes says so. */
	if (optind < argc || !relay.channel_path || !relay.socket_path ||
	    !relay.have_uid || (relay.uid == 0 && !relay.allow_root)) {
		usage(stderr);
		return log_errno(EINVAL, "need --channel, --socket and a "
					 "non-root --uid (--uid 0 only with "
					 "--allow-root)");
	}
	if (!relay.have_gid)
		relay.gid = relay.uid;
	return 0;
}

static void cleanup(void)
{
	while (relay.clients)
		client_free(relay.clients);
	if (relay.dir_fd >= 0)
		unlinkat(relay.dir_fd, relay.sock_name, 0);
	else if (relay.socket_path)
		unlink(relay.socket_path);
	if (relay.pidfile)
		unlink(relay.pidfile);
	proto_reader_free(&relay.rd);
	proto_buf_free(&relay.out);
	free(relay.persona);
	free(relay.persona_text);
}

int main(int argc, char **argv)
{
	/* Only SIGTERM (the epilog's, or the job's end) stops the relay:
	 * see signals_ignore_job_wide(). */
	static const int sigs[] = { SIGTERM };
	int r;

	log_open("slurm-vm-relay");
	if (stdio_ensure_open() < 0)
		return 2;
	if (parse_args(argc, argv) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	signals_ignore_job_wide();
	if (geteuid() != 0)
		log_warn("not running as root: SO_PEERCRED checks still apply, "
			 "but the socket directory cannot be handed over");
	if (relay.persona_file && persona_load() < 0)
		return 1;
	if (socket_setup() < 0)
		return 1;
	if (relay.daemon) {
		r = daemonize();
		if (r < 0)
			return log_errno(r, "cannot detach") < 0 ? 1 : 1;
	} else {
		if (relay.log_file && log_open_file(relay.log_file) < 0)
			return 1;
		if (write_pidfile() < 0)
			return 1;
	}
	relay.sig_fd = signalfd_open(sigs, ARRAY_SIZE(sigs));
	if (relay.sig_fd < 0 || proto_reader_init(&relay.rd) < 0)
		return 1;
	relay.rd.resync = true;
	log_info("serving uid %u on %s for channel %s", (unsigned)relay.uid,
		 relay.socket_path, relay.channel_path);
	r = run();
	if (relay.was_ready || relay.state == CHAN_READY) {
		snprintf(relay.dead_reason, sizeof(relay.dead_reason),
			 "the job's VM relay is shutting down");
		sessions_fail_all(EHOSTDOWN, relay.dead_reason, false);
		for (struct client *c = relay.clients; c; c = c->next)
			proto_buf_write(&c->out, c->fd); /* best effort */
	}
	cleanup();
	return r < 0 ? 1 : 0;
}
