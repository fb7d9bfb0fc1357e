/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/compat.h"
#include "slurm/jobfate.h"
#include "core/log.h"
#include "core/sortutil.h"

/* slurm.h's enum job_states, as squeue names them. */
static const char *job_state_name(uint32_t state)
{
	static const char *const names[] = {
		[JOB_PENDING] = "PENDING",     [JOB_RUNNING] = "RUNNING",
		[JOB_SUSPENDED] = "SUSPENDED", [JOB_COMPLETE] = "COMPLETED",
		[JOB_CANCELLED] = "CANCELLED", [JOB_FAILED] = "FAILED",
		[JOB_TIMEOUT] = "TIMEOUT",     [JOB_NODE_FAIL] = "NODE_FAIL",
		[JOB_PREEMPTED] = "PREEMPTED", [JOB_BOOT_FAIL] = "BOOT_FAIL",
		[JOB_DEADLINE] = "DEADLINE",   [JOB_OOM] = "OUT_OF_MEMORY",
	};
	uint32_t base = state & JOB_STATE_BASE;

	return base < JOB_END && names[base] ? names[base] : "UNKNOWN";
}

/* Job @job_id as slurmctld has it: 1 with @msg, 0 when it does not know
 * the job (@why says so), -EHOSTDOWN when it does not answer. */
static int job_load(uint32_t job_id, job_info_msg_t **msg, char *why,
		    size_t why_len)
{
	int err;

	*msg = NULL;
	if (slurm_compat_load_job(msg, job_id, SHOW_ALL) != SLURM_SUCCESS) {
		err = slurm_compat_errno();
		*msg = NULL;
		if (err != ESLURM_INVALID_JOB_ID) {
			snprintf(why, why_len, "slurmctld unreachable: %s",
				 slurm_strerror(err));
			return -EHOSTDOWN;
		}
	} else if ((*msg)->record_count == 1) {
		return 1;
	}
	if (*msg)
		slurm_free_job_info_msg(*msg);
	*msg = NULL;
	snprintf(why, why_len, "unknown to slurmctld");
	return 0;
}

int job_fate(uint32_t job_id, unsigned restart, enum job_fate *fate, long *uid,
	     char *why, size_t why_len)
{
	job_info_msg_t *msg;
	const slurm_job_info_t *job;
	uint32_t state;
	int r;

	if (uid)
		*uid = -1;
	r = job_load(job_id, &msg, why, why_len);
	if (r == 0)
		*fate = JOB_FATE_ENDED;
	if (r <= 0)
		return r;
	job = &msg->job_array[0];
	state = job->job_state;
	if (uid)
		*uid = (long)job->user_id;
	if (job->restart_cnt > restart) {
		*fate = JOB_FATE_ENDED;
		snprintf(why, why_len, "requeued (now restart %u)",
			 (unsigned)job->restart_cnt);
	} else if (job->restart_cnt < restart) {
		/* Counts only grow: the state is an older job's, whose id
		 * this one got (ids wrap). */
		*fate = JOB_FATE_ENDED;
		snprintf(why, why_len,
			 "an older job of this id (job ids wrapped; now "
			 "restart %u)",
			 (unsigned)job->restart_cnt);
	} else if (state & JOB_COMPLETING) {
		*fate = JOB_FATE_ACTIVE;
		snprintf(why, why_len, "COMPLETING");
	} else {
		/* Past SUSPENDED the base states are all ends. */
		*fate = (state & JOB_STATE_BASE) > JOB_SUSPENDED
				? JOB_FATE_ENDED
				: JOB_FATE_ACTIVE;
		snprintf(why, why_len, "%s", job_state_name(state));
	}
	slurm_free_job_info_msg(msg);
	return 0;
}

bool job_state_ending(uint32_t state)
{
	uint32_t base = state & JOB_STATE_BASE;

	return (state & JOB_COMPLETING) ||
	       (base != JOB_RUNNING && base != JOB_SUSPENDED);
}

int job_ending(uint32_t job_id, char *why, size_t why_len)
{
	job_info_msg_t *msg;
	uint32_t state;
	int r = job_load(job_id, &msg, why, why_len);

	if (r <= 0)
		return r < 0 ? r : 1; /* unknown: purged after its end */
	state = msg->job_array[0].job_state;
	slurm_free_job_info_msg(msg);
	snprintf(why, why_len, "%s%s", job_state_name(state),
		 state & JOB_COMPLETING ? "+COMPLETING" : "");
	return job_state_ending(state);
}

int jobs_active(uint32_t **ids, size_t *n)
{
	job_info_msg_t *msg = NULL;
	uint32_t *v;

	*ids = NULL;
	*n = 0;
	slurm_compat_init();
	if (slurm_load_jobs(0, &msg, SHOW_ALL) != SLURM_SUCCESS)
		return log_errno(EHOSTDOWN, "slurmctld unreachable: %s",
				 slurm_strerror(slurm_compat_errno()));
	v = calloc(msg->record_count ? msg->record_count : 1, sizeof(*v));
	if (!v) {
		slurm_free_job_info_msg(msg);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < msg->record_count; i++) {
		const slurm_job_info_t *job = &msg->job_array[i];

		if ((job->job_state & JOB_COMPLETING) ||
		    (job->job_state & JOB_STATE_BASE) <= JOB_SUSPENDED)
			v[(*n)++] = job->job_id;
	}
	slurm_free_job_info_msg(msg);
	qsort(v, *n, sizeof(*v), cmp_u32);
	*ids = v;
	return 0;
}

int guest_fate(const struct guest *g, char *why, size_t why_len)
{
	enum job_fate fate;
	int r = job_fate(g->job_id, g->restart, &fate, NULL, why, why_len);

	return r < 0 ? r : fate == JOB_FATE_ENDED;
}

int guest_reclaim_if_ended(const struct vmconf *conf, const struct guest *g,
			   struct teardown_result *res, char *why,
			   size_t why_len)
{
	enum job_fate fate;
	int r;

	memset(res, 0, sizeof(*res));
	r = job_fate(g->job_id, g->restart, &fate, NULL, why, why_len);
	if (r < 0)
		return r;
	if (fate == JOB_FATE_ACTIVE)
		return 0;
	r = guest_reclaim(conf, g, 0, true, res);
	return r < 0 ? r : 1;
}
