/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The journal's replay (common/host/teardown.h) when the guest cannot be
 * stopped: what keeps it apart from other jobs (its network's nftables
 * tables and bridge, its VFs' GUIDs and partition record) stays, and a
 * later replay that stops it undoes them. Root only, in a network
 * namespace of its own; libvirt's test driver stands in for libvirtd. */
#include "config.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fileutil.h"
#include "journal.h"
#include "log.h"
#include "macro.h"
#include "teardown.h"

#define BRIDGE	 "svmbrtd77"
#define TABLE	 "svm_job_77"
#define GUEST	 "slurmvm-job-77.0"
#define OLD_GUID "00:00:00:00:00:00:00:00"
#define JOB_GUID "02:00:00:01:34:80:00:41"

static char top[] = "/tmp/svm-teardown.XXXXXX";

static int run(const char *cmd)
{
	return system(cmd);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

static bool file_has(const char *dir, const char *name, const char *text)
{
	char path[512], line[128] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return strcmp(line, text) == 0;
}

static bool table_exists(void)
{
	return run("nft list table bridge " TABLE " >/dev/null 2>&1") == 0;
}

/* The journal as the prolog leaves it: IB, then the network, then the
 * guest; each change made as journaled. */
static int journal_job(const char *vf, const char *rec)
{
	const char *guid[] = { vf, OLD_GUID, OLD_GUID, "Down", NULL };
	const char *record[] = { rec, NULL };
	const char *link[] = { BRIDGE, NULL };
	const char *nft[] = { "bridge", TABLE, NULL };
	const char *dom[] = { GUEST, NULL };
	int fd = statedir_open(top, "job-77.0", true);

	assert_true(fd >= 0);
	assert_int_equal(journal_append(fd, "IBGUID", guid), 0);
	write_text(vf, "node", JOB_GUID);
	write_text(vf, "port", JOB_GUID);
	write_text(vf, "policy", "Follow");
	assert_int_equal(journal_append(fd, "IBRECORD", record), 0);
	/* as a prolog killed while writing the record leaves it */
	write_text(top, "job-77.n1" FILE_REPLACE_TMP_SUFFIX, "job 77");
	write_text(top, "job-77.n1", "job 77");
	assert_int_equal(journal_append(fd, "NETLINK", link), 0);
	assert_int_equal(run("ip link add name " BRIDGE " type bridge"), 0);
	assert_int_equal(journal_append(fd, "NFT", nft), 0);
	assert_int_equal(run("nft add table bridge " TABLE), 0);
	assert_int_equal(journal_append(fd, "DOMAIN", dom), 0);
	return fd;
}

static void test_isolation_kept_while_guest_may_run(void **state)
{
	struct teardown_result res;
	struct vmconf conf;
	char vf[300], rec[300];
	int fd;

	if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0 ||
	    run("nft list tables >/dev/null 2>&1") != 0)
		skip(); /* root, a network namespace and nft */
	assert_non_null(mkdtemp(top));
	snprintf(vf, sizeof(vf), "%s/sriov-0", top);
	snprintf(rec, sizeof(rec), "%s/job-77.n1", top);
	assert_int_equal(mkdir(vf, 0755), 0);
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	conf.shutdown_timeout = 0;
	fd = journal_job(vf, rec);

	/* libvirt unreachable: the guest may still run */
	free(conf.libvirt_uri);
	conf.libvirt_uri = strdup("test:///nonexistent/libvirt.xml");
	assert_int_equal(teardown_replay(&conf, fd, false, &res), -EIO);
	assert_true(res.node_unsafe);
	assert_int_equal(res.kept, 4);
	assert_true(table_exists());
	assert_true(if_nametoindex(BRIDGE) != 0);
	assert_true(file_has(vf, "port", JOB_GUID));
	assert_true(file_has(vf, "policy", "Follow"));
	assert_int_equal(access(rec, F_OK), 0);
	assert_non_null(strstr(log_last_error(), GUEST));

	/* the guest stops (it is gone): everything is undone */
	free(conf.libvirt_uri);
	conf.libvirt_uri = strdup("test:///default");
	assert_int_equal(teardown_replay(&conf, fd, false, &res), 0);
	assert_false(res.node_unsafe);
	assert_int_equal(res.kept, 0);
	assert_int_equal(res.steps, 5);
	assert_false(table_exists());
	assert_int_equal(if_nametoindex(BRIDGE), 0);
	assert_true(file_has(vf, "port", OLD_GUID));
	assert_true(file_has(vf, "policy", "Down"));
	assert_int_equal(access(rec, F_OK), -1);
	strcat(rec, FILE_REPLACE_TMP_SUFFIX);
	assert_int_equal(access(rec, F_OK), -1);

	close(fd);
	vmconf_free(&conf);
	snprintf(rec, sizeof(rec), "rm -rf %s", top);
	run(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isolation_kept_while_guest_may_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
