/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * A task's environment for the guest, translated rather than copied.
 *
 * The prolog records, from its plan, what the tasks need to know about the
 * guest in the job's state directory (TASKMAP_FILE, root's, 0644):
 *
 *   vcpu <vcpu> <host cpu>          one per vCPU, vCPU order
 *   cell <cell> <host NUMA node>    one per guest NUMA cell
 *   device <gres> <index> <guest PCI address>
 *                                   one per passed device; <index> is
 *                                   slurmd's index of that GRES, -1 unknown
 *
 * Translation (taskenv_translate), each variable of the task's host
 * environment:
 *
 *   - SLURM_CPU_BIND, SLURM_CPU_BIND_LIST: host CPU ids (map_cpu), masks
 *     (mask_cpu), NUMA nodes (map_ldom) or node masks (mask_ldom) become
 *     the guest's vCPUs or cells. A binding that names a CPU or node the
 *     guest does not have cannot be expressed: SLURM_CPU_BIND* are dropped.
 *   - CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL,
 *     ZE_AFFINITY_MASK, HIP_VISIBLE_DEVICES: Slurm writes the step's GPUs
 *     there in the order of SLURM_STEP_GPUS (slurmd's indices; the values
 *     are those or, with ConstrainDevices, local ordinals). Entry i becomes
 *     the guest ordinal of GPU SLURM_STEP_GPUS[i]: its position among the
 *     job's GPUs in guest PCI address order, the order the guest's drivers
 *     enumerate them. Values that are not plain numbers (UUIDs, MIG names)
 *     and values without a matching SLURM_STEP_GPUS (set by the user) pass
 *     unchanged.
 *   - TMPDIR (set if absent), TMP, TEMP (if present): the rule's tmpdir
 *     (vm.conf TaskTmpDir); NULL keeps the host's values.
 *   - XDG_RUNTIME_DIR: dropped (a host runtime directory).
 *   - TASKENV_AFFINITY: set to the guest vCPUs of the task's host CPU
 *     affinity (taskenv_affinity), for the agent, which applies and removes
 *     it; dropped if the host names it some other way.
 *   - PROTO_ENV_GUEST_PREFIX NAME=value: what a --vm-batch script in the
 *     guest exported, which its srun passed renamed (agent/host/hostcmd_env.h):
 *     NAME=value in place of the host's NAME, after all the rules above
 *     (the script's PATH and TMPDIR win), except where the step sets
 *     NAME for each task (the GPU variables, PMI_*, PMIX_*,
 *     TASKENV_AFFINITY, PWD: the script has its batch step's). The
 *     renamed variable itself is dropped.
 *   - everything else, SLURM_* and PMI_* included, passes unchanged.
 *
 * Not here: the job network's defaults for MPI (UCX_NET_DEVICES, ...) are
 * added by the agent in the guest (netenv.h), which alone knows the names
 * of its interfaces and InfiniBand devices.
 */
#include <sched.h>
#include <stdint.h>
#include <stddef.h>

#include "channel/proto.h"

#define TASKMAP_FILE "taskmap"
/* A guest PCI address, "dddd:bb:ss.f" + NUL (devices.h PCI_ADDR_MAX). */
#define TASKMAP_ADDR_MAX 16
#define TASKMAP_MAX_SIZE (256u * 1024u)
#define TASKENV_AFFINITY PROTO_ENV_AFFINITY

struct task_map_device {
	char gres[16];
	int index;
	char guest_addr[TASKMAP_ADDR_MAX];
};

struct task_map {
	unsigned n_vcpus;
	unsigned *vcpu_cpu; /* host CPU of each vCPU */
	unsigned n_cells;
	unsigned *cell_node; /* host NUMA node of each guest cell */
	size_t n_devices;
	struct task_map_device *devices;
};

/* From the prolog's plan: task_map_from_plan() (taskmap.h). */
/* The file's text (malloc'd). */
int task_map_format(const struct task_map *m, char **text);
/* Parses the file's text; -EINVAL for anything malformed. */
int task_map_parse(const char *text, struct task_map *m);
/* Reads and parses the file at @path (at most TASKMAP_MAX_SIZE bytes). */
int task_map_load(const char *path, struct task_map *m);
void task_map_free(struct task_map *m);

/* The guest vCPUs (list syntax, "0-2,5", malloc'd) of host CPU set @set;
 * -ENOENT when none of them is a vCPU. */
int taskenv_affinity(const struct task_map *m, const cpu_set_t *set,
		     char **vcpus);

/* TaskProlog's standard output, read as slurmstepd reads it (task.c
 * _proc_stdout), applied to @env (a malloc'd strv, changed in place or
 * reallocated): "export NAME=value" sets (blanks after "export" and before
 * '=' dropped), "unset NAME" removes, "print TEXT" writes TEXT and its
 * newline to @print_fd; other lines are ignored. Where slurmstepd of
 * @release (a SLURM_VERSION_NUMBER) rebinds the task to a
 * SLURM_PROLOG_CPU_MASK export (until 24.05; from 24.11 it is a variable
 * like any other), it is returned in @cpu_mask (malloc'd, NULL if none)
 * for the caller to bind the task with. */
int taskenv_apply_prolog_output(const char *out, uint32_t release, char ***env,
				int print_fd, char **cpu_mask);

/* Sets NAME=value in @env (a malloc'd strv, reallocated). */
int taskenv_set(char ***env, const char *name, const char *value);
/* A hex CPU mask ("0x3c" or "3c", as Slurm's masks) as a CPU set. */
int taskenv_mask_to_cpuset(const char *mask, cpu_set_t *set);

struct taskenv_rule {
	const char *tmpdir;   /* TMPDIR/TMP/TEMP in the guest; NULL: keep */
	const char *affinity; /* TASKENV_AFFINITY value; NULL: none */
};

/* @env: NULL-terminated NAME=value. @out: a new NULL-terminated array
 * whose strings are malloc'd (strv_free). */
int taskenv_translate(const struct task_map *m, const struct taskenv_rule *r,
		      char *const *env, char ***out);
