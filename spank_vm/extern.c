/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Remote context, root: the guest the Prolog booted is the job's.
 *
 * The extern step (PrologFlags=Contain): slurmd starts it after the Prolog
 * and before any task of the job, and its cgroups exist by task_post_fork;
 * slurm-vm-adopt (libslurm, which this plugin must not link) asks this very
 * slurmstepd to adopt qemu, the relay and the virtiofsd, as pam_slurm_adopt
 * does. The batch step, at its task's exit: a guest the job's memory cgroup
 * killed ends the job OUT_OF_MEMORY (slurm-vm-adopt --oom). A job without a
 * guest here costs a read of vm.conf and an opendir of StateDir in each.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "job/journal.h"
#include "job/vmconf.h"
#include "spank_vm.h"

#define ADOPT_TIMEOUT_S 30

/* Has job @job a state directory (job-<id>.<restart>) here, holding @file
 * when @file is not NULL? A filter only: slurm-vm-adopt opens the newest
 * incarnation itself and checks again. */
static bool job_guest_dir(const char *state_dir, uint32_t job, const char *file)
{
	_cleanup_closedir_ DIR *dir = opendir(state_dir);
	struct dirent *de;
	char prefix[32], path[PATH_MAX];

	snprintf(prefix, sizeof(prefix), "job-%u.", job);
	while (dir && (de = readdir(dir))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (!file)
			return true;
		snprintf(path, sizeof(path), "%s/%s", de->d_name, file);
		if (faccessat(dirfd(dir), path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			return true;
	}
	return false;
}

/* Runs slurm-vm-adopt for @job with @mode ("--oom", "--hold" or NULL) and
 * its @arg (or NULL); @what says what is lost when it fails. 0 when it did
 * its work. */
static int run_adopt(const struct vmconf *conf, uint32_t job, const char *mode,
		     const char *arg, const char *what)
{
	_cleanup_free_ char *adopt = NULL;
	const char *node = getenv("SLURMD_NODENAME");
	char job_s[16], out[1024];
	int r;

	if (!node || !conf->path ||
	    asprintf(&adopt, "%s/slurm-vm-adopt", conf->helper_dir) < 0) {
		log_error("job %u: cannot run slurm-vm-adopt (no "
			  "SLURMD_NODENAME or vm.conf path): %s",
			  job, what);
		return -EINVAL;
	}
	snprintf(job_s, sizeof(job_s), "%u", job);
	/* clang-format off */
	char *const argv[] = { adopt, "--config", conf->path, "--job", job_s,
			       "--node", (char *)node, (char *)mode, (char *)arg,
			       NULL };
	/* clang-format on */
	r = run_wait(argv, ADOPT_TIMEOUT_S, out, sizeof(out));
	if (r != 0)
		log_error("job %u: %s failed (%d), %s: %s", job, adopt, r, what,
			  out);
	return r;
}

/* On 22.05 and 24.11 the extern step's one task is Slurm's `sleep`, whose
 * death ends the step and the adopted guest with it: a signal to the whole
 * job (scancel --signal without --batch) would kill the guest, and at the
 * job's end its SIGTERM would, before the batch script in the guest had
 * KillWait's time for its trap. slurm-vm-adopt --hold keeps the sleep from
 * them (prolog/hold.c); where it cannot, a stopped sleep at least keeps a
 * job-wide signal pending. 26.05's extern step has no sleep. */
static void extern_hold_sleep(const struct vmconf *conf, uint32_t job)
{
	/* this hook runs in the extern slurmstepd; S_TASK_PID is no
	 * task's here. None on 26.05. */
	pid_t pid = proc_child_named(getpid(), "sleep", 1000);
	char pid_s[16];

	if (pid <= 0)
		return;
	snprintf(pid_s, sizeof(pid_s), "%ld", (long)pid);
	if (run_adopt(conf, job, "--hold", pid_s,
		      "the sleep is stopped instead") == 0)
		return;
	if (kill(pid, SIGSTOP) < 0)
		log_warn("job %u: cannot stop the extern step's sleep (pid "
			 "%ld): a signal to the whole job ends the guest",
			 job, (long)pid);
}

/* The step's job id when it is step @want of a job here (remote). */
static bool step_is(spank_t sp, uint32_t want, uint32_t *job)
{
	uint32_t step = 0;

	return spank_remote(sp) &&
	       spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
	       step == want &&
	       spank_get_item(sp, S_JOB_ID, job) == ESPANK_SUCCESS;
}

void extern_adopt_guest(spank_t sp)
{
	struct vmconf conf = { 0 };
	uint32_t job = 0;

	if (!step_is(sp, SLURM_EXTERN_CONT, &job))
		return;
	if (spank_vm_load_conf(&conf) == 0 && conf.state_dir &&
	    job_guest_dir(conf.state_dir, job, NULL) &&
	    run_adopt(&conf, job, NULL, NULL,
		      "the guest is outside the job's accounting and "
		      "cgroups") == 0)
		extern_hold_sleep(&conf, job);
	vmconf_free(&conf);
}

/* The batch script has ended (task_exit of the batch step, root). When the
 * job's memory cgroup killed the guest here, the relay made GUEST_OOM_FILE:
 * the job then ends OUT_OF_MEMORY, not FAILED by its steps' lost guest.
 * Before the batch step reports its own end, which slurmctld then finds
 * done. */
void batch_report_guest_oom(spank_t sp)
{
	struct vmconf conf = { 0 };
	uint32_t job = 0;

	if (!step_is(sp, SLURM_BATCH_SCRIPT, &job))
		return;
	if (spank_vm_load_conf(&conf) == 0 && conf.state_dir &&
	    job_guest_dir(conf.state_dir, job, GUEST_OOM_FILE))
		run_adopt(&conf, job, "--oom", NULL,
			  "the job ends FAILED, not OUT_OF_MEMORY");
	vmconf_free(&conf);
}
