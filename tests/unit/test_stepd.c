/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job's steps on this node (stepd_job_steps_running()): issue #41's
 * impostor is a root process (a setuid-root program that waits, such as
 * `sudo -S` reading its input) run through a link named slurmstepd with
 * `exec -a 'slurmstepd: [VICTIM.0]'`: its comm, title and uid are a step's,
 * its executable is not. Here sleep is run so, as the test's own user
 * (root under make check as root: the uid a step must have is ours). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/fileutil.h"
#include "slurm/stepd.h"

#define VICTIM 4242

static char dir[] = "/tmp/test_stepd.XXXXXX";
static char link_path[64];

/* Runs @link_path titled @title (`exec -a`); returns once it executes. */
static pid_t impostor_start(const char *title)
{
	char comm[16];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)title, "30", NULL };

		execv(link_path, argv);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (proc_comm(pid, comm) == 0 &&
		    strcmp(comm, "slurmstepd") == 0)
			return pid;
		usleep(10000);
	}
	fail_msg("the impostor never ran");
	return -1;
}

static void impostor_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int setup(void **state)
{
	char sleep_path[64] = "/usr/bin/sleep";

	(void)state;
	if (access(sleep_path, X_OK) < 0)
		strcpy(sleep_path, "/bin/sleep");
	if (!mkdtemp(dir))
		return -1;
	snprintf(link_path, sizeof(link_path), "%s/slurmstepd", dir);
	unsetenv("SLURMD_NODENAME");
	return symlink(sleep_path, link_path);
}

static int teardown(void **state)
{
	(void)state;
	unlink(link_path);
	rmdir(dir);
	return 0;
}

/* Named, titled and owned as job VICTIM's step 0 but executing another
 * file than slurmstepd: not a step. */
static void test_impostor_not_counted(void **state)
{
	struct stepd_exe stepd;
	pid_t pid;

	(void)state;
	/* slurmstepd here: any file but the impostor's (/bin/sh). */
	assert_int_equal(stepd_exe_of_path("/bin/sh", &stepd), 0);
	pid = impostor_start("slurmstepd: [4242.0]");
	assert_false(stepd_job_steps_running("n1", VICTIM, &stepd, 1));
	impostor_stop(pid);
}

/* The same process counts once what it executes is the slurmstepd
 * (here the link's target): the title and job id still decide. */
static void test_step_counted(void **state)
{
	struct stepd_exe stepd;
	pid_t pid;

	(void)state;
	assert_int_equal(stepd_exe_of_path(link_path, &stepd), 0);
	pid = impostor_start("slurmstepd: [4242.0]");
	assert_true(stepd_job_steps_running("n1", VICTIM, &stepd, 1));
	assert_false(stepd_job_steps_running("n1", VICTIM + 1, &stepd, 1));
	assert_false(stepd_job_steps_running("n1", VICTIM, &stepd, 0));
	impostor_stop(pid);
	pid = impostor_start("slurmstepd: [4242.extern]");
	assert_false(stepd_job_steps_running("n1", VICTIM, &stepd, 1));
	impostor_stop(pid);
}

static void test_exe_of(void **state)
{
	struct stepd_exe a, b;

	(void)state;
	assert_int_equal(stepd_exe_of_pid(getpid(), &a), 0);
	assert_int_equal(stepd_exe_of_path("/proc/self/exe", &b), 0);
	assert_true(a.dev == b.dev && a.ino == b.ino);
	assert_int_equal(stepd_exe_of_path("/nonexistent/slurmstepd", &a),
			 -ENOENT);
	assert_int_equal(stepd_exe_of_path("/tmp", &a), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_impostor_not_counted),
		cmocka_unit_test(test_step_counted),
		cmocka_unit_test(test_exe_of),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
