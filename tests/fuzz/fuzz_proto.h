/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Shared by the proto fuzz targets: decode one payload of @kind and check
 * that whatever decodes cleanly also re-encodes. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "channel/proto.h"

static inline void fuzz_check_reencode_exec(const struct proto_exec *m)
{
	struct proto_buf b = { 0 };
	int r = proto_put_exec(&b, 1, m);

	assert(r == 0);
	proto_buf_free(&b);
}

static inline void fuzz_proto_decode_payload(uint8_t kind, const uint8_t *p,
					     size_t n)
{
	struct proto_hello hello;
	struct proto_exec exec;
	struct proto_exit ex;
	struct proto_error *er;
	const uint8_t *data;
	size_t len;
	uint8_t stream;
	uint32_t v;
	uint64_t c;
	uint16_t rows, cols;

	switch (kind) {
	case PROTO_HELLO:
		if (proto_decode_hello(p, n, &hello) == 0)
			assert(strlen(hello.identity) <= PROTO_MAX_IDENTITY);
		break;
	case PROTO_READY:
		proto_decode_ready(p, n);
		break;
	case PROTO_EXEC:
		if (proto_decode_exec(p, n, &exec) == 0) {
			fuzz_check_reencode_exec(&exec);
			proto_exec_free(&exec);
		}
		break;
	case PROTO_DATA:
		if (proto_decode_data(p, n, &stream, &data, &len) == 0)
			assert(len > 0 && data + len == p + n);
		break;
	case PROTO_EOF:
		proto_decode_eof(p, n, &stream);
		break;
	case PROTO_CREDIT:
		if (proto_decode_credit(p, n, &stream, &v) == 0) {
			uint32_t avail = 0;

			assert(proto_credit_add(&avail, v) == 0);
		}
		break;
	case PROTO_SIGNAL:
		proto_decode_signal(p, n, &v);
		break;
	case PROTO_EXIT:
		if (proto_decode_exit(p, n, &ex) == 0) {
			struct proto_buf b = { 0 };

			assert(proto_put_exit(&b, 1, &ex) == 0);
			proto_buf_free(&b);
		}
		break;
	case PROTO_ERROR:
		er = malloc(sizeof(*er));
		if (er && proto_decode_error(p, n, er) == 0)
			assert(strlen(er->text) <= PROTO_MAX_ERROR);
		free(er);
		break;
	case PROTO_PING:
	case PROTO_PONG:
		proto_decode_ping(p, n, &c);
		break;
	case PROTO_SHUTDOWN:
		proto_decode_shutdown(p, n, &v);
		break;
	case PROTO_WINSIZE:
		if (proto_decode_winsize(p, n, &rows, &cols) == 0)
			assert(rows > 0 && cols > 0);
		break;
	default:
		break;
	}
}
