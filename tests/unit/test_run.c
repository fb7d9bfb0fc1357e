/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Running a helper program from root code (common/core/run.c): its exit
 * status and output's tail, its time limit, and giving up on it early when
 * what it waits for is gone (the prolog stops waiting for a guest whose qemu
 * ended). Real programs, real process groups. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/run.h"

static void test_status_and_output(void **state)
{
	char *const argv[] = { "/bin/sh", "-c", "echo hello; exit 3", NULL };
	char out[64];

	(void)state;
	assert_int_equal(run_wait(argv, 10, out, sizeof(out)), 3);
	assert_string_equal(out, "hello\n");
}

static void test_time_limit(void **state)
{
	char *const argv[] = { "/bin/sleep", "30", NULL };
	time_t t0 = time(NULL);

	(void)state;
	assert_int_equal(run_wait(argv, 1, NULL, 0), -ETIMEDOUT);
	assert_true(time(NULL) - t0 < 5);
}

struct countdown {
	unsigned asked, yes;
};

static bool keep_waiting(void *arg)
{
	struct countdown *c = arg;

	return ++c->asked <= c->yes;
}

/* A silent program is given up on as soon as @keep_waiting says no, long
 * before its time limit; its whole process group goes with it. */
static void test_given_up(void **state)
{
	char pidfile[] = "/tmp/svm-run-XXXXXX";
	char script[256];
	struct countdown c = { .yes = 2 };
	time_t t0 = time(NULL);
	FILE *f;
	int pid = 0, fd = mkstemp(pidfile);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	snprintf(script, sizeof(script), "sleep 60 & echo $! >%s; wait",
		 pidfile);
	char *const argv[] = { "/bin/sh", "-c", script, NULL };

	assert_int_equal(run_wait_while(argv, 60, NULL, 0, keep_waiting, &c),
			 -ECANCELED);
	assert_true(time(NULL) - t0 < 10);
	assert_int_equal(c.asked, 3);
	f = fopen(pidfile, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	unlink(pidfile);
	/* The grandchild was killed with its group (a zombie of init's at
	 * most, reaped soon): poll briefly. */
	for (int i = 0; i < 50 && kill(pid, 0) == 0; i++)
		usleep(100 * 1000);
	assert_int_equal(kill(pid, 0), -1);
}

/* A program that ends on its own is not given up on. */
static void test_not_given_up(void **state)
{
	char *const argv[] = { "/bin/sh", "-c", "sleep 1; exit 0", NULL };
	struct countdown c = { .yes = 100 };

	(void)state;
	assert_int_equal(run_wait_while(argv, 10, NULL, 0, keep_waiting, &c),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_and_output),
		cmocka_unit_test(test_time_limit),
		cmocka_unit_test(test_given_up),
		cmocka_unit_test(test_not_given_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
