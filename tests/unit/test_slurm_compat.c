/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm 24.11 dropped slurm_job_cpus_allocated_str_on_node(): the prolog
 * reads the job's cores from job_resources' layout itself
 * (slurm_core_layout_node()). The same abstract core ids must come out as
 * 22.05's call gave, and map to the same OS CPUs on an SMT node. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "slurm/compat.h"
#include "core/log.h"
#include "hw/placement.h"
#include "hw/slurm_map.h"

#define TOPO(name) SRCDIR "/tests/fixtures/topology/" name

static void set_bit(int64_t *bits, uint64_t bit)
{
	bits[bit / 64] |= (int64_t)((uint64_t)1 << (bit % 64));
}

/* A 3-node job: node 0 of 2 sockets x 36 cores (bits 0-71), then two
 * nodes alike of 2 x 6 cores (bits 72-83, 84-95), the shape of the
 * Westmere fixture (2 packages, 6 cores, 2 threads each). */
static const uint32_t reps[] = { 1, 2 };
static const uint16_t sockets[] = { 2, 2 };
static const uint16_t cores_per_socket[] = { 36, 6 };
static const uint16_t cpu_values[] = { 16, 6, 24 };
static const uint32_t cpu_reps[] = { 1, 1, 1 };

static void layout_of(struct slurm_core_layout *l, const int64_t *bits)
{
	*l = (struct slurm_core_layout){
		.core_bits = bits,
		.core_nbits = 96,
		.nhosts = 3,
		.sock_core_rep_count = reps,
		.sockets_per_node = sockets,
		.cores_per_socket = cores_per_socket,
		.cpu_array_cnt = 3,
		.cpu_array_value = cpu_values,
		.cpu_array_reps = cpu_reps,
	};
}

static void test_core_layout_nodes(void **state)
{
	int64_t bits[2] = { 0 };
	struct slurm_core_layout l;
	char cores[64];
	int ncpus = -1;

	/* node 0: cores 60-67 straddle the bitmap's first word */
	for (uint64_t b = 60; b <= 67; b++)
		set_bit(bits, b);
	/* node 1: its cores 0, 1 and 6 */
	set_bit(bits, 72);
	set_bit(bits, 73);
	set_bit(bits, 78);
	/* node 2: all 12 */
	for (uint64_t b = 84; b < 96; b++)
		set_bit(bits, b);
	layout_of(&l, bits);

	assert_int_equal(
		slurm_core_layout_node(&l, 0, cores, sizeof(cores), &ncpus), 0);
	assert_string_equal(cores, "60-67");
	assert_int_equal(ncpus, 16);
	assert_int_equal(
		slurm_core_layout_node(&l, 1, cores, sizeof(cores), &ncpus), 0);
	assert_string_equal(cores, "0-1,6");
	assert_int_equal(ncpus, 6);
	assert_int_equal(
		slurm_core_layout_node(&l, 2, cores, sizeof(cores), &ncpus), 0);
	assert_string_equal(cores, "0-11");
	assert_int_equal(ncpus, 24);
	/* not a node of the job */
	assert_int_equal(
		slurm_core_layout_node(&l, 3, cores, sizeof(cores), &ncpus),
		-ENOENT);
	/* too short a buffer is an error, not a truncated core list */
	assert_int_equal(slurm_core_layout_node(&l, 1, cores, 4, &ncpus),
			 -ENOSPC);
}

static void test_core_layout_node_without_cores(void **state)
{
	int64_t bits[2] = { 0 };
	struct slurm_core_layout l;
	char cores[64];
	int ncpus;

	set_bit(bits, 72);
	layout_of(&l, bits);
	assert_int_equal(
		slurm_core_layout_node(&l, 0, cores, sizeof(cores), &ncpus),
		-ENOENT);
	assert_int_equal(
		slurm_core_layout_node(&l, 2, cores, sizeof(cores), &ncpus),
		-ENOENT);
}

/* On the SMT node both hyperthreads of each core come out, as on 22.05
 * (test_slurm_map's test_cores_to_cpus holds that mapping). */
static void test_core_layout_to_smt_cpus(void **state)
{
	int64_t bits[2] = { 0 };
	struct slurm_core_layout l;
	struct topology *t = NULL;
	char cores[64], *cpus = NULL;
	int ncpus;

	set_bit(bits, 72);
	set_bit(bits, 73);
	set_bit(bits, 78);
	layout_of(&l, bits);
	assert_int_equal(
		slurm_core_layout_node(&l, 1, cores, sizeof(cores), &ncpus), 0);
	assert_int_equal(topology_load(TOPO("24em64t-2n6c2t-pci.xml"), &t), 0);
	assert_int_equal(slurm_cores_to_cpus(t, cores, 0, &cpus), 0);
	/* cores 0-1 are PUs 0,12 and 2,14; core 6 (second package) 1,13 */
	assert_string_equal(cpus, "0-2,12-14");
	free(cpus);
	topology_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_core_layout_nodes),
		cmocka_unit_test(test_core_layout_node_without_cores),
		cmocka_unit_test(test_core_layout_to_smt_cpus),
	};

	log_open("test_slurm_compat");
	log_set_level(LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
