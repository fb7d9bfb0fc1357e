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
#include <stdbool.h>
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

/*
 * slurm.conf as each release reads it (src/common/read_config.c,
 * parse_config.c). @release is a SLURM_VERSION_NUMBER: the functions are
 * pure, so that a build on one release tests the others' rules.
 *
 *   23.02  a relative Include is from slurm.conf's directory (was: the
 *          including file's); PrologFlags=ForceRequeueOnFail (implies Alloc)
 *   23.11  mpi/pmix dlopens libpmix.so.2 (was: libpmix.so, of -dev)
 *   24.05  Prolog= and Epilog= on several lines each add a script (was:
 *          the last line wins); PrologFlags=RunInJob (implies Contain, Alloc)
 *   25.05  PrologTimeout= and EpilogTimeout= override PrologEpilogTimeout=
 *   24.11  slurmctld refuses a gres.conf Cores= that splits a socket (the
 *          node INVAL, drained: gres.c, "doesn't match socket boundaries")
 *   26.05  PrologFlags=DeferBatch implies Alloc
 */

/* The release slurm-vm is built against (slurm/slurm_version.h). */
uint32_t slurm_compat_release(void);

/* "22.05" of @release, into @buf. */
const char *slurm_release_str(uint32_t release, char *buf, size_t size);

/* Is a relative Include resolved from slurm.conf's directory (else from
 * the directory of the file holding the Include line)? */
bool slurm_include_from_conf_dir(uint32_t release);

/* Do several Prolog= (Epilog=) lines each add a script to run? Else the
 * last one is the script. */
bool slurm_scripts_accumulate(uint32_t release);

/* Does @release read PrologTimeout= and EpilogTimeout=? */
bool slurm_has_script_timeouts(uint32_t release);

/* Must a gres.conf Cores= cover whole sockets (each socket all of its
 * cores or none)? Else any cores do. */
bool slurm_gres_cores_whole_sockets(uint32_t release);

#define SLURM_PROLOG_ALLOC	(1u << 0)
#define SLURM_PROLOG_CONTAIN	(1u << 1)
#define SLURM_PROLOG_RUN_IN_JOB (1u << 2)

/* PrologFlags=@flags as slurmctld of @release reads it: *@bits has the
 * flags set, the implied ones with them (Contain implies Alloc, ...).
 * -EINVAL with the first flag @release does not know (slurmctld refuses
 * to start) in @bad. */
int slurm_prolog_flags_parse(const char *flags, uint32_t release,
			     unsigned *bits, char *bad, size_t bad_size);

/* The library Slurm's mpi/pmix plugin (mpi_pmix_vN.so, whichever PMIx
 * the distribution built it with) dlopens from the PMIx directory, and
 * the Debian package that ships it. */
struct slurm_pmix_library {
	const char *file;
	const char *package;
};
struct slurm_pmix_library slurm_pmix_library(uint32_t release);
