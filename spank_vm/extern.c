/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Remote context, the extern step (PrologFlags=Contain), root: the guest
 * the Prolog booted becomes the job's. slurmd starts this step after the
 * Prolog and before any task of the job, and its cgroups exist by
 * task_post_fork; slurm-vm-adopt (libslurm, which this plugin must not
 * link) asks this very slurmstepd to adopt qemu, the relay and the
 * virtiofsd, as pam_slurm_adopt does. A job without a guest here costs a
 * read of vm.conf and an opendir of StateDir.
 */
#include "config.h"

#include <dirent.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "job/vmconf.h"
#include "spank_vm.h"

#define ADOPT_TIMEOUT_S 30

/* Has job @job a state directory (job-<id>.<restart>) here? */
static bool extern_has_guest(const char *state_dir, uint32_t job)
{
	_cleanup_closedir_ DIR *dir = opendir(state_dir);
	struct dirent *de;
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "job-%u.", job);
	while (dir && (de = readdir(dir)))
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

void extern_adopt_guest(spank_t sp)
{
	_cleanup_free_ char *adopt = NULL;
	struct vmconf conf = { 0 };
	const char *node = getenv("SLURMD_NODENAME");
	uint32_t job = 0, step = 0;
	char job_s[16], out[1024];
	int r;

	if (!spank_remote(sp) ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    step != SLURM_EXTERN_CONT ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return;
	if (spank_vm_load_conf(&conf) < 0 || !conf.state_dir ||
	    !extern_has_guest(conf.state_dir, job))
		goto out;
	if (!node || !conf.path ||
	    asprintf(&adopt, "%s/slurm-vm-adopt", conf.helper_dir) < 0) {
		log_error("job %u: cannot adopt the guest into the extern step "
			  "(no SLURMD_NODENAME or vm.conf path)",
			  job);
		goto out;
	}
	snprintf(job_s, sizeof(job_s), "%u", job);
	/* clang-format off */
	char *const argv[] = { adopt, "--config", conf.path, "--job", job_s,
			       "--node", (char *)node, NULL };
	/* clang-format on */
	r = run_wait(argv, ADOPT_TIMEOUT_S, out, sizeof(out));
	if (r != 0)
		log_error("job %u: %s failed (%d), the guest is outside the "
			  "job's accounting and cgroups: %s",
			  job, adopt, r, out);
out:
	vmconf_free(&conf);
}
