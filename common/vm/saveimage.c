/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "core/log.h"
#include "core/macro.h"
#include "vm/saveimage.h"

#define COPY_CHUNK (4u * 1024 * 1024)

struct raw_header {
	char magic[SAVEIMAGE_MAGIC_LEN];
	uint32_t version, data_len, was_running, compressed, cookie_offset;
	uint32_t unused[14];
};

_Static_assert(sizeof(struct raw_header) == SAVEIMAGE_HEADER_SIZE,
	       "libvirt's save header is 92 bytes");

static int read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The NUL-terminated string at @data[@at] within @len bytes, copied. */
static char *string_at(const char *data, size_t len, size_t at)
{
	const char *end = at < len ? memchr(data + at, '\0', len - at) : NULL;

	return end ? strdup(data + at) : NULL;
}

int saveimage_read(int fd, struct saveimage *img)
{
	_cleanup_free_ char *data = NULL;
	struct raw_header h;
	int r;

	*img = (struct saveimage){ 0 };
	r = read_full(fd, &h, sizeof(h));
	if (r < 0)
		return r;
	if (memcmp(h.magic, SAVEIMAGE_MAGIC, SAVEIMAGE_MAGIC_LEN) != 0)
		return -EBADMSG;
	if (h.version != SAVEIMAGE_VERSION || h.compressed != 0) {
		log_error("save image: version %u, compressed %u: only version "
			  "%u, raw (qemu.conf save_image_format = \"raw\")",
			  h.version, h.compressed, SAVEIMAGE_VERSION);
		return -ENOTSUP;
	}
	if (h.data_len == 0 || h.data_len > SAVEIMAGE_MAX_DATA ||
	    h.cookie_offset >= h.data_len)
		return -EBADMSG;
	data = malloc(h.data_len);
	if (!data)
		return -ENOMEM;
	r = read_full(fd, data, h.data_len);
	if (r < 0)
		return r;
	img->xml = string_at(data,
			     h.cookie_offset ? h.cookie_offset : h.data_len, 0);
	if (h.cookie_offset)
		img->cookie = string_at(data, h.data_len, h.cookie_offset);
	if (!img->xml || (h.cookie_offset && !img->cookie)) {
		saveimage_free(img);
		return -EBADMSG;
	}
	img->version = h.version;
	img->data_len = h.data_len;
	img->was_running = h.was_running;
	img->compressed = h.compressed;
	return 0;
}

void saveimage_free(struct saveimage *img)
{
	free(img->xml);
	free(img->cookie);
	*img = (struct saveimage){ 0 };
}

/* The one element child of @parent named @name, NULL when none or more. */
static xmlNodePtr only_child(xmlNodePtr parent, const char *name)
{
	xmlNodePtr found = NULL;

	for (xmlNodePtr n = parent->children; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE ||
		    !xmlStrEqual(n->name, BAD_CAST name))
			continue;
		if (found)
			return NULL;
		found = n;
	}
	return found;
}

static void set_text(xmlNodePtr n, const char *text)
{
	xmlNodeSetContent(n, NULL);
	xmlNodeAddContent(n, BAD_CAST text);
}

static bool uuid_valid(const char *uuid)
{
	if (strlen(uuid) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? uuid[i] != '-'
			 : !strchr("0123456789abcdef", uuid[i]))
			return false;
	}
	return true;
}

int saveimage_genid(const struct saveimage *img, char genid[37])
{
	xmlDocPtr doc;
	xmlNodePtr root, node;
	xmlChar *text = NULL;
	int r = -EBADMSG;

	doc = xmlReadMemory(img->xml, (int)strlen(img->xml), "save.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR |
				    XML_PARSE_NOWARNING);
	root = doc ? xmlDocGetRootElement(doc) : NULL;
	node = root && xmlStrEqual(root->name, BAD_CAST "domain")
		       ? only_child(root, "genid")
		       : NULL;
	text = node ? xmlNodeGetContent(node) : NULL;
	if (text && uuid_valid((const char *)text)) {
		memcpy(genid, text, 37);
		r = 0;
	}
	xmlFree(text);
	if (doc)
		xmlFreeDoc(doc);
	return r;
}

/* @xml with its /domain/name and /domain/uuid replaced, malloc'd. */
static int renamed_xml(const char *xml, const char *name, const char *uuid,
		       char **out)
{
	xmlDocPtr doc;
	xmlNodePtr root, name_node, uuid_node;
	xmlBufferPtr buf = NULL;
	int r = -EINVAL;

	doc = xmlReadMemory(xml, (int)strlen(xml), "save.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR |
				    XML_PARSE_NOWARNING);
	root = doc ? xmlDocGetRootElement(doc) : NULL;
	if (!root || !xmlStrEqual(root->name, BAD_CAST "domain"))
		goto out;
	name_node = only_child(root, "name");
	uuid_node = only_child(root, "uuid");
	if (!name_node || !uuid_node)
		goto out;
	set_text(name_node, name);
	set_text(uuid_node, uuid);
	buf = xmlBufferCreate();
	if (!buf || xmlNodeDump(buf, doc, root, 0, 0) < 0) {
		r = -ENOMEM;
		goto out;
	}
	*out = strdup((const char *)xmlBufferContent(buf));
	r = *out ? 0 : -ENOMEM;
out:
	if (buf)
		xmlBufferFree(buf);
	if (doc)
		xmlFreeDoc(doc);
	return r;
}

int saveimage_renamed_head(const struct saveimage *img, const char *name,
			   const char *uuid, uint8_t **out, size_t *len)
{
	_cleanup_free_ char *xml = NULL;
	struct raw_header h = { .version = img->version,
				.data_len = img->data_len,
				.was_running = img->was_running,
				.compressed = img->compressed };
	size_t xml_len, cookie_len = img->cookie ? strlen(img->cookie) + 1 : 0;
	uint8_t *head;
	int r;

	if (!name[0] || strpbrk(name, "<>&'\"/") || !uuid_valid(uuid))
		return -EINVAL;
	r = renamed_xml(img->xml, name, uuid, &xml);
	if (r < 0)
		return r;
	xml_len = strlen(xml) + 1;
	if (xml_len + cookie_len > img->data_len)
		return -E2BIG;
	memcpy(h.magic, SAVEIMAGE_MAGIC, SAVEIMAGE_MAGIC_LEN);
	/* The cookie follows the XML at once; the padding follows both. */
	h.cookie_offset = img->cookie ? (uint32_t)xml_len : 0;
	head = calloc(1, SAVEIMAGE_HEADER_SIZE + img->data_len);
	if (!head)
		return -ENOMEM;
	memcpy(head, &h, sizeof(h));
	memcpy(head + SAVEIMAGE_HEADER_SIZE, xml, xml_len);
	if (img->cookie)
		memcpy(head + SAVEIMAGE_HEADER_SIZE + xml_len, img->cookie,
		       cookie_len);
	*out = head;
	*len = SAVEIMAGE_HEADER_SIZE + img->data_len;
	return 0;
}

int saveimage_copy_stream(int src_fd, off_t offset, int dst_fd)
{
	for (;;) {
		ssize_t n = sendfile(dst_fd, src_fd, &offset, COPY_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
	}
}
