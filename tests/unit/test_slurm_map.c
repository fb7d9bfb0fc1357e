/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slurm's numbering: gres indices, File= expansion, cores -> OS CPUs. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/log.h"
#include "hw/placement.h"
#include "hw/slurm_map.h"
#include "core/strutil.h"

#define TOPO(name) SRCDIR "/tests/fixtures/topology/" name

static void assert_indices(const unsigned *idx, size_t n, const unsigned *want,
			   size_t n_want)
{
	assert_int_equal(n, n_want);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(idx[i], want[i]);
}

static void test_index_list(void **state)
{
	unsigned *idx;
	size_t n;

	assert_int_equal(slurm_index_list_parse("0,2-3", &idx, &n), 0);
	assert_indices(idx, n, (unsigned[]){ 0, 2, 3 }, 3);
	free(idx);
	assert_int_equal(slurm_index_list_parse("3,1,1", &idx, &n), 0);
	assert_indices(idx, n, (unsigned[]){ 1, 3 }, 2);
	free(idx);
	assert_int_equal(slurm_index_list_parse("", &idx, &n), 0);
	assert_int_equal(n, 0);
	free(idx);
	const char *bad[] = { "x",  "1-", "-1",	  "3-1",
			      "1,", ",1", "1 ,2", "99999999" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_true(slurm_index_list_parse(bad[i], &idx, &n) < 0);
		assert_null(idx);
	}
}

static void test_gres_detail(void **state)
{
	const char *d = "gpu:a100:2(IDX:0,2),ibvf:1(IDX:3)";
	unsigned *idx;
	size_t n;

	assert_int_equal(slurm_gres_detail_indices(d, "gpu", &idx, &n), 0);
	assert_indices(idx, n, (unsigned[]){ 0, 2 }, 2);
	free(idx);
	assert_int_equal(slurm_gres_detail_indices(d, "ibvf", &idx, &n), 0);
	assert_indices(idx, n, (unsigned[]){ 3 }, 1);
	free(idx);
	assert_int_equal(slurm_gres_detail_indices(d, "mps", &idx, &n), 0);
	assert_int_equal(n, 0);
	free(idx);
	assert_int_equal(
		slurm_gres_detail_indices("gpu:1(IDX:0-1)", "gpu", &idx, &n),
		0);
	assert_indices(idx, n, (unsigned[]){ 0, 1 }, 2);
	free(idx);
	assert_int_equal(
		slurm_gres_detail_indices("gpu:0(IDX:N/A)", "gpu", &idx, &n),
		0);
	assert_int_equal(n, 0);
	free(idx);
	/* "gpus" is not "gpu" */
	assert_int_equal(
		slurm_gres_detail_indices("gpus:1(IDX:4)", "gpu", &idx, &n), 0);
	assert_int_equal(n, 0);
	free(idx);
	const char *bad[] = { "gpu:1", "gpu:1(IDX:0", "gpu:1(CNT:0)",
			      "gpu:1(IDX:x)", "gpu:1(IDX:0)junk" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_true(slurm_gres_detail_indices(bad[i], "gpu", &idx, &n) <
			    0);
		free(idx);
	}
}

static void test_file_expand(void **state)
{
	char **v;

	assert_int_equal(slurm_gres_file_expand("/dev/vfio/[12-13,15]", &v), 0);
	assert_int_equal(strv_length(v), 3);
	assert_string_equal(v[0], "/dev/vfio/12");
	assert_string_equal(v[2], "/dev/vfio/15");
	strv_free(v);
	assert_int_equal(slurm_gres_file_expand("/dev/nvidia[00-02]x", &v), 0);
	assert_string_equal(v[1], "/dev/nvidia01x");
	strv_free(v);
	assert_int_equal(slurm_gres_file_expand("/dev/vfio/7", &v), 0);
	assert_int_equal(strv_length(v), 1);
	strv_free(v);
	const char *bad[] = { "",	   "/dev/x[1-",
			      "/dev/x[a]", "/dev/x[1][2]",
			      "/dev/x[]",  "/dev/x[0-99999999]" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_true(slurm_gres_file_expand(bad[i], &v) < 0);
}

/* Only these files "exist" */
static bool fake_present(const char *path, void *ctx)
{
	for (char **p = ctx; *p; p++)
		if (strcmp(*p, path) == 0)
			return true;
	return false;
}

static void test_index_files(void **state)
{
	char *files[] = { "/dev/vfio/10", "/dev/vfio/11", "/dev/vfio/20",
			  "/dev/vfio/31", NULL };
	char *present[] = { "/dev/vfio/10", "/dev/vfio/20", "/dev/vfio/31",
			    NULL };
	char **idx;
	int g;

	/* a slurmd that skips missing files (slurm_map.h) */
	assert_int_equal(
		slurm_gres_index_files(files, fake_present, present, &idx), 0);
	assert_int_equal(strv_length(idx), 3);
	assert_string_equal(idx[1], "/dev/vfio/20"); /* index 1, line 3 */
	strv_free(idx);
	/* slurmd 22.05 as the harness measured it: every line counts */
	assert_int_equal(
		slurm_gres_index_files(files, slurm_file_count_all, NULL, &idx),
		0);
	assert_int_equal(strv_length(idx), 4);
	assert_string_equal(idx[1], "/dev/vfio/11");
	strv_free(idx);
	/* the default is 22.05's */
	assert_int_equal(slurm_gres_index_files(files, NULL, NULL, &idx), 0);
	assert_int_equal(strv_length(idx), 4);
	strv_free(idx);
	/* stat() for a character device */
	char *devs[] = { "/dev/null", "/nonexistent", "/etc/passwd",
			 "/dev/zero", NULL };
	assert_int_equal(slurm_gres_index_files(devs, slurm_file_is_char_device,
						NULL, &idx),
			 0);
	assert_int_equal(strv_length(idx), 2);
	assert_string_equal(idx[1], "/dev/zero");
	strv_free(idx);

	assert_int_equal(slurm_vfio_file_group("/dev/vfio/31", &g), 0);
	assert_int_equal(g, 31);
	assert_true(slurm_vfio_file_group("/dev/vfio/vfio", &g) < 0);
	assert_true(slurm_vfio_file_group("/dev/nvidia0", &g) < 0);
	assert_true(slurm_vfio_file_group("/dev/vfio/1/../2", &g) < 0);
	assert_int_equal(slurm_vfio_file_group("/tmp/cluster/dev/vfio/12", &g),
			 0);
	assert_int_equal(g, 12);
	assert_true(slurm_vfio_file_group("/tmp/novfio/12", &g) < 0);
	assert_true(slurm_vfio_file_group("vfio/12", &g) < 0);
}

static void test_cores_to_cpus(void **state)
{
	struct topology *t = NULL;
	char *cpus = NULL;

	/* Westmere: core logical i has PUs 2i and 2i+12 on node 0 (cores
	 * P#0,8,2,10,1,9 are logical 0-5) */
	assert_int_equal(topology_load(TOPO("24em64t-2n6c2t-pci.xml"), &t), 0);
	assert_int_equal(slurm_cores_to_cpus(t, "0-1", 0, &cpus), 0);
	assert_string_equal(cpus, "0,2,12,14");
	free(cpus);
	assert_int_equal(slurm_cores_to_cpus(t, "6", 0, &cpus), 0);
	assert_string_equal(cpus, "1,13");
	free(cpus);
	/* --threads-per-core=1 */
	assert_int_equal(slurm_cores_to_cpus(t, "0-1", 1, &cpus), 0);
	assert_string_equal(cpus, "0,2");
	free(cpus);
	assert_int_equal(slurm_cores_to_cpus(t, "12", 0, &cpus), -ENOENT);
	assert_true(slurm_cores_to_cpus(t, "", 0, &cpus) < 0);
	topology_free(t);

	/* interleaved 4-node Opteron: core 6 is in the second package */
	assert_int_equal(topology_load(TOPO("96em64t-4n4d3ca2co-pci.xml"), &t),
			 0);
	assert_int_equal(slurm_cores_to_cpus(t, "0-1,6", 0, &cpus), 0);
	assert_string_equal(cpus, "0-1,4");
	free(cpus);
	topology_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_list),
		cmocka_unit_test(test_gres_detail),
		cmocka_unit_test(test_file_expand),
		cmocka_unit_test(test_index_files),
		cmocka_unit_test(test_cores_to_cpus),
	};

	log_open("test_slurm_map");
	log_set_level(LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
