/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Running a helper program from root code: argv only (no shell), stdin
 * /dev/null or a given text, stdout and stderr captured (the last bytes kept
 * for the log), a time limit after which the child's process group is killed.
 */
#include <stdbool.h>
#include <stddef.h>

/* Returns the exit status (0..255), -ETIMEDOUT, or -errno. @out (may be
 * NULL) gets the NUL-terminated tail of what the program printed. */
int run_wait(char *const argv[], unsigned timeout_s, char *out, size_t outlen);
/* The same, asking @keep_waiting(@arg) whenever the program has been
 * silent for a second: when it says no, the program is killed and the
 * result is -ECANCELED. */
int run_wait_while(char *const argv[], unsigned timeout_s, char *out,
		   size_t outlen, bool (*keep_waiting)(void *arg), void *arg);
/* The same with @input (NUL-terminated) as the program's stdin. */
int run_wait_input(char *const argv[], const char *input, unsigned timeout_s,
		   char *out, size_t outlen);

/* A guest's host processes (the relay, virtiofsd) are the job's extern
 * step's once it adopts them, and a signal sent to the whole job (scancel
 * --signal, sbatch --signal) then reaches them too: they ignore the ones a
 * user sends that way, whose default would end them, and stop on SIGTERM
 * alone. Inherited across exec. */
void signals_ignore_job_wide(void);
