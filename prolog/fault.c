/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fault told to slurmctld, where the admin and the user look for it:
 *
 * - A node fault drains this node with its reason. slurmd drains it anyway
 *   when the prolog fails, as "Prolog error", but only a node not draining
 *   yet: the reason set first stays.
 * - A job fault on one node of a job of several ends the whole job, FAILED,
 *   with the reason in its AdminComment: the guests on its other nodes
 *   would wait for steps that cannot start here (an MPI rank until the time
 *   limit). A job of one node keeps running; its steps fail with the reason.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm/ctld.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "prolog.h"
#include "core/strutil.h"

#define FAULT_TEXT_MAX 400

/* "slurm-vm: <what>: <reason>", one line, no control characters. */
static void fault_text(char *buf, size_t size, const char *what,
		       const char *reason)
{
	size_t n = strlen(what);

	/* Most messages already start with "job N: ": say it once. */
	if (!strncmp(reason, what, n) && !strncmp(reason + n, ": ", 2))
		reason += n + 2;
	snprintf(buf, size, "slurm-vm: %s: %s", what, reason);
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

static const char *this_node(void)
{
	const char *node = getenv("SLURMD_NODENAME");

	return node && str_is_safe_name(node, 256) ? node : NULL;
}

/* Whether slurmd runs us (not an admin by hand): only then does it drain
 * the node when we fail. */
static bool run_by_slurmd(void)
{
	char comm[16];

	return proc_comm(getppid(), comm) == 0 && strcmp(comm, "slurmd") == 0;
}

void fault_report_node(uint32_t job_id, const char *reason)
{
	const char *node = this_node();
	char what[64], text[FAULT_TEXT_MAX];

	if (!node || !run_by_slurmd())
		return;
	snprintf(what, sizeof(what), "job %u", job_id);
	fault_text(text, sizeof(text), what, reason);
	if (ctld_drain_node(node, text) < 0)
		log_warn("job %u: cannot drain node %s with the reason (%s); "
			 "slurmd drains it as \"Prolog error\": the reason is "
			 "in this log",
			 job_id, node, ctld_last_error());
}

void fault_report_job(uint32_t job_id, const char *reason)
{
	const char *node = this_node();
	char what[300], text[FAULT_TEXT_MAX];
	size_t n = ctld_nodelist_count(getenv("SLURM_JOB_NODELIST")
					       ?: getenv("SLURM_NODELIST"));

	if (!node || n < 2)
		return;
	snprintf(what, sizeof(what), "node %s", node);
	fault_text(text, sizeof(text), what, reason);
	log_error("job %u: its guest on node %s cannot run, so the job fails "
		  "on all its %zu nodes",
		  job_id, node, n);
	if (ctld_job_set_admin_comment(job_id, text) < 0)
		log_warn("job %u: its AdminComment does not give the reason",
			 job_id);
	if (ctld_job_complete_failed(job_id) < 0)
		log_error("job %u: slurmctld did not end it; its steps fail "
			  "on node %s with the reason",
			  job_id, node);
}
