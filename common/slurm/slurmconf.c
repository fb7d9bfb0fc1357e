/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "slurm/slurmconf.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"

/* Slurm has no bound; a file including itself would never end. */
#define INCLUDE_DEPTH_MAX 16
/* Nor on %c's expansions; a path names ClusterName a few times at most. */
#define INCLUDE_EXPAND_MAX 16

struct reader {
	struct slurmconf *sc;
	uint32_t release;
	const char *conf_path; /* slurm.conf itself */
};

static int slurmconf_add(struct slurmconf *sc, const char *key, size_t klen,
			 const char *value, size_t vlen, unsigned record)
{
	struct slurmconf_entry *e;

	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 64;
		struct slurmconf_entry *v = realloc(sc->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		sc->v = v;
		sc->cap = cap;
	}
	e = &sc->v[sc->n];
	e->key = strndup(key, klen);
	e->value = strndup(value, vlen);
	if (!e->key || !e->value) {
		free(e->key);
		free(e->value);
		return -ENOMEM;
	}
	e->record = record;
	sc->n++;
	return 0;
}

/* _strip_comments(): '#' not escaped by an odd run of '\' ends the line. */
static void strip_comment(char *line)
{
	unsigned backslashes = 0;

	for (char *p = line; *p; p++) {
		if (*p == '#' && backslashes % 2 == 0) {
			*p = '\0';
			return;
		}
		backslashes = *p == '\\' ? backslashes + 1 : 0;
	}
}

/* _strip_continuation(): an odd run of '\' at the end (blanks after it
 * allowed) joins the next line; true when it did, the '\' removed. */
static bool strip_continuation(char *line)
{
	size_t len = strlen(line), bs = 0;
	char *p = line + len;

	while (p > line && isspace((unsigned char)p[-1]) && !bs)
		p--;
	while (p > line && p[-1] == '\\') {
		bs++;
		p--;
	}
	if (bs % 2 == 0)
		return false;
	p[bs - 1] = '\0';
	return true;
}

/* _strip_escapes(): a '\' keeps the character after it, itself dropped. */
static void strip_escapes(char *line)
{
	char *out = line;

	for (char *p = line; *p; p++) {
		if (*p == '\\' && !*++p)
			break;
		*out++ = *p;
	}
	*out = '\0';
}

/* Appends @part to *@line. */
static int line_append(char **line, size_t *len, const char *part)
{
	size_t plen = strlen(part);
	char *grown = realloc(*line, *len + plen + 1);

	if (!grown)
		return -ENOMEM;
	memcpy(grown + *len, part, plen + 1);
	*line = grown;
	*len += plen;
	return 0;
}

/* The lines that hold a node, partition, ... and its attributes. */
static bool key_starts_record(const char *key, size_t len)
{
	static const char *const records[] = { "NodeName", "PartitionName",
					       "NodeSet", "DownNodes",
					       "FrontendName" };

	for (size_t i = 0; i < ARRAY_SIZE(records); i++)
		if (strlen(records[i]) == len &&
		    strncasecmp(records[i], key, len) == 0)
			return true;
	return false;
}

/* keyvalue_pattern: blanks, KEY of [alnum_.], blanks, an operator (+-*\/,
 * read as '='), '=', blanks, "VALUE" or VALUE up to a blank. */
static int parse_settings(struct slurmconf *sc, const char *line)
{
	const char *p = line;
	unsigned record = 0;

	for (;;) {
		const char *key, *value;
		size_t klen, vlen;
		int r = 0;

		while (isspace((unsigned char)*p))
			p++;
		key = p;
		while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
			p++;
		klen = (size_t)(p - key);
		while (isspace((unsigned char)*p))
			p++;
		if (*p && strchr("+-*/", *p))
			p++;
		if (!klen || *p != '=')
			return 0; /* not a setting: Slurm's parse error */
		p++;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '"' && strchr(p + 1, '"')) {
			value = p + 1;
			vlen = (size_t)(strchr(value, '"') - value);
			p = value + vlen + 1;
		} else {
			value = p;
			while (*p && !isspace((unsigned char)*p))
				p++;
			vlen = (size_t)(p - value);
		}
		/* the rest of the line is the record's, not global */
		if (!record && key_starts_record(key, klen)) {
			r = slurmconf_add(sc, key, klen, value, vlen, 0);
			record = ++sc->records;
		}
		if (r == 0)
			r = slurmconf_add(sc, key, klen, value, vlen, record);
		if (r < 0)
			return r;
	}
}

static int read_file(struct reader *rd, const char *path, unsigned depth);

/*
 * Each %c in NAME becomes the lower-cased ClusterName, again and again as
 * _parse_for_format() does until none is left: a ClusterName holding "%c"
 * would make that endless (slurmctld hangs), so the rounds are bounded.
 */
static int expand_cluster(const char *path, unsigned lineno, const char *name,
			  const char *cluster, char **ret)
{
	_cleanup_free_ char *lower = NULL, *file = strdup(name);
	const char *c;
	unsigned round = 0;

	if (!file)
		return -ENOMEM;
	while ((c = strstr(file, "%c"))) {
		char *next;

		if (!cluster)
			return log_errno(
				EINVAL,
				"%s:%u: Include %s: %%c is ClusterName, "
				"set on no line before",
				path, lineno, name);
		if (round++ == INCLUDE_EXPAND_MAX)
			return log_errno(
				ELOOP,
				"%s:%u: Include %s: %%c is back after %u "
				"expansions: ClusterName %s holds "
				"\"%%c\" (slurmctld would never start)",
				path, lineno, name, INCLUDE_EXPAND_MAX,
				cluster);
		if (!lower) {
			if (!(lower = strdup(cluster)))
				return -ENOMEM;
			for (char *l = lower; *l; l++)
				*l = (char)tolower((unsigned char)*l);
		}
		if (asprintf(&next, "%.*s%s%s", (int)(c - file), file, lower,
			     c + 2) < 0)
			return -ENOMEM;
		free(file);
		file = next;
	}
	*ret = TAKE_PTR(file);
	return 0;
}

/* _parse_include_directive(): "include FILE", any case. */
static int parse_include(struct reader *rd, const char *path, unsigned lineno,
			 const char *name, unsigned depth)
{
	_cleanup_free_ char *file = NULL, *dir = NULL, *full = NULL;
	int r;

	if (strchr(name, '*'))
		return log_errno(EINVAL,
				 "%s:%u: Include %s: Slurm reads no pattern "
				 "('*') there: slurmctld refuses to start",
				 path, lineno, name);
	r = expand_cluster(path, lineno, name,
			   slurmconf_get(rd->sc, "ClusterName"), &file);
	if (r < 0)
		return r;
	if (file[0] != '/') {
		dir = strdup(slurm_include_from_conf_dir(rd->release)
				     ? rd->conf_path
				     : path);
		if (!dir || asprintf(&full, "%s/%s", dirname(dir), file) < 0)
			return -ENOMEM;
	}
	if (depth == INCLUDE_DEPTH_MAX)
		return log_errno(ELOOP,
				 "%s:%u: Include %s: includes nest deeper than "
				 "%u: does a file include itself?",
				 path, lineno, name, INCLUDE_DEPTH_MAX);
	/* Errors further in name their own file and line. */
	if (access(full ? full : file, R_OK) < 0)
		return log_errno(errno, "%s:%u: Include %s: cannot read %s",
				 path, lineno, name, full ? full : file);
	return read_file(rd, full ? full : file, depth + 1);
}

static int read_file(struct reader *rd, const char *path, unsigned depth)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL, *part = NULL;
	size_t line_len = 0, part_size = 0;
	unsigned lineno = 0;

	f = fopen(path, "re");
	if (!f)
		return log_errno(errno, "cannot read %s", path);
	while (getline(&part, &part_size, f) > 0) {
		unsigned first = ++lineno;
		bool more;
		int r = 0;
		char *s;

		strip_comment(part);
		more = strip_continuation(part);
		r = line_append(&line, &line_len, part);
		if (r < 0)
			return r;
		if (more)
			continue;
		strip_escapes(line);
		for (s = line; *s && *s != '\n'; s++)
			;
		*s = '\0';
		if (strncasecmp(line, "include", 7) == 0 &&
		    isspace((unsigned char)line[7])) {
			char *name = line + 7;

			name += strspn(name, " \t");
			name[strcspn(name, " \t")] = '\0';
			r = parse_include(rd, path, first, name, depth);
		} else {
			r = parse_settings(rd->sc, line);
		}
		if (r < 0)
			return r;
		line[0] = '\0';
		line_len = 0;
	}
	return 0;
}

int slurmconf_read_release(const char *path, uint32_t release,
			   struct slurmconf *sc)
{
	struct reader rd = { .sc = sc, .release = release, .conf_path = path };
	int r;

	*sc = (struct slurmconf){ 0 };
	r = read_file(&rd, path, 0);
	if (r < 0)
		slurmconf_free(sc);
	return r;
}

int slurmconf_read(const char *path, struct slurmconf *sc)
{
	return slurmconf_read_release(path, slurm_compat_release(), sc);
}

void slurmconf_free(struct slurmconf *sc)
{
	for (size_t i = 0; i < sc->n; i++) {
		free(sc->v[i].key);
		free(sc->v[i].value);
	}
	free(sc->v);
	*sc = (struct slurmconf){ 0 };
}

const char *slurmconf_next(const struct slurmconf *sc, const char *key,
			   size_t *pos)
{
	for (; *pos < sc->n; (*pos)++)
		if (!sc->v[*pos].record &&
		    strcasecmp(sc->v[*pos].key, key) == 0)
			return sc->v[(*pos)++].value;
	return NULL;
}

const char *slurmconf_get(const struct slurmconf *sc, const char *key)
{
	const char *last = NULL, *v;
	size_t pos = 0;

	while ((v = slurmconf_next(sc, key, &pos)))
		last = v;
	return last;
}

/* @key in record @record from entry @i on, or NULL. */
static const char *record_get(const struct slurmconf *sc, size_t i,
			      unsigned record, const char *key)
{
	for (; i < sc->n && sc->v[i].record <= record; i++)
		if (sc->v[i].record == record &&
		    strcasecmp(sc->v[i].key, key) == 0)
			return sc->v[i].value;
	return NULL;
}

const char *slurmconf_node_get(const struct slurmconf *sc, const char *node,
			       const char *key)
{
	const char *def = NULL;

	for (size_t i = 0; i < sc->n; i++) {
		const struct slurmconf_entry *e = &sc->v[i];
		const char *v;

		if (!e->record || strcasecmp(e->key, "NodeName") ||
		    (i && sc->v[i - 1].record == e->record))
			continue;
		v = record_get(sc, i, e->record, key);
		if (strcasecmp(e->value, "DEFAULT") == 0)
			def = v ?: def;
		else if (slurm_hostlist_position(e->value, node) >= 0)
			return v ?: def;
	}
	return NULL;
}

bool slurmconf_runs_script(const struct slurmconf *sc, uint32_t release,
			   enum slurm_script which, const char *name,
			   char *found, size_t found_size)
{
	const char *key = which == SLURM_PROLOG ? "Prolog" : "Epilog";
	bool all = slurm_scripts_accumulate(release), runs = false;
	size_t pos = 0, used = 0;
	const char *v;

	found[0] = '\0';
	while ((v = slurmconf_next(sc, key, &pos))) {
		const char *base = strrchr(v, '/') ? strrchr(v, '/') + 1 : v;
		bool ours = strcmp(base, name) == 0;

		if (!all) {
			runs = ours;
			snprintf(found, found_size, "%s", v);
			continue;
		}
		runs = runs || ours;
		if (used < found_size)
			used += (size_t)snprintf(found + used,
						 found_size - used, "%s%s",
						 used ? ", " : "", v);
	}
	return runs;
}

int slurmconf_script_timeout(const struct slurmconf *sc, uint32_t release,
			     enum slurm_script which, unsigned *secs,
			     const char **key)
{
	const char *own =
		which == SLURM_PROLOG ? "PrologTimeout" : "EpilogTimeout";
	const char *text = NULL;

	*key = NULL;
	if (slurm_has_script_timeouts(release) && slurmconf_get(sc, own))
		*key = own;
	else if (slurmconf_get(sc, "PrologEpilogTimeout"))
		*key = "PrologEpilogTimeout";
	*secs = SLURMCONF_TIMEOUT_UNLIMITED;
	if (!*key)
		return 0;
	text = slurmconf_get(sc, *key);
	/* s_p_handle_uint16()'s words for INFINITE16 */
	if (strcasecmp(text, "UNLIMITED") == 0 ||
	    strcasecmp(text, "INFINITE") == 0)
		return 0;
	if (str_to_uint(text, secs) < 0 || *secs > 65535)
		return -EINVAL;
	if (*secs >= SLURMCONF_TIMEOUT_UNLIMITED)
		*secs = SLURMCONF_TIMEOUT_UNLIMITED;
	return 0;
}
