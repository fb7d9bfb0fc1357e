/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* String helpers. Numbers are parsed strictly: no sign, no blanks, no
 * trailing garbage, no overflow, because most numbers we parse are user input. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int str_to_u64(const char *s, uint64_t *out);
int str_to_uint(const char *s, unsigned *out);
/* "512M", "4G", "1024" (MiB when no suffix) -> MiB. */
int str_to_mib(const char *s, uint64_t *mib);

/* Splits @s on @sep into a NULL-terminated array; empty items are dropped. */
int strv_split(const char *s, char sep, char ***out);
char *strv_join(const char *const *v, const char *sep);
size_t strv_length(char *const *v);
/* A deep copy of the NULL-terminated @v (NULL: out of memory). */
char **strv_copy(char *const *v);
void strv_free(char **v);
static inline void strv_freep(char ***v)
{
	strv_free(*v);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))

/* Case-insensitive Levenshtein distance, for "did you mean" hints. */
unsigned str_edit_distance_ci(const char *a, const char *b);

/* Letters, digits, '-', '_', '.', not starting with '.' or '-'. Safe as a
 * file name, an XML attribute and a libvirt name. */
bool str_is_safe_name(const char *s, size_t max);

/* Valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF) without
 * control characters (C0, DEL, C1): text that XML carries byte for byte. */
bool str_is_utf8_text(const char *s);
