/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * vm.conf: the node's slurm-vm configuration, read by every root component.
 * It lives beside slurm.conf (dirname of $SLURM_CONF). The format is Slurm's:
 * "Key=Value" lines, keys case-insensitive, '#' comments. Parsing is strict:
 * an unknown key, a bad value or a duplicate is an error with file:line,
 * because a typo in root configuration must never be silently ignored.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "channel/proto.h"

enum device_binding {
	DEVICE_BINDING_PREBOUND = 0, /* admin binds vfio-pci at boot */
	DEVICE_BINDING_MANAGED,	     /* libvirt detaches/reattaches */
};

enum device_attach {
	DEVICE_ATTACH_VFIO = 0, /* production: VFIO passthrough */
	DEVICE_ATTACH_EMULATE,	/* test machines without IOMMU */
};

struct vmconf {
	char *path; /* the file this came from */

	/* images */
	char *image_catalog; /* directory of *.image descriptors */
	char **image_dirs;   /* NULL-terminated; user images must stay inside */
	bool allow_user_images; /* --vm-image=/path allowed */

	/* host state */
	char *state_dir;   /* root-owned per-job state and journals */
	char *overlay_dir; /* node-local storage for per-job overlays */
	char *log_file;	   /* NULL: stderr (slurmd's log) only */
	char *helper_dir;  /* slurm-vm-relay, slurm-vm-exec */
	int log_level;	   /* enum log_level */

	/* what a job may leave on the node's filesystems */
	uint64_t overlay_max_gib; /* largest image virtual size; 0: any */
	unsigned keep_for_hours;  /* --vm-keep state expires; 0: never */

	/* hypervisor */
	char *libvirt_uri;
	char *domain_type;	   /* kvm | qemu */
	char *cpu_mode;		   /* host-passthrough | maximum | host-model */
	char *emulator;		   /* NULL: libvirt's default */
	char *cgroup_partition;	   /* NULL: libvirt's, /machine */
	unsigned boot_timeout;	   /* seconds */
	unsigned shutdown_timeout; /* seconds */
	uint64_t mem_overhead_mb;  /* host memory kept out of the guest */
	bool allow_root;	   /* guest processes may run as uid 0 */
	bool boot;		   /* no: check and plan only (testing) */
	int boot_mode;		   /* enum boot_mode */
	char *warm_dir;		   /* root's cache of saved templates */
	unsigned warm_templates;   /* most templates kept; 0: none */
	uint64_t warm_cache_gib;   /* most bytes the templates take */
	/* images with Firmware=uefi */
	char *uefi_code;	  /* OVMF code, read-only pflash */
	char *uefi_vars;	  /* NVRAM template, copied per job */
	uint64_t uefi_mmio64_gib; /* 64-bit PCI window; 0: OVMF's own */

	/* devices and placement */
	char *sysfs_root;
	char *topology_file; /* NULL: live hwloc topology */
	enum device_binding device_binding;
	enum device_attach device_attach;
	bool require_locality;
	char *vfio_dir;	      /* /dev/vfio: gres.conf File= of a group */
	bool ibvf_autodetect; /* gres/ibvf numbers the VFs it finds */

	/* tasks */
	char *task_tmpdir; /* TMPDIR in the guest; "keep": the host's */
	bool batch_in_vm;  /* the batch script in the guest, by default */

	/* host directories the guest mounts at the same path (admin's only) */
	char **shared_dirs;	  /* NULL-terminated; NULL or empty: none */
	int shared_dir_transport; /* enum shared_dir_transport */
	char *virtiofsd_path;	  /* the Rust virtiofsd (share_transport.h) */

	/* the job's private network (common/net/jobnet.h) */
	int job_network;	  /* enum job_network */
	char *jobnet_underlay;	  /* interface carrying the VXLAN */
	char *jobnet_vni_text;	  /* "MIN-MAX" as written */
	char *jobnet_subnet_text; /* "A.B.C.D/N" as written */
	unsigned jobnet_mtu;	  /* 0: the underlay's minus the overhead */
	uint32_t jobnet_vni_min;  /* parsed from jobnet_vni_text */
	uint32_t jobnet_vni_max;
	uint32_t jobnet_subnet; /* host byte order, host bits zero */
	unsigned jobnet_prefix; /* 8..30 */

	/* InfiniBand partitions (common/hw/ibpart.h) */
	bool ib_partitions;	   /* VF GUIDs and a P_Key per job */
	char *ib_pkey_text;	   /* "MIN-MAX" as written */
	char *ib_guid_prefix_text; /* as written */
	char *ib_partition_dir;	   /* records for the SM side; NULL: none */
	uint16_t ib_pkey_min;	   /* parsed */
	uint16_t ib_pkey_max;
	uint16_t ib_guid_prefix;
};

enum job_network {
	JOB_NETWORK_NONE = 0, /* guests have no network (the default) */
	JOB_NETWORK_VXLAN,    /* a bridge and a VXLAN per job and node */
};

/* How a guest starts (doc/design.md section 7). */
enum boot_mode {
	BOOT_MODE_COLD = 0, /* every job boots its image */
	BOOT_MODE_WARM,	    /* restore a saved template of image and shape */
};

enum shared_dir_transport {
	SHARED_DIR_9P = 0,   /* served by qemu itself, as the job user */
	SHARED_DIR_VIRTIOFS, /* a Rust virtiofsd per share, as the job user */
	SHARED_DIR_AUTO,     /* virtiofs where it can run, else 9p
				(job/share_transport.h) */
};

/* A guest's shares: each is a PCI device and a mount in the guest. */
#define SHARED_DIRS_MAX 16
/* Longest share path: the seed and the domain carry it as is. */
#define SHARED_DIR_PATH_MAX 1024

/* The 9p mount tag of share @i: SHARED_DIR_TAG_FMT (channel/proto.h). */

/* Number of SharedDirs= entries (0 when none). */
size_t vmconf_n_shared_dirs(const struct vmconf *conf);
/* Can qemu share @path on this node: 0, -ENOTDIR or stat's -errno. */
int vmconf_shared_dir_usable(const char *path);

/* Default path: dirname($SLURM_CONF or /etc/slurm/slurm.conf)/vm.conf. */
char *vmconf_default_path(void);
/* dirname($SLURM_CONF or /etc/slurm/slurm.conf)/@name, e.g. gres.conf. */
char *slurm_conf_sibling(const char *name);

/* Fills @conf with defaults, then @path (may be NULL: defaults only).
 * Errors are logged with file:line; returns 0 or -errno. */
int vmconf_load(struct vmconf *conf, const char *path);
/* Parses one "Key=Value" item (also used for plugstack.conf arguments). */
int vmconf_set(struct vmconf *conf, const char *item, const char *where);
void vmconf_free(struct vmconf *conf);
/* JobNetworkSubnet= values; 0 or -EINVAL. */
int vmconf_parse_subnet(const char *s, uint32_t *net, unsigned *prefix);

/* For `slurm-vm show-config` and the man page test. */
void vmconf_print(const struct vmconf *conf, FILE *out);
/* Known key names, NULL-terminated. */
const char *const *vmconf_keys(void);
