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
 * be on vfio-pci and its IOMMU group file held by no process (a leftover
 * guest, a stray qemu), else this node is not what gres.conf says.
 */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices.h"
#include "hypervisor.h"
#include "journal.h"
#include "log.h"
#include "prolog.h"

/* Does process @pid have @path open? */
static bool pid_holds(long pid, const char *path)
{
	char fddir[64], link[PATH_MAX], target[PATH_MAX];
	DIR *fds;
	struct dirent *fe;
	bool held = false;

	snprintf(fddir, sizeof(fddir), "/proc/%ld/fd", pid);
	fds = opendir(fddir);
	if (!fds)
		return false;
	while (!held && (fe = readdir(fds))) {
		ssize_t n;

		snprintf(link, sizeof(link), "%s/%s", fddir, fe->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		held = strcmp(target, path) == 0;
	}
	closedir(fds);
	return held;
}

/* A process other than us that has @path open: its pid, or 0. */
static pid_t file_holder(const char *path)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	pid_t holder = 0;

	if (!proc)
		return 0;
	while (!holder && (de = readdir(proc))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!*end && pid > 0 && pid != getpid() && pid_holds(pid, path))
			holder = (pid_t)pid;
	}
	closedir(proc);
	return holder;
}

static enum prolog_result check_prebound(struct prolog *p,
					 const struct plan_device *d)
{
	struct pci_device dev = { 0 };
	char vfio[64];
	pid_t holder;
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
	snprintf(vfio, sizeof(vfio), "/dev/vfio/%d", d->iommu_group);
	holder = file_holder(vfio);
	if (holder) {
		log_error(
			"job %u: %s (PCI device %s) is held by process %ld; a leftover guest? see slurm-vm cleanup",
			p->req.job_id, vfio, d->addr, (long)holder);
		return PROLOG_NODE_FAULT;
	}
	return PROLOG_OK;
}

static enum prolog_result detach(struct prolog *p, struct hypervisor *hv,
				 const struct plan_device *d)
{
	for (size_t f = 0; f < d->n_funcs; f++) {
		const char *args[] = { d->funcs[f].addr, NULL };

		if (journal_append(p->state_fd, "DETACH", args) < 0 ||
		    hv_pci_detach(hv, d->funcs[f].addr) < 0)
			return PROLOG_NODE_FAULT;
		log_info("job %u: PCI device %s bound to vfio-pci",
			 p->req.job_id, d->funcs[f].addr);
	}
	return PROLOG_OK;
}

enum prolog_result prolog_bind_devices(struct prolog *p)
{
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
	return res;
}
