/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Libvirt domain XML from a placement plan (libxml2 xmlTextWriter: every
 * value is escaped). The result passes virt-xml-validate, defines on
 * test:///default and converts with domxml-to-native on qemu:///system.
 *
 * Layout: q35 machine; vCPUs pinned per the plan; <cpu><topology> and one
 * <numa><cell> per plan cell with distances; <numatune> strict per cell;
 * huge pages per cell; emulator and one iothread (used by the disk) pinned to
 * the plan's emulator CPUs. Devices: one pcie-expander-bus per cell with
 * devices (<target busNr><node>cell</node>), one pcie-root-port per device,
 * the device's functions on that port's bus.
 *
 * DeviceAttach=vfio: <hostdev mode='subsystem' type='pci' managed='no'> with
 * <driver name='vfio'/> (DeviceBinding=managed detaches in the prolog).
 * DeviceAttach=emulate (machines without an IOMMU): each planned device becomes
 * a virtio-rng PCI function (backend /dev/urandom) at the same guest address:
 * it needs no host resource, every qemu has it, and the guest sees a PCI
 * function on the planned bus in the planned NUMA cell
 * (/sys/bus/pci/devices/<addr>/numa_node in the guest).
 *
 * Shares: <filesystem type='mount' accessmode='squash' multidevs='remap'>:
 * 9p served by qemu (security_model=none), so a file's owner on the host is
 * qemu's uid; remap keeps inode numbers apart when a share holds other
 * filesystems (a home on its own mount). Over virtiofs: <filesystem
 * type='mount'><driver type='virtiofs' queue='1024'/><source socket=…/>,
 * served by a virtiofsd the prolog started as the job user (libvirt starts
 * none), which alone decides what the guest may do (no <readonly/>, which
 * is virtiofsd's job); the guest's memory is shared with it (memfd, or the
 * plan's huge pages, with shared access; memAccess='shared' on each cell).
 *
 * <metadata> holds <svm:job> in namespace DOMAIN_XMLNS: job id, uid, and each
 * device's host address, kind, gres and index.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hw/placement.h"
#include "job/vmconf.h"

#define DOMAIN_XMLNS	     "https://slurm-vm.org/xmlns/domain/1"
#define DOMAIN_XMLNS_PREFIX  "svm"
#define DOMAIN_AGENT_CHANNEL "org.slurm-vm.agent.0"
/* DomainType=qemu (TCG): qemu's translation cache, part of MemOverhead. */
#define DOMAIN_TCG_CACHE_MIB 128u

/* One file of a backing chain, as checked (image_check). */
struct domain_layer {
	const char *path;
	const char *format; /* "raw" | "qcow2" */
};

struct domain_params {
	const char *name; /* libvirt name, str_is_safe_name() */
	const char *uuid; /* NULL: libvirt makes one */
	uint32_t job_id;
	uid_t uid;
	gid_t gid;
	/* qemu runs as uid:gid (<seclabel type='static' model='dac'
	 * relabel='no'>): libvirt chowns nothing */
	bool run_as_user;

	/* disk: overlay (if any) backed by image; formats always explicit */
	const char *image;	  /* base image */
	const char *image_format; /* NULL: "qcow2" */
	const char *overlay;	  /* per-job qcow2 over image; NULL: none */
	const char *seed; /* cloud-init NoCloud ISO (virtio disk); NULL */
	/* the image's own backing files, in order: all are named in the XML
	 * and the chain is terminated after the last */
	const struct domain_layer *backing;
	unsigned n_backing;
	/* direct kernel boot; all NULL: boot from the disk */
	const char *kernel;
	const char *initrd;
	const char *cmdline;
	/* UEFI (image Firmware=uefi): OVMF code and the job's own NVRAM;
	 * both NULL: SeaBIOS */
	const char *uefi_code;
	const char *nvram;
	/* OVMF's 64-bit PCI MMIO window in GiB (fw_cfg
	 * opt/ovmf/X-PciMmio64Mb); 0: the firmware's default */
	uint64_t mmio64_gib;

	const char *console_log;    /* serial console copied here; NULL */
	const char *channel_socket; /* agent virtio-serial unix socket */

	/* from vm.conf */
	const char *domain_type; /* "kvm" | "qemu" */
	const char *cpu_mode;	 /* "host-passthrough" | "maximum" | ... */
	const char *emulator;	 /* NULL: libvirt's default */
	const char *partition;	 /* <resource><partition>; NULL: /machine */
	enum device_binding binding;
	enum device_attach attach;
	const char *machine; /* NULL: "q35" */

	/* the job network (JobNetwork=vxlan): a virtio NIC with this MAC on
	 * the job's bridge, its tap named @net_tap (the name the job's
	 * nftables rules match); all NULL: no NIC */
	const char *net_bridge;
	const char *net_tap;
	const char *net_mac;

	/* host directories the guest mounts at the same path (SharedDirs=,
	 * 9p): each a <filesystem type='mount' accessmode='squash'> tagged
	 * SHARED_DIR_TAG_FMT with its index; qemu serves it with its own
	 * rights, which are the job user's (run_as_user) */
	char *const *shares;
	unsigned n_shares;
	/* SHARED_DIR_9P (0) or SHARED_DIR_VIRTIOFS, resolved
	 * (share_transport.h), never auto; virtiofs: share i is served on
	 * share_sockets[i], an absolute path */
	enum shared_dir_transport share_transport;
	char *const *share_sockets;
	/* A warm template's 9p shares, there for the guest's shape alone:
	 * accessmode='mapped', where a guest's chmod and chown are xattrs and
	 * a file qemu creates is 0600 (never set-uid), so root's qemu cannot
	 * be made to plant a root file a host user may run. A restore may
	 * differ here: libvirt compares a share's tag, readonly, model and
	 * address, not its accessmode. */
	bool shares_mapped;

	/* A warm start's template and the jobs restored from it
	 * (doc/design.md section 7): the planned devices' ports stay empty
	 * and so do one more root port for the NIC (with net_bridge) and
	 * one per virtiofs share, to be filled live by domain_hotplug_xmls();
	 * the guest's own devices sit on pcie-root at fixed slots. */
	bool hotplug;
	/* <genid>: NULL none, "" one libvirt makes, else this value (a
	 * restore keeps the saved one, and libvirt then gives a new one) */
	const char *genid;
};

/* Fills the vm.conf-derived fields of @p (type, mode, emulator, binding,
 * attach, UEFI window, shares) from @conf; the rest stays as it is. */
void domain_params_from_conf(struct domain_params *p,
			     const struct vmconf *conf);

/* Returns 0 and a malloc'd NUL-terminated document in @xml, or -errno. */
int domain_xml_build(const struct plan *plan, const struct domain_params *p,
		     char **xml);

/* For a @p->hotplug guest: what hot-plug puts on its empty ports, one
 * device XML each at the planned guest address: the NIC first (with
 * net_bridge), then one per planned device, then each virtiofs share. @xmls is
 * NULL-terminated and malloc'd (free with str_list_free). -EOPNOTSUPP for a
 * device libvirt cannot hot-plug (more than one function: it plugs function 0
 * only). */
int domain_hotplug_xmls(const struct plan *plan, const struct domain_params *p,
			char ***xmls);
