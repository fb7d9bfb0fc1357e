/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/gresgen.h"
#include "core/log.h"
#include "hw/slurm_map.h"
#include "core/strutil.h"

static bool group_seen(const struct gres_lines *lines, int group)
{
	for (size_t i = 0; i < lines->n; i++)
		if (lines->v[i].verdict == GRES_LINE &&
		    lines->v[i].dev->iommu_group == group)
			return true;
	return false;
}

static enum gres_verdict gres_verdict(const struct vmconf *conf,
				      const struct gres_lines *lines,
				      const struct pci_device *dev)
{
	bool vfio = dev->driver && strcmp(dev->driver, "vfio-pci") == 0;

	if (dev->iommu_group < 0)
		return GRES_SKIP_NO_IOMMU;
	if (!vfio && conf->device_binding == DEVICE_BINDING_PREBOUND)
		return GRES_SKIP_NOT_VFIO;
	if (group_seen(lines, dev->iommu_group))
		return GRES_SKIP_GROUP_DONE;
	return GRES_LINE;
}

static int gres_line_add(const struct vmconf *conf, const struct topology *topo,
			 enum gres_cores_rule rule, struct gres_lines *lines,
			 const struct pci_device *dev, const char *name)
{
	struct gres_line *l = &lines->v[lines->n];
	int node, r;

	*l = (struct gres_line){ .name = name,
				 .dev = dev,
				 .verdict = gres_verdict(conf, lines, dev) };
	lines->n++;
	if (l->verdict != GRES_LINE)
		return 0;
	if (asprintf(&l->file, "%s/%d", conf->vfio_dir, dev->iommu_group) < 0) {
		l->file = NULL;
		return -ENOMEM;
	}
	node = topology_device_numa_node(topo, dev);
	if (node < 0)
		return 0; /* unknown: the line gets no Cores= */
	if (rule == GRES_CORES_WHOLE_SOCKETS)
		r = topology_node_socket_cores(topo, node, &l->cores);
	else
		r = topology_node_cores(topo, node, &l->cores);
	if (r < 0)
		l->cores = NULL;
	return 0;
}

int gres_lines_build_cores(const struct vmconf *conf,
			   const struct topology *topo,
			   const struct device_list *devices,
			   enum gres_cores_rule rule, struct gres_lines *lines)
{
	int r = 0;

	lines->n = 0;
	lines->v = calloc(devices->n + 1, sizeof(*lines->v));
	if (!lines->v)
		return -ENOMEM;
	for (size_t i = 0; r == 0 && i < devices->n; i++)
		if (devices->v[i].kind == PCI_KIND_GPU)
			r = gres_line_add(conf, topo, rule, lines,
					  &devices->v[i], "gpu");
	for (size_t i = 0; r == 0 && i < devices->n; i++)
		if (devices->v[i].is_vf &&
		    gres_is_primary(&devices->v[i], "ibvf"))
			r = gres_line_add(conf, topo, rule, lines,
					  &devices->v[i], "ibvf");
	if (r < 0)
		gres_lines_free(lines);
	return r;
}

int gres_lines_build(const struct vmconf *conf, const struct topology *topo,
		     const struct device_list *devices,
		     struct gres_lines *lines)
{
	return gres_lines_build_cores(conf, topo, devices, GRES_CORES_NUMA_NODE,
				      lines);
}

int gres_lines_files(const struct gres_lines *lines, const char *name,
		     char ***files)
{
	size_t k = 0;

	*files = calloc(lines->n + 1, sizeof(**files));
	if (!*files)
		return -ENOMEM;
	for (size_t i = 0; i < lines->n; i++) {
		if (lines->v[i].verdict != GRES_LINE ||
		    strcmp(lines->v[i].name, name) != 0)
			continue;
		(*files)[k] = strdup(lines->v[i].file);
		if (!(*files)[k++]) {
			strv_free(*files);
			*files = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

void gres_lines_free(struct gres_lines *lines)
{
	for (size_t i = 0; lines->v && i < lines->n; i++) {
		free(lines->v[i].file);
		free(lines->v[i].cores);
	}
	free(lines->v);
	lines->v = NULL;
	lines->n = 0;
}

bool gres_is_primary(const struct pci_device *dev, const char *name)
{
	if (strcmp(name, "gpu") == 0)
		return dev->kind == PCI_KIND_GPU;
	return dev->kind == PCI_KIND_IB || dev->kind == PCI_KIND_ROCE;
}

int gres_file_functions(const char *sysfs_root, const char *name,
			const char *file, char ***addrs)
{
	struct device_list list = { 0 };
	size_t k = 0;
	int group, r;

	*addrs = NULL;
	r = slurm_vfio_file_group(file, &group);
	if (r < 0)
		return r;
	r = devices_read_group(sysfs_root, group, &list);
	if (r < 0)
		return r;
	*addrs = calloc(list.n + 1, sizeof(**addrs));
	if (!*addrs) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < list.n; i++) {
		if (!gres_is_primary(&list.v[i], name))
			continue;
		(*addrs)[k] = strdup(list.v[i].addr);
		if (!(*addrs)[k++]) {
			r = -ENOMEM;
			goto out;
		}
	}
	r = k ? 0 : -ENODEV;
out:
	device_list_free(&list);
	if (r < 0) {
		strv_free(*addrs);
		*addrs = NULL;
	}
	return r;
}

static int gres_pair_cmp(const void *a, const void *b)
{
	const struct gres_pair *x = a, *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return pci_addr_cmp(x->addr, y->addr);
}

int ibvfs_env_parse(const char *s, struct gres_pair **pairs, size_t *n)
{
	_cleanup_strv_free_ char **items = NULL;
	_cleanup_free_ struct gres_pair *v = NULL;
	size_t count;
	int r;

	*pairs = NULL;
	*n = 0;
	if (!*s)
		return 0;
	if (s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
		return -EINVAL; /* strv_split would drop empty items */
	r = strv_split(s, ',', &items);
	if (r < 0)
		return r;
	count = strv_length(items);
	if (count > IBVFS_ENV_MAX)
		return -E2BIG;
	v = calloc(count + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		char *eq = strchr(items[i], '=');

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		if (str_to_uint(items[i], &v[i].index) < 0 ||
		    pci_addr_canonical(eq + 1, v[i].addr) < 0 ||
		    strcmp(eq + 1, v[i].addr) != 0)
			return -EINVAL;
		if (i && gres_pair_cmp(&v[i - 1], &v[i]) >= 0)
			return -EINVAL; /* unordered or repeated */
	}
	*pairs = TAKE_PTR(v);
	*n = count;
	return 0;
}

char *ibvfs_env_entry(unsigned index, char *const *addrs)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; addrs[i]; i++)
		fprintf(f, "%s%u=%s", i ? "," : "", index, addrs[i]);
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}
