/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plan_bench: how long the prolog spends planning a guest for a whole
 * 2-socket, 128-core (256 PU) node with 8 GPUs and 16 IB VFs, against the
 * peers it cannot avoid: loading the hwloc topology from XML (what the
 * prolog does first) and an empty run of the same loop.
 *
 *   build/bench/plan_bench [ITERATIONS]
 *
 * The topology is synthetic (hwloc "pack:2 numa:1 l3:1 core:64 pu:2" with
 * 256 GB per node and a 10/21 latency matrix), written to a temporary XML
 * file; devices are built in memory, half on each node, each in its own
 * IOMMU group. Prints the median of each step in ms and the ratios; exits 1
 * if planning + XML take 100 ms or more.
 */
#include "config.h"

#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "hw/devices.h"
#include "vm/domain.h"
#include "core/log.h"
#include "hw/placement.h"

#define N_GPUS	 8
#define N_VFS	 16
#define N_DEVS	 (N_GPUS + N_VFS)
#define LIMIT_MS 100.0

static double now_ms(void)
{
	return clock_now_s() * 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static int write_topology(const char *path)
{
	hwloc_topology_t t;
	hwloc_obj_t nodes[2];
	hwloc_uint64_t lat[4] = { 10, 21, 21, 10 };
	hwloc_distances_add_handle_t h;
	int r = -1;

	if (hwloc_topology_init(&t) < 0)
		return -1;
	if (hwloc_topology_set_synthetic(
		    t, "pack:2 numa:1(memory=256GB) l3:1 core:64 pu:2") < 0 ||
	    hwloc_topology_load(t) < 0)
		goto out;
	nodes[0] = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, 0);
	nodes[1] = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, 1);
	h = hwloc_distances_add_create(
		t, "NUMALatency",
		HWLOC_DISTANCES_KIND_FROM_USER |
			HWLOC_DISTANCES_KIND_MEANS_LATENCY,
		0);
	if (!h || hwloc_distances_add_values(t, h, 2, nodes, lat, 0) < 0 ||
	    hwloc_distances_add_commit(t, h, 0) < 0)
		goto out;
	r = hwloc_topology_export_xml(t, path, 0);
out:
	hwloc_topology_destroy(t);
	return r;
}

struct bench_devs {
	struct pci_device dev[N_DEVS];
	struct pci_function fn[N_DEVS];
	struct plan_device_request req[N_DEVS];
};

static void make_devices(struct bench_devs *b)
{
	for (int i = 0; i < N_DEVS; i++) {
		struct pci_device *d = &b->dev[i];
		bool gpu = i < N_GPUS;
		int node = gpu ? i / (N_GPUS / 2) : (i - N_GPUS) / (N_VFS / 2);

		memset(d, 0, sizeof(*d));
		if (gpu)
			snprintf(d->addr, sizeof(d->addr), "0000:%02x:00.0",
				 0x10 + 0x40 * node + i);
		else
			snprintf(d->addr, sizeof(d->addr), "0000:%02x:00.%d",
				 0x30 + 0x80 * node, 1 + (i - N_GPUS) % 7);
		if (!gpu && (i - N_GPUS) % 8 == 7) /* 8th VF: next slot */
			d->addr[9] = '1';
		d->vendor = gpu ? 0x10de : 0x15b3;
		d->class = gpu ? 0x030200 : 0x020700;
		d->kind = gpu ? PCI_KIND_GPU : PCI_KIND_IB;
		d->is_vf = !gpu;
		d->numa_node = node;
		d->iommu_group = 100 + i;
		strcpy(b->fn[i].addr, d->addr);
		b->fn[i].class = d->class;
		b->fn[i].is_vf = d->is_vf;
		d->group = &b->fn[i];
		d->n_group = 1;
		b->req[i] = (struct plan_device_request){
			.dev = d,
			.gres = gpu ? "gpu" : "ibvf",
			.gres_index = gpu ? i : i - N_GPUS
		};
	}
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/plan_bench-XXXXXX.xml";
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	double *t_load, *t_plan, *t_xml, *t_empty;
	struct bench_devs devs;
	struct plan_request req = {
		.cpus = "0-255",
		.mem_mib = 448 * 1024,
		.mem_overhead_mib = 512,
		.require_locality = true,
		.devices = devs.req,
		.n_devices = N_DEVS,
	};
	struct domain_params dp = {
		.name = "bench",
		.job_id = 1,
		.uid = 1000,
		.image = "/img/base.qcow2",
		.overlay = "/run/ov.qcow2",
		.domain_type = "kvm",
		.cpu_mode = "host-passthrough",
	};
	double load, plan_ms, xml_ms, empty;
	int fd, rc = 0;

	log_open("plan_bench");
	if (iters < 5)
		iters = 5;
	fd = mkstemps(path, 4);
	if (fd < 0 || write_topology(path) < 0) {
		fprintf(stderr, "plan_bench: cannot write %s\n", path);
		return 1;
	}
	close(fd);
	make_devices(&devs);
	t_load = calloc(iters, sizeof(double));
	t_plan = calloc(iters, sizeof(double));
	t_xml = calloc(iters, sizeof(double));
	t_empty = calloc(iters, sizeof(double));
	for (int i = 0; i < iters; i++) {
		struct topology *topo = NULL;
		struct plan plan;
		char *xml = NULL;
		double t0 = now_ms(), t1, t2, t3;

		if (topology_load(path, &topo) < 0)
			return 1;
		t1 = now_ms();
		if (plan_compute(topo, &req, &plan) < 0) {
			fprintf(stderr, "plan_bench: refused: %s\n",
				plan.reason);
			return 1;
		}
		t2 = now_ms();
		if (domain_xml_build(&plan, &dp, &xml) < 0)
			return 1;
		t3 = now_ms();
		t_load[i] = t1 - t0;
		t_plan[i] = t2 - t1;
		t_xml[i] = t3 - t2;
		t_empty[i] = now_ms() - t3;
		if (i == 0)
			printf("plan: %u vCPUs (%ux%ux%u), %u cells, %zu "
			       "devices "
			       "on %u expanders, %zu bytes of XML\n",
			       plan.n_vcpus, plan.sockets, plan.cores,
			       plan.threads, plan.n_cells, plan.n_devices,
			       plan.n_pxbs, strlen(xml));
		free(xml);
		plan_free(&plan);
		topology_free(topo);
	}
	unlink(path);
	load = median(t_load, iters);
	plan_ms = median(t_plan, iters);
	xml_ms = median(t_xml, iters);
	empty = median(t_empty, iters);
	printf("medians over %d runs (2 sockets, 128 cores, 256 PUs, %d GPUs, "
	       "%d VFs):\n",
	       iters, N_GPUS, N_VFS);
	printf("  load topology XML  %8.3f ms\n", load);
	printf("  plan_compute       %8.3f ms  (%.2fx the topology load)\n",
	       plan_ms, plan_ms / load);
	printf("  domain_xml_build   %8.3f ms  (%.2fx the topology load)\n",
	       xml_ms, xml_ms / load);
	printf("  plan + XML         %8.3f ms  (%.1f%% of the %.0f ms "
	       "budget)\n",
	       plan_ms + xml_ms, 100 * (plan_ms + xml_ms) / LIMIT_MS, LIMIT_MS);
	printf("  empty timer pair   %8.4f ms\n", empty);
	/* Machine-readable lines for bench/run.sh:
	 * BENCH|name|value|unit|peer (same run)|ratio|note */
	printf("BENCH|planner: plan_compute, %d GPUs + %d VFs on 256 PUs|%.3f|ms|"
	       "hwloc topology load: %.3f ms|%.2f|host CPU, not a guest\n",
	       N_GPUS, N_VFS, plan_ms, load, plan_ms / load);
	printf("BENCH|planner: domain XML|%.3f|ms|hwloc topology load: %.3f ms|"
	       "%.2f|host CPU, not a guest\n",
	       xml_ms, load, xml_ms / load);
	printf("BENCH|planner: plan + XML|%.3f|ms|budget: %.0f ms|%.3f|host CPU, "
	       "not a guest\n",
	       plan_ms + xml_ms, LIMIT_MS, (plan_ms + xml_ms) / LIMIT_MS);
	if (plan_ms + xml_ms >= LIMIT_MS) {
		printf("FAIL: planning takes %.1f ms, the budget is %.0f ms\n",
		       plan_ms + xml_ms, LIMIT_MS);
		rc = 1;
	}
	free(t_load);
	free(t_plan);
	free(t_xml);
	free(t_empty);
	return rc;
}
