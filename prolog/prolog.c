/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-prolog: run by slurmd as root with PrologFlags=Alloc.
 * A job without SPANK_VM_IMAGE leaves at once: plain jobs must not notice us.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vmconf.h"

static int prolog_run(const char *image)
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

	log_info("job %s: VM requested: SPANK_VM_IMAGE=%s SPANK_VM_CPUS=%s SPANK_VM_MEM=%s SPANK_VM_HUGEPAGES=%s SPANK_VM_KEEP=%s",
		 job ? job : "?", image,
		 getenv("SPANK_VM_CPUS") ?: "", getenv("SPANK_VM_MEM") ?: "",
		 getenv("SPANK_VM_HUGEPAGES") ?: "",
		 getenv("SPANK_VM_KEEP") ?: "");
	log_warn("job %s: guest boot is not implemented yet; steps run on the host",
		 job ? job : "?");
out:
	vmconf_free(&conf);
	return r;
}

int main(int argc, char **argv)
{
	const char *image = getenv("SPANK_VM_IMAGE");

	if (!image)
		return EXIT_SUCCESS;
	log_open("slurm-vm-prolog");
	return prolog_run(image) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
