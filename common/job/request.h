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

/*
 * The contract between spank_vm.so and the prolog, in one place. The plugin
 * passes each value with spank_job_control_setenv(REQUEST_*), slurmd hands
 * it to the Prolog and Epilog as REQUEST_ENV(REQUEST_*) ("SPANK_VM_IMAGE");
 * the user's defaults for the options are REQUEST_USER_ENV(REQUEST_*)
 * ("SLURM_VM_IMAGE"). A value not passed is its default: all of the job's
 * CPUs on the node, the job's memory minus overhead, no huge pages, no keep.
 */
#define REQUEST_IMAGE	       "VM_IMAGE"
#define REQUEST_CPUS	       "VM_CPUS"      /* vCPUs, decimal */
#define REQUEST_MEM	       "VM_MEM"	      /* MiB, decimal */
#define REQUEST_HUGEPAGES      "VM_HUGEPAGES" /* none, 2M, 1G */
#define REQUEST_KEEP	       "VM_KEEP"      /* "1" */
#define REQUEST_BATCH	       "VM_BATCH"     /* the user's default only */
#define REQUEST_ENV(name)      "SPANK_" name
#define REQUEST_USER_ENV(name) "SLURM_" name

/* The bounds, checked by request_check() on both sides. */
#define REQUEST_CPUS_MAX      4096
#define REQUEST_MEM_MIB_MIN   64
#define REQUEST_MEM_MIB_MAX   (64ull << 20) /* 64 TiB */
#define REQUEST_IMAGE_LEN_MAX 4095

enum hugepages {
	HUGEPAGES_NONE = 0,
	HUGEPAGES_2M,
	HUGEPAGES_1G,
};

/* What request_check() checks. */
enum request_value {
	REQUEST_VALUE_IMAGE, /* the image's length */
	REQUEST_VALUE_CPUS,
	REQUEST_VALUE_MEM_MIB,
};

struct vm_request {
	uint32_t job_id;
	unsigned restart_count;
	uid_t uid;
	gid_t gid;
	char *user; /* SLURM_JOB_USER, checked against uid */

	char *image;	  /* SPANK_VM_IMAGE as given */
	unsigned cpus;	  /* 0: all of the job's CPUs on the node */
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
/* One value of the request, as given (a value not given is not checked),
 * against the contract's bounds: spank_vm.so calls it at submission, so the
 * user hears of a value out of bounds from sbatch, and the prolog on what
 * arrives, which a job submitted through libslurm sets at will. 0, or
 * -ERANGE; logs nothing: each side says it in its own words (an option, an
 * environment variable). */
int request_check(enum request_value what, uint64_t value);
/* "none", "2M" or "1G", any case; -EINVAL otherwise. */
int hugepages_parse(const char *s, enum hugepages *h);
const char *hugepages_name(enum hugepages h);
