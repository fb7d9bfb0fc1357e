/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * How ctld.c reads a job slurmctld sent (slurm_job_info_t) into a
 * struct ctld_job_node: apart from ctld.h, which holds no Slurm type, so
 * that its unit test can build the job.
 */
#include <slurm/slurm.h>

#include "slurm/ctld.h"

/* Fills @jn with what @job has on its @node_index-th node, whose cores
 * ("0-3") and CPU count slurm_job_node_cores() gave: the cores, that
 * node's gres_detail_str, the job's memory there (per node, or per CPU
 * times @ncpus). -ENOMEM, else 0. */
int ctld_job_node_fill(const slurm_job_info_t *job, unsigned node_index,
		       const char *cores, int ncpus, struct ctld_job_node *jn);
