/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Whether a job has ended, as slurmctld says (public libslurm API), and
 * reclaiming a guest only then. In libslurmvm-slurm.la, apart from
 * libslurmvm: spank_vm.so, loaded into Slurm's own processes, must not link
 * libslurm.
 *
 * An incarnation job-<id>.<restart> has ended when slurmctld does not know
 * the job (purged after MinJobAge), when the job was requeued since (a
 * higher restart count), when slurmctld's job of that id has a lower
 * restart count (it is a newer job: ids wrap, counts only grow), or when
 * it is finished and no longer completing.
 * Pending, running, suspended and completing (its epilog runs) are active.
 * An unreachable slurmctld decides nothing: -EHOSTDOWN, and nothing is
 * reclaimed.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vm/reclaim.h"

enum job_fate {
	JOB_FATE_ACTIVE,
	JOB_FATE_ENDED,
};

/* @why gets what slurmctld said, e.g. "RUNNING", "COMPLETED",
 * "unknown to slurmctld", "requeued (now restart 2)"; @uid (may be NULL)
 * the job's user when slurmctld knows the job, else -1. */
int job_fate(uint32_t job_id, unsigned restart, enum job_fate *fate, long *uid,
	     char *why, size_t why_len);

/* Whether a job in slurm.h's @state ends: completing, or past running and
 * suspended (pending again: requeued). */
bool job_state_ending(uint32_t state);

/* Whether job @job_id ends, as slurmctld says: 1 it is completing, ended,
 * requeued or unknown; 0 it runs (or is suspended); -EHOSTDOWN when
 * slurmctld does not answer. @why gets its state, e.g. "RUNNING",
 * "CANCELLED+COMPLETING". A signal (scancel -s) leaves a job running. */
int job_ending(uint32_t job_id, char *why, size_t why_len);

/* The ids of every job slurmctld knows that has not ended (pending,
 * running, suspended, completing), sorted, malloc'd; -EHOSTDOWN when
 * slurmctld does not answer. */
int jobs_active(uint32_t **ids, size_t *n);

/* job_fate() as a guest_fate_fn (reclaim.h): 1 ended, 0 active. */
int guest_fate(const struct guest *g, char *why, size_t why_len);

/* Reclaims @g when its job has ended: guest_reclaim() in a hurry (a job
 * waits for the devices) and not waiting for its lock. Returns 1
 * reclaimed, 0 left alone because the job is active
 * (@why says how), -EHOSTDOWN when slurmctld did not answer (nothing done),
 * or guest_reclaim()'s error. */
int guest_reclaim_if_ended(const struct vmconf *conf, const struct guest *g,
			   struct teardown_result *res, char *why,
			   size_t why_len);
