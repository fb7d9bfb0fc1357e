/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * slurm.conf as Slurm's daemons read it (src/common/parse_config.c), for
 * what slurm-vm needs of it: the global "Key=Value" settings, keys
 * case-insensitive, the last line of a key winning. '#' starts a comment
 * (not "\#"), a line ending in '\' goes on, a value may be "quoted", '='
 * may have blanks around it. "Include FILE" reads FILE at that point: a
 * relative FILE as @release resolves it (slurm_include_from_conf_dir()),
 * %c is ClusterName in lower case; a missing FILE, or one with '*' (no
 * release expands it), is an error, as slurmctld refuses to start. Node,
 * partition and node set lines are not global settings: their attributes
 * are kept apart (slurmconf_node_get()).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slurm/compat.h"

struct slurmconf_entry {
	char *key;
	char *value;
	unsigned record; /* 0: a global setting; else its record line's */
};

struct slurmconf {
	struct slurmconf_entry *v; /* every setting, in the order read */
	size_t n, cap;
	unsigned records; /* node, partition, ... lines read */
};

/* @path as Slurm @release reads it; errors name FILE:LINE. */
int slurmconf_read_release(const char *path, uint32_t release,
			   struct slurmconf *sc);
/* @path as the release slurm-vm is built against reads it. */
int slurmconf_read(const char *path, struct slurmconf *sc);
void slurmconf_free(struct slurmconf *sc);

/* The value of @key's last line, or NULL. */
const char *slurmconf_get(const struct slurmconf *sc, const char *key);
/* Each value of @key in the order read: the first at *@pos = 0; NULL
 * after the last. */
const char *slurmconf_next(const struct slurmconf *sc, const char *key,
			   size_t *pos);

/* @key of node @node as its NodeName= lines set it (a hostlist holding
 * @node, or NodeName=DEFAULT before it), or NULL. */
const char *slurmconf_node_get(const struct slurmconf *sc, const char *node,
			       const char *key);

enum slurm_script { SLURM_PROLOG, SLURM_EPILOG };

/* Does slurmd of @release run a script named @name (its last path
 * component) as the Prolog (Epilog)? Several Prolog= lines are each a
 * script from 24.05, the last alone before. The scripts it runs are in
 * @found ("" when none), as the admin wrote them. */
bool slurmconf_runs_script(const struct slurmconf *sc, uint32_t release,
			   enum slurm_script which, const char *name,
			   char *found, size_t found_size);

#define SLURMCONF_TIMEOUT_UNLIMITED 65534u

/* The seconds slurmd of @release gives the Prolog (Epilog) before it
 * kills it, SLURMCONF_TIMEOUT_UNLIMITED when it waits for ever, and in
 * *@key the setting that says so (NULL: the default). -EINVAL when that
 * setting is not a number. */
int slurmconf_script_timeout(const struct slurmconf *sc, uint32_t release,
			     enum slurm_script which, unsigned *secs,
			     const char **key);
