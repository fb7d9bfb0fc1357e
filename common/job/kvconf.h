/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Strict "Key=Value" files (vm.conf, image catalog descriptors) described by
 * a table of typed keys stored at offsets of a struct. Keys are
 * case-insensitive as in slurm.conf; blanks around '=' and '#' comments are
 * allowed. Unknown keys, bad values and duplicates are errors with file:line
 * and a "did you mean" hint: a typo in root configuration is never ignored.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum kv_type {
	KV_STRING,   /* char * */
	KV_PATH,     /* char *, absolute */
	KV_PATHLIST, /* char **, absolute paths separated by sep (':') */
	KV_BOOL,     /* bool */
	KV_UINT,     /* unsigned, 0..max */
	KV_U64,	     /* uint64_t, 0..max */
	KV_ENUM,     /* int: index into choices */
	KV_CHOICE,   /* char *: one of choices */
	KV_LOGLEVEL, /* int: enum log_level */
};

struct kv_key {
	const char *name;
	enum kv_type type;
	size_t offset;
	const char *const *choices; /* KV_ENUM, KV_CHOICE */
	uint64_t max;		    /* KV_UINT, KV_U64 */
	const char *defval;	    /* applied by kv_defaults() */
	char sep;		    /* KV_PATHLIST; 0: ':' */
};

struct kv_table {
	const struct kv_key *keys;
	size_t n_keys;
	const char *manual; /* named in errors, e.g. "vm.conf(5)" */
};

int kv_defaults(const struct kv_table *t, void *obj);
/* One item "Key=Value"; @where prefixes error messages. */
int kv_set(const struct kv_table *t, void *obj, const char *item,
	   const char *where);
/* A whole file; every bad line is reported, the first error returned. */
int kv_parse_file(const struct kv_table *t, void *obj, const char *path);
void kv_free(const struct kv_table *t, void *obj);
void kv_print(const struct kv_table *t, const void *obj, FILE *out);
