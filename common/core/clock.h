/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Phase timings in the prolog and epilog logs. */
#include <time.h>

/* Seconds on the monotonic clock: only differences mean anything. */
static inline double clock_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
