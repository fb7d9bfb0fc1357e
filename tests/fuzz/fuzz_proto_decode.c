/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for one payload decoder, chosen at build time with
 * -DFUZZ_KIND=PROTO_<KIND>: the input is the payload of one frame.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A private copy, so ASan catches any read past the payload. */
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	fuzz_proto_decode_payload(FUZZ_KIND, copy, size);
	free(copy);
	return 0;
}
