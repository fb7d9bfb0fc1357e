/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugstack.conf arguments, parsed strictly: a typo is an error, not a
 * silently ignored setting. */
#include "config.h"

#include <string.h>

#include "core/log.h"
#include "spank_vm.h"

struct plugin_args plugin_args;

int plugin_args_parse(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		if (strncmp(av[i], "config=", 7) == 0) {
			if (av[i][7] != '/') {
				log_error(
					"plugstack.conf: config=%s must be an absolute path",
					av[i] + 7);
				return -EINVAL;
			}
			free(plugin_args.config);
			plugin_args.config = strdup(av[i] + 7);
			if (!plugin_args.config)
				return -ENOMEM;
			continue;
		}
		log_error(
			"plugstack.conf: unknown argument '%s' (known: config=PATH); see spank_vm(8)",
			av[i]);
		return -EINVAL;
	}
	return 0;
}
