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

#include "core/clock.h"
#include "slurm/jobfate.h"
#include "job/journal.h"
#include "core/log.h"
#include "core/macro.h"
#include "vm/reclaim.h"
#include "job/request.h"
#include "vm/teardown.h"
#include "job/vmconf.h"

/* Each undone step, timed: the figures bench/vm_bench.sh reads. */
static void epilog_log_phases(uint32_t job, const struct teardown_result *res)
{
	for (unsigned i = 0; i < res->n_timed; i++)
		log_info("job %u: epilog phase %s %.3fs%s", job,
			 res->timed[i].verb, res->timed[i].seconds,
			 res->timed[i].error ? " (failed)" : "");
}

/* Undoes incarnation @restart of job @job: 1 when it had no state here,
 * -EBUSY when the node is unsafe. */
static int epilog_reclaim(const struct vmconf *conf, uint32_t job,
			  unsigned restart)
{
	struct teardown_result res = { 0 };
	struct guest g;
	double t0 = clock_now_s();
	int r;

	guest_from_job(&g, job, restart);
	/* A prolog still booting (scancel during boot) holds the lock: its
	 * own failure path runs first. */
	r = guest_reclaim(conf, &g, conf->boot_timeout + 60, false, &res);
	if (r == -ENOENT)
		return 1;
	epilog_log_phases(job, &res);
	if (r == -EBUSY)
		log_error("job %u: %s/%s is still locked by its prolog; "
			  "`slurm-vm cleanup` reclaims it later",
			  job, conf->state_dir, g.name);
	else if (r < 0)
		log_error("job %u: %u of %u cleanup steps failed", job,
			  res.failed, res.steps);
	log_info("job %u: VM job ended: %s: %u steps undone in %.3fs%s", job,
		 g.name, res.steps, clock_now_s() - t0,
		 res.node_unsafe ? "; the guest may still hold its devices: "
				   "draining"
				 : "");
	return res.node_unsafe ? -EBUSY : 0;
}

/* An earlier incarnation of the job: undone only when slurmctld says it
 * ended (requeued since), like `slurm-vm cleanup` would; 1 when it was
 * left alone, -EBUSY when the node is unsafe. */
static int epilog_reclaim_earlier(const struct vmconf *conf, uint32_t job,
				  unsigned restart)
{
	struct teardown_result res;
	struct guest g;
	char why[160] = "";
	int r;

	guest_from_job(&g, job, restart);
	r = guest_reclaim_if_ended(conf, &g, &res, why, sizeof(why));
	if (r == 0 || r == -EHOSTDOWN) {
		log_info("job %u: %s left alone (%s); `slurm-vm cleanup` "
			 "reclaims it once its job ended",
			 job, g.name, why);
		return 1;
	}
	epilog_log_phases(job, &res);
	if (r < 0)
		log_error("job %u: %u of %u cleanup steps of %s failed", job,
			  res.failed, res.steps, g.name);
	log_info("job %u: VM job ended: %s (%s): %u steps undone%s", job,
		 g.name, why, res.steps,
		 res.node_unsafe ? "; the guest may still hold its devices: "
				   "draining"
				 : "");
	return res.node_unsafe ? -EBUSY : 0;
}

static int epilog_run(const struct vmconf *conf)
{
	unsigned restart, earlier[8];
	uint32_t job;
	int n, r, found;

	if (request_job_from_env(&job, &restart) < 0)
		return 0;
	/* gres/ibvf's view, for the admin: the devices the job returns. */
	if (getenv("SLURM_JOB_IBVFS"))
		log_info("job %u: epilog: SLURM_JOB_IBVFS=%s", job,
			 getenv("SLURM_JOB_IBVFS"));
	r = epilog_reclaim(conf, job, restart);
	found = r <= 0;
	/* A job requeued because its prolog failed on some node: this
	 * epilog ends the incarnation before (Slurm 22.05 counted the
	 * restart first). */
	n = restart ? guest_earlier_incarnations(conf, job, restart, earlier,
						 ARRAY_SIZE(earlier))
		    : 0;
	for (int i = 0; i < n; i++) {
		int e = epilog_reclaim_earlier(conf, job, earlier[i]);

		found |= e <= 0;
		if (e < 0)
			r = e;
	}
	if (!found)
		log_info("job %u: VM job ended: no state on this node, "
			 "nothing to undo",
			 job);
	return r < 0 ? r : 0;
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *conf_path = NULL;
	struct vmconf conf;
	int r;

	if (!getenv(REQUEST_ENV(REQUEST_IMAGE)))
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
