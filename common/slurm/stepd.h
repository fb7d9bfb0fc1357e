/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * A job's extern step on this node, through its slurmstepd's socket, the
 * way pam_slurm_adopt talks to it: a process added there is the job's in
 * proctrack (Slurm signals it at the job's end), in task/cgroup (the job's
 * cpuset, memory and devices limits) and in jobacct_gather (sstat, sacct).
 * The same on every release slurm-vm builds against (22.05 to 26.05).
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Adds @pid to job @job_id's extern step on node @node (this host's
 * slurmd's NodeName: with several slurmd on a host, the socket's name
 * holds it). slurm.conf is read first (SlurmdSpoolDir). 0; -ENOENT when
 * the job has no extern step here (no PrologFlags=Contain, or it ended);
 * -EIO when its slurmstepd refused (the reason is in slurmd's log). */
int stepd_adopt_extern(const char *node, uint32_t job_id, pid_t pid);

/*
 * A slurmstepd executable by device and inode: a process's name, title and
 * uid say nothing (a setuid-root program run through a link named
 * slurmstepd, `exec -a 'slurmstepd: [JOB.0]'`, has them all); what it
 * executes does.
 */
struct stepd_exe {
	dev_t dev;
	ino_t ino;
};

/* @exe of the file at @path, or of what process @pid executes
 * (/proc/PID/exe; a file deleted since still names its inode). 0 or
 * -errno. */
int stepd_exe_of_path(const char *path, struct stepd_exe *exe);
int stepd_exe_of_pid(pid_t pid, struct stepd_exe *exe);

/* Does job @job_id still run a step other than its extern one on node
 * @node? A process executing one of the @n slurmstepd files @exes, titled
 * "slurmstepd: [JOB.STEP]" (its title on 22.05 to 26.05), running as we
 * do (root: no user's process passes for one), whose SLURMD_NODENAME is
 * @node (several slurmd on one host) or that names no node. */
bool stepd_job_steps_running(const char *node, uint32_t job_id,
			     const struct stepd_exe *exes, size_t n);
