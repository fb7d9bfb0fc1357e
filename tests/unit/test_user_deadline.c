/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Children that run as the job user (the prolog's image check, the
 * authorized_keys read) end by a deadline. open() is wrapped
 * (-Wl,--wrap=open): with hang_open set it drops O_NONBLOCK, so a FIFO
 * behaves like a file on a hung NFS or FUSE mount whose open never returns.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/clock.h"
#include "job/image.h"
#include "core/log.h"
#include "job/user.h"
#include "job/vmconf.h"

#define NOBODY 65534

static bool hang_open;
static char errors[4096];
static char dir[256];

int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	va_start(ap, flags);
	if (flags & O_CREAT)
		mode = va_arg(ap, mode_t);
	va_end(ap);
	if (hang_open)
		flags &= ~O_NONBLOCK;
	return __real_open(path, flags, mode);
}

static void capture_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR) {
		strncat(errors, msg, sizeof(errors) - strlen(errors) - 2);
		strcat(errors, "\n");
	}
}

static int setup(void **state)
{
	char fifo[300];

	snprintf(dir, sizeof(dir), "/tmp/svm-deadline-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
		return -1;
	snprintf(fifo, sizeof(fifo), "%s/hang.qcow2", dir);
	if (mkfifo(fifo, 0666) < 0)
		return -1;
	log_set_sink(capture_sink);
	user_child_timeout_ms = 500;
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* No child of ours is left: the late one was killed and reaped. */
static void assert_no_child(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void test_read_file_deadline(void **state)
{
	char path[300], *data = NULL;
	double t0;

	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/hang.qcow2", dir);
	/* The open is non-blocking: a FIFO is refused at once. */
	hang_open = false;
	assert_int_equal(user_read_file(NOBODY, NOBODY, path, 256, &data),
			 -EINVAL);
	/* An open that never returns ends at the deadline. */
	hang_open = true;
	t0 = clock_now_s();
	assert_int_equal(user_read_file(NOBODY, NOBODY, path, 256, &data),
			 -ETIMEDOUT);
	hang_open = false;
	assert_true(clock_now_s() - t0 < 5);
	assert_null(data);
	assert_no_child();
}

static void test_image_check_deadline(void **state)
{
	char path[300], item[300];
	struct vmconf conf;
	struct image_spec spec;
	struct image_chain chain;
	double t0;

	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/hang.qcow2", dir);
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	snprintf(item, sizeof(item), "ImageDirs=%s", dir);
	assert_int_equal(vmconf_set(&conf, item, "test"), 0);
	conf.allow_user_images = true;
	assert_int_equal(image_resolve(&conf, path, &spec), 0);

	errors[0] = '\0';
	hang_open = false;
	assert_int_equal(
		image_check_as_user(&conf, &spec, NOBODY, NOBODY, &chain),
		-EPERM);
	assert_non_null(strstr(errors, "is not a regular file"));

	errors[0] = '\0';
	hang_open = true;
	t0 = clock_now_s();
	assert_int_equal(
		image_check_as_user(&conf, &spec, NOBODY, NOBODY, &chain),
		-ETIMEDOUT);
	hang_open = false;
	assert_true(clock_now_s() - t0 < 5);
	assert_non_null(strstr(errors, "took longer than"));
	assert_int_equal(chain.depth, 0);
	assert_no_child();
	image_spec_free(&spec);
	vmconf_free(&conf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_file_deadline),
		cmocka_unit_test(test_image_check_deadline),
	};

	/* Without a deadline the children hang: fail rather than wait. */
	alarm(60);
	return cmocka_run_group_tests(tests, setup, teardown);
}
