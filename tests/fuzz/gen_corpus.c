/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writes the seed corpus of the proto fuzz targets with the real encoder:
 *   gen_corpus DIR   ->  DIR/fuzz_proto_<kind>/seed-N and DIR/fuzz_proto_frame/
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "channel/proto.h"

static const char *dir;

static int write_seed(const char *target, int n, const uint8_t *p, size_t len,
		      int prefix)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s/seed-%d", dir, target, n);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	if (prefix >= 0)
		fputc(prefix, f);
	fwrite(p, 1, len, f);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* The payload of the single frame in @b goes to fuzz_proto_<kind>. */
static int seed_payload(const char *target, int n, struct proto_buf *b)
{
	int r = write_seed(target, n, proto_buf_head(b) + PROTO_HEADER_SIZE,
			   proto_buf_pending(b) - PROTO_HEADER_SIZE, -1);

	proto_buf_consume(b, proto_buf_pending(b));
	return r;
}

static int seed_payloads(void)
{
	char *argv[] = { "/bin/cat", "-n", NULL };
	char *env[] = { "PATH=/usr/bin:/bin", "PMI_FD=3", NULL };
	uint32_t groups[] = { 100, 27 };
	struct proto_exec exec = {
		1000, 1000,   PROTO_EXEC_PMI, 3,    0,	 0,
		2,    groups, "/home/user",   argv, env, NULL
	};
	struct proto_hello hello = { 1, 1, 42, "job-17.node1" };
	struct proto_exit ex1 = { PROTO_EXITED, false, 7 };
	struct proto_exit ex2 = { PROTO_SIGNALED, true, 11 };
	struct proto_buf b = { 0 };
	int r = 0;

	r |= proto_put_hello(&b, &hello)
		     ?: seed_payload("fuzz_proto_hello", 0, &b);
	r |= proto_put_ready(&b) ?: seed_payload("fuzz_proto_ready", 0, &b);
	r |= proto_put_exec(&b, 1, &exec)
		     ?: seed_payload("fuzz_proto_exec", 0, &b);
	exec.flags = PROTO_EXEC_PMIX;
	env[1] = "PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://127.0.0.1:40123";
	r |= proto_put_exec(&b, 1, &exec)
		     ?: seed_payload("fuzz_proto_exec", 1, &b);
	r |= proto_put_data(&b, 1, PROTO_STDOUT, "hello\n", 6)
		     ?: seed_payload("fuzz_proto_data", 0, &b);
	r |= proto_put_eof(&b, 1, PROTO_STDIN)
		     ?: seed_payload("fuzz_proto_eof", 0, &b);
	r |= proto_put_credit(&b, 1, PROTO_STDOUT, 65536)
		     ?: seed_payload("fuzz_proto_credit", 0, &b);
	r |= proto_put_signal(&b, 1, 15)
		     ?: seed_payload("fuzz_proto_signal", 0, &b);
	r |= proto_put_exit(&b, 1, &ex1)
		     ?: seed_payload("fuzz_proto_exit", 0, &b);
	r |= proto_put_exit(&b, 1, &ex2)
		     ?: seed_payload("fuzz_proto_exit", 1, &b);
	r |= proto_put_error(&b, 1, 5, "the guest died")
		     ?: seed_payload("fuzz_proto_error", 0, &b);
	r |= proto_put_ping(&b, PROTO_PING, 0, 1)
		     ?: seed_payload("fuzz_proto_ping", 0, &b);
	r |= proto_put_shutdown(&b, 1)
		     ?: seed_payload("fuzz_proto_shutdown", 0, &b);
	r |= proto_put_winsize(&b, 1, 24, 80)
		     ?: seed_payload("fuzz_proto_winsize", 0, &b);
	proto_buf_free(&b);
	return r;
}

/* Whole conversations for the framing reader (first byte: chunking). */
static int seed_streams(void)
{
	char *argv[] = { "/bin/sh", "-c", "echo hi; exit 7", NULL };
	char *env[] = { "HOME=/home/user", NULL };
	struct proto_exec exec = { 1000, 1000, 0,      0,    24,  80,
				   0,	 NULL, "/tmp", argv, env, NULL };
	struct proto_hello hello = { 1, 1, 42, "guest" };
	struct proto_exit ex = { PROTO_EXITED, false, 7 };
	struct proto_buf b = { 0 };
	static char big[70000];
	char *bigenv[] = { big, NULL };
	int r = 0;

	r |= proto_put_hello(&b, &hello);
	r |= proto_put_ready(&b);
	r |= proto_put_exec(&b, 1, &exec);
	r |= proto_put_data(&b, 1, PROTO_STDIN, "input", 5);
	r |= proto_put_eof(&b, 1, PROTO_STDIN);
	r |= proto_put_data(&b, 1, PROTO_STDOUT, "hi\n", 3);
	r |= proto_put_credit(&b, 1, PROTO_STDOUT, 3);
	r |= proto_put_signal(&b, 1, 2);
	r |= proto_put_error(&b, 0, 0, "warning");
	r |= proto_put_exit(&b, 1, &ex);
	r |= proto_put_ping(&b, PROTO_PONG, 0, 9);
	r |= proto_put_shutdown(&b, 0);
	r |= proto_put_winsize(&b, 1, 50, 132);
	r |= write_seed("fuzz_proto_frame", 0, proto_buf_head(&b),
			proto_buf_pending(&b), 0x05);
	r |= write_seed("fuzz_proto_frame", 1, proto_buf_head(&b),
			proto_buf_pending(&b), 0x80);
	proto_buf_consume(&b, proto_buf_pending(&b));
	memset(big, 'x', sizeof(big) - 1);
	big[0] = 'X';
	big[1] = '=';
	exec.env = bigenv;
	r |= proto_put_exec(&b, 2, &exec);
	r |= write_seed("fuzz_proto_frame", 2, proto_buf_head(&b),
			proto_buf_pending(&b), 0x7f);
	proto_buf_free(&b);
	return r;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 2;
	}
	dir = argv[1];
	if (seed_payloads() || seed_streams()) {
		fprintf(stderr, "gen_corpus: cannot write the corpus\n");
		return 1;
	}
	return 0;
}
