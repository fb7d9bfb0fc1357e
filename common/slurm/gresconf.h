/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Just enough of gres.conf to number devices as slurmd does: the lines that
 * apply to a node (no NodeName=, or a NodeName= hostlist holding it, as in
 * the one-block-per-node gres.conf Slurm documents), in file order, their
 * Name= and File=. One parser for the prolog (which numbers the job's
 * devices) and `slurm-vm check-config` (which checks this node's File=).
 * gres.conf is root's configuration; it is parsed strictly all the same.
 */

/* One line with Name= that applies to the node: @file is its File= as
 * written (ranges not expanded), NULL without one. A negative return stops
 * the walk. */
typedef int (*gresconf_line_fn)(const char *path, unsigned lineno,
				const char *name, const char *file, void *ctx);

/* Calls @fn on each line of @path that applies to @node, in file order.
 * Returns 0, the first negative return of @fn, or -errno (logged) when
 * @path cannot be read. */
int gresconf_for_each(const char *path, const char *node, gresconf_line_fn fn,
		      void *ctx);

/* @node's File= entries of GRES @name in file order, expanded; a line of
 * @name without File= is -EINVAL (logged). */
int gresconf_files(const char *path, const char *node, const char *name,
		   char ***files);
