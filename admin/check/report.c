/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check-config's report: one line per check (ok, problem with its fix,
 * warning, note) and the count of problems.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "check.h"
#include "core/strutil.h"

void check_ok(const char *fmt, ...)
{
	va_list ap;

	printf("ok:      ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void check_problem(struct checker *c, const char *fix, const char *fmt, ...)
	_printf_(3, 4);
void check_problem(struct checker *c, const char *fix, const char *fmt, ...)
{
	va_list ap;

	printf("problem: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n         fix: %s\n", fix);
	c->problems++;
}

/* A line that @label says and its @fix: not counted. */
static void check_say(const char *label, const char *fix, const char *fmt,
		      va_list ap)
{
	printf("%-9s", label);
	vprintf(fmt, ap);
	printf("\n         fix: %s\n", fix);
}

/* Worth the admin's look, but the suite works: not counted. */
void check_warn(const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_say("warning:", fix, fmt, ap);
	va_end(ap);
}

/* What the admin should know, not a fault: not counted. */
void check_note(const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_say("note:", fix, fmt, ap);
	va_end(ap);
}

/* Is @item one of the comma-separated words of @list (case-insensitive)? */
bool list_has(const char *list, const char *item)
{
	_cleanup_strv_free_ char **v = NULL;

	if (!list || strv_split(list, ',', &v) < 0)
		return false;
	for (char **p = v; *p; p++)
		if (strcasecmp(*p, item) == 0)
			return true;
	return false;
}
