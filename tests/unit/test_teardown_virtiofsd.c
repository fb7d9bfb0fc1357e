/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A share's virtiofsd stopped by the journal's replay (VIRTIOFSD in
 * vm/teardown.h): the process its pid file names is signalled only while
 * it is a virtiofsd that started when the pid file says; a pid that is
 * gone or now another program's is left alone, and the pid file and the
 * socket go either way. Root only: the journal must be root's. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/macro.h"
#include "job/journal.h"
#include "vm/pidfile.h"
#include "vm/teardown.h"

static char top[] = "/tmp/svm-virtiofsd.XXXXXX";

/* Waits (up to 2 s) until @pid runs @prog, not the test's fork. */
static void wait_exec(pid_t pid, const char *prog)
{
	for (int i = 0; i < 200; i++) {
		char comm[64] = "";

		if (proc_stat(pid, comm, sizeof(comm), NULL, NULL, NULL) == 0 &&
		    strcmp(comm, strrchr(prog, '/') + 1) == 0)
			return;
		usleep(10 * 1000);
	}
}

/* @prog (a copy of sleep, or sleep itself) sleeping, as a child. */
static pid_t start_sleeper(const char *prog)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		execl(prog, prog, "60", (char *)NULL);
		_exit(127);
	}
	wait_exec(pid, prog);
	return pid;
}

/* Did @pid end within 3 s (reaped: a zombie ended)? */
static bool ended(pid_t pid)
{
	for (int i = 0; i < 300; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

static void write_file(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* A state directory with share 0's pid file saying @pid and @start, its
 * socket, and the journal's VIRTIOFSD record; replayed. */
static int replay_virtiofsd(const char *name, pid_t pid,
			    unsigned long long start, const char *record,
			    struct teardown_result *res)
{
	const char *args[] = { record, NULL };
	struct vmconf conf;
	char text[64];
	int fd, r;

	fd = statedir_open(top, name, true);
	assert_true(fd >= 0);
	assert_int_equal(mkdirat(fd, "sock", 0711), 0);
	snprintf(text, sizeof(text), "%ld %llu\n", (long)pid, start);
	write_file(fd, "virtiofsd-0.pid", text);
	write_file(fd, "sock/virtiofsd-0.sock", "");
	assert_int_equal(journal_append(fd, JOURNAL_VIRTIOFSD, args), 0);
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	r = teardown_replay(&conf, fd, false, res);
	assert_int_equal(res->steps, 1);
	/* the files went, unless the record was refused */
	if (r == 0) {
		assert_int_equal(faccessat(fd, "virtiofsd-0.pid", F_OK, 0), -1);
		assert_int_equal(
			faccessat(fd, "sock/virtiofsd-0.sock", F_OK, 0), -1);
	}
	vmconf_free(&conf);
	close(fd);
	return r;
}

static unsigned long long start_time(pid_t pid)
{
	unsigned long long start = 0;
	char comm[64];

	assert_int_equal(proc_stat(pid, comm, sizeof(comm), NULL, NULL, &start),
			 0);
	return start;
}

/* A virtiofsd (a copy of sleep by that name) the pid file names, with its
 * start time: stopped. */
static void test_virtiofsd_stopped(void **state)
{
	char prog[256], cmd[600];
	struct teardown_result res;
	pid_t pid;

	(void)state;
	snprintf(prog, sizeof(prog), "%s/virtiofsd", top);
	snprintf(cmd, sizeof(cmd), "cp \"$(command -v sleep)\" %s", prog);
	assert_int_equal(system(cmd), 0);
	pid = start_sleeper(prog);
	assert_int_equal(replay_virtiofsd("job-1.0", pid, start_time(pid),
					  "virtiofsd-0.pid", &res),
			 0);
	assert_true(ended(pid));
}

/* A virtiofsd that leads its own session (the prolog's setsid) with a
 * child, as its namespace sandbox has: both stopped. The test is their
 * subreaper, so the orphaned child is reaped here. */
static void test_group_stopped(void **state)
{
	char prog[256], cmd[600];
	struct teardown_result res;
	pid_t pid, child = 0;
	int fds[2];

	(void)state;
	snprintf(prog, sizeof(prog), "%s/virtiofsd", top);
	snprintf(cmd, sizeof(cmd), "cp \"$(command -v sleep)\" %s", prog);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t c;

		setsid();
		c = fork();
		if (c == 0) {
			execlp("sleep", "sleep", "60", (char *)NULL);
			_exit(127);
		}
		if (write(fds[1], &c, sizeof(c)) != sizeof(c))
			_exit(127);
		execl(prog, prog, "60", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &child, sizeof(child)), sizeof(child));
	close(fds[0]);
	wait_exec(pid, prog);
	assert_int_equal(replay_virtiofsd("job-7.0", pid, start_time(pid),
					  "virtiofsd-0.pid", &res),
			 0);
	assert_true(ended(pid));
	assert_true(ended(child));
}

/* The pid is a virtiofsd's, but not the one that started then (a reused
 * pid): left alone. */
static void test_other_start_time_survives(void **state)
{
	char prog[256];
	struct teardown_result res;
	pid_t pid;

	(void)state;
	snprintf(prog, sizeof(prog), "%s/virtiofsd", top);
	pid = start_sleeper(prog);
	assert_int_equal(replay_virtiofsd("job-2.0", pid, start_time(pid) + 1,
					  "virtiofsd-0.pid", &res),
			 0);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The pid is now an unrelated program's (sleep): it survives. */
static void test_unrelated_process_survives(void **state)
{
	struct teardown_result res;
	pid_t pid;

	(void)state;
	pid = start_sleeper("/bin/sleep");
	assert_int_equal(
		replay_virtiofsd("job-3.0", pid, 0, "virtiofsd-0.pid", &res),
		0);
	usleep(100 * 1000);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The virtiofsd ended by itself (qemu went): nothing to stop, no error. */
static void test_gone_process_is_fine(void **state)
{
	struct teardown_result res;
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	assert_int_equal(
		replay_virtiofsd("job-4.0", pid, 0, "virtiofsd-0.pid", &res),
		0);
	assert_int_equal(res.failed, 0);
}

/* A record naming another file than a virtiofsd pid file: refused. */
static void test_bad_record_refused(void **state)
{
	struct teardown_result res;

	(void)state;
	assert_int_equal(replay_virtiofsd("job-5.0", 1, 0, "journal", &res),
			 -EIO);
	assert_int_equal(res.failed, 1);
	assert_int_equal(
		replay_virtiofsd("job-6.0", 1, 0, "virtiofsd-0.pidx", &res),
		-EIO);
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	return mkdtemp(top) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_virtiofsd_stopped),
		cmocka_unit_test(test_group_stopped),
		cmocka_unit_test(test_other_start_time_survives),
		cmocka_unit_test(test_unrelated_process_survives),
		cmocka_unit_test(test_gone_process_is_fine),
		cmocka_unit_test(test_bad_record_refused),
	};

	if (geteuid() != 0) {
		printf("skipped: the journal must be root's\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
