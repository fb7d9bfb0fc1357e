/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * A process into the cgroups of Slurm's job that another process is in:
 * slurm-vm-adopt's way into the extern step where the step's own RPC would
 * make each adopted process a task of its own (prolog/adopt.c).
 */
#include <stddef.h>
#include <sys/types.h>

/* Moves @pid (all its threads) into each cgroup @model is in whose path
 * holds "/job_@job_id/", in every hierarchy mounted here (cgroup v1 and
 * v2). -ENOENT when @model is in no cgroup of the job, -errno when a
 * move fails. @proc_root and @mountinfo (NULL: /proc and
 * /proc/self/mountinfo) are for tests. */
int cgroup_join(pid_t pid, pid_t model, unsigned job_id);
int cgroup_join_at(const char *proc_root, const char *mountinfo, pid_t pid,
		   pid_t model, unsigned job_id);
