/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front/front.h"
#include "core/log.h"
#include "job/request.h"

static int front_exec(const char *name, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/%s", self, name);
			if (access(path, X_OK) == 0)
				execv(path, argv);
		}
	}
	snprintf(path, sizeof(path), "%s/%s", PKGLIBEXECDIR, name);
	execv(path, argv);
	return log_errno(errno, "cannot run %s (looked beside %s and in %s)",
			 name, n > 0 ? self : "this program", PKGLIBEXECDIR);
}

int front_main(const char *ident, const char *name, char **argv)
{
	const char *image = getenv(REQUEST_ENV(REQUEST_IMAGE));

	if (!image || !*image)
		return EXIT_SUCCESS;
	log_open(ident);
	front_exec(name, argv);
	return EXIT_FAILURE;
}
