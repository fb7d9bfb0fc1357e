/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm.conf's settings slurm-vm needs: the Prolog and Epilog, PrologFlags,
 * SlurmdSpoolDir, and what scheduling and submission need (whole cores,
 * GresTypes, the cli_filter).
 */
#include "config.h"

#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "slurm/compat.h"
#include "slurm/slurmconf.h"
#include "core/strutil.h"
#include "job/vmconf.h"

/* The Prolog (Epilog) slurmd runs is ours: 24.05 runs each Prolog= line's
 * script, 22.05 the last line's alone. */
static void check_script(struct checker *c, const struct slurmconf *sc,
			 uint32_t release, enum slurm_script which)
{
	bool prolog = which == SLURM_PROLOG;
	const char *key = prolog ? "Prolog" : "Epilog";
	const char *name = prolog ? "slurm-vm-prolog" : "slurm-vm-epilog";
	char found[1024], fix[256], rel[16];

	slurm_release_str(release, rel, sizeof(rel));
	if (slurmconf_runs_script(sc, release, which, name, found,
				  sizeof(found))) {
		check_ok("%s=%s", key, found);
		return;
	}
	if (slurm_scripts_accumulate(release))
		snprintf(fix, sizeof(fix),
			 "add a line %s=/usr/sbin/%s (Slurm %s runs the "
			 "script of every %s= line)",
			 key, name, rel, key);
	else
		snprintf(
			fix, sizeof(fix),
			"%s=/usr/sbin/%s as the last %s= line (Slurm %s runs "
			"the last one's alone), or a script there that runs it",
			key, name, key, rel);
	check_problem(c, fix, "%s is %s, not %s: %s", key,
		      found[0] ? found : "not set", name,
		      prolog ? "no guest is ever booted"
			     : "guests and devices of ended jobs are never "
			       "returned");
}

/* @flags without RunInJob, with the Contain it implied: the fix. */
static void flags_without_run_in_job(const char *flags, char *out, size_t size)
{
	_cleanup_strv_free_ char **v = NULL;
	size_t used = 0;

	out[0] = '\0';
	if (strv_split(flags, ',', &v) < 0)
		return;
	for (char **p = v; *p; p++)
		if (**p && strcasecmp(*p, "RunInJob") && used < size)
			used += (size_t)snprintf(out + used, size - used,
						 "%s%s", used ? "," : "", *p);
	if (!list_has(out, "Contain") && used < size)
		snprintf(out + used, size - used, "%sContain", used ? "," : "");
}

/* PrologFlags as slurmctld of @release reads it: Alloc set (Contain, X11,
 * NoHold, ForceRequeueOnFail, RunInJob and from 26.05 DeferBatch imply
 * it), and no RunInJob: it runs the Prolog and Epilog in the job's extern
 * slurmstepd, and slurm-vm-prolog puts its reason on the node it drains
 * only when slurmd itself runs it. */
static void check_prolog_flags(struct checker *c, const struct slurmconf *sc,
			       uint32_t release)
{
	const char *flags = slurmconf_get(sc, "PrologFlags");
	char bad[64], fix[512], rel[16], without[256];
	unsigned bits;

	slurm_release_str(release, rel, sizeof(rel));
	if (slurm_prolog_flags_parse(flags, release, &bits, bad, sizeof(bad)) <
	    0) {
		snprintf(fix, sizeof(fix), "remove %s from PrologFlags", bad);
		check_problem(c, fix,
			      "PrologFlags=%s: Slurm %s has no flag %s: "
			      "slurmctld and slurmd refuse to start",
			      flags, rel, bad);
	} else if (bits & SLURM_PROLOG_RUN_IN_JOB) {
		flags_without_run_in_job(flags, without, sizeof(without));
		snprintf(fix, sizeof(fix),
			 "PrologFlags=%s (RunInJob's Contain and Alloc, "
			 "without RunInJob)",
			 without);
		check_problem(c, fix,
			      "PrologFlags=%s has RunInJob: the Prolog runs "
			      "in the job's extern slurmstepd, not slurmd, and "
			      "slurm-vm-prolog then cannot say why it drains "
			      "a node (the node shows \"Prolog error\" alone)",
			      flags);
	} else if (!(bits & SLURM_PROLOG_ALLOC)) {
		check_problem(c, "PrologFlags=Alloc (keep any other flags)",
			      "PrologFlags=%s lacks Alloc: the batch script "
			      "would start before the guests are ready",
			      flags ? flags : "");
	} else {
		check_ok("PrologFlags=%s sets Alloc", flags);
	}
}

void check_scripts(struct checker *c, const struct slurmconf *sc,
		   uint32_t release)
{
	check_script(c, sc, release, SLURM_PROLOG);
	check_script(c, sc, release, SLURM_EPILOG);
	check_prolog_flags(c, sc, release);
}

void check_scheduling(struct checker *c, const struct slurmconf *sc)
{
	const char *sel = slurmconf_get(sc, "SelectTypeParameters");
	const char *gres = slurmconf_get(sc, "GresTypes");
	const char *cli = slurmconf_get(sc, "CliFilterPlugins");
	_cleanup_free_ char *lua = slurm_conf_sibling("cli_filter.lua");
	struct stat st;
	char fix[1024];

	if (sel && (strncasecmp(sel, "CR_Core", 7) == 0 ||
		    strncasecmp(sel, "CR_Socket", 9) == 0))
		check_ok("SelectTypeParameters=%s gives whole cores", sel);
	else
		check_problem(
			c, "SelectTypeParameters=CR_Core_Memory",
			"SelectTypeParameters=%s: a VM needs whole cores, or SMT siblings end up in two jobs",
			sel ? sel : "not set");
	if (list_has(gres, "gpu") && list_has(gres, "ibvf"))
		check_ok("GresTypes=%s", gres);
	else
		check_problem(
			c,
			"GresTypes=gpu,ibvf (with gres.conf from `slurm-vm gres`)",
			"GresTypes=%s lacks gpu or ibvf: those devices cannot be allocated",
			gres ? gres : "");
	if (list_has(cli, "cli_filter/lua") && lua && stat(lua, &st) == 0)
		check_ok("CliFilterPlugins=%s with %s", cli, lua);
	else {
		snprintf(fix, sizeof(fix),
			 "CliFilterPlugins=cli_filter/lua in slurm.conf, and "
			 "cp %s/cli_filter.lua %s",
			 EXAMPLES_DIR, lua ?: "/etc/slurm/cli_filter.lua");
		check_problem(
			c, fix,
			"no cli_filter/lua with slurm-vm's cli_filter.lua: VM jobs do not get --gres-flags=enforce-binding and impossible --vm-cpus/--vm-mem are not refused at submit");
	}
}

/* SlurmdSpoolDir with slurmd's %n (node name) and %h (host name). */
static char *spool_dir_expand(const char *pattern, const char *node)
{
	char host[HOST_NAME_MAX + 1], *out = NULL;
	size_t len = 0;
	_cleanup_fclose_ FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	for (const char *p = pattern; *p; p++) {
		if (p[0] == '%' && p[1] == 'n')
			fputs(node, f), p++;
		else if (p[0] == '%' && p[1] == 'h')
			fputs(host, f), p++;
		else
			fputc(*p, f);
	}
	if (fclose(f) != 0) {
		f = NULL;
		free(out);
		return NULL;
	}
	f = NULL;
	return out;
}

/* slurmd writes the node's topology (hwloc_topo_whole.xml) into its spool
 * directory before it creates the directory: at the first start a missing
 * one fails the topology, and the prolog, which reads it, refuses jobs.
 * slurmd runs as SlurmdUser (root) and needs the directory for itself. */
void check_spool_dir(struct checker *c, const struct slurmconf *sc,
		     const char *node)
{
	const char *pattern =
		slurmconf_get(sc, "SlurmdSpoolDir") ?: "/var/spool/slurmd";
	const char *user = slurmconf_get(sc, "SlurmdUser") ?: "root";
	_cleanup_free_ char *dir = spool_dir_expand(pattern, node);
	struct passwd *pw = getpwnam(user);
	char fix[1024];
	struct stat st;

	if (!dir)
		return;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(fix, sizeof(fix),
			 "mkdir -p %s && chown %s: %s && chmod 0755 %s", dir,
			 user, dir, dir);
		check_problem(
			c, fix,
			"SlurmdSpoolDir=%s: %s is not a directory: slurmd "
			"cannot write the node's topology there at its "
			"first start, and the prolog refuses VM jobs "
			"without it",
			pattern, dir);
	} else if (pw && st.st_uid != pw->pw_uid) {
		snprintf(fix, sizeof(fix), "chown -R %s: %s && chmod 0755 %s",
			 user, dir, dir);
		check_problem(c, fix,
			      "SlurmdSpoolDir=%s: %s is not owned by "
			      "SlurmdUser %s: another user could replace the "
			      "topology the prolog places guests by",
			      pattern, dir, user);
	} else {
		check_ok("SlurmdSpoolDir=%s: %s is %s's", pattern, dir, user);
	}
}
