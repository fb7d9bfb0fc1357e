/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>
#include <cmocka.h>

#include "holder.h"

pid_t spawn_holder(const char *path, uid_t uid, bool setuid_root)
{
	int ready[2];
	char c;
	pid_t child;

	assert_int_equal(pipe(ready), 0);
	child = fork();
	if (child == 0) {
		int fd = open(path, O_RDONLY);

		if (fd < 0 || (uid && setgid(uid) < 0))
			_exit(1);
		if (uid &&
		    (setuid_root ? setresuid(uid, 0, 0) : setuid(uid)) < 0)
			_exit(1);
		close(ready[0]);
		close(ready[1]);
		pause();
		_exit(0);
	}
	close(ready[1]);
	/* EOF once the child is ready */
	assert_int_equal(read(ready[0], &c, 1), 0);
	close(ready[0]);
	return child;
}
