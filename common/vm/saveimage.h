/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * libvirt's save image of a qemu guest (virDomainSave), as the warm start
 * (issue #30, doc/design.md section 7) reads a template's and feeds it to
 * a job's restore through a FIFO under the job's name and uuid:
 *
 *   offset            size      field
 *        0              16      magic "LibvirtQemudSave" ("...Part" while
 *                               libvirt writes it)
 *       16               4      version (2)
 *       20               4      data_len: the XML, the cookie, padding
 *       24               4      was_running
 *       28               4      compressed (0: raw)
 *       32               4      cookie_offset (0: no cookie)
 *       36              56      unused, 0
 *       92        data_len      the domain XML and its NUL, at
 *                               cookie_offset the cookie and its NUL, NULs
 *  92+data_len           -      qemu's migration stream
 *
 * The integers are the host's byte order. libvirt refuses a restore whose
 * XML names another domain (uuid, then name); the XML here is rewritten
 * with the job's, the rest of the data area kept as long as it was.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SAVEIMAGE_MAGIC	      "LibvirtQemudSave"
#define SAVEIMAGE_MAGIC_LEN   16
#define SAVEIMAGE_HEADER_SIZE 92
#define SAVEIMAGE_VERSION     2
/* libvirt pads the data area by 64 KiB; more is no save of ours. */
#define SAVEIMAGE_MAX_DATA (16u * 1024 * 1024)

struct saveimage {
	uint32_t version, data_len, was_running, compressed;
	char *xml;    /* the domain's XML */
	char *cookie; /* NULL when there is none */
};

/* Reads the header and data area of the save image on @fd (at its start):
 * 0, -EBADMSG when it is none (or libvirt has not finished it), -ENOTSUP
 * for a version or compression this does not read (the reason logged). */
int saveimage_read(int fd, struct saveimage *img);
void saveimage_free(struct saveimage *img);

/* The stream's offset in the file: where qemu's migration data starts. */
static inline off_t saveimage_stream_offset(const struct saveimage *img)
{
	return (off_t)SAVEIMAGE_HEADER_SIZE + img->data_len;
}

/* The header and data area of @img with the domain's <name> and <uuid>
 * replaced by @name and @uuid, into a malloc'd *@out of *@len bytes (92 +
 * data_len): 0, -EINVAL when the XML has no single /domain/name and
 * /domain/uuid, -E2BIG when the new XML and the cookie do not fit the data
 * area. */
int saveimage_renamed_head(const struct saveimage *img, const char *name,
			   const char *uuid, uint8_t **out, size_t *len);

/* The saved domain's <genid> (a restore under another name must carry
 * it, design.md section 7) into @genid: 0, -EBADMSG when it has none. */
int saveimage_genid(const struct saveimage *img, char genid[37]);

/* Copies @src_fd from @offset to its end into @dst_fd (a FIFO a restore
 * reads): 0, or -errno (-EPIPE when the reader went away). */
int saveimage_copy_stream(int src_fd, off_t offset, int dst_fd);
