/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/macro.h"
#include "job/multiprog.h"
#include "core/strutil.h"

/* The arguments being built; @open says the current one has begun (an
 * empty quoted '' is an argument, as in slurmstepd). */
struct args {
	char **v;
	size_t n;
	char *cur;
	size_t cur_len;
	bool open;
};

static int args_append(struct args *a, const char *s, size_t len)
{
	char *p = realloc(a->cur, a->cur_len + len + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p + a->cur_len, s, len);
	a->cur_len += len;
	p[a->cur_len] = '\0';
	a->cur = p;
	a->open = true;
	return 0;
}

static int args_push(struct args *a, char *s)
{
	if (!s)
		return -ENOMEM;
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

static int args_end_current(struct args *a)
{
	int r;

	if (!a->open)
		return 0;
	r = args_push(a, a->cur ? a->cur : strdup(""));
	a->cur = NULL;
	a->cur_len = 0;
	a->open = false;
	return r;
}

static unsigned leading_number(const char *s)
{
	return (unsigned)strtoul(s, NULL, 10);
}

/* Whether @rank is in @spec ('*' or "N,N-M,..."); @offset: the rank's
 * position counting the ranks of the items before. Bad items are skipped,
 * as slurmstepd does. */
static bool rank_in_spec(unsigned rank, const char *spec, unsigned *offset)
{
	_cleanup_strv_free_ char **items = NULL;
	unsigned passed = 0;

	if (strcmp(spec, "*") == 0) {
		*offset = rank;
		return true;
	}
	if (strv_split(spec, ',', &items) < 0)
		return false;
	for (char **it = items; *it; it++) {
		const char *p = *it, *upper;
		unsigned low, high;

		while (isdigit((unsigned char)*p))
			p++;
		if (*p == '\0') {
			if (rank == leading_number(*it)) {
				*offset = passed;
				return true;
			}
			passed++;
			continue;
		}
		if (*p != '-')
			continue;
		upper = ++p;
		while (isdigit((unsigned char)*p))
			p++;
		if (*p != '\0')
			continue;
		low = leading_number(*it);
		high = leading_number(upper);
		if (rank >= low && rank <= high) {
			*offset = passed + rank - low;
			return true;
		}
		passed += 1 + high - low;
	}
	return false;
}

struct lines {
	char **v;
	size_t next;
};

/* The arguments of a matched line, from @s; continuation lines are taken
 * from @ln. */
static int parse_args(const char *s, struct lines *ln, unsigned rank,
		      unsigned offset, struct args *a)
{
	char num[16];
	int r = 0;

	while (*s && r == 0) {
		r = args_end_current(a);
		if (r < 0 || a->n + 1 >= MULTIPROG_MAX_ARGC)
			break;
		for (;;) {
			const char *start = s;

			while (*s && !strchr("\\%'", *s) &&
			       !isspace((unsigned char)*s))
				s++;
			r = args_append(a, start, (size_t)(s - start));
			if (r < 0 || *s == '\0')
				break;
			if (*s == '%') {
				s++;
				if (*s == 't' || *s == 'o') {
					snprintf(num, sizeof(num), "%u",
						 *s == 't' ? rank : offset);
					r = args_append(a, num, strlen(num));
				}
				if (*s)
					s++;
			} else if (*s == '\\') {
				s++;
				if (*s) {
					r = args_append(a, s++, 1);
				} else if (ln->v[ln->next]) {
					s = ln->v[ln->next++];
				} else {
					break;
				}
			} else if (*s == '\'') {
				start = ++s;
				while (*s && *s != '\'')
					s++;
				/* slurmstepd mangles a quote across lines */
				if (*s == '\0')
					return -EINVAL;
				r = args_append(a, start, (size_t)(s - start));
				s++;
			} else {
				while (isspace((unsigned char)*s))
					s++;
				break;
			}
			if (r < 0)
				break;
		}
	}
	if (r == 0)
		r = args_end_current(a);
	return r;
}

/* The first line for @rank, from its arguments on; NULL: none. */
static const char *find_line(struct lines *ln, unsigned rank, unsigned *offset,
			     int *err)
{
	bool last_break = false;
	char *line;

	while ((line = ln->v[ln->next])) {
		size_t len = strlen(line);
		bool brk = len > 0 && line[len - 1] == '\\';
		char *p = line, *spec;

		ln->next++;
		if (last_break) {
			last_break = brk;
			continue;
		}
		last_break = brk;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '#' || *p == '\0')
			continue;
		spec = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (*p == '\0') {
			*err = -EINVAL;
			return NULL;
		}
		*p++ = '\0';
		if (!rank_in_spec(rank, spec, offset))
			continue;
		while (isspace((unsigned char)*p))
			p++;
		return p;
	}
	*err = -ENOENT;
	return NULL;
}

int multiprog_task_argv(const char *config, unsigned rank, char *const *extra,
			size_t n_extra, char ***argv)
{
	_cleanup_strv_free_ char **lines = NULL;
	struct lines ln = { 0 };
	struct args a = { 0 };
	unsigned offset = 0;
	const char *args;
	int r = 0;

	if (strv_split(config, '\n', &lines) < 0)
		return -ENOMEM;
	ln.v = lines;
	args = find_line(&ln, rank, &offset, &r);
	if (!args)
		return r;
	a.v = calloc(MULTIPROG_MAX_ARGC, sizeof(*a.v));
	if (!a.v)
		return -ENOMEM;
	r = parse_args(args, &ln, rank, offset, &a);
	for (size_t i = 0; r == 0 && i < n_extra; i++) {
		if (a.n + 1 >= MULTIPROG_MAX_ARGC)
			break;
		r = args_push(&a, strdup(extra[i]));
	}
	if (r == 0 && a.n == 0)
		r = -EINVAL;
	free(a.cur);
	if (r < 0) {
		strv_free(a.v);
		return r;
	}
	*argv = a.v;
	return 0;
}
