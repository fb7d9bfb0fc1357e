/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The planner on real machines' hwloc topologies (from hwloc's own test
 * suite, tests/fixtures/topology/) and the sysfs fixture's devices.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <hwloc.h>

#include "hw/devices.h"
#include "core/macro.h"
#include "core/log.h"
#include "vm/domain.h"
#include "hw/placement.h"

#define TOPO(name) SRCDIR "/tests/fixtures/topology/" name
#define NODE	   SRCDIR "/tests/fixtures/sysfs/node-gpu-ib"
#define DGX	   SRCDIR "/tests/fixtures/sysfs/dgx"
#define K40_CX3	   SRCDIR "/tests/fixtures/sysfs/k40-cx3"

/* Westmere-EP 2x6 cores, SMT; PUs of a core are n and n+12 */
#define WESTMERE TOPO("24em64t-2n6c2t-pci.xml")
/* Sandy Bridge-EP 2x8 cores, SMT: node 0 = 0-7,16-23, node 1 = 8-15,24-31 */
#define SANDY TOPO("32em64t-2n8c2t-pci-normalio.xml")
/* 4 NUMA nodes x 6 cores, no SMT, PUs interleaved, distances 10/26 */
#define OPTERON TOPO("96em64t-4n4d3ca2co-pci.xml")
/* POWER8 2 sockets, GPUs on PCI domains 0002/0003 and 000a/000b */
#define POWER8 TOPO("power8gpudistances.xml")

static struct topology *load(const char *path)
{
	struct topology *t = NULL;

	assert_int_equal(topology_load(path, &t), 0);
	return t;
}

static void check_pins_unique(const struct plan *p)
{
	for (unsigned i = 0; i < p->n_vcpus; i++)
		for (unsigned j = i + 1; j < p->n_vcpus; j++)
			assert_int_not_equal(p->vcpus[i].pu, p->vcpus[j].pu);
	assert_int_equal(p->sockets * p->cores * p->threads, p->n_vcpus);
	for (unsigned c = 0, v = 0; c < p->n_cells; c++) {
		assert_int_equal(p->cells[c].first_vcpu, v);
		assert_int_equal(p->cells[c].n_vcpus % p->threads, 0);
		v += p->cells[c].n_vcpus;
	}
}

static int plan_simple(struct topology *t, const char *cpus, uint64_t mem,
		       struct plan *p)
{
	struct plan_request req = { .cpus = cpus,
				    .mem_mib = mem,
				    .mem_overhead_mib = 512,
				    .require_locality = true };

	return plan_compute(t, &req, p);
}

static void test_westmere_smt(void **state)
{
	struct topology *t = load(WESTMERE);
	struct plan p;
	const unsigned pins[] = { 0, 12, 2, 14 };

	/* two whole cores of node 0: threads of one guest core each */
	assert_int_equal(plan_simple(t, "0,2,12,14", 4096, &p), 0);
	assert_int_equal(p.n_vcpus, 4);
	assert_int_equal(p.threads, 2);
	assert_int_equal(p.cores, 2);
	assert_int_equal(p.sockets, 1);
	assert_int_equal(p.n_cells, 1);
	assert_int_equal(p.cells[0].host_node, 0);
	assert_int_equal(p.mem_mib, 3584);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(p.vcpus[i].pu, pins[i]);
	assert_non_null(p.cells[0].distances);
	assert_int_equal(p.cells[0].distances[0], 10);
	assert_true(p.emulator_on_job_cpus);
	assert_string_equal(p.emulator_cpus, "0,2,12,14");
	check_pins_unique(&p);
	plan_free(&p);
	topology_free(t);
}

static void test_sandy_two_nodes_uneven(void **state)
{
	struct topology *t = load(SANDY);
	struct plan p;

	/* 3 cores on node 0, 1 core on node 1, both threads each */
	assert_int_equal(plan_simple(t, "0-2,16-18,8,24", 8704, &p), 0);
	check_pins_unique(&p);
	assert_int_equal(p.n_vcpus, 8);
	assert_int_equal(p.n_cells, 2);
	assert_int_equal(p.cells[0].host_node, 0);
	assert_int_equal(p.cells[0].n_vcpus, 6);
	assert_int_equal(p.cells[1].host_node, 1);
	assert_int_equal(p.cells[1].n_vcpus, 2);
	assert_int_equal(p.threads, 2);
	/* uneven cells: qemu wants equal sockets, so one socket */
	assert_int_equal(p.sockets, 1);
	assert_int_equal(p.cores, 4);
	assert_int_equal(p.vcpus[0].pu, 0);
	assert_int_equal(p.vcpus[1].pu, 16);
	assert_int_equal(p.vcpus[6].pu, 8);
	assert_int_equal(p.vcpus[7].pu, 24);
	/* memory by vCPUs: 8192 * 6/8 and the rest */
	assert_int_equal(p.cells[0].mem_mib, 6144);
	assert_int_equal(p.cells[1].mem_mib, 2048);
	assert_int_equal(p.cells[0].distances[1], 20);
	assert_int_equal(p.cells[1].distances[0], 20);
	assert_int_equal(p.cells[1].distances[1], 10);
	plan_free(&p);

	/* even: 2 cores per node -> 2 sockets */
	assert_int_equal(plan_simple(t, "0-1,16-17,8-9,24-25", 8704, &p), 0);
	check_pins_unique(&p);
	assert_int_equal(p.sockets, 2);
	assert_int_equal(p.cores, 2);
	assert_int_equal(p.threads, 2);
	plan_free(&p);

	/* uneven SMT: one core with both threads, three with one */
	assert_int_equal(plan_simple(t, "0-3,16", 4096, &p), 0);
	check_pins_unique(&p);
	assert_int_equal(p.threads, 1);
	assert_int_equal(p.cores, 5);
	plan_free(&p);
	topology_free(t);
}

static void test_sandy_max_vcpus_and_housekeeping(void **state)
{
	struct topology *t = load(SANDY);
	struct plan_request req = { .cpus = "2-7,18-23",
				    .mem_mib = 4096,
				    .max_vcpus = 4,
				    .housekeeping = "0,16" };
	struct plan p;

	assert_int_equal(plan_compute(t, &req, &p), 0);
	check_pins_unique(&p);
	assert_int_equal(p.n_vcpus, 4);
	assert_int_equal(p.threads, 2);
	assert_string_equal(p.emulator_cpus, "0,16");
	assert_false(p.emulator_on_job_cpus);
	plan_free(&p);
	topology_free(t);
}

static void test_opteron_four_nodes(void **state)
{
	struct topology *t = load(OPTERON);
	struct plan p;
	char *summary = NULL;

	/* PUs 0,4 are node 0; 24,28 node 1 (interleaved numbering) */
	assert_int_equal(plan_simple(t, "0,4,24,28", 4608, &p), 0);
	check_pins_unique(&p);
	assert_int_equal(p.n_cells, 2);
	assert_int_equal(p.threads, 1);
	assert_int_equal(p.sockets, 2);
	assert_int_equal(p.cores, 2);
	assert_int_equal(p.vcpus[0].pu, 0);
	assert_int_equal(p.vcpus[1].pu, 4);
	assert_int_equal(p.vcpus[2].pu, 24);
	assert_int_equal(p.vcpus[3].pu, 28);
	assert_int_equal(p.cells[0].distances[1], 26);
	assert_int_equal(plan_summary(&p, &summary), 0);
	assert_non_null(strstr(summary, "cell 1: host NUMA node 1"));
	free(summary);
	plan_free(&p);
	topology_free(t);
}

static void test_power8_gpu_locality(void **state)
{
	struct topology *t = load(POWER8);
	struct pci_function g0 = { .addr = "0002:01:00.0", .class = 0x030200 };
	struct pci_function g2 = { .addr = "000a:01:00.0", .class = 0x030200 };
	struct pci_device near = { .addr = "0002:01:00.0",
				   .kind = PCI_KIND_GPU,
				   .class = 0x030200,
				   .numa_node = -1,
				   .iommu_group = 1,
				   .group = &g0,
				   .n_group = 1 };
	struct pci_device far = { .addr = "000a:01:00.0",
				  .kind = PCI_KIND_GPU,
				  .class = 0x030200,
				  .numa_node = -1,
				  .iommu_group = 2,
				  .group = &g2,
				  .n_group = 1 };
	struct plan_device_request devs[] = {
		{ .dev = &near, .gres = "gpu", .gres_index = 0 },
		{ .dev = &far, .gres = "gpu", .gres_index = 2 },
	};
	struct plan_request req = { .cpus = "0,1,8,9",
				    .mem_mib = 4096,
				    .require_locality = true,
				    .devices = devs,
				    .n_devices = 1 };
	struct plan p;

	assert_int_equal(topology_pci_numa_node(t, "0002:01:00.0"), 0);
	assert_int_equal(topology_pci_numa_node(t, "000a:01:00.0"), 1);
	assert_int_equal(plan_compute(t, &req, &p), 0);
	check_pins_unique(&p);
	assert_int_equal(p.n_devices, 1);
	assert_int_equal(p.devices[0].host_node, 0);
	assert_int_equal(p.devices[0].cell, 0);
	assert_int_equal(p.n_pxbs, 1);
	assert_int_equal(p.devices[0].guest_bus, p.pxbs[0].bus_nr + 1);
	plan_free(&p);

	/* the GPU of socket 1 for a job on socket 0: refused */
	req.n_devices = 2;
	assert_int_equal(plan_compute(t, &req, &p), -EXDEV);
	assert_int_equal(p.refusal, PLAN_REFUSE_LOCALITY);
	assert_non_null(strstr(p.reason, "000a:01:00.0 is on NUMA node 1"));
	plan_free(&p);

	/* allowed without RequireLocality: nearest cell */
	req.require_locality = false;
	assert_int_equal(plan_compute(t, &req, &p), 0);
	assert_int_equal(p.devices[1].cell, 0);
	assert_int_equal(p.devices[1].host_node, 1);
	plan_free(&p);

	/* a job on both sockets: each GPU in its own cell and expander */
	req.cpus = "0,1,8,9,80,81,88,89";
	req.require_locality = true;
	assert_int_equal(plan_compute(t, &req, &p), 0);
	assert_int_equal(p.n_cells, 2);
	assert_int_equal(p.devices[0].cell, 0);
	assert_int_equal(p.devices[1].cell, 1);
	assert_int_equal(p.n_pxbs, 2);
	assert_true(p.pxbs[1].bus_nr + p.pxbs[1].n_buses < p.pxbs[0].bus_nr);
	plan_free(&p);
	topology_free(t);
}

/* Devices from the sysfs fixture on the 2-node Sandy Bridge topology. */
struct fixture_devs {
	struct pci_device d[8];
	struct plan_device_request r[8];
	size_t n;
};

static void add_dev_from(struct fixture_devs *f, const char *sysfs,
			 const char *addr, const char *gres)
{
	assert_int_equal(devices_read(sysfs, addr, &f->d[f->n]), 0);
	f->r[f->n] = (struct plan_device_request){ .dev = &f->d[f->n],
						   .gres = gres,
						   .gres_index = (int)f->n };
	f->n++;
}

static void add_dev(struct fixture_devs *f, const char *addr, const char *gres)
{
	add_dev_from(f, NODE, addr, gres);
}

static void free_devs(struct fixture_devs *f)
{
	for (size_t i = 0; i < f->n; i++)
		pci_device_clear(&f->d[i]);
	f->n = 0;
}

static int plan_devs(struct topology *t, const char *cpus,
		     struct fixture_devs *f, bool locality, struct plan *p)
{
	struct plan_request req = { .cpus = cpus,
				    .mem_mib = 8192,
				    .mem_overhead_mib = 512,
				    .require_locality = locality,
				    .devices = f->r,
				    .n_devices = f->n };

	return plan_compute(t, &req, p);
}

static void test_groups(void **state)
{
	struct topology *t = load(SANDY);
	struct fixture_devs f = { 0 };
	struct plan p;

	/* GPU with its HDMI audio function in the group: both go */
	add_dev(&f, "0000:01:00.0", "gpu");
	assert_int_equal(plan_devs(t, "0-3", &f, true, &p), 0);
	assert_int_equal(p.devices[0].n_funcs, 2);
	assert_string_equal(p.devices[0].funcs[1].addr, "0000:01:00.1");
	assert_false(p.devices[0].funcs[1].primary);
	assert_int_equal(p.devices[0].funcs[1].function, 1);
	plan_free(&p);
	free_devs(&f);

	/* one of two GPUs behind a switch without ACS: refused */
	add_dev(&f, "0000:41:00.0", "gpu");
	assert_int_equal(plan_devs(t, "8-11", &f, true, &p), -EPERM);
	assert_int_equal(p.refusal, PLAN_REFUSE_GROUP);
	assert_non_null(strstr(p.reason, "IOMMU group 20"));
	assert_non_null(strstr(p.reason, "0000:42:00.0"));
	plan_free(&p);

	/* both of them: fine, the bridge stays with the host */
	add_dev(&f, "0000:42:00.0", "gpu");
	assert_int_equal(plan_devs(t, "8-11", &f, true, &p), 0);
	assert_int_equal(p.n_devices, 2);
	assert_int_equal(p.devices[0].n_funcs, 1);
	assert_int_equal(p.devices[1].n_funcs, 1);
	assert_int_equal(p.n_pxbs, 1);
	assert_int_equal(p.pxbs[0].n_buses, 2);
	plan_free(&p);
	free_devs(&f);

	/* ConnectX-3 VFs share a group: one alone is refused */
	add_dev(&f, "0000:c1:00.1", "ibvf");
	assert_int_equal(plan_devs(t, "0-3", &f, false, &p), -EPERM);
	assert_int_equal(p.refusal, PLAN_REFUSE_GROUP);
	plan_free(&p);
	free_devs(&f);
	topology_free(t);
}

static void test_locality_from_sysfs(void **state)
{
	struct topology *t = load(SANDY);
	struct fixture_devs f = { 0 };
	struct plan p;

	/* VF on node 1 (sysfs numa_node) for a job on node 0 */
	add_dev(&f, "0000:81:00.1", "ibvf");
	assert_int_equal(plan_devs(t, "0-3", &f, true, &p), -EXDEV);
	assert_int_equal(p.refusal, PLAN_REFUSE_LOCALITY);
	assert_non_null(strstr(p.reason, "NUMA node 1"));
	plan_free(&p);
	assert_int_equal(plan_devs(t, "8-11", &f, true, &p), 0);
	assert_int_equal(p.devices[0].host_node, 1);
	assert_true(p.devices[0].is_vf);
	plan_free(&p);
	free_devs(&f);

	/* CX-3 without numa_node, not in this topology: unknown node */
	add_dev(&f, "0000:c1:00.1", "ibvf");
	add_dev(&f, "0000:c1:00.2", "ibvf");
	assert_int_equal(plan_devs(t, "0-3", &f, true, &p), -EXDEV);
	assert_non_null(strstr(p.reason, "unknown"));
	plan_free(&p);
	assert_int_equal(plan_devs(t, "0-3", &f, false, &p), 0);
	assert_int_equal(p.devices[0].cell, 0);
	plan_free(&p);
	free_devs(&f);
	topology_free(t);
}

static const struct plan_device *planned(const struct plan *p, const char *addr)
{
	for (size_t i = 0; i < p->n_devices; i++)
		if (strcmp(p->devices[i].addr, addr) == 0)
			return &p->devices[i];
	fail_msg("%s not planned", addr);
	return NULL;
}

/* The guest bus (libvirt's controller index) of the hostdev whose source
 * address holds @host, in domain XML @xml. */
static void assert_guest_bus(const char *xml, const char *host,
			     const char *want)
{
	for (const char *s = strstr(xml, "<source>"); s;
	     s = strstr(s + 1, "<source>")) {
		const char *end = strstr(s, "</source>");
		const char *h = strstr(s, host);
		const char *g;

		if (!end || !h || h > end)
			continue;
		g = strstr(end, " bus=\"");
		assert_non_null(g);
		assert_memory_equal(g + 6, want, strlen(want));
		return;
	}
	fail_msg("no hostdev from %s", host);
}

/* The domain's devices only: no disks, no channel. */
static const struct domain_params dgx_domain = {
	.name = "slurm-vm-42",
	.binding = DEVICE_BINDING_PREBOUND,
	.attach = DEVICE_ATTACH_VFIO,
};

/* A DGX-like board: GPUs and HCAs in pairs under PCIe switches. */
static void test_dgx_switches(void **state)
{
	struct topology *t = load(SANDY);
	struct fixture_devs f = { 0 };
	const struct plan_device *g0, *g1, *vf, *lone, *far, *far_vf;
	_cleanup_free_ char *summary = NULL, *xml = NULL;
	struct plan p;

	add_dev_from(&f, DGX, "0000:04:00.0", "gpu");
	add_dev_from(&f, DGX, "0000:90:00.0", "gpu");  /* node 1, root port */
	add_dev_from(&f, DGX, "0000:0c:00.2", "ibvf"); /* node 0, 2nd switch */
	add_dev_from(&f, DGX, "0000:86:00.1", "ibvf"); /* node 1, alone */
	add_dev_from(&f, DGX, "0000:05:00.0", "gpu");  /* node 0, 1st switch */
	add_dev_from(&f, DGX, "0000:06:00.1", "ibvf"); /* node 0, 1st switch */
	assert_string_equal(f.d[0].host_switch, "0000:02:00.0");
	assert_string_equal(f.d[5].host_switch, "0000:02:00.0");
	assert_string_equal(f.d[2].host_switch, "0000:08:00.0");
	assert_string_equal(f.d[1].host_switch, "");
	assert_int_equal(plan_devs(t, "0-3,8-11", &f, true, &p), 0);
	/* one guest switch: the three devices of host switch 02:00.0 */
	assert_int_equal(p.n_switches, 1);
	assert_string_equal(p.switches[0].host_switch, "0000:02:00.0");
	assert_int_equal(p.switches[0].n_down, 3);
	g0 = planned(&p, "0000:04:00.0");
	g1 = planned(&p, "0000:05:00.0");
	vf = planned(&p, "0000:06:00.1");
	lone = planned(&p, "0000:0c:00.2");
	far = planned(&p, "0000:90:00.0");
	far_vf = planned(&p, "0000:86:00.1");
	assert_int_equal(g0->sw, 0);
	assert_int_equal(g1->sw, 0);
	assert_int_equal(vf->sw, 0);
	assert_int_equal(lone->sw, -1);
	assert_int_equal(far->sw, -1);
	assert_int_equal(far_vf->sw, -1); /* alone under its host switch */
	/* depth first: root port, upstream, then each downstream's bus */
	assert_int_equal(g0->sw_rank, 0);
	assert_int_equal(g1->sw_rank, 1);
	assert_int_equal(vf->sw_rank, 2);
	assert_int_equal(g0->guest_bus, p.switches[0].guest_bus + 2);
	assert_int_equal(g1->guest_bus, p.switches[0].guest_bus + 3);
	assert_int_equal(vf->guest_bus, p.switches[0].guest_bus + 4);
	assert_int_equal(g0->cell, 0);
	assert_int_equal(far->cell, 1);
	/* node 0: the switch's root port first (its first device comes
	 * first), then the lone VF's: 5 + 1 buses */
	assert_int_equal(p.pxbs[g0->pxb].n_buses, 6);
	assert_int_equal(p.switches[0].guest_bus, p.pxbs[g0->pxb].bus_nr + 1);
	assert_int_equal(lone->guest_bus, p.pxbs[g0->pxb].bus_nr + 6);
	assert_int_equal(p.pxbs[far->pxb].n_buses, 2);
	assert_int_equal(plan_summary(&p, &summary), 0);
	assert_non_null(strstr(summary, "switch 0000:"));
	assert_non_null(strstr(summary, "(as host switch 0000:02:00.0"));
	assert_non_null(strstr(summary, "downstream port: 0000:"));
	/* The domain plugs the switch's devices into its downstream ports in
	 * that order (controllers 5 to 7, after the root port 3 and the
	 * upstream port 4), each device's from the plan's sw_rank. */
	assert_int_equal(domain_xml_build(&p, &dgx_domain, &xml), 0);
	assert_guest_bus(xml, "bus=\"0x04\" slot=\"0x00\" function=\"0x0\"",
			 "0x05");
	assert_guest_bus(xml, "bus=\"0x05\" slot=\"0x00\" function=\"0x0\"",
			 "0x06");
	assert_guest_bus(xml, "bus=\"0x06\" slot=\"0x00\" function=\"0x1\"",
			 "0x07");
	plan_free(&p);
	free_devs(&f);
	topology_free(t);
}

/* The seeds' testbed: K40m and ConnectX-3 each on a root port of socket 1:
 * no switch on the host, none in the guest (GPUDirect through the host
 * bridge, as on bare metal). */
static void test_k40_cx3_no_switch(void **state)
{
	struct topology *t = load(SANDY);
	struct fixture_devs f = { 0 };
	struct plan p;

	add_dev_from(&f, K40_CX3, "0000:82:00.0", "gpu");
	add_dev_from(&f, K40_CX3, "0000:83:00.1", "ibvf");
	assert_string_equal(f.d[0].host_switch, "");
	assert_string_equal(f.d[1].host_switch, "");
	assert_int_equal(plan_devs(t, "8-11", &f, true, &p), 0);
	assert_int_equal(p.n_switches, 0);
	assert_int_equal(p.devices[0].host_node, 1);
	assert_int_equal(p.devices[0].sw, -1);
	assert_int_equal(p.devices[1].sw, -1);
	assert_int_equal(p.devices[1].guest_bus, p.devices[0].guest_bus + 1);
	plan_free(&p);
	free_devs(&f);
	topology_free(t);
}

static void test_device_refusals(void **state)
{
	struct topology *t = load(SANDY);
	struct fixture_devs f = { 0 };
	struct pci_device noiommu;
	struct plan_device_request r = { .dev = &noiommu, .gres_index = -1 };
	struct plan_request req = {
		.cpus = "0-3", .mem_mib = 4096, .devices = &r, .n_devices = 1
	};
	struct plan p;

	add_dev(&f, "0000:e1:00.1", "ibvf");
	add_dev(&f, "0000:e1:00.1", "ibvf");
	assert_int_equal(plan_devs(t, "0-3", &f, true, &p), -EINVAL);
	assert_int_equal(p.refusal, PLAN_REFUSE_DEVICE);
	assert_non_null(strstr(p.reason, "twice"));
	plan_free(&p);
	free_devs(&f);

	assert_int_equal(devices_read(SRCDIR "/tests/fixtures/sysfs/no-iommu",
				      "0000:3b:00.0", &noiommu),
			 0);
	assert_int_equal(plan_compute(t, &req, &p), -ENODEV);
	assert_int_equal(p.refusal, PLAN_REFUSE_DEVICE);
	assert_non_null(strstr(p.reason, "no IOMMU group"));
	plan_free(&p);
	pci_device_clear(&noiommu);
	topology_free(t);
}

static void test_cpu_refusals(void **state)
{
	struct topology *t = load(SANDY);
	struct plan_request req = { .mem_mib = 4096 };
	struct plan p;
	const char *bad[] = { "", "x", "0-", "32", "0-40", "3-1" };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		req.cpus = bad[i];
		assert_int_equal(plan_compute(t, &req, &p), -EINVAL);
		assert_int_equal(p.refusal, PLAN_REFUSE_CPUS);
		plan_free(&p);
	}
	req.cpus = NULL;
	assert_int_equal(plan_compute(t, &req, &p), -EINVAL);
	plan_free(&p);

	/* housekeeping CPUs must not be the job's */
	req.cpus = "0-3";
	req.housekeeping = "3";
	assert_int_equal(plan_compute(t, &req, &p), -EINVAL);
	assert_non_null(strstr(p.reason, "overlap"));
	plan_free(&p);
	topology_free(t);
}

static void test_memory_refusals(void **state)
{
	struct topology *t = load(SANDY);
	struct plan_request req = { .cpus = "0-3",
				    .mem_mib = 512,
				    .mem_overhead_mib = 512 };
	struct plan p;

	assert_int_equal(plan_compute(t, &req, &p), -ENOMEM);
	assert_int_equal(p.refusal, PLAN_REFUSE_MEMORY);
	assert_non_null(strstr(p.reason, "MemOverhead"));
	plan_free(&p);

	/* node 0 has 32 GiB */
	req.mem_mib = 40 * 1024;
	assert_int_equal(plan_compute(t, &req, &p), -ENOMEM);
	assert_int_equal(p.refusal, PLAN_REFUSE_MEMORY);
	assert_non_null(strstr(p.reason, "NUMA node 0"));
	plan_free(&p);

	/* spread over both nodes it fits */
	req.cpus = "0-3,8-11";
	assert_int_equal(plan_compute(t, &req, &p), 0);
	assert_int_equal(p.n_cells, 2);
	plan_free(&p);

	/* no 2M pages configured on that machine */
	req.mem_mib = 4096;
	req.hugepage_kib = 2048;
	assert_int_equal(plan_compute(t, &req, &p), -ENOMEM);
	assert_non_null(strstr(p.reason, "huge pages"));
	plan_free(&p);

	req.hugepage_kib = 4;
	assert_int_equal(plan_compute(t, &req, &p), -EINVAL);
	plan_free(&p);
	topology_free(t);
}

/* --vm-cpus and --vm-mem within what Slurm gave the job on the node: a
 * libslurm submission skips the cli_filter, the prolog's plan holds. */
static void test_request_beyond_allocation(void **state)
{
	struct topology *t = load(SANDY);
	struct plan_request req = { .cpus = "0-3",
				    .mem_mib = 1024,
				    .guest_mem_mib = 200000,
				    .mem_overhead_mib = 512 };
	struct plan p;

	assert_int_equal(plan_compute(t, &req, &p), -ENOMEM);
	assert_int_equal(p.refusal, PLAN_REFUSE_MEMORY);
	assert_non_null(strstr(p.reason, "--vm-mem=200000M is more than the "
					 "1024M the job has on this node"));
	plan_free(&p);

	/* --vm-mem is the guest's: up to the job's memory, no overhead off;
	 * qemu is bounded at the guest's and the overhead */
	req.guest_mem_mib = 1024;
	assert_int_equal(plan_compute(t, &req, &p), 0);
	assert_int_equal(p.mem_mib, 1024);
	assert_int_equal(p.mem_limit_mib, 1536);
	plan_free(&p);

	/* without it qemu is bounded at the job's memory */
	req.guest_mem_mib = 0;
	assert_int_equal(plan_compute(t, &req, &p), 0);
	assert_int_equal(p.mem_mib, 512);
	assert_int_equal(p.mem_limit_mib, 1024);
	plan_free(&p);

	req.max_vcpus = 5;
	assert_int_equal(plan_compute(t, &req, &p), -EINVAL);
	assert_int_equal(p.refusal, PLAN_REFUSE_CPUS);
	assert_non_null(
		strstr(p.reason, "--vm-cpus=5 is more than the 4 CPUs"));
	plan_free(&p);

	req.max_vcpus = 4;
	assert_int_equal(plan_compute(t, &req, &p), 0);
	assert_int_equal(p.n_vcpus, 4);
	plan_free(&p);
	topology_free(t);
}

static void test_hugepages_synthetic(void **state)
{
	struct topology *t = NULL;
	struct plan_request req = { .cpus = "0-2,6",
				    .mem_mib = 4097,
				    .mem_overhead_mib = 0,
				    .hugepage_kib = 1048576 };
	struct plan p;

	/* synthetic topologies list no page types: nothing to check */
	assert_int_equal(topology_load(TOPO("synthetic-2x4.xml"), &t), 0);
	assert_int_equal(plan_compute(t, &req, &p), 0);
	/* 3:1 vCPUs: 3072 and the rest, 1025 -> 1024 (1G pages) */
	assert_int_equal(p.cells[0].mem_mib % 1024, 0);
	assert_int_equal(p.cells[1].mem_mib % 1024, 0);
	assert_int_equal(p.mem_mib, p.cells[0].mem_mib + p.cells[1].mem_mib);
	plan_free(&p);

	/* less than a page per cell */
	req.mem_mib = 1500;
	assert_int_equal(plan_compute(t, &req, &p), -ENOMEM);
	plan_free(&p);
	topology_free(t);
}

/* Random jobs on every topology: the invariants hold for all of them. */
static void check_random_plan(struct topology *t, hwloc_const_bitmap_t job,
			      const struct plan *p)
{
	hwloc_topology_t h = topology_hwloc(t);
	hwloc_bitmap_t seen = hwloc_bitmap_alloc();

	check_pins_unique(p);
	assert_int_equal(p->n_vcpus, hwloc_bitmap_weight(job));
	for (unsigned v = 0; v < p->n_vcpus; v++) {
		const struct plan_vcpu *vc = &p->vcpus[v];
		hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(
			h, p->cells[vc->cell].host_node);

		assert_true(hwloc_bitmap_isset(job, vc->pu));
		assert_true(hwloc_bitmap_isset(node->cpuset, vc->pu));
		assert_true(v >= p->cells[vc->cell].first_vcpu &&
			    v < p->cells[vc->cell].first_vcpu +
					    p->cells[vc->cell].n_vcpus);
		/* the threads of one guest core share one host core */
		if (v % p->threads)
			assert_int_equal(vc->host_core,
					 p->vcpus[v - 1].host_core);
		hwloc_bitmap_set(seen, vc->pu);
	}
	assert_true(hwloc_bitmap_isequal(seen, job));
	for (unsigned c = 1; c < p->n_cells; c++)
		assert_true(p->cells[c].host_node > p->cells[c - 1].host_node);
	hwloc_bitmap_free(seen);
}

static void test_random_jobs(void **state)
{
	const char *topos[] = { WESTMERE, SANDY, OPTERON, POWER8,
				TOPO("synthetic-2x4.xml") };
	unsigned seed = 12345;

	for (size_t i = 0; i < ARRAY_SIZE(topos); i++) {
		struct topology *t = load(topos[i]);
		hwloc_topology_t h = topology_hwloc(t);
		hwloc_const_bitmap_t all =
			hwloc_topology_get_complete_cpuset(h);

		for (int round = 0; round < 300; round++) {
			hwloc_bitmap_t job = hwloc_bitmap_alloc();
			char *list = NULL;
			struct plan p;
			int pu;

			hwloc_bitmap_foreach_begin(pu, all)
			{
				if (rand_r(&seed) % 4 == 0)
					hwloc_bitmap_set(job, pu);
			}
			hwloc_bitmap_foreach_end();
			if (hwloc_bitmap_iszero(job))
				hwloc_bitmap_set(job, hwloc_bitmap_first(all));
			hwloc_bitmap_list_asprintf(&list, job);
			struct plan_request req = { .cpus = list,
						    .mem_mib = 1024 };
			assert_int_equal(plan_compute(t, &req, &p), 0);
			check_random_plan(t, job, &p);
			plan_free(&p);
			free(list);
			hwloc_bitmap_free(job);
		}
		topology_free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_westmere_smt),
		cmocka_unit_test(test_sandy_two_nodes_uneven),
		cmocka_unit_test(test_sandy_max_vcpus_and_housekeeping),
		cmocka_unit_test(test_request_beyond_allocation),
		cmocka_unit_test(test_opteron_four_nodes),
		cmocka_unit_test(test_power8_gpu_locality),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_locality_from_sysfs),
		cmocka_unit_test(test_dgx_switches),
		cmocka_unit_test(test_k40_cx3_no_switch),
		cmocka_unit_test(test_device_refusals),
		cmocka_unit_test(test_cpu_refusals),
		cmocka_unit_test(test_memory_refusals),
		cmocka_unit_test(test_hugepages_synthetic),
		cmocka_unit_test(test_random_jobs),
	};

	log_open("test_placement");
	log_set_level(LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
