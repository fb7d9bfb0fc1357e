/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* State shared by the per-context parts of spank_vm.so. */
#include <stdbool.h>
#include <stdint.h>
#include <slurm/spank.h>

#include "core/log.h"

#define PLUGIN_NAME "spank_vm"

/* What the user asked for, from options or SLURM_VM_* defaults. */
struct vm_options {
	char *image;	  /* --vm-image */
	unsigned cpus;	  /* --vm-cpus, 0 = all of the job's CPUs */
	uint64_t mem_mib; /* --vm-mem, 0 = the job's memory minus overhead */
	char *hugepages;  /* --vm-hugepages: none, 2M, 1G */
	bool keep;	  /* --vm-keep */
	bool batch;	  /* --vm-batch or SLURM_VM_BATCH=yes */
	bool batch_set;	  /* --vm-batch on the command line */
	bool image_set;	  /* given on the command line */
};

struct plugin_args {
	char *config; /* config=PATH of vm.conf */
};

extern struct vm_options vm_opts;
extern struct plugin_args plugin_args;

/* Messages to Slurm's log and the user, "spank_vm: " first. */
void spank_vm_log_sink(enum log_level level, const char *msg);
int plugin_args_parse(int ac, char **av);
int vm_options_register(spank_t sp);
int vm_options_apply_env_defaults(spank_t sp);
void vm_options_free(void);
/* "yes"/"1" or "no"/"0" (SLURM_VM_BATCH); -EINVAL otherwise. */
int vm_batch_parse(const char *v, bool *batch);

/* Allocator (sbatch/salloc) and local (srun) context. */
int submit_post_opt(spank_t sp);
/* Local context (srun), before launch: marks a --multi-prog step for the
 * tasks with MULTI_PROG_ENV=1. */
#define MULTI_PROG_ENV "SLURM_VM_MULTI_PROG"
int launch_mark_multi_prog(spank_t sp);
/* Remote context, in a VM task: slurm.conf TaskProlog as slurmstepd runs
 * it, applied to @env (a malloc'd strv). */
int task_prolog_run(char ***env);
/* This node's vm.conf (plugstack.conf's config=, else beside slurm.conf);
 * its errors are kept for a step that needs it. */
struct vmconf;
int spank_vm_load_conf(struct vmconf *conf);
/* Remote context, the extern step, once it runs: the guest the Prolog
 * booted becomes the job's (slurm-vm-adopt). Never fails the job. */
void extern_adopt_guest(spank_t sp);
/* Remote context, the batch step, its task ended: a guest the job's memory
 * cgroup killed here ends the job OUT_OF_MEMORY. Never fails the job. */
void batch_report_guest_oom(spank_t sp);
/* Remote context, in each task: run it in the guest. */
int task_init_privileged(spank_t sp);
int task_init_remote(spank_t sp);
