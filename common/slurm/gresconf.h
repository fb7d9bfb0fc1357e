/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Just enough of gres.conf to number devices as slurmd does: the lines that
 * apply to a node (no NodeName=, or a NodeName= hostlist holding it, as in
 * the one-block-per-node gres.conf Slurm documents), in file order, their
 * Name=, File= and Cores=. One parser for the prolog (which numbers the job's
 * devices) and `slurm-vm check-config` (which checks this node's File=).
 * gres.conf is root's configuration; it is parsed strictly all the same.
 */

#include <stdint.h>

#include "hw/placement.h"

/* One line with Name= that applies to the node: @file is its File= as
 * written (ranges not expanded), @cores its Cores= (Slurm core ids), each
 * NULL without one. A negative return stops the walk. */
typedef int (*gresconf_line_fn)(const char *path, unsigned lineno,
				const char *name, const char *file,
				const char *cores, void *ctx);

/* Calls @fn on each line of @path that applies to @node, in file order.
 * Returns 0, the first negative return of @fn, or -errno (logged) when
 * @path cannot be read. */
int gresconf_for_each(const char *path, const char *node, gresconf_line_fn fn,
		      void *ctx);

/* @node's File= entries of GRES @name in file order, expanded; a line of
 * @name without File= is -EINVAL (logged). */
int gresconf_files(const char *path, const char *node, const char *name,
		   char ***files);

/* Does slurmctld of @release refuse Cores=@cores on a node of @topo (and
 * drain the node)? 1 when it does (from 24.11: a socket split), with the
 * socket in *@split_socket and @cores widened to whole sockets in @whole;
 * 0 when it takes them; -EINVAL when @cores is no core list of @topo. */
int gresconf_cores_refused(const struct topology *topo, const char *cores,
			   uint32_t release, int *split_socket, char **whole);
