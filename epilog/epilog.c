/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-epilog: run by slurmd as root at the end of every job. Replays
 * the job's journal backwards (guest stopped, relay stopped, overlay
 * deleted), then removes its state directory. Idempotent: safe to run twice,
 * after a half-finished prolog, after qemu or libvirtd died, with no state
 * at all. Exits non-zero, so that Slurm drains the node, only when the node
 * is unsafe: a device that could not be returned.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "journal.h"
#include "log.h"
#include "request.h"
#include "teardown.h"
#include "vmconf.h"

static int epilog_run(const struct vmconf *conf)
{
	const char *keep_env = getenv("SPANK_VM_KEEP");
	bool keep = keep_env && strcmp(keep_env, "1") == 0;
	struct teardown_result res = { 0 };
	char name[64];
	uint32_t job;
	unsigned restart;
	double t0 = clock_now_s();
	int fd, r;

	if (request_job_from_env(&job, &restart) < 0)
		return 0;
	/* gres/ibvf's view, for the admin: the devices the job returns. */
	if (getenv("SLURM_JOB_IBVFS"))
		log_info("job %u: epilog: SLURM_JOB_IBVFS=%s", job,
			 getenv("SLURM_JOB_IBVFS"));
	statedir_name(job, restart, name, sizeof(name));
	fd = statedir_open(conf->state_dir, name, false);
	if (fd == -ENOENT) {
		log_info("job %u: VM job ended: no state on this node, nothing to undo",
			 job);
		return 0;
	}
	if (fd < 0) {
		log_errno(fd, "job %u: cannot open state %s/%s", job,
			  conf->state_dir, name);
		return 0;
	}
	r = teardown_replay(conf, fd, keep, &res);
	close(fd);
	if (r < 0)
		log_error("job %u: %u of %u cleanup steps failed", job,
			  res.failed, res.steps);
	if (keep)
		log_info("job %u: kept %s/%s (--vm-keep)", job, conf->state_dir,
			 name);
	else if (statedir_remove(conf->state_dir, name) < 0)
		log_error("job %u: cannot remove %s/%s", job, conf->state_dir,
			  name);
	log_info("job %u: VM job ended: %u steps undone in %.3fs", job,
		 res.steps, clock_now_s() - t0);
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
