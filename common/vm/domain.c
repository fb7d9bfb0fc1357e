/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <libxml/xmlwriter.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "vm/domain.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"

#define QEMU_XMLNS "http://libvirt.org/schemas/domain/qemu/1.0"

/* The writer remembers its first failure so the builders read straight. */
struct xw {
	xmlTextWriterPtr w;
	int err;
};

static void xw_check(struct xw *x, int rc)
{
	if (rc < 0 && !x->err)
		x->err = -EIO;
}

static void start(struct xw *x, const char *name)
{
	xw_check(x, xmlTextWriterStartElement(x->w, BAD_CAST name));
}

static void end(struct xw *x)
{
	xw_check(x, xmlTextWriterEndElement(x->w));
}

static void attr(struct xw *x, const char *name, const char *value)
{
	xw_check(x, xmlTextWriterWriteAttribute(x->w, BAD_CAST name,
						BAD_CAST value));
}

static void attrf(struct xw *x, const char *name, const char *fmt, ...)
	_printf_(3, 4);
static void attrf(struct xw *x, const char *name, const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	attr(x, name, buf);
}

static void text_elem(struct xw *x, const char *name, const char *text)
{
	xw_check(x,
		 xmlTextWriterWriteElement(x->w, BAD_CAST name, BAD_CAST text));
}

/* An empty element with attribute pairs, NULL-terminated. */
static void empty(struct xw *x, const char *name, ...)
{
	const char *k, *v;
	va_list ap;

	start(x, name);
	va_start(ap, name);
	while ((k = va_arg(ap, const char *))) {
		v = va_arg(ap, const char *);
		attr(x, k, v);
	}
	va_end(ap);
	end(x);
}

static void pci_address(struct xw *x, const char *addr, bool is_source,
			bool multifunction)
{
	unsigned dom, bus, slot, fn;

	if (sscanf(addr, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4) {
		x->err = -EINVAL;
		return;
	}
	start(x, "address");
	if (!is_source)
		attr(x, "type", "pci");
	attrf(x, "domain", "0x%04x", dom);
	attrf(x, "bus", "0x%02x", bus);
	attrf(x, "slot", "0x%02x", slot);
	attrf(x, "function", "0x%x", fn);
	if (multifunction)
		attr(x, "multifunction", "on");
	end(x);
}

void domain_params_from_conf(struct domain_params *p, const struct vmconf *conf)
{
	p->domain_type = conf->domain_type;
	p->cpu_mode = conf->cpu_mode;
	p->emulator = conf->emulator;
	p->partition = conf->cgroup_partition;
	p->binding = conf->device_binding;
	p->attach = conf->device_attach;
	p->mmio64_gib = conf->uefi_mmio64_gib;
	p->shares = conf->shared_dirs;
	p->n_shares = (unsigned)vmconf_n_shared_dirs(conf);
}

/* ---------------------------------------------------------------------- */

static void write_metadata(struct xw *x, const struct plan *plan,
			   const struct domain_params *p)
{
	start(x, "metadata");
	xw_check(x, xmlTextWriterStartElementNS(
			    x->w, BAD_CAST DOMAIN_XMLNS_PREFIX, BAD_CAST "job",
			    BAD_CAST DOMAIN_XMLNS));
	attrf(x, "id", "%" PRIu32, p->job_id);
	attrf(x, "uid", "%u", (unsigned)p->uid);
	for (size_t i = 0; i < plan->n_devices; i++) {
		const struct plan_device *d = &plan->devices[i];

		xw_check(x, xmlTextWriterStartElementNS(
				    x->w, BAD_CAST DOMAIN_XMLNS_PREFIX,
				    BAD_CAST "device", NULL));
		attr(x, "address", d->addr);
		attr(x, "kind", pci_kind_name(d->kind));
		attr(x, "vf", d->is_vf ? "yes" : "no");
		attr(x, "gres", d->gres);
		attrf(x, "index", "%d", d->gres_index);
		attrf(x, "iommu-group", "%d", d->iommu_group);
		attr(x, "attach",
		     p->attach == DEVICE_ATTACH_EMULATE ? "emulate" : "vfio");
		end(x);
	}
	end(x);
	end(x);
}

static void write_cputune(struct xw *x, const struct plan *plan)
{
	start(x, "cputune");
	for (unsigned v = 0; v < plan->n_vcpus; v++) {
		start(x, "vcpupin");
		attrf(x, "vcpu", "%u", v);
		attrf(x, "cpuset", "%u", plan->vcpus[v].pu);
		end(x);
	}
	empty(x, "emulatorpin", "cpuset", plan->emulator_cpus, NULL);
	empty(x, "iothreadpin", "iothread", "1", "cpuset", plan->emulator_cpus,
	      NULL);
	end(x);
}

static void write_numatune(struct xw *x, const struct plan *plan)
{
	_cleanup_free_ char *all = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&all, &size);

	if (!f) {
		x->err = -ENOMEM;
		return;
	}
	for (unsigned c = 0; c < plan->n_cells; c++)
		fprintf(f, "%s%u", c ? "," : "", plan->cells[c].host_node);
	if (fclose(f) != 0) {
		x->err = -ENOMEM;
		return;
	}
	start(x, "numatune");
	empty(x, "memory", "mode", "strict", "nodeset", all, NULL);
	for (unsigned c = 0; c < plan->n_cells; c++) {
		start(x, "memnode");
		attrf(x, "cellid", "%u", c);
		attr(x, "mode", "strict");
		attrf(x, "nodeset", "%u", plan->cells[c].host_node);
		end(x);
	}
	end(x);
}

/* Under TCG qemu's translation cache grows to 1 GiB by default: a guest
 * running systemd and Python (a stock cloud image) takes qemu past the job's
 * memory, where the hard limit stalls it. Bounded, it fits in MemOverhead. */
static void write_tcg_cache(struct xw *x)
{
	start(x, "tcg");
	start(x, "tb-cache");
	attr(x, "unit", "MiB");
	xw_check(x, xmlTextWriterWriteFormatString(x->w, "%u",
						   DOMAIN_TCG_CACHE_MIB));
	end(x);
	end(x);
}

/* virtiofsd reads and writes the guest's buffers in its memory: the guest
 * memory must be shared with it. */
static bool shares_memory(const struct domain_params *p)
{
	return p->n_shares && p->share_transport == SHARED_DIR_VIRTIOFS;
}

static void write_memory(struct xw *x, const struct plan *plan,
			 const struct domain_params *p)
{
	start(x, "memory");
	attr(x, "unit", "MiB");
	xw_check(x, xmlTextWriterWriteFormatString(x->w, "%" PRIu64,
						   plan->mem_mib));
	end(x);
	if (!plan->hugepage_kib && !shares_memory(p))
		return;
	start(x, "memoryBacking");
	if (plan->hugepage_kib) {
		start(x, "hugepages");
		start(x, "page");
		attrf(x, "size", "%u", plan->hugepage_kib);
		attr(x, "unit", "KiB");
		attrf(x, "nodeset", "0-%u", plan->n_cells - 1);
		end(x);
		end(x);
	} else {
		/* an anonymous shared file: its pages are charged to the
		 * cgroup of qemu, which faults them in, like the private
		 * memory they replace */
		empty(x, "source", "type", "memfd", NULL);
	}
	if (shares_memory(p))
		empty(x, "access", "mode", "shared", NULL);
	end(x);
}

static void write_os(struct xw *x, const struct domain_params *p)
{
	start(x, "os");
	start(x, "type");
	attr(x, "arch", "x86_64");
	attr(x, "machine", p->machine ? p->machine : "q35");
	xw_check(x, xmlTextWriterWriteString(x->w, BAD_CAST "hvm"));
	end(x);
	if (p->uefi_code) {
		/* Explicit, not <os firmware='efi'>: the NVRAM is the job's own
		 * file (qemu runs as the user; libvirt would make a root one
		 * it never deletes), and no secure boot needs no SMM. */
		start(x, "loader");
		attr(x, "readonly", "yes");
		attr(x, "secure", "no");
		attr(x, "type", "pflash");
		xw_check(x,
			 xmlTextWriterWriteString(x->w, BAD_CAST p->uefi_code));
		end(x);
		text_elem(x, "nvram", p->nvram);
	}
	if (p->kernel) {
		text_elem(x, "kernel", p->kernel);
		if (p->initrd)
			text_elem(x, "initrd", p->initrd);
		if (p->cmdline)
			text_elem(x, "cmdline", p->cmdline);
	} else {
		empty(x, "boot", "dev", "hd", NULL);
	}
	end(x);
	start(x, "features");
	empty(x, "acpi", NULL);
	empty(x, "apic", NULL);
	if (p->domain_type && strcmp(p->domain_type, "qemu") == 0)
		write_tcg_cache(x);
	end(x);
}

static void write_cell(struct xw *x, const struct plan *plan,
		       const struct domain_params *p, unsigned c)
{
	const struct plan_cell *cell = &plan->cells[c];
	_cleanup_free_ char *cpus = NULL;

	if (plan_cell_vcpus(plan, c, &cpus) < 0) {
		x->err = -ENOMEM;
		return;
	}
	start(x, "cell");
	attrf(x, "id", "%u", c);
	attr(x, "cpus", cpus);
	attrf(x, "memory", "%" PRIu64, cell->mem_mib);
	attr(x, "unit", "MiB");
	if (shares_memory(p))
		attr(x, "memAccess", "shared");
	if (cell->distances) {
		start(x, "distances");
		for (unsigned j = 0; j < plan->n_cells; j++) {
			start(x, "sibling");
			attrf(x, "id", "%u", j);
			attrf(x, "value", "%u", cell->distances[j]);
			end(x);
		}
		end(x);
	}
	end(x);
}

static void write_cpu(struct xw *x, const struct plan *plan,
		      const struct domain_params *p)
{
	const char *mode = p->cpu_mode ? p->cpu_mode : "host-passthrough";

	start(x, "cpu");
	attr(x, "mode", mode);
	start(x, "topology");
	attrf(x, "sockets", "%u", plan->sockets);
	attr(x, "dies", "1");
	attrf(x, "cores", "%u", plan->cores);
	attrf(x, "threads", "%u", plan->threads);
	end(x);
	/* OVMF sizes its 64-bit window from the guest's physical address
	 * width: give the host's. */
	if (p->uefi_code && strcmp(mode, "host-passthrough") == 0)
		empty(x, "maxphysaddr", "mode", "passthrough", NULL);
	start(x, "numa");
	for (unsigned c = 0; c < plan->n_cells; c++)
		write_cell(x, plan, p, c);
	end(x);
	end(x);
}

/* <backingStore> for each file from @first on, nested, then an empty one:
 * qemu opens these files with these formats and nothing else. */
static void write_backing_chain(struct xw *x, const struct domain_params *p,
				unsigned first)
{
	unsigned n = p->n_backing + 1; /* the image, then its backing files */

	for (unsigned i = first; i < n; i++) {
		const char *path = i ? p->backing[i - 1].path : p->image;
		const char *fmt = i ? p->backing[i - 1].format
				    : (p->image_format ?: "qcow2");

		start(x, "backingStore");
		attr(x, "type", "file");
		empty(x, "format", "type", fmt, NULL);
		empty(x, "source", "file", path, NULL);
	}
	empty(x, "backingStore", NULL);
	for (unsigned i = first; i < n; i++)
		end(x);
}

/* A hotplug guest's own devices sit on pcie-root at fixed slots: libvirt
 * would put a device without an address behind an empty root port, the
 * one hot-plug fills later. */
enum fixed_slot {
	SLOT_DISK = 0x08,
	SLOT_SEED,
	SLOT_SERIAL,
	SLOT_SHARES, /* one each, SHARED_DIRS_MAX at most: up to 0x1a */
};

static void fixed_address(struct xw *x, const struct domain_params *p,
			  unsigned slot)
{
	char addr[PCI_ADDR_MAX];

	if (!p->hotplug)
		return;
	snprintf(addr, sizeof(addr), "0000:00:%02x.0", slot);
	pci_address(x, addr, false, false);
}

static void write_disk(struct xw *x, const struct domain_params *p)
{
	const char *fmt = p->image_format ? p->image_format : "qcow2";

	if (!p->image && !p->overlay)
		return;
	start(x, "disk");
	attr(x, "type", "file");
	attr(x, "device", "disk");
	empty(x, "driver", "name", "qemu", "type", p->overlay ? "qcow2" : fmt,
	      "iothread", "1", NULL);
	empty(x, "source", "file", p->overlay ? p->overlay : p->image, NULL);
	if (p->image)
		write_backing_chain(x, p, p->overlay ? 0 : 1);
	else
		empty(x, "backingStore", NULL);
	empty(x, "target", "dev", "vda", "bus", "virtio", NULL);
	if (!p->overlay)
		empty(x, "readonly", NULL); /* never write a shared image */
	fixed_address(x, p, SLOT_DISK);
	end(x);
	if (!p->seed)
		return;
	/* A read-only virtio disk, not a SATA cdrom: virtio_blk is in every
	 * cloud kernel, AHCI is not (Debian 12's cloud kernel has none). */
	start(x, "disk");
	attr(x, "type", "file");
	attr(x, "device", "disk");
	empty(x, "driver", "name", "qemu", "type", "raw", NULL);
	empty(x, "source", "file", p->seed, NULL);
	empty(x, "target", "dev", "vdb", "bus", "virtio", NULL);
	empty(x, "readonly", NULL);
	fixed_address(x, p, SLOT_SEED);
	end(x);
}

static void write_console(struct xw *x, const struct domain_params *p)
{
	start(x, "serial");
	attr(x, "type", "pty");
	if (p->console_log)
		empty(x, "log", "file", p->console_log, "append", "off", NULL);
	empty(x, "target", "port", "0", NULL);
	end(x);
	start(x, "console");
	attr(x, "type", "pty");
	empty(x, "target", "type", "serial", "port", "0", NULL);
	end(x);
	if (!p->channel_socket)
		return;
	if (p->hotplug) {
		start(x, "controller");
		attr(x, "type", "virtio-serial");
		attr(x, "index", "0");
		fixed_address(x, p, SLOT_SERIAL);
		end(x);
	}
	start(x, "channel");
	attr(x, "type", "unix");
	empty(x, "source", "mode", "bind", "path", p->channel_socket, NULL);
	empty(x, "target", "type", "virtio", "name", DOMAIN_AGENT_CHANNEL,
	      NULL);
	end(x);
}

/* Does device @i open a root port (its own, or its switch's)? */
static bool opens_root_port(const struct plan *plan, size_t i)
{
	return plan->devices[i].sw_rank == 0;
}

/* libvirt controller indexes: pcie-root 0, expanders 1..P, then in plan
 * order a root port per device, or per switch (at its first device) a root
 * port, its upstream port and its downstream ports. Returns the index of
 * the port device @dev plugs into. */
static unsigned port_index(const struct plan *plan, size_t dev)
{
	const struct plan_device *want = &plan->devices[dev];
	unsigned k = 1 + plan->n_pxbs;

	for (size_t i = 0; i < plan->n_devices; i++) {
		const struct plan_device *d = &plan->devices[i];

		if (!opens_root_port(plan, i))
			continue;
		if (d->sw < 0) {
			if (i == dev)
				return k;
			k++;
			continue;
		}
		if (want->sw == d->sw)
			return k + 2 + want->sw_rank;
		k += 2 + plan->switches[d->sw].n_down;
	}
	return k; /* not reached: every device has a port */
}

static void write_port(struct xw *x, unsigned index, const char *model,
		       unsigned bus, unsigned slot)
{
	char addr[PCI_ADDR_MAX];

	start(x, "controller");
	attr(x, "type", "pci");
	attrf(x, "index", "%u", index);
	attr(x, "model", model);
	snprintf(addr, sizeof(addr), "0000:%02x:%02x.0", bus, slot);
	pci_address(x, addr, false, false);
	end(x);
}

/* The controller index after every planned port: a warm start's NIC port. */
static unsigned ports_end(const struct plan *plan)
{
	unsigned k = 1 + plan->n_pxbs;

	for (size_t i = 0; i < plan->n_devices; i++) {
		const struct plan_device *d = &plan->devices[i];

		if (opens_root_port(plan, i))
			k += d->sw < 0 ? 1 : 2 + plan->switches[d->sw].n_down;
	}
	return k;
}

static bool wants_nic_port(const struct domain_params *p)
{
	return p->hotplug && p->net_bridge;
}

/* libvirt cannot save a guest with virtiofs: a hotplug guest gets its
 * shares live, each on a root port of its own after the NIC's. */
static bool hotplugs_shares(const struct domain_params *p)
{
	return p->hotplug && p->share_transport == SHARED_DIR_VIRTIOFS;
}

static unsigned share_port(const struct plan *plan,
			   const struct domain_params *p, unsigned i)
{
	return ports_end(plan) + (wants_nic_port(p) ? 1 : 0) + i;
}

/* libvirt places it on pcie-root: the NIC and the shares have no NUMA
 * cell to be near. */
static void write_root_port(struct xw *x, unsigned index)
{
	start(x, "controller");
	attr(x, "type", "pci");
	attrf(x, "index", "%u", index);
	attr(x, "model", "pcie-root-port");
	end(x);
}

static void write_buses(struct xw *x, const struct plan *plan,
			const struct domain_params *p)
{
	char node[16];

	if (wants_nic_port(p))
		write_root_port(x, ports_end(plan));
	for (unsigned i = 0; hotplugs_shares(p) && i < p->n_shares; i++)
		write_root_port(x, share_port(plan, p, i));
	if (!plan->n_devices)
		return;
	empty(x, "controller", "type", "pci", "index", "0", "model",
	      "pcie-root", NULL);
	for (unsigned i = 0; i < plan->n_pxbs; i++) {
		start(x, "controller");
		attr(x, "type", "pci");
		attrf(x, "index", "%u", 1 + i);
		attr(x, "model", "pcie-expander-bus");
		start(x, "target");
		attrf(x, "busNr", "%u", plan->pxbs[i].bus_nr);
		snprintf(node, sizeof(node), "%u", plan->pxbs[i].cell);
		text_elem(x, "node", node);
		end(x);
		end(x);
	}
	for (size_t d = 0; d < plan->n_devices; d++) {
		const struct plan_device *dev = &plan->devices[d];
		unsigned slot = 0, rp;

		if (!opens_root_port(plan, d))
			continue;
		for (size_t e = 0; e < d; e++)
			slot += plan->devices[e].pxb == dev->pxb &&
				opens_root_port(plan, e);
		if (dev->sw < 0) {
			write_port(x, port_index(plan, d), "pcie-root-port",
				   1 + dev->pxb, slot);
			continue;
		}
		rp = port_index(plan, d) - 2;
		write_port(x, rp, "pcie-root-port", 1 + dev->pxb, slot);
		write_port(x, rp + 1, "pcie-switch-upstream-port", rp, 0);
		for (unsigned j = 0; j < plan->switches[dev->sw].n_down; j++)
			write_port(x, rp + 2 + j, "pcie-switch-downstream-port",
				   rp + 1, j);
	}
}

static void write_hostdev(struct xw *x, const struct plan *plan, size_t d,
			  const struct domain_params *p)
{
	const struct plan_device *dev = &plan->devices[d];
	char addr[PCI_ADDR_MAX];

	for (size_t f = 0; f < dev->n_funcs; f++) {
		snprintf(addr, sizeof(addr), "0000:%02x:00.%x",
			 port_index(plan, d), dev->funcs[f].function);
		if (p->attach == DEVICE_ATTACH_EMULATE) {
			if (!dev->funcs[f].primary)
				continue; /* one stand-in per device */
			start(x, "rng");
			attr(x, "model", "virtio");
			start(x, "backend");
			attr(x, "model", "random");
			xw_check(x, xmlTextWriterWriteString(x->w, BAD_CAST
							     "/dev/urandom"));
			end(x);
			pci_address(x, addr, false, false);
			end(x);
			continue;
		}
		start(x, "hostdev");
		attr(x, "mode", "subsystem");
		attr(x, "type", "pci");
		/* DeviceBinding=managed is the prolog's node-device detach,
		 * journaled, so the epilog can report a device that does not
		 * come back: libvirt never rebinds on its own. */
		attr(x, "managed", "no");
		empty(x, "driver", "name", "vfio", NULL);
		start(x, "source");
		pci_address(x, dev->funcs[f].addr, true, false);
		end(x);
		pci_address(x, addr, false, f == 0 && dev->n_funcs > 1);
		end(x);
	}
}

static void write_interface(struct xw *x, const struct plan *plan,
			    const struct domain_params *p)
{
	char addr[PCI_ADDR_MAX];

	if (!p->net_bridge)
		return;
	start(x, "interface");
	attr(x, "type", "bridge");
	empty(x, "mac", "address", p->net_mac, NULL);
	empty(x, "source", "bridge", p->net_bridge, NULL);
	empty(x, "target", "dev", p->net_tap, NULL);
	empty(x, "model", "type", "virtio", NULL);
	if (wants_nic_port(p)) {
		snprintf(addr, sizeof(addr), "0000:%02x:00.0", ports_end(plan));
		pci_address(x, addr, false, false);
	}
	end(x);
}

static void write_share(struct xw *x, const struct plan *plan,
			const struct domain_params *p, unsigned i)
{
	char addr[PCI_ADDR_MAX];

	start(x, "filesystem");
	attr(x, "type", "mount");
	if (p->share_transport == SHARED_DIR_VIRTIOFS) {
		/* the prolog's virtiofsd, as the job user: libvirt starts
		 * none of its own */
		empty(x, "driver", "type", "virtiofs", "queue", "1024", NULL);
		empty(x, "source", "socket", p->share_sockets[i], NULL);
	} else {
		attr(x, "accessmode", p->shares_mapped ? "mapped" : "squash");
		attr(x, "multidevs", "remap");
		empty(x, "source", "dir", p->shares[i], NULL);
	}
	start(x, "target");
	attrf(x, "dir", SHARED_DIR_TAG_FMT, i);
	end(x);
	if (hotplugs_shares(p)) {
		snprintf(addr, sizeof(addr), "0000:%02x:00.0",
			 share_port(plan, p, i));
		pci_address(x, addr, false, false);
	} else {
		fixed_address(x, p, SLOT_SHARES + i);
	}
	end(x);
}

static void write_shares(struct xw *x, const struct plan *plan,
			 const struct domain_params *p)
{
	for (unsigned i = 0; !hotplugs_shares(p) && i < p->n_shares; i++)
		write_share(x, plan, p, i);
}

static void write_devices(struct xw *x, const struct plan *plan,
			  const struct domain_params *p)
{
	start(x, "devices");
	if (p->emulator)
		text_elem(x, "emulator", p->emulator);
	write_disk(x, p);
	write_buses(x, plan, p);
	/* hot-plugged after a warm start's restore */
	for (size_t d = 0; !p->hotplug && d < plan->n_devices; d++)
		write_hostdev(x, plan, d, p);
	if (!p->hotplug)
		write_interface(x, plan, p);
	write_shares(x, plan, p);
	write_console(x, p);
	/* nothing the job did not ask for: no USB, no balloon */
	empty(x, "controller", "type", "usb", "model", "none", NULL);
	empty(x, "memballoon", "model", "none", NULL);
	end(x);
}

/* qemu runs as the job user and libvirt relabels nothing: it would chown
 * the user's image and the catalog's kernel to the user. Everything qemu
 * opens is made reachable by the prolog instead. */
static void write_seclabel(struct xw *x, const struct domain_params *p)
{
	if (!p->run_as_user)
		return;
	start(x, "seclabel");
	attr(x, "type", "static");
	attr(x, "model", "dac");
	attr(x, "relabel", "no");
	start(x, "label");
	xw_check(x, xmlTextWriterWriteFormatString(x->w, "+%u:+%u",
						   (unsigned)p->uid,
						   (unsigned)p->gid));
	end(x);
	end(x);
}

/* libxml2 rewrites bytes that are not UTF-8: the file qemu would open is
 * then not the file named here. */
static int check_path(const struct domain_params *p, const char *path)
{
	if (!path || str_is_utf8_text(path))
		return 0;
	log_error("domain %s: path %s is not UTF-8 text", p->name, path);
	return -EINVAL;
}

static int check_paths(const struct domain_params *p)
{
	const char *paths[] = { p->image,	  p->overlay,  p->seed,
				p->kernel,	  p->initrd,   p->uefi_code,
				p->nvram,	  p->emulator, p->console_log,
				p->channel_socket };
	int r = 0;

	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(paths); i++)
		r = check_path(p, paths[i]);
	if (p->n_shares > SHARED_DIRS_MAX || (p->n_shares && !p->shares))
		return -EINVAL;
	for (unsigned i = 0; r == 0 && i < p->n_shares; i++)
		r = p->shares[i] && p->shares[i][0] == '/'
			    ? check_path(p, p->shares[i])
			    : -EINVAL;
	if (p->share_transport != SHARED_DIR_9P &&
	    p->share_transport != SHARED_DIR_VIRTIOFS)
		return -EINVAL;
	/* a hotplug template has no share yet */
	if (p->n_shares && p->share_transport == SHARED_DIR_VIRTIOFS &&
	    !p->share_sockets && !p->hotplug)
		return -EINVAL;
	for (unsigned i = 0; r == 0 && p->share_sockets && i < p->n_shares; i++)
		r = p->share_sockets[i] && p->share_sockets[i][0] == '/'
			    ? check_path(p, p->share_sockets[i])
			    : -EINVAL;
	for (unsigned i = 0; r == 0 && i < p->n_backing; i++) {
		if (!p->backing[i].path || !p->backing[i].format)
			return -EINVAL;
		r = check_path(p, p->backing[i].path);
	}
	return r;
}

static int check_params(const struct plan *plan, const struct domain_params *p)
{
	if (!p->name || !str_is_safe_name(p->name, 64)) {
		log_error("domain name \"%s\" is not a safe name",
			  p->name ? p->name : "");
		return -EINVAL;
	}
	if (!plan->n_vcpus || !plan->n_cells || !plan->mem_mib) {
		log_error("domain %s: the plan is empty", p->name);
		return -EINVAL;
	}
	if (!p->uefi_code != !p->nvram) {
		log_error("domain %s: UEFI needs both its code and an NVRAM",
			  p->name);
		return -EINVAL;
	}
	if (p->mmio64_gib > UINT64_MAX / 1024)
		return -ERANGE;
	if (p->n_backing && !p->image)
		return -EINVAL;
	if (check_paths(p) < 0)
		return -EINVAL;
	if (p->domain_type && strcmp(p->domain_type, "kvm") != 0 &&
	    strcmp(p->domain_type, "qemu") != 0) {
		log_error("DomainType=%s: use kvm or qemu", p->domain_type);
		return -EINVAL;
	}
	/* All three or none; names as the kernel takes them. */
	if ((p->net_bridge || p->net_tap || p->net_mac) &&
	    (!p->net_bridge || !str_is_safe_name(p->net_bridge, 15) ||
	     !p->net_tap || !str_is_safe_name(p->net_tap, 15) || !p->net_mac ||
	     strlen(p->net_mac) != 17)) {
		log_error("domain %s: the job network's NIC is incomplete",
			  p->name);
		return -EINVAL;
	}
	return 0;
}

/* libvirt reserves fw_cfg's opt/ovmf/ names in <sysinfo type='fwcfg'>, so
 * OVMF's window size goes on qemu's command line (the domain is marked
 * tainted "custom-argv": expected). */
static bool wants_fw_cfg(const struct domain_params *p)
{
	return p->uefi_code && p->mmio64_gib;
}

static void write_fw_cfg(struct xw *x, const struct domain_params *p)
{
	if (!wants_fw_cfg(p))
		return;
	xw_check(x, xmlTextWriterStartElementNS(x->w, BAD_CAST "qemu",
						BAD_CAST "commandline", NULL));
	xw_check(x, xmlTextWriterStartElementNS(x->w, BAD_CAST "qemu",
						BAD_CAST "arg", NULL));
	attr(x, "value", "-fw_cfg");
	end(x);
	xw_check(x, xmlTextWriterStartElementNS(x->w, BAD_CAST "qemu",
						BAD_CAST "arg", NULL));
	attrf(x, "value", "name=opt/ovmf/X-PciMmio64Mb,string=%" PRIu64,
	      p->mmio64_gib * 1024);
	end(x);
	end(x);
}

static void write_domain(struct xw *x, const struct plan *plan,
			 const struct domain_params *p)
{
	start(x, "domain");
	attr(x, "type", p->domain_type ? p->domain_type : "kvm");
	if (wants_fw_cfg(p))
		attr(x, "xmlns:qemu", QEMU_XMLNS);
	text_elem(x, "name", p->name);
	if (p->uuid)
		text_elem(x, "uuid", p->uuid);
	if (p->genid && *p->genid)
		text_elem(x, "genid", p->genid);
	else if (p->genid)
		empty(x, "genid", NULL);
	write_metadata(x, plan, p);
	write_memory(x, plan, p);
	if (p->partition) {
		start(x, "resource");
		text_elem(x, "partition", p->partition);
		end(x);
	}
	start(x, "vcpu");
	attr(x, "placement", "static");
	xw_check(x, xmlTextWriterWriteFormatString(x->w, "%u", plan->n_vcpus));
	end(x);
	text_elem(x, "iothreads", "1");
	write_cputune(x, plan);
	write_numatune(x, plan);
	write_os(x, p);
	write_cpu(x, plan, p);
	text_elem(x, "on_poweroff", "destroy");
	text_elem(x, "on_reboot", "destroy");
	text_elem(x, "on_crash", "destroy");
	write_devices(x, plan, p);
	write_seclabel(x, p);
	write_fw_cfg(x, p);
	end(x);
}

/* Writes one item of a document: the domain, or a hot-plugged device. */
typedef void (*write_fn)(struct xw *x, const struct plan *plan,
			 const struct domain_params *p, size_t item);

static int write_document(write_fn fn, const struct plan *plan,
			  const struct domain_params *p, size_t item,
			  char **xml)
{
	xmlBufferPtr buf;
	struct xw x = { 0 };

	buf = xmlBufferCreate();
	if (!buf)
		return -ENOMEM;
	x.w = xmlNewTextWriterMemory(buf, 0);
	if (!x.w) {
		xmlBufferFree(buf);
		return -ENOMEM;
	}
	xmlTextWriterSetIndent(x.w, 1);
	xmlTextWriterSetIndentString(x.w, BAD_CAST "  ");
	fn(&x, plan, p, item);
	xw_check(&x, xmlTextWriterEndDocument(x.w));
	xmlFreeTextWriter(x.w);
	if (x.err) {
		xmlBufferFree(buf);
		return log_errno(-x.err, "domain %s: cannot write its XML",
				 p->name);
	}
	*xml = strdup((const char *)xmlBufferContent(buf));
	xmlBufferFree(buf);
	return *xml ? 0 : -ENOMEM;
}

static void write_domain_item(struct xw *x, const struct plan *plan,
			      const struct domain_params *p, size_t item)
{
	(void)item;
	write_domain(x, plan, p);
}

int domain_xml_build(const struct plan *plan, const struct domain_params *p,
		     char **xml)
{
	int r = check_params(plan, p);

	return r < 0 ? r : write_document(write_domain_item, plan, p, 0, xml);
}

static void write_nic_item(struct xw *x, const struct plan *plan,
			   const struct domain_params *p, size_t item)
{
	(void)item;
	write_interface(x, plan, p);
}

static void write_device_item(struct xw *x, const struct plan *plan,
			      const struct domain_params *p, size_t item)
{
	write_hostdev(x, plan, item, p);
}

static void write_share_item(struct xw *x, const struct plan *plan,
			     const struct domain_params *p, size_t item)
{
	write_share(x, plan, p, (unsigned)item);
}

int domain_hotplug_xmls(const struct plan *plan, const struct domain_params *p,
			char ***xmls)
{
	_cleanup_(strv_freep) char **v = NULL;
	size_t n = 0;
	int r;

	r = check_params(plan, p);
	if (r < 0)
		return r;
	for (size_t d = 0; d < plan->n_devices; d++)
		if (p->attach == DEVICE_ATTACH_VFIO &&
		    plan->devices[d].n_funcs > 1) {
			log_info("domain %s: device %s has %zu functions: "
				 "libvirt hot-plugs only one",
				 p->name, plan->devices[d].addr,
				 plan->devices[d].n_funcs);
			return -EOPNOTSUPP;
		}
	if (hotplugs_shares(p) && p->n_shares && !p->share_sockets)
		return -EINVAL;
	v = calloc(plan->n_devices + p->n_shares + 2, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (p->net_bridge) {
		r = write_document(write_nic_item, plan, p, 0, &v[n++]);
		if (r < 0)
			return r;
	}
	for (size_t d = 0; d < plan->n_devices; d++) {
		r = write_document(write_device_item, plan, p, d, &v[n++]);
		if (r < 0)
			return r;
	}
	for (unsigned i = 0; hotplugs_shares(p) && i < p->n_shares; i++) {
		r = write_document(write_share_item, plan, p, i, &v[n++]);
		if (r < 0)
			return r;
	}
	*xmls = v;
	v = NULL;
	return 0;
}
