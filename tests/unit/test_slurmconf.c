/* SPDX-License-Identifier: GPL-2.0-or-later */
/* slurm.conf as slurmctld and slurmd of each release read it (Slurm's
 * src/common/parse_config.c and read_config.c): check-config must see the
 * settings the daemons will use, on 22.05, 24.11, 25.05 and 26.05. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "slurm/compat.h"
#include "slurm/gresconf.h"
#include "slurm/slurmconf.h"

#define R22_05 SLURM_VERSION_NUM(22, 5, 8)
#define R23_11 SLURM_VERSION_NUM(23, 11, 0)
#define R24_11 SLURM_VERSION_NUM(24, 11, 5)
#define R25_05 SLURM_VERSION_NUM(25, 5, 0)
#define R26_05 SLURM_VERSION_NUM(26, 5, 5)

static char dir[] = "/tmp/test_slurmconf.XXXXXX";

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int read_conf(const char *text, uint32_t release, struct slurmconf *sc)
{
	char path[256];

	put("slurm.conf", text);
	snprintf(path, sizeof(path), "%s/slurm.conf", dir);
	return slurmconf_read_release(path, release, sc);
}

/* Keys in any case; the last line of a key wins, as for slurmctld. */
static void test_case_and_last_line(void **state)
{
	struct slurmconf sc;

	(void)state;
	assert_int_equal(read_conf("prolog=/a\nPROLOGFLAGS=Alloc\n"
				   "Prolog=/b # the later one\n",
				   R22_05, &sc),
			 0);
	assert_string_equal(slurmconf_get(&sc, "Prolog"), "/b");
	assert_string_equal(slurmconf_get(&sc, "PrologFlags"), "Alloc");
	assert_null(slurmconf_get(&sc, "Epilog"));
	slurmconf_free(&sc);
}

/* Blanks around '=', a quoted value with blanks, '\#' and a line going on
 * after '\': as parse_config.c's keyvalue_pattern and _get_next_line(). */
static void test_syntax(void **state)
{
	struct slurmconf sc;

	(void)state;
	assert_int_equal(read_conf("Prolog = /usr/sbin/slurm-vm-prolog\n"
				   "Epilog=\"/opt/my epilog\"\n"
				   "ClusterName=a\\#b # comment\n"
				   "PrologFlags=Alloc,\\\n"
				   "Contain\n",
				   R22_05, &sc),
			 0);
	assert_string_equal(slurmconf_get(&sc, "Prolog"),
			    "/usr/sbin/slurm-vm-prolog");
	assert_string_equal(slurmconf_get(&sc, "Epilog"), "/opt/my epilog");
	assert_string_equal(slurmconf_get(&sc, "ClusterName"), "a#b");
	assert_string_equal(slurmconf_get(&sc, "PrologFlags"), "Alloc,Contain");
	slurmconf_free(&sc);
}

/* A node's or partition's attributes are not global settings. */
static void test_records_skipped(void **state)
{
	struct slurmconf sc;

	(void)state;
	assert_int_equal(read_conf("NodeName=n1 Gres=gpu:1 Prolog=/x\n"
				   "PartitionName=p Nodes=n1 MaxTime=1\n",
				   R22_05, &sc),
			 0);
	assert_null(slurmconf_get(&sc, "Prolog"));
	assert_null(slurmconf_get(&sc, "MaxTime"));
	slurmconf_free(&sc);
}

/* A node's attributes: its own NodeName= line's (a hostlist), else those
 * of the NodeName=DEFAULT line before it; another node's never. */
static void test_node_attributes(void **state)
{
	struct slurmconf sc;

	(void)state;
	assert_int_equal(read_conf("NodeName=DEFAULT CoreSpecCount=1\n"
				   "NodeName=n[1-3] CpuSpecList=0-1\n"
				   "nodename=n4 CPUs=8\n"
				   "NodeName=DEFAULT CoreSpecCount=2\n"
				   "NodeName=n5 CPUs=8\n"
				   "PartitionName=p Nodes=n6 CpuSpecList=9\n",
				   R22_05, &sc),
			 0);
	assert_string_equal(slurmconf_node_get(&sc, "n2", "cpuspeclist"),
			    "0-1");
	assert_null(slurmconf_node_get(&sc, "n4", "CpuSpecList"));
	assert_string_equal(slurmconf_node_get(&sc, "n4", "CoreSpecCount"),
			    "1");
	assert_string_equal(slurmconf_node_get(&sc, "n5", "CoreSpecCount"),
			    "2");
	assert_null(slurmconf_node_get(&sc, "n6", "CpuSpecList"));
	assert_null(slurmconf_get(&sc, "CpuSpecList"));
	slurmconf_free(&sc);
}

/* Include reads the file there and then: a later line overrides it, it
 * overrides an earlier one; %c is ClusterName in lower case; a relative
 * name is from slurm.conf's directory (23.02+) or the including file's
 * (22.05). */
static void test_include(void **state)
{
	struct slurmconf sc;
	char text[512];

	(void)state;
	assert_int_equal(mkdir(strcat(strcpy(text, dir), "/sub"), 0755), 0);
	put("vm.part", "Prolog=/usr/sbin/slurm-vm-prolog\nMaxJobId=7\n");
	put("c-big.part", "Epilog=/usr/sbin/slurm-vm-epilog\n");
	put("sub/nested", "INCLUDE other\n");
	put("sub/other", "SlurmdUser=from-sub\n");
	put("other", "SlurmdUser=from-top\n");
	snprintf(text, sizeof(text),
		 "MaxJobId=5\nClusterName=BIG\ninclude vm.part\n"
		 "Include %s/c-%%c.part\nPrologFlags=Alloc\n"
		 "Include sub/nested\n",
		 dir);
	assert_int_equal(read_conf(text, R22_05, &sc), 0);
	assert_string_equal(slurmconf_get(&sc, "Prolog"),
			    "/usr/sbin/slurm-vm-prolog");
	assert_string_equal(slurmconf_get(&sc, "MaxJobId"), "7");
	assert_string_equal(slurmconf_get(&sc, "Epilog"),
			    "/usr/sbin/slurm-vm-epilog");
	assert_string_equal(slurmconf_get(&sc, "SlurmdUser"), "from-sub");
	slurmconf_free(&sc);
	assert_int_equal(read_conf(text, R24_11, &sc), 0);
	assert_string_equal(slurmconf_get(&sc, "SlurmdUser"), "from-top");
	slurmconf_free(&sc);
}

/* What slurmctld refuses to start with is an error, not a setting
 * silently missed: a missing file, a pattern, %c before ClusterName, a
 * file including itself. */
static void test_include_errors(void **state)
{
	struct slurmconf sc;

	(void)state;
	assert_int_not_equal(read_conf("Include missing.conf\n", R24_11, &sc),
			     0);
	put("d.conf", "MaxJobId=1\n");
	assert_int_not_equal(read_conf("Include *.conf\n", R24_11, &sc), 0);
	assert_int_not_equal(
		read_conf("Include %c.conf\nClusterName=d\n", R24_11, &sc), 0);
	assert_int_not_equal(read_conf("Include slurm.conf\n", R24_11, &sc), 0);
}

/* A ClusterName holding %c: each expansion of an Include path brings %c
 * back, without end (Slurm's own loop hangs); the reader gives up with
 * ELOOP instead of growing the path until memory or stack run out. */
static void test_include_cluster_loop(void **state)
{
	struct slurmconf sc;

	(void)state;
	put("x.conf", "MaxJobId=1\n");
	assert_int_equal(
		read_conf("ClusterName=x%c\nInclude %c.conf\n", R24_11, &sc),
		-ELOOP);
	assert_int_equal(
		read_conf("ClusterName=%C\nInclude %c.conf\n", R24_11, &sc),
		-ELOOP);
	/* %c twice in a path is fine. */
	put("x-x.conf", "MaxJobId=2\n");
	assert_int_equal(
		read_conf("ClusterName=X\nInclude %c-%c.conf\n", R24_11, &sc),
		0);
	assert_string_equal(slurmconf_get(&sc, "MaxJobId"), "2");
	slurmconf_free(&sc);
}

/* 24.05 runs every Prolog= line's script; 22.05 the last line's only. */
static void test_scripts(void **state)
{
	struct slurmconf sc;
	char found[256];

	(void)state;
	assert_int_equal(read_conf("Prolog=/usr/sbin/slurm-vm-prolog\n"
				   "Prolog=/etc/slurm/site-prolog\n"
				   "Epilog=/etc/slurm/site-epilog\n"
				   "Epilog=/usr/sbin/slurm-vm-epilog\n",
				   R22_05, &sc),
			 0);
	assert_false(slurmconf_runs_script(&sc, R22_05, SLURM_PROLOG,
					   "slurm-vm-prolog", found,
					   sizeof(found)));
	assert_string_equal(found, "/etc/slurm/site-prolog");
	assert_true(slurmconf_runs_script(&sc, R22_05, SLURM_EPILOG,
					  "slurm-vm-epilog", found,
					  sizeof(found)));
	assert_true(slurmconf_runs_script(&sc, R24_11, SLURM_PROLOG,
					  "slurm-vm-prolog", found,
					  sizeof(found)));
	assert_string_equal(
		found, "/usr/sbin/slurm-vm-prolog, /etc/slurm/site-prolog");
	assert_true(slurmconf_runs_script(&sc, R26_05, SLURM_EPILOG,
					  "slurm-vm-epilog", found,
					  sizeof(found)));
	assert_false(slurmconf_runs_script(&sc, R26_05, SLURM_PROLOG,
					   "slurm-vm-epilog", found,
					   sizeof(found)));
	slurmconf_free(&sc);
}

static void timeouts(const char *text, uint32_t release, unsigned prolog,
		     const char *prolog_key, unsigned epilog,
		     const char *epilog_key)
{
	struct slurmconf sc;
	const char *key;
	unsigned secs;

	assert_int_equal(read_conf(text, release, &sc), 0);
	assert_int_equal(slurmconf_script_timeout(&sc, release, SLURM_PROLOG,
						  &secs, &key),
			 0);
	assert_int_equal(secs, prolog);
	if (prolog_key)
		assert_string_equal(key, prolog_key);
	else
		assert_null(key);
	assert_int_equal(slurmconf_script_timeout(&sc, release, SLURM_EPILOG,
						  &secs, &key),
			 0);
	assert_int_equal(secs, epilog);
	if (epilog_key)
		assert_string_equal(key, epilog_key);
	else
		assert_null(key);
	slurmconf_free(&sc);
}

/* 25.05's PrologTimeout/EpilogTimeout override PrologEpilogTimeout; before
 * 25.05 they are not read. Unset, 65534 and up, UNLIMITED or INFINITE:
 * no limit. */
static void test_timeouts(void **state)
{
	const char *both = "PrologEpilogTimeout=600\nPrologTimeout=100\n"
			   "EpilogTimeout=50\n";
	const unsigned none = SLURMCONF_TIMEOUT_UNLIMITED;

	(void)state;
	timeouts(both, R22_05, 600, "PrologEpilogTimeout", 600,
		 "PrologEpilogTimeout");
	timeouts(both, R24_11, 600, "PrologEpilogTimeout", 600,
		 "PrologEpilogTimeout");
	timeouts(both, R25_05, 100, "PrologTimeout", 50, "EpilogTimeout");
	timeouts(both, R26_05, 100, "PrologTimeout", 50, "EpilogTimeout");
	timeouts("PrologEpilogTimeout=600\nEpilogTimeout=50\n", R26_05, 600,
		 "PrologEpilogTimeout", 50, "EpilogTimeout");
	timeouts("PrologTimeout=100\n", R24_11, none, NULL, none, NULL);
	timeouts("PrologTimeout=100\n", R25_05, 100, "PrologTimeout", none,
		 NULL);
	timeouts("PrologEpilogTimeout=65535\n", R22_05, none,
		 "PrologEpilogTimeout", none, "PrologEpilogTimeout");
	timeouts("PrologEpilogTimeout=UNLIMITED\n", R22_05, none,
		 "PrologEpilogTimeout", none, "PrologEpilogTimeout");
	timeouts("PrologTimeout=infinite\n", R26_05, none, "PrologTimeout",
		 none, NULL);
}

static unsigned flags_of(const char *flags, uint32_t release, int want_r)
{
	unsigned bits = 0;
	char bad[32] = "";

	assert_int_equal(slurm_prolog_flags_parse(flags, release, &bits, bad,
						  sizeof(bad)),
			 want_r);
	return want_r ? 0 : bits;
}

/* Flags that imply Alloc on each release; a flag a release does not know
 * is an error (slurmctld does not start). */
static void test_prolog_flags(void **state)
{
	unsigned bits;
	char bad[32];

	(void)state;
	assert_true(flags_of("Alloc", R22_05, 0) & SLURM_PROLOG_ALLOC);
	assert_true(flags_of("contain", R22_05, 0) & SLURM_PROLOG_ALLOC);
	assert_true(flags_of("X11", R22_05, 0) & SLURM_PROLOG_ALLOC);
	assert_true(flags_of("NoHold", R22_05, 0) & SLURM_PROLOG_ALLOC);
	assert_false(flags_of("Serial", R26_05, 0) & SLURM_PROLOG_ALLOC);
	assert_int_equal(flags_of("", R22_05, 0), 0);
	/* ForceRequeueOnFail: 23.02 */
	flags_of("ForceRequeueOnFail", R22_05, -EINVAL);
	assert_true(flags_of("ForceRequeueOnFail", R24_11, 0) &
		    SLURM_PROLOG_ALLOC);
	/* RunInJob: 24.05, with Contain and Alloc */
	assert_int_equal(slurm_prolog_flags_parse("Alloc,RunInJob", R23_11,
						  &bits, bad, sizeof(bad)),
			 -EINVAL);
	assert_string_equal(bad, "RunInJob");
	bits = flags_of("RunInJob", R24_11, 0);
	assert_int_equal(bits, SLURM_PROLOG_ALLOC | SLURM_PROLOG_CONTAIN |
				       SLURM_PROLOG_RUN_IN_JOB);
	assert_true(flags_of("RunInJob", R25_05, 0) & SLURM_PROLOG_RUN_IN_JOB);
	/* DeferBatch implies Alloc from 26.05 only */
	assert_false(flags_of("DeferBatch", R25_05, 0) & SLURM_PROLOG_ALLOC);
	assert_true(flags_of("DeferBatch", R26_05, 0) & SLURM_PROLOG_ALLOC);
	flags_of("Alloc,Bogus", R26_05, -EINVAL);
}

/* mpi/pmix's library: libpmix.so (libpmix-dev) up to 23.02, libpmix.so.2
 * (the runtime package) from 23.11. */
static void test_pmix_library(void **state)
{
	char buf[16];

	(void)state;
	assert_string_equal(slurm_pmix_library(R22_05).file, "libpmix.so");
	assert_string_equal(slurm_pmix_library(R22_05).package, "libpmix-dev");
	assert_string_equal(slurm_pmix_library(R24_11).file, "libpmix.so.2");
	assert_string_equal(slurm_pmix_library(R24_11).package, "libpmix2t64");
	assert_string_equal(slurm_pmix_library(R26_05).file, "libpmix.so.2");
	assert_string_equal(slurm_release_str(R24_11, buf, sizeof(buf)),
			    "24.11");
	assert_string_equal(slurm_release_str(R25_05, buf, sizeof(buf)),
			    "25.05");
}

/* gres.conf Cores= on a node with Sub-NUMA Clustering (two NUMA nodes of
 * three cores per package): slurmctld refuses one NUMA node's cores from
 * 24.11 on (and drains the node), never whole sockets. */
static void test_gres_cores(void **state)
{
	struct topology *topo = NULL;
	char *whole = NULL;
	int split;

	(void)state;
	assert_false(slurm_gres_cores_whole_sockets(R22_05));
	assert_false(
		slurm_gres_cores_whole_sockets(SLURM_VERSION_NUM(24, 5, 8)));
	assert_true(
		slurm_gres_cores_whole_sockets(SLURM_VERSION_NUM(24, 11, 0)));
	assert_true(slurm_gres_cores_whole_sockets(R24_11));
	assert_true(slurm_gres_cores_whole_sockets(R25_05));
	assert_true(slurm_gres_cores_whole_sockets(R26_05));
	assert_int_equal(topology_load(SRCDIR "/tests/fixtures/topology/"
					      "24em64t-2p4n3c2t-snc2-pci.xml",
				       &topo),
			 0);
	assert_int_equal(
		gresconf_cores_refused(topo, "3-5", R22_05, &split, &whole), 0);
	free(whole);
	assert_int_equal(
		gresconf_cores_refused(topo, "3-5", R24_11, &split, &whole), 1);
	assert_int_equal(split, 0);
	assert_string_equal(whole, "0-5");
	free(whole);
	assert_int_equal(
		gresconf_cores_refused(topo, "6-11", R26_05, &split, &whole),
		0);
	free(whole);
	assert_int_equal(
		gresconf_cores_refused(topo, "6-12", R24_11, &split, &whole),
		-EINVAL);
	topology_free(topo);
}

static int cleanup(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_case_and_last_line),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_records_skipped),
		cmocka_unit_test(test_node_attributes),
		cmocka_unit_test(test_include),
		cmocka_unit_test(test_include_errors),
		cmocka_unit_test(test_include_cluster_loop),
		cmocka_unit_test(test_scripts),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_prolog_flags),
		cmocka_unit_test(test_pmix_library),
		cmocka_unit_test(test_gres_cores),
	};

	if (!mkdtemp(dir))
		return 1;
	return cmocka_run_group_tests(tests, NULL, cleanup);
}
