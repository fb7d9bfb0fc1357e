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
 */
#include <stdbool.h>

/* A value longer than this is not taken from the guest. */
#define HOSTCMD_ENV_VALUE_MAX 4096u

/* Whether the guest's NAME=value @entry may reach a host command. */
bool hostcmd_env_allowed(const char *entry);

/* The environment for a host command: @host, each entry replaced or
 * followed by the entries of @guest that hostcmd_env_allowed (the guest's
 * value wins: the script exported it). The strings stay @host's and
 * @guest's; free only the array. NULL without memory. */
char **hostcmd_env_build(char *const *host, char *const *guest);
