/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pid files of a guest's processes (common/vm/pidfile.c): what the
 * epilog signals and slurm-vm-adopt hands to Slurm is the process the
 * prolog recorded, never a reused pid, a malformed file or a link.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/macro.h"
#include "vm/pidfile.h"

static char top[] = "/tmp/svm-pidfile.XXXXXX";
static int dirfd_top = -1;

static int setup(void **state)
{
	assert_non_null(mkdtemp(top));
	dirfd_top = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd_top >= 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	close(dirfd_top);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void put(const char *name, const char *text)
{
	_cleanup_close_ int fd =
		openat(dirfd_top, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

/* Our own pid file names us, with our start time and command. */
static void test_roundtrip(void **state)
{
	unsigned long long start = 0, mine = 0;
	char comm[64];
	pid_t pid = 0, parent = 0;

	assert_int_equal(pidfile_write(dirfd_top, "self.pid", getpid()), 0);
	assert_int_equal(pidfile_read(dirfd_top, "self.pid", &pid, &start), 0);
	assert_int_equal(pid, getpid());
	assert_int_equal(
		proc_stat(getpid(), comm, sizeof(comm), NULL, &parent, &mine),
		0);
	assert_true(start == mine && start != 0);
	assert_int_equal(parent, getppid());
	assert_true(pid_is_process(pid, comm, start));
	assert_true(pid_is_process(pid, NULL, start));
	/* Another start time: the pid was reused. */
	assert_false(pid_is_process(pid, NULL, start + 1));
	assert_false(pid_is_process(pid, "qemu-system-x86", start));
}

/* Only "PID [START_TIME]" with PID > 1, only a file in the directory. */
static void test_refused(void **state)
{
	unsigned long long start;
	pid_t pid;

	assert_int_equal(pidfile_read(dirfd_top, "none.pid", &pid, &start),
			 -ENOENT);
	put("empty.pid", "");
	assert_int_equal(pidfile_read(dirfd_top, "empty.pid", &pid, &start),
			 -ENODATA);
	put("text.pid", "qemu\n");
	assert_int_equal(pidfile_read(dirfd_top, "text.pid", &pid, &start),
			 -EINVAL);
	put("init.pid", "1 5\n");
	assert_int_equal(pidfile_read(dirfd_top, "init.pid", &pid, &start),
			 -EINVAL);
	put("start.pid", "1234 x\n");
	assert_int_equal(pidfile_read(dirfd_top, "start.pid", &pid, &start),
			 -EINVAL);
	put("bare.pid", "1234\n");
	assert_int_equal(pidfile_read(dirfd_top, "bare.pid", &pid, &start), 0);
	assert_int_equal(pid, 1234);
	assert_true(start == 0);
	assert_int_equal(symlinkat("bare.pid", dirfd_top, "link.pid"), 0);
	assert_int_equal(pidfile_read(dirfd_top, "link.pid", &pid, &start),
			 -ELOOP);
	assert_int_equal(pidfile_read(dirfd_top, "../bare.pid", &pid, &start),
			 -EINVAL);
}

/* The kernel's command name of a program: the file name's first 15
 * bytes. */
static void test_path_comm(void **state)
{
	char comm[16];

	assert_string_equal(path_comm("/usr/libexec/virtiofsd", comm),
			    "virtiofsd");
	assert_string_equal(path_comm("/usr/bin/qemu-system-x86_64", comm),
			    "qemu-system-x86");
	assert_string_equal(path_comm("virtiofsd", comm), "virtiofsd");
	assert_string_equal(path_comm(NULL, comm), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_path_comm),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
