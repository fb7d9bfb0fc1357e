/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The libvirt calls of the prolog, epilog and admin tool. Guests are
 * transient domains: libvirt forgets them when they stop, so nothing of a
 * job outlives it in libvirt's configuration.
 *
 * An unreachable libvirtd is a node fault (-EHOSTDOWN); a domain that is
 * already gone is success for every teardown call (idempotent epilog).
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct hypervisor;

int hv_open(const char *uri, struct hypervisor **hv);
void hv_close(struct hypervisor *hv);

/* Starts a transient domain from @xml. With @mem_limit_mib, qemu's memory
 * hard limit (its cgroup) is set before the guest runs a single
 * instruction; @before_run (may be NULL) is called with @arg at that point
 * too, when the domain's devices (its tap) exist: the domain starts paused
 * and is resumed after. A guest whose limit cannot be set, or whose
 * @before_run fails, is destroyed: -EOPNOTSUPP when libvirt cannot bound
 * memory on this host (no memory cgroup), -EIO for any other libvirt
 * failure, the reason logged; @before_run's own error otherwise. */
int hv_create(struct hypervisor *hv, const char *xml, uint64_t mem_limit_mib,
	      int (*before_run)(void *arg), void *arg);
/* hv_create() for a warm start: the guest saved in @path (a FIFO the
 * caller feeds, or a file) comes back paused as @name, which @xml
 * describes (the same ABI, other paths: doc/design.md section 7), is
 * bounded, gets its devices from @before_run, and runs. The same errors as
 * hv_create(). */
int hv_restore(struct hypervisor *hv, const char *path, const char *name,
	       const char *xml, uint64_t mem_limit_mib,
	       int (*before_run)(void *arg), void *arg);
/* Saves the running domain @name's memory and devices to the new file
 * @path (libvirt's save image); the domain is gone after. */
int hv_save(struct hypervisor *hv, const char *name, const char *path);
/* libvirt's version, major * 1000000 + minor * 1000 + micro. */
int hv_lib_version(struct hypervisor *hv, unsigned long *version);
/* Hot-plugs the device described by @xml into the live domain @name. */
int hv_attach(struct hypervisor *hv, const char *name, const char *xml);
/* hv_create()'s second half without @before_run: lets the paused domain
 * @name run once its memory hard limit is set, and destroys it when that
 * cannot be. */
int hv_resume_bounded(struct hypervisor *hv, const char *name,
		      uint64_t mem_limit_mib);
/* The pid of the running domain @name's qemu, from the pid file libvirt's
 * qemu driver keeps for it (qemu:///system: /run/libvirt/qemu/NAME.pid);
 * -ESRCH unless that process is alive and its command line names the
 * domain (-name guest=NAME). */
int hv_qemu_pid(const char *name, pid_t *pid);
/* Is a domain of that name running? 1 yes, 0 no, <0 error. */
int hv_is_running(struct hypervisor *hv, const char *name);
/* How hv_stop() ended. */
enum hv_stop_end {
	HV_STOP_GONE = 0,  /* no such domain: nothing to stop */
	HV_STOP_SHUT_DOWN, /* the guest powered off on the ACPI button */
	HV_STOP_DESTROYED, /* it had not after @timeout_s (or 0): destroyed */
};
/* ACPI shutdown, then destroy when it is not gone after @timeout_s: an
 * enum hv_stop_end, or -errno. */
int hv_stop(struct hypervisor *hv, const char *name, unsigned timeout_s);
/* Destroys at once. */
int hv_destroy(struct hypervisor *hv, const char *name);
/* The domain's XML (live), malloc'd. */
int hv_dumpxml(struct hypervisor *hv, const char *name, char **xml);
/* Names of running domains whose name starts with @prefix. */
int hv_list(struct hypervisor *hv, const char *prefix, char ***names);
/* The domain's state as virsh names it ("running", "paused", ...);
 * -ENOENT when there is no such domain. */
int hv_domain_state(struct hypervisor *hv, const char *name,
		    const char **state);

/* DeviceBinding=managed: binds PCI function @addr ("0000:3b:00.0") to
 * vfio-pci (libvirt node-device detach), and gives it back to its host
 * driver. -ENODEV when libvirt does not know the function. */
int hv_pci_detach(struct hypervisor *hv, const char *addr);
int hv_pci_reattach(struct hypervisor *hv, const char *addr);
