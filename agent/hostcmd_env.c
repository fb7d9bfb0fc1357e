/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which of the guest's environment a host command gets (hostcmd_env.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "hostcmd_env.h"
#include "macro.h"

/* The option variables of the Slurm commands a script can run. */
static const char *const allowed_prefixes[] = {
	"SLURM_", "SBATCH_", "SRUN_",  "SALLOC_",  "SQUEUE_",
	"SINFO_", "SACCT_",  "SSTAT_", "SCANCEL_", "SCONTROL_",
};

/* Within them, those that name what the command loads or runs on the
 * host: where its configuration (and so its plugins) comes from
 * (SLURM_CONF, SLURM_CONF_SERVER, SLURM_CONF_OUT), the programs srun and
 * slurmstepd run around a step, and an OCI bundle the step's container
 * runtime runs. A name is refused when it starts with one of these. */
static const char *const refused_prefixes[] = {
	"SLURM_CONF",	     "SLURM_PROLOG",	  "SLURM_EPILOG",
	"SLURM_TASK_PROLOG", "SLURM_TASK_EPILOG", "SLURM_CONTAINER",
};

static bool has_prefix(const char *s, size_t len, const char *const *prefixes,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t plen = strlen(prefixes[i]);

		if (len >= plen && !strncmp(s, prefixes[i], plen))
			return true;
	}
	return false;
}

static bool is_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

bool hostcmd_env_allowed(const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t len;

	if (!eq)
		return false;
	len = (size_t)(eq - entry);
	for (size_t i = 0; i < len; i++)
		if (!is_name_char(entry[i]))
			return false;
	if (!has_prefix(entry, len, allowed_prefixes,
			ARRAY_SIZE(allowed_prefixes)) ||
	    has_prefix(entry, len, refused_prefixes,
		       ARRAY_SIZE(refused_prefixes)))
		return false;
	for (const char *v = eq + 1; *v; v++)
		if (*v < 0x20 || *v > 0x7e ||
		    (size_t)(v - eq) > HOSTCMD_ENV_VALUE_MAX)
			return false;
	return true;
}

/* The index in @env[0..n) of the entry with @entry's name, or n. */
static size_t env_find(char *const *env, size_t n, const char *entry)
{
	size_t len = (size_t)(strchr(entry, '=') - entry) + 1;

	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], entry, len))
			return i;
	return n;
}

char **hostcmd_env_build(char *const *host, char *const *guest)
{
	size_t nhost = 0, nguest = 0, n;
	char **env;

	while (host && host[nhost])
		nhost++;
	while (guest && guest[nguest])
		nguest++;
	env = calloc(nhost + nguest + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (n = 0; n < nhost; n++)
		env[n] = host[n];
	for (size_t i = 0; i < nguest; i++) {
		size_t at;

		if (!hostcmd_env_allowed(guest[i]))
			continue;
		at = env_find(env, n, guest[i]);
		env[at] = guest[i];
		if (at == n)
			n++;
	}
	return env;
}
