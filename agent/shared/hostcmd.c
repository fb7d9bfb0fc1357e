/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Slurm commands both sides of hostcmd.h agree on. */
#include "config.h"

#include <string.h>

#include "agent_shared/hostcmd.h"

const char *const hostcmd_names[] = {
	"srun",	   "scontrol", "squeue", "sinfo",
	"scancel", "sacct",    "sstat",	 NULL,
};

bool hostcmd_is_name(const char *name)
{
	for (size_t i = 0; hostcmd_names[i]; i++)
		if (!strcmp(name, hostcmd_names[i]))
			return true;
	return false;
}
