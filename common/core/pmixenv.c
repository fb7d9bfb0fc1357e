/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "pmixenv.h"
#include "strutil.h"

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
