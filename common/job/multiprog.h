/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * srun --multi-prog: each task runs its own line of the configuration file.
 *
 * srun sends the step's argv as { FILE, CONTENTS, EXTRA... } (the file's
 * whole text in argv[1], launch/slurm's _load_multi) and slurmstepd picks
 * the task's line only after SPANK task_init (multi_prog_get_argv), so a
 * plugin that replaces the task there sees the step's argv, not the task's.
 * This is slurmstepd 22.05's grammar, so the guest runs what bare metal
 * would:
 *
 *   - lines split at newlines; blank lines and lines starting with '#'
 *     (after blanks) are skipped; a line ending in '\' continues on the next;
 *   - "RANKS ARGS": RANKS is '*' or a comma list of N and N-M; the first
 *     line whose RANKS holds the task's rank is the task's;
 *   - in ARGS, blanks separate arguments; '...' quotes; '\' takes the next
 *     character literally; %t is the rank, %o the task's offset within its
 *     RANKS (ranks of earlier items counted), '%' with another character
 *     is dropped;
 *   - srun's arguments after the file (EXTRA) are appended;
 *   - at most MULTIPROG_MAX_ARGC - 1 arguments, as slurmstepd.
 */
#include <stddef.h>

#define MULTIPROG_MAX_ARGC 128

/* The task of global rank @rank: its argv (malloc'd, NULL-terminated, free
 * with strv_free). -ENOENT: no line for the rank; -EINVAL: the line is
 * malformed (no arguments, unterminated quote). */
int multiprog_task_argv(const char *config, unsigned rank, char *const *extra,
			size_t n_extra, char ***argv);
