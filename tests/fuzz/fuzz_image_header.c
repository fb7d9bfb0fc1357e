/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: the disk image header parser, which reads user-controlled
 * bytes as root (common/job/qcow2.c). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job/qcow2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qcow2_info qi;
	enum image_format fmt;
	const char *why = NULL;
	char name[QCOW2_BACKING_NAME_MAX + 1];

	if (qcow2_parse(data, size, &qi, &why) == 0) {
		/* What the parser returns must be sane text. */
		if (qi.has_backing && strlen(qi.backing_file) == 0)
			abort();
		if (strlen(qi.backing_format) > QCOW2_FORMAT_NAME_MAX)
			abort();
		(void)image_name_is_protocol(qi.backing_file);
	} else if (!why) {
		abort();
	}
	why = NULL;
	if (image_probe(data, size, (uint64_t)size, &fmt, &why) < 0 && !why)
		abort();
	if (size > 0 && size <= QCOW2_BACKING_NAME_MAX) {
		memcpy(name, data, size);
		name[size] = '\0';
		(void)image_name_is_protocol(name);
	}
	return 0;
}
