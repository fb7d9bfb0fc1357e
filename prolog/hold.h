/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * slurm-vm-adopt: how a process becomes the extern step's
 * (adopt_target.c), and the extern step's `sleep` held against the job's
 * signals (hold.c).
 */
#include <stdbool.h>
#include <sys/types.h>

/* Where adopted processes go: the cgroups of @model, the extern step's
 * own task (0: the step adopts each, libslurm's stepd socket). @join:
 * Slurm's cgroups track the steps and do their accounting
 * (proctrack/cgroup, jobacct_gather/cgroup), so the guest's processes
 * join a task's cgroups rather than each being adopted. */
struct adopt_target {
	const char *node;
	unsigned job_id;
	bool join;
	pid_t model;
};

/* The target for job @job_id on @node as slurm.conf beside vm.conf
 * @config (or $SLURM_CONF) sets Slurm's tracking and accounting. */
int adopt_target_init(struct adopt_target *t, const char *config,
		      const char *node, unsigned job_id);

/* @pid into the extern step: 0, -ENOENT (no extern step), -EPERM (the
 * step refused), -ESRCH (its task is in no cgroup of the job) or
 * -errno. */
int adopt_target_join(const struct adopt_target *t, pid_t pid);

/* Starts a holder of @pid, the sleep of the extern step of @t's job that
 * runs this program (its parent), and adopts it there: 0, or -errno when
 * @pid is not that sleep or cannot be traced (logged). */
int hold_extern_sleep(const struct adopt_target *t, pid_t pid);
