/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* The task's working directory in the guest (spank_vm(8), TASKS): the
 * host's directory only where the guest has it from a share (vm.conf
 * SharedDirs=), else /tmp with slurmstepd's message. A directory of the
 * same name that the guest has of its own (cloud-init's home of the user,
 * a share's mount point left empty when the mount failed) is not the
 * host's: the task would run there, silently, in the wrong place. */
#include <stddef.h>

/* Changes to @cwd when it is /tmp or lies on one of the job's shares, as
 * @mountinfo (/proc/self/mountinfo) lists them; else to /tmp. 0: in @cwd;
 * 1: in /tmp instead, @why saying why @cwd was not used; -errno: not in
 * /tmp either. */
int workdir_enter(const char *cwd, const char *mountinfo, char *why,
		  size_t why_len);
