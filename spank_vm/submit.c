/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Allocator (sbatch, salloc) and local (srun) context: check the request for
 * the user's convenience, then hand it to the Prolog through the job control
 * environment, where it arrives as SPANK_VM_*. The Prolog checks everything
 * again as root: a job can be submitted with any SPANK_* values.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "log.h"
#include "spank_vm.h"

static int job_control_setenv(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc = spank_job_control_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS) {
		log_error("cannot pass %s to the job: %s", name,
			  spank_strerror(rc));
		return -EINVAL;
	}
	return 0;
}

int submit_post_opt(spank_t sp)
{
	char num[32];
	int r;

	if (vm_options_apply_env_defaults(sp) < 0)
		return -EINVAL;
	if (!vm_opts.image) {
		if (vm_opts.cpus || vm_opts.mem_mib || vm_opts.hugepages ||
		    vm_opts.keep) {
			log_error("--vm-cpus, --vm-mem, --vm-hugepages and --vm-keep need --vm-image");
			return -EINVAL;
		}
		return 0;
	}

	r = job_control_setenv(sp, "VM_IMAGE", vm_opts.image);
	if (r == 0 && vm_opts.cpus) {
		snprintf(num, sizeof(num), "%u", vm_opts.cpus);
		r = job_control_setenv(sp, "VM_CPUS", num);
	}
	if (r == 0 && vm_opts.mem_mib) {
		snprintf(num, sizeof(num), "%" PRIu64, vm_opts.mem_mib);
		r = job_control_setenv(sp, "VM_MEM", num);
	}
	if (r == 0 && vm_opts.hugepages)
		r = job_control_setenv(sp, "VM_HUGEPAGES", vm_opts.hugepages);
	if (r == 0 && vm_opts.keep)
		r = job_control_setenv(sp, "VM_KEEP", "1");
	return r;
}
