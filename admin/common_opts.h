/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Shared by the subcommands: vm.conf loading with command-line overrides. */
#include "job/vmconf.h"

/* Loads @path, or the default vm.conf if it exists, or the defaults; then
 * applies @sysfs and @topology when not NULL and every "Key=Value" in @sets.
 * Returns 0 or -errno (already logged). */
int admin_load_config(struct vmconf *conf, const char *path, const char *sysfs,
		      const char *topology, char *const *sets);

/* Refuses (logged) unless root: @cmd reads StateDir and qemu:///system,
 * which are root's. Returns 0 or -EPERM. */
int admin_require_root(const char *cmd);
