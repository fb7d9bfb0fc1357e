/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * share_ops: the file operations bench/share_bench.sh times, in one static
 * process so that the guest (busybox, no compiler) and the host run the
 * same code and no exec is counted:
 *
 *   share_ops write FILE MIB    sequential write of MIB MiB, fsync'd
 *   share_ops read FILE         sequential read of the whole file
 *   share_ops files DIR N       N x (create, stat, unlink) of a small file
 *
 * Prints the seconds the operations took; exit 1 on any error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#define CHUNK (1 << 20)

static char buf[CHUNK];

static int do_write(const char *path, long mib)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -errno;
	memset(buf, 0x5a, sizeof(buf));
	for (long i = 0; i < mib; i++)
		if (write(fd, buf, CHUNK) != CHUNK) {
			close(fd);
			return -EIO;
		}
	if (fsync(fd) < 0 || close(fd) < 0)
		return -errno;
	return 0;
}

static int do_read(const char *path)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, CHUNK)) > 0)
		;
	close(fd);
	return n < 0 ? -EIO : 0;
}

static int do_files(const char *dir, long n)
{
	char path[4096];
	struct stat st;

	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, "x\n", 2) != 2 || close(fd) < 0 ||
		    stat(path, &st) < 0 || st.st_size != 2 || unlink(path) < 0)
			return -EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double t0;
	int r = -EINVAL;

	if (argc < 3) {
		fprintf(stderr, "usage: share_ops write FILE MIB | read FILE | "
				"files DIR N\n");
		return 2;
	}
	t0 = clock_now_s();
	if (strcmp(argv[1], "write") == 0 && argc == 4)
		r = do_write(argv[2], atol(argv[3]));
	else if (strcmp(argv[1], "read") == 0)
		r = do_read(argv[2]);
	else if (strcmp(argv[1], "files") == 0 && argc == 4)
		r = do_files(argv[2], atol(argv[3]));
	if (r < 0) {
		fprintf(stderr, "share_ops %s %s: %s\n", argv[1], argv[2],
			strerror(-r));
		return 1;
	}
	printf("%.3f\n", clock_now_s() - t0);
	return 0;
}
