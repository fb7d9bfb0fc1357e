/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "core/macro.h"
#include "job/qcow2.h"

#define QCOW2_MAGIC	       0x514649fbu /* "QFI\xfb" */
#define QCOW2_V2_HEADER_LEN    72u
#define QCOW2_V3_HEADER_LEN    104u
#define QCOW2_VIRTUAL_SIZE_MAX (1ull << 56) /* 64 PiB: beyond any disk */

#define QCOW2_INCOMPAT_DIRTY	 (1ull << 0)
#define QCOW2_INCOMPAT_CORRUPT	 (1ull << 1)
#define QCOW2_INCOMPAT_DATA_FILE (1ull << 2)
#define QCOW2_INCOMPAT_COMPRESS	 (1ull << 3)
#define QCOW2_INCOMPAT_EXTL2	 (1ull << 4)
#define QCOW2_INCOMPAT_KNOWN                                  \
	(QCOW2_INCOMPAT_DIRTY | QCOW2_INCOMPAT_CORRUPT |      \
	 QCOW2_INCOMPAT_DATA_FILE | QCOW2_INCOMPAT_COMPRESS | \
	 QCOW2_INCOMPAT_EXTL2)

#define QCOW2_EXT_END	      0x00000000u
#define QCOW2_EXT_BACKING_FMT 0xe2792acau
#define QCOW2_EXT_DATA_FILE   0x44415441u
#define QCOW2_EXT_CRYPTO      0x0537be77u

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -EINVAL;
}

/* Copies a name that must be printable text without NUL. */
static bool copy_name(char *dst, size_t dstlen, const uint8_t *src, size_t len)
{
	if (len == 0 || len >= dstlen)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isprint(src[i]))
			return false;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return true;
}

static int qcow2_parse_extensions(const uint8_t *buf, size_t end, size_t off,
				  struct qcow2_info *info, const char **why)
{
	while (off + 8 <= end) {
		uint32_t type = be32(buf + off);
		uint32_t len = be32(buf + off + 4);
		size_t padded = ((size_t)len + 7) & ~(size_t)7;

		off += 8;
		if (type == QCOW2_EXT_END)
			return 0;
		if (len > end - off || padded > end - off)
			return refuse(why, "a qcow2 header extension runs past "
					   "the first cluster");
		switch (type) {
		case QCOW2_EXT_BACKING_FMT:
			if (!copy_name(info->backing_format,
				       sizeof(info->backing_format), buf + off,
				       len))
				return refuse(why, "the qcow2 backing format "
						   "name is malformed");
			break;
		case QCOW2_EXT_DATA_FILE:
			return refuse(why,
				      "the qcow2 image names an external data "
				      "file (data-file), which is not allowed");
		case QCOW2_EXT_CRYPTO:
			return refuse(why, "the qcow2 image is encrypted; use "
					   "an unencrypted image");
		default:
			break; /* feature names, bitmaps: nothing qemu opens */
		}
		off += padded;
	}
	return 0;
}

static int qcow2_parse_backing(const uint8_t *buf, size_t end,
			       struct qcow2_info *info, const char **why)
{
	uint64_t off = be64(buf + 8);
	uint32_t len = be32(buf + 16);

	if (off == 0)
		return 0;
	if (len == 0 || len > QCOW2_BACKING_NAME_MAX)
		return refuse(why,
			      "the qcow2 backing file name has a bad length");
	if (off > end || len > end - off)
		return refuse(why, "the qcow2 backing file name lies outside "
				   "the first cluster");
	if (!copy_name(info->backing_file, sizeof(info->backing_file),
		       buf + off, len))
		return refuse(
			why,
			"the qcow2 backing file name is not printable text");
	info->has_backing = true;
	return 0;
}

int qcow2_parse(const uint8_t *buf, size_t len, struct qcow2_info *info,
		const char **why)
{
	uint64_t incompat = 0;
	size_t header_len = QCOW2_V2_HEADER_LEN, cluster, end;
	int r;

	memset(info, 0, sizeof(*info));
	if (len < QCOW2_V2_HEADER_LEN || be32(buf) != QCOW2_MAGIC)
		return refuse(why, "not a qcow2 image (no qcow2 header)");
	info->version = be32(buf + 4);
	if (info->version != 2 && info->version != 3)
		return refuse(why, "unsupported qcow2 version (only 2 and 3)");
	info->cluster_bits = be32(buf + 20);
	if (info->cluster_bits < QCOW2_CLUSTER_BITS_MIN ||
	    info->cluster_bits > QCOW2_CLUSTER_BITS_MAX)
		return refuse(why, "the qcow2 cluster size is out of range");
	info->virtual_size = be64(buf + 24);
	if (info->virtual_size > QCOW2_VIRTUAL_SIZE_MAX)
		return refuse(why, "the qcow2 virtual size is absurdly large");
	if (be32(buf + 32) != 0)
		return refuse(why, "the qcow2 image is encrypted; use an "
				   "unencrypted image");

	if (info->version == 3) {
		if (len < QCOW2_V3_HEADER_LEN)
			return refuse(why, "the qcow2 v3 header is truncated");
		incompat = be64(buf + 72);
		header_len = be32(buf + 100);
		if (header_len < QCOW2_V3_HEADER_LEN || header_len % 8)
			return refuse(why,
				      "the qcow2 header length is invalid");
	}
	if (incompat & QCOW2_INCOMPAT_DATA_FILE)
		return refuse(why, "the qcow2 image uses an external data file "
				   "(data-file), which is not allowed");
	if (incompat & QCOW2_INCOMPAT_CORRUPT)
		return refuse(why, "the qcow2 image is marked corrupt; repair "
				   "it with qemu-img check -r all");
	if (incompat & ~QCOW2_INCOMPAT_KNOWN)
		return refuse(why, "the qcow2 image uses features this node "
				   "does not know");

	cluster = (size_t)1 << info->cluster_bits;
	end = len < cluster ? len : cluster;
	if (header_len > end)
		return refuse(
			why,
			"the qcow2 header is larger than its first cluster");
	r = qcow2_parse_extensions(buf, end, header_len, info, why);
	if (r < 0)
		return r;
	return qcow2_parse_backing(buf, end, info, why);
}

static bool bytes_at(const uint8_t *buf, size_t len, size_t off,
		     const char *magic, size_t mlen)
{
	return off + mlen <= len && memcmp(buf + off, magic, mlen) == 0;
}

/* Formats that must not be passed to qemu as raw, with what to do. */
static const struct {
	size_t off;
	const char *magic;
	size_t len;
	const char *why;
} foreign[] = {
	{ 0, "QFI\xfb", 4,
	  "an unsupported qcow version; convert it with qemu-img convert -O "
	  "qcow2" },
	{ 0, "KDMV", 4,
	  "a VMDK image; convert it with qemu-img convert -O qcow2" },
	{ 0, "conectix", 8,
	  "a VHD image; convert it with qemu-img convert -O qcow2" },
	{ 0, "vhdxfile", 8,
	  "a VHDX image; convert it with qemu-img convert -O qcow2" },
	{ 0, "QED\0", 4,
	  "a QED image; convert it with qemu-img convert -O qcow2" },
	{ 0, "LUKS\xba\xbe", 6,
	  "a LUKS-encrypted image; use an unencrypted image" },
	{ 64, "\x7f\x10\xda\xbe", 4,
	  "a VDI image; convert it with qemu-img convert -O qcow2" },
	{ 0, "\x1f\x8b", 2, "gzip-compressed; decompress it first" },
	{ 0,
	  "\xfd"
	  "7zXZ",
	  6, "xz-compressed; decompress it first" },
	{ 0, "\x28\xb5\x2f\xfd", 4, "zstd-compressed; decompress it first" },
	{ 0, "BZh", 3, "bzip2-compressed; decompress it first" },
	{ 257, "ustar", 5, "a tar archive, not a disk image" },
	{ 0,
	  "\x7f"
	  "ELF",
	  4, "a program, not a disk image" },
};

int image_probe(const uint8_t *buf, size_t len, uint64_t file_size,
		enum image_format *fmt, const char **why)
{
	if (len >= 8 && be32(buf) == QCOW2_MAGIC && be32(buf + 4) >= 2) {
		*fmt = IMAGE_FORMAT_QCOW2;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(foreign); i++)
		if (bytes_at(buf, len, foreign[i].off, foreign[i].magic,
			     foreign[i].len))
			return refuse(why, foreign[i].why);
	if (file_size == 0 || file_size % 512)
		return refuse(why, "neither qcow2 nor a raw disk (a raw disk's "
				   "size is a multiple of 512 bytes)");
	if (bytes_at(buf, len, 510, "\x55\xaa", 2) ||  /* MBR, protective MBR */
	    bytes_at(buf, len, 512, "EFI PART", 8) ||  /* GPT */
	    bytes_at(buf, len, 1080, "\x53\xef", 2) || /* ext2/3/4 */
	    bytes_at(buf, len, 0, "XFSB", 4) ||	       /* XFS */
	    bytes_at(buf, len, 0, "hsqs", 4)) {	       /* squashfs */
		*fmt = IMAGE_FORMAT_RAW;
		return 0;
	}
	return refuse(why, "neither qcow2 nor a raw disk (no partition table "
			   "or filesystem found)");
}

const char *image_format_name(enum image_format fmt)
{
	switch (fmt) {
	case IMAGE_FORMAT_RAW:
		return "raw";
	case IMAGE_FORMAT_QCOW2:
		return "qcow2";
	default:
		return "auto";
	}
}

int image_format_from_name(const char *name, enum image_format *fmt)
{
	if (strcmp(name, "raw") == 0)
		*fmt = IMAGE_FORMAT_RAW;
	else if (strcmp(name, "qcow2") == 0)
		*fmt = IMAGE_FORMAT_QCOW2;
	else
		return -EINVAL;
	return 0;
}

bool image_name_is_protocol(const char *name)
{
	/* qemu reads "json:{...}" and "proto:..." (nbd:, http:, ...) as
	 * protocols when a ':' comes before any '/'. */
	const char *colon = strchr(name, ':');
	const char *slash = strchr(name, '/');

	return colon && (!slash || colon < slash);
}
