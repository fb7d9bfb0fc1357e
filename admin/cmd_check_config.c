/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm check-config: reads slurm.conf, gres.conf, plugstack.conf and
 * vm.conf as this node's daemons will, and reports every setting that breaks
 * what slurm-vm needs, with the fix. Exit 0: nothing to fix; 1: problems.
 */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <glob.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "hw/devices.h"
#include "slurm/compat.h"
#include "slurm/gresconf.h"
#include "slurm/slurmconf.h"
#include "hw/ibpart.h"
#include "hw/placement.h"
#include "job/image.h"
#include "job/share_transport.h"
#include "net/jobnet.h"
#include "core/log.h"
#include "hw/slurm_map.h"
#include "core/strutil.h"
#include "job/user.h"
#include "job/vmconf.h"

/* Margin for everything but the boot: plan, overlay, define, relay. */
#define PROLOG_MARGIN_S 60
struct checker {
	unsigned problems;
	const char *slurm_conf_path;
};

static void check_ok(const char *fmt, ...) _printf_(1, 2);
static void check_ok(const char *fmt, ...)
{
	va_list ap;

	printf("ok:      ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void check_problem(struct checker *c, const char *fix, const char *fmt,
			  ...) _printf_(3, 4);
static void check_problem(struct checker *c, const char *fix, const char *fmt,
			  ...)
{
	va_list ap;

	printf("problem: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n         fix: %s\n", fix);
	c->problems++;
}

/* A line that @label says and its @fix: not counted. */
static void check_say(const char *label, const char *fix, const char *fmt,
		      va_list ap)
{
	printf("%-9s", label);
	vprintf(fmt, ap);
	printf("\n         fix: %s\n", fix);
}

/* Worth the admin's look, but the suite works: not counted. */
static void check_warn(const char *fix, const char *fmt, ...) _printf_(2, 3);
static void check_warn(const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_say("warning:", fix, fmt, ap);
	va_end(ap);
}

/* What the admin should know, not a fault: not counted. */
static void check_note(const char *fix, const char *fmt, ...) _printf_(2, 3);
static void check_note(const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_say("note:", fix, fmt, ap);
	va_end(ap);
}

/* Is @item one of the comma-separated words of @list (case-insensitive)? */
static bool list_has(const char *list, const char *item)
{
	_cleanup_strv_free_ char **v = NULL;

	if (!list || strv_split(list, ',', &v) < 0)
		return false;
	for (char **p = v; *p; p++)
		if (strcasecmp(*p, item) == 0)
			return true;
	return false;
}

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

static void check_scripts(struct checker *c, const struct slurmconf *sc,
			  uint32_t release)
{
	check_script(c, sc, release, SLURM_PROLOG);
	check_script(c, sc, release, SLURM_EPILOG);
	check_prolog_flags(c, sc, release);
}

/* The guest's processes are adopted into the job's extern step (issue
 * #29, doc/design-notes-29.md section 4): what accounting and the job's
 * cgroups will and will not see with this node's slurm.conf and
 * cgroup.conf (beside it, read as Slurm reads it; none: Slurm's
 * defaults). */
#define UNKILLABLE_VFIO_MIN_S 180

static bool plugin_listed(const char *list, const char *plugin)
{
	return list_has(list, plugin) ||
	       list_has(list, strchr(plugin, '/') + 1);
}

static void check_adoption_plugins(const struct slurmconf *sc, uint32_t release)
{
	const char *flags = slurmconf_get(sc, "PrologFlags");
	const char *proctrack =
		slurmconf_get(sc, "ProctrackType") ?: "proctrack/cgroup";
	const char *task = slurmconf_get(sc, "TaskPlugin") ?: "task/none";
	char bad[64];
	unsigned bits;

	if (slurm_prolog_flags_parse(flags, release, &bits, bad, sizeof(bad)) ==
		    0 &&
	    !(bits & SLURM_PROLOG_CONTAIN))
		check_note("PrologFlags=Contain (keep the other flags)",
			   "PrologFlags=%s lacks Contain: the guest stays "
			   "outside the job, accounting and cgroup limits "
			   "never see it",
			   flags ?: "");
	if (strcasecmp(proctrack, "proctrack/cgroup"))
		check_note("ProctrackType=proctrack/cgroup",
			   "ProctrackType=%s: adopting the guest counts and "
			   "kills nothing (it is not in the job's container)",
			   proctrack);
	if (!plugin_listed(task, "task/cgroup"))
		check_note("add task/cgroup to TaskPlugin",
			   "TaskPlugin=%s lacks task/cgroup: the guest is "
			   "counted but not constrained (ConstrainRAMSpace, "
			   "ConstrainCores do not apply)",
			   task);
}

/* jobacct_gather/cgroup's MaxRSS on cgroup v1 is memory.stat total_rss,
 * without shmem: a virtiofs guest's RAM is a memfd. */
static void check_adoption_accounting(const struct slurmconf *sc,
				      const struct slurmconf *cg)
{
	const char *gather =
		slurmconf_get(sc, "JobAcctGatherType") ?: "jobacct_gather/none";
	const char *storage = slurmconf_get(sc, "AccountingStorageType")
				      ?: "accounting_storage/none";
	const char *cgplugin = slurmconf_get(cg, "CgroupPlugin") ?: "";

	if (strcasecmp(gather, "jobacct_gather/cgroup") == 0)
		check_ok("JobAcctGatherType=%s: the guest's MaxRSS is its "
			 "cgroup's RSS%s; RAM charged before adoption "
			 "(VFIO-pinned) is not in it",
			 gather,
			 strcasecmp(cgplugin, "cgroup/v1") == 0
				 ? " (cgroup v1 total_rss: without shmem, so "
				   "without a virtiofs guest's memfd RAM)"
				 : "");
	else if (strcasecmp(gather, "jobacct_gather/linux") == 0)
		check_ok("JobAcctGatherType=%s: the guest's MaxRSS is its "
			 "processes' RSS, VFIO-pinned RAM included, hugetlb "
			 "pages not",
			 gather);
	else
		check_note("JobAcctGatherType=jobacct_gather/cgroup (or "
			   "jobacct_gather/linux)",
			   "JobAcctGatherType=%s: nothing of the guest (CPU, "
			   "memory) is counted",
			   gather);
	if (strcasecmp(storage, "accounting_storage/slurmdbd"))
		check_note("AccountingStorageType=accounting_storage/slurmdbd "
			   "(with a slurmdbd) for sacct",
			   "AccountingStorageType=%s: sacct shows no job, the "
			   "guests' neither",
			   storage);
}

static void check_adoption_limits(const struct slurmconf *sc,
				  const struct slurmconf *cg,
				  const struct vmconf *vc, const char *node)
{
	const char *launch = slurmconf_get(sc, "LaunchParameters");
	const char *text = slurmconf_get(sc, "UnkillableStepTimeout");
	const char *cores = slurmconf_get(cg, "ConstrainCores");
	const char *spec =
		slurmconf_node_get(sc, node, "CpuSpecList")
			?: slurmconf_node_get(sc, node, "CoreSpecCount");
	unsigned unkillable = 60;
	char fix[128];

	if (list_has(launch, "ulimit_pam_adopt"))
		check_warn("remove ulimit_pam_adopt from LaunchParameters",
			   "LaunchParameters=%s: the adopted qemu gets the "
			   "job's resource limits; VFIO passthrough needs "
			   "RLIMIT_MEMLOCK unlimited",
			   launch);
	if (text && str_to_uint(text, &unkillable) < 0)
		unkillable = 60;
	if (vc->device_attach == DEVICE_ATTACH_VFIO &&
	    unkillable < UNKILLABLE_VFIO_MIN_S) {
		snprintf(fix, sizeof(fix), "UnkillableStepTimeout=%u",
			 UNKILLABLE_VFIO_MIN_S);
		check_warn(fix,
			   "UnkillableStepTimeout=%u%s with DeviceAttach=vfio: "
			   "a passthrough qemu's exit (unpinning its RAM) can "
			   "take longer, and Slurm drains the node \"Kill task "
			   "failed\"",
			   unkillable, text ? "" : " (the default)");
	}
	if (cores && spec &&
	    (strcasecmp(cores, "yes") == 0 || strcasecmp(cores, "true") == 0))
		check_note("nothing to change; budget the job's cores for it",
			   "ConstrainCores=yes with core specialization: the "
			   "guest's emulator and I/O threads leave the "
			   "housekeeping cores and run on the job's cores");
}

/* Huge pages in the node's pool (--vm-hugepages): hugetlb guest RAM is
 * charged to no memory cgroup of the job. */
static void check_adoption_hugepages(const struct vmconf *vc)
{
	_cleanup_free_ char *pattern = NULL;
	unsigned long total = 0;
	glob_t gl;

	if (asprintf(&pattern, "%s/kernel/mm/hugepages/*/nr_hugepages",
		     vc->sysfs_root) < 0 ||
	    glob(pattern, 0, NULL, &gl) != 0)
		return;
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		_cleanup_fclose_ FILE *f = fopen(gl.gl_pathv[i], "re");
		unsigned long n = 0;

		if (f && fscanf(f, "%lu", &n) == 1)
			total += n;
	}
	globfree(&gl);
	if (total)
		check_note("size the pool outside RealMemory/MemSpecLimit: "
			   "Slurm limits none of it",
			   "%lu huge pages in this node's pool: a "
			   "--vm-hugepages guest's RAM is not in the job's "
			   "memory cgroup nor its MaxRSS",
			   total);
}

static void check_adoption(const struct slurmconf *sc, const struct vmconf *vc,
			   uint32_t release, const char *node)
{
	_cleanup_free_ char *path = slurm_conf_sibling("cgroup.conf");
	struct slurmconf cg = { 0 };

	if (path && access(path, F_OK) == 0 && slurmconf_read(path, &cg) < 0)
		check_warn("correct the line named above",
			   "%s does not parse: its settings are not checked",
			   path);
	check_adoption_plugins(sc, release);
	check_adoption_accounting(sc, &cg);
	check_adoption_limits(sc, &cg, vc, node);
	check_adoption_hugepages(vc);
	slurmconf_free(&cg);
}

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

static void check_timeouts(struct checker *c, const struct slurmconf *sc,
			   const struct vmconf *vc, uint32_t release)
{
	check_timeout(c, sc, vc, release, SLURM_PROLOG);
	/* One setting for both (before 25.05): the Prolog's need is more. */
	if (slurm_has_script_timeouts(release))
		check_timeout(c, sc, vc, release, SLURM_EPILOG);
}

static void check_scheduling(struct checker *c, const struct slurmconf *sc)
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

/* plugstack.conf as Slurm 22.05's plugstack.c reads it: '#' ends a line;
 * "include PATTERN" reads each glob(3) match in turn, a relative PATTERN
 * from the including file's directory, and a missing file is an empty
 * one; a relative plugin is looked for in PluginDir. */
#define PLUGSTACK_DEPTH_MAX 8

struct plugstack_scan {
	const char *plugin_dirs; /* PluginDir: colon-separated */
	char *spank_line;	 /* "FILE:LINE" of the spank_vm.so line */
	char *spank_plugin;	 /* its plugin as written */
	char *spank_found;	 /* where slurmd finds it, or NULL */
	char *include_pattern;	 /* the first include, absolute */
	bool too_deep;
};

/* Where slurmd finds @plugin: as is when absolute, else the first of
 * PluginDir's directories that has it. NULL when nowhere. */
static char *plugin_locate(const char *plugin_dirs, const char *plugin)
{
	_cleanup_strv_free_ char **dirv = NULL;

	if (plugin[0] == '/')
		return access(plugin, R_OK) == 0 ? strdup(plugin) : NULL;
	if (strv_split(plugin_dirs, ':', &dirv) < 0)
		return NULL;
	for (size_t i = 0; dirv[i]; i++) {
		char *path = NULL;

		if (asprintf(&path, "%s/%s", dirv[i], plugin) < 0)
			return NULL;
		if (access(path, R_OK) == 0)
			return path;
		free(path);
	}
	return NULL;
}

static void plugstack_scan_file(struct plugstack_scan *ps, const char *path,
				unsigned depth);

static void plugstack_include(struct plugstack_scan *ps, const char *file,
			      const char *pattern, unsigned depth)
{
	_cleanup_free_ char *dir = strdup(file), *abs = NULL;
	glob_t gl;

	if (!dir)
		return;
	if (pattern[0] != '/') {
		if (asprintf(&abs, "%s/%s", dirname(dir), pattern) < 0)
			return;
		pattern = abs;
	}
	if (!ps->include_pattern)
		ps->include_pattern = strdup(pattern);
	if (glob(pattern, 0, NULL, &gl) != 0)
		return; /* no match is nothing to load, as for slurmd */
	for (size_t i = 0; i < gl.gl_pathc; i++)
		plugstack_scan_file(ps, gl.gl_pathv[i], depth + 1);
	globfree(&gl);
}

static void plugstack_scan_file(struct plugstack_scan *ps, const char *path,
				unsigned depth)
{
	_cleanup_fclose_ FILE *f = NULL;
	char line[4096];
	unsigned lineno = 0;

	if (depth > PLUGSTACK_DEPTH_MAX) {
		ps->too_deep = true;
		return;
	}
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *save = NULL, *kind, *arg, *hash = strchr(line, '#');
		const char *base;

		lineno++;
		if (hash)
			*hash = '\0';
		kind = strtok_r(line, " \t\n", &save);
		arg = kind ? strtok_r(NULL, " \t\n", &save) : NULL;
		if (!arg)
			continue;
		if (strcmp(kind, "include") == 0) {
			plugstack_include(ps, path, arg, depth);
			continue;
		}
		base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
		if ((strcmp(kind, "required") && strcmp(kind, "optional")) ||
		    strcmp(base, "spank_vm.so") || ps->spank_line)
			continue;
		if (asprintf(&ps->spank_line, "%s:%u", path, lineno) < 0)
			ps->spank_line = NULL;
		ps->spank_plugin = strdup(arg);
		ps->spank_found = plugin_locate(ps->plugin_dirs, arg);
	}
}

/* The fix, a command: a file matching plugstack.conf's include (Debian's
 * plugstack.conf.d/\*.conf) when there is one, so Debian's own
 * plugstack.conf stays as shipped; else a line added to plugstack.conf. */
static void plugstack_fix(const struct plugstack_scan *ps, const char *conf,
			  const char *line, char *fix, size_t size)
{
	_cleanup_free_ char *dropin = NULL;
	const char *pattern = ps->include_pattern;
	const char *base = pattern ? strrchr(pattern, '/') : NULL;

	if (base && base[1] == '*' && !strpbrk(base + 2, "*?[") &&
	    asprintf(&dropin, "%.*s/slurm-vm%s", (int)(base - pattern), pattern,
		     base + 2) >= 0 &&
	    fnmatch(pattern, dropin, 0) == 0)
		snprintf(fix, size, "mkdir -p %.*s && echo '%s' > %s",
			 (int)(base - pattern), pattern, line, dropin);
	else
		snprintf(fix, size, "echo '%s' >> %s", line, conf);
}

static void check_plugstack(struct checker *c, const struct slurmconf *sc)
{
	const char *conf = slurmconf_get(sc, "PlugStackConfig");
	_cleanup_free_ char *def = slurm_conf_sibling("plugstack.conf");
	_cleanup_free_ char *found = NULL, *line = NULL;
	const char *so;
	struct plugstack_scan ps = {
		.plugin_dirs =
			slurmconf_get(sc, "PluginDir") ?: SLURM_PLUGINDIR,
	};
	char fix[2048];

	conf = conf ?: def;
	plugstack_scan_file(&ps, conf, 0);
	/* The installed plugin, for the fix: PluginDir's, or where configure
	 * put it. */
	found = plugin_locate(ps.plugin_dirs, "spank_vm.so");
	so = found ?: SLURM_PLUGINDIR "/spank_vm.so";
	if (asprintf(&line, "required %s", so) < 0)
		line = NULL;
	if (ps.too_deep)
		check_problem(
			c,
			"include plugstack.conf files at most 8 deep, and never a file from itself",
			"%s: includes nest deeper than %u: is a file including itself?",
			conf, PLUGSTACK_DEPTH_MAX);
	if (!ps.spank_line) {
		plugstack_fix(&ps, conf, line ?: "", fix, sizeof(fix));
		check_problem(c, fix,
			      "%s does not load spank_vm.so (includes "
			      "followed%s%s): --vm-image does not exist for "
			      "users",
			      conf, ps.include_pattern ? ": " : "",
			      ps.include_pattern ?: "");
	} else if (!ps.spank_found) {
		/* spank_line is FILE:LINE */
		char *colon = strrchr(ps.spank_line, ':');

		*colon = '\0';
		snprintf(fix, sizeof(fix), "sed -i '%ss|%s|%s|' %s", colon + 1,
			 ps.spank_plugin, so, ps.spank_line);
		*colon = ':';
		check_problem(
			c, fix,
			"%s: %s is not there (PluginDir %s): sbatch, srun "
			"and slurmd cannot load this plugin%s",
			ps.spank_line, ps.spank_plugin, ps.plugin_dirs,
			found ? ""
			      : "; nor is spank_vm.so in PluginDir: install slurm-vm-spank");
	} else {
		check_ok("%s loads %s (%s)", conf, ps.spank_found,
			 ps.spank_line);
	}
	free(ps.spank_line);
	free(ps.spank_plugin);
	free(ps.spank_found);
	free(ps.include_pattern);
}

struct gres_check {
	struct checker *c;
	unsigned n, bad;
	uint32_t release;
	const struct topology *topo; /* NULL: Cores= not checked */
};

/* From 24.11 slurmctld refuses a Cores= that splits a socket and drains
 * the node: with NUMA nodes smaller than sockets (SNC, NPS2/4) a NUMA
 * node's cores do. */
static void gres_check_cores(struct gres_check *gc, const char *path,
			     unsigned lineno, const char *name,
			     const char *cores)
{
	_cleanup_free_ char *whole = NULL;
	char fix[512], rel[16];
	int split, r;

	r = gresconf_cores_refused(gc->topo, cores, gc->release, &split,
				   &whole);
	if (r == 0)
		return;
	gc->bad++;
	if (r < 0) {
		check_problem(gc->c,
			      "write Cores= as this node's core ids (Slurm's "
			      "numbering), or regenerate gres.conf with "
			      "`slurm-vm gres`",
			      "%s:%u: Name=%s Cores=%s are not this node's "
			      "cores: slurmctld refuses the node",
			      path, lineno, name, cores);
		return;
	}
	snprintf(fix, sizeof(fix),
		 "Cores=%s (whole sockets), or regenerate gres.conf with "
		 "`slurm-vm gres`",
		 whole);
	check_problem(gc->c, fix,
		      "%s:%u: Name=%s Cores=%s splits socket %d: slurmctld of "
		      "Slurm %s refuses it (\"doesn't match socket "
		      "boundaries\") and drains the node",
		      path, lineno, name, cores, split,
		      slurm_release_str(gc->release, rel, sizeof(rel)));
}

/* One gres.conf line of this node: each of its File= (ranges expanded)
 * must be there when slurmd starts. */
static int gres_check_line(const char *path, unsigned lineno, const char *name,
			   const char *file, const char *cores, void *ctx)
{
	struct gres_check *gc = ctx;
	_cleanup_strv_free_ char **files = NULL;
	char fix[512];

	if (cores && gc->topo)
		gres_check_cores(gc, path, lineno, name, cores);
	if (!file)
		return 0; /* a count-only GRES: no device to open */
	if (slurm_gres_file_expand(file, &files) < 0) {
		check_problem(gc->c,
			      "write File= as a path or a Slurm range, e.g. "
			      "/dev/vfio/[12-13]",
			      "%s:%u: File=%s cannot be expanded: slurmd "
			      "refuses to start",
			      path, lineno, file);
		gc->bad++;
		return 0;
	}
	for (char **f = files; *f; f++) {
		struct stat st;

		gc->n++;
		if (stat(*f, &st) == 0 && S_ISCHR(st.st_mode))
			continue;
		snprintf(fix, sizeof(fix),
			 "bind the device to vfio-pci so %s exists before "
			 "slurmd starts (DeviceBinding=prebound), or "
			 "regenerate gres.conf with `slurm-vm gres`",
			 *f);
		check_problem(gc->c, fix,
			      "%s:%u: Name=%s File=%s is not a character "
			      "device: slurmd 22.05 refuses to start",
			      path, lineno, name, *f);
		gc->bad++;
	}
	return 0;
}

/* The topology Cores= are checked against: NULL when the release takes
 * any cores, or slurmd's sockets are not the packages (SlurmdParameters=
 * numa_node_as_socket, l3cache_as_socket). */
static struct topology *gres_cores_topology(const struct slurmconf *sc,
					    const struct vmconf *vc,
					    uint32_t release)
{
	const char *params = slurmconf_get(sc, "SlurmdParameters");
	struct topology *topo = NULL;
	char rel[16];

	if (!slurm_gres_cores_whole_sockets(release))
		return NULL;
	if (list_has(params, "numa_node_as_socket") ||
	    list_has(params, "l3cache_as_socket")) {
		check_ok("SlurmdParameters=%s: gres.conf Cores= not checked "
			 "against the packages (slurmd's sockets are not)",
			 params);
		return NULL;
	}
	if (topology_load(vc->topology_file, &topo) < 0)
		check_warn("set TopologyFile= in vm.conf to this node's hwloc "
			   "XML, or run check-config on the node",
			   "cannot load the node's topology: gres.conf Cores= "
			   "not checked against Slurm %s's whole sockets",
			   slurm_release_str(release, rel, sizeof(rel)));
	return topo;
}

/* Only this node's lines: the others name other nodes' devices. */
static void check_gres_files(struct checker *c, const struct slurmconf *sc,
			     const struct vmconf *vc, const char *node,
			     uint32_t release)
{
	_cleanup_free_ char *path = slurm_conf_sibling("gres.conf");
	_cleanup_topology_ struct topology *topo = NULL;
	struct gres_check gc = { .c = c, .release = release };

	if (!path || access(path, F_OK) < 0)
		return; /* no gres.conf: GresTypes= says what is missing */
	gc.topo = topo = gres_cores_topology(sc, vc, release);
	if (gresconf_for_each(path, node, gres_check_line, &gc) < 0)
		check_problem(c, "make it readable by root", "%s: %s", path,
			      log_last_error());
	else if (!gc.bad)
		check_ok("%s: all %u device files of node %s exist%s", path,
			 gc.n, node,
			 topo ? ", every Cores= holds whole sockets" : "");
}

/* IbvfAutoDetect=yes numbers the VFs by detection: slurmd must do the same,
 * so gres_ibvf.so must be in PluginDir (Slurm's default: where
 * configure found slurmd's plugins). */
static void check_ibvf_plugin(struct checker *c, const struct slurmconf *sc,
			      const struct vmconf *vc)
{
	const char *dirs = slurmconf_get(sc, "PluginDir") ?: SLURM_PLUGINDIR;
	_cleanup_strv_free_ char **dirv = NULL;
	struct stat st;

	if (!vc->ibvf_autodetect)
		return;
	if (strv_split(dirs, ':', &dirv) < 0)
		return;
	for (size_t i = 0; dirv[i]; i++) {
		_cleanup_free_ char *so = NULL;

		if (asprintf(&so, "%s/gres_ibvf.so", dirv[i]) < 0)
			return;
		if (stat(so, &st) == 0) {
			check_ok("IbvfAutoDetect=yes with %s", so);
			return;
		}
	}
	check_problem(
		c,
		"install gres_ibvf.so (configure --with-slurm-source, see gres_ibvf(8)) into PluginDir and restart slurmd, or set IbvfAutoDetect=no",
		"IbvfAutoDetect=yes in vm.conf but no gres_ibvf.so in PluginDir %s: slurmd does not number the VFs as detected, and the prolog refuses VM jobs with VFs",
		dirs);
}

/* Slurm's mpi/pmix plugin (mpi_pmix_vN.so, N the PMIx Debian built it
 * with: 4 in 12, 5 in 13) dlopens its PMIx library from beside the
 * plugins' directory, LIBDIR/pmix2/lib, and no Slurm package pulls that
 * in everywhere (22.05's libpmix.so is libpmix-dev's): without it srun
 * --mpi=pmix fails, on the host and in VMs alike. */
static void check_pmix(struct checker *c, const struct slurmconf *sc,
		       uint32_t release)
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

static bool firmware_file_ok(struct checker *c, const char *key,
			     const char *path, const char *image)
{
	struct stat st;
	char fix[512];

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return true;
	snprintf(
		fix, sizeof(fix),
		"install the ovmf package, or point %s= in vm.conf at the OVMF file",
		key);
	check_problem(
		c, fix,
		"image %s boots UEFI but %s=%s is not a file: its jobs drain the node",
		image, key, path);
	return false;
}

/* The first directory above canonical @path that other users cannot
 * enter, in @dir; "" when there is none. */
static void closed_dir(const char *path, char *dir, size_t size)
{
	_cleanup_free_ char *canon = realpath(path, NULL);
	struct stat st;

	dir[0] = '\0';
	for (char *p = canon ? canon : NULL; p && (p = strchr(p + 1, '/'));) {
		*p = '\0';
		if (stat(canon, &st) == 0 && S_ISDIR(st.st_mode) &&
		    !(st.st_mode & S_IXOTH)) {
			snprintf(dir, size, "%s", canon);
			return;
		}
		*p = '/';
	}
}

/* qemu opens the image, kernel, initrd and OVMF as the job's user: a file
 * only root can open fails every job that asks for the image. nobody
 * stands in for an ordinary user. */
static bool file_open_to_users(struct checker *c, const char *image,
			       const char *key, const char *path)
{
	struct passwd *pw = getpwnam("nobody");
	char fix[1024], dir[PATH_MAX];
	int r;

	if (!path)
		return true;
	r = user_can_open(pw ? pw->pw_uid : 65534, pw ? pw->pw_gid : 65534,
			  path);
	if (r == 0)
		return true;
	closed_dir(path, dir, sizeof(dir));
	if (dir[0])
		snprintf(fix, sizeof(fix),
			 "other users cannot enter %s: move the file to a "
			 "directory every user can enter (e.g. "
			 "/var/lib/slurm-vm/images), or chmod o+x %s",
			 dir, dir);
	else
		snprintf(fix, sizeof(fix),
			 "make it readable by every user (chmod o+r %s), or "
			 "copy it where they can read it",
			 path);
	check_problem(c, fix,
		      "catalog image %s: %s=%s cannot be opened by an ordinary "
		      "user (as nobody: %s); qemu runs as the job's user, so "
		      "its jobs fail",
		      image, key, path, strerror(-r));
	return false;
}

static bool image_files_open_to_users(struct checker *c,
				      const struct vmconf *vc,
				      const struct image_spec *spec,
				      const char *name, bool uefi)
{
	struct image_chain chain;
	bool ok = true;

	if (geteuid() != 0)
		return true; /* cannot become nobody: said once by the caller */
	if (image_check(vc, spec, &chain) == 0) {
		for (unsigned i = 0; i < chain.depth; i++)
			ok = file_open_to_users(c, name,
						i ? "its backing file" : "Path",
						chain.layers[i].path) &&
			     ok;
		image_chain_free(&chain);
	}
	ok = file_open_to_users(c, name, "Kernel", spec->kernel) && ok;
	ok = file_open_to_users(c, name, "Initrd", spec->initrd) && ok;
	if (uefi) {
		ok = file_open_to_users(c, name, "UefiCode", vc->uefi_code) &&
		     ok;
		ok = file_open_to_users(c, name, "UefiVars", vc->uefi_vars) &&
		     ok;
	}
	return ok;
}

/* BootMode=warm: the template's qemu is root's, so each file it boots and
 * every directory above must be root's alone, or the prolog boots the
 * image's jobs cold (prolog/warm.c, warm_refusal). */
static bool image_files_root_only(struct checker *c, const struct vmconf *vc,
				  const struct image_spec *spec,
				  const char *name)
{
	struct image_chain chain;
	char bad[PATH_MAX], fix[2 * PATH_MAX + 128];
	bool warm = spec->boot_mode ? strcmp(spec->boot_mode, "warm") == 0
				    : vc->boot_mode == BOOT_MODE_WARM;
	int r;

	if (!warm || (spec->firmware && strcmp(spec->firmware, "uefi") == 0))
		return true;
	if (image_check(vc, spec, &chain) < 0)
		return true; /* said by image_files_open_to_users() */
	r = image_root_only(spec, &chain, bad, sizeof(bad));
	image_chain_free(&chain);
	if (r == 0)
		return true;
	snprintf(fix, sizeof(fix), "chown root %s && chmod go-w %s", bad, bad);
	check_problem(c, fix,
		      "catalog image %s boots warm, but %s is not root's "
		      "alone (%s): its warm template would run in root's qemu "
		      "what another user can change, so its jobs boot cold",
		      name, bad,
		      r == -EPERM ? "another user owns it, or group or others "
				    "may write it"
				  : strerror(-r));
	return false;
}

/* A directory vm.conf names (@key=@dir) is there; else a problem, what
 * jobs see (@effect), and the command that makes it. */
static bool dir_exists(struct checker *c, const char *key, const char *dir,
		       const char *effect)
{
	struct stat st;
	char fix[PATH_MAX + 32];

	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return true;
	snprintf(fix, sizeof(fix), "mkdir -p %s", dir);
	check_problem(c, fix, "%s=%s is not a directory: %s", key, dir, effect);
	return false;
}

/* Every descriptor parses and names an image inside ImageDirs: a typo
 * otherwise shows only when a job asks for that image. */
static void check_catalog(struct checker *c, const struct vmconf *vc)
{
	_cleanup_strv_free_ char **names = NULL;
	unsigned good = 0, n = 0;

	if (!dir_exists(c, "ImageCatalog", vc->image_catalog,
			"every --vm-image=NAME is refused"))
		return;
	for (char **d = vc->image_dirs; d && *d; d++)
		dir_exists(c, "ImageDirs", *d,
			   "no image can be placed where jobs may use it");
	if (image_catalog_names(vc->image_catalog, &names) < 0)
		return;
	if (!names[0])
		check_warn("put a descriptor NAME.image there for each image "
			   "users may ask for (admin guide, section 5)",
			   "ImageCatalog=%s is empty: sbatch --vm-image=NAME "
			   "says so for every NAME",
			   vc->image_catalog);
	for (size_t i = 0; names[i]; i++, n++) {
		struct image_spec spec;
		char fix[512];
		bool ok, uefi;

		if (image_resolve(vc, names[i], &spec) < 0) {
			snprintf(
				fix, sizeof(fix),
				"correct %s/%s.image as the message above says (vm.conf(5), IMAGE CATALOG)",
				vc->image_catalog, names[i]);
			check_problem(
				c, fix,
				"catalog image %s cannot be used: jobs asking for it are refused",
				names[i]);
			continue;
		}
		if (image_kernel_check(&spec) < 0) {
			snprintf(
				fix, sizeof(fix),
				"set Kernel= in %s/%s.image to a vmlinuz (bzImage), or Firmware=bios",
				vc->image_catalog, names[i]);
			check_problem(
				c, fix,
				"catalog image %s: OVMF cannot start its kernel",
				names[i]);
			image_spec_free(&spec);
			continue;
		}
		ok = true;
		uefi = spec.firmware && strcmp(spec.firmware, "uefi") == 0;
		if (uefi) {
			/* both are reported, not just the first */
			ok = firmware_file_ok(c, "UefiCode", vc->uefi_code,
					      names[i]);
			ok = firmware_file_ok(c, "UefiVars", vc->uefi_vars,
					      names[i]) &&
			     ok;
		}
		if (ok)
			ok = image_files_open_to_users(c, vc, &spec, names[i],
						       uefi);
		if (ok)
			ok = image_files_root_only(c, vc, &spec, names[i]);
		good += ok;
		image_spec_free(&spec);
	}
	if (n && good == n)
		check_ok("%s: all %u images resolve%s", vc->image_catalog, n,
			 geteuid() == 0
				 ? ", and every user can open their files"
				 : " (run as root to check that every "
				   "user can open their files)");
}

/* Job ids that differ by a multiple of the VNI range share a VNI: two such
 * jobs on one node, the second is refused. Slurm's MaxJobId defaults to
 * 67043328, wider than a VNI's 24 bits. */
static void check_vni_range(const struct slurmconf *sc, const struct vmconf *vc)
{
	const char *text = slurmconf_get(sc, "MaxJobId");
	uint64_t range = (uint64_t)vc->jobnet_vni_max - vc->jobnet_vni_min + 1;
	unsigned max_job = 67043328;

	if (text && str_to_uint(text, &max_job) < 0)
		return;
	if (range >= max_job)
		check_ok("JobNetworkVni=%s: a VNI for each of MaxJobId=%u",
			 vc->jobnet_vni_text, max_job);
	else
		check_warn("lower MaxJobId= in slurm.conf to the range's width "
			   "or widen JobNetworkVni= (vm.conf(5))",
			   "JobNetworkVni=%s holds %" PRIu64
			   " VNIs, fewer than MaxJobId=%u: two jobs whose "
			   "ids differ by a multiple of %" PRIu64
			   " cannot run on one node at once",
			   vc->jobnet_vni_text, range, max_job, range);
}

/* JobNetwork=vxlan: the underlay is there, carries guests' 1280 at least,
 * its VNIs do not run out before job ids, and the tools the prolog runs
 * are installed. */
static void check_job_network(struct checker *c, const struct slurmconf *sc,
			      const struct vmconf *vc)
{
	static const char *const tools[] = { "/usr/sbin/ip", "/usr/sbin/bridge",
					     "/usr/sbin/nft" };
	int mtu;

	if (vc->job_network != JOB_NETWORK_VXLAN)
		return;
	check_vni_range(sc, vc);
	mtu = jobnet_underlay_mtu(vc->jobnet_underlay);
	if (mtu < 0)
		check_problem(c,
			      "set JobNetworkUnderlay= to the interface of "
			      "this node's NodeAddr (see vm.conf(5))",
			      "JobNetworkUnderlay=%s: no such interface on "
			      "this node",
			      vc->jobnet_underlay);
	else if ((unsigned)mtu < 1280 + JOBNET_VXLAN_OVER4 ||
		 (vc->jobnet_mtu &&
		  vc->jobnet_mtu + JOBNET_VXLAN_OVER4 > (unsigned)mtu))
		check_problem(c,
			      "raise the underlay's MTU (9000 keeps guests at "
			      "1500 and more) or lower JobNetworkMtu=",
			      "JobNetworkUnderlay=%s: MTU %d is too small for "
			      "the guests' MTU and VXLAN's 50 bytes",
			      vc->jobnet_underlay, mtu);
	else
		check_ok("JobNetworkUnderlay=%s: MTU %d, guests get %u",
			 vc->jobnet_underlay, mtu,
			 vc->jobnet_mtu ?: (unsigned)mtu - JOBNET_VXLAN_OVER4);
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (access(tools[i], X_OK) < 0)
			check_problem(c, "apt-get install iproute2 nftables",
				      "JobNetwork=vxlan needs %s", tools[i]);
}

/* IbPartitions=yes: every InfiniBand VF of the node can take the job's
 * GUIDs (mlx5's sriov/<n>/), and the records have their directory. */
static void check_ib_partitions(struct checker *c, const struct vmconf *vc)
{
	struct device_list list = { 0 };
	unsigned n = 0, bad = 0;
	struct stat st;

	if (!vc->ib_partitions)
		return;
	if (devices_scan(vc->sysfs_root, &list) < 0) {
		check_problem(c, "check SysfsRoot=", "%s: cannot list devices",
			      vc->sysfs_root);
		return;
	}
	for (size_t i = 0; i < list.n; i++) {
		_cleanup_free_ char *dir = NULL;

		if (list.v[i].kind != PCI_KIND_IB || !list.v[i].is_vf)
			continue;
		n++;
		if (ibpart_vf_dir(vc->sysfs_root, &list.v[i], &dir) < 0) {
			bad++;
			check_problem(c,
				      "use ConnectX-4 or later for VM jobs, or "
				      "IbPartitions=no on this node",
				      "%s", log_last_error());
		}
	}
	device_list_free(&list);
	if (n && !bad)
		check_ok("IbPartitions=yes: all %u InfiniBand VFs take job "
			 "GUIDs",
			 n);
	if (vc->ib_partition_dir &&
	    (stat(vc->ib_partition_dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		check_problem(c,
			      "create it on a filesystem the subnet manager's "
			      "node reads (see slurm-vm(8), ib-partitions)",
			      "IbPartitionDir=%s: not a directory",
			      vc->ib_partition_dir);
	else if (vc->ib_partition_dir && (st.st_uid != 0 || (st.st_mode & 022)))
		check_problem(c,
			      "chown root and chmod go-w it: the prolog writes "
			      "records there as root",
			      "IbPartitionDir=%s: writable by others than root",
			      vc->ib_partition_dir);
	else if (!vc->ib_partition_dir)
		check_problem(c,
			      "set IbPartitionDir= to where `slurm-vm "
			      "ib-partitions` reads the records",
			      "IbPartitions=yes without IbPartitionDir=: the "
			      "subnet manager never hears of the jobs' VFs");
}

/* A share's parent a user may write in (without the sticky bit) or own:
 * that user could remove or replace the share, and a missing share drains
 * the node. 0, or the first such directory in @bad. */
static int share_parent_unsafe(const char *share, char *bad, size_t size)
{
	struct stat st;

	snprintf(bad, size, "%s", share);
	for (char *slash = strrchr(bad, '/'); slash;
	     slash = strrchr(bad, '/')) {
		if (slash == bad)
			slash[1] = '\0'; /* "/" */
		else
			*slash = '\0';
		if (stat(bad, &st) < 0)
			return -errno;
		if (st.st_uid != 0 || ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
				       !(st.st_mode & S_ISVTX)))
			return 1;
		if (slash == bad)
			break;
	}
	return 0;
}

/* SharedDirTransport=: the transport in effect and why; virtiofs without
 * a virtiofsd slurm-vm can run as the job user (the prolog drains the node
 * then). 9p in @t when none can be had. */
static void check_share_transport(struct checker *c, const struct vmconf *vc,
				  enum shared_dir_transport *t)
{
	char why[1024];
	int r = share_transport_resolve(vc, t, why, sizeof(why));

	if (r == 0)
		check_ok("SharedDirs: served over %s (%s)",
			 share_transport_name(*t), why);
	else
		check_problem(
			c,
			"install the Rust virtiofsd (Debian 13, RHEL 9: "
			"package virtiofsd) and set VirtiofsdPath= to it, "
			"or set SharedDirTransport=9p",
			"SharedDirs: %s: the prolog drains the node", why);
}

/* SharedDirs=: each share is there and a directory (the prolog drains the
 * node otherwise), in directories no user can change. */
static void check_shares(struct checker *c, const struct vmconf *vc)
{
	size_t n = vmconf_n_shared_dirs(vc);
	char parent[SHARED_DIR_PATH_MAX + 1];
	enum shared_dir_transport t = SHARED_DIR_9P;

	if (n || vc->shared_dir_transport != SHARED_DIR_9P)
		check_share_transport(c, vc, &t);

	for (size_t i = 0; i < n; i++) {
		const char *d = vc->shared_dirs[i];
		int r = vmconf_shared_dir_usable(d);

		if (r == -ENOTDIR)
			check_problem(c, "list directories only in SharedDirs=",
				      "SharedDirs: %s is not a directory", d);
		else if (r < 0)
			check_problem(
				c, "create it, or remove it from SharedDirs=",
				"SharedDirs: %s: %s", d, strerror(-r));
		else if (share_parent_unsafe(d, parent, sizeof(parent)) > 0)
			check_problem(c,
				      "share directories whose parents are "
				      "root's and not writable by others",
				      "SharedDirs: %s: its parent %s is not "
				      "root's or is writable by others, so a "
				      "user could remove or replace the share "
				      "(and a missing share drains the node)",
				      d, parent);
		else
			check_ok("SharedDirs: %s is shared with the guests "
				 "over %s, as the job user",
				 d, share_transport_name(t));
	}
}

/* libvirt's qemu driver directory, LOCALSTATEDIR/lib/libvirt/qemu: libvirt
 * puts each guest's key, master-key.aes, into DIR/domain-ID-NAME/, which it
 * gives to the domain's DAC user (the job user) 0750, and qemu, as that
 * user, opens the key by its path: it must be able to enter DIR and every
 * directory above. Debian's libvirt-daemon-system makes DIR
 * libvirt-qemu's 0750 (upstream's libvirt.spec: 0751). */
#define LIBVIRT_QEMU_DIR "/var/lib/libvirt/qemu"
#define SEARCH_DIRS_MAX	 64

struct search_dirs {
	char *paths[SEARCH_DIRS_MAX]; /* "/" down to the directory checked */
	int fds[SEARCH_DIRS_MAX];     /* each opened O_PATH, as root */
	int errs[SEARCH_DIRS_MAX];    /* what an ordinary user gets there */
	size_t n;
};

static void search_dirs_free(struct search_dirs *sd)
{
	for (size_t i = 0; i < sd->n; i++) {
		free(sd->paths[i]);
		if (sd->fds[i] >= 0)
			close(sd->fds[i]);
	}
}

/* Takes @path. */
static int search_dirs_add(struct search_dirs *sd, char *path)
{
	if (!path)
		return -ENOMEM;
	if (sd->n == SEARCH_DIRS_MAX) {
		free(path);
		return -ENAMETOOLONG;
	}
	sd->paths[sd->n] = path;
	sd->fds[sd->n] = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return sd->fds[sd->n++] < 0 ? -errno : 0;
}

/* The directories a lookup of @dir searches: those of its canonical path
 * (a symbolic link is followed where the lookup would follow it). */
static int search_dirs_open(const char *dir, struct search_dirs *sd)
{
	_cleanup_free_ char *canon = realpath(dir, NULL);
	size_t len;
	int r;

	if (!canon)
		return -errno;
	len = strlen(canon);
	r = search_dirs_add(sd, strndup(canon, 1));
	for (size_t i = 2; r == 0 && i <= len; i++)
		if (i == len || canon[i] == '/')
			r = search_dirs_add(sd, strndup(canon, i));
	return r;
}

/* In a child that is the ordinary user: for each directory, 0 or the errno
 * of a lookup of "." in it. That needs search permission on that directory
 * alone, so each one that would stop qemu is found, not only the first. */
static int search_child(const void *arg, int fd)
{
	const struct search_dirs *sd = arg;

	for (size_t i = 0; i < sd->n; i++) {
		int dot = openat(sd->fds[i], ".",
				 O_PATH | O_DIRECTORY | O_CLOEXEC);

		dprintf(fd, "%d\n", dot < 0 ? errno : 0);
		if (dot >= 0)
			close(dot);
	}
	return 0;
}

/* As nobody when root; else from the mode bits only (the caller says so). */
static int search_dirs_try(struct search_dirs *sd)
{
	struct passwd *pw = getpwnam("nobody");
	_cleanup_free_ char *out = NULL;
	char *p, *end;
	struct stat st;
	int r;

	if (geteuid() != 0) {
		for (size_t i = 0; i < sd->n; i++)
			sd->errs[i] = fstat(sd->fds[i], &st) < 0 ? errno
				      : st.st_mode & S_IXOTH	 ? 0
								 : EACCES;
		return 0;
	}
	r = user_run(pw ? pw->pw_uid : 65534, pw ? pw->pw_gid : 65534,
		     search_child, sd, 16 * SEARCH_DIRS_MAX, &out, NULL);
	if (r < 0)
		return r;
	p = out;
	for (size_t i = 0; i < sd->n; i++, p = end) {
		long e = strtol(p, &end, 10);

		if (end == p)
			return -EPROTO;
		sd->errs[i] = (int)e;
	}
	return 0;
}

/* The command that lets every user enter @dir and survives the packages'
 * upgrades: a dpkg statoverride (libvirt-daemon-system's postinst and
 * dpkg's unpack both keep one) with @dir's owner, group and mode plus o+x. */
static void search_fix(const char *dir, int fd, char *fix, size_t size)
{
	struct passwd *pw;
	struct group *gr;
	char user[64], group[64];
	struct stat st;

	if (fstat(fd, &st) < 0 ||
	    access("/usr/bin/dpkg-statoverride", X_OK) < 0) {
		snprintf(fix, size, "chmod o+x %s", dir);
		return;
	}
	pw = getpwuid(st.st_uid);
	gr = getgrgid(st.st_gid);
	if (pw)
		snprintf(user, sizeof(user), "%s", pw->pw_name);
	else
		snprintf(user, sizeof(user), "#%u", (unsigned)st.st_uid);
	if (gr)
		snprintf(group, sizeof(group), "%s", gr->gr_name);
	else
		snprintf(group, sizeof(group), "#%u", (unsigned)st.st_gid);
	snprintf(fix, size,
		 "dpkg-statoverride --list %s >/dev/null && "
		 "dpkg-statoverride --remove %s; "
		 "dpkg-statoverride --update --add %s %s %04o %s",
		 dir, dir, user, group, (st.st_mode & 07777) | S_IXOTH, dir);
}

/* qemu runs as the job user: every directory on the way to libvirt's
 * per-domain directory must let an ordinary user in. Tried, as nobody,
 * the way qemu will look it up. No such directory: libvirt is not the
 * system's here (libvirtd makes it 0755 when it starts). */
static void check_libvirt_dir(struct checker *c, const char *dir)
{
	struct search_dirs sd = { 0 };
	char fix[3 * PATH_MAX + 256];
	unsigned bad = 0;
	int r;

	if (access(dir, F_OK) < 0 && errno == ENOENT)
		return;
	r = search_dirs_open(dir, &sd);
	if (r == 0)
		r = search_dirs_try(&sd);
	if (r < 0) {
		check_problem(c, "run slurm-vm check-config as root",
			      "%s: cannot try what qemu does there: %s", dir,
			      strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < sd.n; i++) {
		if (!sd.errs[i])
			continue;
		bad++;
		search_fix(sd.paths[i], sd.fds[i], fix, sizeof(fix));
		check_problem(c, fix,
			      "%s: an ordinary user cannot enter it (%s: %s): "
			      "qemu runs as the job's user and opens "
			      "%s/domain-ID-NAME/master-key.aes, so every VM "
			      "job fails",
			      sd.paths[i],
			      geteuid() == 0 ? "tried as nobody"
					     : "no o+x; run as root to try it "
					       "as nobody",
			      strerror(sd.errs[i]), dir);
	}
	if (!bad)
		check_ok("%s: an ordinary user can enter it and every "
			 "directory above (%s), as qemu running as the job's "
			 "user must",
			 dir,
			 geteuid() == 0 ? "tried as nobody" : "by their modes");
out:
	search_dirs_free(&sd);
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
static void check_spool_dir(struct checker *c, const struct slurmconf *sc,
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

static void usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm check-config [--slurm-conf PATH] [--node NAME] [--libvirt-dir DIR]\n"
		"Checks slurm.conf, gres.conf, plugstack.conf and vm.conf for what slurm-vm needs.\n"
		"NAME: this node's NodeName (slurmd -N), default the host name up to its first dot.\n"
		"DIR: libvirt's qemu driver directory, default " LIBVIRT_QEMU_DIR
		"\n"
		"     (LOCALSTATEDIR/lib/libvirt/qemu of a libvirt built elsewhere).\n");
}

/* slurmd's node name without -N: the host name up to its first dot. */
static void short_host_name(char *name, size_t size)
{
	if (gethostname(name, size) < 0)
		snprintf(name, size, "localhost");
	name[size - 1] = '\0';
	name[strcspn(name, ".")] = '\0';
}

int cmd_check_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "slurm-conf", required_argument, NULL, 's' },
		{ "node", required_argument, NULL, 'n' },
		{ "libvirt-dir", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct checker c = { 0 };
	struct slurmconf sc = { 0 };
	_cleanup_free_ char *vm_path = NULL;
	char node[HOST_NAME_MAX + 1] = "", fix[1024];
	const char *libvirt_dir = LIBVIRT_QEMU_DIR;
	uint32_t release = slurm_compat_release();
	struct vmconf vc;
	char rel[16];
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 's') {
			setenv("SLURM_CONF", optarg, 1);
		} else if (opt == 'n') {
			snprintf(node, sizeof(node), "%s", optarg);
		} else if (opt == 'l') {
			libvirt_dir = optarg;
		} else if (opt == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!node[0])
		short_host_name(node, sizeof(node));
	c.slurm_conf_path = getenv("SLURM_CONF") ?: "/etc/slurm/slurm.conf";
	if (slurmconf_read(c.slurm_conf_path, &sc) < 0)
		return 1;
	check_ok("%s read as Slurm %s does (the release slurm-vm is built "
		 "against)",
		 c.slurm_conf_path,
		 slurm_release_str(release, rel, sizeof(rel)));
	vm_path = vmconf_default_path();
	if (access(vm_path, F_OK) < 0 && errno == ENOENT) {
		snprintf(fix, sizeof(fix),
			 "cp %s/vm.conf.example %s and replace its "
			 "@PLACEHOLDERS@ (vm.conf(5))",
			 EXAMPLES_DIR, vm_path);
		check_problem(&c, fix,
			      "%s does not exist: every VM job is refused and "
			      "the prolog drains the node (the checks below "
			      "use vm.conf's defaults)",
			      vm_path);
		vmconf_load(&vc, NULL);
	} else if (vmconf_load(&vc, vm_path) < 0) {
		check_problem(&c,
			      "correct the lines named above (see vm.conf(5))",
			      "%s does not parse", vm_path);
	} else {
		check_ok("%s parses", vm_path);
	}
	check_scripts(&c, &sc, release);
	check_spool_dir(&c, &sc, node);
	check_timeouts(&c, &sc, &vc, release);
	check_adoption(&sc, &vc, release, node);
	check_scheduling(&c, &sc);
	check_plugstack(&c, &sc);
	check_gres_files(&c, &sc, &vc, node, release);
	check_ibvf_plugin(&c, &sc, &vc);
	check_pmix(&c, &sc, release);
	check_catalog(&c, &vc);
	check_job_network(&c, &sc, &vc);
	check_ib_partitions(&c, &vc);
	check_shares(&c, &vc);
	check_libvirt_dir(&c, libvirt_dir);
	if (c.problems)
		printf("%u problem%s to fix\n", c.problems,
		       c.problems == 1 ? "" : "s");
	else
		printf("no problems\n");
	vmconf_free(&vc);
	slurmconf_free(&sc);
	return c.problems ? 1 : 0;
}
