/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gres.conf's lines of this node (device files, Cores=) and the gres/ibvf
 * plugin IbvfAutoDetect needs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hw/placement.h"
#include "hw/slurm_map.h"
#include "slurm/compat.h"
#include "slurm/gresconf.h"
#include "slurm/slurmconf.h"
#include "core/log.h"
#include "core/strutil.h"
#include "job/vmconf.h"

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
void check_gres_files(struct checker *c, const struct slurmconf *sc,
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
void check_ibvf_plugin(struct checker *c, const struct slurmconf *sc,
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
