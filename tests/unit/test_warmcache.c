/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * WarmDir's bounds (common/vm/warmcache.c): beyond WarmTemplates= or
 * WarmCacheSize= the templates used longest ago go first, one a prolog
 * holds (its lock) stays, an unfinished one nobody makes goes at once, and
 * what is no template (another name, a file) is never touched.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "vm/warmcache.h"

struct ctx {
	char dir[64];
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	snprintf(c->dir, sizeof(c->dir), "/tmp/svm-warmcache-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	assert_int_equal(warmcache_remove_tree(c->dir), 0);
	free(c);
	return 0;
}

/* A template @key of @mib MiB, last used @age seconds ago; !@whole: no
 * marker (being made). */
static void make(struct ctx *c, const char *key, unsigned mib, time_t age,
		 bool whole)
{
	char path[256];
	struct timespec t[2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", c->dir, key);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s/state.save", c->dir, key);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	for (unsigned i = 0; i < mib * 16; i++) {
		static char block[65536] = { 1 };

		assert_int_equal(write(fd, block, sizeof(block)),
				 (ssize_t)sizeof(block));
	}
	close(fd);
	if (!whole)
		return;
	snprintf(path, sizeof(path), "%s/%s/" WARMCACHE_MARKER, c->dir, key);
	fd = open(path, O_WRONLY | O_CREAT, 0444);
	assert_true(fd >= 0);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age;
	t[1] = t[0];
	assert_int_equal(futimens(fd, t), 0);
	close(fd);
}

static bool exists(struct ctx *c, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	return access(path, F_OK) == 0;
}

static void test_bounds(void **state)
{
	struct ctx *c = *state;
	struct warmcache_entry *e;
	size_t n;
	char lock[256];
	int fd;

	make(c, "00000000000000a1", 1, 300, true);
	make(c, "00000000000000a2", 1, 200, true);
	make(c, "00000000000000a3", 1, 100, true);
	make(c, "00000000000000a4", 1, 0, false);
	make(c, "not-a-template", 1, 0, false);
	assert_int_equal(warmcache_list(c->dir, &e, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(e[0].key, "00000000000000a1"); /* oldest */
	assert_true(e[0].whole);
	assert_true(e[0].bytes >= 1u << 20);
	free(e);

	/* the oldest, a1, is held: a2 goes instead; a4 was unfinished */
	snprintf(lock, sizeof(lock), "%s/00000000000000a1.lock", c->dir);
	fd = open(lock, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_SH), 0);
	warmcache_evict(c->dir, 2, UINT64_MAX);
	assert_true(exists(c, "00000000000000a1"));
	assert_false(exists(c, "00000000000000a2"));
	assert_true(exists(c, "00000000000000a3"));
	assert_false(exists(c, "00000000000000a4"));
	assert_true(exists(c, "not-a-template"));
	assert_int_equal(warmcache_drop(c->dir, "00000000000000a1"), -EBUSY);
	close(fd);

	/* by size: 1 MiB allowed, so only the newest stays */
	warmcache_evict(c->dir, 10, 1u << 20);
	assert_false(exists(c, "00000000000000a1"));
	assert_true(exists(c, "00000000000000a3"));
	assert_int_equal(warmcache_drop(c->dir, "../x"), -EINVAL);
}

/* A drop keeps KEY.lock's inode: a builder that opened it before the drop
 * and locks it after still excludes the next builder, who opens the same
 * file (issue #41: the unlinked lock let two build in one directory). */
static void test_drop_keeps_lock(void **state)
{
	struct ctx *c = *state;
	struct stat held, now;
	char lock[256];
	int fd, next;

	make(c, "00000000000000b1", 1, 0, true);
	snprintf(lock, sizeof(lock), "%s/00000000000000b1.lock", c->dir);
	fd = open(lock, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(warmcache_drop(c->dir, "00000000000000b1"), 0);
	assert_false(exists(c, "00000000000000b1"));
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(fstat(fd, &held), 0);
	assert_int_equal(stat(lock, &now), 0);
	assert_true(held.st_dev == now.st_dev && held.st_ino == now.st_ino);
	next = open(lock, O_RDWR | O_CREAT, 0600);
	assert_true(next >= 0);
	assert_int_equal(flock(next, LOCK_SH | LOCK_NB), -1);
	close(next);
	/* held: no drop; released: dropped, the lock file still there */
	make(c, "00000000000000b1", 1, 0, true);
	assert_int_equal(warmcache_drop(c->dir, "00000000000000b1"), -EBUSY);
	assert_true(exists(c, "00000000000000b1"));
	close(fd);
	assert_int_equal(warmcache_drop(c->dir, "00000000000000b1"), 0);
	assert_false(exists(c, "00000000000000b1"));
	assert_int_equal(stat(lock, &now), 0);
	assert_true(held.st_ino == now.st_ino);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_keeps_lock, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
