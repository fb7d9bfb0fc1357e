/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * When the holder of the extern step's sleep (hold.c) lets a SIGTERM
 * through: at the job's end alone. A user's `scancel -s TERM JOB` sends
 * the extern step the same SIGTERM as the job's end does, and the guest
 * must outlive it. So after a SIGTERM, once no other step of the job runs
 * on the node, the holder asks slurmctld whether the job ends (completing,
 * ended, requeued), at most once a second; while it cannot be asked, the
 * sleep stays held (Slurm's SIGKILL after KillWait ends it all the same).
 */
#include <stdbool.h>

#define HOLD_ASK_INTERVAL_S 1.0

struct hold_gate {
	bool asked;	 /* slurmctld was asked */
	double asked_at; /* when, last (monotonic seconds) */
	int ending; /* its last answer: 1 the job ends, 0 it runs, -errno */
};

/* Asks slurmctld: 1 the job ends, 0 it runs, -errno when it cannot. */
typedef int (*hold_ask_fn)(void *arg);

/* After a SIGTERM to the sleep, at @now: whether to let it go, with
 * another step of the job running here (@steps_running) or not. */
bool hold_gate_release(struct hold_gate *g, double now, bool steps_running,
		       hold_ask_fn ask, void *arg);
