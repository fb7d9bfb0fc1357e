/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The task map (taskenv.h) of a placement plan (placement.h): here, not in
 * the job room, because spank_vm.so, which reads the map, must not see
 * hwloc's types.
 */
#include "hw/placement.h"
#include "job/taskenv.h"

/* From the prolog's plan. Guest PCI addresses: the function on the bus of
 * the device's root port. */
int task_map_from_plan(const struct plan *plan, struct task_map *m);
