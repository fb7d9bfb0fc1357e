/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibvf-dlopen LIBSLURMFULL PLUGIN: loads the plugin as slurmd would, but
 * with RTLD_NOW (Slurm loads lazily, so an unresolved function would only
 * fail when called), and checks its plugin symbols and every gres_p_*
 * entry point of this Slurm version. Exit 0 when all is there.
 */
#include "config.h"

#include <dlfcn.h>
#include <slurm/slurm_version.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *const entry_points[] = {
	"gres_p_node_config_load", "gres_p_job_set_env",
	"gres_p_step_set_env",	   "gres_p_task_set_env",
	"gres_p_send_stepd",	   "gres_p_recv_stepd",
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(24, 11, 0)
	"gres_p_get_job_info",	   "gres_p_get_step_info",
#endif
	"gres_p_get_devices",	   "gres_p_step_hardware_init",
	"gres_p_step_hardware_fini",
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
	"gres_p_prep_build_env",   "gres_p_prep_set_env",
#else
	"gres_p_epilog_build_env", "gres_p_epilog_set_env",
#endif
	"init",			   "fini",
};

int main(int argc, char **argv)
{
	const uint32_t *version;
	const char *type;
	void *lib, *plugin;
	int missing = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: ibvf-dlopen LIBSLURMFULL PLUGIN\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "ibvf-dlopen: %s\n", dlerror());
		return 1;
	}
	plugin = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!plugin) {
		fprintf(stderr, "ibvf-dlopen: %s\n", dlerror());
		return 1;
	}
	type = dlsym(plugin, "plugin_type");
	version = dlsym(plugin, "plugin_version");
	if (!type || strcmp(type, "gres/ibvf") != 0 || !version ||
	    *version != SLURM_VERSION_NUMBER) {
		fprintf(stderr, "ibvf-dlopen: plugin_type %s, version %#x\n",
			type ? type : "missing", version ? *version : 0);
		return 1;
	}
	for (size_t i = 0; i < sizeof(entry_points) / sizeof(*entry_points);
	     i++)
		if (!dlsym(plugin, entry_points[i])) {
			fprintf(stderr, "ibvf-dlopen: no %s\n",
				entry_points[i]);
			missing++;
		}
	printf("%s: gres/ibvf for Slurm %#x, %zu symbols resolved\n", argv[2],
	       *version, sizeof(entry_points) / sizeof(*entry_points));
	return missing ? 1 : 0;
}
