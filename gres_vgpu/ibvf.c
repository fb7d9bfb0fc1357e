/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/devices.h"
#include "hw/gresgen.h"
#include "ibvf.h"
#include "core/log.h"
#include "hw/slurm_map.h"
#include "core/strutil.h"
#include "job/vmconf.h"

static ibvf_log_sink slurm_sink;

static void ibvf_sink(enum log_level level, const char *msg)
{
	slurm_sink((int)level, msg);
}

void ibvf_log_init(ibvf_log_sink sink)
{
	log_open("gres/ibvf");
	/* Slurm filters by its own debug level. */
	log_set_level(LOG_LEVEL_DEBUG);
	slurm_sink = sink;
	log_set_sink(ibvf_sink);
}

int ibvf_conf_load(const char *path, struct ibvf_conf *conf)
{
	struct vmconf *vc = calloc(1, sizeof(*vc));
	int r;

	memset(conf, 0, sizeof(*conf));
	if (!vc)
		return -ENOMEM;
	conf->priv = vc;
	if (path && access(path, F_OK) < 0) {
		log_debug("%s does not exist: no VF detection", path);
		path = NULL;
	}
	r = vmconf_load(vc, path);
	if (r < 0)
		return r;
	conf->autodetect = vc->ibvf_autodetect;
	conf->sysfs_root = vc->sysfs_root;
	conf->vm_conf = vc->path;
	return 0;
}

void ibvf_conf_free(struct ibvf_conf *conf)
{
	if (conf->priv)
		vmconf_free(conf->priv);
	free(conf->priv);
	memset(conf, 0, sizeof(*conf));
}

void ibvf_lines_free(struct ibvf_line *lines, size_t n)
{
	for (size_t i = 0; lines && i < n; i++) {
		free(lines[i].file);
		free(lines[i].cores);
		free(lines[i].cpus);
	}
	free(lines);
}

static int ibvf_take_lines(const struct gres_lines *gl,
			   const struct topology *topo, struct ibvf_line *out,
			   size_t *n)
{
	for (size_t i = 0; i < gl->n; i++) {
		const struct gres_line *l = &gl->v[i];
		struct ibvf_line *o = &out[*n];

		if (l->verdict != GRES_LINE || strcmp(l->name, "ibvf") != 0)
			continue;
		(*n)++;
		o->file = strdup(l->file);
		if (!o->file)
			return -ENOMEM;
		if (!l->cores)
			continue;
		o->cores = strdup(l->cores);
		if (!o->cores)
			return -ENOMEM;
		if (slurm_cores_to_cpus(topo, l->cores, 0, &o->cpus) < 0)
			return log_errno(EINVAL,
					 "cores %s of %s are not in "
					 "the topology",
					 l->cores, l->file);
	}
	return 0;
}

int ibvf_detect(const struct ibvf_conf *conf, struct ibvf_line **lines,
		size_t *n)
{
	const struct vmconf *vc = conf->priv;
	_cleanup_topology_ struct topology *topo = NULL;
	struct device_list list = { 0 };
	struct gres_lines gl = { 0 };
	int r;

	*lines = NULL;
	*n = 0;
	r = topology_load(vc->topology_file, &topo);
	if (r < 0)
		return log_errno(r, "cannot load the hwloc topology %s",
				 vc->topology_file ?: "of this node");
	r = devices_scan(vc->sysfs_root, &list);
	if (r == 0)
		r = gres_lines_build_cores(vc, topo, &list,
					   conf->cores_whole_sockets
						   ? GRES_CORES_WHOLE_SOCKETS
						   : GRES_CORES_NUMA_NODE,
					   &gl);
	if (r == 0) {
		*lines = calloc(gl.n + 1, sizeof(**lines));
		r = *lines ? ibvf_take_lines(&gl, topo, *lines, n) : -ENOMEM;
	}
	gres_lines_free(&gl);
	device_list_free(&list);
	if (r < 0) {
		ibvf_lines_free(*lines, *n);
		*lines = NULL;
		*n = 0;
	}
	return r;
}

char *ibvf_index_entry(const struct ibvf_conf *conf, unsigned index,
		       const char *file)
{
	_cleanup_strv_free_ char **addrs = NULL;
	int r = gres_file_functions(conf->sysfs_root, "ibvf", file, &addrs);

	if (r == -EINVAL)
		log_error("ibvf %u: File=%s is not a vfio group device "
			  "(<dir>/vfio/N)",
			  index, file);
	else if (r < 0)
		log_error("ibvf %u: File=%s: its IOMMU group holds no "
			  "InfiniBand or RoCE function under %s/kernel/"
			  "iommu_groups",
			  index, file, conf->sysfs_root);
	if (r < 0)
		return NULL;
	return ibvfs_env_entry(index, addrs);
}
