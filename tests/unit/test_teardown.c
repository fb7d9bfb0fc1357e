/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The journal's replay (common/vm/teardown.h) when the guest cannot be
 * stopped: what keeps it apart from other jobs (its network's nftables
 * tables and bridge, its VFs' GUIDs and partition record) stays, and a
 * later replay that stops it undoes them; and a requeued job's earlier
 * incarnation's reclaim leaves what its live later incarnation holds under
 * the same names. Root only, in a network namespace of its own; libvirt's
 * test driver stands in for libvirtd. And how the guest stopped is logged:
 * shut down on the ACPI power button, or destroyed after ShutdownTimeout
 * (any user, the test driver). */
#include "config.h"

#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hw/devices.h"
#include "core/fileutil.h"
#include "holder.h"
#include "job/journal.h"
#include "core/log.h"
#include "core/macro.h"
#include "vm/reclaim.h"
#include "vm/teardown.h"

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

static bool family_table_exists(const char *family)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd),
		 "nft list table %s " TABLE " >/dev/null 2>&1", family);
	return run(cmd) == 0;
}

static bool table_exists(void)
{
	return family_table_exists("bridge");
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
	assert_int_equal(journal_append(fd, JOURNAL_IBGUID, guid), 0);
	write_text(vf, "node", JOB_GUID);
	write_text(vf, "port", JOB_GUID);
	write_text(vf, "policy", "Follow");
	assert_int_equal(journal_append(fd, JOURNAL_IBRECORD, record), 0);
	/* as a prolog killed while writing the record leaves it */
	write_text(top, "job-77.n1" FILE_REPLACE_TMP_SUFFIX, "job 77");
	write_text(top, "job-77.n1", "job 77");
	assert_int_equal(journal_append(fd, JOURNAL_NETLINK, link), 0);
	assert_int_equal(run("ip link add name " BRIDGE " type bridge"), 0);
	assert_int_equal(journal_append(fd, JOURNAL_NFT, nft), 0);
	assert_int_equal(run("nft add table bridge " TABLE), 0);
	assert_int_equal(journal_append(fd, JOURNAL_DOMAIN, dom), 0);
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

#define VXLAN	   "svmxrtd77"
#define INC_GUID_0 "02:00:00:01:34:80:00:40"

static char inc_top[] = "/tmp/svm-incarn.XXXXXX";

/* One record of incarnation @fd's journal; @a1 may be NULL. */
static void journal_one(int fd, enum journal_verb verb, const char *a0,
			const char *a1)
{
	const char *args[] = { a0, a1, NULL };

	assert_int_equal(journal_append(fd, verb, args), 0);
}

static void journal_guid(int fd, const char *vf, const char *old,
			 const char *now)
{
	const char *args[] = { vf, old, old, "Down", NULL };

	assert_int_equal(journal_append(fd, JOURNAL_IBGUID, args), 0);
	write_text(vf, "node", now);
	write_text(vf, "port", now);
	write_text(vf, "policy", "Follow");
}

/* Job 77 was requeued: incarnation 0 left its journal here (nothing
 * undone: slurmctld did not answer its epilog), incarnation 1 runs now
 * with the job's bridge, table, VF and partition record of the same
 * names. The reclaim of incarnation 0 (the epilog's of earlier
 * incarnations, the prolog's, `slurm-vm cleanup`'s) must leave those to
 * incarnation 1 and still undo what only incarnation 0 held. */
static void test_earlier_incarnation_leaves_later_alone(void **state)
{
	struct teardown_result res;
	struct ibpart_vf_state old;
	struct vmconf conf;
	struct guest g;
	char vf[300], vf0[300], rec[300];
	int fd0, fd1;

	if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0 ||
	    run("nft list tables >/dev/null 2>&1") != 0)
		skip(); /* root, a network namespace and nft */
	assert_non_null(mkdtemp(inc_top));
	snprintf(vf, sizeof(vf), "%s/sriov-0", inc_top);
	snprintf(vf0, sizeof(vf0), "%s/sriov-1", inc_top);
	snprintf(rec, sizeof(rec), "%s/job-77.n1", inc_top);
	assert_int_equal(mkdir(vf, 0755), 0);
	assert_int_equal(mkdir(vf0, 0755), 0);
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	free(conf.state_dir);
	conf.state_dir = strdup(inc_top);
	free(conf.libvirt_uri);
	conf.libvirt_uri = strdup("test:///default");

	/* incarnation 0: both VFs, the record, bridge, VXLAN, two tables */
	fd0 = statedir_open(inc_top, "job-77.0", true);
	assert_true(fd0 >= 0);
	journal_guid(fd0, vf, OLD_GUID, INC_GUID_0);
	journal_guid(fd0, vf0, OLD_GUID, INC_GUID_0);
	journal_one(fd0, JOURNAL_IBRECORD, rec, NULL);
	journal_one(fd0, JOURNAL_NETLINK, BRIDGE, NULL);
	journal_one(fd0, JOURNAL_NETLINK, VXLAN, NULL);
	assert_int_equal(run("ip link add name " VXLAN " type bridge"), 0);
	journal_one(fd0, JOURNAL_NFT, "bridge", TABLE);
	journal_one(fd0, JOURNAL_NFT, "netdev", TABLE);
	assert_int_equal(run("nft add table netdev " TABLE), 0);
	journal_one(fd0, JOURNAL_DOMAIN, "slurmvm-job-77.0", NULL);
	close(fd0);

	/* incarnation 1, live: one VF, the record, the bridge and the
	 * bridge table; as its prolog, it journals the VF's own GUIDs from
	 * incarnation 0's journal, not incarnation 0's that the VF holds */
	fd1 = statedir_open(inc_top, "job-77.1", true);
	assert_true(fd1 >= 0);
	assert_int_equal(guest_earlier_vf_state(&conf, 77, 1, vf, &old), 1);
	assert_string_equal(old.port, OLD_GUID);
	assert_string_equal(old.policy, "Down");
	assert_int_equal(guest_earlier_vf_state(&conf, 77, 1, rec, &old), 0);
	assert_int_equal(guest_earlier_vf_state(&conf, 77, 0, vf, &old), 0);
	journal_guid(fd1, vf, OLD_GUID, JOB_GUID);
	journal_one(fd1, JOURNAL_IBRECORD, rec, NULL);
	write_text(inc_top, "job-77.n1", "job 77");
	journal_one(fd1, JOURNAL_NETLINK, BRIDGE, NULL);
	assert_int_equal(run("ip link add name " BRIDGE " type bridge"), 0);
	journal_one(fd1, JOURNAL_NFT, "bridge", TABLE);
	assert_int_equal(run("nft add table bridge " TABLE), 0);
	journal_one(fd1, JOURNAL_DOMAIN, "slurmvm-job-77.1", NULL);

	guest_from_job(&g, 77, 0);
	assert_int_equal(guest_reclaim(&conf, &g, 0, true, &res), 0);
	assert_int_equal(res.yielded, 4);
	/* incarnation 1's network, filters, GUIDs and record stand */
	assert_true(if_nametoindex(BRIDGE) != 0);
	assert_true(table_exists());
	assert_true(file_has(vf, "port", JOB_GUID));
	assert_true(file_has(vf, "policy", "Follow"));
	assert_int_equal(access(rec, F_OK), 0);
	/* what only incarnation 0 held is undone, its state gone */
	assert_int_equal(if_nametoindex(VXLAN), 0);
	assert_false(family_table_exists("netdev"));
	assert_true(file_has(vf0, "port", OLD_GUID));
	assert_true(file_has(vf0, "policy", "Down"));
	assert_int_equal(faccessat(fd1, "../job-77.0", F_OK, 0), -1);

	/* incarnation 1's own reclaim then undoes the rest */
	guest_from_job(&g, 77, 1);
	assert_int_equal(guest_reclaim(&conf, &g, 0, true, &res), 0);
	assert_int_equal(if_nametoindex(BRIDGE), 0);
	assert_false(table_exists());
	assert_true(file_has(vf, "port", OLD_GUID));
	assert_true(file_has(vf, "policy", "Down"));
	assert_int_equal(access(rec, F_OK), -1);

	close(fd1);
	vmconf_free(&conf);
	snprintf(rec, sizeof(rec), "rm -rf %s", inc_top);
	run(rec);
}

#define PCI_ADDR "0000:3b:00.0"
#define NOBODY	 65534

static char dev_top[] = "/tmp/svm-incdev.XXXXXX";

static bool alive(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == 0;
}

/* The same requeued job with a device (DeviceBinding=managed): incarnation
 * 0 detached the PCI function and gave its group file to the job user;
 * incarnation 1 runs now with the same function and file. Incarnation 0's
 * reclaim must neither take the file back (and kill incarnation 1's qemu,
 * which holds it) nor return the function to its host driver; incarnation
 * 1's reclaim then gives the file its true owner back, root's as before
 * incarnation 0, not the job user's that incarnation 1 found. */
static void test_earlier_incarnation_leaves_devices(void **state)
{
	struct teardown_result res;
	struct journal earlier;
	const struct journal_entry *e;
	struct vmconf conf;
	struct guest g;
	struct stat st;
	char dev[300], uid[16], gid[16], mode[16];
	pid_t qemu;
	int fd0, fd1;

	if (geteuid() != 0)
		skip();
	assert_non_null(mkdtemp(dev_top));
	snprintf(dev, sizeof(dev), "%s/vfio-12", dev_top);
	if (mknod(dev, S_IFCHR | 0600, makedev(1, 3)) < 0)
		skip(); /* no mknod in this container */
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	free(conf.state_dir);
	conf.state_dir = strdup(dev_top);
	free(conf.libvirt_uri);
	conf.libvirt_uri = strdup("test:///default");
	conf.shutdown_timeout = 0;

	/* incarnation 0, as its prolog: DETACH, DEVOWNER, the guest */
	fd0 = statedir_open(dev_top, "job-78.0", true);
	assert_true(fd0 >= 0);
	journal_one(fd0, JOURNAL_DETACH, PCI_ADDR, NULL);
	{
		const char *a[] = { dev, "0", "0", "600", NULL };

		assert_int_equal(journal_append(fd0, JOURNAL_DEVOWNER, a), 0);
	}
	assert_int_equal(devices_file_chown(dev, NOBODY, NOBODY, 0600, NULL),
			 0);
	journal_one(fd0, JOURNAL_DOMAIN, "slurmvm-job-78.0", NULL);
	close(fd0);

	/* incarnation 1, as its prolog: the file's owner before the job
	 * from incarnation 0's journal, not the job user it finds */
	fd1 = statedir_open(dev_top, "job-78.1", true);
	assert_true(fd1 >= 0);
	assert_int_equal(guest_earlier_record(&conf, 78, 1, JOURNAL_DEVOWNER,
					      dev, &earlier, &e),
			 1);
	assert_int_equal(e->n_args, 4);
	snprintf(uid, sizeof(uid), "%s", e->args[1]);
	snprintf(gid, sizeof(gid), "%s", e->args[2]);
	snprintf(mode, sizeof(mode), "%s", e->args[3]);
	journal_free(&earlier);
	assert_string_equal(uid, "0");
	assert_int_equal(guest_earlier_record(&conf, 78, 0, JOURNAL_DEVOWNER,
					      dev, &earlier, &e),
			 0);
	journal_free(&earlier);
	journal_one(fd1, JOURNAL_DETACH, PCI_ADDR, NULL);
	{
		const char *a[] = { dev, uid, gid, mode, NULL };

		assert_int_equal(journal_append(fd1, JOURNAL_DEVOWNER, a), 0);
	}
	journal_one(fd1, JOURNAL_DOMAIN, "slurmvm-job-78.1", NULL);
	qemu = spawn_holder(dev, NOBODY, false); /* incarnation 1's qemu */

	guest_from_job(&g, 78, 0);
	assert_int_equal(guest_reclaim(&conf, &g, 0, true, &res), 0);
	assert_int_equal(res.yielded, 2);
	assert_false(res.node_unsafe);
	/* incarnation 1's file and its qemu stand; no reattach was tried */
	assert_int_equal(stat(dev, &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_true(alive(qemu));
	assert_int_equal(faccessat(fd1, "../job-78.0", F_OK, 0), -1);

	/* incarnation 1's reclaim: the file root's again, its holder gone;
	 * the function's return is tried (libvirt's test driver knows no
	 * PCI function: it fails, and the node is unsafe) */
	guest_from_job(&g, 78, 1);
	assert_int_equal(guest_reclaim(&conf, &g, 0, true, &res), -EIO);
	assert_int_equal(res.failed, 1);
	assert_true(res.node_unsafe);
	assert_int_equal(stat(dev, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(waitpid(qemu, NULL, 0), qemu);

	close(fd1);
	vmconf_free(&conf);
	snprintf(dev, sizeof(dev), "rm -rf %s", dev_top);
	run(dev);
}

/* The messages logged, for the assertions on them. */
static char logged[4096];

static void log_capture(enum log_level level, const char *msg)
{
	size_t n = strlen(logged);

	(void)level;
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

static char stop_top[] = "/tmp/svm-stop.XXXXXX";

/* A running guest @name on the test driver; @ignores_button: the ACPI
 * power button does not power it off (on_poweroff restart: it stays
 * running, as a guest with nothing listening for the button). */
static void running_guest(virConnectPtr conn, const char *name,
			  bool ignores_button)
{
	char xml[512];
	virDomainPtr dom;

	snprintf(xml, sizeof(xml),
		 "<domain type='test'><name>%s</name>"
		 "<memory unit='MiB'>64</memory>%s"
		 "<os><type>hvm</type></os></domain>",
		 name,
		 ignores_button ? "<on_poweroff>restart</on_poweroff>" : "");
	dom = virDomainCreateXML(conn, xml, 0);
	assert_non_null(dom);
	virDomainFree(dom);
}

/* The journal's DOMAIN record of guest @name replayed under @conf:
 * how long it took. */
static double replay_domain(struct vmconf *conf, const char *name)
{
	const char *dom[] = { name, NULL };
	struct teardown_result res;
	_cleanup_close_ int fd = statedir_open(stop_top, name, true);

	assert_true(fd >= 0);
	assert_int_equal(journal_append(fd, JOURNAL_DOMAIN, dom), 0);
	assert_int_equal(teardown_replay(conf, fd, false, &res), 0);
	assert_int_equal(res.n_timed, 1);
	assert_string_equal(res.timed[0].verb,
			    journal_verb_name(JOURNAL_DOMAIN));
	return res.timed[0].seconds;
}

/* An admin reads from the log whether a guest shut down cleanly or was
 * destroyed after ShutdownTimeout (an image that ignores the ACPI power
 * button, which costs every job's epilog the whole timeout). */
static void test_guest_stop_logged_as_clean_or_destroyed(void **state)
{
	virConnectPtr conn = virConnectOpen("test:///default");
	struct vmconf conf;
	double secs;

	if (geteuid() != 0) {
		virConnectClose(conn);
		skip(); /* statedir_open() takes root's directories only */
	}
	assert_non_null(conn);
	assert_non_null(mkdtemp(stop_top));
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	free(conf.libvirt_uri);
	conf.libvirt_uri = strdup("test:///default");
	conf.shutdown_timeout = 2;
	log_set_sink(log_capture);

	running_guest(conn, "slurmvm-job-78.0", false);
	logged[0] = '\0';
	secs = replay_domain(&conf, "slurmvm-job-78.0");
	assert_true(secs < 1.0);
	assert_non_null(strstr(logged, "guest slurmvm-job-78.0 shut down"));
	assert_null(strstr(logged, "destroyed"));

	running_guest(conn, "slurmvm-job-79.0", true);
	logged[0] = '\0';
	secs = replay_domain(&conf, "slurmvm-job-79.0");
	assert_true(secs >= 2.0);
	assert_non_null(strstr(logged,
			       "guest slurmvm-job-79.0 did not shut down "
			       "within ShutdownTimeout=2s"));
	assert_non_null(strstr(logged, "; destroyed"));
	assert_null(virDomainLookupByName(conn, "slurmvm-job-79.0"));

	log_set_sink(NULL);
	vmconf_free(&conf);
	virConnectClose(conn);
	snprintf(logged, sizeof(logged), "rm -rf %s", stop_top);
	run(logged);
}

/* A journal written before a verb was dropped or renamed (or edited): its
 * unknown record and one of a known verb with the wrong arguments are
 * skipped with an error each; the rest of it is undone. */
static void test_unknown_record_skipped(void **state)
{
	static char dir[] = "/tmp/svm-unknown.XXXXXX";
	const char *text = "GONE\tx\nRELAY\trelay.pid\nSEED\ta\tb\n";
	struct teardown_result res;
	struct vmconf conf;
	int fd, jfd;

	if (geteuid() != 0)
		skip(); /* statedir_open() takes root's directories only */
	assert_non_null(mkdtemp(dir));
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	fd = statedir_open(dir, "job-80.0", true);
	assert_true(fd >= 0);
	jfd = openat(fd, JOURNAL_FILE, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(jfd >= 0);
	assert_int_equal(write(jfd, text, strlen(text)), (ssize_t)strlen(text));
	close(jfd);
	log_set_sink(log_capture);
	logged[0] = '\0';
	assert_int_equal(teardown_replay(&conf, fd, false, &res), -EIO);
	log_set_sink(NULL);
	assert_int_equal(res.steps, 3);
	assert_int_equal(res.failed, 2);
	assert_non_null(strstr(logged, "unknown journal record GONE; skipped"));
	assert_non_null(
		strstr(logged, "journal record SEED has 2 arguments; skipped"));
	close(fd);
	vmconf_free(&conf);
	snprintf(logged, sizeof(logged), "rm -rf %s", dir);
	run(logged);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_isolation_kept_while_guest_may_run),
		cmocka_unit_test(test_earlier_incarnation_leaves_later_alone),
		cmocka_unit_test(test_earlier_incarnation_leaves_devices),
		cmocka_unit_test(test_guest_stop_logged_as_clean_or_destroyed),
		cmocka_unit_test(test_unknown_record_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
