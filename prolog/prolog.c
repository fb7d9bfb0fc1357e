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

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "slurm/jobfate.h"
#include "job/journal.h"
#include "job/share_transport.h"
#include "core/log.h"
#include "prolog.h"
#include "core/strutil.h"
#include "hw/holders.h"
#include "job/taskenv.h"
#include "hw/taskmap.h"

/* A root job's tasks would run as root in the guest: the admin decides
 * (AllowRoot=), and saying no is the job's fault, never the node's. */
static enum prolog_result prolog_check_root(struct prolog *p)
{
	if (p->req.uid != 0 || p->conf.allow_root)
		return PROLOG_OK;
	log_error("job %u: refused: the job runs as root and AllowRoot=no in "
		  "vm.conf on this node: submit it as an ordinary user, or "
		  "ask the admin for AllowRoot=yes",
		  p->req.job_id);
	return PROLOG_JOB_FAULT;
}

static enum prolog_result prolog_check_image(struct prolog *p)
{
	const struct vm_request *req = &p->req;

	if (image_resolve(&p->conf, req->image, &p->spec) < 0 ||
	    image_check_as_user(&p->conf, &p->spec, req->uid, req->gid,
				&p->chain) < 0) {
		/* The cause goes into the reason the job's steps print. */
		_cleanup_free_ char *cause = strdup(log_last_error());

		/* The request is cut so that the cause fits in the reason. */
		log_error("job %u: refused: image %.200s cannot be used: %s",
			  req->job_id, req->image, cause ? cause : "?");
		return PROLOG_JOB_FAULT;
	}
	if (p->conf.overlay_max_gib &&
	    p->chain.layers[0].virtual_size > p->conf.overlay_max_gib << 30) {
		uint64_t gib =
			((p->chain.layers[0].virtual_size - 1) >> 30) + 1;

		/* The overlay grows up to the image's virtual size (plus
		 * qcow2 metadata), in OverlayDir, a system filesystem. */
		log_error("job %u: refused: image %s has a virtual size of "
			  "%" PRIu64 " GiB; this node's overlays may grow to "
			  "OverlayMaxSize=%" PRIu64 " GiB: use a smaller image",
			  req->job_id, req->image, gib,
			  p->conf.overlay_max_gib);
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
		_cleanup_free_ char *cause = strdup(log_last_error());

		log_error(
			"job %u: refused: cannot learn its allocation on %s: %s",
			p->req.job_id, node, cause ? cause : "?");
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

/* What the tasks need to translate their environment (taskenv.h). */
static enum prolog_result prolog_write_task_map(struct prolog *p)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -1;
	struct task_map m;
	int r;

	r = task_map_from_plan(&p->plan, &m);
	if (r == 0) {
		r = task_map_format(&m, &text);
		task_map_free(&m);
	}
	if (r < 0)
		return PROLOG_NODE_FAULT;
	fd = openat(p->state_fd, TASKMAP_FILE,
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0644);
	if (fd < 0 || fchmod(fd, 0644) < 0 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		log_errno(errno, "cannot write %s/%s", p->state_path,
			  TASKMAP_FILE);
		return PROLOG_NODE_FAULT;
	}
	return PROLOG_OK;
}

static enum prolog_result prolog_plan(struct prolog *p)
{
	struct plan_request pr = {
		.cpus = p->alloc.cpus,
		.max_vcpus = p->req.cpus,
		.mem_mib = p->alloc.mem_mib,
		.guest_mem_mib = p->req.mem_mib,
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

	if (plan_compute(p->topo, &pr, &p->plan) < 0) {
		log_error("job %u: refused: %s", p->req.job_id, p->plan.reason);
		return PROLOG_JOB_FAULT;
	}
	if (plan_summary(&p->plan, &summary) == 0)
		for (char *line = strtok(summary, "\n"); line;
		     line = strtok(NULL, "\n"))
			log_info("job %u: plan: %s", p->req.job_id, line);
	return prolog_write_task_map(p);
}

/* Does @g hold one of the devices planned for this job? Which one. */
static const struct plan_device *guest_holds_planned(const struct prolog *p,
						     const struct guest *g)
{
	for (size_t i = 0; i < p->plan.n_devices; i++)
		for (size_t k = 0; g->has_domain && k < g->n_devices; k++)
			if (strcasecmp(g->devices[k].addr,
				       p->plan.devices[i].addr) == 0)
				return &p->plan.devices[i];
	return NULL;
}

/* A planned device held by the guest of an ended job is reclaimed first, by
 * the code `slurm-vm cleanup` runs; held by an active job's guest it is a
 * node fault (Slurm gave one device to two jobs), and so when slurmctld
 * cannot say. */
static enum prolog_result prolog_reclaim_guest(struct prolog *p,
					       const struct guest *g,
					       const struct plan_device *d)
{
	struct teardown_result tr;
	uint32_t job = p->req.job_id;
	char why[256];
	int r;

	r = guest_reclaim_if_ended(&p->conf, g, &tr, why, sizeof(why));
	if (r == 1) {
		log_info("job %u: %s %d (PCI %s) was held by the guest of "
			 "ended job %u (%s): reclaimed, %u steps",
			 job, d->gres, d->gres_index, d->addr, g->job_id, why,
			 tr.steps);
		return PROLOG_OK;
	}
	if (r == 0)
		log_error("job %u: %s %d (PCI %s) is held by the guest of job "
			  "%u, which slurmctld says is %s: Slurm gave one "
			  "device to two jobs; check gres.conf against "
			  "`slurm-vm gres` and `slurm-vm list`",
			  job, d->gres, d->gres_index, d->addr, g->job_id, why);
	else if (r == -EHOSTDOWN)
		log_error("job %u: %s %d (PCI %s) is held by the guest of job "
			  "%u and %s: not reclaimed; run `slurm-vm cleanup` "
			  "once it answers",
			  job, d->gres, d->gres_index, d->addr, g->job_id, why);
	else if (r == -EBUSY)
		log_error("job %u: %s %d (PCI %s) is held by the guest of job "
			  "%u, whose prolog or epilog runs now",
			  job, d->gres, d->gres_index, d->addr, g->job_id);
	else
		log_error("job %u: %s %d (PCI %s) is held by the guest of "
			  "ended job %u, and reclaiming it failed (%u of %u "
			  "steps); see `slurm-vm list`",
			  job, d->gres, d->gres_index, d->addr, g->job_id,
			  tr.failed, tr.steps);
	return PROLOG_NODE_FAULT;
}

/* Any other holder of a planned device: a libvirt domain that is not one
 * of ours, or a process with its /dev/vfio group open. */
static enum prolog_result prolog_check_other_holders(struct prolog *p,
						     const struct guest_list *l)
{
	uint32_t job = p->req.job_id;

	for (size_t i = 0; i < p->plan.n_devices; i++) {
		const struct plan_device *d = &p->plan.devices[i];
		const char *dom = guests_foreign_holder(l, d->addr);

		if (!dom)
			continue;
		log_error("job %u: %s %d (PCI %s) is held by libvirt domain "
			  "%s, which is no guest of this node's StateDir %s",
			  job, d->gres, d->gres_index, d->addr, dom,
			  p->conf.state_dir);
		return PROLOG_NODE_FAULT;
	}
	for (size_t i = 0; i < ALLOC_GRES_NAMES; i++)
		for (size_t j = 0; j < p->alloc.gres[i].n; j++) {
			const char *file = p->alloc.gres[i].files[j];
			struct device_holder h;
			unsigned killed;
			int r;

			/* A user's holder outlived the job it was lent to:
			 * reclaimed, never a reason to drain. */
			r = device_file_free(file, DEVICE_FREE_WAIT_MS, &h,
					     &killed);
			if (killed)
				log_info("job %u: %s %u (%s) was held by %u "
					 "process%s of a user whose job ended "
					 "(uid %ld, %s): killed, reclaimed",
					 job, p->alloc.gres[i].name,
					 p->alloc.gres[i].indices[j], file,
					 killed, killed == 1 ? "" : "es", h.uid,
					 h.comm);
			if (r != -EBUSY)
				continue;
			log_error("job %u: %s %u (%s) is held by process %d "
				  "(%s), which is no guest of slurm-vm (uid "
				  "%ld)",
				  job, p->alloc.gres[i].name,
				  p->alloc.gres[i].indices[j], file, (int)h.pid,
				  h.comm, h.uid);
			return PROLOG_NODE_FAULT;
		}
	return PROLOG_OK;
}

static enum prolog_result prolog_free_devices(struct prolog *p)
{
	struct guest_list list;
	enum prolog_result res = PROLOG_OK;
	int r;

	if (p->plan.n_devices == 0)
		return PROLOG_OK;
	r = guests_scan(&p->conf, &list);
	if (r < 0) {
		log_errno(r, "job %u: cannot list this node's guests",
			  p->req.job_id);
		return PROLOG_NODE_FAULT;
	}
	if (list.libvirt_down) {
		log_error("job %u: libvirt at %s is unreachable", p->req.job_id,
			  p->conf.libvirt_uri);
		res = PROLOG_NODE_FAULT;
	}
	for (size_t i = 0; res == PROLOG_OK && i < list.n; i++) {
		const struct plan_device *d =
			guest_holds_planned(p, &list.v[i]);

		if (d)
			res = prolog_reclaim_guest(p, &list.v[i], d);
	}
	if (res == PROLOG_OK)
		res = prolog_check_other_holders(p, &list);
	guest_list_free(&list);
	return res;
}

/* The state directory is this prolog's until it exits (`slurm-vm cleanup`
 * and a concurrent epilog wait); --vm-keep is recorded for whoever tears
 * the guest down. */
static enum prolog_result prolog_own_state(struct prolog *p)
{
	_cleanup_close_ int fd = -1;

	if (statedir_lock(p->state_fd, p->conf.shutdown_timeout + 30) < 0) {
		log_error("job %u: %s is locked by another prolog or epilog",
			  p->req.job_id, p->state_path);
		return PROLOG_NODE_FAULT;
	}
	if (!p->req.keep)
		return PROLOG_OK;
	fd = openat(p->state_fd, GUEST_KEEP_FILE,
		    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_errno(errno, "job %u: cannot record --vm-keep",
			  p->req.job_id);
		return PROLOG_NODE_FAULT;
	}
	return PROLOG_OK;
}

/* State @left here that carries this job's id (an older job's: ids wrap;
 * or an earlier run of this one) could not be reclaimed (@r, @tr): this
 * job's fault, since its id brought it here, with a reason for its steps
 * that names the admin's way out; the node's only when that guest may
 * still hold devices, as at its own epilog. */
static enum prolog_result
prolog_left_state_fault(struct prolog *p, const char *left, int r,
			const struct teardown_result *tr)
{
	const char *node = getenv("SLURMD_NODENAME");

	if (tr->node_unsafe) {
		log_error("job %u: the guest of %s/%s, left by an earlier job "
			  "%u, may still hold its devices (%u of %u teardown "
			  "steps failed); see `slurm-vm list`",
			  p->req.job_id, p->conf.state_dir, left, p->req.job_id,
			  tr->failed, tr->steps);
		return PROLOG_NODE_FAULT;
	}
	log_errno(r, "job %u: %s/%s cannot be reclaimed", p->req.job_id,
		  p->conf.state_dir, left);
	state_record_reason(
		p,
		"job %u: refused: node %s still has the state %s of an earlier job with the same id (or of an earlier run of this job), and it could not be removed (%s): resubmit; the admin's `slurm-vm cleanup` on that node removes it",
		p->req.job_id, node ? node : "?", left,
		r == -EHOSTDOWN ? "slurmctld does not answer whether it ended"
		: r == -EBUSY	? "another prolog, epilog or cleanup holds it"
				: strerror(-r));
	return PROLOG_JOB_FAULT;
}

/* State of this name left by an earlier job (job ids wrap) is not this
 * job's: its keep marker least of all. One that cannot be removed fails
 * the job (prolog_left_state_fault()); its steps find the reason in that
 * directory, the only one of this name, which stays for `slurm-vm
 * cleanup`. Nothing of this job is made. */
static enum prolog_result prolog_take_state_name(struct prolog *p)
{
	struct teardown_result tr;
	enum prolog_result res;
	char name[64];
	int r = guest_take_name(&p->conf, p->req.job_id, p->req.restart_count,
				p->conf.shutdown_timeout + 30, &tr);

	if (r == 0 || r == -ENOTDIR || r == -ELOOP || r == -EPERM)
		return PROLOG_OK;
	statedir_name(p->req.job_id, p->req.restart_count, name, sizeof(name));
	if (!tr.node_unsafe) {
		res = state_dir_create(p);
		if (res != PROLOG_OK)
			return res;
	}
	return prolog_left_state_fault(p, name, r, &tr);
}

/* What an older job of this id (ids wrap) or an earlier incarnation of
 * this one left here has this job's names (bridge, tables, partition
 * record, IB GUIDs) and may hold its devices: reclaimed, once slurmctld
 * says it ended, before anything of this job is made, so that no replay
 * of theirs can undo it later. One that cannot be reclaimed, or that
 * slurmctld cannot say has ended: prolog_left_state_fault(). */
static enum prolog_result prolog_reclaim_incarnations(struct prolog *p)
{
	struct teardown_result tr;
	char left[64] = "";
	int r;

	r = guest_reclaim_incarnations(&p->conf, p->req.job_id,
				       p->req.restart_count,
				       p->conf.shutdown_timeout + 30,
				       guest_fate, &tr, left, sizeof(left));
	if (r == 0)
		return PROLOG_OK;
	return prolog_left_state_fault(p, left, r, &tr);
}

/* Kept state (--vm-keep) past KeepFor= goes here too, not only when an
 * admin runs `slurm-vm cleanup`. Never the job's problem. */
static void prolog_expire_kept(struct prolog *p)
{
	unsigned removed;

	if (kept_expire(&p->conf, time(NULL), &removed) < 0)
		log_warn("job %u: some kept state older than KeepFor=%uh could "
			 "not be removed; run `slurm-vm cleanup`",
			 p->req.job_id, p->conf.keep_for_hours);
}

/* A share missing on this node (a filesystem not mounted), or
 * SharedDirTransport=virtiofs without a virtiofsd that can serve it, would
 * fail every guest's start: the node's fault, named, before anything is
 * made. */
static enum prolog_result prolog_check_shares(struct prolog *p)
{
	size_t n = vmconf_n_shared_dirs(&p->conf);
	char why[512];

	p->share_transport = SHARED_DIR_9P;
	if (n && share_transport_resolve(&p->conf, &p->share_transport, why,
					 sizeof(why)) < 0) {
		log_error("job %u: SharedDirs: %s: guests cannot mount the "
			  "shares; fix vm.conf as slurm-vm check-config says",
			  p->req.job_id, why);
		return PROLOG_NODE_FAULT;
	}

	for (size_t i = 0; i < n; i++) {
		const char *d = p->conf.shared_dirs[i];
		int r = vmconf_shared_dir_usable(d);

		if (r < 0) {
			log_error("job %u: SharedDirs: %s: %s: guests cannot "
				  "mount it; mount it on this node or fix "
				  "vm.conf (slurm-vm check-config)",
				  p->req.job_id, d,
				  r == -ENOTDIR ? "not a directory"
						: strerror(-r));
			return PROLOG_NODE_FAULT;
		}
	}
	return PROLOG_OK;
}

/* Runs one phase when the ones before succeeded, and logs its time. */
static enum prolog_result
prolog_phase(struct prolog *p, const char *name,
	     enum prolog_result (*fn)(struct prolog *), enum prolog_result res)
{
	double t0;

	if (res != PROLOG_OK)
		return res;
	t0 = clock_now_s();
	res = fn(p);
	log_info("job %u: phase %s %.3fs", p->req.job_id, name,
		 clock_now_s() - t0);
	return res;
}

static enum prolog_result prolog_run(struct prolog *p)
{
	_cleanup_free_ char *conf_path = vmconf_default_path();
	enum prolog_result res;

	/* The job first: every message from here on, and the drain reason,
	 * names it. */
	if (request_job_from_env(&p->req.job_id, &p->req.restart_count) < 0)
		return PROLOG_NODE_FAULT;
	if (vmconf_load(&p->conf, conf_path) < 0) {
		log_error("job %u: %s is broken: fix it; this node is drained "
			  "until then",
			  p->req.job_id, conf_path ? conf_path : "vm.conf");
		return PROLOG_NODE_FAULT;
	}
	if (p->conf.log_file && log_open_file(p->conf.log_file) < 0)
		log_warn("cannot open LogFile %s", p->conf.log_file);
	log_set_level((enum log_level)p->conf.log_level);

	/* The raw request, for the admin reading the log (values sanitized by
	 * the logger). */
	log_info("job %s: VM requested: %s=%s %s=%s %s=%s %s=%s %s=%s",
		 getenv("SLURM_JOB_ID") ?: "?", REQUEST_ENV(REQUEST_IMAGE),
		 getenv(REQUEST_ENV(REQUEST_IMAGE)), REQUEST_ENV(REQUEST_CPUS),
		 getenv(REQUEST_ENV(REQUEST_CPUS)) ?: "",
		 REQUEST_ENV(REQUEST_MEM),
		 getenv(REQUEST_ENV(REQUEST_MEM)) ?: "",
		 REQUEST_ENV(REQUEST_HUGEPAGES),
		 getenv(REQUEST_ENV(REQUEST_HUGEPAGES)) ?: "",
		 REQUEST_ENV(REQUEST_KEEP),
		 getenv(REQUEST_ENV(REQUEST_KEEP)) ?: "");
	/* The state directory first: whatever is wrong with the rest of the
	 * request, the job's steps must find the reason and fail. */
	res = prolog_take_state_name(p);
	if (res == PROLOG_OK)
		res = state_dir_create(p);
	if (res != PROLOG_OK)
		return res;
	prolog_expire_kept(p);
	if (request_from_env(&p->req) < 0) {
		_cleanup_free_ char *cause = strdup(log_last_error());

		log_error("job %u: refused: the VM request is invalid: %s",
			  p->req.job_id, cause ? cause : "?");
		state_record_reason(p, "%s", log_last_error());
		return PROLOG_JOB_FAULT;
	}
	res = prolog_own_state(p);
	res = prolog_phase(p, "incarnations", prolog_reclaim_incarnations, res);
	res = prolog_phase(p, "root", prolog_check_root, res);
	res = prolog_phase(p, "check", prolog_check_image, res);
	res = prolog_phase(p, "alloc", prolog_resolve_alloc, res);
	res = prolog_phase(p, "plan", prolog_plan, res);
	if (res == PROLOG_OK && !p->conf.boot) {
		log_info("job %u: Boot=no in vm.conf: planned only, no guest",
			 p->req.job_id);
		state_record_reason(
			p,
			"Boot=no in vm.conf on node %s: the VM of job %u was planned but not booted",
			p->alloc.node, p->req.job_id);
		return res;
	}
	res = prolog_phase(p, "shares", prolog_check_shares, res);
	res = prolog_phase(p, "reclaim", prolog_free_devices, res);
	if (p->conf.ib_partitions)
		res = prolog_phase(p, "ib", prolog_ib_partition, res);
	if (p->conf.job_network == JOB_NETWORK_VXLAN)
		res = prolog_phase(p, "network", prolog_network, res);
	res = prolog_phase(p, "boot", prolog_start, res);
	if (res == PROLOG_JOB_FAULT && p->state_fd >= 0 && !p->reason_recorded)
		/* Every refusal above names the job already. */
		state_record_reason(p, "%s", log_last_error());
	return res;
}

static void prolog_free(struct prolog *p)
{
	if (p->state_fd >= 0)
		close(p->state_fd);
	free(p->state_path);
	for (size_t i = 0; p->share_sockets && p->share_sockets[i]; i++)
		free(p->share_sockets[i]);
	free(p->share_sockets);
	plan_free(&p->plan);
	if (p->has_net)
		jobnet_plan_free(&p->net);
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
	double t0;

	if (!request_wanted())
		return EXIT_SUCCESS;
	t0 = clock_now_s();
	log_open("slurm-vm-prolog");
	res = prolog_run(&p);
	if (res == PROLOG_NODE_FAULT)
		fault_report_node(p.req.job_id, log_last_error());
	else if (res == PROLOG_JOB_FAULT)
		fault_report_job(p.req.job_id,
				 p.reason[0] ? p.reason : log_last_error());
	log_info("job %u: prolog done in %.3fs: %s", p.req.job_id,
		 clock_now_s() - t0,
		 res == PROLOG_OK	   ? "ok"
		 : res == PROLOG_JOB_FAULT ? "job fault"
					   : "node fault");
	prolog_free(&p);
	return res == PROLOG_NODE_FAULT ? EXIT_FAILURE : EXIT_SUCCESS;
}
