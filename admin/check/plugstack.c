/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugstack.conf loads spank_vm.so, from where slurmd finds it. */
#include "config.h"

#include <fnmatch.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "slurm/slurmconf.h"
#include "core/strutil.h"
#include "job/vmconf.h"

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

void check_plugstack(struct checker *c, const struct slurmconf *sc)
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
