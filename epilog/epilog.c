/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-epilog: run by slurmd as root at the end of every job. Replays
 * the job's journal backwards (guest stopped, relay stopped, overlay
 * deleted), then removes its state directory. Idempotent: safe to run twice,
 * after a half-finished prolog, after qemu or libvirtd died, with no state
 * at all. Exits non-zero, so that Slurm drains the node, only when the node
 * is unsafe: a guest that could not be stopped still holds its devices. A
 * failed step keeps the state directory for `slurm-vm cleanup`. The same
 * code (guest_reclaim) serves the prolog's reclaim and `slurm-vm cleanup`.
 */
#include "config.h"

#include <stdlib.h>

#include "clock.h"
#include "journal.h"
#include "log.h"
#include "reclaim.h"
#include "request.h"
#include "teardown.h"
#include "vmconf.h"

/* Each undone step, timed: the figures bench/vm_bench.sh reads. */
static void epilog_log_phases(uint32_t job, const struct teardown_result *res)
{
	for (unsigned i = 0; i < res->n_timed; i++)
		log_info("job %u: epilog phase %s %.3fs%s", job,
			 res->timed[i].verb, res->timed[i].seconds,
			 res->timed[i].error ? " (failed)" : "");
}

static int epilog_run(const struct vmconf *conf)
{
	struct teardown_result res = { 0 };
	struct guest g;
	uint32_t job;
	unsigned restart;
	double t0 = clock_now_s();
	int r;

	if (request_job_from_env(&job, &restart) < 0)
		return 0;
	/* gres/ibvf's view, for the admin: the devices the job returns. */
	if (getenv("SLURM_JOB_IBVFS"))
		log_info("job %u: epilog: SLURM_JOB_IBVFS=%s", job,
			 getenv("SLURM_JOB_IBVFS"));
	guest_from_job(&g, job, restart);
	/* A prolog still booting (scancel during boot) holds the lock: its
	 * own failure path runs first. */
	r = guest_reclaim(conf, &g, conf->boot_timeout + 60, false, &res);
	if (r == -ENOENT) {
		log_info("job %u: VM job ended: no state on this node, nothing to undo",
			 job);
		return 0;
	}
	epilog_log_phases(job, &res);
	if (r == -EBUSY)
		log_error("job %u: %s/%s is still locked by its prolog; "
			  "`slurm-vm cleanup` reclaims it later",
			  job, conf->state_dir, g.name);
	else if (r < 0)
		log_error("job %u: %u of %u cleanup steps failed", job,
			  res.failed, res.steps);
	log_info("job %u: VM job ended: %u steps undone in %.3fs%s", job,
		 res.steps, clock_now_s() - t0,
		 res.node_unsafe ? "; the guest may still hold its devices: "
				   "draining"
				 : "");
	return res.node_unsafe ? -EBUSY : 0;
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *conf_path = NULL;
	struct vmconf conf;
	int r;

	if (!getenv("SPANK_VM_IMAGE"))
		return EXIT_SUCCESS;
	log_open("slurm-vm-epilog");
	conf_path = vmconf_default_path();
	if (vmconf_load(&conf, conf_path) < 0) {
		/* The prolog has already drained such a node. */
		vmconf_free(&conf);
		return EXIT_SUCCESS;
	}
	if (conf.log_file)
		log_open_file(conf.log_file);
	log_set_level((enum log_level)conf.log_level);
	r = epilog_run(&conf);
	vmconf_free(&conf);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
