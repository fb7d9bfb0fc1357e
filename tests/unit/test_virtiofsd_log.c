/* SPDX-License-Identifier: GPL-2.0-or-later */
/* virtiofsd's log (issue #41): virtiofsd is the job user's, who may trace
 * it and write through its stdout without end; the log is on /run. Root
 * copies its output from a pipe (fd_copy_bounded(), prolog/virtiofs.c):
 * the log stays within VIRTIOFSD_LOG_MAX and a line, whatever the writer
 * sends, and the writer never blocks. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/fileutil.h"
#include "vm/teardown.h"

#define LINE_MAX_BYTES 80

static char path[] = "/tmp/test_virtiofsd_log.XXXXXX";

/* A writer of @total bytes into a pipe; the read end. */
static int writer_start(size_t total, pid_t *pid)
{
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		static char block[65536];

		close(fds[0]);
		memset(block, 'x', sizeof(block));
		for (size_t done = 0; done < total; done += sizeof(block))
			if (write_all(fds[1], block, sizeof(block)) < 0)
				_exit(1);
		_exit(0);
	}
	close(fds[1]);
	return fds[0];
}

static void copy(size_t total, off_t start, off_t *size, ssize_t *copied)
{
	struct stat st;
	pid_t pid;
	int in, out, status;

	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	assert_true(out >= 0);
	for (off_t i = 0; i < start; i++)
		assert_int_equal(write(out, "o", 1), 1);
	in = writer_start(total, &pid);
	*copied = fd_copy_bounded(in, out, VIRTIOFSD_LOG_MAX);
	/* the writer wrote all of it: never blocked, never refused */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(fstat(out, &st), 0);
	*size = st.st_size;
	close(in);
	close(out);
}

/* 64 MiB written: the log holds VIRTIOFSD_LOG_MAX bytes and the line that
 * says the rest went. */
static void test_flood_bounded(void **state)
{
	ssize_t copied;
	off_t size;

	(void)state;
	copy(64 << 20, 0, &size, &copied);
	assert_int_equal(copied, VIRTIOFSD_LOG_MAX);
	assert_true(size > VIRTIOFSD_LOG_MAX);
	assert_true(size <= VIRTIOFSD_LOG_MAX + LINE_MAX_BYTES);
}

/* What the log held already counts (O_APPEND, a second start). */
static void test_existing_counts(void **state)
{
	ssize_t copied;
	off_t size;

	(void)state;
	copy(4 << 20, 1000, &size, &copied);
	assert_int_equal(copied, VIRTIOFSD_LOG_MAX - 1000);
	assert_true(size <= VIRTIOFSD_LOG_MAX + LINE_MAX_BYTES);
}

/* Below the bound all of it, and no line. */
static void test_small_whole(void **state)
{
	ssize_t copied;
	off_t size;

	(void)state;
	copy(65536, 0, &size, &copied);
	assert_int_equal(copied, 65536);
	assert_int_equal(size, 65536);
}

static int setup(void **state)
{
	int fd = mkstemp(path);

	(void)state;
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_bounded),
		cmocka_unit_test(test_existing_counts),
		cmocka_unit_test(test_small_whole),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
