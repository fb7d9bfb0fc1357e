/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "job/kvconf.h"
#include "core/log.h"
#include "core/strutil.h"

static const struct kv_key *kv_find(const struct kv_table *t, const char *name,
				    size_t len)
{
	for (size_t i = 0; i < t->n_keys; i++)
		if (strlen(t->keys[i].name) == len &&
		    strncasecmp(t->keys[i].name, name, len) == 0)
			return &t->keys[i];
	return NULL;
}

static const char *kv_suggest(const struct kv_table *t, const char *name)
{
	const char *best = NULL;
	unsigned best_d = 3; /* near misses only */

	for (size_t i = 0; i < t->n_keys; i++) {
		unsigned d = str_edit_distance_ci(name, t->keys[i].name);
		if (d < best_d) {
			best_d = d;
			best = t->keys[i].name;
		}
	}
	return best;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "yes", "true", "1", "on" };
	static const char *const no[] = { "no", "false", "0", "off" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int choice_index(const struct kv_key *k, const char *v)
{
	for (int i = 0; k->choices[i]; i++)
		if (strcasecmp(v, k->choices[i]) == 0)
			return i;
	return -1;
}

static int kv_store_string(char **field, const char *v)
{
	char *copy = NULL;

	if (*v) {
		copy = strdup(v);
		if (!copy)
			return -ENOMEM;
	}
	free(*field);
	*field = copy;
	return 0;
}

static int kv_store_pathlist(const struct kv_key *k, char ***field,
			     const char *v, const char *where)
{
	char **list = NULL;
	int r = strv_split(v, k->sep ?: ':', &list);

	if (r < 0)
		return r;
	for (char **p = list; *p; p++) {
		if ((*p)[0] != '/') {
			log_error("%s: %s: '%s' must be an absolute path",
				  where, k->name, *p);
			strv_free(list);
			return -EINVAL;
		}
	}
	strv_free(*field);
	*field = list;
	return 0;
}

static int kv_store(const struct kv_key *k, void *obj, const char *v,
		    const char *where)
{
	void *field = (char *)obj + k->offset;
	uint64_t n;
	int i;

	switch (k->type) {
	case KV_PATH:
		if (v[0] != '/') {
			log_error("%s: %s=%s: must be an absolute path", where,
				  k->name, v);
			return -EINVAL;
		}
		/* fall through */
	case KV_STRING:
		return kv_store_string((char **)field, v);
	case KV_PATHLIST:
		return kv_store_pathlist(k, (char ***)field, v, where);
	case KV_BOOL:
		if (parse_bool(v, (bool *)field) == 0)
			return 0;
		log_error("%s: %s=%s: expected yes or no", where, k->name, v);
		return -EINVAL;
	case KV_UINT:
	case KV_U64:
		if (str_to_u64(v, &n) < 0 || n > k->max) {
			log_error("%s: %s=%s: expected a whole number from 0 "
				  "to %llu",
				  where, k->name, v,
				  (unsigned long long)k->max);
			return -EINVAL;
		}
		if (k->type == KV_UINT)
			*(unsigned *)field = (unsigned)n;
		else
			*(uint64_t *)field = n;
		return 0;
	case KV_ENUM:
	case KV_CHOICE:
		i = choice_index(k, v);
		if (i < 0) {
			_cleanup_free_ char *all = strv_join(k->choices, ", ");
			log_error("%s: %s=%s: expected one of %s", where,
				  k->name, v, all ? all : "?");
			return -EINVAL;
		}
		if (k->type == KV_ENUM) {
			*(int *)field = i;
			return 0;
		}
		return kv_store_string((char **)field, k->choices[i]);
	case KV_LOGLEVEL: {
		enum log_level lvl;
		if (log_level_from_string(v, &lvl) < 0) {
			log_error("%s: %s=%s: expected error, warn, info or "
				  "debug",
				  where, k->name, v);
			return -EINVAL;
		}
		*(int *)field = (int)lvl;
		return 0;
	}
	}
	return -EINVAL;
}

/* Splits "Key = Value": returns the value and the key's length, or NULL
 * for an item without '=' or without a key. */
static const char *item_split(const char *item, size_t *keylen)
{
	const char *eq = strchr(item, '=');
	const char *v;
	size_t len;

	if (!eq)
		return NULL;
	len = (size_t)(eq - item);
	while (len > 0 && isspace((unsigned char)item[len - 1]))
		len--;
	if (len == 0)
		return NULL;
	*keylen = len;
	v = eq + 1;
	while (isspace((unsigned char)*v))
		v++;
	return v;
}

int kv_set(const struct kv_table *t, void *obj, const char *item,
	   const char *where)
{
	const struct kv_key *k;
	const char *value;
	size_t keylen;

	value = item_split(item, &keylen);
	if (!value) {
		log_error("%s: '%s': expected Key=Value", where, item);
		return -EINVAL;
	}
	k = kv_find(t, item, keylen);
	if (!k) {
		_cleanup_free_ char *name = strndup(item, keylen);
		const char *hint = name ? kv_suggest(t, name) : NULL;
		if (hint)
			log_error("%s: unknown key '%s' (did you mean '%s'?)",
				  where, name, hint);
		else
			log_error("%s: unknown key '%s'; see %s", where,
				  name ? name : item, t->manual);
		return -EINVAL;
	}
	return kv_store(k, obj, value, where);
}

int kv_defaults(const struct kv_table *t, void *obj)
{
	for (size_t i = 0; i < t->n_keys; i++) {
		const struct kv_key *k = &t->keys[i];
		int r;
		if (!k->defval)
			continue;
		r = kv_store(k, obj, k->defval, "built-in default");
		if (r < 0)
			return r;
	}
	return 0;
}

/* Strips a comment and surrounding blanks in place. */
static char *line_item(char *line)
{
	char *hash = strchr(line, '#');
	char *end;

	if (hash)
		*hash = '\0';
	while (isspace((unsigned char)*line))
		line++;
	end = line + strlen(line);
	while (end > line && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return line;
}

int kv_parse_file(const struct kv_table *t, void *obj, const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ bool *seen = calloc(t->n_keys, sizeof(*seen));
	char line[4096];
	unsigned lineno = 0;
	int r = 0;

	if (!seen)
		return -ENOMEM;
	if (!f)
		return log_errno(errno, "cannot read %s", path);
	while (fgets(line, sizeof(line), f)) {
		char where[PATH_MAX + 16];
		const struct kv_key *k = NULL;
		size_t keylen;
		char *item;

		snprintf(where, sizeof(where), "%s:%u", path, ++lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			log_error("%s: line longer than %zu bytes", where,
				  sizeof(line) - 2);
			return -EINVAL;
		}
		item = line_item(line);
		if (!*item)
			continue;
		if (item_split(item, &keylen))
			k = kv_find(t, item, keylen);
		if (k && seen[k - t->keys]) {
			log_error("%s: %s is set twice", where, k->name);
			r = r ?: -EINVAL;
			continue;
		}
		if (k)
			seen[k - t->keys] = true;
		if (kv_set(t, obj, item, where) < 0)
			r = r ?: -EINVAL;
	}
	return r;
}

void kv_free(const struct kv_table *t, void *obj)
{
	for (size_t i = 0; i < t->n_keys; i++) {
		void *field = (char *)obj + t->keys[i].offset;
		switch (t->keys[i].type) {
		case KV_STRING:
		case KV_PATH:
		case KV_CHOICE:
			free(*(char **)field);
			*(char **)field = NULL;
			break;
		case KV_PATHLIST:
			strv_free(*(char ***)field);
			*(char ***)field = NULL;
			break;
		default:
			break;
		}
	}
}

void kv_print(const struct kv_table *t, const void *obj, FILE *out)
{
	static const char *const levels[] = { "error", "warn", "info",
					      "debug" };

	for (size_t i = 0; i < t->n_keys; i++) {
		const struct kv_key *k = &t->keys[i];
		const void *field = (const char *)obj + k->offset;
		const char *s = NULL;
		_cleanup_free_ char *joined = NULL;

		fprintf(out, "%s=", k->name);
		switch (k->type) {
		case KV_STRING:
		case KV_PATH:
		case KV_CHOICE:
			s = *(char *const *)field;
			break;
		case KV_PATHLIST: {
			const char sep[2] = { k->sep ?: ':', '\0' };

			s = joined = strv_join(
				(const char *const *)*(char **const *)field,
				sep);
			break;
		}
		case KV_BOOL:
			s = *(const bool *)field ? "yes" : "no";
			break;
		case KV_UINT:
			fprintf(out, "%u", *(const unsigned *)field);
			break;
		case KV_U64:
			fprintf(out, "%llu",
				(unsigned long long)*(const uint64_t *)field);
			break;
		case KV_ENUM:
			s = k->choices[*(const int *)field];
			break;
		case KV_LOGLEVEL:
			s = levels[*(const int *)field & 3];
			break;
		}
		fprintf(out, "%s\n", s ? s : "");
	}
}
