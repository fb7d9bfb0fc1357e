/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The gres.conf lines of this node's devices: one per IOMMU group
 * (File=<VfioDir>/<group>), GPUs first, then InfiniBand/RoCE VFs, each in
 * PCI address order, with Cores= from the device's NUMA node (or the whole
 * sockets it lies in: enum gres_cores_rule).
 *
 * `slurm-vm gres` prints them; gres/ibvf with IbvfAutoDetect=yes numbers
 * the VFs by them and so does the prolog then: the three agree by
 * construction. Devices that get no line carry the reason.
 */
#include <stddef.h>

#include "hw/devices.h"
#include "hw/placement.h"
#include "job/vmconf.h"

enum gres_verdict {
	GRES_LINE = 0,	      /* a gres.conf line */
	GRES_SKIP_NO_IOMMU,   /* no IOMMU group */
	GRES_SKIP_NOT_VFIO,   /* not on vfio-pci with DeviceBinding=prebound */
	GRES_SKIP_GROUP_DONE, /* its IOMMU group has a line already */
};

/* What a line's Cores= holds. The caller chooses: the Slurm release that
 * reads gres.conf decides (slurm/compat.h), which this room does not know. */
enum gres_cores_rule {
	GRES_CORES_NUMA_NODE = 0, /* the cores of the device's NUMA node */
	GRES_CORES_WHOLE_SOCKETS, /* of every socket that node lies in */
};

struct gres_line {
	const char *name;	      /* "gpu", "ibvf" */
	const struct pci_device *dev; /* in the scanned device list */
	enum gres_verdict verdict;
	char *file;  /* <VfioDir>/<group>; lines only */
	char *cores; /* Slurm core ids (by the rule), NULL if unknown */
};

struct gres_lines {
	struct gres_line *v;
	size_t n;
};

/* Every GPU and IB/RoCE VF of @devices (devices_scan()), in line order,
 * Cores= by @rule. */
int gres_lines_build_cores(const struct vmconf *conf,
			   const struct topology *topo,
			   const struct device_list *devices,
			   enum gres_cores_rule rule, struct gres_lines *lines);
/* The same, Cores= of the NUMA node: for the callers that number the lines'
 * File= and do not print Cores=. */
int gres_lines_build(const struct vmconf *conf, const struct topology *topo,
		     const struct device_list *devices,
		     struct gres_lines *lines);
/* The File= of the lines of GRES @name, in order (NULL-terminated). */
int gres_lines_files(const struct gres_lines *lines, const char *name,
		     char ***files);
void gres_lines_free(struct gres_lines *lines);

/* Is @dev what a GRES of @name stands for (a GPU, an IB/RoCE function),
 * not a companion function passed along with it? */
bool gres_is_primary(const struct pci_device *dev, const char *name);

/* The PCI addresses (sorted) of the functions GRES @name stands for in the
 * IOMMU group of @file (<dir>/vfio/N). -EINVAL: not a vfio group file;
 * -ENOENT/-ENODEV: no such group / nothing of that kind in it. */
int gres_file_functions(const char *sysfs_root, const char *name,
			const char *file, char ***addrs);

/*
 * SLURM_JOB_IBVFS / SLURM_STEP_IBVFS, set by gres/ibvf: "IDX=PCI[,...]",
 * one pair per InfiniBand function of each allocated ibvf (IDX as in
 * `scontrol show job -d`, PCI canonical "0000:3b:00.2"), ordered by index
 * then address. "" for none.
 */
struct gres_pair {
	unsigned index;
	char addr[PCI_ADDR_MAX];
};
#define IBVFS_ENV_MAX 64 /* pairs accepted when parsing */
int ibvfs_env_parse(const char *s, struct gres_pair **pairs, size_t *n);
/* "IDX=A,IDX=B" for one index's addresses (a fragment of the variable). */
char *ibvfs_env_entry(unsigned index, char *const *addrs);
