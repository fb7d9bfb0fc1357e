/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Slurm's numbering, mapped the way slurmd does it. Pure functions: the
 * prolog feeds them what libslurm and gres.conf say.
 *
 * GRES indices: slurmd numbers the File= entries of one GRES name in
 * gres.conf order after expanding "[0-3]" ranges. An early design assumed
 * it skips a File= that is missing or not a character device before
 * counting; slurmd 22.05 as measured (doc/design.md, "How slurmd numbers
 * GRES devices"): every line counts, a missing File= is fatal to slurmd, a
 * regular file is numbered like a device. Both are expressible with the
 * predicate of slurm_gres_index_files(): slurm_file_count_all (22.05, the
 * default) or slurm_file_is_char_device. (With AutoDetect slurmd may also
 * re-sort GPUs: `slurmd -G` is the oracle; our gres.conf has no AutoDetect.)
 *
 * Cores: Slurm's abstract core id i is the i-th core in hwloc logical order
 * of slurmd's own topology (hwloc_topo_whole.xml in SlurmdSpoolDir); its
 * OS CPU ids are that core's PUs' os_index. Without Core objects slurmd
 * counts PUs as cores.
 *
 * The prolog's path from Slurm's allocation to a domain:
 *
 *   vmconf_load()                        SysfsRoot, TopologyFile, ...
 *   topology_load(slurmd's hwloc_topo_whole.xml or TopologyFile or NULL)
 *   slurm_cores_to_cpus(topo, "<job core ids on this node>", 0, &cpus)
 *   slurm_gres_detail_indices(gres_detail_str, "gpu"/"ibvf", &idx, &n)
 *   slurm_gres_file_expand() on each gres.conf File= of that name, in order
 *   slurm_gres_index_files(files, NULL, NULL, &indexed): indexed[idx[i]]
 *   slurm_vfio_file_group(indexed[idx[i]], &group)
 *   devices_read_group(sysfs_root, group, &list): plan_device_request each
 *   plan_compute(topo, &req, &plan)       refusal: plan.refusal, plan.reason
 *   domain_xml_build(&plan, &params, &xml)
 */
#include <stdbool.h>
#include <stddef.h>

#include "hw/placement.h"

/* "0,2-3" -> sorted, unique indices. Empty string -> 0 indices. */
int slurm_index_list_parse(const char *s, unsigned **idx, size_t *n);

/* From a job's gres_detail_str for one node, e.g.
 * "gpu:a100:2(IDX:0,2),ibvf:1(IDX:3)", the indices of GRES @name.
 * "gpu:0(IDX:N/A)" and an absent name give 0 indices. */
int slurm_gres_detail_indices(const char *detail, const char *name,
			      unsigned **idx, size_t *n);

/* gres.conf File= with Slurm's bracket ranges, e.g. "/dev/vfio/[12-13,15]"
 * or "/dev/nvidia[0-3]" (zero padding kept), into a NULL-terminated list. */
int slurm_gres_file_expand(const char *file, char ***out);

/* Whether slurmd counts the file. */
typedef bool (*slurm_file_ok_fn)(const char *path, void *ctx);
bool slurm_file_count_all(const char *path, void *ctx);	     /* 22.05 */
bool slurm_file_is_char_device(const char *path, void *ctx); /* skipping */

/* @files: one GRES name's File= entries in gres.conf order, expanded.
 * Returns in @indexed (NULL-terminated) the files slurmd numbers 0, 1, ...;
 * @ok NULL means slurm_file_count_all. */
int slurm_gres_index_files(char *const *files, slurm_file_ok_fn ok, void *ctx,
			   char ***indexed);

/* "/dev/vfio/12" (or "<dir>/vfio/12") -> 12; -EINVAL for anything else. */
int slurm_vfio_file_group(const char *path, int *group);

/* Abstract core ids ("0-3,8", as in the job's core bitmap) -> OS CPU ids
 * list. @threads_per_core: take only that many PUs of each core (the job's
 * --threads-per-core / --hint=nomultithread), 0 for all. */
int slurm_cores_to_cpus(const struct topology *topo, const char *cores,
			unsigned threads_per_core, char **cpus);
