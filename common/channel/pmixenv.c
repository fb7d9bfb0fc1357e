/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/macro.h"
#include "channel/pmixenv.h"
#include "core/strutil.h"

#define LOOPBACK_TCP ";tcp4://127.0.0.1:"

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_uri_var(const char *entry)
{
	return has_prefix(entry, PMIXENV_URI_PREFIX) && strchr(entry, '=');
}

/* The port of one "NAME=<nspace>.<rank>;tcp4://127.0.0.1:<port>". */
static int uri_port(const char *entry, uint16_t *port)
{
	const char *v = strchr(entry, '=') + 1;
	const char *tcp = strstr(v, LOOPBACK_TCP);
	const char *digits;
	unsigned p;

	if (!tcp || tcp == v || memchr(v, ';', (size_t)(tcp - v)))
		return -EINVAL;
	digits = tcp + strlen(LOOPBACK_TCP);
	if (digits[0] < '1' || digits[0] > '9' ||
	    strspn(digits, "0123456789") != strlen(digits) ||
	    str_to_uint(digits, &p) < 0 || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

int pmixenv_server_port(char *const *env, uint16_t *port)
{
	uint16_t found = 0, p;

	for (size_t i = 0; env[i]; i++) {
		if (!is_uri_var(env[i]))
			continue;
		if (uri_port(env[i], &p) < 0 || (found && p != found))
			return -EINVAL;
		found = p;
	}
	if (!found)
		return -ENOENT;
	*port = found;
	return 0;
}

bool pmixenv_consumed(const char *entry)
{
	static const char *const prefixes[] = {
		PMIXENV_URI_PREFIX,    "PMIX_GDS_MODULE=", "PMIX_MCA_gds=",
		"PMIX_SECURITY_MODE=", "PMIX_MCA_psec=",   "PMIX_HWLOC_",
		"PMIX_DSTORE_",
	};

	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (has_prefix(entry, prefixes[i]))
			return true;
	return false;
}

void pmixenv_free(char **out)
{
	for (size_t i = 0; out[i]; i++) {
		free(out[i]);
		out[i] = NULL;
	}
}

int pmixenv_guest(char *const *env, uint16_t port, char **out)
{
	static const char *const fixed[] = {
		"PMIX_GDS_MODULE=hash",
		"PMIX_MCA_gds=hash",
		"PMIX_SECURITY_MODE=native",
		"PMIX_MCA_psec=native",
	};
	size_t n = 0;

	out[0] = NULL;
	for (size_t i = 0; env[i] && n < PMIXENV_MAX - ARRAY_SIZE(fixed); i++) {
		const char *semi;

		if (!is_uri_var(env[i]) || !(semi = strchr(env[i], ';')))
			continue;
		if (asprintf(&out[n], "%.*s" LOOPBACK_TCP "%u",
			     (int)(semi - env[i]), env[i], port) < 0)
			goto fail;
		out[++n] = NULL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
		out[n] = strdup(fixed[i]);
		if (!out[n])
			goto fail;
		out[++n] = NULL;
	}
	return (int)n;
fail:
	out[n] = NULL;
	pmixenv_free(out);
	return -ENOMEM;
}

/* No key of PMIx 4.2 holds one of these inside it. */
static const char *const host_keys[PMIXENV_HOST_KEYS] = {
	/* the topology */
	"pmix.ltopo",
	"pmix.hwlocxml1",
	"pmix.hwlocxml2",
	"pmix.hwlocfile",
	"pmix.topo.xml",
	"pmix.topo.file",
	/* the scratch directories, and who removes them */
	"pmix.tmpdir",
	"pmix.nsdir",
	"pmix.pdir",
	"pmix.tdir.rmclean",
};

enum { HIDER_REPLY, HIDER_INDEX, HIDER_HEADER, HIDER_BODY, HIDER_RAW };

/* How much of @key is matched once @c follows the @n bytes matched so far:
 * on a mismatch, the longest prefix of @key that ends those bytes and @c
 * (KMP, spelled out: keys are short and mismatches after a 'p' are rare). */
static uint8_t key_advance(const char *key, uint8_t n, uint8_t c)
{
	if ((uint8_t)key[n] == c)
		return n + 1;
	for (uint8_t k = n; k > 0; k--)
		if ((uint8_t)key[k - 1] == c &&
		    !memcmp(key, key + n + 1 - k, k - 1))
			return k;
	return 0;
}

/* One byte of a body, appended to @out at *@n. */
static void hider_body_byte(struct pmixenv_key_hider *h, uint8_t c,
			    uint8_t *out, size_t *n)
{
	out[(*n)++] = c;
	for (size_t k = 0; k < PMIXENV_HOST_KEYS; k++) {
		const char *key = host_keys[k];

		h->matched[k] = key_advance(key, h->matched[k], c);
		if (key[h->matched[k]])
			continue;
		out[*n - h->matched[k]] = '_';
		h->matched[k] = 0;
		h->renamed++;
	}
	if (--h->body_left == 0) {
		memset(h->matched, 0, sizeof(h->matched));
		h->state = HIDER_HEADER;
	}
}

/* One byte of the status word, the index or a header, passed as it is. */
static void hider_field_byte(struct pmixenv_key_hider *h, uint8_t c)
{
	uint32_t v;

	h->field[h->got++] = c;
	if (h->got < (h->state == HIDER_HEADER ? 16 : 4))
		return;
	h->got = 0;
	switch (h->state) {
	case HIDER_REPLY: /* anything but success: no messages follow */
		memcpy(&v, h->field, sizeof(v));
		h->state = v == 0 ? HIDER_INDEX : HIDER_RAW;
		break;
	case HIDER_INDEX:
		h->state = HIDER_HEADER;
		break;
	default:
		memcpy(&v, h->field + 8, sizeof(v));
		h->body_left = ntohl(v);
		if (h->body_left)
			h->state = HIDER_BODY;
		break;
	}
}

size_t pmixenv_hide_host_keys(struct pmixenv_key_hider *h, const uint8_t *in,
			      size_t len, uint8_t *out)
{
	size_t n = h->carry_len, hold = 0;

	memcpy(out, h->carry, h->carry_len);
	h->carry_len = 0;
	for (size_t i = 0; i < len; i++) {
		if (h->state == HIDER_BODY) {
			hider_body_byte(h, in[i], out, &n);
			continue;
		}
		out[n++] = in[i];
		if (h->state != HIDER_RAW)
			hider_field_byte(h, in[i]);
	}
	if (h->state == HIDER_BODY)
		for (size_t k = 0; k < PMIXENV_HOST_KEYS; k++)
			if (h->matched[k] > hold)
				hold = h->matched[k];
	memcpy(h->carry, out + n - hold, hold);
	h->carry_len = (uint8_t)hold;
	return n - hold;
}

#define PTL_HDR_SIZE 16 /* pmix_ptl_hdr_t with a 64-bit size_t */

int pmixenv_client_ids(const uint8_t *buf, size_t len, uint32_t *uid,
		       uint32_t *gid)
{
	static const char native[] = "native";
	const uint8_t *p = buf + PTL_HDR_SIZE;
	uint32_t size;

	if (len < PTL_HDR_SIZE + sizeof(native))
		return 0;
	if (memcmp(p, native, sizeof(native)))
		return -EINVAL;
	p += sizeof(native);
	if ((size_t)(buf + len - p) < 3 * sizeof(uint32_t))
		return 0;
	memcpy(&size, p, sizeof(size));
	if (ntohl(size) != 2 * sizeof(uint32_t))
		return -EINVAL;
	memcpy(uid, p + 4, sizeof(*uid));
	memcpy(gid, p + 8, sizeof(*gid));
	return 1;
}
