/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The persona's format (doc/protocol.md, PERSONA): the job's identity for
 * a guest restored from a template, one "key=value" entry a line. Its one
 * owner: the prolog writes the file with it, the relay reads and sends it
 * with it, the agent gathers and checks it with it (agent/guest/persona.h
 * applies it). What a user influences (names, groups, home, keys) goes
 * through the same checks on every side, so a file the writer accepts is
 * one the relay sends and the agent takes.
 *
 * Keys, beside the general rule (a key of [A-Za-z0-9_.-], '=', no control
 * character, at most PERSONA_ENTRY_MAX bytes):
 *
 *   time=SEC.NSEC  entropy=HEX  more=1   the relay's own, never in the file
 *   hostname=NAME                        1..64 of [A-Za-z0-9.-_]
 *   group=NAME:GID                       NAME as persona_name_ok()
 *   user=NAME:UID:GID:HOME               HOME absolute, no ':'
 *   shell=PATH                           absolute, no ':'
 *   member=NAME
 *   authorized_key=LINE                  one authorized_keys line
 *   hosts=LINE  net=...  share=...       agent/guest/persona.h
 *
 * A persona larger than one frame goes as several PERSONA: all but the
 * last start with "more=1"; the agent answers once, after the last.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "channel/proto.h"

/* The file, and what the agent gathers over its frames: a -N 65534 job's
 * hosts= lines (87 bytes at most each) and 256 groups fit. */
#define PERSONA_FILE_MAX    (8u * 1024 * 1024)
#define PERSONA_MAX_ENTRIES 131072u
/* One entry, without its NUL: a home or share path and then some. */
#define PERSONA_ENTRY_MAX 8192u
#define PERSONA_NAME_MAX  255u
#define PERSONA_HOST_MAX  64u
#define PERSONA_MORE	  "more=1"

struct persona_user {
	char name[PERSONA_NAME_MAX + 1];
	unsigned uid, gid;
	char home[PROTO_MAX_PATH];
};

/* A user or group name the account files can hold: 1..255 bytes, not
 * starting with '-' or '+', none of space, control characters, ':', ','
 * and '/'. The one check of writer, relay and agent. */
bool persona_name_ok(const char *s);
bool persona_hostname_ok(const char *s);
/* NAME:GID; 0 or -EINVAL. */
int persona_parse_group(const char *v, char name[PERSONA_NAME_MAX + 1],
			unsigned *gid);
/* NAME:UID:GID:HOME; 0 or -EINVAL. */
int persona_parse_user(const char *v, struct persona_user *u);

/* 0, or -EINVAL with why in @why (@size bytes, may be 0; without the
 * key). @from_file: the relay's own keys (time, entropy, more) are
 * refused. Unknown keys pass the general rule only. */
int persona_entry_check(const char *entry, bool from_file, char *why,
			size_t size);

/* The prolog's side: each entry checked as the relay and the agent will,
 * the file's bounds kept. The first failure sticks: -EINVAL (an entry
 * the format cannot carry: the user's names, say), -E2BIG (beyond the
 * bounds), -EIO (the stream). */
struct persona_writer {
	FILE *f;
	size_t bytes, entries;
	int error;
};
void persona_writer_init(struct persona_writer *w, FILE *f);
int persona_writef(struct persona_writer *w, const char *key, const char *fmt,
		   ...) __attribute__((format(printf, 3, 4)));

/* The relay's side: @text (the file, NUL-terminated, split in place) into
 * its entries, # comments and empty lines skipped, each checked; @entries
 * a malloc'd NULL-terminated array pointing into @text. 0, or -EINVAL /
 * -E2BIG with why in @why. */
int persona_text_parse(char *text, char ***entries, size_t *count, char *why,
		       size_t size);
/* @entries (NULL-terminated) as one PERSONA or, beyond one frame, several:
 * all but the last start with PERSONA_MORE. */
int persona_frames_put(struct proto_buf *b, char *const *entries);

/* The agent's side: the entries of each PERSONA gathered until one
 * without PERSONA_MORE. take: 1 when @p holds the whole persona
 * (p->entries, NULL-terminated), 0 when more is to come, -E2BIG beyond
 * the bounds (@p is emptied), -ENOMEM. */
struct persona_parts {
	char **entries;
	size_t count, bytes;
};
int persona_parts_take(struct persona_parts *p, char *const *entries);
void persona_parts_free(struct persona_parts *p);
