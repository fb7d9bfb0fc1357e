/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which of the guest's environment a host command gets (hostcmd_env.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostcmd_env.h"
#include "core/macro.h"
#include "channel/proto.h"
#include "core/strutil.h"

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

static bool is_printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

enum hostcmd_env_kind hostcmd_env_kind(const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t len, vlen;

	if (!eq || eq == entry || (entry[0] >= '0' && entry[0] <= '9'))
		return HOSTCMD_ENV_REFUSED;
	len = (size_t)(eq - entry);
	for (size_t i = 0; i < len; i++)
		if (!is_name_char(entry[i]))
			return HOSTCMD_ENV_REFUSED;
	vlen = strlen(eq + 1);
	if (!strncmp(entry, PROTO_ENV_GUEST_PREFIX,
		     strlen(PROTO_ENV_GUEST_PREFIX)) ||
	    has_prefix(entry, len, refused_prefixes,
		       ARRAY_SIZE(refused_prefixes)))
		return HOSTCMD_ENV_REFUSED;
	if (!has_prefix(entry, len, allowed_prefixes,
			ARRAY_SIZE(allowed_prefixes)))
		return vlen <= HOSTCMD_ENV_GUEST_VALUE_MAX
			       ? HOSTCMD_ENV_GUEST
			       : HOSTCMD_ENV_REFUSED;
	/* srun and the like read these, and print some to a terminal. */
	return vlen <= HOSTCMD_ENV_VALUE_MAX && is_printable(eq + 1)
		       ? HOSTCMD_ENV_OPTION
		       : HOSTCMD_ENV_REFUSED;
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

/* @entry as the host command gets it, malloc'd; NULL without memory. */
static char *env_entry(const char *entry, enum hostcmd_env_kind kind)
{
	char *s;

	if (kind == HOSTCMD_ENV_OPTION)
		return strdup(entry);
	return asprintf(&s, PROTO_ENV_GUEST_PREFIX "%s", entry) < 0 ? NULL : s;
}

char **hostcmd_env_build(char *const *host, char *const *guest)
{
	_cleanup_strv_free_ char **env = NULL;
	size_t nhost = 0, nguest = 0, n;

	while (host && host[nhost])
		nhost++;
	while (guest && guest[nguest])
		nguest++;
	env = calloc(nhost + nguest + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (n = 0; n < nhost; n++)
		if (!(env[n] = strdup(host[n])))
			return NULL;
	for (size_t i = 0; i < nguest; i++) {
		enum hostcmd_env_kind kind = hostcmd_env_kind(guest[i]);
		char *entry;
		size_t at;

		if (kind == HOSTCMD_ENV_REFUSED)
			continue;
		entry = env_entry(guest[i], kind);
		if (!entry)
			return NULL;
		at = env_find(env, n, entry);
		free(env[at]);
		env[at] = entry;
		if (at == n)
			n++;
	}
	return TAKE_PTR(env);
}
