/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the prolog reads from slurmctld (common/slurm/ctld.h), in plain
 * types: the job's GRES and memory on this node from a job as slurmctld
 * sends it (built here), and the node lists the job network and a job
 * fault count, refused before any request when they cannot be. No
 * slurmctld runs here. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/log.h"
#include "slurm/ctld.h"
#include "slurm/ctld_job.h"
#include "slurm/jobfate.h"

/* A job of 3 nodes with GPUs on the first two: gres_detail_str is one
 * string per node of its node list. */
static char *details[] = { "gpu:1(IDX:0)", "gpu:2(IDX:0-1)", NULL };

static slurm_job_info_t job_of(uint64_t pn_min_memory)
{
	return (slurm_job_info_t){
		.job_id = 7,
		.nodes = "n[1-3]",
		.gres_detail_cnt = 3,
		.gres_detail_str = details,
		.pn_min_memory = pn_min_memory,
	};
}

/* --mem-per-cpu: the guest's memory is per CPU times the CPUs the job
 * has on the node, and the node's own GPUs, not the first node's. */
static void test_job_node_mem_per_cpu(void **state)
{
	slurm_job_info_t job = job_of(1024 | MEM_PER_CPU);
	struct ctld_job_node jn = { 0 };

	assert_int_equal(ctld_job_node_fill(&job, 1, "0-1", 4, &jn), 0);
	assert_int_equal(jn.node_index, 1);
	assert_string_equal(jn.cores, "0-1");
	assert_int_equal(jn.mem_mib, 4096);
	assert_string_equal(jn.gres_detail, "gpu:2(IDX:0-1)");
	ctld_job_node_free(&jn);
	assert_null(jn.cores);
}

/* --mem: per node, whatever the CPUs; a node without GRES has no detail,
 * nor one past the list slurmctld sent. */
static void test_job_node_mem_per_node(void **state)
{
	slurm_job_info_t job = job_of(8192);
	struct ctld_job_node jn = { 0 };

	assert_int_equal(ctld_job_node_fill(&job, 2, "0-3", 8, &jn), 0);
	assert_int_equal(jn.mem_mib, 8192);
	assert_null(jn.gres_detail);
	ctld_job_node_free(&jn);
	job.gres_detail_cnt = 1;
	assert_int_equal(ctld_job_node_fill(&job, 1, "0", 2, &jn), 0);
	assert_null(jn.gres_detail);
	ctld_job_node_free(&jn);
}

/* A job fault fails the whole job only on a job of several nodes. */
static void test_nodelist_count(void **state)
{
	assert_int_equal(ctld_nodelist_count("n[1-3],m5"), 4);
	assert_int_equal(ctld_nodelist_count("n1"), 1);
	assert_int_equal(ctld_nodelist_count(""), 0);
	assert_int_equal(ctld_nodelist_count(NULL), 0);
}

/* The job network's node list: more nodes than it can carry, or none,
 * is refused before slurmctld is asked (nothing here answers). */
static void test_nodes_load_refused(void **state)
{
	struct ctld_nodes nodes;

	assert_int_equal(ctld_nodes_load(7, "n[1-3]", 2, &nodes), -E2BIG);
	assert_int_equal(nodes.n, 0);
	assert_null(nodes.names);
	assert_int_equal(ctld_nodes_load(7, "", 2, &nodes), -EINVAL);
	ctld_nodes_free(&nodes);
}

/* What ends a job for slurm-vm-adopt --hold: completing, or past running
 * and suspended; a job a user only signalled runs on. */
static void test_job_state_ending(void **state)
{
	assert_false(job_state_ending(JOB_RUNNING));
	assert_false(job_state_ending(JOB_SUSPENDED));
	assert_true(job_state_ending(JOB_RUNNING | JOB_COMPLETING));
	assert_true(job_state_ending(JOB_CANCELLED | JOB_COMPLETING));
	assert_true(job_state_ending(JOB_TIMEOUT));
	assert_true(job_state_ending(JOB_COMPLETE));
	assert_true(job_state_ending(JOB_PENDING | JOB_REQUEUE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_node_mem_per_cpu),
		cmocka_unit_test(test_job_node_mem_per_node),
		cmocka_unit_test(test_nodelist_count),
		cmocka_unit_test(test_nodes_load_refused),
		cmocka_unit_test(test_job_state_ending),
	};

	log_open("test_ctld");
	log_set_level(LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
