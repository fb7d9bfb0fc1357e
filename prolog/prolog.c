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
 * image, a plan that cannot be met, a guest that never boots) is logged and
 * recorded, and the job's steps fail with the reason.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "prolog.h"
#include "strutil.h"

static enum prolog_result prolog_check_image(struct prolog *p)
{
	const struct vm_request *req = &p->req;

	if (image_resolve(&p->conf, req->image, &p->spec) < 0 ||
	    image_check_as_user(&p->conf, &p->spec, req->uid, req->gid,
				&p->chain) < 0) {
		log_error("job %u: refused: image %s cannot be used",
			  req->job_id, req->image);
		return PROLOG_JOB_FAULT;
	}
	log_info("job %u: user %s image %s -> %s (%s, %u layer%s, %s%s) "
		 "vcpus=%u mem=%lluM hugepages=%s keep=%s",
		 req->job_id, req->user, req->image, p->chain.layers[0].path,
		 image_format_name(p->chain.layers[0].format), p->chain.depth,
		 p->chain.depth == 1 ? "" : "s",
		 p->spec.kernel ? "kernel " : "firmware ",
		 p->spec.kernel ? p->spec.kernel : (p->spec.firmware ?: "bios"),
		 req->cpus, (unsigned long long)req->mem_mib,
		 hugepages_name(req->hugepages), req->keep ? "yes" : "no");
	return PROLOG_OK;
}

static void prolog_log_alloc(const struct prolog *p)
{
	const struct job_alloc *a = &p->alloc;
	uint32_t job = p->req.job_id;

	log_info("job %u: node %s: Slurm cores %s -> CPUs %s, memory %lluM, "
		 "gres %s",
		 job, a->node, a->cores, a->cpus,
		 (unsigned long long)a->mem_mib,
		 a->gres_detail ? a->gres_detail : "none");
	for (size_t i = 0; i < ALLOC_GRES_NAMES; i++)
		for (size_t j = 0; j < a->gres[i].n; j++)
			log_info("job %u: %s %u -> %s -> IOMMU group %d", job,
				 a->gres[i].name, a->gres[i].indices[j],
				 a->gres[i].files[j], a->gres[i].groups[j]);
	for (size_t i = 0; i < a->n_requests; i++) {
		const struct plan_device_request *d = &a->requests[i];
		log_info("job %u: %s %d = PCI %s (%s%s, NUMA node %d, driver "
			 "%s)",
			 job, d->gres, d->gres_index, d->dev->addr,
			 pci_kind_name(d->dev->kind),
			 d->dev->is_vf ? " VF" : "", d->dev->numa_node,
			 d->dev->driver ? d->dev->driver : "none");
	}
}

/* What Slurm gave the job here, as CPUs and PCI functions. Not reaching
 * slurmctld is the job's problem, never a reason to drain; devices that
 * are not what gres.conf says they are is the node's. */
static enum prolog_result prolog_resolve_alloc(struct prolog *p)
{
	_cleanup_free_ char *gres_conf = slurm_conf_sibling("gres.conf");
	const char *node = getenv("SLURMD_NODENAME");
	int r;

	if (!node || !str_is_safe_name(node, 256)) {
		log_error(
			"SLURMD_NODENAME is not set: is this a Slurm Prolog?");
		return PROLOG_NODE_FAULT;
	}
	r = alloc_load(p->req.job_id, node, &p->alloc);
	if (r < 0) {
		log_error("job %u: refused: cannot learn its allocation on %s",
			  p->req.job_id, node);
		return PROLOG_JOB_FAULT;
	}
	/* Set by slurmd from gres/ibvf's allocation: users cannot set it. */
	p->alloc.ibvfs_env = getenv("SLURM_JOB_IBVFS");
	r = topology_load(p->conf.topology_file, &p->topo);
	if (r < 0) {
		log_errno(r, "cannot load the hwloc topology %s",
			  p->conf.topology_file ?: "of this node");
		return PROLOG_NODE_FAULT;
	}
	r = alloc_resolve(&p->alloc, &p->conf, p->topo, gres_conf);
	if (r < 0) {
		log_error("job %u: the devices and CPUs Slurm allocated on %s "
			  "do not match this node; check gres.conf, SysfsRoot "
			  "and `slurmd -G`",
			  p->req.job_id, node);
		return PROLOG_NODE_FAULT;
	}
	if (p->alloc.ibvfs_env)
		log_info("job %u: SLURM_JOB_IBVFS=%s (gres/ibvf) agrees with "
			 "this node's mapping",
			 p->req.job_id, p->alloc.ibvfs_env);
	prolog_log_alloc(p);
	return PROLOG_OK;
}

static enum prolog_result prolog_plan(struct prolog *p)
{
	struct plan_request pr = {
		.cpus = p->alloc.cpus,
		.max_vcpus = p->req.cpus,
		.mem_mib = p->req.mem_mib ? p->req.mem_mib : p->alloc.mem_mib,
		.mem_overhead_mib = p->spec.mem_overhead_mib
					    ? p->spec.mem_overhead_mib
					    : p->conf.mem_overhead_mb,
		.hugepage_kib = p->req.hugepages == HUGEPAGES_2M   ? 2048
				: p->req.hugepages == HUGEPAGES_1G ? 1048576
								   : 0,
		.require_locality = p->conf.require_locality,
		.devices = p->alloc.requests,
		.n_devices = p->alloc.n_requests,
	};
	_cleanup_free_ char *summary = NULL;

	/* --vm-mem is the guest's memory: no overhead comes off it. */
	if (p->req.mem_mib)
		pr.mem_overhead_mib = 0;
	if (plan_compute(p->topo, &pr, &p->plan) < 0) {
		log_error("job %u: refused: %s", p->req.job_id, p->plan.reason);
		return PROLOG_JOB_FAULT;
	}
	if (plan_summary(&p->plan, &summary) == 0)
		for (char *line = strtok(summary, "\n"); line;
		     line = strtok(NULL, "\n"))
			log_info("job %u: plan: %s", p->req.job_id, line);
	return PROLOG_OK;
}

static enum prolog_result prolog_run(struct prolog *p)
{
	_cleanup_free_ char *conf_path = vmconf_default_path();
	enum prolog_result res;

	if (vmconf_load(&p->conf, conf_path) < 0) {
		log_error(
			"%s is broken: fix it; this node is drained until then",
			conf_path ? conf_path : "vm.conf");
		return PROLOG_NODE_FAULT;
	}
	if (p->conf.log_file && log_open_file(p->conf.log_file) < 0)
		log_warn("cannot open LogFile %s", p->conf.log_file);
	log_set_level((enum log_level)p->conf.log_level);

	/* The raw request, for the admin reading the log (values sanitized by
	 * the logger). */
	log_info("job %s: VM requested: SPANK_VM_IMAGE=%s SPANK_VM_CPUS=%s "
		 "SPANK_VM_MEM=%s SPANK_VM_HUGEPAGES=%s SPANK_VM_KEEP=%s",
		 getenv("SLURM_JOB_ID") ?: "?", getenv("SPANK_VM_IMAGE"),
		 getenv("SPANK_VM_CPUS") ?: "", getenv("SPANK_VM_MEM") ?: "",
		 getenv("SPANK_VM_HUGEPAGES") ?: "",
		 getenv("SPANK_VM_KEEP") ?: "");
	/* The state directory first: whatever is wrong with the rest of the
	 * request, the job's steps must find the reason and fail. */
	if (request_job_from_env(&p->req.job_id, &p->req.restart_count) < 0)
		return PROLOG_NODE_FAULT;
	res = prolog_statedir(p);
	if (res != PROLOG_OK)
		return res;
	if (request_from_env(&p->req) < 0) {
		log_error("job %u: refused: the VM request is invalid",
			  p->req.job_id);
		prolog_record_reason(p, "job %u: the VM request is invalid: %s",
				     p->req.job_id, log_last_error());
		return PROLOG_JOB_FAULT;
	}
	res = prolog_check_image(p);
	if (res == PROLOG_OK)
		res = prolog_resolve_alloc(p);
	if (res == PROLOG_OK)
		res = prolog_plan(p);
	if (res == PROLOG_OK && !p->conf.boot) {
		log_info("job %u: Boot=no in vm.conf: planned only, no guest",
			 p->req.job_id);
		prolog_record_reason(p, "Boot=no in vm.conf on node %s: the VM of job %u was planned but not booted",
				     p->alloc.node, p->req.job_id);
	}
	else if (res == PROLOG_OK)
		res = prolog_boot(p);
	if (res == PROLOG_JOB_FAULT && p->state_fd >= 0 && !p->reason_recorded)
		prolog_record_reason(p, "job %u: %s", p->req.job_id,
				     log_last_error());
	return res;
}

static void prolog_free(struct prolog *p)
{
	if (p->state_fd >= 0)
		close(p->state_fd);
	free(p->state_path);
	plan_free(&p->plan);
	topology_free(p->topo);
	alloc_free(&p->alloc);
	image_chain_free(&p->chain);
	image_spec_free(&p->spec);
	request_free(&p->req);
	vmconf_free(&p->conf);
}

int main(int argc, char **argv)
{
	struct prolog p = { .state_fd = -1 };
	enum prolog_result res;

	if (!request_wanted())
		return EXIT_SUCCESS;
	log_open("slurm-vm-prolog");
	res = prolog_run(&p);
	prolog_free(&p);
	return res == PROLOG_NODE_FAULT ? EXIT_FAILURE : EXIT_SUCCESS;
}
