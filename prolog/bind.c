/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The planned PCI functions made ready for VFIO (DeviceAttach=vfio).
 *
 * DeviceBinding=managed: each function is detached from its host driver and
 * bound to vfio-pci through libvirt (virNodeDeviceDetachFlags), journaled
 * first as DETACH so that the epilog reattaches it, and the domain's
 * <hostdev managed='no'>. Not managed='yes': libvirt would then rebind when
 * qemu exits, on its own and out of our sight, and a device that fails to
 * come back (or a libvirtd restart in between) would leave no trace the
 * epilog could turn into a drained node.
 *
 * DeviceBinding=prebound: the administrator bound the functions; each must
 * be on vfio-pci, else this node is not what gres.conf says.
 *
 * Either way each of the job's group files (gres.conf File=/dev/vfio/N),
 * which the prolog's reclaim phase found held by no process, is given to
 * the job user for the job (journaled DEVOWNER with its old owner and mode,
 * which the epilog puts back; an earlier incarnation's record gives the
 * owner before the job): qemu runs as the job user and libvirt
 * relabels nothing, so this is what libvirt's DAC driver would otherwise
 * do for its qemu user.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/devices.h"
#include "vm/hypervisor.h"
#include "job/journal.h"
#include "core/log.h"
#include "prolog.h"
#include "vm/reclaim.h"

static enum prolog_result check_prebound(struct prolog *p,
					 const struct plan_device *d)
{
	struct pci_device dev = { 0 };
	int r;

	for (size_t f = 0; f < d->n_funcs; f++) {
		const char *addr = d->funcs[f].addr;

		r = devices_read(p->conf.sysfs_root, addr, &dev);
		if (r < 0) {
			log_errno(r, "job %u: PCI device %s is gone",
				  p->req.job_id, addr);
			return PROLOG_NODE_FAULT;
		}
		if (!dev.driver || strcmp(dev.driver, "vfio-pci") != 0) {
			log_error(
				"job %u: PCI device %s is bound to %s, not vfio-pci; DeviceBinding=prebound expects the administrator to bind it (or set DeviceBinding=managed)",
				p->req.job_id, addr,
				dev.driver ? dev.driver : "no driver");
			pci_device_clear(&dev);
			return PROLOG_NODE_FAULT;
		}
		pci_device_clear(&dev);
	}
	return PROLOG_OK;
}

/* The owner and mode of @path before the job: an earlier incarnation of
 * the job not yet undone may have given it to the job user, and its
 * journal then has them. */
static enum prolog_result file_owner_before(struct prolog *p, const char *path,
					    const struct stat *st, char *uid,
					    char *gid, char *mode, size_t len)
{
	const struct journal_entry *e;
	struct journal j;
	int r;

	snprintf(uid, len, "%u", (unsigned)st->st_uid);
	snprintf(gid, len, "%u", (unsigned)st->st_gid);
	snprintf(mode, len, "%o", (unsigned)(st->st_mode & 07777));
	r = guest_earlier_record(&p->conf, p->req.job_id, p->req.restart_count,
				 JOURNAL_DEVOWNER, path, &j, &e);
	if (r > 0 && e->n_args == 4) {
		snprintf(uid, len, "%s", e->args[1]);
		snprintf(gid, len, "%s", e->args[2]);
		snprintf(mode, len, "%s", e->args[3]);
		log_info("job %u: %s: its owner before the job (%s:%s %s) "
			 "from the journal of an earlier incarnation",
			 p->req.job_id, path, uid, gid, mode);
	} else if (r > 0) {
		r = log_errno(EBADMSG,
			      "job %u: %s: the DEVOWNER record of an earlier "
			      "incarnation is malformed",
			      p->req.job_id, path);
	}
	journal_free(&j);
	return r < 0 ? PROLOG_NODE_FAULT : PROLOG_OK;
}

/* The job's group file (free: the reclaim phase saw to that) is the job
 * user's until the epilog. */
static enum prolog_result give_file(struct prolog *p, const char *path)
{
	char uid[16], gid[16], mode[16];
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISCHR(st.st_mode)) {
		log_error("job %u: %s is not a device file", p->req.job_id,
			  path);
		return PROLOG_NODE_FAULT;
	}
	if (file_owner_before(p, path, &st, uid, gid, mode, sizeof(uid)) !=
	    PROLOG_OK)
		return PROLOG_NODE_FAULT;
	const char *args[] = { path, uid, gid, mode, NULL };
	if (journal_append(p->state_fd, JOURNAL_DEVOWNER, args) < 0 ||
	    devices_file_chown(path, p->req.uid, p->req.gid, 0600, NULL) < 0)
		return PROLOG_NODE_FAULT;
	log_info("job %u: %s given to uid %u for the job", p->req.job_id, path,
		 (unsigned)p->req.uid);
	return PROLOG_OK;
}

static enum prolog_result detach(struct prolog *p, struct hypervisor *hv,
				 const struct plan_device *d)
{
	for (size_t f = 0; f < d->n_funcs; f++) {
		const char *args[] = { d->funcs[f].addr, NULL };

		if (journal_append(p->state_fd, JOURNAL_DETACH, args) < 0 ||
		    hv_pci_detach(hv, d->funcs[f].addr) < 0)
			return PROLOG_NODE_FAULT;
		log_info("job %u: PCI device %s bound to vfio-pci",
			 p->req.job_id, d->funcs[f].addr);
	}
	return PROLOG_OK;
}

enum prolog_result prolog_bind_devices(struct prolog *p)
{
	const struct job_alloc *a = &p->alloc;
	struct hypervisor *hv = NULL;
	enum prolog_result res = PROLOG_OK;

	if (p->conf.device_attach != DEVICE_ATTACH_VFIO || !p->plan.n_devices)
		return PROLOG_OK;
	if (p->conf.device_binding == DEVICE_BINDING_MANAGED &&
	    hv_open(p->conf.libvirt_uri, &hv) < 0)
		return PROLOG_NODE_FAULT;
	for (size_t i = 0; res == PROLOG_OK && i < p->plan.n_devices; i++)
		res = p->conf.device_binding == DEVICE_BINDING_MANAGED
			      ? detach(p, hv, &p->plan.devices[i])
			      : check_prebound(p, &p->plan.devices[i]);
	hv_close(hv);
	for (size_t i = 0; res == PROLOG_OK && i < ALLOC_GRES_NAMES; i++)
		for (size_t j = 0; res == PROLOG_OK && j < a->gres[i].n; j++)
			res = give_file(p, a->gres[i].files[j]);
	return res;
}
