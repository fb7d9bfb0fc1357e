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

/* The journal's verbs, each defined here alone: a writer names one by its
 * enum value, the replay (common/vm/teardown.c) and the classifiers look
 * its name, argument count and flags up in journal_verbs[]. A record of a
 * name not in the table (an old journal) reads as JOURNAL_UNKNOWN and the
 * replay skips it with an error. tests/unit/test_journal_verbs.sh fails on
 * a verb's quoted name anywhere else in the C sources. doc/design.md,
 * section 4, says what each record is and how it is undone. */
enum journal_verb {
	JOURNAL_OVERLAY,   /* path: the job's qcow2 overlay */
	JOURNAL_NVRAM,	   /* path: the job's UEFI variables */
	JOURNAL_SEED,	   /* name: the cloud-init seed in the state dir */
	JOURNAL_VIRTIOFSD, /* pid file virtiofsd-N.pid */
	JOURNAL_DOMAIN,	   /* libvirt domain name */
	JOURNAL_RELAY,	   /* the relay's pid file */
	JOURNAL_DEVOWNER,  /* device file, uid, gid, mode */
	JOURNAL_DETACH,	   /* PCI address (DeviceBinding=managed) */
	JOURNAL_NETLINK,   /* interface (bridge, VXLAN) */
	JOURNAL_NFT,	   /* nftables family, table */
	JOURNAL_IBGUID,	   /* VF sysfs directory, node, port GUID, policy */
	JOURNAL_IBRECORD,  /* the job's partition record's path */
	JOURNAL_N_VERBS,
	JOURNAL_UNKNOWN = JOURNAL_N_VERBS, /* read from disk: not ours */
};

enum journal_verb_flags {
	/* a file a kept guest leaves (--vm-keep) */
	JOURNAL_KEPT_FILE = 1u << 0,
	/* keeps the guest apart from other jobs': its network's filters and
	 * bridge, its VFs' GUIDs and partition record */
	JOURNAL_ISOLATES = 1u << 1,
	/* shared by every incarnation of a job: what isolates it (named by
	 * the job id, or the VF) and the devices of its GRES */
	JOURNAL_PER_JOB = 1u << 2,
	/* the guest's own processes and files: what a guest that cannot be
	 * the job's leaves (a warm start falling back to a cold boot) */
	JOURNAL_GUEST = 1u << 3,
};

struct journal_verb_info {
	const char *name;
	size_t n_args;
	unsigned flags; /* enum journal_verb_flags */
};

extern const struct journal_verb_info journal_verbs[JOURNAL_N_VERBS];

/* @verb's name; "?" for JOURNAL_UNKNOWN or out of range. */
const char *journal_verb_name(enum journal_verb verb);
/* The verb named @name, JOURNAL_UNKNOWN when none. */
enum journal_verb journal_verb_lookup(const char *name);
/* Whether @verb (JOURNAL_UNKNOWN: none) has all of @flags. */
bool journal_verb_is(enum journal_verb verb, unsigned flags);

struct journal_entry {
	char *verb;		/* as read: names an unknown verb too */
	enum journal_verb kind; /* JOURNAL_UNKNOWN: @verb is not in the table */
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

/* Appends one record and fsyncs it; @args is NULL-terminated. A @verb
 * not in the table is -EINVAL (logged). */
int journal_append(int dirfd, enum journal_verb verb, const char *const *args);
/* Reads and checks the whole journal. A missing journal is an empty one. */
int journal_read(int dirfd, struct journal *j);
void journal_free(struct journal *j);
