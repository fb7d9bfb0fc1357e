/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The VM request of a job as the Prolog and Epilog receive it: SPANK_VM_*
 * (set by spank_vm at submit, but user input all the same: a job can be
 * submitted through libslurm with any values) and slurmd's SLURM_JOB_*.
 * Every value is parsed strictly and range-checked.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define REQUEST_CPUS_MAX      4096
#define REQUEST_MEM_MIB_MIN   64
#define REQUEST_MEM_MIB_MAX   (64ull << 20) /* 64 TiB */
#define REQUEST_IMAGE_LEN_MAX 4095

enum hugepages {
	HUGEPAGES_NONE = 0,
	HUGEPAGES_2M,
	HUGEPAGES_1G,
};

struct vm_request {
	uint32_t job_id;
	unsigned restart_count;
	uid_t uid;
	gid_t gid;
	char *user; /* SLURM_JOB_USER, checked against uid */

	char *image;	/* SPANK_VM_IMAGE as given */
	unsigned cpus;	/* 0: all of the job's CPUs on the node */
	uint64_t mem_mib; /* 0: the job's memory minus overhead */
	enum hugepages hugepages;
	bool keep;
};

/* True when the job asked for a VM: the one check made before anything
 * else, so plain jobs pay nothing. */
bool request_wanted(void);
/* Only the job id and restart count (what the epilog needs to clean up
 * even when the rest of the request is garbage). */
int request_job_from_env(uint32_t *job_id, unsigned *restart_count);
/* Parses the environment; logs what is wrong and returns -EINVAL. */
int request_from_env(struct vm_request *req);
void request_free(struct vm_request *req);
const char *hugepages_name(enum hugepages h);
