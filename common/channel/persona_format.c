/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The persona's format, bounds and checks (persona.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/persona_format.h"
#include "core/macro.h"

#define KEY_CHARS                    \
	"abcdefghijklmnopqrstuvwxyz" \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ" \
	"0123456789_.-"
#define HOST_CHARS                   \
	"abcdefghijklmnopqrstuvwxyz" \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ" \
	"0123456789.-_"
#define ENTROPY_HEX_MAX 1024 /* 512 bytes */

bool persona_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > PERSONA_NAME_MAX || s[0] == '-' || s[0] == '+')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f || *s == ':' ||
		    *s == ',' || *s == '/')
			return false;
	return true;
}

bool persona_hostname_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= PERSONA_HOST_MAX && strspn(s, HOST_CHARS) == n;
}

/* A decimal id (no sign, below 2^32 - 1) ending at @sep or the end. */
static int parse_id(const char *s, char sep, unsigned *id, const char **end)
{
	unsigned long long n = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (unsigned)(*p - '0');
		if (n >= 0xffffffffULL)
			return -EINVAL;
	}
	if (p == s || !(*p == sep || (!*p && sep == '\0')))
		return -EINVAL;
	*id = (unsigned)n;
	*end = *p ? p + 1 : p;
	return 0;
}

/* NAME up to the first ':' into @name; what follows in @rest. */
static int parse_name(const char *v, char name[PERSONA_NAME_MAX + 1],
		      const char **rest)
{
	const char *colon = strchr(v, ':');
	size_t n = colon ? (size_t)(colon - v) : 0;

	if (!colon || n > PERSONA_NAME_MAX)
		return -EINVAL;
	memcpy(name, v, n);
	name[n] = '\0';
	*rest = colon + 1;
	return persona_name_ok(name) ? 0 : -EINVAL;
}

int persona_parse_group(const char *v, char name[PERSONA_NAME_MAX + 1],
			unsigned *gid)
{
	const char *rest;

	if (parse_name(v, name, &rest) < 0 ||
	    parse_id(rest, '\0', gid, &rest) < 0)
		return -EINVAL;
	return 0;
}

/* An absolute path a passwd field can hold. */
static bool passwd_path_ok(const char *s)
{
	return s[0] == '/' && strlen(s) < PROTO_MAX_PATH && !strchr(s, ':');
}

int persona_parse_user(const char *v, struct persona_user *u)
{
	const char *rest;

	if (parse_name(v, u->name, &rest) < 0 ||
	    parse_id(rest, ':', &u->uid, &rest) < 0 ||
	    parse_id(rest, ':', &u->gid, &rest) < 0 || !passwd_path_ok(rest))
		return -EINVAL;
	snprintf(u->home, sizeof(u->home), "%s", rest);
	return 0;
}

static bool time_ok(const char *v)
{
	size_t sec = strspn(v, "0123456789"), nsec;

	if (sec == 0 || sec > 19 || v[sec] != '.')
		return false;
	nsec = strspn(v + sec + 1, "0123456789");
	return nsec > 0 && nsec <= 9 && !v[sec + 1 + nsec];
}

static bool entropy_ok(const char *v)
{
	size_t n = strspn(v, "0123456789abcdefABCDEF");

	return n > 0 && n % 2 == 0 && n <= ENTROPY_HEX_MAX && !v[n];
}

static int refuse(char *why, size_t size, const char *fmt, ...) _printf_(3, 4);
static int refuse(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (size) {
		va_start(ap, fmt);
		vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool key_is(const char *entry, size_t key, const char *name)
{
	return strlen(name) == key && strncmp(entry, name, key) == 0;
}

/* The value of the key's own form; unknown keys have none. */
static const char *value_check(const char *e, size_t key, bool from_file)
{
	const char *v = e + key + 1;
	char name[PERSONA_NAME_MAX + 1];
	struct persona_user u;
	unsigned id;

	if (key_is(e, key, "time") || key_is(e, key, "entropy") ||
	    key_is(e, key, "more")) {
		if (from_file)
			return "the relay's own, made when it sends the persona";
		if (key_is(e, key, "time"))
			return time_ok(v) ? NULL : "not SEC.NSEC";
		if (key_is(e, key, "entropy"))
			return entropy_ok(v) ? NULL : "not hex of 1..512 bytes";
		return strcmp(v, "1") == 0 ? NULL : "not 1";
	}
	if (key_is(e, key, "hostname"))
		return persona_hostname_ok(v) ? NULL : "not a host name";
	if (key_is(e, key, "group"))
		return persona_parse_group(v, name, &id) == 0
			       ? NULL
			       : "not NAME:GID of a name the account files "
				 "can hold";
	if (key_is(e, key, "user"))
		return persona_parse_user(v, &u) == 0
			       ? NULL
			       : "not NAME:UID:GID:HOME of a name the account "
				 "files can hold and an absolute home";
	if (key_is(e, key, "member"))
		return persona_name_ok(v) ? NULL : "not a group name";
	if (key_is(e, key, "shell"))
		return passwd_path_ok(v) ? NULL : "not an absolute path";
	if (key_is(e, key, "authorized_key"))
		return *v && *v != '#' ? NULL : "not an authorized_keys line";
	return NULL;
}

int persona_entry_check(const char *entry, bool from_file, char *why,
			size_t size)
{
	size_t key = strspn(entry, KEY_CHARS), len = strlen(entry);
	const char *bad;

	if (key == 0 || entry[key] != '=')
		return refuse(why, size,
			      "not key=value (a key of letters, digits, '_', "
			      "'.', '-')");
	if (len > PERSONA_ENTRY_MAX)
		return refuse(why, size, "longer than %u bytes",
			      PERSONA_ENTRY_MAX);
	for (const char *p = entry; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return refuse(why, size, "a control character");
	bad = value_check(entry, key, from_file);
	if (bad)
		return refuse(why, size, "%s", bad);
	return 0;
}

/* ---- the prolog's side ---- */

void persona_writer_init(struct persona_writer *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

int persona_writef(struct persona_writer *w, const char *key, const char *fmt,
		   ...)
{
	_cleanup_free_ char *value = NULL, *entry = NULL;
	va_list ap;
	int n;

	if (w->error)
		return w->error;
	va_start(ap, fmt);
	n = vasprintf(&value, fmt, ap);
	va_end(ap);
	if (n < 0 || asprintf(&entry, "%s=%s", key, value) < 0) {
		entry = NULL;
		return w->error = -ENOMEM;
	}
	if (persona_entry_check(entry, true, NULL, 0) < 0)
		return w->error = -EINVAL;
	if (w->entries + 1 > PERSONA_MAX_ENTRIES ||
	    w->bytes + strlen(entry) + 1 > PERSONA_FILE_MAX)
		return w->error = -E2BIG;
	if (fprintf(w->f, "%s\n", entry) < 0)
		return w->error = -EIO;
	w->entries++;
	w->bytes += strlen(entry) + 1;
	return 0;
}

/* ---- the relay's side ---- */

int persona_text_parse(char *text, char ***entries, size_t *count, char *why,
		       size_t size)
{
	_cleanup_free_ char **v = NULL;
	size_t n = 0, cap = 0;
	unsigned lineno = 0;
	char *next, one[256];

	*entries = NULL;
	*count = 0;
	if (strlen(text) > PERSONA_FILE_MAX) {
		refuse(why, size, "larger than %u KiB",
		       PERSONA_FILE_MAX / 1024);
		return -E2BIG;
	}
	for (char *line = text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (persona_entry_check(line, true, one, sizeof(one)) < 0)
			return refuse(why, size, "line %u (%.32s): %s", lineno,
				      line, one);
		if (n == PERSONA_MAX_ENTRIES) {
			refuse(why, size, "more than %u entries",
			       PERSONA_MAX_ENTRIES);
			return -E2BIG;
		}
		if (n + 1 >= cap) {
			char **bigger;

			cap = cap ? 2 * cap : 64;
			bigger = realloc(v, cap * sizeof(*v));
			if (!bigger)
				return -ENOMEM;
			v = bigger;
		}
		v[n++] = line;
	}
	if (!v && !(v = calloc(1, sizeof(*v))))
		return -ENOMEM;
	v[n] = NULL;
	*entries = TAKE_PTR(v);
	*count = n;
	return 0;
}

/* A frame's payload: u32 count, then per entry u32 length and its bytes
 * with the NUL. */
static size_t entry_cost(const char *e)
{
	return 4 + strlen(e) + 1;
}

int persona_frames_put(struct proto_buf *b, char *const *entries)
{
	const size_t more = entry_cost(PERSONA_MORE);
	_cleanup_free_ char **frame =
		calloc(PROTO_MAX_PERSONA + 1, sizeof(*frame));
	size_t total = 0, at = 0;

	if (!frame)
		return -ENOMEM;
	while (entries[total])
		total++;
	do {
		size_t bytes = 4, n = 0, k = 0, rest_fits;
		int r;

		/* Would the rest fit this frame without "more"? */
		for (rest_fits = at; entries[rest_fits]; rest_fits++) {
			size_t c = entry_cost(entries[rest_fits]);

			if (bytes + c > PROTO_MAX_PAYLOAD ||
			    rest_fits - at + 1 > PROTO_MAX_PERSONA)
				break;
			bytes += c;
		}
		if (rest_fits == total) {
			for (size_t i = at; i < total; i++)
				frame[k++] = entries[i];
			n = total - at;
		} else {
			frame[k++] = (char *)PERSONA_MORE;
			bytes = 4 + more;
			for (size_t i = at; i < total; i++) {
				size_t c = entry_cost(entries[i]);

				if (bytes + c > PROTO_MAX_PAYLOAD ||
				    k + 1 > PROTO_MAX_PERSONA)
					break;
				bytes += c;
				frame[k++] = entries[i];
				n++;
			}
			if (n == 0) /* one entry beyond a frame */
				return -E2BIG;
		}
		frame[k] = NULL;
		r = proto_put_persona(b, frame);
		if (r < 0)
			return r;
		at += n;
	} while (at < total);
	return 0;
}

/* ---- the agent's side ---- */

void persona_parts_free(struct persona_parts *p)
{
	for (size_t i = 0; i < p->count; i++)
		free(p->entries[i]);
	free(p->entries);
	memset(p, 0, sizeof(*p));
}

int persona_parts_take(struct persona_parts *p, char *const *entries)
{
	bool more = false;
	size_t n = 0;
	char **bigger;

	while (entries[n])
		n++;
	/* the file's bounds, and the relay's time and entropy */
	if (p->count + n > PERSONA_MAX_ENTRIES + 3) {
		persona_parts_free(p);
		return -E2BIG;
	}
	bigger = realloc(p->entries, (p->count + n + 1) * sizeof(char *));
	if (!bigger)
		return -ENOMEM;
	p->entries = bigger;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(entries[i], PERSONA_MORE) == 0) {
			more = true;
			continue;
		}
		p->bytes += strlen(entries[i]) + 1;
		if (p->bytes > PERSONA_FILE_MAX + 2 * PERSONA_ENTRY_MAX) {
			persona_parts_free(p);
			return -E2BIG;
		}
		p->entries[p->count] = strdup(entries[i]);
		if (!p->entries[p->count])
			return -ENOMEM;
		p->count++;
	}
	p->entries[p->count] = NULL;
	return more ? 0 : 1;
}
