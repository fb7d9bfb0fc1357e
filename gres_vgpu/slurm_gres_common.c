/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Slurm's own helpers for GRES plugins (device list, stepd transfer), from
 * the configured source tree: every stock GRES plugin links them in the
 * same way (src/plugins/gres/common/libgres_common.la).
 */
#include "src/plugins/gres/common/gres_common.c"
