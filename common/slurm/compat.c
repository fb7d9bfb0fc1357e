/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "slurm/compat.h"
#include "core/macro.h"

static pthread_once_t slurm_init_once = PTHREAD_ONCE_INIT;

static void slurm_init_conf(void)
{
	slurm_init(NULL);
}

void slurm_compat_init(void)
{
	pthread_once(&slurm_init_once, slurm_init_conf);
}

int slurm_compat_errno(void)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
	return errno;
#else
	return slurm_get_errno();
#endif
}

int slurm_compat_load_job(job_info_msg_t **msg, uint32_t job_id,
			  uint16_t show_flags)
{
	slurm_compat_init();
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;

	id.job_id = job_id;
	return slurm_load_job(msg, id, show_flags);
#else
	return slurm_load_job(msg, job_id, show_flags);
#endif
}

int slurm_compat_complete_job(uint32_t job_id, uint32_t return_code)
{
	slurm_compat_init();
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;

	id.job_id = job_id;
	return slurm_complete_job(&id, return_code);
#else
	return slurm_complete_job(job_id, return_code);
#endif
}

uint32_t slurm_compat_submitted_job_id(const submit_response_msg_t *resp)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	return resp->step_id.job_id;
#else
	return resp->job_id;
#endif
}

void slurm_compat_job_desc_set_id(job_desc_msg_t *desc, uint32_t job_id)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	desc->step_id.job_id = job_id;
#else
	desc->job_id = job_id;
#endif
}

int slurm_hostlist_position(const char *nodes, const char *node)
{
	slurm_hostlist_ptr hl = nodes ? slurm_hostlist_create(nodes) : NULL;
	int i = 0, found = -1;
	char *h;

	if (!hl)
		return -1;
	while (found < 0 && (h = slurm_hostlist_shift(hl))) {
		if (strcmp(h, node) == 0)
			found = i;
		free(h);
		i++;
	}
	slurm_hostlist_destroy(hl);
	return found;
}

static bool core_bit(const struct slurm_core_layout *l, uint64_t bit)
{
	return bit < l->core_nbits &&
	       ((uint64_t)l->core_bits[bit / 64] >> (bit % 64)) & 1;
}

/* Appends "a" or "a-b" (after a comma unless first) to @s. */
static int append_range(char *s, size_t len, size_t *used, uint64_t a,
			uint64_t b)
{
	int n = a == b ? snprintf(s + *used, len - *used, "%s%llu",
				  *used ? "," : "", (unsigned long long)a)
		       : snprintf(s + *used, len - *used, "%s%llu-%llu",
				  *used ? "," : "", (unsigned long long)a,
				  (unsigned long long)b);

	if (n < 0 || (size_t)n >= len - *used)
		return -ENOSPC;
	*used += n;
	return 0;
}

int slurm_core_layout_node(const struct slurm_core_layout *l,
			   uint32_t node_index, char *cores, size_t cores_len,
			   int *ncpus)
{
	uint64_t first = 0, ncores = 0, start = 0;
	uint32_t left = node_index, seen = 0;
	size_t used = 0;
	bool in_range = false;
	int r;

	if (node_index >= l->nhosts || !cores_len)
		return -ENOENT;
	/* The node's first bit: skip the groups of nodes alike before it. */
	for (uint32_t g = 0; seen < l->nhosts; g++) {
		uint64_t per_node = (uint64_t)l->sockets_per_node[g] *
				    l->cores_per_socket[g];

		if (left < l->sock_core_rep_count[g]) {
			first += per_node * left;
			ncores = per_node;
			break;
		}
		first += per_node * l->sock_core_rep_count[g];
		left -= l->sock_core_rep_count[g];
		seen += l->sock_core_rep_count[g];
	}
	cores[0] = '\0';
	for (uint64_t c = 0; c <= ncores; c++) {
		bool set = c < ncores && core_bit(l, first + c);

		if (set && !in_range)
			start = c;
		if (!set && in_range) {
			r = append_range(cores, cores_len, &used, start, c - 1);
			if (r < 0)
				return r;
		}
		in_range = set;
	}
	*ncpus = 0;
	left = node_index;
	for (uint32_t i = 0; i < l->cpu_array_cnt; i++) {
		if (left < l->cpu_array_reps[i]) {
			*ncpus = l->cpu_array_value[i];
			break;
		}
		left -= l->cpu_array_reps[i];
	}
	return cores[0] ? 0 : -ENOENT;
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 11, 0)
#error "check struct job_resources below against this Slurm's src/common/job_resources.h"
#endif
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Slurm's bitstr_t is MSB first on big-endian hosts: core_bit() is not"
#endif
/* Slurm's own struct (src/common/job_resources.h of the tags 24.11 to
 * 26.05): 24.11 dropped the calls that read it, and slurm.h keeps it opaque.
 * Its layout is fixed within a release, like libslurm's soname. */
struct job_resources {
	bitstr_t *core_bitmap;
	bitstr_t *core_bitmap_used;
	uint32_t cpu_array_cnt;
	uint16_t *cpu_array_value;
	uint32_t *cpu_array_reps;
	uint16_t *cpus;
	uint16_t *cpus_used;
	uint16_t *cores_per_socket;
	uint16_t cr_type;
	uint64_t *memory_allocated;
	uint64_t *memory_used;
	uint32_t next_step_node_inx;
	uint32_t nhosts;
	bitstr_t *node_bitmap;
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	uint32_t *node_ranks;
#endif
	uint32_t node_req;
	char *nodes;
	uint32_t ncpus;
	uint32_t *sock_core_rep_count;
	uint16_t *sockets_per_node;
	uint16_t *tasks_per_node;
	uint16_t threads_per_core;
	uint8_t whole_node;
};

/* Slurm's bitstr_t: a magic word, the bit count, then the bits. */
#define BITSTR_OVERHEAD 2

int slurm_job_node_cores(const slurm_job_info_t *job, const char *node,
			 char *cores, size_t cores_len, int *ncpus)
{
	const struct job_resources *jr = job->job_resrcs;
	struct slurm_core_layout l;
	int idx;

	if (!jr || !jr->core_bitmap || !jr->nodes)
		return -ENOENT;
	idx = slurm_hostlist_position(jr->nodes, node);
	if (idx < 0)
		return -ENOENT;
	l = (struct slurm_core_layout){
		.core_bits = jr->core_bitmap + BITSTR_OVERHEAD,
		.core_nbits = (uint64_t)jr->core_bitmap[1],
		.nhosts = jr->nhosts,
		.sock_core_rep_count = jr->sock_core_rep_count,
		.sockets_per_node = jr->sockets_per_node,
		.cores_per_socket = jr->cores_per_socket,
		.cpu_array_cnt = jr->cpu_array_cnt,
		.cpu_array_value = jr->cpu_array_value,
		.cpu_array_reps = jr->cpu_array_reps,
	};
	return slurm_core_layout_node(&l, idx, cores, cores_len, ncpus);
}
#else
int slurm_job_node_cores(const slurm_job_info_t *job, const char *node,
			 char *cores, size_t cores_len, int *ncpus)
{
	if (slurm_job_cpus_allocated_str_on_node(cores, cores_len,
						 job->job_resrcs, node) != 0 ||
	    !cores[0])
		return -ENOENT;
	*ncpus = slurm_job_cpus_allocated_on_node(job->job_resrcs, node);
	return 0;
}
#endif

uint32_t slurm_compat_release(void)
{
	return SLURM_VERSION_NUMBER;
}

const char *slurm_release_str(uint32_t release, char *buf, size_t size)
{
	snprintf(buf, size, "%u.%02u", release >> 16, (release >> 8) & 0xff);
	return buf;
}

bool slurm_include_from_conf_dir(uint32_t release)
{
	return release >= SLURM_VERSION_NUM(23, 2, 0);
}

bool slurm_scripts_accumulate(uint32_t release)
{
	return release >= SLURM_VERSION_NUM(24, 5, 0);
}

bool slurm_has_script_timeouts(uint32_t release)
{
	return release >= SLURM_VERSION_NUM(25, 5, 0);
}

bool slurm_gres_cores_whole_sockets(uint32_t release)
{
	return release >= SLURM_VERSION_NUM(24, 11, 0);
}

int slurm_prolog_flags_parse(const char *flags, uint32_t release,
			     unsigned *bits, char *bad, size_t bad_size)
{
	/* prolog_str2flags() of each release; NoHold's Alloc is set by
	 * read_config.c after it. */
	static const struct {
		const char *name;
		uint32_t since;
		unsigned bits;
		uint32_t alloc_since; /* implies Alloc from this release */
	} known[] = {
		{ "Alloc", 0, SLURM_PROLOG_ALLOC, 0 },
		{ "Contain", 0, SLURM_PROLOG_CONTAIN, 0 },
		{ "DeferBatch", 0, 0, SLURM_VERSION_NUM(26, 5, 0) },
		{ "NoHold", 0, 0, 0 },
		{ "Serial", 0, 0, UINT32_MAX },
		{ "X11", 0, SLURM_PROLOG_CONTAIN, 0 },
		{ "ForceRequeueOnFail", SLURM_VERSION_NUM(23, 2, 0), 0, 0 },
		{ "RunInJob", SLURM_VERSION_NUM(24, 5, 0),
		  SLURM_PROLOG_CONTAIN | SLURM_PROLOG_RUN_IN_JOB, 0 },
	};
	const char *p = flags ? flags : "";

	*bits = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		bool found = false;

		for (size_t i = 0; len && i < ARRAY_SIZE(known); i++) {
			if (strlen(known[i].name) != len ||
			    strncasecmp(known[i].name, p, len) ||
			    release < known[i].since)
				continue;
			found = true;
			*bits |= known[i].bits;
			if (release >= known[i].alloc_since)
				*bits |= SLURM_PROLOG_ALLOC;
		}
		if (len && !found) {
			snprintf(bad, bad_size, "%.*s", (int)len, p);
			return -EINVAL;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

struct slurm_pmix_library slurm_pmix_library(uint32_t release)
{
	if (release >= SLURM_VERSION_NUM(23, 11, 0))
		return (struct slurm_pmix_library){ "libpmix.so.2",
						    "libpmix2t64" };
	return (struct slurm_pmix_library){ "libpmix.so", "libpmix-dev" };
}
