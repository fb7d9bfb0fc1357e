/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Starting one task in the guest: fork, own session, affinity, identity,
 * umask, propagated limits, cwd and TMPDIR as slurmstepd does them, exec
 * with PATH search in the task's own environment. */
#include <stdint.h>
#include <sys/types.h>

#include "channel/proto.h"

enum spawn_stage {
	SPAWN_SETUP = 1, /* fds, session, pty */
	SPAWN_IDENTITY,	 /* setgroups/setgid/setuid */
	SPAWN_CHDIR,	 /* neither the cwd nor /tmp */
	SPAWN_EXEC,
};

/* What the child reports on its error pipe. */
struct spawn_report {
	int32_t stage;
	int32_t err;
};

struct spawned {
	pid_t pid;
	int in, out, err, pmi; /* our ends; -1 where not used */
	int pmix_listen;       /* a PMIx task's server in the guest, or -1 */
	int report;	       /* read end of the error pipe */
};

/* Forks the task of @m; the new process leads its own session and process
 * group. Returns 0 or -errno. */
int spawn_task(const struct proto_exec *m, struct spawned *s);
