/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-prolog: run by slurmd as root with PrologFlags=Alloc.
 *
 * A job without SPANK_VM_IMAGE leaves at once: plain jobs must not notice us.
 * Everything else in the environment is user input and is checked again
 * here, as root but with the job user's credentials for the image.
 *
 * Exit status is Slurm's: non-zero drains the node, so it is kept for node
 * faults (this node's configuration, libvirt, devices). A job fault (a bad
 * image, a guest that never boots) is logged and recorded, and the job's
 * steps fail with the reason.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "log.h"
#include "request.h"
#include "vmconf.h"

enum prolog_result {
	PROLOG_OK = 0,
	PROLOG_JOB_FAULT,  /* the job fails, the node stays up */
	PROLOG_NODE_FAULT, /* Slurm drains the node */
};

static enum prolog_result prolog_check_image(const struct vmconf *conf,
					     const struct vm_request *req)
{
	struct image_spec spec;
	struct image_chain chain;
	enum prolog_result res = PROLOG_JOB_FAULT;

	if (image_resolve(conf, req->image, &spec) < 0)
		goto out;
	if (image_check_as_user(conf, &spec, req->uid, req->gid, &chain) < 0)
		goto out;
	log_info("job %u: user %s image %s -> %s (%s, %u layer%s, %s%s) vcpus=%u mem=%lluM hugepages=%s keep=%s",
		 req->job_id, req->user, req->image, chain.layers[0].path,
		 image_format_name(chain.layers[0].format), chain.depth,
		 chain.depth == 1 ? "" : "s",
		 spec.kernel ? "kernel " : "firmware ",
		 spec.kernel ? spec.kernel : (spec.firmware ?: "bios"),
		 req->cpus, (unsigned long long)req->mem_mib,
		 hugepages_name(req->hugepages), req->keep ? "yes" : "no");
	image_chain_free(&chain);
	res = PROLOG_OK;
out:
	image_spec_free(&spec);
	return res;
}

static enum prolog_result prolog_run(void)
{
	_cleanup_free_ char *conf_path = vmconf_default_path();
	struct vm_request req = { 0 };
	struct vmconf conf;
	enum prolog_result res = PROLOG_NODE_FAULT;

	if (vmconf_load(&conf, conf_path) < 0) {
		log_error("%s is broken: fix it; this node is drained until then",
			  conf_path ? conf_path : "vm.conf");
		goto out;
	}
	if (conf.log_file && log_open_file(conf.log_file) < 0)
		log_warn("cannot open LogFile %s", conf.log_file);
	log_set_level((enum log_level)conf.log_level);

	/* The raw request, for the admin reading the log (values sanitized by
	 * the logger). */
	log_info("job %s: VM requested: SPANK_VM_IMAGE=%s SPANK_VM_CPUS=%s SPANK_VM_MEM=%s SPANK_VM_HUGEPAGES=%s SPANK_VM_KEEP=%s",
		 getenv("SLURM_JOB_ID") ?: "?", getenv("SPANK_VM_IMAGE"),
		 getenv("SPANK_VM_CPUS") ?: "", getenv("SPANK_VM_MEM") ?: "",
		 getenv("SPANK_VM_HUGEPAGES") ?: "",
		 getenv("SPANK_VM_KEEP") ?: "");
	if (request_from_env(&req) < 0) {
		log_error("job %s: refused: the VM request is invalid",
			  getenv("SLURM_JOB_ID") ?: "?");
		res = PROLOG_JOB_FAULT;
		goto out;
	}
	res = prolog_check_image(&conf, &req);
	if (res == PROLOG_JOB_FAULT) {
		log_error("job %u: refused: image %s cannot be used",
			  req.job_id, req.image);
		goto out;
	}
	log_warn("job %u: guest boot is not implemented yet; steps run on the host",
		 req.job_id);
out:
	request_free(&req);
	vmconf_free(&conf);
	return res;
}

int main(int argc, char **argv)
{
	if (!request_wanted())
		return EXIT_SUCCESS;
	log_open("slurm-vm-prolog");
	return prolog_run() == PROLOG_NODE_FAULT ? EXIT_FAILURE : EXIT_SUCCESS;
}
