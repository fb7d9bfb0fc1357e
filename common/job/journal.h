/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The per-job state directory and its journal.
 *
 * <StateDir>/job-<id>.<restart>/ is root's (0711: the job user may reach
 * files it is given by name, e.g. its relay socket directory, but not list
 * or change anything). The journal records every change the prolog makes to
 * the host *before* it makes it; the epilog and `slurm-vm cleanup` replay it
 * backwards. Everything is opened relative to directory descriptors with
 * O_NOFOLLOW, and a journal that is not root's and private is refused, so
 * neither a symlink nor an edited journal can steer root.
 *
 * Journal format: one record a line, "VERB<TAB>ARG<TAB>ARG...\n"; arguments
 * are escaped (%XX for '%', TAB, newline and other control bytes).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOURNAL_FILE	 "journal"
#define JOURNAL_MAX_SIZE (1u << 20)
#define JOURNAL_MAX_ARGS 8
#define JOURNAL_ARG_MAX	 4096
/* Made by the relay when the job's memory cgroup OOM-kills the guest; the
 * batch step then ends the job OUT_OF_MEMORY (spank_vm, slurm-vm-adopt
 * --oom). */
#define GUEST_OOM_FILE "guest-oom"

struct journal_entry {
	char *verb;
	char *args[JOURNAL_MAX_ARGS + 1]; /* NULL-terminated */
	size_t n_args;
};

struct journal {
	struct journal_entry *entries;
	size_t n_entries;
};

/* "job-<id>.<restart>": a requeued job never meets its old state. */
int statedir_name(uint32_t job_id, unsigned restart, char *buf, size_t len);
/* Opens (and with @create makes) the job's state directory below
 * @state_dir; returns a directory descriptor or -errno. Refuses one that is
 * not root's or is writable by others. */
int statedir_open(const char *state_dir, const char *name, bool create);
/* Takes the state directory's lock (flock on @fd, released on close): one
 * prolog, epilog or reclaim at a time per job. Waits up to @wait_s seconds;
 * -EBUSY when another holds it still. */
int statedir_lock(int fd, unsigned wait_s);
/* Removes the state directory and everything in it (no symlink followed). */
int statedir_remove(const char *state_dir, const char *name);

/* Appends one record and fsyncs it; @args is NULL-terminated. */
int journal_append(int dirfd, const char *verb, const char *const *args);
/* Reads and checks the whole journal. A missing journal is an empty one. */
int journal_read(int dirfd, struct journal *j);
void journal_free(struct journal *j);
