/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Orders for qsort() and bsearch(): the running jobs' ids slurmctld gives
 * are sorted once (common/slurm/jobfate.c) and searched per record
 * (common/host/ibpart.c) with the same order. */
#include <stdint.h>

static inline int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}
