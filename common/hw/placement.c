/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "hw/placement.h"

#define TOP_BUS_NR 254 /* expanders take bus numbers from the top down */

struct topology {
	hwloc_topology_t h;
};

static inline void bitmap_freep(hwloc_bitmap_t *b)
{
	if (*b)
		hwloc_bitmap_free(*b);
}
#define _cleanup_bitmap_ __attribute__((cleanup(bitmap_freep)))

int topology_load(const char *xml_path, struct topology **out)
{
	struct topology *t;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (hwloc_topology_init(&t->h) < 0) {
		free(t);
		return log_errno(errno, "hwloc_topology_init");
	}
	hwloc_topology_set_io_types_filter(t->h,
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_flags(t->h, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	if (xml_path && hwloc_topology_set_xml(t->h, xml_path) < 0) {
		r = log_errno(errno, "%s: not an hwloc XML topology", xml_path);
		goto fail;
	}
	if (hwloc_topology_load(t->h) < 0) {
		r = log_errno(errno, "%s: cannot load the topology",
			      xml_path ? xml_path : "this machine");
		goto fail;
	}
	*out = t;
	return 0;
fail:
	hwloc_topology_destroy(t->h);
	free(t);
	return r;
}

void topology_free(struct topology *topo)
{
	if (!topo)
		return;
	hwloc_topology_destroy(topo->h);
	free(topo);
}

void *topology_hwloc(const struct topology *topo)
{
	return topo->h;
}

unsigned topology_num_numa_nodes(const struct topology *topo)
{
	int n = hwloc_get_nbobjs_by_type(topo->h, HWLOC_OBJ_NUMANODE);

	return n > 0 ? n : 0;
}

static int bitmap_to_list(hwloc_const_bitmap_t b, char **list)
{
	if (hwloc_bitmap_list_asprintf(list, b) < 0)
		return -ENOMEM;
	return 0;
}

int topology_node_cpus(const struct topology *topo, int node, char **list)
{
	hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(topo->h, node);

	if (!n || !n->cpuset)
		return -ENOENT;
	return bitmap_to_list(n->cpuset, list);
}

/* What slurmd counts as cores: hwloc Cores, or PUs when it has none. */
static hwloc_obj_type_t slurm_core_type(const struct topology *topo)
{
	if (hwloc_get_nbobjs_by_type(topo->h, HWLOC_OBJ_CORE) <= 0)
		return HWLOC_OBJ_PU;
	return HWLOC_OBJ_CORE;
}

/* The Slurm core ids (logical indexes) of NUMA node @node into @cores. */
static int node_core_ids(const struct topology *topo, int node,
			 hwloc_bitmap_t cores)
{
	hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(topo->h, node);
	hwloc_obj_type_t type = slurm_core_type(topo);
	hwloc_obj_t c = NULL;

	if (!n || !n->cpuset)
		return -ENOENT;
	while ((c = hwloc_get_next_obj_by_type(topo->h, type, c)))
		if (hwloc_bitmap_intersects(c->cpuset, n->cpuset))
			hwloc_bitmap_set(cores, c->logical_index);
	return 0;
}

int topology_node_cores(const struct topology *topo, int node, char **list)
{
	_cleanup_bitmap_ hwloc_bitmap_t cores = hwloc_bitmap_alloc();
	int r;

	if (!cores)
		return -ENOMEM;
	r = node_core_ids(topo, node, cores);
	return r < 0 ? r : bitmap_to_list(cores, list);
}

/* Widens core ids @cores to whole sockets into @whole; the first socket
 * @cores holds only part of into *@split_socket (-1: none). A node
 * without Packages is one socket, as slurmd counts it. */
static int widen_to_sockets(const struct topology *topo,
			    hwloc_const_bitmap_t cores, hwloc_bitmap_t whole,
			    int *split_socket)
{
	hwloc_obj_type_t type = slurm_core_type(topo);
	int id;

	*split_socket = -1;
	hwloc_bitmap_foreach_begin(id, cores)
	{
		hwloc_obj_t c = hwloc_get_obj_by_type(topo->h, type, id);
		hwloc_obj_t sock, o = NULL;
		bool split = false;

		if (!c)
			return -EINVAL;
		sock = hwloc_get_ancestor_obj_by_type(topo->h,
						      HWLOC_OBJ_PACKAGE, c);
		if (!sock)
			sock = hwloc_get_root_obj(topo->h);
		while ((o = hwloc_get_next_obj_inside_cpuset_by_type(
				topo->h, sock->cpuset, type, o))) {
			hwloc_bitmap_set(whole, o->logical_index);
			split |= !hwloc_bitmap_isset(cores, o->logical_index);
		}
		if (split && *split_socket < 0)
			*split_socket = sock->type == HWLOC_OBJ_PACKAGE
						? (int)sock->logical_index
						: 0;
	}
	hwloc_bitmap_foreach_end();
	return 0;
}

int topology_node_socket_cores(const struct topology *topo, int node,
			       char **list)
{
	_cleanup_bitmap_ hwloc_bitmap_t cores = hwloc_bitmap_alloc();
	_cleanup_bitmap_ hwloc_bitmap_t whole = hwloc_bitmap_alloc();
	int split, r;

	if (!cores || !whole)
		return -ENOMEM;
	r = node_core_ids(topo, node, cores);
	if (r == 0)
		r = widen_to_sockets(topo, cores, whole, &split);
	return r < 0 ? r : bitmap_to_list(whole, list);
}

int topology_cores_whole_sockets(const struct topology *topo, const char *cores,
				 char **whole, int *split_socket)
{
	_cleanup_bitmap_ hwloc_bitmap_t ids = hwloc_bitmap_alloc();
	_cleanup_bitmap_ hwloc_bitmap_t wide = hwloc_bitmap_alloc();
	int r;

	if (!ids || !wide)
		return -ENOMEM;
	/* hwloc also reads "3-" (to infinity): not a Slurm core list */
	if (!cores[0] || strchr(cores, '[') ||
	    hwloc_bitmap_list_sscanf(ids, cores) < 0 ||
	    hwloc_bitmap_weight(ids) <= 0)
		return -EINVAL;
	r = widen_to_sockets(topo, ids, wide, split_socket);
	return r < 0 ? r : bitmap_to_list(wide, whole);
}

static int obj_numa_node(hwloc_topology_t h, hwloc_obj_t obj)
{
	hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(h, obj);

	if (!parent || !parent->nodeset ||
	    hwloc_bitmap_weight(parent->nodeset) != 1)
		return -1;
	return hwloc_bitmap_first(parent->nodeset);
}

int topology_pci_numa_node(const struct topology *topo, const char *addr)
{
	unsigned dom, bus, dev, fn;
	hwloc_obj_t obj;

	if (sscanf(addr, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return -1;
	obj = hwloc_get_pcidev_by_busid(topo->h, dom, bus, dev, fn);
	if (!obj)
		return -1;
	return obj_numa_node(topo->h, obj);
}

/* ---------------------------------------------------------------------- */

static int refuse(struct plan *plan, enum plan_refusal why, int err,
		  const char *fmt, ...) _printf_(4, 5);
static int refuse(struct plan *plan, enum plan_refusal why, int err,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(plan->reason, sizeof(plan->reason), fmt, ap);
	va_end(ap);
	plan->refusal = why;
	log_error("cannot place the guest: %s", plan->reason);
	return -err;
}

static unsigned gcd(unsigned a, unsigned b)
{
	while (b) {
		unsigned t = a % b;
		a = b;
		b = t;
	}
	return a;
}

struct cpu_walk {
	hwloc_topology_t h;
	struct plan *plan;
	unsigned max;	    /* vCPUs to take */
	unsigned threads;   /* gcd of PUs per host core */
	unsigned *per_core; /* PUs taken per host core (by walk order) */
	unsigned n_cores;
};

static int parse_cpus(hwloc_topology_t h, const char *list, const char *what,
		      hwloc_bitmap_t b, struct plan *plan)
{
	hwloc_const_bitmap_t all = hwloc_topology_get_complete_cpuset(h);

	if (!list || hwloc_bitmap_list_sscanf(b, list) < 0 ||
	    hwloc_bitmap_iszero(b) || hwloc_bitmap_last(b) < 0)
		return refuse(plan, PLAN_REFUSE_CPUS, EINVAL,
			      "%s \"%s\" is not a CPU list like 0-7,16-23",
			      what, list ? list : "");
	if (!hwloc_bitmap_isincluded(b, all)) {
		_cleanup_free_ char *s = NULL;

		bitmap_to_list(all, &s);
		return refuse(plan, PLAN_REFUSE_CPUS, EINVAL,
			      "%s %s are not all CPUs of this node (%s)", what,
			      list, s ? s : "?");
	}
	return 0;
}

/* Adds the PUs of @core within @take to the plan, for cell @cell. */
static int take_core(struct cpu_walk *w, hwloc_obj_t core,
		     hwloc_const_bitmap_t take, unsigned cell)
{
	struct plan *plan = w->plan;
	unsigned count = 0;
	int pu_os;

	hwloc_bitmap_foreach_begin(pu_os, core->cpuset)
	{
		if (!hwloc_bitmap_isset(take, pu_os) || plan->n_vcpus >= w->max)
			continue;
		plan->vcpus[plan->n_vcpus++] = (struct plan_vcpu){
			.pu = pu_os,
			.cell = cell,
			.host_core = core->logical_index,
		};
		count++;
	}
	hwloc_bitmap_foreach_end();
	if (count) {
		w->per_core[w->n_cores++] = count;
		w->threads = gcd(w->threads, count);
	}
	return 0;
}

/* Cores in hwloc logical order, PUs of each core in order. */
static int walk_cell(struct cpu_walk *w, hwloc_const_bitmap_t take,
		     unsigned cell)
{
	hwloc_obj_type_t type = HWLOC_OBJ_CORE;
	hwloc_obj_t c = NULL;

	if (hwloc_get_nbobjs_by_type(w->h, HWLOC_OBJ_CORE) <= 0)
		type = HWLOC_OBJ_PU;
	while ((c = hwloc_get_next_obj_by_type(w->h, type, c))) {
		if (!hwloc_bitmap_intersects(c->cpuset, take))
			continue;
		int r = take_core(w, c, take, cell);
		if (r < 0)
			return r;
	}
	return 0;
}

static int cmp_node(const void *a, const void *b)
{
	hwloc_obj_t x = *(hwloc_obj_t const *)a, y = *(hwloc_obj_t const *)b;

	return (x->os_index > y->os_index) - (x->os_index < y->os_index);
}

static int plan_cpus(hwloc_topology_t h, hwloc_const_bitmap_t job, unsigned max,
		     struct plan *plan)
{
	_cleanup_bitmap_ hwloc_bitmap_t left = hwloc_bitmap_dup(job);
	_cleanup_bitmap_ hwloc_bitmap_t take = hwloc_bitmap_alloc();
	_cleanup_free_ hwloc_obj_t *nodes = NULL;
	_cleanup_free_ unsigned *per_core = NULL;
	int n_nodes = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
	unsigned npu = hwloc_bitmap_weight(job);
	struct cpu_walk w = { .h = h, .plan = plan };
	int r;

	if (!left || !take || n_nodes <= 0)
		return -ENOMEM;
	nodes = calloc(n_nodes, sizeof(*nodes));
	per_core = calloc(npu, sizeof(*per_core));
	plan->vcpus = calloc(npu, sizeof(*plan->vcpus));
	plan->cells = calloc(n_nodes, sizeof(*plan->cells));
	if (!nodes || !per_core || !plan->vcpus || !plan->cells)
		return -ENOMEM;
	for (int i = 0; i < n_nodes; i++)
		nodes[i] = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, i);
	qsort(nodes, n_nodes, sizeof(*nodes), cmp_node);
	/* A guest wider than the job would run vCPUs on other jobs' CPUs. */
	if (max > npu)
		return refuse(plan, PLAN_REFUSE_CPUS, EINVAL,
			      "--vm-cpus=%u is more than the %u CPUs the job "
			      "has on this node; lower --vm-cpus or ask for "
			      "more CPUs (-c, --ntasks-per-node)",
			      max, npu);
	w.max = max ? max : npu;
	w.per_core = per_core;
	for (int i = 0; i < n_nodes && plan->n_vcpus < w.max; i++) {
		struct plan_cell *cell = &plan->cells[plan->n_cells];

		if (!nodes[i]->cpuset)
			continue;
		hwloc_bitmap_and(take, left, nodes[i]->cpuset);
		if (hwloc_bitmap_iszero(take))
			continue;
		hwloc_bitmap_andnot(left, left, take);
		cell->host_node = nodes[i]->os_index;
		cell->first_vcpu = plan->n_vcpus;
		r = walk_cell(&w, take, plan->n_cells);
		if (r < 0)
			return r;
		cell->n_vcpus = plan->n_vcpus - cell->first_vcpu;
		if (cell->n_vcpus)
			plan->n_cells++;
	}
	if (!hwloc_bitmap_iszero(left) && plan->n_vcpus < w.max)
		return refuse(plan, PLAN_REFUSE_CPUS, EINVAL,
			      "some of the job's CPUs are in no NUMA node");
	plan->threads = w.threads ? w.threads : 1;
	return 0;
}

/* sockets x cores x threads must equal the vCPU count for qemu. */
static void plan_guest_topology(struct plan *plan)
{
	unsigned cores = plan->n_vcpus / plan->threads;
	bool even = true;

	for (unsigned i = 1; i < plan->n_cells; i++)
		if (plan->cells[i].n_vcpus != plan->cells[0].n_vcpus)
			even = false;
	plan->sockets = even ? plan->n_cells : 1;
	plan->cores = cores / plan->sockets;
}

static uint64_t node_page_bytes(hwloc_obj_t node, unsigned page_kib,
				bool *listed)
{
	*listed = false;
	for (unsigned i = 0; i < node->attr->numanode.page_types_len; i++) {
		struct hwloc_memory_page_type_s *pt =
			&node->attr->numanode.page_types[i];

		if (pt->size == (uint64_t)page_kib * 1024) {
			*listed = true;
			return pt->count * pt->size;
		}
	}
	return 0;
}

static int check_cell_memory(hwloc_topology_t h, struct plan *plan,
			     const struct plan_cell *cell)
{
	hwloc_obj_t node =
		hwloc_get_numanode_obj_by_os_index(h, cell->host_node);
	uint64_t local, pages;
	bool listed;

	if (!node)
		return -ENOENT;
	local = node->attr->numanode.local_memory >> 20;
	if (local && cell->mem_mib > local)
		return refuse(plan, PLAN_REFUSE_MEMORY, ENOMEM,
			      "%" PRIu64 " MiB for NUMA node %u do not fit in "
			      "its %" PRIu64 " MiB",
			      cell->mem_mib, cell->host_node, local);
	if (!plan->hugepage_kib)
		return 0;
	pages = node_page_bytes(node, plan->hugepage_kib, &listed) >> 20;
	if (listed && cell->mem_mib > pages)
		return refuse(plan, PLAN_REFUSE_MEMORY, ENOMEM,
			      "%" PRIu64 " MiB of %u KiB huge pages wanted on "
			      "NUMA node %u, it has %" PRIu64 " MiB of them "
			      "(vm.nr_hugepages per node)",
			      cell->mem_mib, plan->hugepage_kib,
			      cell->host_node, pages);
	return 0;
}

static int plan_memory(hwloc_topology_t h, const struct plan_request *req,
		       struct plan *plan)
{
	uint64_t page = plan->hugepage_kib ? plan->hugepage_kib / 1024 : 1;
	uint64_t guest, given = 0;

	if (plan->hugepage_kib && plan->hugepage_kib != 2048 &&
	    plan->hugepage_kib != 1048576)
		return refuse(plan, PLAN_REFUSE_MEMORY, EINVAL,
			      "huge page size %u KiB: use 2M or 1G",
			      plan->hugepage_kib);
	/* Slurm gave the job mem_mib here: a guest beyond it would take
	 * other jobs' memory. */
	if (req->guest_mem_mib > req->mem_mib)
		return refuse(plan, PLAN_REFUSE_MEMORY, ENOMEM,
			      "--vm-mem=%" PRIu64 "M is more than the %" PRIu64
			      "M the job has on this node; lower --vm-mem or "
			      "raise --mem",
			      req->guest_mem_mib, req->mem_mib);
	if (!req->guest_mem_mib && req->mem_mib <= req->mem_overhead_mib)
		return refuse(plan, PLAN_REFUSE_MEMORY, ENOMEM,
			      "the job's %" PRIu64
			      " MiB leave nothing after the "
			      "%" PRIu64 " MiB overhead (MemOverhead)",
			      req->mem_mib, req->mem_overhead_mib);
	guest = req->guest_mem_mib ? req->guest_mem_mib
				   : req->mem_mib - req->mem_overhead_mib;
	for (unsigned i = 0; i < plan->n_cells; i++) {
		struct plan_cell *c = &plan->cells[i];
		uint64_t m = i + 1 == plan->n_cells
				     ? guest - given
				     : guest * c->n_vcpus / plan->n_vcpus;

		c->mem_mib = m / page * page;
		given += m;
		if (!c->mem_mib)
			return refuse(plan, PLAN_REFUSE_MEMORY, ENOMEM,
				      "%" PRIu64 " MiB cannot give each of %u "
				      "NUMA cells a %" PRIu64 " MiB page",
				      guest, plan->n_cells, page);
		plan->mem_mib += c->mem_mib;
		int r = check_cell_memory(h, plan, c);
		if (r < 0)
			return r;
	}
	plan->mem_limit_mib = plan->mem_mib + req->mem_overhead_mib;
	if (plan->mem_limit_mib < req->mem_mib)
		plan->mem_limit_mib = req->mem_mib;
	return 0;
}

static void plan_distances(hwloc_topology_t h, struct plan *plan)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1;

	if (hwloc_distances_get_by_name(h, "NUMALatency", &nr, &d, 0) < 0 ||
	    nr < 1) {
		nr = 1;
		if (hwloc_distances_get_by_type(
			    h, HWLOC_OBJ_NUMANODE, &nr, &d,
			    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 ||
		    nr < 1)
			return;
	}
	for (unsigned i = 0; i < plan->n_cells; i++) {
		hwloc_obj_t a = hwloc_get_numanode_obj_by_os_index(
			h, plan->cells[i].host_node);
		unsigned *row = calloc(plan->n_cells, sizeof(*row));

		if (!row)
			break;
		plan->cells[i].distances = row;
		for (unsigned j = 0; j < plan->n_cells; j++) {
			hwloc_obj_t b = hwloc_get_numanode_obj_by_os_index(
				h, plan->cells[j].host_node);
			hwloc_uint64_t ab, ba;

			if (hwloc_distances_obj_pair_values(d, a, b, &ab, &ba) <
				    0 ||
			    ab < 10 || ab > 255 || (i == j && ab != 10)) {
				for (unsigned k = 0; k <= i; k++) {
					free(plan->cells[k].distances);
					plan->cells[k].distances = NULL;
				}
				goto out;
			}
			row[j] = ab;
		}
	}
out:
	hwloc_distances_release(h, d);
}

static int plan_emulator(hwloc_topology_t h, const struct plan_request *req,
			 hwloc_const_bitmap_t job, struct plan *plan)
{
	_cleanup_bitmap_ hwloc_bitmap_t hk = hwloc_bitmap_alloc();
	_cleanup_bitmap_ hwloc_bitmap_t pinned = hwloc_bitmap_alloc();
	int r;

	if (!hk || !pinned)
		return -ENOMEM;
	if (req->housekeeping && *req->housekeeping) {
		r = parse_cpus(h, req->housekeeping, "housekeeping CPUs", hk,
			       plan);
		if (r < 0)
			return r;
		if (hwloc_bitmap_intersects(hk, job))
			return refuse(plan, PLAN_REFUSE_CPUS, EINVAL,
				      "housekeeping CPUs %s overlap the job's "
				      "CPUs %s (CpuSpecList?)",
				      req->housekeeping, req->cpus);
		return bitmap_to_list(hk, &plan->emulator_cpus);
	}
	for (unsigned i = 0; i < plan->n_vcpus; i++)
		hwloc_bitmap_set(pinned, plan->vcpus[i].pu);
	plan->emulator_on_job_cpus = true;
	return bitmap_to_list(pinned, &plan->emulator_cpus);
}

/* ---------------------------------------------------------------------- */

static bool requested(const struct plan_request *req, const char *addr)
{
	for (size_t i = 0; i < req->n_devices; i++)
		if (strcmp(req->devices[i].dev->addr, addr) == 0)
			return true;
	return false;
}

static int plan_device_funcs(const struct plan_request *req,
			     const struct pci_device *dev,
			     struct plan_device *pd, struct plan *plan)
{
	pd->funcs = calloc(dev->n_group + 1, sizeof(*pd->funcs));
	if (!pd->funcs)
		return -ENOMEM;
	pd->funcs[0] =
		(struct plan_pci){ .class = dev->class, .primary = true };
	strcpy(pd->funcs[0].addr, dev->addr);
	pd->n_funcs = 1;
	for (size_t i = 0; i < dev->n_group; i++) {
		const struct pci_function *f = &dev->group[i];

		if (strcmp(f->addr, dev->addr) == 0 || requested(req, f->addr))
			continue;
		if ((f->class >> 16) == 0x06)
			continue; /* bridges stay with the host */
		if (!devices_is_gpu_companion(dev, f))
			return refuse(plan, PLAN_REFUSE_GROUP, EPERM,
				      "IOMMU group %d of %s also holds %s "
				      "(class %06x), which the job was not "
				      "given: a group is passed through whole",
				      dev->iommu_group, dev->addr, f->addr,
				      f->class);
		struct plan_pci *p = &pd->funcs[pd->n_funcs++];
		*p = (struct plan_pci){ .class = f->class };
		strcpy(p->addr, f->addr);
	}
	for (size_t i = 0; i < pd->n_funcs; i++)
		pd->funcs[i].function = i;
	return 0;
}

static int find_cell(const struct plan *plan, int node)
{
	for (unsigned i = 0; i < plan->n_cells; i++)
		if ((int)plan->cells[i].host_node == node)
			return i;
	return -1;
}

/* Without locality: the cell nearest to @node, else cell 0. */
static unsigned nearest_cell(hwloc_topology_t h, const struct plan *plan,
			     int node)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1, best = 0;
	hwloc_uint64_t best_d = UINT64_MAX;
	hwloc_obj_t a =
		node >= 0 ? hwloc_get_numanode_obj_by_os_index(h, node) : NULL;

	if (!a ||
	    hwloc_distances_get_by_type(h, HWLOC_OBJ_NUMANODE, &nr, &d, 0, 0) <
		    0 ||
	    nr < 1)
		return 0;
	for (unsigned i = 0; i < plan->n_cells; i++) {
		hwloc_obj_t b = hwloc_get_numanode_obj_by_os_index(
			h, plan->cells[i].host_node);
		hwloc_uint64_t ab, ba;

		if (hwloc_distances_obj_pair_values(d, a, b, &ab, &ba) == 0 &&
		    ab < best_d) {
			best_d = ab;
			best = i;
		}
	}
	hwloc_distances_release(h, d);
	return best;
}

int topology_device_numa_node(const struct topology *topo,
			      const struct pci_device *dev)
{
	int node = dev->numa_node;

	if (node < 0)
		node = topology_pci_numa_node(topo, dev->addr);
	if (node < 0 && topology_num_numa_nodes(topo) == 1)
		node = hwloc_get_obj_by_type(topo->h, HWLOC_OBJ_NUMANODE, 0)
			       ->os_index;
	return node;
}

static int plan_one_device(const struct topology *topo,
			   const struct plan_request *req, size_t i,
			   struct plan *plan)
{
	const struct plan_device_request *dr = &req->devices[i];
	const struct pci_device *dev = dr->dev;
	struct plan_device *pd = &plan->devices[i];
	int cell, r;

	strcpy(pd->addr, dev->addr);
	strcpy(pd->host_switch, dev->host_switch);
	pd->kind = dev->kind;
	pd->is_vf = dev->is_vf;
	pd->gres_index = dr->gres_index;
	pd->iommu_group = dev->iommu_group;
	snprintf(pd->gres, sizeof(pd->gres), "%s",
		 dr->gres ? dr->gres : pci_kind_name(dev->kind));
	for (size_t j = 0; j < i; j++)
		if (strcmp(req->devices[j].dev->addr, dev->addr) == 0)
			return refuse(plan, PLAN_REFUSE_DEVICE, EINVAL,
				      "device %s is given twice", dev->addr);
	if (dev->iommu_group < 0)
		return refuse(plan, PLAN_REFUSE_DEVICE, ENODEV,
			      "device %s has no IOMMU group: enable the IOMMU "
			      "(intel_iommu=on or amd_iommu=on)",
			      dev->addr);
	r = plan_device_funcs(req, dev, pd, plan);
	if (r < 0)
		return r;
	pd->host_node = topology_device_numa_node(topo, dev);
	cell = find_cell(plan, pd->host_node);
	if (cell < 0 && req->require_locality) {
		if (pd->host_node < 0)
			return refuse(plan, PLAN_REFUSE_LOCALITY, EXDEV,
				      "the NUMA node of device %s is unknown "
				      "(numa_node in sysfs) and RequireLocality"
				      "=yes",
				      dev->addr);
		return refuse(plan, PLAN_REFUSE_LOCALITY, EXDEV,
			      "device %s is on NUMA node %d where the job has "
			      "no CPUs (RequireLocality=yes; submit with "
			      "--gres-flags=enforce-binding)",
			      dev->addr, pd->host_node);
	}
	if (cell < 0) {
		cell = nearest_cell(topo->h, plan, pd->host_node);
		log_warn("device %s on NUMA node %d is remote to the job's "
			 "CPUs; "
			 "placing it in guest cell %d",
			 dev->addr, pd->host_node, cell);
	}
	pd->cell = cell;
	return 0;
}

/* Devices of one cell under one host switch share a guest switch; a lone
 * device under a host switch gains nothing from one and gets a root port. */
static int plan_switches(struct plan *plan)
{
	for (size_t i = 0; i < plan->n_devices; i++) {
		plan->devices[i].sw = -1;
		plan->devices[i].sw_rank = 0;
	}
	for (size_t i = 0; i < plan->n_devices; i++) {
		struct plan_device *d = &plan->devices[i];
		struct plan_switch *s;

		if (!d->host_switch[0] || d->sw >= 0)
			continue;
		for (size_t j = i + 1; j < plan->n_devices; j++) {
			struct plan_device *e = &plan->devices[j];

			if (e->cell != d->cell ||
			    strcmp(e->host_switch, d->host_switch) != 0)
				continue;
			if (d->sw < 0) {
				s = realloc(plan->switches, (plan->n_switches +
							     1) * sizeof(*s));
				if (!s)
					return -ENOMEM;
				plan->switches = s;
				s += plan->n_switches;
				memset(s, 0, sizeof(*s));
				strcpy(s->host_switch, d->host_switch);
				d->sw = plan->n_switches++;
				s->n_down = 1;
			}
			e->sw = d->sw;
			e->sw_rank = plan->switches[d->sw].n_down++;
		}
	}
	return 0;
}

/* Bus numbers behind the root port that device @i opens, 0 if it opens
 * none (it sits on its switch's, opened by the switch's first device). */
static unsigned port_buses(const struct plan *plan, size_t i)
{
	const struct plan_device *d = &plan->devices[i];

	if (d->sw < 0)
		return 1;
	return d->sw_rank ? 0 : 2 + plan->switches[d->sw].n_down;
}

/* One expander per cell with devices; behind it a root port per device or
 * per switch, numbered depth first as the firmware does. */
static int plan_buses(struct plan *plan)
{
	unsigned top = TOP_BUS_NR;

	plan->pxbs = calloc(plan->n_cells, sizeof(*plan->pxbs));
	if (!plan->pxbs)
		return -ENOMEM;
	for (unsigned c = 0; c < plan->n_cells; c++) {
		struct plan_pxb *x = &plan->pxbs[plan->n_pxbs];
		unsigned next;

		for (size_t i = 0; i < plan->n_devices; i++)
			if (plan->devices[i].cell == c)
				x->n_buses += port_buses(plan, i);
		if (!x->n_buses)
			continue;
		if (top < x->n_buses + 16)
			return refuse(plan, PLAN_REFUSE_DEVICE, E2BIG,
				      "too many devices for the guest's PCI "
				      "bus numbers");
		x->cell = c;
		x->bus_nr = top - x->n_buses;
		top = x->bus_nr - 1;
		next = x->bus_nr + 1;
		for (size_t i = 0; i < plan->n_devices; i++) {
			struct plan_device *d = &plan->devices[i];
			struct plan_switch *s;
			unsigned n = port_buses(plan, i);

			if (d->cell != c)
				continue;
			d->pxb = plan->n_pxbs;
			if (d->sw < 0) {
				d->guest_bus = next++;
				continue;
			}
			s = &plan->switches[d->sw];
			if (n) { /* the switch's first device opens its port */
				s->pxb = plan->n_pxbs;
				s->guest_bus = next;
				next += n;
			}
			d->guest_bus = s->guest_bus + 2 + d->sw_rank;
		}
		plan->n_pxbs++;
	}
	return 0;
}

static int plan_devices(const struct topology *topo,
			const struct plan_request *req, struct plan *plan)
{
	int r;

	if (!req->n_devices)
		return 0;
	plan->devices = calloc(req->n_devices, sizeof(*plan->devices));
	if (!plan->devices)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_devices; i++) {
		plan->n_devices = i + 1;
		r = plan_one_device(topo, req, i, plan);
		if (r < 0)
			return r;
	}
	r = plan_switches(plan);
	if (r < 0)
		return r;
	return plan_buses(plan);
}

int plan_compute(const struct topology *topo, const struct plan_request *req,
		 struct plan *plan)
{
	_cleanup_bitmap_ hwloc_bitmap_t job = hwloc_bitmap_alloc();
	int r;

	memset(plan, 0, sizeof(*plan));
	if (!job)
		return -ENOMEM;
	plan->hugepage_kib = req->hugepage_kib;
	r = parse_cpus(topo->h, req->cpus, "the job's CPUs", job, plan);
	if (r < 0)
		return r;
	r = plan_cpus(topo->h, job, req->max_vcpus, plan);
	if (r < 0)
		return r;
	plan_guest_topology(plan);
	r = plan_memory(topo->h, req, plan);
	if (r < 0)
		return r;
	plan_distances(topo->h, plan);
	r = plan_emulator(topo->h, req, job, plan);
	if (r < 0)
		return r;
	return plan_devices(topo, req, plan);
}

void plan_free(struct plan *plan)
{
	for (unsigned i = 0; i < plan->n_cells; i++)
		free(plan->cells[i].distances);
	for (size_t i = 0; i < plan->n_devices; i++)
		free(plan->devices[i].funcs);
	free(plan->vcpus);
	free(plan->cells);
	free(plan->devices);
	free(plan->pxbs);
	free(plan->switches);
	free(plan->emulator_cpus);
	plan->vcpus = NULL;
	plan->cells = NULL;
	plan->devices = NULL;
	plan->pxbs = NULL;
	plan->switches = NULL;
	plan->emulator_cpus = NULL;
	plan->n_vcpus = plan->n_cells = plan->n_pxbs = plan->n_switches = 0;
	plan->n_devices = 0;
}

int plan_cell_vcpus(const struct plan *plan, unsigned cell, char **list)
{
	const struct plan_cell *c;

	if (cell >= plan->n_cells || !plan->cells[cell].n_vcpus)
		return -EINVAL;
	c = &plan->cells[cell];
	if (c->n_vcpus == 1)
		return asprintf(list, "%u", c->first_vcpu) < 0 ? -ENOMEM : 0;
	return asprintf(list, "%u-%u", c->first_vcpu,
			c->first_vcpu + c->n_vcpus - 1) < 0
		       ? -ENOMEM
		       : 0;
}

static void print_pci_device(FILE *f, const struct plan_device *d,
			     const char *indent)
{
	fprintf(f, "guest PCI: %s0000:%02x:00.0 %s%s (host %s)\n", indent,
		d->guest_bus, d->gres, d->is_vf ? " VF" : "", d->addr);
}

/* The guest's PCI tree behind the expanders, as lspci -t shows it. */
static void print_pci_tree(FILE *f, const struct plan *plan)
{
	for (unsigned x = 0; x < plan->n_pxbs; x++) {
		fprintf(f, "guest PCI: expander bus %02x in cell %u\n",
			plan->pxbs[x].bus_nr, plan->pxbs[x].cell);
		for (size_t i = 0; i < plan->n_devices; i++) {
			const struct plan_device *d = &plan->devices[i];
			const struct plan_switch *s;

			if (d->pxb != x || !port_buses(plan, i))
				continue;
			if (d->sw < 0) {
				print_pci_device(f, d, "  root port: ");
				continue;
			}
			s = &plan->switches[d->sw];
			fprintf(f,
				"guest PCI:   root port: switch 0000:%02x:00.0 "
				"(as host switch %s: peer-to-peer, GPUDirect "
				"RDMA)\n",
				s->guest_bus, s->host_switch);
			for (size_t j = i; j < plan->n_devices; j++)
				if (plan->devices[j].sw == d->sw)
					print_pci_device(
						f, &plan->devices[j],
						"    downstream port: ");
		}
	}
}

int plan_summary(const struct plan *plan, char **out)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return -ENOMEM;
	fprintf(f, "vCPUs: %u (sockets %u, cores %u, threads %u)\n",
		plan->n_vcpus, plan->sockets, plan->cores, plan->threads);
	fprintf(f, "memory: %" PRIu64 " MiB%s", plan->mem_mib,
		plan->hugepage_kib ? "" : "\n");
	if (plan->hugepage_kib)
		fprintf(f, " in %u KiB huge pages\n", plan->hugepage_kib);
	for (unsigned c = 0; c < plan->n_cells; c++) {
		const struct plan_cell *cell = &plan->cells[c];

		fprintf(f,
			"cell %u: host NUMA node %u, %" PRIu64
			" MiB strict, vCPU->PU",
			c, cell->host_node, cell->mem_mib);
		for (unsigned v = 0; v < cell->n_vcpus; v++)
			fprintf(f, " %u->%u", cell->first_vcpu + v,
				plan->vcpus[cell->first_vcpu + v].pu);
		fputc('\n', f);
	}
	fprintf(f, "emulator and iothread on CPUs %s%s\n", plan->emulator_cpus,
		plan->emulator_on_job_cpus
			? " (the job's: no housekeeping CPUs)"
			: " (housekeeping)");
	for (size_t i = 0; i < plan->n_devices; i++) {
		const struct plan_device *d = &plan->devices[i];

		fprintf(f,
			"device %s (%s%s, %s index %d, IOMMU group %d): host "
			"node %d -> guest cell %u, guest bus %u",
			d->addr, pci_kind_name(d->kind), d->is_vf ? " VF" : "",
			d->gres, d->gres_index, d->iommu_group, d->host_node,
			d->cell, d->guest_bus);
		for (size_t j = 1; j < d->n_funcs; j++)
			fprintf(f, " +%s", d->funcs[j].addr);
		fputc('\n', f);
	}
	print_pci_tree(f, plan);
	if (fclose(f) != 0)
		return -ENOMEM;
	*out = TAKE_PTR(buf);
	return 0;
}
