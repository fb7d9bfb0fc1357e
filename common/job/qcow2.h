/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Our own reading of disk image headers, done before qemu ever opens a file:
 * a user's image is hostile input. Pure functions over a buffer (no I/O), so
 * they are fuzzed directly.
 *
 * qcow2 is accepted only in forms whose every byte qemu will read is known to
 * us: version 2 or 3, no encryption, no external data file (the "data-file"
 * host-file-disclosure attack), no unknown incompatible features, a backing
 * file name that is a plain path with an explicit backing format.
 * raw is accepted only when it looks like a disk: a partition table or a
 * known filesystem, so a tarball or a text file is refused with a reason.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum image_format {
	IMAGE_FORMAT_AUTO = 0, /* not known yet: probe */
	IMAGE_FORMAT_RAW,
	IMAGE_FORMAT_QCOW2,
};

#define QCOW2_BACKING_NAME_MAX 1023 /* as qemu */
#define QCOW2_FORMAT_NAME_MAX  31
#define QCOW2_CLUSTER_BITS_MIN 9
#define QCOW2_CLUSTER_BITS_MAX 21
/* Header, extensions and backing name all lie in the first cluster. */
#define IMAGE_HEADER_READ_MAX (1u << QCOW2_CLUSTER_BITS_MAX)

struct qcow2_info {
	uint32_t version;
	uint32_t cluster_bits;
	uint64_t virtual_size;
	bool has_backing;
	char backing_file[QCOW2_BACKING_NAME_MAX + 1];
	char backing_format[QCOW2_FORMAT_NAME_MAX + 1]; /* "" if absent */
};

/* @buf holds the first min(file size, IMAGE_HEADER_READ_MAX) bytes. On error
 * returns -EINVAL and sets *why to a static explanation for the user. */
int qcow2_parse(const uint8_t *buf, size_t len, struct qcow2_info *info,
		const char **why);

/* Decides the format of a file from its first bytes. -EINVAL with *why for
 * anything that is neither qcow2 nor a raw disk. */
int image_probe(const uint8_t *buf, size_t len, uint64_t file_size,
		enum image_format *fmt, const char **why);

const char *image_format_name(enum image_format fmt);
int image_format_from_name(const char *name, enum image_format *fmt);
/* A backing name qemu would treat as a protocol or JSON, not a file. */
bool image_name_is_protocol(const char *name);
