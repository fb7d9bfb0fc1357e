/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Small helpers every room uses: scope-bound cleanup (one cleanup path per
 * function without goto ladders) and array sizes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_(f)	   __attribute__((cleanup(f)))
#define _cleanup_free_	   _cleanup_(freep)
#define _cleanup_close_	   _cleanup_(closep)
#define _cleanup_fclose_   _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)
#define _printf_(a, b)	   __attribute__((format(printf, a, b)))
#define _unused_	   __attribute__((unused))

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                     \
	({                              \
		__typeof__(p) _p = (p); \
		(p) = NULL;             \
		_p;                     \
	})
#define TAKE_FD(fd)             \
	({                      \
		int _fd = (fd); \
		(fd) = -1;      \
		_fd;            \
	})
