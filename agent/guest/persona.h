/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The job's identity for a guest restored from a saved template guest
 * (PERSONA, issue #30): what a cold boot's seed (cloud-init, or
 * tests/guest/files/seed) gives the guest, applied by the agent before the
 * host counts the guest as ready. Keys, applied in this order whatever the
 * order of the entries:
 *
 *   time=SEC.NSEC          the realtime clock (the saved one lags)
 *   entropy=HEX            mixed into the kernel's pool, the CRNG reseeded;
 *                          then a new /etc/machine-id and, where the
 *                          template has ssh host keys, new ones
 *   hostname=NAME          sethostname, /etc/hostname, the agent's identity
 *   group=NAME:GID         repeatable: /etc/group, unless NAME exists
 *   user=NAME:UID:GID:HOME /etc/passwd (and /etc/shadow), unless NAME exists
 *   shell=PATH             user='s shell where the guest has it
 *   member=GROUP           repeatable: user= NAME joins GROUP
 *   hosts=LINE             repeatable: the job's block of /etc/hosts
 *   net=MAC IFNAME ADDR/PREFIX MTU   the job network's NIC
 *   share=TAG TRANSPORT OPTIONS PATH repeatable: a share mounted at PATH
 *   authorized_key=LINE    repeatable: HOME/.ssh/authorized_keys, the user's
 *
 * The format, its bounds and the checks of every entry are
 * channel/persona_format.h's; an entry that fails them is a failure of its key.
 * The user's home is made last, after the shares: it may lie on one, as on
 * a cold boot. Applying the same entries twice gives the same guest.
 * Unknown keys are logged, not failures.
 */
#include <stddef.h>
#include <sys/types.h>

#include "channel/persona_format.h"
#include "channel/proto.h"

#define PERSONA_HOSTS_BEGIN "# slurm-vm job hosts begin"
#define PERSONA_HOSTS_END   "# slurm-vm job hosts end"

struct persona_result {
	unsigned failures;
	char text[PROTO_MAX_ERROR + 1]; /* "key: why; key: why" */
};

/* Applies @entries (key=value, NULL-terminated) to the guest whose files
 * are under @root ("/"; its /proc is @root/proc). A hostname= taken goes
 * into @identity (of @identity_size bytes). Never fails as a whole: what
 * failed is in @res. New SSH host keys are made, and a running sshd
 * restarted with them, before it returns. */
void persona_apply(char *const *entries, const char *root, char *identity,
		   size_t identity_size, struct persona_result *res);

/* The file edits, on the files under @root (tests: a directory of their
 * own): 0 or -errno. Each leaves a file that already has the entry as it
 * is; a file is replaced whole (temporary file, rename), keeping its mode
 * and owner. */
int persona_group_add(const char *root, const char *name, unsigned gid);
/* @shell: NULL or one the guest lacks is /bin/bash where there is one,
 * else /bin/sh. */
int persona_user_add(const char *root, const char *name, unsigned uid,
		     unsigned gid, const char *home, const char *shell);
/* @home/.ssh/authorized_keys (under @root) gets the @n @keys it lacks;
 * .ssh made 0700, the file 0600, both @uid:@gid. Every step is an fd
 * opened with O_NOFOLLOW: a symlink is -ELOOP. */
int persona_keys_install(const char *root, const char *home, unsigned uid,
			 unsigned gid, char *const *keys, size_t n);
/* -ENOENT: no such group. */
int persona_member_add(const char *root, const char *group, const char *user);
/* /etc/hosts keeps all but the block between PERSONA_HOSTS_BEGIN and
 * PERSONA_HOSTS_END, which becomes @lines (appended when there was none). */
int persona_hosts_set(const char *root, char *const *lines, size_t n);
/* mkdir -p @path, @mode for what it makes: 1 when it made @path itself, 0
 * when it existed, -errno. */
int persona_mkdir_p(const char *path, mode_t mode);
