/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gres.conf lines of a node (slurm-vm gres, gres/ibvf detection, prolog)
 * and the SLURM_JOB_IBVFS format, over the sysfs fixtures. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hw/gresgen.h"
#include "core/log.h"
#include "core/strutil.h"

#define NODE	SRCDIR "/tests/fixtures/sysfs/node-gpu-ib"
#define CLUSTER SRCDIR "/tests/fixtures/sysfs/cluster"
#define TOPO	SRCDIR "/tests/fixtures/topology/24em64t-2n6c2t-pci.xml"

/* The same machine with Sub-NUMA Clustering (SNC2): two NUMA nodes of
 * three cores each per package (cores 0-2, 3-5 in package 0). */
#define SNC SRCDIR "/tests/fixtures/topology/24em64t-2p4n3c2t-snc2-pci.xml"

static void quiet_sink(enum log_level level, const char *msg)
{
}

/* The ibvf lines of node-gpu-ib: VFs on vfio-pci only, one line per IOMMU
 * group (41 holds two VFs), PCI order, Cores= from numa_node (c1:00.1 has
 * none), File= under VfioDir. */
static void test_lines_node(void **state)
{
	struct vmconf conf;
	struct topology *topo = NULL;
	struct device_list list = { 0 };
	struct gres_lines lines = { 0 };
	char **files = NULL;
	size_t n_gpu = 0;

	assert_int_equal(vmconf_load(&conf, NULL), 0);
	assert_int_equal(vmconf_set(&conf, "VfioDir=/x/vfio", "test"), 0);
	assert_int_equal(topology_load(TOPO, &topo), 0);
	assert_int_equal(devices_scan(NODE, &list), 0);
	assert_int_equal(gres_lines_build(&conf, topo, &list, &lines), 0);
	assert_int_equal(gres_lines_files(&lines, "ibvf", &files), 0);
	assert_int_equal(strv_length(files), 4);
	assert_string_equal(files[0], "/x/vfio/31");
	assert_string_equal(files[1], "/x/vfio/32");
	assert_string_equal(files[2], "/x/vfio/41");
	assert_string_equal(files[3], "/x/vfio/51");
	for (size_t i = 0; i < lines.n; i++) {
		const struct gres_line *l = &lines.v[i];

		if (strcmp(l->name, "gpu") == 0) {
			/* every GPU comes before the first VF */
			assert_int_equal(i, n_gpu);
			n_gpu++;
		}
		if (strcmp(l->dev->addr, "0000:81:00.3") == 0)
			assert_int_equal(l->verdict, GRES_SKIP_NOT_VFIO);
		if (strcmp(l->dev->addr, "0000:c1:00.2") == 0)
			assert_int_equal(l->verdict, GRES_SKIP_GROUP_DONE);
		if (strcmp(l->dev->addr, "0000:c1:00.1") == 0)
			assert_null(l->cores);
		if (strcmp(l->dev->addr, "0000:81:00.1") == 0)
			assert_string_equal(l->cores, "6-11");
	}
	/* 02:00.0 is skipped, 42:00.0 shares 41:00.0's group: no lines */
	assert_int_equal(n_gpu, 4);
	strv_free(files);
	gres_lines_free(&lines);
	device_list_free(&list);
	topology_free(topo);
	vmconf_free(&conf);
}

/* The GPU cores of node-gpu-ib on an SNC2 machine: 01:00.0 is on NUMA node
 * 0, 41:00.0 on node 1, both in package 0. Under the NUMA-node rule each
 * line holds half a socket (Slurm 24.11 drains the node); under the
 * whole-socket rule both hold all of package 0. */
static const char *snc_cores(enum gres_cores_rule rule, const char *addr)
{
	static char cores[64];
	struct vmconf conf;
	struct topology *topo = NULL;
	struct device_list list = { 0 };
	struct gres_lines lines = { 0 };

	cores[0] = '\0';
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	assert_int_equal(topology_load(SNC, &topo), 0);
	assert_int_equal(devices_scan(NODE, &list), 0);
	assert_int_equal(
		gres_lines_build_cores(&conf, topo, &list, rule, &lines), 0);
	for (size_t i = 0; i < lines.n; i++)
		if (strcmp(lines.v[i].dev->addr, addr) == 0 && lines.v[i].cores)
			snprintf(cores, sizeof(cores), "%s", lines.v[i].cores);
	gres_lines_free(&lines);
	device_list_free(&list);
	topology_free(topo);
	vmconf_free(&conf);
	return cores;
}

static void test_lines_snc(void **state)
{
	assert_string_equal(snc_cores(GRES_CORES_NUMA_NODE, "0000:01:00.0"),
			    "0-2");
	assert_string_equal(snc_cores(GRES_CORES_NUMA_NODE, "0000:41:00.0"),
			    "3-5");
	assert_string_equal(snc_cores(GRES_CORES_WHOLE_SOCKETS, "0000:01:00.0"),
			    "0-5");
	assert_string_equal(snc_cores(GRES_CORES_WHOLE_SOCKETS, "0000:41:00.0"),
			    "0-5");
}

/* A Cores= of gres.conf widened to whole sockets, with the first socket
 * it splits (Slurm's socket number), on the SNC2 machine. */
static void test_cores_whole_sockets(void **state)
{
	struct topology *topo = NULL;
	char *whole = NULL;
	int split;

	assert_int_equal(topology_load(SNC, &topo), 0);
	assert_int_equal(
		topology_cores_whole_sockets(topo, "9-11", &whole, &split), 0);
	assert_string_equal(whole, "6-11");
	assert_int_equal(split, 1);
	free(whole);
	assert_int_equal(
		topology_cores_whole_sockets(topo, "0-2,6-11", &whole, &split),
		0);
	assert_string_equal(whole, "0-11");
	assert_int_equal(split, 0);
	free(whole);
	assert_int_equal(
		topology_cores_whole_sockets(topo, "0-5", &whole, &split), 0);
	assert_string_equal(whole, "0-5");
	assert_int_equal(split, -1);
	free(whole);
	/* not this node's cores, or not a list */
	assert_int_equal(
		topology_cores_whole_sockets(topo, "0-12", &whole, &split),
		-EINVAL);
	assert_int_equal(
		topology_cores_whole_sockets(topo, "3-", &whole, &split),
		-EINVAL);
	assert_int_equal(
		topology_cores_whole_sockets(topo, "x", &whole, &split),
		-EINVAL);
	topology_free(topo);
}

static void test_file_functions(void **state)
{
	char **addrs = NULL;
	char *entry;

	assert_int_equal(
		gres_file_functions(CLUSTER, "ibvf", "/dev/vfio/40", &addrs),
		0);
	assert_int_equal(strv_length(addrs), 1);
	assert_string_equal(addrs[0], "0000:3f:00.1");
	strv_free(addrs);
	/* a group with two VFs: both, one pair each */
	assert_int_equal(
		gres_file_functions(NODE, "ibvf", "/dev/vfio/41", &addrs), 0);
	entry = ibvfs_env_entry(3, addrs);
	assert_string_equal(entry, "3=0000:c1:00.1,3=0000:c1:00.2");
	free(entry);
	strv_free(addrs);
	/* a GPU's group holds no InfiniBand function */
	assert_int_equal(
		gres_file_functions(CLUSTER, "ibvf", "/dev/vfio/12", &addrs),
		-ENODEV);
	assert_null(addrs);
	assert_int_equal(
		gres_file_functions(CLUSTER, "ibvf", "/dev/nvidia0", &addrs),
		-EINVAL);
	assert_int_equal(
		gres_file_functions(CLUSTER, "ibvf", "/dev/vfio/99", &addrs),
		-ENOENT);
}

static void test_env_parse(void **state)
{
	static const char *const bad[] = {
		"0",
		"=0000:5e:00.1",
		"0=",
		"0=5e:00.1",	  /* not canonical */
		"0=0000:5E:00.1", /* not canonical */
		"-1=0000:5e:00.1",
		"x=0000:5e:00.1",
		"1=0000:5e:00.1,0=0000:5e:00.2", /* out of order */
		"0=0000:5e:00.1,0=0000:5e:00.1", /* repeated */
		"0=0000:5e:00.1,",
		",0=0000:5e:00.1",
		"0=0000:5e:00.1,,1=0000:5e:00.2",
		"0=0000:5e:00.1 ",
		"0=../../etc",
	};
	struct gres_pair *pairs;
	char many[64 * 20 + 32] = "";
	size_t n;

	assert_int_equal(
		ibvfs_env_parse("0=0000:5e:00.1,1=0000:5e:00.2", &pairs, &n),
		0);
	assert_int_equal(n, 2);
	assert_int_equal(pairs[1].index, 1);
	assert_string_equal(pairs[1].addr, "0000:5e:00.2");
	free(pairs);
	assert_int_equal(ibvfs_env_parse("", &pairs, &n), 0);
	assert_int_equal(n, 0);
	free(pairs);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_not_equal(ibvfs_env_parse(bad[i], &pairs, &n), 0);
		assert_null(pairs);
	}
	for (unsigned i = 0; i <= IBVFS_ENV_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "%s%u=0000:5e:00.1", i ? "," : "", i);
	assert_int_equal(ibvfs_env_parse(many, &pairs, &n), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_node),
		cmocka_unit_test(test_lines_snc),
		cmocka_unit_test(test_cores_whole_sockets),
		cmocka_unit_test(test_file_functions),
		cmocka_unit_test(test_env_parse),
	};

	log_set_sink(quiet_sink);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
