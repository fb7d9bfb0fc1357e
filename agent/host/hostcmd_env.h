/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The environment of a Slurm command the guest runs on the host (hostcmd.h).
 *
 * The guest is root's in its VM and sends any environment it likes, so the
 * host does not take it: a command runs with the batch step's own
 * environment, and of the guest's only the Slurm option variables
 * (SLURM_*, SBATCH_*, SRUN_*, ...: what a script exports to change a
 * command's options) with printable values of bounded length. Even of
 * those, none that makes the host command load or run something else:
 * its configuration (SLURM_CONF, SLURM_CONF_SERVER: plugins, PluginDir,
 * plugstack) or the programs run around a step (SLURM_PROLOG,
 * SLURM_TASK_PROLOG, ...). doc/security.md lists them.
 *
 * The guest's other variables (OMP_NUM_THREADS, PATH, LD_PRELOAD, ...)
 * are the script's, for the tasks of its steps, which run in the guests:
 * they pass renamed, PROTO_ENV_GUEST_PREFIX + NAME=value, a name that
 * neither srun, libslurm nor ld.so reads, and srun exports to the tasks;
 * each task's environment gets NAME=value back in the guest (taskenv.h).
 */
#include <stdbool.h>

/* A value of a Slurm option variable longer than this is not taken. */
#define HOSTCMD_ENV_VALUE_MAX 4096u
/* Nor a value of another variable longer than this: a long PATH or
 * LD_LIBRARY_PATH fits, and the renamed variable in Linux's 128 KiB for
 * one string of execve's environment. */
#define HOSTCMD_ENV_GUEST_VALUE_MAX (64u * 1024u)

enum hostcmd_env_kind {
	HOSTCMD_ENV_REFUSED, /* not taken */
	HOSTCMD_ENV_OPTION,  /* a Slurm option variable, taken as it is */
	HOSTCMD_ENV_GUEST,   /* another, for the tasks: taken renamed */
};

/* What the guest's NAME=value @entry is to a host command: names of
 * letters, digits and '_' not starting with a digit; no name starting with
 * PROTO_ENV_GUEST_PREFIX (already renamed: the guest's own would be).
 * The count and the total size are the protocol's (PROTO_MAX_ENVC,
 * PROTO_MAX_EXEC). */
enum hostcmd_env_kind hostcmd_env_kind(const char *entry);

/* The environment for a host command: @host, each entry replaced or
 * followed by the entries of @guest that are options, and the others
 * renamed (the guest's value wins: the script exported it). A new strv
 * (strv_free); NULL without memory. */
char **hostcmd_env_build(char *const *host, char *const *guest);
