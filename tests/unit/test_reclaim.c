/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Guests of a StateDir and their reclaim, without libvirt (Boot=no): which
 * directories count as guests, what a reclaim removes, keeps and refuses,
 * and who holds a device file. The libvirt side is the cluster test
 * tests/cluster/test_vm_reclaim.sh. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "holder.h"
#include "hw/holders.h"
#include "job/journal.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "vm/reclaim.h"

static char top[256], state_dir[300], overlay_dir[300];
static struct vmconf conf;

static int setup(void **state)
{
	snprintf(top, sizeof(top), "/tmp/svm-reclaim-XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(state_dir, sizeof(state_dir), "%s/state", top);
	snprintf(overlay_dir, sizeof(overlay_dir), "%s/overlay", top);
	if (mkdir(state_dir, 0700) < 0 || mkdir(overlay_dir, 0700) < 0)
		return -1;
	if (vmconf_load(&conf, NULL) < 0)
		return -1;
	free(conf.state_dir);
	free(conf.overlay_dir);
	conf.state_dir = strdup(state_dir);
	conf.overlay_dir = strdup(overlay_dir);
	conf.boot = false; /* no libvirt: the state directories only */
	return 0;
}

static int teardown(void **state)
{
	char cmd[512];

	vmconf_free(&conf);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}

/* Does @rel (below the test directory) exist? */
static bool exists(const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	return lstat(path, &st) == 0;
}

/* A state directory with an overlay journaled, as the prolog leaves it. */
static int make_guest(const char *name, bool keep, const char *overlay)
{
	const char *args[] = { overlay, NULL };
	int fd = statedir_open(state_dir, name, true);

	assert_true(fd >= 0);
	if (overlay && strncmp(overlay, overlay_dir, strlen(overlay_dir)) == 0)
		close(open(overlay, O_WRONLY | O_CREAT, 0600));
	if (overlay)
		assert_int_equal(journal_append(fd, JOURNAL_OVERLAY, args), 0);
	if (keep)
		close(openat(fd, GUEST_KEEP_FILE, O_WRONLY | O_CREAT, 0644));
	return fd;
}

static void test_scan_takes_only_state_names(void **state)
{
	struct guest_list list;
	char path[512];

	if (geteuid() != 0)
		skip();
	close(make_guest("job-7.1", false, NULL));
	close(make_guest("job-7.0", false, NULL));
	/* Not statedir_name()'s spelling, not a directory, a symlink. */
	snprintf(path, sizeof(path), "%s/job-07.0", state_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/job-8.0x", state_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/job-10.0", state_dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	snprintf(path, sizeof(path), "%s/job-9.0", state_dir);
	assert_int_equal(symlink("job-7.0", path), 0);

	assert_int_equal(guests_scan(&conf, &list), 0);
	assert_int_equal(list.n, 2);
	assert_string_equal(list.v[0].name, "job-7.0");
	assert_string_equal(list.v[1].name, "job-7.1");
	assert_int_equal(list.v[1].job_id, 7);
	assert_int_equal(list.v[1].restart, 1);
	assert_true(list.v[0].has_state && !list.v[0].has_domain);
	assert_false(list.libvirt_down);
	assert_null(guests_holding(&list, "0000:3b:00.0"));
	guest_list_free(&list);
}

/* The epilog of a job requeued after a failed prolog gets the next
 * restart count: the earlier incarnations' state is its to undo, not
 * another job's, not a later one's, not one already torn down (kept). */
static void test_earlier_incarnations(void **state)
{
	unsigned v[4];
	int fd;

	if (geteuid() != 0)
		skip();
	close(make_guest("job-7.0", false, NULL));
	close(make_guest("job-7.2", false, NULL));
	close(make_guest("job-7.3", false, NULL));
	close(make_guest("job-17.0", false, NULL));
	fd = make_guest("job-7.1", true, NULL);
	close(openat(fd, GUEST_TORN_DOWN_FILE, O_WRONLY | O_CREAT, 0644));
	close(fd);

	assert_int_equal(guest_earlier_incarnations(&conf, 7, 3, v, 4), 2);
	assert_true((v[0] == 0 && v[1] == 2) || (v[0] == 2 && v[1] == 0));
	assert_int_equal(guest_earlier_incarnations(&conf, 7, 0, v, 4), 0);
	assert_int_equal(guest_earlier_incarnations(&conf, 17, 1, v, 4), 1);
	assert_int_equal(v[0], 0);
	assert_int_equal(guest_earlier_incarnations(&conf, 7, 9, v, 1), 1);
	assert_int_equal(guest_earlier_incarnations(&conf, 8, 9, v, 4), 0);
}

static void test_reclaim_removes_everything(void **state)
{
	char overlay[512];
	struct teardown_result res;
	struct guest g;

	if (geteuid() != 0)
		skip();
	snprintf(overlay, sizeof(overlay), "%s/job-5.0.qcow2", overlay_dir);
	close(make_guest("job-5.0", false, overlay));
	guest_from_job(&g, 5, 0);
	assert_int_equal(guest_reclaim(&conf, &g, 0, false, &res), 0);
	assert_int_equal(res.steps, 1);
	assert_false(exists("overlay/job-5.0.qcow2"));
	assert_false(exists("state/job-5.0"));
	/* Twice: nothing there any more. */
	assert_int_equal(guest_reclaim(&conf, &g, 0, false, &res), -ENOENT);
}

static void test_reclaim_keeps_for_vm_keep(void **state)
{
	char overlay[512];
	struct teardown_result res;
	struct guest_list list;
	struct guest g;

	if (geteuid() != 0)
		skip();
	snprintf(overlay, sizeof(overlay), "%s/job-6.0.qcow2", overlay_dir);
	close(make_guest("job-6.0", true, overlay));
	guest_from_job(&g, 6, 0);
	assert_int_equal(guest_reclaim(&conf, &g, 0, false, &res), 0);
	assert_true(exists("overlay/job-6.0.qcow2"));
	assert_true(exists("state/job-6.0/" GUEST_TORN_DOWN_FILE));
	assert_int_equal(guests_scan(&conf, &list), 0);
	assert_int_equal(list.n, 1);
	assert_true(list.v[0].torn_down);
	guest_list_free(&list);
}

static void test_reclaim_waits_for_lock(void **state)
{
	struct teardown_result res;
	struct guest g;
	int fd;

	if (geteuid() != 0)
		skip();
	fd = make_guest("job-11.0", false, NULL);
	assert_int_equal(statedir_lock(fd, 0), 0); /* a prolog runs */
	guest_from_job(&g, 11, 0);
	assert_int_equal(guest_reclaim(&conf, &g, 0, false, &res), -EBUSY);
	assert_true(exists("state/job-11.0"));
	close(fd); /* the prolog ends */
	assert_int_equal(guest_reclaim(&conf, &g, 0, false, &res), 0);
	assert_false(exists("state/job-11.0"));
}

static void test_failed_step_keeps_state(void **state)
{
	struct teardown_result res;
	struct guest g;
	struct stat st;

	if (geteuid() != 0)
		skip();
	/* An overlay outside OverlayDir is never deleted: the step fails. */
	close(make_guest("job-12.0", false, "/etc/passwd"));
	guest_from_job(&g, 12, 0);
	assert_int_equal(guest_reclaim(&conf, &g, 0, false, &res), -EIO);
	assert_int_equal(res.failed, 1);
	assert_false(res.node_unsafe);
	assert_true(exists("state/job-12.0/journal"));
	assert_int_equal(stat("/etc/passwd", &st), 0);
}

static void test_device_file_holder(void **state)
{
	char path[512], comm[32];
	int ready[2], fd;
	pid_t child, pid = 0;

	snprintf(path, sizeof(path), "%s/vfio-12", top);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	/* Our own descriptor does not count. */
	assert_int_equal(device_file_holder(path, &pid, comm, sizeof(comm)), 0);
	assert_int_equal(pipe(ready), 0);
	child = fork();
	if (child == 0) {
		close(ready[0]);
		close(ready[1]);
		pause();
		_exit(0);
	}
	close(ready[1]);
	/* EOF once the child closed it */
	assert_int_equal(read(ready[0], comm, 1), 0);
	close(ready[0]);
	assert_int_equal(device_file_holder(path, &pid, comm, sizeof(comm)), 1);
	assert_int_equal(pid, child);
	/* The holder is named by its command, as /proc has it (15 bytes). */
	assert_int_equal(strncmp(comm, program_invocation_short_name, 15), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(proc_comm(child, comm), -ENOENT);
	assert_string_equal(comm, "");
	close(fd);
	assert_int_equal(device_file_holder(path, &pid, comm, sizeof(comm)), 0);
}

/* A guest run with --vm-keep and torn down by its epilog, its teardown
 * @age_h hours ago. */
static void make_kept(uint32_t job, const char *overlay, unsigned age_h)
{
	char name[64], marker[512];
	struct teardown_result res;
	struct timespec t[2];
	struct guest g;

	snprintf(name, sizeof(name), "job-%u.0", job);
	close(make_guest(name, true, overlay));
	guest_from_job(&g, job, 0);
	assert_int_equal(guest_reclaim(&conf, &g, 0, false, &res), 0);
	snprintf(marker, sizeof(marker), "%s/%s/" GUEST_TORN_DOWN_FILE,
		 state_dir, name);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= (time_t)age_h * 3600;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, marker, t, AT_SYMLINK_NOFOLLOW),
			 0);
}

/* Kept state goes once KeepFor= has passed, with its overlay; younger
 * kept state and KeepFor=0 keep it. */
static void test_kept_expire(void **state)
{
	char old[512], young[512];
	unsigned removed;

	if (geteuid() != 0)
		skip();
	snprintf(old, sizeof(old), "%s/job-20.0.qcow2", overlay_dir);
	snprintf(young, sizeof(young), "%s/job-21.0.qcow2", overlay_dir);
	make_kept(20, old, 24 * 8);
	make_kept(21, young, 1);
	assert_true(exists("overlay/job-20.0.qcow2"));
	conf.keep_for_hours = 0;
	assert_int_equal(kept_expire(&conf, time(NULL), &removed), 0);
	assert_int_equal(removed, 0);
	conf.keep_for_hours = 168;
	assert_int_equal(kept_expire(&conf, time(NULL), &removed), 0);
	assert_int_equal(removed, 1);
	assert_false(exists("overlay/job-20.0.qcow2"));
	assert_false(exists("state/job-20.0"));
	assert_true(exists("overlay/job-21.0.qcow2"));
	assert_true(exists("state/job-21.0/" GUEST_KEEP_FILE));
}

/* `slurm-vm cleanup --kept JOB`: that job's kept state goes at once, with
 * its overlay; another job's stays, and so does a guest not torn down. */
static void test_kept_remove_job(void **state)
{
	char ov[512], other[512], live[512];
	unsigned removed, not_torn;

	if (geteuid() != 0)
		skip();
	snprintf(ov, sizeof(ov), "%s/job-23.0.qcow2", overlay_dir);
	snprintf(other, sizeof(other), "%s/job-24.0.qcow2", overlay_dir);
	snprintf(live, sizeof(live), "%s/job-25.0.qcow2", overlay_dir);
	make_kept(23, ov, 0);
	make_kept(24, other, 0);
	close(make_guest("job-25.0", true, live));
	conf.keep_for_hours = 168;
	assert_int_equal(kept_remove_job(&conf, 23, &removed, &not_torn), 0);
	assert_int_equal(removed, 1);
	assert_int_equal(not_torn, 0);
	assert_false(exists("overlay/job-23.0.qcow2"));
	assert_false(exists("state/job-23.0"));
	assert_true(exists("overlay/job-24.0.qcow2"));
	assert_int_equal(kept_remove_job(&conf, 25, &removed, &not_torn), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(not_torn, 1);
	assert_true(exists("overlay/job-25.0.qcow2"));
	assert_true(exists("state/job-25.0"));
}

/* A new job whose id an earlier job had (ids wrap) inherits nothing: not
 * the kept files of a torn-down one, not the keep marker of one whose
 * epilog never ran. */
static void test_take_name_after_wrap(void **state)
{
	struct teardown_result res;
	char ov[512];

	if (geteuid() != 0)
		skip();
	snprintf(ov, sizeof(ov), "%s/job-22.0.qcow2", overlay_dir);
	make_kept(22, ov, 0);
	assert_int_equal(guest_take_name(&conf, 22, 0, 0, &res), 0);
	assert_false(exists("state/job-22.0"));
	assert_false(exists("overlay/job-22.0.qcow2"));

	snprintf(ov, sizeof(ov), "%s/job-23.0.qcow2", overlay_dir);
	close(make_guest("job-23.0", true, ov));
	assert_int_equal(guest_take_name(&conf, 23, 0, 0, &res), 0);
	assert_false(exists("state/job-23.0"));
	assert_false(exists("overlay/job-23.0.qcow2"));
	/* Free already. */
	assert_int_equal(guest_take_name(&conf, 24, 0, 0, &res), 0);
}

/* An older job's state of the name that cannot be removed says whether
 * its guest may still hold devices, which alone makes the node unsafe for
 * the prolog (doc/security.md): an overlay outside OverlayDir, never
 * deleted, or another's lock do not; a device file that could not be
 * given back does. The state stays for `slurm-vm cleanup` in each case. */
static void test_take_name_fault(void **state)
{
	const char *dev[5] = { NULL, "0", "0", "0600", NULL };
	struct teardown_result res;
	char vfio[512];
	int fd;

	if (geteuid() != 0)
		skip();
	close(make_guest("job-26.0", false, "/etc/passwd"));
	assert_int_equal(guest_take_name(&conf, 26, 0, 0, &res), -EIO);
	assert_int_equal(res.failed, 1);
	assert_false(res.node_unsafe);
	assert_true(exists("state/job-26.0/journal"));

	fd = make_guest("job-27.0", false, NULL);
	assert_int_equal(statedir_lock(fd, 0), 0); /* a cleanup runs */
	assert_int_equal(guest_take_name(&conf, 27, 0, 0, &res), -EBUSY);
	assert_false(res.node_unsafe);
	assert_true(exists("state/job-27.0"));
	close(fd);

	/* A VFIO group file (here a regular file, never touched). */
	snprintf(vfio, sizeof(vfio), "%s/vfio-28", top);
	close(open(vfio, O_WRONLY | O_CREAT, 0600));
	dev[0] = vfio;
	fd = make_guest("job-28.0", false, NULL);
	assert_int_equal(journal_append(fd, JOURNAL_DEVOWNER, dev), 0);
	close(fd);
	assert_int_equal(guest_take_name(&conf, 28, 0, 0, &res), -EIO);
	assert_true(res.node_unsafe);
	assert_true(exists("state/job-28.0/journal"));
}

#define WRAP_BRIDGE "svmbwrap30"

/* State @name with a journal holding the bridge, as its prolog left it
 * (the bridge is made once); with @locked, its lock held (a `slurm-vm
 * cleanup` at work): the descriptor that holds it. */
static int make_net_guest(const char *name, bool locked)
{
	const char *link[] = { WRAP_BRIDGE, NULL };
	int fd = make_guest(name, false, NULL);

	assert_int_equal(journal_append(fd, JOURNAL_NETLINK, link), 0);
	if (if_nametoindex(WRAP_BRIDGE) == 0)
		assert_int_equal(
			system("ip link add name " WRAP_BRIDGE " type bridge"),
			0);
	if (locked)
		assert_int_equal(statedir_lock(fd, 0), 0);
	return fd;
}

/* slurmctld, as job_fate() reads it: the job of the id runs with restart
 * count slurmctld_restart; slurmctld_down: it does not answer. */
static unsigned slurmctld_restart;
static bool slurmctld_down;

static int fake_fate(const struct guest *g, char *why, size_t len)
{
	if (slurmctld_down)
		return -EHOSTDOWN;
	snprintf(why, len, "%s",
		 g->restart < slurmctld_restart	  ? "requeued"
		 : g->restart > slurmctld_restart ? "an older job of this id"
						  : "RUNNING");
	return g->restart != slurmctld_restart;
}

/* What the prolog of job @job, restart @restart, does first: its state
 * name freed, its state directory made, the job's other incarnations
 * reclaimed. */
static int take_names(uint32_t job, unsigned restart,
		      struct teardown_result *res, char *left, size_t len)
{
	char name[64];
	int fd;

	assert_int_equal(guest_take_name(&conf, job, restart, 0, res), 0);
	statedir_name(job, restart, name, sizeof(name));
	fd = statedir_open(state_dir, name, true);
	assert_true(fd >= 0);
	close(fd);
	return guest_reclaim_incarnations(&conf, job, restart, 0, fake_fate,
					  res, left, len);
}

/* Job ids wrap: a new job 30 (restart 0) finds incarnations 0 and 1 of an
 * older job 30 on the node, both holding the bridge named by the id.
 * Reclaimed once slurmctld says they ended (a higher restart count than
 * the job's now is an older job's, a lower one was requeued since),
 * nothing of them is left (the bridge would fail this job's, and drain
 * the node); another job's state and kept state stay. One slurmctld says
 * runs stays; one slurmctld cannot judge or that is locked is named, and
 * does not make the node unsafe. */
static void test_take_names_after_wrap(void **state)
{
	struct teardown_result res;
	char left[64] = "";
	int fd, locked;

	if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0)
		skip(); /* root and a network namespace */
	close(make_net_guest("job-30.0", false));
	close(make_net_guest("job-30.1", false));
	close(make_guest("job-31.0", false, NULL));
	fd = make_guest("job-30.2", true, NULL);
	close(openat(fd, GUEST_TORN_DOWN_FILE, O_WRONLY | O_CREAT, 0644));
	close(fd);

	slurmctld_restart = 0;
	assert_int_equal(take_names(30, 0, &res, left, sizeof(left)), 0);
	assert_int_equal(if_nametoindex(WRAP_BRIDGE), 0);
	assert_false(exists("state/job-30.1"));
	assert_true(exists("state/job-30.0"));
	assert_false(exists("state/job-30.0/journal"));
	assert_true(exists("state/job-31.0"));
	assert_true(exists("state/job-30.2"));

	/* requeued: an earlier incarnation below, an older job's above */
	close(make_net_guest("job-32.0", false));
	close(make_net_guest("job-32.5", false));
	slurmctld_restart = 2;
	assert_int_equal(take_names(32, 2, &res, left, sizeof(left)), 0);
	assert_int_equal(if_nametoindex(WRAP_BRIDGE), 0);
	assert_false(exists("state/job-32.0"));
	assert_false(exists("state/job-32.5"));
	assert_true(exists("state/job-32.2"));

	/* slurmctld says incarnation 0 runs: it stays */
	close(make_net_guest("job-34.0", false));
	slurmctld_restart = 0;
	assert_int_equal(take_names(34, 1, &res, left, sizeof(left)), 0);
	assert_true(exists("state/job-34.0"));
	assert_true(if_nametoindex(WRAP_BRIDGE) != 0);
	assert_int_equal(system("ip link del " WRAP_BRIDGE), 0);

	/* slurmctld does not answer: nothing is proven ended */
	close(make_net_guest("job-35.1", false));
	slurmctld_down = true;
	assert_int_equal(take_names(35, 0, &res, left, sizeof(left)),
			 -EHOSTDOWN);
	assert_string_equal(left, "job-35.1");
	assert_true(exists("state/job-35.1"));
	slurmctld_down = false;
	assert_int_equal(take_names(35, 0, &res, left, sizeof(left)), 0);
	assert_false(exists("state/job-35.1"));

	/* one being reclaimed by another: named, the node not unsafe */
	locked = make_net_guest("job-33.1", true);
	assert_int_equal(take_names(33, 0, &res, left, sizeof(left)), -EBUSY);
	assert_string_equal(left, "job-33.1");
	assert_false(res.node_unsafe);
	assert_true(exists("state/job-33.1"));
	close(locked);
	assert_int_equal(take_names(33, 0, &res, left, sizeof(left)), 0);
	assert_int_equal(if_nametoindex(WRAP_BRIDGE), 0);
}

/* A user's process still holding a group file after its job is killed
 * (the file is the next job's); root's is left for the caller to judge. */
static void test_device_file_free(void **state)
{
	struct device_holder h;
	unsigned killed;
	char path[512];
	pid_t child;
	int status;

	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/vfio-13", top);
	close(open(path, O_WRONLY | O_CREAT, 0644));
	assert_int_equal(device_file_free(path, 1000, &h, &killed), 0);
	assert_int_equal(killed, 0);

	for (int suid = 0; suid < 2; suid++) {
		child = spawn_holder(path, 65534, suid);
		assert_int_equal(device_file_free(path, 2000, &h, &killed), 0);
		assert_int_equal(killed, 1);
		assert_int_equal(h.uid, 65534);
		assert_int_equal(waitpid(child, &status, 0), child);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}

	child = spawn_holder(path, 0, false);
	assert_int_equal(device_file_free(path, 1000, &h, &killed), -EBUSY);
	assert_int_equal(h.pid, child);
	assert_int_equal(h.uid, 0);
	assert_int_equal(kill(child, 0), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_scan_takes_only_state_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_earlier_incarnations,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reclaim_removes_everything,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reclaim_keeps_for_vm_keep,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reclaim_waits_for_lock,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_step_keeps_state,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_file_holder, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_device_file_free, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kept_expire, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kept_remove_job, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_take_name_after_wrap,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_names_after_wrap,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_name_fault, setup,
						teardown),
	};

	log_open("test_reclaim");
	log_set_level(LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
