/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/macro.h"
#include "channel/proto.h"

/* ---- byte order helpers ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

/* A bounds-checked read cursor over one payload. */
struct cursor {
	const uint8_t *p;
	size_t left;
};

static int cur_bytes(struct cursor *c, size_t n, const uint8_t **out)
{
	if (c->left < n)
		return -EBADMSG;
	*out = c->p;
	c->p += n;
	c->left -= n;
	return 0;
}

static int cur_u8(struct cursor *c, uint8_t *v)
{
	const uint8_t *p;

	if (cur_bytes(c, 1, &p) < 0)
		return -EBADMSG;
	*v = p[0];
	return 0;
}

static int cur_u16(struct cursor *c, uint16_t *v)
{
	const uint8_t *p;

	if (cur_bytes(c, 2, &p) < 0)
		return -EBADMSG;
	*v = get16(p);
	return 0;
}

static int cur_u32(struct cursor *c, uint32_t *v)
{
	const uint8_t *p;

	if (cur_bytes(c, 4, &p) < 0)
		return -EBADMSG;
	*v = get32(p);
	return 0;
}

static int cur_u64(struct cursor *c, uint64_t *v)
{
	const uint8_t *p;

	if (cur_bytes(c, 8, &p) < 0)
		return -EBADMSG;
	*v = ((uint64_t)get32(p) << 32) | get32(p + 4);
	return 0;
}

/* A NUL-terminated string of at most @max bytes including the NUL. Returns a
 * pointer into the payload and the length without the NUL. */
static int cur_str(struct cursor *c, size_t max, const char **s, size_t *len)
{
	const uint8_t *p;
	uint32_t n;

	if (cur_u32(c, &n) < 0)
		return -EBADMSG;
	if (n == 0)
		return -EBADMSG;
	if (n > max)
		return -EMSGSIZE;
	if (cur_bytes(c, n, &p) < 0)
		return -EBADMSG;
	if (p[n - 1] != '\0' || memchr(p, '\0', n - 1))
		return -EBADMSG;
	*s = (const char *)p;
	*len = n - 1;
	return 0;
}

static int cur_end(const struct cursor *c)
{
	return c->left == 0 ? 0 : -EBADMSG;
}

/* ---- names and header ---- */

static const char *const kind_names[] = {
	[PROTO_HELLO] = "HELLO",     [PROTO_READY] = "READY",
	[PROTO_EXEC] = "EXEC",	     [PROTO_DATA] = "DATA",
	[PROTO_EOF] = "EOF",	     [PROTO_CREDIT] = "CREDIT",
	[PROTO_SIGNAL] = "SIGNAL",   [PROTO_EXIT] = "EXIT",
	[PROTO_ERROR] = "ERROR",     [PROTO_PING] = "PING",
	[PROTO_PONG] = "PONG",	     [PROTO_SHUTDOWN] = "SHUTDOWN",
	[PROTO_WINSIZE] = "WINSIZE", [PROTO_PERSONA] = "PERSONA",
};

const char *proto_kind_name(uint8_t kind)
{
	if (kind == 0 || kind > PROTO_KIND_MAX)
		return "unknown";
	return kind_names[kind];
}

enum session_rule { SESSION_ZERO, SESSION_NONZERO, SESSION_ANY };

static enum session_rule kind_session_rule(uint8_t kind)
{
	switch (kind) {
	case PROTO_HELLO:
	case PROTO_READY:
	case PROTO_SHUTDOWN:
	case PROTO_PERSONA:
		return SESSION_ZERO;
	case PROTO_ERROR:
	case PROTO_PING:
	case PROTO_PONG:
		return SESSION_ANY;
	default:
		return SESSION_NONZERO;
	}
}

int proto_header_decode(const uint8_t *buf, size_t len, struct proto_header *h)
{
	enum session_rule rule;

	if (len < PROTO_HEADER_SIZE)
		return -EAGAIN;
	if (get16(buf) != PROTO_MAGIC)
		return -EBADMSG;
	h->version = buf[2];
	h->kind = buf[3];
	h->session = get32(buf + 4);
	h->length = get32(buf + 8);
	h->flags = get16(buf + 12);
	if (get16(buf + 14) != 0)
		return -EBADMSG;
	if (h->version < PROTO_VERSION_MIN || h->version > PROTO_VERSION_MAX)
		return -EPROTO;
	if (h->kind == 0 || h->kind > PROTO_KIND_MAX)
		return -EBADMSG;
	if (h->flags & ~PROTO_FLAG_MORE)
		return -EBADMSG;
	/* Only EXEC may be split, and then only into full frames. */
	if ((h->flags & PROTO_FLAG_MORE) &&
	    (h->kind != PROTO_EXEC || h->length != PROTO_MAX_PAYLOAD))
		return -EBADMSG;
	if (h->length > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	rule = kind_session_rule(h->kind);
	if (rule == SESSION_ZERO && h->session != 0)
		return -EBADMSG;
	if (rule == SESSION_NONZERO && h->session == 0)
		return -EBADMSG;
	return 0;
}

void proto_header_encode(uint8_t *buf, const struct proto_header *h)
{
	put16(buf, PROTO_MAGIC);
	buf[2] = h->version;
	buf[3] = h->kind;
	put32(buf + 4, h->session);
	put32(buf + 8, h->length);
	put16(buf + 12, h->flags);
	put16(buf + 14, 0);
}

/* ---- decoders ---- */

static bool is_printable_identity(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

int proto_decode_hello(const uint8_t *p, size_t len, struct proto_hello *m)
{
	struct cursor c = { p, len };
	const char *id;
	size_t id_len;
	int r;

	if (cur_u16(&c, &m->min_version) < 0 ||
	    cur_u16(&c, &m->max_version) < 0 || cur_u64(&c, &m->nonce) < 0)
		return -EBADMSG;
	r = cur_str(&c, PROTO_MAX_IDENTITY + 1, &id, &id_len);
	if (r < 0)
		return r;
	if (cur_end(&c) < 0 || !is_printable_identity(id, id_len))
		return -EBADMSG;
	if (m->min_version == 0 || m->min_version > m->max_version)
		return -EPROTO;
	memcpy(m->identity, id, id_len + 1);
	return 0;
}

int proto_decode_ready(const uint8_t *p, size_t len)
{
	return len == 0 ? 0 : -EBADMSG;
}

void proto_exec_free(struct proto_exec *m)
{
	free(m->groups);
	free(m->argv);
	free(m->env);
	free(m->storage);
	memset(m, 0, sizeof(*m));
}

static int exec_decode_strings(struct cursor *c, char **out, uint32_t n,
			       bool env, const uint8_t *base, char *copy)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *s;
		size_t len;
		int r = cur_str(c, PROTO_MAX_STRING, &s, &len);

		if (r < 0)
			return r;
		if (env && (len == 0 || s[0] == '=' || !memchr(s, '=', len)))
			return -EBADMSG;
		out[i] = copy + ((const uint8_t *)s - base);
	}
	out[n] = NULL;
	return 0;
}

static int exec_decode_fixed(struct cursor *c, struct proto_exec *m,
			     uint32_t *argc, uint32_t *envc)
{
	if (cur_u32(c, &m->uid) < 0 || cur_u32(c, &m->gid) < 0 ||
	    cur_u32(c, &m->flags) < 0 || cur_u32(c, &m->rank) < 0 ||
	    cur_u16(c, &m->rows) < 0 || cur_u16(c, &m->cols) < 0 ||
	    cur_u32(c, &m->ngroups) < 0 || cur_u32(c, argc) < 0 ||
	    cur_u32(c, envc) < 0)
		return -EBADMSG;
	if ((m->flags & ~(uint32_t)PROTO_EXEC_FLAGS_ALL) ||
	    proto_exec_flags_clash(m->flags))
		return -EBADMSG;
	if (m->ngroups > PROTO_MAX_GROUPS || *argc > PROTO_MAX_ARGC ||
	    *envc > PROTO_MAX_ENVC)
		return -EMSGSIZE;
	if (*argc == 0)
		return -EBADMSG;
	/* Every group takes 4 bytes and every string at least 5: refuse
	 * counts the payload cannot hold before allocating anything. */
	if ((uint64_t)m->ngroups * 4 + ((uint64_t)*argc + *envc + 1) * 5 >
	    c->left)
		return -EBADMSG;
	if (m->uid == (uint32_t)-1 || m->gid == (uint32_t)-1)
		return -EBADMSG;
	return 0;
}

static int exec_decode_body(struct cursor *c, struct proto_exec *m,
			    uint32_t argc, uint32_t envc, const uint8_t *base)
{
	const char *cwd;
	size_t cwd_len;
	int r;

	for (uint32_t i = 0; i < m->ngroups; i++) {
		if (cur_u32(c, &m->groups[i]) < 0)
			return -EBADMSG;
		if (m->groups[i] == (uint32_t)-1)
			return -EBADMSG;
	}
	r = cur_str(c, PROTO_MAX_PATH, &cwd, &cwd_len);
	if (r < 0)
		return r;
	if (cwd[0] != '/')
		return -EBADMSG;
	m->cwd = (char *)m->storage + ((const uint8_t *)cwd - base);
	r = exec_decode_strings(c, m->argv, argc, false, base, m->storage);
	if (r < 0)
		return r;
	if (m->argv[0][0] == '\0')
		return -EBADMSG;
	r = exec_decode_strings(c, m->env, envc, true, base, m->storage);
	if (r < 0)
		return r;
	return cur_end(c);
}

int proto_decode_exec(const uint8_t *p, size_t len, struct proto_exec *m)
{
	struct cursor c = { p, len };
	uint32_t argc, envc;
	int r;

	memset(m, 0, sizeof(*m));
	if (len > PROTO_MAX_EXEC)
		return -EMSGSIZE;
	r = exec_decode_fixed(&c, m, &argc, &envc);
	if (r < 0)
		return r;
	m->groups = calloc(m->ngroups + 1, sizeof(*m->groups));
	m->argv = calloc(argc + 1, sizeof(char *));
	m->env = calloc(envc + 1, sizeof(char *));
	m->storage = malloc(len);
	if (!m->groups || !m->argv || !m->env || !m->storage) {
		proto_exec_free(m);
		return -ENOMEM;
	}
	memcpy(m->storage, p, len);
	r = exec_decode_body(&c, m, argc, envc, p);
	if (r < 0)
		proto_exec_free(m);
	return r;
}

static int decode_stream(struct cursor *c, uint8_t *stream)
{
	if (cur_u8(c, stream) < 0)
		return -EBADMSG;
	return *stream < PROTO_STREAMS ? 0 : -EBADMSG;
}

int proto_decode_data(const uint8_t *p, size_t len, uint8_t *stream,
		      const uint8_t **data, size_t *data_len)
{
	struct cursor c = { p, len };

	if (decode_stream(&c, stream) < 0 || c.left == 0)
		return -EBADMSG;
	*data = c.p;
	*data_len = c.left;
	return 0;
}

int proto_decode_eof(const uint8_t *p, size_t len, uint8_t *stream)
{
	struct cursor c = { p, len };

	if (decode_stream(&c, stream) < 0)
		return -EBADMSG;
	return cur_end(&c);
}

int proto_decode_credit(const uint8_t *p, size_t len, uint8_t *stream,
			uint32_t *bytes)
{
	struct cursor c = { p, len };

	if (decode_stream(&c, stream) < 0 || cur_u32(&c, bytes) < 0 ||
	    cur_end(&c) < 0)
		return -EBADMSG;
	if (*bytes == 0)
		return -EBADMSG;
	if (*bytes > PROTO_MAX_WINDOW)
		return -EOVERFLOW;
	return 0;
}

int proto_decode_signal(const uint8_t *p, size_t len, uint32_t *signo)
{
	struct cursor c = { p, len };

	if (cur_u32(&c, signo) < 0 || cur_end(&c) < 0)
		return -EBADMSG;
	if (*signo == 0 || *signo > PROTO_MAX_SIGNAL)
		return -EBADMSG;
	return 0;
}

int proto_decode_exit(const uint8_t *p, size_t len, struct proto_exit *m)
{
	struct cursor c = { p, len };
	uint8_t core;
	uint16_t reserved;

	if (cur_u8(&c, &m->how) < 0 || cur_u8(&c, &core) < 0 ||
	    cur_u16(&c, &reserved) < 0 || cur_u32(&c, &m->value) < 0 ||
	    cur_end(&c) < 0)
		return -EBADMSG;
	if (core > 1 || reserved != 0)
		return -EBADMSG;
	m->core_dumped = core;
	if (m->how == PROTO_EXITED)
		return m->value <= 255 && !core ? 0 : -EBADMSG;
	if (m->how == PROTO_SIGNALED)
		return m->value >= 1 && m->value <= PROTO_MAX_SIGNAL ? 0
								     : -EBADMSG;
	return -EBADMSG;
}

static bool is_printable_text(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

int proto_decode_error(const uint8_t *p, size_t len, struct proto_error *m)
{
	struct cursor c = { p, len };
	const char *text;
	size_t text_len;
	int r;

	if (cur_u32(&c, &m->code) < 0)
		return -EBADMSG;
	r = cur_str(&c, PROTO_MAX_ERROR + 1, &text, &text_len);
	if (r < 0)
		return r;
	if (cur_end(&c) < 0 || text_len == 0 ||
	    !is_printable_text(text, text_len))
		return -EBADMSG;
	memcpy(m->text, text, text_len + 1);
	return 0;
}

int proto_decode_ping(const uint8_t *p, size_t len, uint64_t *cookie)
{
	struct cursor c = { p, len };

	if (cur_u64(&c, cookie) < 0)
		return -EBADMSG;
	return cur_end(&c);
}

int proto_decode_shutdown(const uint8_t *p, size_t len, uint32_t *flags)
{
	struct cursor c = { p, len };

	if (cur_u32(&c, flags) < 0 || cur_end(&c) < 0)
		return -EBADMSG;
	return *flags & ~PROTO_SHUTDOWN_POWEROFF ? -EBADMSG : 0;
}

int proto_decode_winsize(const uint8_t *p, size_t len, uint16_t *rows,
			 uint16_t *cols)
{
	struct cursor c = { p, len };

	if (cur_u16(&c, rows) < 0 || cur_u16(&c, cols) < 0 || cur_end(&c) < 0)
		return -EBADMSG;
	return *rows && *cols ? 0 : -EBADMSG;
}

/* A PERSONA entry: key=value, the key not empty, no control character. */
static bool is_persona_entry(const char *s, size_t len)
{
	if (len == 0 || s[0] == '=' || !memchr(s, '=', len))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch == 0x7f)
			return false;
	}
	return true;
}

void proto_persona_free(struct proto_persona *m)
{
	free(m->entries);
	free(m->storage);
	memset(m, 0, sizeof(*m));
}

static int persona_decode_entries(struct cursor *c, struct proto_persona *m,
				  const uint8_t *base)
{
	for (uint32_t i = 0; i < m->count; i++) {
		const char *s;
		size_t len;
		int r = cur_str(c, PROTO_MAX_PAYLOAD, &s, &len);

		if (r < 0)
			return r;
		if (!is_persona_entry(s, len))
			return -EBADMSG;
		m->entries[i] =
			(char *)m->storage + ((const uint8_t *)s - base);
	}
	m->entries[m->count] = NULL;
	return cur_end(c);
}

int proto_decode_persona(const uint8_t *p, size_t len, struct proto_persona *m)
{
	struct cursor c = { p, len };
	int r;

	memset(m, 0, sizeof(*m));
	if (len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (cur_u32(&c, &m->count) < 0)
		return -EBADMSG;
	if (m->count > PROTO_MAX_PERSONA)
		return -EMSGSIZE;
	/* Every entry takes at least 5 bytes: check before allocating. */
	if ((uint64_t)m->count * 5 > c.left)
		return -EBADMSG;
	m->entries = calloc(m->count + 1, sizeof(char *));
	m->storage = malloc(len ? len : 1);
	if (!m->entries || !m->storage) {
		proto_persona_free(m);
		return -ENOMEM;
	}
	memcpy(m->storage, p, len);
	r = persona_decode_entries(&c, m, p);
	if (r < 0)
		proto_persona_free(m);
	return r;
}

int proto_decode_persona_answer(const uint8_t *p, size_t len,
				struct proto_persona_answer *m)
{
	struct cursor c = { p, len };
	const char *text;
	size_t text_len;
	int r;

	if (cur_u32(&c, &m->failures) < 0)
		return -EBADMSG;
	r = cur_str(&c, PROTO_MAX_ERROR + 1, &text, &text_len);
	if (r < 0)
		return r;
	if (cur_end(&c) < 0 || (m->failures == 0) != (text_len == 0) ||
	    !is_printable_text(text, text_len))
		return -EBADMSG;
	memcpy(m->text, text, text_len + 1);
	return 0;
}

int proto_credit_add(uint32_t *avail, uint32_t grant)
{
	if (grant == 0)
		return -EBADMSG;
	if (grant > PROTO_MAX_WINDOW || *avail > PROTO_MAX_WINDOW - grant)
		return -EOVERFLOW;
	*avail += grant;
	return 0;
}

/* ---- output queue ---- */

static int buf_reserve(struct proto_buf *b, size_t n)
{
	size_t need, cap;
	uint8_t *d;

	if (b->off > 0 && (b->off == b->len || b->off >= b->cap / 2)) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (n > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	need = b->len + n;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d)
		return -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

int proto_buf_append(struct proto_buf *b, const void *data, size_t len)
{
	int r = buf_reserve(b, len);

	if (r < 0)
		return r;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

void proto_buf_consume(struct proto_buf *b, size_t n)
{
	if (n > b->len - b->off)
		n = b->len - b->off;
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

ssize_t proto_buf_write(struct proto_buf *b, int fd)
{
	ssize_t n;

	if (proto_buf_pending(b) == 0)
		return 0;
	n = write(fd, proto_buf_head(b), proto_buf_pending(b));
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	proto_buf_consume(b, (size_t)n);
	return n;
}

void proto_buf_free(struct proto_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- encoders ---- */

/* Appends a header for @len payload bytes and returns where they go. */
static int put_header(struct proto_buf *b, uint8_t kind, uint16_t flags,
		      uint32_t session, size_t len, uint8_t **payload)
{
	struct proto_header h = {
		.version = PROTO_VERSION_MAX,
		.kind = kind,
		.flags = flags,
		.session = session,
		.length = (uint32_t)len,
	};
	int r;

	if (len > PROTO_MAX_PAYLOAD)
		return -E2BIG;
	r = buf_reserve(b, PROTO_HEADER_SIZE + len);
	if (r < 0)
		return r;
	proto_header_encode(b->data + b->len, &h);
	*payload = b->data + b->len + PROTO_HEADER_SIZE;
	b->len += PROTO_HEADER_SIZE + len;
	return 0;
}

int proto_put_frame(struct proto_buf *b, uint8_t kind, uint16_t flags,
		    uint32_t session, const void *payload, size_t len)
{
	uint8_t *p;
	int r = put_header(b, kind, flags, session, len, &p);

	if (r < 0)
		return r;
	if (len)
		memcpy(p, payload, len);
	return 0;
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t len)
{
	put32(p, (uint32_t)len + 1);
	memcpy(p + 4, s, len);
	p[4 + len] = '\0';
	return p + 5 + len;
}

int proto_put_hello(struct proto_buf *b, const struct proto_hello *m)
{
	size_t id_len = strnlen(m->identity, sizeof(m->identity));
	uint8_t *p;
	int r;

	if (id_len > PROTO_MAX_IDENTITY ||
	    !is_printable_identity(m->identity, id_len))
		return -EINVAL;
	r = put_header(b, PROTO_HELLO, 0, 0, 12 + 5 + id_len, &p);
	if (r < 0)
		return r;
	put16(p, m->min_version);
	put16(p + 2, m->max_version);
	put64(p + 4, m->nonce);
	put_str(p + 12, m->identity, id_len);
	return 0;
}

int proto_put_ready(struct proto_buf *b)
{
	return proto_put_frame(b, PROTO_READY, 0, 0, NULL, 0);
}

static size_t strv_count(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/* Size of the EXEC payload, or 0 if something is out of bounds. */
static size_t exec_payload_size(const struct proto_exec *m, size_t argc,
				size_t envc)
{
	size_t total = 32 + (size_t)m->ngroups * 4;
	size_t cwd_len = m->cwd ? strlen(m->cwd) : 0;

	if (argc == 0 || argc > PROTO_MAX_ARGC || envc > PROTO_MAX_ENVC ||
	    m->ngroups > PROTO_MAX_GROUPS || cwd_len + 1 > PROTO_MAX_PATH ||
	    !m->cwd || m->cwd[0] != '/' || m->argv[0][0] == '\0' ||
	    (m->flags & ~(uint32_t)PROTO_EXEC_FLAGS_ALL) ||
	    proto_exec_flags_clash(m->flags))
		return 0;
	total += 5 + cwd_len;
	for (size_t i = 0; i < argc + envc; i++) {
		const char *s = i < argc ? m->argv[i] : m->env[i - argc];
		size_t len = strlen(s);

		if (len + 1 > PROTO_MAX_STRING)
			return 0;
		if (i >= argc && (s[0] == '=' || !strchr(s, '=')))
			return 0;
		total += 5 + len;
		if (total > PROTO_MAX_EXEC)
			return 0;
	}
	return total;
}

static void exec_serialize(uint8_t *p, const struct proto_exec *m, size_t argc,
			   size_t envc)
{
	put32(p, m->uid);
	put32(p + 4, m->gid);
	put32(p + 8, m->flags);
	put32(p + 12, m->rank);
	put16(p + 16, m->rows);
	put16(p + 18, m->cols);
	put32(p + 20, m->ngroups);
	put32(p + 24, (uint32_t)argc);
	put32(p + 28, (uint32_t)envc);
	p += 32;
	for (uint32_t i = 0; i < m->ngroups; i++, p += 4)
		put32(p, m->groups[i]);
	p = put_str(p, m->cwd, strlen(m->cwd));
	for (size_t i = 0; i < argc; i++)
		p = put_str(p, m->argv[i], strlen(m->argv[i]));
	for (size_t i = 0; i < envc; i++)
		p = put_str(p, m->env[i], strlen(m->env[i]));
}

int proto_put_exec(struct proto_buf *b, uint32_t session,
		   const struct proto_exec *m)
{
	size_t argc = strv_count(m->argv), envc = strv_count(m->env);
	_cleanup_free_ uint8_t *payload = NULL;
	size_t size, off = 0;
	int r;

	if (session == 0 || !m->argv)
		return -EINVAL;
	size = exec_payload_size(m, argc, envc);
	if (size == 0)
		return -E2BIG;
	payload = malloc(size);
	if (!payload)
		return -ENOMEM;
	exec_serialize(payload, m, argc, envc);
	do {
		size_t chunk = size - off;
		uint16_t flags = 0;

		if (chunk > PROTO_MAX_PAYLOAD) {
			chunk = PROTO_MAX_PAYLOAD;
			flags = PROTO_FLAG_MORE;
		}
		r = proto_put_frame(b, PROTO_EXEC, flags, session,
				    payload + off, chunk);
		if (r < 0)
			return r;
		off += chunk;
	} while (off < size);
	return 0;
}

int proto_put_data(struct proto_buf *b, uint32_t session, uint8_t stream,
		   const void *data, size_t len)
{
	uint8_t *p;
	int r;

	if (session == 0 || stream >= PROTO_STREAMS || len == 0 ||
	    len > PROTO_MAX_DATA)
		return -EINVAL;
	r = put_header(b, PROTO_DATA, 0, session, len + 1, &p);
	if (r < 0)
		return r;
	p[0] = stream;
	memcpy(p + 1, data, len);
	return 0;
}

int proto_put_eof(struct proto_buf *b, uint32_t session, uint8_t stream)
{
	if (session == 0 || stream >= PROTO_STREAMS)
		return -EINVAL;
	return proto_put_frame(b, PROTO_EOF, 0, session, &stream, 1);
}

int proto_put_credit(struct proto_buf *b, uint32_t session, uint8_t stream,
		     uint32_t bytes)
{
	uint8_t p[5];

	if (session == 0 || stream >= PROTO_STREAMS || bytes == 0 ||
	    bytes > PROTO_MAX_WINDOW)
		return -EINVAL;
	p[0] = stream;
	put32(p + 1, bytes);
	return proto_put_frame(b, PROTO_CREDIT, 0, session, p, sizeof(p));
}

int proto_put_signal(struct proto_buf *b, uint32_t session, uint32_t signo)
{
	uint8_t p[4];

	if (session == 0 || signo == 0 || signo > PROTO_MAX_SIGNAL)
		return -EINVAL;
	put32(p, signo);
	return proto_put_frame(b, PROTO_SIGNAL, 0, session, p, sizeof(p));
}

int proto_put_exit(struct proto_buf *b, uint32_t session,
		   const struct proto_exit *m)
{
	uint8_t p[8];

	if (session == 0)
		return -EINVAL;
	if (m->how == PROTO_EXITED) {
		if (m->value > 255 || m->core_dumped)
			return -EINVAL;
	} else if (m->how == PROTO_SIGNALED) {
		if (m->value == 0 || m->value > PROTO_MAX_SIGNAL)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	p[0] = m->how;
	p[1] = m->core_dumped ? 1 : 0;
	put16(p + 2, 0);
	put32(p + 4, m->value);
	return proto_put_frame(b, PROTO_EXIT, 0, session, p, sizeof(p));
}

/* A u32 and a text of at most PROTO_MAX_ERROR bytes, its control bytes but
 * newline and tab made '?': ERROR and the PERSONA answer. */
static int put_number_text(struct proto_buf *b, enum proto_kind kind,
			   uint32_t session, uint32_t number, const char *text,
			   size_t len)
{
	uint8_t *p;
	int r;

	r = put_header(b, kind, 0, session, 4 + 5 + len, &p);
	if (r < 0)
		return r;
	put32(p, number);
	put_str(p + 4, text, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = p[8 + i];

		if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f)
			p[8 + i] = '?';
	}
	return 0;
}

int proto_put_error(struct proto_buf *b, uint32_t session, uint32_t code,
		    const char *text)
{
	size_t len = strnlen(text, PROTO_MAX_ERROR);

	if (len == 0) {
		text = "error";
		len = 5;
	}
	return put_number_text(b, PROTO_ERROR, session, code, text, len);
}

int proto_put_ping(struct proto_buf *b, uint8_t kind, uint32_t session,
		   uint64_t cookie)
{
	uint8_t p[8];

	if (kind != PROTO_PING && kind != PROTO_PONG)
		return -EINVAL;
	put64(p, cookie);
	return proto_put_frame(b, kind, 0, session, p, sizeof(p));
}

int proto_put_shutdown(struct proto_buf *b, uint32_t flags)
{
	uint8_t p[4];

	if (flags & ~PROTO_SHUTDOWN_POWEROFF)
		return -EINVAL;
	put32(p, flags);
	return proto_put_frame(b, PROTO_SHUTDOWN, 0, 0, p, sizeof(p));
}

int proto_put_winsize(struct proto_buf *b, uint32_t session, uint16_t rows,
		      uint16_t cols)
{
	uint8_t p[4];

	if (session == 0 || rows == 0 || cols == 0)
		return -EINVAL;
	put16(p, rows);
	put16(p + 2, cols);
	return proto_put_frame(b, PROTO_WINSIZE, 0, session, p, sizeof(p));
}

int proto_put_persona(struct proto_buf *b, char *const *entries)
{
	size_t count = strv_count(entries), total = 4;
	uint8_t *p;
	int r;

	if (count > PROTO_MAX_PERSONA)
		return -E2BIG;
	for (size_t i = 0; i < count; i++) {
		size_t len = strlen(entries[i]);

		if (!is_persona_entry(entries[i], len))
			return -EINVAL;
		total += 5 + len;
		if (total > PROTO_MAX_PAYLOAD)
			return -E2BIG;
	}
	r = put_header(b, PROTO_PERSONA, 0, 0, total, &p);
	if (r < 0)
		return r;
	put32(p, (uint32_t)count);
	p += 4;
	for (size_t i = 0; i < count; i++)
		p = put_str(p, entries[i], strlen(entries[i]));
	return 0;
}

int proto_put_persona_answer(struct proto_buf *b, uint32_t failures,
			     const char *text)
{
	size_t len = failures ? strnlen(text, PROTO_MAX_ERROR) : 0;

	if (!failures)
		text = "";
	else if (len == 0) {
		text = "failed";
		len = 6;
	}
	return put_number_text(b, PROTO_PERSONA, 0, failures, text, len);
}

/* ---- reader ---- */

int proto_reader_init(struct proto_reader *r)
{
	memset(r, 0, sizeof(*r));
	r->buf = malloc(PROTO_READER_CAPACITY);
	return r->buf ? 0 : -ENOMEM;
}

static void reader_drop_msg(struct proto_reader *r)
{
	free(r->msg);
	r->msg = NULL;
	r->msg_len = r->msg_cap = 0;
	r->msg_open = r->msg_done = false;
}

void proto_reader_free(struct proto_reader *r)
{
	reader_drop_msg(r);
	free(r->buf);
	r->buf = NULL;
}

void proto_reader_reset(struct proto_reader *r, bool resync)
{
	reader_drop_msg(r);
	r->start = r->end = 0;
	r->resync = resync;
}

/* Moves the unread bytes to the front, but only when the free tail is
 * short: a frame's bytes are moved at most once or twice. */
static void reader_compact(struct proto_reader *r)
{
	if (r->start == r->end) {
		r->start = r->end = 0;
		return;
	}
	if (r->start == 0 || PROTO_READER_CAPACITY - r->end >= PROTO_MAX_FRAME)
		return;
	memmove(r->buf, r->buf + r->start, r->end - r->start);
	r->end -= r->start;
	r->start = 0;
}

size_t proto_reader_feed(struct proto_reader *r, const void *data, size_t n)
{
	reader_compact(r);
	if (n > PROTO_READER_CAPACITY - r->end)
		n = PROTO_READER_CAPACITY - r->end;
	memcpy(r->buf + r->end, data, n);
	r->end += n;
	return n;
}

ssize_t proto_reader_read(struct proto_reader *r, int fd)
{
	ssize_t n;

	reader_compact(r);
	if (r->end == PROTO_READER_CAPACITY)
		return -ENOBUFS;
	n = read(fd, r->buf + r->end, PROTO_READER_CAPACITY - r->end);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	r->end += (size_t)n;
	return n;
}

int proto_reader_pull(struct proto_reader *r, int fd)
{
	ssize_t n = proto_reader_read(r, fd);

	if (n == 0)
		return -EPIPE;
	if (n < 0 && n != -EAGAIN && n != -ENOBUFS)
		return (int)n;
	return 0;
}

/* Skips to the first valid HELLO header; false if none is buffered yet. */
static bool reader_resync(struct proto_reader *r)
{
	struct proto_header h;

	while (r->end - r->start >= PROTO_HEADER_SIZE) {
		const uint8_t *p = r->buf + r->start;

		if (proto_header_decode(p, PROTO_HEADER_SIZE, &h) == 0 &&
		    h.kind == PROTO_HELLO) {
			r->resync = false;
			return true;
		}
		r->start++;
	}
	return false;
}

static int reader_fail(struct proto_reader *r, int err)
{
	reader_drop_msg(r);
	r->resync = true;
	if (r->start < r->end)
		r->start++;
	return err;
}

/* Adds one frame of a split message; 1 when the message is whole. */
static int reader_assemble(struct proto_reader *r, const struct proto_header *h,
			   const uint8_t *payload)
{
	if (!r->msg_open) {
		r->msg_open = true;
		r->msg_hdr = *h;
		r->msg_len = 0;
	} else if (h->kind != r->msg_hdr.kind ||
		   h->session != r->msg_hdr.session) {
		return -EBADMSG;
	}
	if (h->length > PROTO_MAX_EXEC - r->msg_len)
		return -EMSGSIZE;
	if (r->msg_len + h->length > r->msg_cap) {
		size_t cap = r->msg_cap ? r->msg_cap : PROTO_MAX_PAYLOAD;
		uint8_t *m;

		while (cap < r->msg_len + h->length)
			cap *= 2;
		if (cap > PROTO_MAX_EXEC)
			cap = PROTO_MAX_EXEC;
		m = realloc(r->msg, cap);
		if (!m)
			return -ENOMEM;
		r->msg = m;
		r->msg_cap = cap;
	}
	if (h->length)
		memcpy(r->msg + r->msg_len, payload, h->length);
	r->msg_len += h->length;
	return (h->flags & PROTO_FLAG_MORE) ? 0 : 1;
}

int proto_reader_next(struct proto_reader *r, struct proto_frame *f)
{
	for (;;) {
		struct proto_header h;
		const uint8_t *payload;
		int k;

		if (r->msg_done)
			reader_drop_msg(r);
		if (r->resync && !reader_resync(r))
			return 0;
		k = proto_header_decode(r->buf + r->start, r->end - r->start,
					&h);
		if (k == -EAGAIN)
			return 0;
		if (k < 0)
			return reader_fail(r, k);
		if (r->end - r->start < PROTO_HEADER_SIZE + h.length)
			return 0;
		payload = r->buf + r->start + PROTO_HEADER_SIZE;
		if (!r->msg_open && !(h.flags & PROTO_FLAG_MORE)) {
			r->start += PROTO_HEADER_SIZE + h.length;
			*f = (struct proto_frame){ h, payload, h.length };
			return 1;
		}
		k = reader_assemble(r, &h, payload);
		if (k < 0)
			return reader_fail(r, k);
		r->start += PROTO_HEADER_SIZE + h.length;
		if (k == 1) {
			h.flags = 0;
			h.length = (uint32_t)r->msg_len;
			*f = (struct proto_frame){ h, r->msg, r->msg_len };
			r->msg_done = true;
			return 1;
		}
	}
}
