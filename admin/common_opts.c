/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common_opts.h"
#include "core/log.h"

/* Paths on the command line may be relative to the working directory. */
static int set_key(struct vmconf *conf, const char *key, const char *value)
{
	_cleanup_free_ char *item = NULL, *cwd = NULL;

	if (value[0] != '/') {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return log_errno(errno, "getcwd");
	}
	if (asprintf(&item, "%s=%s%s%s", key, cwd ? cwd : "", cwd ? "/" : "",
		     value) < 0)
		return -ENOMEM;
	return vmconf_set(conf, item, "command line");
}

int admin_load_config(struct vmconf *conf, const char *path, const char *sysfs,
		      const char *topology, char *const *sets)
{
	_cleanup_free_ char *def = NULL;
	int r;

	if (!path) {
		def = vmconf_default_path();
		if (def && access(def, F_OK) == 0)
			path = def;
	}
	r = vmconf_load(conf, path);
	if (r < 0)
		return r;
	if (sysfs && (r = set_key(conf, "SysfsRoot", sysfs)) < 0)
		goto fail;
	if (topology && (r = set_key(conf, "TopologyFile", topology)) < 0)
		goto fail;
	for (size_t i = 0; sets && sets[i]; i++)
		if ((r = vmconf_set(conf, sets[i], "--set")) < 0)
			goto fail;
	return 0;
fail:
	vmconf_free(conf);
	return r;
}

int admin_require_root(const char *cmd)
{
	if (geteuid() == 0)
		return 0;
	log_error("%s needs root: StateDir and libvirt's qemu:///system are "
		  "root's (run it with sudo)",
		  cmd);
	return -EPERM;
}
