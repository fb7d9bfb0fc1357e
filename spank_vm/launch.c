/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Local context (srun, after the step exists, before it launches): tell
 * the tasks whether the step is a --multi-prog one.
 *
 * Remote task_init sees the step's argv, which under --multi-prog is
 * { FILE, CONTENTS, EXTRA... } (srun loaded the file into argv[1]), and no
 * flag says so; a plain `srun prog "0 x"` looks the same. srun knows: its
 * argv[1] is then exactly the contents of the file argv[0] names. What we
 * put into srun's environment here reaches the tasks' environment; task_init
 * removes it again, so plain jobs do not see it.
 */
#include "config.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "spank_vm.h"

#define MULTI_PROG_MAX_FILE 60000 /* srun's own limit */

static bool file_holds(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	size_t len = strlen(text);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != len || len > MULTI_PROG_MAX_FILE)
		return false;
	buf = malloc(len + 1);
	if (!buf)
		return false;
	n = read(fd, buf, len + 1);
	return n == (ssize_t)len && memcmp(buf, text, len) == 0;
}

int launch_mark_multi_prog(spank_t sp)
{
	char **argv = NULL;
	int argc = 0;

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS)
		return 0;
	if (argc >= 2 && file_holds(argv[0], argv[1]))
		return setenv(MULTI_PROG_ENV, "1", 1) == 0 ? 0 : -errno;
	unsetenv(MULTI_PROG_ENV);
	return 0;
}
