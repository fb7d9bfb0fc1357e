/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * What Slurm allocated to a job on this node, from slurmctld (one
 * slurm_load_job RPC, common/slurm/ctld.h) and this node's gres.conf, mapped
 * to OS CPU ids and PCI functions the way slurmd numbers them
 * (common/hw/slurm_map.h).
 */
#include <stdint.h>

#include "hw/devices.h"
#include "hw/placement.h"
#include "job/vmconf.h"

#define ALLOC_GRES_NAMES 2 /* gpu, ibvf */

struct alloc_gres {
	const char *name;  /* "gpu", "ibvf" */
	unsigned *indices; /* as in gres_detail_str */
	size_t n;
	char **files; /* the File= of each index */
	int *groups;  /* its IOMMU group */
};

struct job_alloc {
	char *node;	     /* this node's name */
	unsigned node_index; /* its place in the job's node list */
	char *cores;	     /* Slurm's core ids on this node, "0-3" */
	char *cpus;	     /* OS CPU ids of those cores */
	uint64_t mem_mib;    /* the job's memory on this node, 0 if unknown */
	char *gres_detail;   /* this node's gres_detail_str */
	/* SLURM_JOB_IBVFS from gres/ibvf, NULL without the plugin: its
	 * indices are used, and its PCI functions must be ours. */
	const char *ibvfs_env;
	struct alloc_gres gres[ALLOC_GRES_NAMES];
	struct device_list devices; /* every function to pass, by group */
	struct plan_device_request *requests; /* the GPUs and VFs themselves */
	size_t n_requests;
};

/* Loads the job from slurmctld, retrying a slow controller boundedly.
 * -EAGAIN when it never answered (a job fault: never drain for that). */
int alloc_load(uint32_t job_id, const char *node, struct job_alloc *a);
/* Maps cores to CPUs with @topo and GRES indices to devices through
 * @gres_conf (ibvf: the detected VFs with IbvfAutoDetect=yes) and
 * SysfsRoot. Logs what does not fit. */
int alloc_resolve(struct job_alloc *a, const struct vmconf *conf,
		  const struct topology *topo, const char *gres_conf);
void alloc_free(struct job_alloc *a);
