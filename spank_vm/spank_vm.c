/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_vm.so: a thin dispatcher. Each SPANK context has its own file;
 * errors are compared with ESPANK_SUCCESS only, every message says
 * "spank_vm: " first.
 */
#include "config.h"

#include <slurm/spank.h>

#include "core/log.h"
#include "spank_vm.h"

SPANK_PLUGIN(spank_vm, 1);

void spank_vm_log_sink(enum log_level level, const char *msg)
{
	switch (level) {
	case LOG_LEVEL_ERROR:
		slurm_error(PLUGIN_NAME ": %s", msg);
		break;
	case LOG_LEVEL_WARN:
	case LOG_LEVEL_INFO:
		slurm_info(PLUGIN_NAME ": %s", msg);
		break;
	case LOG_LEVEL_DEBUG:
		slurm_debug(PLUGIN_NAME ": %s", msg);
		break;
	}
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	log_open(PLUGIN_NAME);
	log_set_sink(spank_vm_log_sink);
	if (plugin_args_parse(ac, av) < 0)
		return -1;
	/* sbatch and salloc read only registered options, not a static
	 * spank_options table. */
	if (vm_options_register(sp) < 0)
		return -1;
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
		return submit_post_opt(sp) == 0 ? 0 : -1;
	default:
		return 0;
	}
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	return launch_mark_multi_prog(sp) == 0 ? 0 : -1;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	return task_init_privileged(sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	/* Slurm 22.05 drops some user_init errors: report from here. */
	return task_init_remote(sp) == 0 ? 0 : -1;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	extern_adopt_guest(sp);
	return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	batch_report_guest_oom(sp);
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	vm_options_free();
	free(plugin_args.config);
	plugin_args.config = NULL;
	return 0;
}
