/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* The monotonic clock: phase timings in the prolog and epilog logs,
 * timeouts, benchmarks. */
#include <stdint.h>
#include <time.h>

/* Seconds on the monotonic clock: only differences mean anything. */
static inline double clock_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds on the monotonic clock, for deadlines and poll() timeouts. */
static inline uint64_t clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
