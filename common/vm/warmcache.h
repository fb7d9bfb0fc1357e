/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * BootMode=warm's templates in WarmDir (doc/design.md section 7), for the
 * prolog that makes and restores them and `slurm-vm warm` that lists and
 * drops them. A template is WarmDir/KEY/ (KEY: WARMCACHE_KEY_LEN hex
 * digits) with, last, its marker WARMCACHE_MARKER; WarmDir/KEY.lock is
 * held shared by a prolog that restores it, exclusive by one that makes or
 * drops it; it is never removed (see warmcache_drop()), one empty file per
 * key ever made. The marker's mtime is when a job last used it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define WARMCACHE_KEY_LEN 16
#define WARMCACHE_MARKER  "template"

struct warmcache_entry {
	char key[WARMCACHE_KEY_LEN + 1];
	bool whole; /* its marker is there */
	struct timespec used;
	uint64_t bytes; /* on disk */
};

bool warmcache_is_key(const char *name);
/* The templates in @dir, least recently used first (malloc'd). */
int warmcache_list(const char *dir, struct warmcache_entry **entries,
		   size_t *n);
/* Drops template @key unless a prolog uses or makes it: 0, -EBUSY, or
 * -errno when its lock file cannot be opened or made. */
int warmcache_drop(const char *dir, const char *key);
/* Keeps @dir within @max_templates and @max_bytes, the templates used
 * longest ago dropped first; unfinished ones nobody makes go at once. */
void warmcache_evict(const char *dir, unsigned max_templates,
		     uint64_t max_bytes);
/* rm -rf @path: 0 or rm's status. */
int warmcache_remove_tree(const char *path);
