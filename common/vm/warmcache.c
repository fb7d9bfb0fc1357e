/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "vm/warmcache.h"

int warmcache_remove_tree(const char *path)
{
	char *const argv[] = { "/bin/rm", "-rf", "--", (char *)path, NULL };
	char out[256];

	return run_wait(argv, 60, out, sizeof(out));
}

static int entry_by_use(const void *a, const void *b)
{
	const struct warmcache_entry *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return (x->used.tv_nsec > y->used.tv_nsec) -
	       (x->used.tv_nsec < y->used.tv_nsec);
}

bool warmcache_is_key(const char *name)
{
	return strlen(name) == WARMCACHE_KEY_LEN &&
	       strspn(name, "0123456789abcdef") == WARMCACHE_KEY_LEN;
}

static uint64_t dir_bytes(int dfd)
{
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	struct dirent *e;
	struct stat st;
	uint64_t sum = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	while ((e = readdir(d)))
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
			    0 &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	return sum;
}

/* What WarmDir/@name is: 0 with @e filled, -ENOENT when it is no template
 * directory. */
static int entry_read(int dir_fd, const char *name, struct warmcache_entry *e)
{
	struct stat st;
	int dfd;

	if (!warmcache_is_key(name) ||
	    fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode))
		return -ENOENT;
	dfd = openat(dir_fd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -ENOENT;
	*e = (struct warmcache_entry){ .used = st.st_mtim };
	memcpy(e->key, name, WARMCACHE_KEY_LEN); /* warmcache_is_key */
	if (fstatat(dfd, WARMCACHE_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		e->whole = true;
		e->used = st.st_mtim;
	}
	e->bytes = dir_bytes(dfd);
	return 0;
}

int warmcache_list(const char *dir, struct warmcache_entry **entries, size_t *n)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct warmcache_entry *v = NULL, e;
	size_t cap = 0;
	struct dirent *de;

	*entries = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (entry_read(dirfd(d), de->d_name, &e) < 0)
			continue;
		if (*n == cap) {
			struct warmcache_entry *m =
				realloc(v, (cap = cap * 2 + 8) * sizeof(*v));

			if (!m) {
				free(v);
				return -ENOMEM;
			}
			v = m;
		}
		v[(*n)++] = e;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), entry_by_use);
	*entries = v;
	return 0;
}

int warmcache_drop(const char *dir, const char *key)
{
	_cleanup_free_ char *lock = NULL, *path = NULL;
	_cleanup_close_ int fd = -1;

	if (!warmcache_is_key(key))
		return -EINVAL;
	if (asprintf(&lock, "%s/%s.lock", dir, key) < 0 ||
	    asprintf(&path, "%s/%s", dir, key) < 0)
		return -ENOMEM;
	/*
	 * Held exclusive for the whole removal, made if missing (a builder
	 * may make it meanwhile), and never unlinked: a builder that opened
	 * it before would lock the unlinked inode while the next made a new
	 * file, and both would build in one directory.
	 */
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return -EBUSY;
	if (warmcache_remove_tree(path) != 0)
		return -EIO;
	return 0;
}

void warmcache_evict(const char *dir, unsigned max_templates,
		     uint64_t max_bytes)
{
	_cleanup_free_ struct warmcache_entry *e = NULL;
	uint64_t total = 0;
	size_t n, left = 0;

	if (warmcache_list(dir, &e, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].whole) {
			if (warmcache_drop(dir, e[i].key) == 0)
				log_info("warm template %s was unfinished: "
					 "dropped",
					 e[i].key);
			continue;
		}
		left++;
		total += e[i].bytes;
	}
	for (size_t i = 0; i < n && (left > max_templates || total > max_bytes);
	     i++) {
		if (!e[i].whole || warmcache_drop(dir, e[i].key) < 0)
			continue;
		log_info("warm template %s dropped, used longest ago: %zu "
			 "templates of %" PRIu64 " MiB were above the bounds "
			 "(WarmTemplates=%u, WarmCacheSize=%" PRIu64 " MiB)",
			 e[i].key, left, total >> 20, max_templates,
			 max_bytes >> 20);
		left--;
		total -= e[i].bytes;
	}
}
