/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Who holds a device file: the processes with it open, from /proc. The
 * prolog asks before it lends a VFIO group to a job; a teardown takes the
 * group back from a job user's leftovers (DEVOWNER, teardown.h).
 */
#include <stddef.h>
#include <sys/types.h>

/* The first process other than ours with @path open (a /dev/vfio group):
 * its pid, and its name in @comm. 0 when none, 1 when found. */
int device_file_holder(const char *path, pid_t *pid, char *comm,
		       size_t comm_len);

/* How long a killed holder of a device file may take to exit. */
#define DEVICE_FREE_WAIT_MS 5000

struct device_holder {
	pid_t pid;
	long uid; /* its real uid; 0: root's */
	char comm[32];
};

/* Takes @path (a VFIO group file, root's between jobs) back from the
 * processes that are not root's: a group file is only ever lent to a job
 * user, so such a holder is a leftover of an ended lending (a batch script
 * or its children that opened it during the job). Each gets SIGKILL; waits
 * up to @wait_ms for all to be gone. 0: nobody holds it (any more;
 * @killed says how many holders there were); -EBUSY: held by a process of
 * root's, or one that did not die, named in @h; or -errno. */
int device_file_free(const char *path, unsigned wait_ms,
		     struct device_holder *h, unsigned *killed);
