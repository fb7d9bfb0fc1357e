/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Test helper: a process holding a device file open, as a job's qemu (or a
 * user's leftover process) holds its group file. Shared by test_reclaim and
 * test_teardown.
 */
#include <stdbool.h>
#include <sys/types.h>

/* A child holding @path open, as @uid (0: stays root); @setuid_root:
 * effective uid 0, as a set-uid program the user started. Returns once the
 * child holds it; the caller kills and reaps it. */
pid_t spawn_holder(const char *path, uid_t uid, bool setuid_root);
