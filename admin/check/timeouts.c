/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Prolog's and Epilog's timeouts against the guests' boot and shutdown. */
#include "config.h"

#include <stdio.h>

#include "check.h"
#include "slurm/compat.h"
#include "slurm/slurmconf.h"
#include "job/vmconf.h"

/* Margin for everything but the boot: plan, overlay, define, relay. */
#define PROLOG_MARGIN_S 60

/* The Prolog boots the guests and, when one fails, shuts them down:
 * BootTimeout + ShutdownTimeout + PROLOG_MARGIN_S. BootTimeout bounds the
 * whole boot, a warm start's template, restore and cold fallback
 * included (prolog/boot.c's deadline; its watchdog's slack is within the
 * margin). The Epilog shuts them
 * down: ShutdownTimeout + PROLOG_MARGIN_S. From 25.05 each has its own
 * timeout (PrologTimeout, EpilogTimeout over PrologEpilogTimeout). */
static void check_timeout(struct checker *c, const struct slurmconf *sc,
			  const struct vmconf *vc, uint32_t release,
			  enum slurm_script which)
{
	bool prolog = which == SLURM_PROLOG;
	unsigned need = vc->shutdown_timeout + PROLOG_MARGIN_S, have;
	const char *key, *name = prolog ? "Prolog" : "Epilog";
	char fix[160], parts[128];

	if (prolog)
		need += vc->boot_timeout;
	if (slurmconf_script_timeout(sc, release, which, &have, &key) < 0) {
		check_problem(c, "a number of seconds, at most 65535",
			      "%s=%s is not a number: slurmctld and slurmd "
			      "refuse to start",
			      key, slurmconf_get(sc, key));
		return;
	}
	if (have == SLURMCONF_TIMEOUT_UNLIMITED) {
		check_ok("%s timeout unlimited (%s); %s still bounds it", name,
			 key ? key : "no PrologEpilogTimeout",
			 prolog ? "BootTimeout" : "ShutdownTimeout");
		return;
	}
	if (prolog)
		snprintf(parts, sizeof(parts),
			 "BootTimeout (%u, the whole boot: a warm start "
			 "and its cold fallback too) + ShutdownTimeout (%u) "
			 "+ %us",
			 vc->boot_timeout, vc->shutdown_timeout,
			 PROLOG_MARGIN_S);
	else
		snprintf(parts, sizeof(parts), "ShutdownTimeout (%u) + %us",
			 vc->shutdown_timeout, PROLOG_MARGIN_S);
	if (have >= need) {
		check_ok("%s=%u covers the %s's %s", key, have, name, parts);
		return;
	}
	snprintf(fix, sizeof(fix), "%s=%u or more, or a smaller %s in vm.conf",
		 key, need, prolog ? "BootTimeout" : "ShutdownTimeout");
	check_problem(c, fix, "%s=%u is less than %s: %s", key, have, parts,
		      prolog ? "a slow boot would drain the node and requeue "
			       "the job"
			     : "a guest slow to shut down would drain the "
			       "node");
}

void check_timeouts(struct checker *c, const struct slurmconf *sc,
		    const struct vmconf *vc, uint32_t release)
{
	check_timeout(c, sc, vc, release, SLURM_PROLOG);
	/* One setting for both (before 25.05): the Prolog's need is more. */
	if (slurm_has_script_timeouts(release))
		check_timeout(c, sc, vc, release, SLURM_EPILOG);
}
