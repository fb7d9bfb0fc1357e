/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mpi/pmix's PMIx library, beside Slurm's plugins. */
#include "config.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "slurm/compat.h"
#include "slurm/slurmconf.h"
#include "core/strutil.h"

/* Slurm's mpi/pmix plugin (mpi_pmix_vN.so, N the PMIx Debian built it
 * with: 4 in 12, 5 in 13) dlopens its PMIx library from beside the
 * plugins' directory, LIBDIR/pmix2/lib, and no Slurm package pulls that
 * in everywhere (22.05's libpmix.so is libpmix-dev's): without it srun
 * --mpi=pmix fails, on the host and in VMs alike. */
void check_pmix(struct checker *c, const struct slurmconf *sc, uint32_t release)
{
	const char *dirs = slurmconf_get(sc, "PluginDir") ?: SLURM_PLUGINDIR;
	struct slurm_pmix_library pmix = slurm_pmix_library(release);
	_cleanup_strv_free_ char **dirv = NULL;
	char fix[256], rel[16];

	if (strv_split(dirs, ':', &dirv) < 0)
		return;
	slurm_release_str(release, rel, sizeof(rel));
	for (size_t i = 0; dirv[i]; i++) {
		_cleanup_free_ char *pattern = NULL, *lib = NULL;
		char *slash;
		struct stat st;
		glob_t gl;

		if (asprintf(&pattern, "%s/mpi_pmix_v*.so", dirv[i]) < 0 ||
		    !(lib = strdup(dirv[i])))
			return;
		if (glob(pattern, 0, NULL, &gl) != 0)
			continue;
		slash = strrchr(lib, '/');
		if (slash)
			*slash = '\0';
		free(pattern);
		pattern = NULL;
		if (asprintf(&pattern, "%s/pmix2/lib/%s", lib, pmix.file) < 0) {
			globfree(&gl);
			return;
		}
		snprintf(fix, sizeof(fix),
			 "install %s on every node (apt-get install %s)",
			 pmix.package, pmix.package);
		if (stat(pattern, &st) == 0)
			check_ok("srun --mpi=pmix: %s is there", pattern);
		else
			check_problem(c, fix,
				      "%s opens %s, which is missing (Slurm "
				      "%s): srun --mpi=pmix (Open MPI) fails "
				      "on the host and in VMs",
				      gl.gl_pathv[0], pattern, rel);
		globfree(&gl);
		return;
	}
}
