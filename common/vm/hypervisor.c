/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fileutil.h"
#include "vm/hypervisor.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"

struct hypervisor {
	virConnectPtr conn;
};

static const char *hv_last_error(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->message ? e->message : "unknown libvirt error";
}

/* libvirt prints its errors to stderr by default; ours go to our log. */
static void hv_error_sink(void *data, virErrorPtr e)
{
}

int hv_open(const char *uri, struct hypervisor **out)
{
	struct hypervisor *hv = calloc(1, sizeof(*hv));

	if (!hv)
		return -ENOMEM;
	virSetErrorFunc(NULL, hv_error_sink);
	hv->conn = virConnectOpen(uri);
	if (!hv->conn) {
		log_error("cannot reach libvirt at %s: %s", uri,
			  hv_last_error());
		free(hv);
		return -EHOSTDOWN;
	}
	*out = hv;
	return 0;
}

void hv_close(struct hypervisor *hv)
{
	if (!hv)
		return;
	virConnectClose(hv->conn);
	free(hv);
}

static virDomainPtr hv_lookup(struct hypervisor *hv, const char *name)
{
	return virDomainLookupByName(hv->conn, name);
}

static bool hv_no_domain(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->code == VIR_ERR_NO_DOMAIN;
}

/* libvirt cannot bound memory on this host at all (no memory cgroup
 * controller, a driver without memory tunables): the host's problem, not
 * the job's. */
static bool hv_limit_unsupported(void)
{
	virErrorPtr e = virGetLastError();

	return e && (e->code == VIR_ERR_NO_SUPPORT ||
		     e->code == VIR_ERR_OPERATION_UNSUPPORTED ||
		     e->code == VIR_ERR_OPERATION_INVALID ||
		     e->code == VIR_ERR_CONFIG_UNSUPPORTED);
}

/* Set live, not as <memtune> in the XML: for a hard_limit in the XML libvirt
 * also raises qemu's RLIMIT_MEMLOCK to it, which needs CAP_SYS_RESOURCE
 * (containers lack it) and is no bound we need. A guest whose qemu is not
 * bounded could take other jobs' memory: it never runs. */
static int hv_bound_memory(virDomainPtr dom, uint64_t mib)
{
	/* Before the call that may fail: any libvirt call resets its error. */
	const char *name = virDomainGetName(dom);
	virTypedParameterPtr params = NULL;
	int n = 0, max = 0, r = 0;

	if (virTypedParamsAddULLong(&params, &n, &max,
				    VIR_DOMAIN_MEMORY_HARD_LIMIT,
				    mib * 1024) < 0 ||
	    virDomainSetMemoryParameters(dom, params, n,
					 VIR_DOMAIN_AFFECT_LIVE) < 0) {
		r = hv_limit_unsupported() ? -EOPNOTSUPP : -EIO;
		log_error("libvirt cannot bound qemu of guest %s at %" PRIu64
			  " MiB, so it does not run: %s%s",
			  name, mib, hv_last_error(),
			  r == -EOPNOTSUPP ? "; check that libvirt has the "
					     "memory cgroup controller"
					   : "");
	}
	virTypedParamsFree(params, n);
	return r;
}

/* The paused @dom runs once its memory limit is set and @before_run (may be
 * NULL) succeeded; else it is destroyed. */
static int hv_run(virDomainPtr dom, uint64_t mem_limit_mib,
		  int (*before_run)(void *arg), void *arg)
{
	int r = 0;

	if (mem_limit_mib)
		r = hv_bound_memory(dom, mem_limit_mib);
	if (r == 0 && before_run)
		r = before_run(arg);
	if (r == 0 && virDomainResume(dom) < 0) {
		log_error("libvirt cannot resume the guest: %s",
			  hv_last_error());
		r = -EIO;
	}
	if (r < 0)
		virDomainDestroy(dom);
	return r;
}

int hv_create(struct hypervisor *hv, const char *xml, uint64_t mem_limit_mib,
	      int (*before_run)(void *arg), void *arg)
{
	bool paused = mem_limit_mib || before_run;
	virDomainPtr dom = virDomainCreateXML(
		hv->conn, xml, paused ? VIR_DOMAIN_START_PAUSED : 0);
	int r = 0;

	if (!dom) {
		log_error("libvirt refused the guest: %s", hv_last_error());
		return -EIO;
	}
	if (paused)
		r = hv_run(dom, mem_limit_mib, before_run, arg);
	virDomainFree(dom);
	return r;
}

int hv_restore(struct hypervisor *hv, const char *path, const char *name,
	       const char *xml, uint64_t mem_limit_mib,
	       int (*before_run)(void *arg), void *arg)
{
	virDomainPtr dom;
	int r;

	if (virDomainRestoreFlags(hv->conn, path, xml, VIR_DOMAIN_SAVE_PAUSED) <
	    0) {
		log_error("libvirt cannot restore the saved guest %s: %s", path,
			  hv_last_error());
		return -EIO;
	}
	/* virDomainRestoreFlags returns no handle */
	dom = hv_lookup(hv, name);
	if (!dom) {
		log_error("restored guest %s is gone: %s", name,
			  hv_last_error());
		return -EIO;
	}
	r = hv_run(dom, mem_limit_mib, before_run, arg);
	virDomainFree(dom);
	return r;
}

int hv_save(struct hypervisor *hv, const char *name, const char *path)
{
	virDomainPtr dom = hv_lookup(hv, name);
	int r = 0;

	if (!dom)
		return hv_no_domain() ? -ENOENT : -EIO;
	if (virDomainSaveFlags(dom, path, NULL, VIR_DOMAIN_SAVE_RUNNING) < 0) {
		log_error("libvirt cannot save guest %s to %s: %s", name, path,
			  hv_last_error());
		r = -EIO;
	}
	virDomainFree(dom);
	return r;
}

int hv_lib_version(struct hypervisor *hv, unsigned long *version)
{
	if (virConnectGetLibVersion(hv->conn, version) < 0)
		return log_error("libvirt does not say its version: %s",
				 hv_last_error()),
		       -EIO;
	return 0;
}

int hv_attach(struct hypervisor *hv, const char *name, const char *xml)
{
	virDomainPtr dom = hv_lookup(hv, name);
	int r = 0;

	if (!dom)
		return hv_no_domain() ? -ENOENT : -EIO;
	if (virDomainAttachDeviceFlags(dom, xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		log_error("libvirt cannot hot-plug into guest %s: %s", name,
			  hv_last_error());
		r = -EIO;
	}
	virDomainFree(dom);
	return r;
}

int hv_resume_bounded(struct hypervisor *hv, const char *name,
		      uint64_t mem_limit_mib)
{
	virDomainPtr dom = hv_lookup(hv, name);
	int r;

	if (!dom)
		return hv_no_domain() ? -ENOENT : -EIO;
	r = hv_run(dom, mem_limit_mib, NULL, NULL);
	virDomainFree(dom);
	return r;
}

#define HV_QEMU_STATE_DIR "/run/libvirt/qemu"

/* Does /proc/@pid/cmdline hold "-name" "guest=@name[,...]"? */
static bool hv_cmdline_names(pid_t pid, const char *name)
{
	char path[64], cmdline[8192];
	size_t name_len = strlen(name);
	bool after_name = false;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	len = file_read_small(path, cmdline, sizeof(cmdline));
	/* libvirt puts -name right after the emulator's path and -S. */
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(cmdline + i) + 1) {
		const char *arg = cmdline + i;

		if (after_name && strncmp(arg, "guest=", 6) == 0 &&
		    strncmp(arg + 6, name, name_len) == 0 &&
		    (arg[6 + name_len] == '\0' || arg[6 + name_len] == ','))
			return true;
		after_name = strcmp(arg, "-name") == 0;
	}
	return false;
}

int hv_qemu_pid(const char *name, pid_t *pid)
{
	char path[PATH_MAX], data[32];
	unsigned n;

	if ((size_t)snprintf(path, sizeof(path), HV_QEMU_STATE_DIR "/%s.pid",
			     name) >= sizeof(path) ||
	    file_read_small(path, data, sizeof(data)) <= 0)
		return -ESRCH;
	data[strcspn(data, "\n")] = '\0';
	if (str_to_uint(data, &n) < 0 || n < 2 ||
	    !hv_cmdline_names((pid_t)n, name))
		return -ESRCH;
	*pid = (pid_t)n;
	return 0;
}

int hv_is_running(struct hypervisor *hv, const char *name)
{
	virDomainPtr dom = hv_lookup(hv, name);
	int active;

	if (!dom)
		return hv_no_domain() ? 0 : -EIO;
	active = virDomainIsActive(dom);
	virDomainFree(dom);
	return active < 0 ? -EIO : active;
}

int hv_destroy(struct hypervisor *hv, const char *name)
{
	virDomainPtr dom = hv_lookup(hv, name);
	int r = 0;

	if (!dom)
		return hv_no_domain() ? 0 : -EIO;
	if (virDomainDestroy(dom) < 0 && virDomainIsActive(dom) == 1) {
		log_error("cannot destroy guest %s: %s", name, hv_last_error());
		r = -EIO;
	}
	virDomainFree(dom);
	return r;
}

int hv_stop(struct hypervisor *hv, const char *name, unsigned timeout_s)
{
	virDomainPtr dom = hv_lookup(hv, name);
	double deadline = clock_now_s() + timeout_s;
	int active = 1, r;

	if (!dom)
		return hv_no_domain() ? HV_STOP_GONE : -EIO;
	/* The power button is an edge event: a press before the guest listens
	 * is lost, so it is pressed again every few seconds. A guest that
	 * ignores ACPI is destroyed after the timeout. */
	if (timeout_s && virDomainShutdown(dom) == 0) {
		double next_press = clock_now_s() + 5;
		while (clock_now_s() < deadline &&
		       (active = virDomainIsActive(dom)) == 1) {
			if (clock_now_s() >= next_press) {
				virDomainShutdown(dom);
				next_press = clock_now_s() + 5;
			}
			usleep(200 * 1000);
		}
		if (active == 1)
			active = virDomainIsActive(dom);
	}
	virDomainFree(dom);
	r = hv_destroy(hv, name);
	if (r < 0)
		return r;
	return active == 1 ? HV_STOP_DESTROYED : HV_STOP_SHUT_DOWN;
}

int hv_dumpxml(struct hypervisor *hv, const char *name, char **xml)
{
	virDomainPtr dom = hv_lookup(hv, name);

	if (!dom)
		return hv_no_domain() ? -ENOENT : -EIO;
	*xml = virDomainGetXMLDesc(dom, 0);
	virDomainFree(dom);
	return *xml ? 0 : -EIO;
}

int hv_list(struct hypervisor *hv, const char *prefix, char ***names)
{
	virDomainPtr *doms = NULL;
	size_t n = 0;
	char **v;
	int count;

	count = virConnectListAllDomains(hv->conn, &doms,
					 VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (count < 0)
		return -EIO;
	v = calloc((size_t)count + 1, sizeof(*v));
	for (int i = 0; i < count; i++) {
		const char *name = virDomainGetName(doms[i]);
		if (v && name && strncmp(name, prefix, strlen(prefix)) == 0)
			v[n++] = strdup(name);
		virDomainFree(doms[i]);
	}
	free(doms);
	if (!v)
		return -ENOMEM;
	*names = v;
	return 0;
}

int hv_domain_state(struct hypervisor *hv, const char *name, const char **state)
{
	static const char *const names[] = {
		[VIR_DOMAIN_NOSTATE] = "no state",
		[VIR_DOMAIN_RUNNING] = "running",
		[VIR_DOMAIN_BLOCKED] = "blocked",
		[VIR_DOMAIN_PAUSED] = "paused",
		[VIR_DOMAIN_SHUTDOWN] = "shutting down",
		[VIR_DOMAIN_SHUTOFF] = "shut off",
		[VIR_DOMAIN_CRASHED] = "crashed",
		[VIR_DOMAIN_PMSUSPENDED] = "pmsuspended",
	};
	virDomainPtr dom = hv_lookup(hv, name);
	int st, reason, r;

	if (!dom)
		return hv_no_domain() ? -ENOENT : -EIO;
	r = virDomainGetState(dom, &st, &reason, 0);
	virDomainFree(dom);
	if (r < 0)
		return hv_no_domain() ? -ENOENT : -EIO;
	*state = st >= 0 && (size_t)st < sizeof(names) / sizeof(names[0]) &&
				 names[st]
			 ? names[st]
			 : "unknown";
	return 0;
}

/* libvirt's node device name of a PCI function: pci_DDDD_BB_SS_F. */
static virNodeDevicePtr hv_pci_lookup(struct hypervisor *hv, const char *addr)
{
	unsigned dom, bus, slot, fn;
	char name[64];

	if (sscanf(addr, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4)
		return NULL;
	snprintf(name, sizeof(name), "pci_%04x_%02x_%02x_%x", dom, bus, slot,
		 fn);
	return virNodeDeviceLookupByName(hv->conn, name);
}

/* Binds @addr to vfio-pci (@detach) or back to its host driver. */
static int hv_pci_bind(struct hypervisor *hv, const char *addr, bool detach)
{
	virNodeDevicePtr dev = hv_pci_lookup(hv, addr);
	int r = 0;

	if (!dev) {
		log_error("libvirt does not know PCI device %s: %s", addr,
			  hv_last_error());
		return -ENODEV;
	}
	if ((detach ? virNodeDeviceDetachFlags(dev, "vfio", 0)
		    : virNodeDeviceReAttach(dev)) < 0) {
		log_error("cannot bind PCI device %s to %s: %s", addr,
			  detach ? "vfio-pci" : "its host driver",
			  hv_last_error());
		r = -EIO;
	}
	virNodeDeviceFree(dev);
	return r;
}

int hv_pci_detach(struct hypervisor *hv, const char *addr)
{
	return hv_pci_bind(hv, addr, true);
}

int hv_pci_reattach(struct hypervisor *hv, const char *addr)
{
	return hv_pci_bind(hv, addr, false);
}
