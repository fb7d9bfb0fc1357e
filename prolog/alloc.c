/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "slurm/ctld.h"
#include "slurm/gresconf.h"
#include "hw/gresgen.h"
#include "core/log.h"
#include "hw/slurm_map.h"
#include "core/strutil.h"

static const char *const gres_names[ALLOC_GRES_NAMES] = { "gpu", "ibvf" };

int alloc_load(uint32_t job_id, const char *node, struct job_alloc *a)
{
	struct ctld_job_node jn;
	int r;

	memset(a, 0, sizeof(*a));
	for (size_t i = 0; i < ALLOC_GRES_NAMES; i++)
		a->gres[i].name = gres_names[i];
	a->node = strdup(node);
	if (!a->node)
		return -ENOMEM;
	r = ctld_job_node_load(job_id, node, &jn);
	if (r < 0)
		return r;
	/* a takes jn's strings */
	a->node_index = jn.node_index;
	a->cores = jn.cores;
	a->mem_mib = jn.mem_mib;
	a->gres_detail = jn.gres_detail;
	return 0;
}

/* Moves every function of @group into a->devices. */
static int alloc_take_group(struct job_alloc *a, const struct vmconf *conf,
			    int group, const char *file)
{
	struct device_list list = { 0 };
	struct pci_device *nv;
	int r = devices_read_group(conf->sysfs_root, group, &list);

	if (r < 0) {
		log_error("%s: IOMMU group %d has no device to pass in %s",
			  file, group, conf->sysfs_root);
		return r;
	}
	nv = realloc(a->devices.v, (a->devices.n + list.n) * sizeof(*nv));
	if (!nv) {
		device_list_free(&list);
		return -ENOMEM;
	}
	memcpy(nv + a->devices.n, list.v, list.n * sizeof(*nv));
	a->devices.v = nv;
	a->devices.n += list.n;
	free(list.v);
	return 0;
}

/* A File= the job got must exist and be a device node before we trust its
 * group number. */
static int check_device_file(const char *file)
{
	struct stat st;

	if (stat(file, &st) < 0)
		return log_errno(errno, "gres device file %s", file);
	if (!S_ISCHR(st.st_mode)) {
		log_error("gres device file %s is not a character device",
			  file);
		return -ENODEV;
	}
	return 0;
}

/* The File= of GRES @g in slurmd's order: gres.conf, or for ibvf with
 * IbvfAutoDetect=yes the VFs gres/ibvf detected (the same list). */
static int alloc_gres_files(const struct job_alloc *a,
			    const struct alloc_gres *g,
			    const struct vmconf *conf,
			    const struct topology *topo, const char *gres_conf,
			    char ***indexed)
{
	_cleanup_strv_free_ char **files = NULL;
	struct device_list list = { 0 };
	struct gres_lines lines = { 0 };
	int r;

	if (strcmp(g->name, "ibvf") != 0 || !conf->ibvf_autodetect) {
		r = gresconf_files(gres_conf, a->node, g->name, &files);
		if (r == 0)
			r = slurm_gres_index_files(files, NULL, NULL, indexed);
		return r;
	}
	r = devices_scan(conf->sysfs_root, &list);
	if (r == 0)
		r = gres_lines_build(conf, topo, &list, &lines);
	if (r == 0)
		r = gres_lines_files(&lines, "ibvf", indexed);
	gres_lines_free(&lines);
	device_list_free(&list);
	if (r < 0)
		log_error("IbvfAutoDetect=yes: cannot detect the VFs under %s",
			  conf->sysfs_root);
	return r;
}

/* Does gres_detail_str name GRES @name, with indices or without
 * ("ibvf:2(IDX:0-1)", "ibvf:2(IDX:N/A)")? */
static bool detail_has(const char *detail, const char *name)
{
	size_t len = strlen(name);
	const char *p = detail;

	while (p && *p) {
		if (strncmp(p, name, len) == 0 &&
		    (p[len] == ':' || p[len] == '(' || p[len] == ',' ||
		     !p[len]))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/* gres/ibvf's indices (SLURM_JOB_IBVFS) replace gres_detail_str's; the two
 * must agree. */
static int alloc_ibvf_indices(struct job_alloc *a, struct alloc_gres *g)
{
	_cleanup_free_ struct gres_pair *pairs = NULL;
	_cleanup_free_ unsigned *idx = NULL;
	size_t n_pairs, n = 0;
	bool same;
	int r = ibvfs_env_parse(a->ibvfs_env, &pairs, &n_pairs);

	if (r < 0) {
		log_error("SLURM_JOB_IBVFS=%s is not IDX=PCI[,IDX=PCI...] "
			  "in order: is gres_ibvf.so of this slurm-vm?",
			  a->ibvfs_env);
		return r;
	}
	idx = calloc(n_pairs + 1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n_pairs; i++)
		if (n == 0 || idx[n - 1] != pairs[i].index)
			idx[n++] = pairs[i].index;
	same = n == g->n &&
	       (n == 0 || memcmp(idx, g->indices, n * sizeof(*idx)) == 0);
	if (!same) {
		log_error("gres/ibvf gave this job SLURM_JOB_IBVFS=%s but "
			  "slurmctld says %s",
			  a->ibvfs_env, a->gres_detail ?: "no GRES");
		return -ESTALE;
	}
	return 0;
}

static int alloc_resolve_gres(struct job_alloc *a, struct alloc_gres *g,
			      const struct vmconf *conf,
			      const struct topology *topo,
			      const char *gres_conf)
{
	_cleanup_strv_free_ char **indexed = NULL;
	size_t count;
	int r;

	if (a->gres_detail) {
		r = slurm_gres_detail_indices(a->gres_detail, g->name,
					      &g->indices, &g->n);
		if (r < 0)
			return r;
	}
	if (strcmp(g->name, "ibvf") == 0 && a->ibvfs_env) {
		r = alloc_ibvf_indices(a, g);
		if (r < 0)
			return r;
	} else if (strcmp(g->name, "ibvf") == 0 && conf->ibvf_autodetect &&
		   detail_has(a->gres_detail, "ibvf")) {
		/* slurmd numbers gres.conf's lines (or nothing), not ours */
		log_error("IbvfAutoDetect=yes in vm.conf but slurmd gave no "
			  "SLURM_JOB_IBVFS: gres_ibvf.so is not loaded, so "
			  "slurmd does not number the VFs as detected; install "
			  "it in PluginDir (gres_ibvf(8)) or set "
			  "IbvfAutoDetect=no");
		return -ENODEV;
	}
	if (g->n == 0)
		return 0; /* a job without this GRES on this node */
	r = alloc_gres_files(a, g, conf, topo, gres_conf, &indexed);
	if (r < 0)
		return r;
	count = strv_length(indexed);
	g->files = calloc(g->n + 1, sizeof(*g->files));
	g->groups = calloc(g->n, sizeof(*g->groups));
	if (!g->files || !g->groups)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		if (g->indices[i] >= count) {
			log_error(
				"%s index %u: %s has only %zu %s lines for %s",
				g->name, g->indices[i],
				conf->ibvf_autodetect &&
						strcmp(g->name, "ibvf") == 0
					? "detection (IbvfAutoDetect=yes)"
					: gres_conf,
				count, g->name, a->node);
			return -ERANGE;
		}
		g->files[i] = strdup(indexed[g->indices[i]]);
		if (!g->files[i])
			return -ENOMEM;
		r = check_device_file(g->files[i]);
		if (r == 0 &&
		    slurm_vfio_file_group(g->files[i], &g->groups[i]) < 0) {
			log_error("%s: a %s File= must be a vfio group device, "
				  "/dev/vfio/N",
				  g->files[i], g->name);
			r = -EINVAL;
		}
		if (r == 0)
			r = alloc_take_group(a, conf, g->groups[i],
					     g->files[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every (index, PCI function) of SLURM_JOB_IBVFS is one of our VF
 * requests and the other way round: slurmd and slurm-vm number alike. */
static int alloc_check_ibvfs(const struct job_alloc *a)
{
	_cleanup_free_ struct gres_pair *pairs = NULL;
	size_t n_pairs, matched = 0, ours = 0;
	int r = ibvfs_env_parse(a->ibvfs_env, &pairs, &n_pairs);

	if (r < 0)
		return r;
	for (size_t i = 0; i < a->n_requests; i++) {
		const struct plan_device_request *d = &a->requests[i];
		bool found = false;

		if (strcmp(d->gres, "ibvf") != 0)
			continue;
		ours++;
		for (size_t j = 0; !found && j < n_pairs; j++)
			found = pairs[j].index == (unsigned)d->gres_index &&
				strcmp(pairs[j].addr, d->dev->addr) == 0;
		if (found) {
			matched++;
			continue;
		}
		log_error("ibvf %d is PCI %s here but SLURM_JOB_IBVFS=%s: "
			  "gres/ibvf and slurm-vm number the VFs differently; "
			  "restart slurmd after changing gres.conf or vm.conf "
			  "and compare `slurmd -G` with `slurm-vm gres`",
			  d->gres_index, d->dev->addr, a->ibvfs_env);
		return -ESTALE;
	}
	if (matched != n_pairs || ours != n_pairs) {
		log_error("SLURM_JOB_IBVFS=%s names %zu VF functions, this "
			  "node's gres.conf maps %zu",
			  a->ibvfs_env, n_pairs, ours);
		return -ESTALE;
	}
	return 0;
}

/* One plan request per GPU or VF, in gres order; built once a->devices no
 * longer moves. */
static int alloc_build_requests(struct job_alloc *a)
{
	size_t k = 0;

	a->requests = calloc(a->devices.n, sizeof(*a->requests));
	if (a->devices.n && !a->requests)
		return -ENOMEM;
	for (size_t i = 0; i < ALLOC_GRES_NAMES; i++) {
		const struct alloc_gres *g = &a->gres[i];
		for (size_t j = 0; j < g->n; j++) {
			size_t before = a->n_requests;
			for (; k < a->devices.n &&
			       a->devices.v[k].iommu_group == g->groups[j];
			     k++) {
				if (!gres_is_primary(&a->devices.v[k], g->name))
					continue;
				a->requests[a->n_requests++] =
					(struct plan_device_request){
						.dev = &a->devices.v[k],
						.gres = g->name,
						.gres_index =
							(int)g->indices[j],
					};
			}
			if (a->n_requests == before) {
				log_error("%s: IOMMU group %d holds no %s",
					  g->files[j], g->groups[j],
					  strcmp(g->name, "gpu")
						  ? "InfiniBand function"
						  : "GPU");
				return -ENODEV;
			}
		}
	}
	return 0;
}

int alloc_resolve(struct job_alloc *a, const struct vmconf *conf,
		  const struct topology *topo, const char *gres_conf)
{
	int r = slurm_cores_to_cpus(topo, a->cores, 0, &a->cpus);

	if (r < 0) {
		log_error("cores %s of node %s are not in its topology",
			  a->cores, a->node);
		return r;
	}
	for (size_t i = 0; i < ALLOC_GRES_NAMES; i++) {
		r = alloc_resolve_gres(a, &a->gres[i], conf, topo, gres_conf);
		if (r < 0)
			return r;
	}
	r = alloc_build_requests(a);
	if (r == 0 && a->ibvfs_env)
		r = alloc_check_ibvfs(a);
	return r;
}

void alloc_free(struct job_alloc *a)
{
	for (size_t i = 0; i < ALLOC_GRES_NAMES; i++) {
		free(a->gres[i].indices);
		strv_free(a->gres[i].files);
		free(a->gres[i].groups);
	}
	device_list_free(&a->devices);
	free(a->requests);
	free(a->node);
	free(a->cores);
	free(a->cpus);
	free(a->gres_detail);
	memset(a, 0, sizeof(*a));
}
