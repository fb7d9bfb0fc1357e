/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "hw/taskmap.h"

_Static_assert(TASKMAP_ADDR_MAX >= PCI_ADDR_MAX,
	       "a guest PCI address fits the task map");

int task_map_from_plan(const struct plan *plan, struct task_map *m)
{
	*m = (struct task_map){ 0 };
	m->vcpu_cpu = calloc(plan->n_vcpus + 1, sizeof(unsigned));
	m->cell_node = calloc(plan->n_cells + 1, sizeof(unsigned));
	m->devices = calloc(plan->n_devices + 1, sizeof(*m->devices));
	if (!m->vcpu_cpu || !m->cell_node || !m->devices) {
		task_map_free(m);
		return -ENOMEM;
	}
	m->n_vcpus = plan->n_vcpus;
	for (unsigned i = 0; i < plan->n_vcpus; i++)
		m->vcpu_cpu[i] = plan->vcpus[i].pu;
	m->n_cells = plan->n_cells;
	for (unsigned c = 0; c < plan->n_cells; c++)
		m->cell_node[c] = plan->cells[c].host_node;
	m->n_devices = plan->n_devices;
	for (size_t i = 0; i < plan->n_devices; i++) {
		const struct plan_device *d = &plan->devices[i];
		struct task_map_device *t = &m->devices[i];
		unsigned fn = d->n_funcs ? d->funcs[0].function : 0;

		snprintf(t->gres, sizeof(t->gres), "%s", d->gres);
		t->index = d->gres_index;
		snprintf(t->guest_addr, sizeof(t->guest_addr),
			 "0000:%02x:00.%x", d->guest_bus, fn);
	}
	return 0;
}
