/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The extern step's `sleep` held against the job's signals (hold.c).
 */
#include <sys/types.h>

/* Starts a holder of @pid, the sleep of the extern step of job @job on
 * node @node that runs this program (its parent): 0, or -errno when @pid
 * is not that sleep or cannot be traced (logged). */
int hold_extern_sleep(const char *node, unsigned job, pid_t pid);
