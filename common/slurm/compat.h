/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * What differs between the Slurm releases slurm-vm builds against (22.05,
 * 24.11, 26.05), in one place: the callers use these and hold no
 * SLURM_VERSION test. The release is slurm/slurm_version.h's, at build
 * time: libslurm's soname changes every release, so one build serves one.
 *
 *   23.02  slurm_init() before any request (was lazy)
 *   23.11  hostlist_t is the struct, not a pointer to it
 *   24.11  slurm_get_errno() gone (errno);
 *          slurm_job_cpus_allocated_{str_,}on_node() gone
 *   25.11  slurm_complete_job() and job_desc_msg_t take a slurm_step_id_t
 *   26.05  so does slurm_load_job()
 */
#include <slurm/slurm.h>
#include <slurm/slurm_version.h>
#include <stddef.h>
#include <stdint.h>

/* A libslurm hostlist: the slurm_hostlist_*() handle of every release. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
typedef hostlist_t *slurm_hostlist_ptr;
#else
typedef hostlist_t slurm_hostlist_ptr;
#endif

/* The position of @node in @nodes (a hostlist expression, "n[1-3]"), or
 * -1 when it is not there or @nodes is NULL. */
int slurm_hostlist_position(const char *nodes, const char *node);

/* slurm_init(NULL) once per process, before the first request to
 * slurmctld: reads slurm.conf ($SLURM_CONF). 22.05 did the same lazily at
 * the first request, so calling it there changes nothing. */
void slurm_compat_init(void);

/* The Slurm error code of the last failed libslurm call. */
int slurm_compat_errno(void);

/* slurm_load_job() of @job_id. */
int slurm_compat_load_job(job_info_msg_t **msg, uint32_t job_id,
			  uint16_t show_flags);

/* slurm_complete_job() of the whole job @job_id. */
int slurm_compat_complete_job(uint32_t job_id, uint32_t return_code);

/* The id of the job slurm_submit_batch_job() submitted. */
uint32_t slurm_compat_submitted_job_id(const submit_response_msg_t *resp);

/* Sets the job @desc updates (slurm_update_job()). */
void slurm_compat_job_desc_set_id(job_desc_msg_t *desc, uint32_t job_id);

/* The job's cores on @node as Slurm's abstract core ids, "0-3,8" (the job's
 * core bitmap, as slurm_job_cpus_allocated_str_on_node() gave it up to
 * 24.05), into @cores; @ncpus the CPUs the job has there. Needs the job
 * loaded with SHOW_DETAIL. -ENOENT when the job has no cores there,
 * -ENOSPC when @cores is too short. */
int slurm_job_node_cores(const slurm_job_info_t *job, const char *node,
			 char *cores, size_t cores_len, int *ncpus);

/* The part of Slurm's job_resources that places cores (src/common/
 * job_resources.h, opaque in slurm.h): the job's core bitmap over all its
 * nodes, node after node, each node sockets_per_node * cores_per_socket
 * bits, in groups of sock_core_rep_count nodes alike; the CPU counts in
 * cpu_array_value, each for cpu_array_reps nodes. */
struct slurm_core_layout {
	const int64_t *core_bits; /* bit i: word i/64, bit i%64, LSB first */
	uint64_t core_nbits;
	uint32_t nhosts;
	const uint32_t *sock_core_rep_count;
	const uint16_t *sockets_per_node;
	const uint16_t *cores_per_socket;
	uint32_t cpu_array_cnt;
	const uint16_t *cpu_array_value;
	const uint32_t *cpu_array_reps;
};

/* The cores ("0-3,8") and CPU count of the job's @node_index-th node (in
 * its node list's order) from @l: what 22.05's
 * slurm_job_cpus_allocated_{str_,}on_node_id() computed. */
int slurm_core_layout_node(const struct slurm_core_layout *l,
			   uint32_t node_index, char *cores, size_t cores_len,
			   int *ncpus);
