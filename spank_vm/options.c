/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The --vm-* options of sbatch, salloc and srun, and their SLURM_VM_*
 * environment defaults (an option on the command line wins, as in Slurm). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "job/request.h"
#include "spank_vm.h"
#include "core/strutil.h"

struct vm_options vm_opts;

enum { OPT_IMAGE = 1, OPT_CPUS, OPT_MEM, OPT_HUGEPAGES, OPT_KEEP, OPT_BATCH };

static int option_set(int val, const char *arg, bool from_cli);

static int option_cb(int val, const char *arg, int remote)
{
	return option_set(val, arg, true) == 0 ? 0 : -1;
}

static struct spank_option options[] = {
	{ "vm-image", "IMAGE",
	  "Run the job's steps in a VM booted from IMAGE (a catalog name, or a qcow2/raw path where allowed) [env SLURM_VM_IMAGE]",
	  1, OPT_IMAGE, option_cb },
	{ "vm-cpus", "N",
	  "Give the VM N vCPUs (default: all of the job's CPUs on the node) [env SLURM_VM_CPUS]",
	  1, OPT_CPUS, option_cb },
	{ "vm-mem", "SIZE",
	  "Give the VM SIZE memory, e.g. 8G (default: the job's memory minus overhead) [env SLURM_VM_MEM]",
	  1, OPT_MEM, option_cb },
	{ "vm-hugepages", "none|2M|1G",
	  "Back the VM's memory with huge pages of this size [env SLURM_VM_HUGEPAGES]",
	  1, OPT_HUGEPAGES, option_cb },
	{ "vm-keep", NULL,
	  "Keep the VM's overlay and console log after the job, for debugging [env SLURM_VM_KEEP]",
	  0, OPT_KEEP, option_cb },
	{ "vm-batch", NULL,
	  "sbatch: run the batch script itself in the guest of the job's first node, not on the host [env SLURM_VM_BATCH=yes|no]",
	  0, OPT_BATCH, option_cb },
};

static const char *const option_env[] = {
	[OPT_IMAGE] = REQUEST_USER_ENV(REQUEST_IMAGE),
	[OPT_CPUS] = REQUEST_USER_ENV(REQUEST_CPUS),
	[OPT_MEM] = REQUEST_USER_ENV(REQUEST_MEM),
	[OPT_HUGEPAGES] = REQUEST_USER_ENV(REQUEST_HUGEPAGES),
	[OPT_KEEP] = REQUEST_USER_ENV(REQUEST_KEEP),
	[OPT_BATCH] = REQUEST_USER_ENV(REQUEST_BATCH),
};

static int option_set(int val, const char *arg, bool from_cli)
{
	const char *name = options[val - 1].name;
	enum hugepages hugepages;
	int r;

	switch (val) {
	case OPT_IMAGE:
		if (!arg || !*arg) {
			log_error("--%s needs an image name or path", name);
			return -EINVAL;
		}
		free(vm_opts.image);
		vm_opts.image = strdup(arg);
		vm_opts.image_set |= from_cli;
		return vm_opts.image ? 0 : -ENOMEM;
	case OPT_CPUS:
		r = str_to_uint(arg, &vm_opts.cpus);
		if (r < 0 ||
		    request_check(REQUEST_VALUE_CPUS, vm_opts.cpus) < 0) {
			log_error(
				"--%s=%s: expected a number of vCPUs from 1 to %d",
				name, arg, REQUEST_CPUS_MAX);
			return -EINVAL;
		}
		return 0;
	case OPT_MEM:
		r = str_to_mib(arg, &vm_opts.mem_mib);
		if (r < 0 || vm_opts.mem_mib < REQUEST_MEM_MIB_MIN) {
			log_error(
				"--%s=%s: expected a size of at least %dM, e.g. 512M or 8G",
				name, arg, REQUEST_MEM_MIB_MIN);
			return -EINVAL;
		}
		/* The prolog's bound, here so that sbatch says it. */
		if (request_check(REQUEST_VALUE_MEM_MIB, vm_opts.mem_mib) < 0) {
			log_error(
				"--%s=%s: expected a size of at most %lluT, e.g. 512M or 8G",
				name, arg,
				(unsigned long long)REQUEST_MEM_MIB_MAX >> 20);
			return -EINVAL;
		}
		return 0;
	case OPT_HUGEPAGES:
		if (hugepages_parse(arg, &hugepages) < 0) {
			log_error("--%s=%s: expected none, 2M or 1G", name,
				  arg);
			return -EINVAL;
		}
		free(vm_opts.hugepages);
		vm_opts.hugepages = strdup(arg);
		return vm_opts.hugepages ? 0 : -ENOMEM;
	case OPT_KEEP:
		vm_opts.keep = true;
		return 0;
	case OPT_BATCH:
		if (from_cli) {
			vm_opts.batch = true;
			vm_opts.batch_set = true;
		} else if (vm_batch_parse(arg, &vm_opts.batch) < 0) {
			log_error("%s=%s: expected yes or no",
				  option_env[OPT_BATCH], arg);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

int vm_options_register(spank_t sp)
{
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		spank_err_t rc = spank_option_register(sp, &options[i]);
		if (rc != ESPANK_SUCCESS) {
			log_error("cannot register --%s: %s", options[i].name,
				  spank_strerror(rc));
			return -EINVAL;
		}
	}
	return 0;
}

/* Options given on the command line are already set; fill the rest from
 * SLURM_VM_*. A bad default is reported like a bad option. */
int vm_options_apply_env_defaults(spank_t sp)
{
	static const int order[] = { OPT_IMAGE,	    OPT_CPUS, OPT_MEM,
				     OPT_HUGEPAGES, OPT_KEEP, OPT_BATCH };

	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		int val = order[i];
		const char *v = getenv(option_env[val]);
		bool given;

		if (!v || !*v)
			continue;
		given = (val == OPT_IMAGE && vm_opts.image) ||
			(val == OPT_CPUS && vm_opts.cpus) ||
			(val == OPT_MEM && vm_opts.mem_mib) ||
			(val == OPT_HUGEPAGES && vm_opts.hugepages) ||
			(val == OPT_KEEP && vm_opts.keep) ||
			(val == OPT_BATCH && vm_opts.batch_set);
		if (given)
			continue;
		if (val == OPT_KEEP &&
		    (!strcmp(v, "0") || !strcasecmp(v, "no")))
			continue;
		if (option_set(val, v, false) < 0) {
			log_error(
				"(the value came from %s in your environment)",
				option_env[val]);
			return -EINVAL;
		}
	}
	return 0;
}

int vm_batch_parse(const char *v, bool *batch)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "yes")) {
		*batch = true;
		return 0;
	}
	if (!strcmp(v, "0") || !strcasecmp(v, "no")) {
		*batch = false;
		return 0;
	}
	return -EINVAL;
}

void vm_options_free(void)
{
	free(vm_opts.image);
	free(vm_opts.hugepages);
	memset(&vm_opts, 0, sizeof(vm_opts));
}
