/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The placement planner: from the job's CPUs, memory and devices on this node
 * and the node's hwloc topology, the guest's shape (doc/design.md,
 * "Placement rules"):
 *
 *  - one vCPU per allocated PU, pinned 1:1, none shared;
 *  - SMT siblings are threads of one guest core; qemu's topology is uniform,
 *    so threads = gcd of the PUs taken per host core (1 if uneven), and
 *    sockets = guest NUMA cells when every cell has as many guest cores
 *    (else one socket holding all cores);
 *  - one guest cell per host NUMA node the job's CPUs span, in host node
 *    order, memory split by vCPUs and bound strict, the host's distances;
 *  - emulator and iothread on the housekeeping CPUs (never another job's;
 *    without any, on the job's own CPUs);
 *  - each device on a root port of a pcie-expander-bus placed in the cell of
 *    its host NUMA node; whole IOMMU groups only;
 *  - devices that share a PCIe switch on the host (a GPU and its HCA's VF)
 *    share one in the guest: a root port, a switch upstream port and a
 *    downstream port each, so drivers see the path that allows GPUDirect
 *    RDMA.
 *
 * Nothing here touches the host: it is safe for `slurm-vm plan`.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/devices.h"

struct topology;

/* @xml_path: an hwloc XML file (vm.conf TopologyFile, slurmd's
 * hwloc_topo_whole.xml), or NULL for this machine. I/O devices included. */
int topology_load(const char *xml_path, struct topology **out);
void topology_free(struct topology *topo);
static inline void topology_freep(struct topology **t)
{
	topology_free(*t);
}
#define _cleanup_topology_ __attribute__((cleanup(topology_freep)))

unsigned topology_num_numa_nodes(const struct topology *topo);
/* OS indexes of the PUs of NUMA node @node (list syntax, malloc'd). */
int topology_node_cpus(const struct topology *topo, int node, char **list);
/* Slurm's abstract core ids (hwloc logical order) local to NUMA node @node,
 * list syntax, for gres.conf Cores=. */
int topology_node_cores(const struct topology *topo, int node, char **list);
/* The same ids for the whole sockets (hwloc Packages) that NUMA node
 * @node's cores lie in: Slurm 24.11 refuses a Cores= that splits a socket,
 * and NUMA nodes are smaller than sockets with Intel SNC or AMD NPS2/4. */
int topology_node_socket_cores(const struct topology *topo, int node,
			       char **list);
/* Slurm core ids @cores ("0-2,8") widened to whole sockets into @whole;
 * *@split_socket is the first socket @cores holds only part of (Slurm's
 * socket number), -1 when it splits none. -EINVAL: @cores is not a list
 * of this node's cores. */
int topology_cores_whole_sockets(const struct topology *topo, const char *cores,
				 char **whole, int *split_socket);
/* NUMA node of a PCI function from the topology's I/O tree; -1 unknown. */
int topology_pci_numa_node(const struct topology *topo, const char *addr);

/* A device's NUMA node: sysfs numa_node, else the topology's I/O tree, else
 * the only node of a one-node machine; -1 unknown. */
int topology_device_numa_node(const struct topology *topo,
			      const struct pci_device *dev);

/* Internal to the library (slurm_map.c): the hwloc handle. */
void *topology_hwloc(const struct topology *topo);

enum plan_refusal {
	PLAN_OK = 0,
	PLAN_REFUSE_CPUS,     /* CPU list empty, bad, or not in the topology */
	PLAN_REFUSE_GROUP,    /* an IOMMU group holds a function not given */
	PLAN_REFUSE_LOCALITY, /* device off the job's NUMA nodes */
	PLAN_REFUSE_MEMORY,   /* memory does not fit */
	PLAN_REFUSE_DEVICE,   /* device unusable (no IOMMU group, duplicate) */
};

struct plan_device_request {
	const struct pci_device *dev; /* from devices_read() */
	const char *gres;	      /* "gpu", "ibvf": for the metadata */
	int gres_index;		      /* slurmd's index, -1 unknown */
};

struct plan_request {
	const char *cpus; /* job's OS CPU ids on the node, "0-7,16-23" */
	const char *housekeeping; /* CpuSpecList as OS CPUs; NULL: none */
	unsigned max_vcpus;	  /* --vm-cpus; 0: all the job's CPUs */
	uint64_t mem_mib;	  /* job's memory on the node */
	/* --vm-mem, at most mem_mib; 0: mem_mib less mem_overhead_mib */
	uint64_t guest_mem_mib;
	uint64_t mem_overhead_mib;
	unsigned hugepage_kib; /* 0 (none), 2048 or 1048576 */
	bool require_locality;
	const struct plan_device_request *devices;
	size_t n_devices;
};

struct plan_vcpu {
	unsigned pu; /* host PU OS index */
	unsigned cell;
	unsigned host_core; /* host core logical index, for the summary */
};

struct plan_cell {
	unsigned host_node; /* host NUMA node OS index */
	unsigned first_vcpu;
	unsigned n_vcpus;
	uint64_t mem_mib;
	unsigned *distances; /* n_cells entries; NULL: host reports none */
};

struct plan_pci {
	char addr[PCI_ADDR_MAX]; /* host function */
	uint32_t class;
	bool primary;	   /* the requested function (else a GPU companion) */
	unsigned function; /* guest function number on the root port */
};

struct plan_device {
	char addr[PCI_ADDR_MAX];
	enum pci_kind kind;
	bool is_vf;
	char gres[16];
	int gres_index;
	int host_node; /* -1 unknown */
	unsigned cell;
	int iommu_group;
	char host_switch[PCI_ADDR_MAX]; /* pci_device.host_switch */
	int sw;				/* index into plan.switches; -1 none */
	unsigned sw_rank; /* its downstream port of plan.switches[sw] (plan
			   * order); 0 without a switch */
	unsigned pxb;	  /* index into plan.pxbs */
	unsigned
		guest_bus; /* guest PCI bus it sits on (its port's secondary) */
	struct plan_pci *funcs; /* passed through together (same slot) */
	size_t n_funcs;
};

struct plan_pxb {
	unsigned cell;
	unsigned bus_nr;  /* first guest bus number of the expander */
	unsigned n_buses; /* bus numbers behind it (ports' secondaries) */
};

/* A guest PCIe switch mirroring a host one: on its own root port, one
 * downstream port per device, in plan order. The firmware numbers buses
 * depth first: the upstream port sits on @guest_bus, the downstream ports
 * on @guest_bus + 1, device k of the switch on @guest_bus + 2 + k. */
struct plan_switch {
	char host_switch[PCI_ADDR_MAX]; /* the host's upstream port */
	unsigned pxb;
	unsigned guest_bus;
	unsigned n_down;
};

struct plan {
	unsigned n_vcpus;
	struct plan_vcpu *vcpus;
	unsigned sockets, cores, threads; /* guest <topology> */
	unsigned n_cells;
	struct plan_cell *cells;
	uint64_t mem_mib;
	/* qemu's bound (a live hard_limit, hv_create): the job's memory, or
	 * the guest's plus the overhead where --vm-mem takes all of it */
	uint64_t mem_limit_mib;
	unsigned hugepage_kib;
	char *emulator_cpus; /* list syntax */
	bool emulator_on_job_cpus;
	size_t n_devices;
	struct plan_device *devices;
	unsigned n_pxbs;
	struct plan_pxb *pxbs;
	unsigned n_switches;
	struct plan_switch *switches;

	enum plan_refusal refusal;
	char reason[512]; /* why refused, for the user and the log */
};

/* Returns 0 with @plan filled, or a negative errno with plan->refusal and
 * plan->reason set (-EINVAL, -EPERM for groups, -EXDEV for locality,
 * -ENOMEM for memory). plan_free() in every case. */
int plan_compute(const struct topology *topo, const struct plan_request *req,
		 struct plan *plan);
void plan_free(struct plan *plan);
/* Human summary, several lines. */
int plan_summary(const struct plan *plan, char **out);
/* "0-3,8" for the vCPUs of cell @cell. */
int plan_cell_vcpus(const struct plan *plan, unsigned cell, char **list);
