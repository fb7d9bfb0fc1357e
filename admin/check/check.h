/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * slurm-vm check-config's areas (admin/cmd_check_config.c runs them in
 * order): each reads what this node's daemons will and reports each
 * setting that breaks what slurm-vm needs, with the fix.
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/macro.h"

struct slurmconf;
struct vmconf;

struct checker {
	unsigned problems;
	const char *slurm_conf_path;
};

/* report.c: "ok:", "problem:" (counted in @c) with its fix, "warning:"
 * and "note:" (not counted), one line each. */
void check_ok(const char *fmt, ...) _printf_(1, 2);
void check_problem(struct checker *c, const char *fix, const char *fmt, ...)
	_printf_(3, 4);
void check_warn(const char *fix, const char *fmt, ...) _printf_(2, 3);
void check_note(const char *fix, const char *fmt, ...) _printf_(2, 3);
bool list_has(const char *list, const char *item);

/* slurm_conf.c */
void check_scripts(struct checker *c, const struct slurmconf *sc,
		   uint32_t release);
void check_spool_dir(struct checker *c, const struct slurmconf *sc,
		     const char *node);
void check_scheduling(struct checker *c, const struct slurmconf *sc);

/* timeouts.c */
void check_timeouts(struct checker *c, const struct slurmconf *sc,
		    const struct vmconf *vc, uint32_t release);

/* cgroups.c: warnings and notes only */
void check_adoption(const struct slurmconf *sc, const struct vmconf *vc,
		    uint32_t release, const char *node);

/* plugstack.c */
void check_plugstack(struct checker *c, const struct slurmconf *sc);

/* gres.c */
void check_gres_files(struct checker *c, const struct slurmconf *sc,
		      const struct vmconf *vc, const char *node,
		      uint32_t release);
void check_ibvf_plugin(struct checker *c, const struct slurmconf *sc,
		       const struct vmconf *vc);

/* pmix.c */
void check_pmix(struct checker *c, const struct slurmconf *sc,
		uint32_t release);

/* images.c */
void check_catalog(struct checker *c, const struct vmconf *vc);

/* network.c */
void check_job_network(struct checker *c, const struct slurmconf *sc,
		       const struct vmconf *vc);
void check_ib_partitions(struct checker *c, const struct vmconf *vc);

/* shares.c */
void check_shares(struct checker *c, const struct vmconf *vc);

/* libvirt.c: libvirt's qemu driver directory, by default LIBVIRT_QEMU_DIR */
#define LIBVIRT_QEMU_DIR "/var/lib/libvirt/qemu"
void check_libvirt_dir(struct checker *c, const char *dir);
