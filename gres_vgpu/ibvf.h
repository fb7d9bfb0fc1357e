/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The slurm-vm half of gres/ibvf: vm.conf, VF detection and each VF's PCI
 * functions, through libslurmvm (common/hw/gresgen.h). gres_ibvf.c, the Slurm
 * half, includes Slurm's internal headers, whose log.h clashes with ours:
 * the two halves meet only here, in plain C types.
 */
#include <stdbool.h>
#include <stddef.h>

/* Our messages go to Slurm's log: @sink gets 0 error, 1 warn, 2 info,
 * 3 debug. */
typedef void (*ibvf_log_sink)(int level, const char *msg);
void ibvf_log_init(ibvf_log_sink sink);

struct ibvf_conf {
	bool autodetect;  /* IbvfAutoDetect=yes */
	char *sysfs_root; /* SysfsRoot */
	char *vm_conf;	  /* the file read, NULL if there was none */
	void *priv;	  /* struct vmconf */
	/* Cores= of whole sockets, as Slurm 24.11 and later require of
	 * gres.conf (the plugin sets it by its release): else the NUMA
	 * node's, which would drain an SNC/NPS node there. */
	bool cores_whole_sockets;
};

/* vm.conf at @path; a missing file means the defaults (no detection). */
int ibvf_conf_load(const char *path, struct ibvf_conf *conf);
void ibvf_conf_free(struct ibvf_conf *conf);

/* One detected VF: a gres.conf line as `slurm-vm gres` prints it. */
struct ibvf_line {
	char *file;  /* <VfioDir>/<group> */
	char *cores; /* Slurm core ids, NULL if its NUMA node is unknown */
	char *cpus;  /* OS CPU ids of those cores, NULL likewise */
};

/* The ibvf lines `slurm-vm gres` would print, in its order. */
int ibvf_detect(const struct ibvf_conf *conf, struct ibvf_line **lines,
		size_t *n);
void ibvf_lines_free(struct ibvf_line *lines, size_t n);

/* SLURM_JOB_IBVFS's fragment for device @index with File= @file,
 * "IDX=PCI[,IDX=PCI]" (malloc'd); NULL with a logged error when @file is
 * not a vfio group holding an InfiniBand function. */
char *ibvf_index_entry(const struct ibvf_conf *conf, unsigned index,
		       const char *file);
