/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * PCI device inventory from sysfs: GPUs and Mellanox/NVIDIA InfiniBand and
 * RoCE functions (PFs and SR-IOV VFs), with NUMA node, IOMMU group (and every
 * function in it), bound driver and RDMA device.
 *
 * Everything is read from a sysfs root given by the caller (vm.conf
 * SysfsRoot, "/sys" in production, a fixture tree in tests), directly.
 * libpci (PCI_ACCESS_SYS_BUS_PCI with sysfs.path = ROOT/bus/pci) does read
 * the fixture trees, but tried on tests/fixtures/sysfs/bad it turns a
 * missing vendor into ffff, "0x10de0000" into 0000, numa_node 99999999999
 * into 1215752191 and "zero" into 0 without a word, knows nothing of
 * physfn/virtfn or infiniband/, and its default error handler exit()s. So
 * libpci only provides names (pci.ids). Malformed sysfs (missing files, odd
 * values, dangling links) is an error naming the path and what was
 * expected, never a crash.
 */
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define PCI_ADDR_MAX	    16 /* "dddd:bb:ss.f" + NUL */
#define PCI_VENDOR_MELLANOX 0x15b3
#define PCI_VENDOR_NVIDIA   0x10de

enum pci_kind {
	PCI_KIND_OTHER = 0,
	PCI_KIND_GPU,  /* display controller, class 0x03xxxx */
	PCI_KIND_IB,   /* Mellanox InfiniBand: 0x0c06xx (CX-3), 0x0207xx */
	PCI_KIND_ROCE, /* Mellanox Ethernet mode: 0x0200xx */
};

/* One function of an IOMMU group. */
struct pci_function {
	char addr[PCI_ADDR_MAX];
	uint32_t class; /* 24 bits, 0 when unreadable */
	bool is_vf;
};

struct pci_device {
	char addr[PCI_ADDR_MAX]; /* canonical "0000:3b:00.0" */
	uint16_t vendor;
	uint16_t device;
	uint32_t class; /* 24 bits: base class, subclass, prog-if */
	enum pci_kind kind;
	bool is_vf;
	char physfn[PCI_ADDR_MAX];  /* VF: its PF; "" otherwise */
	unsigned num_vfs;	    /* PF: sriov_numvfs */
	int numa_node;		    /* -1: unknown (missing or -1 in sysfs) */
	int iommu_group;	    /* -1: no IOMMU */
	struct pci_function *group; /* every function in the group, sorted */
	size_t n_group;
	char *driver;	/* bound driver, NULL if none */
	char *rdma_dev; /* infiniband/<name> of itself or, for a VF, its PF */
	/* Upstream port of the topmost PCIe switch between the function and
	 * its root port; "" when it sits on a root port or the root complex.
	 * Functions with the same switch talk peer-to-peer without the host
	 * bridge (nvidia-smi's PIX/PXB), which GPUDirect RDMA wants. */
	char host_switch[PCI_ADDR_MAX];
};

struct device_list {
	struct pci_device *v;
	size_t n;
};

/* The first line of sysfs attribute @dir/@name without its newline;
 * -EINVAL (logged) when empty or longer than @size. */
int sysfs_attr_read(const char *dir, const char *name, char *buf, size_t size);

/* "0000:3b:00.0" or "3b:00.0" (domain 0) -> canonical lower-case form. */
int pci_addr_canonical(const char *s, char out[PCI_ADDR_MAX]);
/* Orders by domain, bus, slot, function. */
int pci_addr_cmp(const char *a, const char *b);

enum pci_kind pci_classify(uint16_t vendor, uint32_t class);
const char *pci_kind_name(enum pci_kind kind); /* "gpu", "ib", "roce" */

/* Reads one function, @addr in any form pci_addr_canonical() takes. */
int devices_read(const char *sysfs_root, const char *addr,
		 struct pci_device *dev);
/* Every GPU, IB and RoCE function under @sysfs_root, sorted by address. */
int devices_scan(const char *sysfs_root, struct device_list *list);
const struct pci_device *devices_find(const struct device_list *list,
				      const char *addr);

/* "/dev/vfio/<group>", or -ENODEV without an IOMMU group. */
int devices_vfio_path(const struct pci_device *dev, char *buf, size_t size);
/* PCI functions of IOMMU group @group (sorted), for checking a File=. */
int devices_iommu_group(const char *sysfs_root, int group,
			struct pci_function **funcs, size_t *n);
/* The devices to plan for IOMMU group @group (a gres File=/dev/vfio/N):
 * every function of the group but bridges and a GPU's companions on its
 * slot (audio, USB, UCSI: the planner passes those with their GPU), sorted.
 * -ENOENT if the group does not exist, -ENODEV if it holds nothing to pass. */
int devices_read_group(const char *sysfs_root, int group,
		       struct device_list *list);
/* A GPU's HDMI audio, USB-C or UCSI function on the GPU's slot. */
bool devices_is_gpu_companion(const struct pci_device *gpu,
			      const struct pci_function *f);

/* Vendor and device names from pci.ids; "10de:20b0" when unknown.
 * Returns a malloc'd string or NULL on ENOMEM. */
char *devices_model_name(const struct pci_device *dev);
/* Slurm GRES Type= from the model: lower case [a-z0-9_], at most 32. */
char *devices_gres_type(const struct pci_device *dev);

/* Gives character device @path (a VFIO group file) to @uid:@gid with @mode,
 * without following a link or opening the device; *@old (may be NULL) gets
 * what it was. Not a character device: -ENOTTY. */
int devices_file_chown(const char *path, uid_t uid, gid_t gid, mode_t mode,
		       struct stat *old);

void pci_device_clear(struct pci_device *dev);
void device_list_free(struct device_list *list);
