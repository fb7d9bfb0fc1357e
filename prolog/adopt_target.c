/* SPDX-License-Identifier: GPL-2.0-or-later */
/* slurm-vm-adopt: how a process becomes the extern step's, as Slurm
 * tracks and accounts the job (slurm.conf): into the cgroups of the
 * step's one task, or adopted by the step through its stepd socket. Below
 * adopt.c and hold.c, which both adopt. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "core/fileutil.h"
#include "core/macro.h"
#include "core/strutil.h"
#include "hold.h"
#include "slurm/slurmconf.h"
#include "slurm/stepd.h"

/* jobacct_gather/cgroup reads the CPU and memory of a task's cgroup once
 * for each process the extern step adopted (each is a task there, all
 * with the node's one task id and so one cgroup): sacct then counted the
 * guest's CPU once per adopted process and again for the step's sleep, 3.4
 * times what the job's CPUs could give. Where Slurm's cgroups track the
 * step (proctrack/cgroup) and do its accounting, the guest's processes
 * join the cgroups of the step's one task instead, which Slurm counts
 * once and kills at the step's end. Elsewhere (jobacct_gather/linux reads
 * each task's own /proc) the step adopts each. */
static bool adopt_target_by_cgroup(const char *config)
{
	_cleanup_free_ char *path = NULL;
	struct slurmconf sc = { 0 };
	const char *env = getenv("SLURM_CONF"), *slash, *proctrack, *gather;
	bool r;

	slash = strrchr(config, '/');
	if (env && *env)
		path = strdup(env);
	else if (asprintf(&path, "%.*s/slurm.conf",
			  slash ? (int)(slash - config) : 1,
			  slash ? config : ".") < 0)
		path = NULL;
	if (!path || slurmconf_read(path, &sc) < 0)
		return false;
	proctrack = slurmconf_get(&sc, "ProctrackType");
	gather = slurmconf_get(&sc, "JobAcctGatherType");
	r = proctrack && strcasecmp(proctrack, "proctrack/cgroup") == 0 &&
	    gather && strcasecmp(gather, "jobacct_gather/cgroup") == 0;
	slurmconf_free(&sc);
	return r;
}

int adopt_target_join(const struct adopt_target *t, pid_t pid)
{
	int r;

	if (!t->model) {
		r = stepd_adopt_extern(t->node, t->job_id, pid);
		return r == -ENOENT ? r : r < 0 ? -EPERM : 0;
	}
	r = cgroup_join(pid, t->model, t->job_id);
	return r == -ENOENT ? -ESRCH : r;
}

int adopt_target_init(struct adopt_target *t, const char *config,
		      const char *node, unsigned job_id)
{
	*t = (struct adopt_target){ .node = node, .job_id = job_id };
	t->join = adopt_target_by_cgroup(config);
	/* the extern step's own task: Slurm's `sleep` (22.05, 24.11), a
	 * child of the slurmstepd that runs us, perhaps not yet exec'd;
	 * none on 26.05 */
	if (t->join)
		t->model = proc_child_named(getppid(), "sleep", 1000);
	return 0;
}
