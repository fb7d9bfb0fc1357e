/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Allocator (sbatch, salloc) and local (srun) context: check the request for
 * the user's convenience, then hand it to the Prolog through the job control
 * environment, where it arrives as SPANK_VM_*. The Prolog checks everything
 * again as root: a job can be submitted with any SPANK_* values.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job/image.h"
#include "core/log.h"
#include "job/request.h"
#include "spank_vm.h"
#include "job/vmconf.h"

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

/* The same checks the prolog makes as root, made here as the submitting
 * user so that a bad image is refused before a job exists. A relative path
 * is made absolute here, from the directory the user submits from: the
 * prolog runs elsewhere (and checks the result again). */
static int submit_check_image(char **request)
{
	_cleanup_free_ char *default_path = NULL, *cwd = NULL;
	const char *path = plugin_args.config;
	struct image_spec spec = { 0 };
	struct image_chain chain;
	struct vmconf conf;
	int r;

	*request = NULL;
	if (!path)
		path = default_path = vmconf_default_path();
	r = vmconf_load(&conf, path);
	if (r < 0) {
		log_error(
			"cannot read the slurm-vm configuration %s; tell your administrator",
			path ? path : "?");
		goto out;
	}
	cwd = getcwd(NULL, 0);
	r = image_request_at(&conf, vm_opts.image, cwd, request);
	if (r == 0)
		r = image_resolve(&conf, *request, &spec);
	if (r == 0) {
		r = image_check(&conf, &spec, &chain);
		if (r == 0) {
			log_debug("image %s: %s (%s)", *request,
				  chain.layers[0].path,
				  image_format_name(chain.layers[0].format));
			image_chain_free(&chain);
		}
	}
	image_spec_free(&spec);
out:
	vmconf_free(&conf);
	return r;
}

int submit_post_opt(spank_t sp)
{
	_cleanup_free_ char *image = NULL;
	char num[32];
	int r;

	if (vm_options_apply_env_defaults(sp) < 0)
		return -EINVAL;
	/* Only a batch script can run in the guest: salloc's shell and
	 * srun's tasks have their own places. An srun in a --vm-batch job
	 * inherits the option from the job's environment: not its own. */
	if (vm_opts.batch_set &&
	    ((spank_context() == S_CTX_LOCAL && !getenv("SLURM_JOB_ID")) ||
	     (spank_context() == S_CTX_ALLOCATOR &&
	      !strcmp(program_invocation_short_name, "salloc")))) {
		log_error("--vm-batch is an sbatch option (it runs the batch "
			  "script in the guest); srun's tasks run in the "
			  "guest of a --vm-image job anyway: drop --vm-batch");
		return -EINVAL;
	}
	if (!vm_opts.image) {
		if (vm_opts.cpus || vm_opts.mem_mib || vm_opts.hugepages ||
		    vm_opts.keep || vm_opts.batch_set) {
			log_error("--vm-cpus, --vm-mem, --vm-hugepages, "
				  "--vm-keep and --vm-batch need --vm-image");
			return -EINVAL;
		}
		return 0;
	}
	/* srun in a job that exists (its batch script, salloc's shell)
	 * starts a step, not a job: the image was checked when the job was
	 * submitted and by the prolog, and one inherited from sbatch, if
	 * relative, is relative to where sbatch ran, not to where the
	 * script has gone since (cd). */
	if (spank_context() == S_CTX_LOCAL && getenv("SLURM_JOB_ID"))
		return 0;
	if (submit_check_image(&image) < 0) {
		log_error("--vm-image=%s refused; no job was submitted",
			  vm_opts.image);
		return -EINVAL;
	}

	r = job_control_setenv(sp, REQUEST_IMAGE, image);
	if (r == 0 && vm_opts.cpus) {
		snprintf(num, sizeof(num), "%u", vm_opts.cpus);
		r = job_control_setenv(sp, REQUEST_CPUS, num);
	}
	if (r == 0 && vm_opts.mem_mib) {
		snprintf(num, sizeof(num), "%" PRIu64, vm_opts.mem_mib);
		r = job_control_setenv(sp, REQUEST_MEM, num);
	}
	if (r == 0 && vm_opts.hugepages)
		r = job_control_setenv(sp, REQUEST_HUGEPAGES,
				       vm_opts.hugepages);
	if (r == 0 && vm_opts.keep)
		r = job_control_setenv(sp, REQUEST_KEEP, "1");
	return r;
}
