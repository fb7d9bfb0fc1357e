/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for the framing reader: the input is a byte stream as it
 * arrives on the channel, fed in pieces whose sizes the input also picks;
 * every frame is decoded with the decoder of its kind.
 */
#include "config.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drain(struct proto_reader *r)
{
	struct proto_frame f;
	int k;

	while ((k = proto_reader_next(r, &f)) != 0) {
		if (k < 0)
			continue;
		assert(f.hdr.kind >= 1 && f.hdr.kind <= PROTO_KIND_MAX);
		assert(f.length <= (f.hdr.kind == PROTO_EXEC
					    ? PROTO_MAX_EXEC
					    : PROTO_MAX_PAYLOAD));
		fuzz_proto_decode_payload(f.hdr.kind, f.payload, f.length);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct proto_reader r;
	size_t off = 0;

	if (size < 1 || (!r.buf && proto_reader_init(&r) < 0))
		return 0;
	proto_reader_reset(&r, false);
	/* The first byte: chunk size and whether to start resyncing. */
	r.resync = data[0] & 0x80;
	size_t chunk = (data[0] & 0x7f) * 97 + 1;

	data++;
	size--;
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		size_t k = proto_reader_feed(&r, data + off, n);

		off += k;
		drain(&r);
		if (k == 0 && r.start == r.end)
			break;
		if (k == 0) /* full: a complete frame cannot be pending */
			proto_reader_reset(&r, true);
	}
	drain(&r);
	proto_reader_reset(&r, false);
	return 0;
}
