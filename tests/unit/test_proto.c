/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "channel/proto.h"

/* Encodes with @b, then reads the single frame back through a reader. */
static struct proto_reader reader;
static struct proto_buf out;

static int setup(void **state)
{
	memset(&out, 0, sizeof(out));
	return proto_reader_init(&reader);
}

static int teardown(void **state)
{
	proto_reader_free(&reader);
	proto_buf_free(&out);
	return 0;
}

static void read_back(struct proto_frame *f, uint8_t kind)
{
	size_t n = proto_buf_pending(&out);

	assert_int_equal(proto_reader_feed(&reader, proto_buf_head(&out), n),
			 n);
	proto_buf_consume(&out, n);
	assert_int_equal(proto_reader_next(&reader, f), 1);
	assert_int_equal(f->hdr.kind, kind);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void make_header(uint8_t *h, uint8_t kind, uint32_t session,
			uint32_t len)
{
	struct proto_header hdr = { 1, kind, 0, session, len };

	proto_header_encode(h, &hdr);
}

/* ---- round trips ---- */

static void test_hello_roundtrip(void **state)
{
	struct proto_hello in = { 1, 1, 0x0102030405060708ull, "guest-42" }, m;
	struct proto_frame f;

	assert_int_equal(proto_put_hello(&out, &in), 0);
	read_back(&f, PROTO_HELLO);
	assert_int_equal(f.hdr.session, 0);
	assert_int_equal(proto_decode_hello(f.payload, f.length, &m), 0);
	assert_int_equal(m.nonce, in.nonce);
	assert_string_equal(m.identity, "guest-42");
	assert_int_equal(m.min_version, 1);
	assert_int_equal(m.max_version, 1);
}

static void test_ready_roundtrip(void **state)
{
	struct proto_frame f;

	assert_int_equal(proto_put_ready(&out), 0);
	read_back(&f, PROTO_READY);
	assert_int_equal(proto_decode_ready(f.payload, f.length), 0);
}

static void test_exec_roundtrip(void **state)
{
	char *argv[] = { "/bin/echo", "hello", "", NULL };
	char *env[] = { "PATH=/bin", "EMPTY=", NULL };
	uint32_t groups[] = { 100, 200 };
	struct proto_exec in = {
		.uid = 1000,
		.gid = 1000,
		.flags = PROTO_EXEC_PTY,
		.rank = 7,
		.rows = 24,
		.cols = 80,
		.ngroups = 2,
		.groups = groups,
		.cwd = "/home/u",
		.argv = argv,
		.env = env,
	};
	struct proto_exec m;
	struct proto_frame f;

	assert_int_equal(proto_put_exec(&out, 5, &in), 0);
	read_back(&f, PROTO_EXEC);
	assert_int_equal(f.hdr.session, 5);
	assert_int_equal(proto_decode_exec(f.payload, f.length, &m), 0);
	assert_int_equal(m.uid, 1000);
	assert_int_equal(m.gid, 1000);
	assert_int_equal(m.flags, PROTO_EXEC_PTY);
	assert_int_equal(m.rank, 7);
	assert_int_equal(m.rows, 24);
	assert_int_equal(m.cols, 80);
	assert_int_equal(m.ngroups, 2);
	assert_int_equal(m.groups[1], 200);
	assert_string_equal(m.cwd, "/home/u");
	assert_string_equal(m.argv[0], "/bin/echo");
	assert_string_equal(m.argv[2], "");
	assert_null(m.argv[3]);
	assert_string_equal(m.env[1], "EMPTY=");
	assert_null(m.env[2]);
	proto_exec_free(&m);
}

/* An environment bigger than one frame is split and reassembled. */
static void test_exec_split(void **state)
{
	static char big[100000];
	char *argv[] = { "x", NULL };
	char *env[] = { big, big, NULL };
	struct proto_exec in = { .cwd = "/", .argv = argv, .env = env };
	struct proto_exec m;
	struct proto_frame f;
	size_t n;

	memset(big, 'a', sizeof(big) - 1);
	big[0] = 'A';
	big[1] = '=';
	assert_int_equal(proto_put_exec(&out, 1, &in), 0);
	n = proto_buf_pending(&out);
	assert_true(n > 2 * PROTO_MAX_FRAME);
	/* Feed in pieces, as a socket would. */
	for (size_t off = 0; off < n;) {
		size_t k = proto_reader_feed(&reader, proto_buf_head(&out),
					     n - off > 7000 ? 7000 : n - off);
		proto_buf_consume(&out, k);
		off += k;
		if (off < n)
			assert_int_equal(proto_reader_next(&reader, &f), 0);
	}
	assert_int_equal(proto_reader_next(&reader, &f), 1);
	assert_int_equal(f.hdr.kind, PROTO_EXEC);
	assert_int_equal(proto_decode_exec(f.payload, f.length, &m), 0);
	assert_string_equal(m.env[1], big);
	proto_exec_free(&m);
	assert_int_equal(proto_reader_next(&reader, &f), 0);
}

static void test_small_roundtrips(void **state)
{
	struct proto_exit ex = { PROTO_SIGNALED, true, 11 }, ex2;
	struct proto_error er;
	struct proto_frame f;
	const uint8_t *data;
	size_t len;
	uint8_t stream;
	uint32_t v;
	uint64_t cookie;
	uint16_t rows, cols;

	assert_int_equal(proto_put_data(&out, 3, PROTO_STDOUT, "abc", 3), 0);
	read_back(&f, PROTO_DATA);
	assert_int_equal(
		proto_decode_data(f.payload, f.length, &stream, &data, &len),
		0);
	assert_int_equal(stream, PROTO_STDOUT);
	assert_int_equal(len, 3);
	assert_memory_equal(data, "abc", 3);

	assert_int_equal(proto_put_eof(&out, 3, PROTO_STDERR), 0);
	read_back(&f, PROTO_EOF);
	assert_int_equal(proto_decode_eof(f.payload, f.length, &stream), 0);
	assert_int_equal(stream, PROTO_STDERR);

	assert_int_equal(proto_put_credit(&out, 3, PROTO_PMI, 4096), 0);
	read_back(&f, PROTO_CREDIT);
	assert_int_equal(proto_decode_credit(f.payload, f.length, &stream, &v),
			 0);
	assert_int_equal(stream, PROTO_PMI);
	assert_int_equal(v, 4096);

	assert_int_equal(proto_put_signal(&out, 3, 15), 0);
	read_back(&f, PROTO_SIGNAL);
	assert_int_equal(proto_decode_signal(f.payload, f.length, &v), 0);
	assert_int_equal(v, 15);

	assert_int_equal(proto_put_exit(&out, 3, &ex), 0);
	read_back(&f, PROTO_EXIT);
	assert_int_equal(proto_decode_exit(f.payload, f.length, &ex2), 0);
	assert_int_equal(ex2.how, PROTO_SIGNALED);
	assert_true(ex2.core_dumped);
	assert_int_equal(ex2.value, 11);

	assert_int_equal(proto_put_error(&out, 0, 5, "the guest\x1b[2J died"),
			 0);
	read_back(&f, PROTO_ERROR);
	assert_int_equal(proto_decode_error(f.payload, f.length, &er), 0);
	assert_int_equal(er.code, 5);
	assert_string_equal(er.text, "the guest?[2J died");

	assert_int_equal(proto_put_ping(&out, PROTO_PONG, 0, 99), 0);
	read_back(&f, PROTO_PONG);
	assert_int_equal(proto_decode_ping(f.payload, f.length, &cookie), 0);
	assert_int_equal(cookie, 99);

	assert_int_equal(proto_put_shutdown(&out, PROTO_SHUTDOWN_POWEROFF), 0);
	read_back(&f, PROTO_SHUTDOWN);
	assert_int_equal(proto_decode_shutdown(f.payload, f.length, &v), 0);
	assert_int_equal(v, PROTO_SHUTDOWN_POWEROFF);

	assert_int_equal(proto_put_winsize(&out, 3, 50, 132), 0);
	read_back(&f, PROTO_WINSIZE);
	assert_int_equal(
		proto_decode_winsize(f.payload, f.length, &rows, &cols), 0);
	assert_int_equal(rows, 50);
	assert_int_equal(cols, 132);
}

/* ---- malformed headers ---- */

static void test_header_malformed(void **state)
{
	struct proto_header h;
	uint8_t b[PROTO_HEADER_SIZE];

	make_header(b, PROTO_DATA, 1, 10);
	assert_int_equal(proto_header_decode(b, 15, &h), -EAGAIN);
	assert_int_equal(proto_header_decode(b, 16, &h), 0);

	b[0] = 'X'; /* bad magic */
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_DATA, 1, 10);
	b[2] = 2; /* bad version */
	assert_int_equal(proto_header_decode(b, 16, &h), -EPROTO);
	b[2] = 0;
	assert_int_equal(proto_header_decode(b, 16, &h), -EPROTO);
	make_header(b, 0, 1, 10); /* unknown kinds */
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_KIND_MAX + 1, 1, 10);
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_DATA, 1, PROTO_MAX_PAYLOAD + 1); /* oversized */
	assert_int_equal(proto_header_decode(b, 16, &h), -EMSGSIZE);
	make_header(b, PROTO_DATA, 1, 0xffffffffu);
	assert_int_equal(proto_header_decode(b, 16, &h), -EMSGSIZE);
	make_header(b, PROTO_DATA, 0, 2); /* session 0 where forbidden */
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_EXEC, 0, 2);
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_WINSIZE, 0, 4);
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_HELLO, 3, 2); /* session where 0 is required */
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_ERROR, 0, 2); /* either is fine */
	assert_int_equal(proto_header_decode(b, 16, &h), 0);
	make_header(b, PROTO_DATA, 1, 2); /* unknown flag, reserved bits */
	b[13] = 0x2;
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_DATA, 1, 2);
	b[15] = 1;
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_DATA, 1, PROTO_MAX_PAYLOAD); /* MORE on DATA */
	b[13] = 1;
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	make_header(b, PROTO_EXEC, 1, 100); /* MORE on a short frame */
	b[13] = 1;
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
}

/* ---- malformed payloads ---- */

static void test_hello_malformed(void **state)
{
	uint8_t p[64] = { 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9 };
	struct proto_hello m;

	put_be32(p + 12, 3);
	memcpy(p + 16, "ab", 3);
	assert_int_equal(proto_decode_hello(p, 19, &m), 0);
	assert_int_equal(proto_decode_hello(p, 18, &m), -EBADMSG); /* trunc */
	assert_int_equal(proto_decode_hello(p, 20, &m), -EBADMSG); /* extra */
	assert_int_equal(proto_decode_hello(p, 5, &m), -EBADMSG);
	p[18] = 'x'; /* not terminated */
	assert_int_equal(proto_decode_hello(p, 19, &m), -EBADMSG);
	p[18] = 0;
	p[17] = 0; /* NUL inside */
	assert_int_equal(proto_decode_hello(p, 19, &m), -EBADMSG);
	p[17] = '\n'; /* not printable */
	assert_int_equal(proto_decode_hello(p, 19, &m), -EBADMSG);
	p[17] = 'b';
	put_be32(p + 12, 0); /* zero-length string */
	assert_int_equal(proto_decode_hello(p, 16, &m), -EBADMSG);
	put_be32(p + 12, 0xfffffff0u); /* length past the buffer */
	assert_int_equal(proto_decode_hello(p, 19, &m), -EMSGSIZE);
	put_be32(p + 12, 40);
	assert_int_equal(proto_decode_hello(p, 19, &m), -EBADMSG);
	put_be32(p + 12, 3);
	p[1] = 2; /* min > max */
	assert_int_equal(proto_decode_hello(p, 19, &m), -EPROTO);
	p[1] = 0; /* min 0 */
	assert_int_equal(proto_decode_hello(p, 19, &m), -EPROTO);
}

/* A valid EXEC payload to break in different ways. */
static size_t exec_payload(uint8_t *p)
{
	char *argv[] = { "/bin/true", NULL };
	char *env[] = { "A=1", NULL };
	uint32_t groups[] = { 5 };
	struct proto_exec in = { .uid = 1,
				 .gid = 1,
				 .ngroups = 1,
				 .groups = groups,
				 .cwd = "/",
				 .argv = argv,
				 .env = env };
	struct proto_buf b = { 0 };
	size_t n;

	assert_int_equal(proto_put_exec(&b, 1, &in), 0);
	n = proto_buf_pending(&b) - PROTO_HEADER_SIZE;
	memcpy(p, proto_buf_head(&b) + PROTO_HEADER_SIZE, n);
	proto_buf_free(&b);
	return n;
}

static void test_exec_malformed(void **state)
{
	/* layout: 0 uid 4 gid 8 flags 12 rank 16 rows 18 cols 20 ngroups
	 * 24 argc 28 envc 32 group 36 cwd(4+2) 42 argv0(4+10) 56 env(4+4) */
	uint8_t p[256], q[256];
	struct proto_exec m;
	size_t n = exec_payload(p);

	assert_int_equal(n, 64);
	assert_int_equal(proto_decode_exec(p, n, &m), 0);
	proto_exec_free(&m);
	for (size_t i = 0; i < n; i++) /* every truncation */
		assert_int_not_equal(proto_decode_exec(p, i, &m), 0);
	assert_int_equal(proto_decode_exec(p, n + 1, &m), -EBADMSG);

#define BREAK(off, val, err)                                          \
	do {                                                          \
		memcpy(q, p, n);                                      \
		put_be32(q + (off), (val));                           \
		assert_int_equal(proto_decode_exec(q, n, &m), (err)); \
	} while (0)
	BREAK(8, 0x80, -EBADMSG);			      /* unknown flag */
	BREAK(8, PROTO_EXEC_PMI | PROTO_EXEC_PMIX, -EBADMSG); /* one stream */
	BREAK(20, PROTO_MAX_GROUPS + 1, -EMSGSIZE); /* too many groups */
	BREAK(24, PROTO_MAX_ARGC + 1, -EMSGSIZE);   /* too many args */
	BREAK(28, PROTO_MAX_ENVC + 1, -EMSGSIZE);   /* too many env */
	BREAK(24, 0, -EBADMSG);			    /* argc 0 */
	BREAK(24, 1000, -EBADMSG);		    /* counts > buffer */
	BREAK(20, 1000, -EBADMSG);
	BREAK(0, 0xffffffffu, -EBADMSG);	    /* uid -1 */
	BREAK(32, 0xffffffffu, -EBADMSG);	    /* group -1 */
	BREAK(36, 0, -EBADMSG);			    /* empty cwd */
	BREAK(36, PROTO_MAX_PATH + 1, -EMSGSIZE);   /* long cwd */
	BREAK(42, PROTO_MAX_STRING + 1, -EMSGSIZE); /* long arg */
	BREAK(42, 0x7fffffff, -EMSGSIZE);
	BREAK(42, 11, -EBADMSG); /* string length runs into the next */
	memcpy(q, p, n);
	q[40] = 'x'; /* cwd "/" not absolute */
	assert_int_equal(proto_decode_exec(q, n, &m), -EBADMSG);
	memcpy(q, p, n);
	q[46 + 9] = 'x'; /* argv0 not terminated */
	assert_int_equal(proto_decode_exec(q, n, &m), -EBADMSG);
	memcpy(q, p, n);
	q[46] = '\0'; /* NUL inside argv0 */
	assert_int_equal(proto_decode_exec(q, n, &m), -EBADMSG);
	memcpy(q, p, n);
	q[61] = 'x'; /* env entry without '=' */
	assert_int_equal(proto_decode_exec(q, n, &m), -EBADMSG);
	memcpy(q, p, n);
	q[60] = '='; /* env entry starting with '=' */
	assert_int_equal(proto_decode_exec(q, n, &m), -EBADMSG);
	assert_int_equal(proto_decode_exec(p, PROTO_MAX_EXEC + 1, &m),
			 -EMSGSIZE);
#undef BREAK
}

static void test_exec_encode_refuses(void **state)
{
	char *argv[] = { "", NULL };
	char *noargv[] = { NULL };
	char *ok[] = { "x", NULL };
	char *badenv[] = { "NOEQUALS", NULL };
	struct proto_exec m = { .cwd = "/", .argv = argv };

	assert_int_equal(proto_put_exec(&out, 1, &m), -E2BIG);
	m.argv = noargv;
	assert_int_equal(proto_put_exec(&out, 1, &m), -E2BIG);
	m.argv = ok;
	assert_int_equal(proto_put_exec(&out, 0, &m), -EINVAL);
	m.cwd = "relative";
	assert_int_equal(proto_put_exec(&out, 1, &m), -E2BIG);
	m.cwd = "/";
	m.env = badenv;
	assert_int_equal(proto_put_exec(&out, 1, &m), -E2BIG);
	assert_int_equal(proto_buf_pending(&out), 0);
}

static void test_small_malformed(void **state)
{
	uint8_t p[16] = { 0 };
	struct proto_exit ex;
	struct proto_error er;
	const uint8_t *data;
	size_t len;
	uint8_t stream;
	uint32_t v;
	uint64_t c;
	uint16_t r16, c16;

	/* DATA: zero-length data, bad stream, empty payload */
	assert_int_equal(proto_decode_data(p, 1, &stream, &data, &len),
			 -EBADMSG);
	assert_int_equal(proto_decode_data(p, 0, &stream, &data, &len),
			 -EBADMSG);
	p[0] = PROTO_STREAMS;
	assert_int_equal(proto_decode_data(p, 4, &stream, &data, &len),
			 -EBADMSG);
	/* EOF */
	assert_int_equal(proto_decode_eof(p, 1, &stream), -EBADMSG);
	p[0] = 1;
	assert_int_equal(proto_decode_eof(p, 1, &stream), 0);
	assert_int_equal(proto_decode_eof(p, 2, &stream), -EBADMSG);
	assert_int_equal(proto_decode_eof(p, 0, &stream), -EBADMSG);
	/* CREDIT: zero, above the window, truncated */
	memset(p, 0, sizeof(p));
	assert_int_equal(proto_decode_credit(p, 5, &stream, &v), -EBADMSG);
	put_be32(p + 1, PROTO_MAX_WINDOW + 1);
	assert_int_equal(proto_decode_credit(p, 5, &stream, &v), -EOVERFLOW);
	assert_int_equal(proto_decode_credit(p, 4, &stream, &v), -EBADMSG);
	/* SIGNAL */
	memset(p, 0, sizeof(p));
	assert_int_equal(proto_decode_signal(p, 4, &v), -EBADMSG);
	put_be32(p, 65);
	assert_int_equal(proto_decode_signal(p, 4, &v), -EBADMSG);
	put_be32(p, 9);
	assert_int_equal(proto_decode_signal(p, 3, &v), -EBADMSG);
	assert_int_equal(proto_decode_signal(p, 5, &v), -EBADMSG);
	/* EXIT */
	memset(p, 0, sizeof(p));
	assert_int_equal(proto_decode_exit(p, 8, &ex), -EBADMSG); /* how 0 */
	p[0] = PROTO_EXITED;
	put_be32(p + 4, 256);
	assert_int_equal(proto_decode_exit(p, 8, &ex), -EBADMSG);
	put_be32(p + 4, 7);
	assert_int_equal(proto_decode_exit(p, 8, &ex), 0);
	assert_int_equal(ex.value, 7);
	p[1] = 1; /* core dump without a signal */
	assert_int_equal(proto_decode_exit(p, 8, &ex), -EBADMSG);
	p[0] = PROTO_SIGNALED;
	p[1] = 2;
	assert_int_equal(proto_decode_exit(p, 8, &ex), -EBADMSG);
	p[1] = 0;
	put_be32(p + 4, 0);
	assert_int_equal(proto_decode_exit(p, 8, &ex), -EBADMSG);
	put_be32(p + 4, 11);
	p[3] = 1; /* reserved */
	assert_int_equal(proto_decode_exit(p, 8, &ex), -EBADMSG);
	p[3] = 0;
	assert_int_equal(proto_decode_exit(p, 7, &ex), -EBADMSG);
	/* ERROR: empty text, non-terminated, control characters */
	memset(p, 0, sizeof(p));
	put_be32(p + 4, 1);
	assert_int_equal(proto_decode_error(p, 9, &er), -EBADMSG);
	put_be32(p + 4, 3);
	memcpy(p + 8, "abc", 3);
	assert_int_equal(proto_decode_error(p, 11, &er), -EBADMSG);
	p[10] = 0;
	assert_int_equal(proto_decode_error(p, 11, &er), 0);
	p[8] = 0x1b;
	assert_int_equal(proto_decode_error(p, 11, &er), -EBADMSG);
	put_be32(p + 4, PROTO_MAX_ERROR + 2);
	assert_int_equal(proto_decode_error(p, 11, &er), -EMSGSIZE);
	/* PING, READY, SHUTDOWN */
	assert_int_equal(proto_decode_ping(p, 7, &c), -EBADMSG);
	assert_int_equal(proto_decode_ping(p, 9, &c), -EBADMSG);
	assert_int_equal(proto_decode_ready(p, 1), -EBADMSG);
	memset(p, 0, sizeof(p));
	p[3] = 2;
	assert_int_equal(proto_decode_shutdown(p, 4, &v), -EBADMSG);
	assert_int_equal(proto_decode_shutdown(p, 3, &v), -EBADMSG);
	/* WINSIZE: zero rows or columns, truncated, trailing bytes */
	memset(p, 0, sizeof(p));
	p[1] = 24;
	assert_int_equal(proto_decode_winsize(p, 4, &r16, &c16), -EBADMSG);
	p[3] = 80;
	assert_int_equal(proto_decode_winsize(p, 4, &r16, &c16), 0);
	assert_int_equal(proto_decode_winsize(p, 3, &r16, &c16), -EBADMSG);
	assert_int_equal(proto_decode_winsize(p, 5, &r16, &c16), -EBADMSG);
	assert_int_equal(proto_put_winsize(&out, 0, 1, 1), -EINVAL);
	proto_buf_free(&out);
}

static void test_credit_overflow(void **state)
{
	uint32_t avail = PROTO_WINDOW;

	assert_int_equal(proto_credit_add(&avail, 0), -EBADMSG);
	assert_int_equal(proto_credit_add(&avail, PROTO_MAX_WINDOW),
			 -EOVERFLOW);
	assert_int_equal(avail, PROTO_WINDOW);
	assert_int_equal(proto_credit_add(&avail, 0xffffffffu), -EOVERFLOW);
	assert_int_equal(
		proto_credit_add(&avail, PROTO_MAX_WINDOW - PROTO_WINDOW), 0);
	assert_int_equal(avail, PROTO_MAX_WINDOW);
	assert_int_equal(proto_credit_add(&avail, 1), -EOVERFLOW);
	assert_int_equal(proto_put_credit(&out, 1, 0, PROTO_MAX_WINDOW + 1),
			 -EINVAL);
}

/* ---- reader ---- */

static void test_reader_resync(void **state)
{
	struct proto_hello hello = { 1, 1, 7, "" };
	struct proto_frame f;

	/* Garbage, then a DATA frame (skipped while resyncing), then HELLO. */
	proto_reader_reset(&reader, true);
	assert_int_equal(proto_reader_feed(&reader, "garbage!", 8), 8);
	assert_int_equal(proto_put_data(&out, 1, 1, "x", 1), 0);
	assert_int_equal(proto_put_hello(&out, &hello), 0);
	assert_int_equal(proto_put_ready(&out), 0);
	read_back(&f, PROTO_HELLO);
	assert_int_equal(proto_reader_next(&reader, &f), 1);
	assert_int_equal(f.hdr.kind, PROTO_READY);
	assert_int_equal(proto_reader_next(&reader, &f), 0);
}

static void test_reader_errors(void **state)
{
	uint8_t b[PROTO_HEADER_SIZE];
	struct proto_hello hello = { 1, 1, 7, "g" };
	struct proto_frame f;

	/* A bad header is reported once, then the reader resyncs. */
	make_header(b, PROTO_DATA, 1, PROTO_MAX_PAYLOAD + 1);
	proto_reader_feed(&reader, b, sizeof(b));
	assert_int_equal(proto_reader_next(&reader, &f), -EMSGSIZE);
	assert_int_equal(proto_reader_next(&reader, &f), 0);
	assert_int_equal(proto_put_hello(&out, &hello), 0);
	read_back(&f, PROTO_HELLO);

	/* Another frame between the parts of a split EXEC. */
	proto_reader_reset(&reader, false);
	make_header(b, PROTO_EXEC, 1, PROTO_MAX_PAYLOAD);
	b[13] = 1;
	proto_buf_append(&out, b, sizeof(b));
	for (unsigned i = 0; i < PROTO_MAX_PAYLOAD; i++)
		proto_buf_append(&out, "", 1);
	proto_put_data(&out, 1, 0, "x", 1);
	while (proto_buf_pending(&out)) {
		size_t k = proto_reader_feed(&reader, proto_buf_head(&out),
					     proto_buf_pending(&out));
		proto_buf_consume(&out, k);
		if (proto_reader_next(&reader, &f) < 0)
			break;
	}
	assert_true(reader.resync);
	proto_buf_consume(&out, proto_buf_pending(&out));

	/* A split EXEC larger than PROTO_MAX_EXEC. */
	proto_reader_reset(&reader, false);
	for (unsigned i = 0; i <= PROTO_MAX_EXEC / PROTO_MAX_PAYLOAD; i++) {
		static uint8_t zero[PROTO_MAX_PAYLOAD];
		int r;

		make_header(b, PROTO_EXEC, 1, PROTO_MAX_PAYLOAD);
		b[13] = 1;
		proto_reader_feed(&reader, b, sizeof(b));
		proto_reader_feed(&reader, zero, sizeof(zero));
		r = proto_reader_next(&reader, &f);
		if (i < PROTO_MAX_EXEC / PROTO_MAX_PAYLOAD)
			assert_int_equal(r, 0);
		else
			assert_int_equal(r, -EMSGSIZE);
	}
}

/* What a poll loop sees: a live empty stream, a frame, then end of file,
 * and a descriptor read() refuses. */
static void test_reader_pull(void **state)
{
	struct proto_frame f;
	int p[2];

	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	assert_int_equal(proto_reader_pull(&reader, p[0]), 0);
	assert_int_equal(proto_reader_next(&reader, &f), 0);
	assert_int_equal(proto_put_ping(&out, PROTO_PING, 0, 42), 0);
	assert_int_equal(proto_buf_write(&out, p[1]), proto_buf_pending(&out));
	assert_int_equal(proto_reader_pull(&reader, p[0]), 0);
	assert_int_equal(proto_reader_next(&reader, &f), 1);
	assert_int_equal(f.hdr.kind, PROTO_PING);
	close(p[1]);
	assert_int_equal(proto_reader_pull(&reader, p[0]), -EPIPE);
	close(p[0]);
	assert_int_equal(proto_reader_pull(&reader, p[0]), -EBADF);
}

static void test_buf_queue(void **state)
{
	struct proto_buf b = { 0 };

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(proto_buf_append(&b, "0123456789", 10), 0);
		proto_buf_consume(&b, 7);
	}
	assert_int_equal(proto_buf_pending(&b), 3000);
	proto_buf_consume(&b, 5000);
	assert_int_equal(proto_buf_pending(&b), 0);
	proto_buf_free(&b);
	assert_string_equal(proto_kind_name(PROTO_EXIT), "EXIT");
	assert_string_equal(proto_kind_name(200), "unknown");
}

/* ---- PERSONA (issue #30) ---- */

static void test_persona_roundtrip(void **state)
{
	char *in[] = { "hostname=job-7", "hosts=10.0.0.1 n1 n1.cluster",
		       "share=svmshare0 9p trans=virtio /home/a b",
		       "empty=", NULL };
	struct proto_persona_answer a;
	struct proto_persona m;
	struct proto_frame f;

	assert_int_equal(proto_put_persona(&out, in), 0);
	read_back(&f, PROTO_PERSONA);
	assert_int_equal(f.hdr.session, 0);
	assert_int_equal(proto_decode_persona(f.payload, f.length, &m), 0);
	assert_int_equal(m.count, 4);
	for (int i = 0; i < 4; i++)
		assert_string_equal(m.entries[i], in[i]);
	assert_null(m.entries[4]);
	proto_persona_free(&m);

	char *none[] = { NULL };
	assert_int_equal(proto_put_persona(&out, none), 0);
	read_back(&f, PROTO_PERSONA);
	assert_int_equal(proto_decode_persona(f.payload, f.length, &m), 0);
	assert_int_equal(m.count, 0);
	assert_null(m.entries[0]);
	proto_persona_free(&m);

	assert_int_equal(proto_put_persona_answer(&out, 0, "ignored"), 0);
	read_back(&f, PROTO_PERSONA);
	assert_int_equal(proto_decode_persona_answer(f.payload, f.length, &a),
			 0);
	assert_int_equal(a.failures, 0);
	assert_string_equal(a.text, "");
	assert_int_equal(proto_put_persona_answer(&out, 2, "net: x\001y"), 0);
	read_back(&f, PROTO_PERSONA);
	assert_int_equal(proto_decode_persona_answer(f.payload, f.length, &a),
			 0);
	assert_int_equal(a.failures, 2);
	assert_string_equal(a.text, "net: x?y");
}

static void test_persona_encode_refuses(void **state)
{
	char *bad_eq[] = { "novalue", NULL };
	char *bad_key[] = { "=value", NULL };
	char *bad_nl[] = { "a=b\nc", NULL };
	char **many = calloc(PROTO_MAX_PERSONA + 2, sizeof(char *));
	char *big = malloc(PROTO_MAX_PAYLOAD);

	assert_int_equal(proto_put_persona(&out, bad_eq), -EINVAL);
	assert_int_equal(proto_put_persona(&out, bad_key), -EINVAL);
	assert_int_equal(proto_put_persona(&out, bad_nl), -EINVAL);
	for (unsigned i = 0; i <= PROTO_MAX_PERSONA; i++)
		many[i] = "a=b";
	assert_int_equal(proto_put_persona(&out, many), -E2BIG);
	memset(big, 'x', PROTO_MAX_PAYLOAD - 1);
	big[0] = 'k';
	big[1] = '=';
	big[PROTO_MAX_PAYLOAD - 1] = '\0';
	many[0] = big;
	many[1] = NULL;
	assert_int_equal(proto_put_persona(&out, many), -E2BIG);
	assert_int_equal(proto_buf_pending(&out), 0);
	free(big);
	free(many);
}

/* u32 count, then "a=b" and "c=d". */
static size_t persona_payload(uint8_t *p)
{
	put_be32(p, 2);
	put_be32(p + 4, 4);
	memcpy(p + 8, "a=b", 4);
	put_be32(p + 12, 4);
	memcpy(p + 16, "c=d", 4);
	return 20;
}

static void test_persona_malformed(void **state)
{
	uint8_t p[64];
	struct proto_persona m;
	struct proto_persona_answer a;
	size_t n = persona_payload(p);

	assert_int_equal(proto_decode_persona(p, n, &m), 0);
	proto_persona_free(&m);
	/* truncated, at every length */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(proto_decode_persona(p, i, &m), -EBADMSG);
	/* trailing bytes */
	assert_int_equal(proto_decode_persona(p, n + 1, &m), -EBADMSG);
	/* a count the payload cannot hold, and one above the limit */
	put_be32(p, 3);
	assert_int_equal(proto_decode_persona(p, n, &m), -EBADMSG);
	put_be32(p, 0xffffffffu);
	assert_int_equal(proto_decode_persona(p, n, &m), -EMSGSIZE);
	put_be32(p, PROTO_MAX_PERSONA + 1);
	assert_int_equal(proto_decode_persona(p, n, &m), -EMSGSIZE);
	/* non-printable */
	n = persona_payload(p);
	p[10] = '\n';
	assert_int_equal(proto_decode_persona(p, n, &m), -EBADMSG);
	p[10] = 0x7f;
	assert_int_equal(proto_decode_persona(p, n, &m), -EBADMSG);
	/* missing '=', empty key, empty entry */
	n = persona_payload(p);
	memcpy(p + 16, "cxd", 4);
	assert_int_equal(proto_decode_persona(p, n, &m), -EBADMSG);
	memcpy(p + 16, "=cd", 4);
	assert_int_equal(proto_decode_persona(p, n, &m), -EBADMSG);
	put_be32(p, 1);
	put_be32(p + 4, 1);
	p[8] = 0;
	assert_int_equal(proto_decode_persona(p, 9, &m), -EBADMSG);

	/* the answer: text "" exactly when no failure */
	put_be32(p, 0);
	put_be32(p + 4, 1);
	p[8] = 0;
	assert_int_equal(proto_decode_persona_answer(p, 9, &a), 0);
	assert_int_equal(proto_decode_persona_answer(p, 8, &a), -EBADMSG);
	assert_int_equal(proto_decode_persona_answer(p, 10, &a), -EBADMSG);
	put_be32(p, 1);
	assert_int_equal(proto_decode_persona_answer(p, 9, &a), -EBADMSG);
	put_be32(p + 4, 3);
	memcpy(p + 8, "no", 3);
	assert_int_equal(proto_decode_persona_answer(p, 11, &a), 0);
	assert_string_equal(a.text, "no");
	put_be32(p, 0);
	assert_int_equal(proto_decode_persona_answer(p, 11, &a), -EBADMSG);
	put_be32(p, 1);
	p[9] = 0x1b; /* non-printable */
	assert_int_equal(proto_decode_persona_answer(p, 11, &a), -EBADMSG);
	put_be32(p + 4, PROTO_MAX_ERROR + 2); /* too long */
	assert_int_equal(proto_decode_persona_answer(p, 11, &a), -EMSGSIZE);
}

static void test_persona_header(void **state)
{
	struct proto_header h;
	uint8_t b[PROTO_HEADER_SIZE];

	make_header(b, PROTO_PERSONA, 0, 4);
	assert_int_equal(proto_header_decode(b, 16, &h), 0);
	make_header(b, PROTO_PERSONA, 5, 4); /* session 0 only */
	assert_int_equal(proto_header_decode(b, 16, &h), -EBADMSG);
	assert_string_equal(proto_kind_name(PROTO_PERSONA), "PERSONA");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ready_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exec_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exec_split, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_small_roundtrips, setup,
						teardown),
		cmocka_unit_test(test_header_malformed),
		cmocka_unit_test(test_hello_malformed),
		cmocka_unit_test(test_exec_malformed),
		cmocka_unit_test_setup_teardown(test_exec_encode_refuses, setup,
						teardown),
		cmocka_unit_test(test_small_malformed),
		cmocka_unit_test_setup_teardown(test_credit_overflow, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reader_resync, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reader_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reader_pull, setup,
						teardown),
		cmocka_unit_test(test_buf_queue),
		cmocka_unit_test_setup_teardown(test_persona_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_persona_encode_refuses,
						setup, teardown),
		cmocka_unit_test(test_persona_malformed),
		cmocka_unit_test(test_persona_header),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
