/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/macro.h"
#include "core/strutil.h"

int str_to_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int str_to_uint(const char *s, unsigned *out)
{
	uint64_t v;
	int r = str_to_u64(s, &v);

	if (r < 0)
		return r;
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (unsigned)v;
	return 0;
}

int str_to_mib(const char *s, uint64_t *mib)
{
	_cleanup_free_ char *num = NULL;
	size_t len = s ? strlen(s) : 0;
	uint64_t v, mult = 1;
	int r;

	if (len == 0 || len > 20)
		return -EINVAL;
	switch (toupper((unsigned char)s[len - 1])) {
	case 'M':
		len--;
		break;
	case 'G':
		mult = 1024;
		len--;
		break;
	case 'T':
		mult = 1024 * 1024;
		len--;
		break;
	default:
		break;
	}
	num = strndup(s, len);
	if (!num)
		return -ENOMEM;
	r = str_to_u64(num, &v);
	if (r < 0)
		return r;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*mib = v * mult;
	return 0;
}

int strv_split(const char *s, char sep, char ***out)
{
	size_t n = 0, cap = 4;
	char **v = calloc(cap, sizeof(*v));
	const char *p = s;

	if (!v)
		return -ENOMEM;
	while (*p) {
		const char *end = strchr(p, sep);
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > 0) {
			if (n + 2 > cap) {
				char **nv = realloc(v, 2 * cap * sizeof(*v));
				if (!nv)
					goto oom;
				v = nv;
				cap *= 2;
			}
			v[n] = strndup(p, len);
			if (!v[n])
				goto oom;
			v[++n] = NULL;
		}
		p += len;
		if (*p)
			p++;
	}
	*out = v;
	return 0;
oom:
	strv_free(v);
	return -ENOMEM;
}

char *strv_join(const char *const *v, const char *sep)
{
	size_t len = 1, seplen = strlen(sep);
	char *s, *p;

	for (size_t i = 0; v && v[i]; i++)
		len += strlen(v[i]) + seplen;
	s = p = malloc(len);
	if (!s)
		return NULL;
	*p = '\0';
	for (size_t i = 0; v && v[i]; i++) {
		if (i)
			p = stpcpy(p, sep);
		p = stpcpy(p, v[i]);
	}
	return s;
}

size_t strv_length(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

char **strv_copy(char *const *v)
{
	size_t n = strv_length(v);
	char **c = calloc(n + 1, sizeof(char *));

	for (size_t i = 0; c && i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			strv_free(c);
			return NULL;
		}
	}
	return c;
}

void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

unsigned str_edit_distance_ci(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64];

	if (lb >= ARRAY_SIZE(row) || la >= 64)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned cost = tolower((unsigned char)a[i - 1]) !=
					tolower((unsigned char)b[j - 1]);
			unsigned best = diag + cost;
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

bool str_is_safe_name(const char *s, size_t max)
{
	size_t n = 0;

	if (!s || !*s || s[0] == '.' || s[0] == '-')
		return false;
	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];
		if (n >= max)
			return false;
		if (!isalnum(c) && c != '-' && c != '_' && c != '.')
			return false;
	}
	return true;
}

/* Length of the UTF-8 sequence at @s, 0 if it is not one: no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_sequence_length(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

bool str_is_utf8_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_sequence_length(p);

		if (n == 0 || *p < 0x20 || *p == 0x7f ||
		    (p[0] == 0xc2 && p[1] < 0xa0)) /* C1 controls */
			return false;
		p += n;
	}
	return true;
}
