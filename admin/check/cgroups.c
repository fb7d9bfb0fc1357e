/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest adopted into the job's extern step: what accounting and the
 * job's cgroups see of it (issue #29).
 */
#include "config.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "check.h"
#include "slurm/compat.h"
#include "slurm/slurmconf.h"
#include "core/strutil.h"
#include "job/vmconf.h"

/* The guest's processes are adopted into the job's extern step (issue
 * #29, doc/notes/design-notes-29.md section 4): what accounting and the job's
 * cgroups will and will not see with this node's slurm.conf and
 * cgroup.conf (beside it, read as Slurm reads it; none: Slurm's
 * defaults). */
#define UNKILLABLE_VFIO_MIN_S 180

static bool plugin_listed(const char *list, const char *plugin)
{
	return list_has(list, plugin) ||
	       list_has(list, strchr(plugin, '/') + 1);
}

static void check_adoption_plugins(const struct slurmconf *sc, uint32_t release)
{
	const char *flags = slurmconf_get(sc, "PrologFlags");
	const char *proctrack =
		slurmconf_get(sc, "ProctrackType") ?: "proctrack/cgroup";
	const char *task = slurmconf_get(sc, "TaskPlugin") ?: "task/none";
	char bad[64];
	unsigned bits;

	if (slurm_prolog_flags_parse(flags, release, &bits, bad, sizeof(bad)) ==
		    0 &&
	    !(bits & SLURM_PROLOG_CONTAIN))
		check_note("PrologFlags=Contain (keep the other flags)",
			   "PrologFlags=%s lacks Contain: the guest stays "
			   "outside the job, accounting and cgroup limits "
			   "never see it",
			   flags ?: "");
	if (strcasecmp(proctrack, "proctrack/cgroup"))
		check_note("ProctrackType=proctrack/cgroup",
			   "ProctrackType=%s: adopting the guest counts and "
			   "kills nothing (it is not in the job's container)",
			   proctrack);
	if (!plugin_listed(task, "task/cgroup"))
		check_note("add task/cgroup to TaskPlugin",
			   "TaskPlugin=%s lacks task/cgroup: the guest is "
			   "counted but not constrained (ConstrainRAMSpace, "
			   "ConstrainCores do not apply)",
			   task);
}

/* jobacct_gather/cgroup's MaxRSS on cgroup v1 is memory.stat total_rss,
 * without shmem: a virtiofs guest's RAM is a memfd. */
static void check_adoption_accounting(const struct slurmconf *sc,
				      const struct slurmconf *cg)
{
	const char *gather =
		slurmconf_get(sc, "JobAcctGatherType") ?: "jobacct_gather/none";
	const char *storage = slurmconf_get(sc, "AccountingStorageType")
				      ?: "accounting_storage/none";
	const char *cgplugin = slurmconf_get(cg, "CgroupPlugin") ?: "";

	if (strcasecmp(gather, "jobacct_gather/cgroup") == 0)
		check_ok("JobAcctGatherType=%s: the guest's MaxRSS is its "
			 "cgroup's RSS%s; RAM charged before adoption "
			 "(VFIO-pinned) is not in it",
			 gather,
			 strcasecmp(cgplugin, "cgroup/v1") == 0
				 ? " (cgroup v1 total_rss: without shmem, so "
				   "without a virtiofs guest's memfd RAM)"
				 : "");
	else if (strcasecmp(gather, "jobacct_gather/linux") == 0)
		check_ok("JobAcctGatherType=%s: the guest's MaxRSS is its "
			 "processes' RSS, VFIO-pinned RAM included, hugetlb "
			 "pages not",
			 gather);
	else
		check_note("JobAcctGatherType=jobacct_gather/cgroup (or "
			   "jobacct_gather/linux)",
			   "JobAcctGatherType=%s: nothing of the guest (CPU, "
			   "memory) is counted",
			   gather);
	if (strcasecmp(storage, "accounting_storage/slurmdbd"))
		check_note("AccountingStorageType=accounting_storage/slurmdbd "
			   "(with a slurmdbd) for sacct",
			   "AccountingStorageType=%s: sacct shows no job, the "
			   "guests' neither",
			   storage);
}

static void check_adoption_limits(const struct slurmconf *sc,
				  const struct slurmconf *cg,
				  const struct vmconf *vc, const char *node)
{
	const char *launch = slurmconf_get(sc, "LaunchParameters");
	const char *text = slurmconf_get(sc, "UnkillableStepTimeout");
	const char *cores = slurmconf_get(cg, "ConstrainCores");
	const char *spec =
		slurmconf_node_get(sc, node, "CpuSpecList")
			?: slurmconf_node_get(sc, node, "CoreSpecCount");
	unsigned unkillable = 60;
	char fix[128];

	if (list_has(launch, "ulimit_pam_adopt"))
		check_warn("remove ulimit_pam_adopt from LaunchParameters",
			   "LaunchParameters=%s: the adopted qemu gets the "
			   "job's resource limits; VFIO passthrough needs "
			   "RLIMIT_MEMLOCK unlimited",
			   launch);
	if (text && str_to_uint(text, &unkillable) < 0)
		unkillable = 60;
	if (vc->device_attach == DEVICE_ATTACH_VFIO &&
	    unkillable < UNKILLABLE_VFIO_MIN_S) {
		snprintf(fix, sizeof(fix), "UnkillableStepTimeout=%u",
			 UNKILLABLE_VFIO_MIN_S);
		check_warn(fix,
			   "UnkillableStepTimeout=%u%s with DeviceAttach=vfio: "
			   "a passthrough qemu's exit (unpinning its RAM) can "
			   "take longer, and Slurm drains the node \"Kill task "
			   "failed\"",
			   unkillable, text ? "" : " (the default)");
	}
	if (cores && spec &&
	    (strcasecmp(cores, "yes") == 0 || strcasecmp(cores, "true") == 0))
		check_note("nothing to change; budget the job's cores for it",
			   "ConstrainCores=yes with core specialization: the "
			   "guest's emulator and I/O threads leave the "
			   "housekeeping cores and run on the job's cores");
}

/* Huge pages in the node's pool (--vm-hugepages): hugetlb guest RAM is
 * charged to no memory cgroup of the job. */
static void check_adoption_hugepages(const struct vmconf *vc)
{
	_cleanup_free_ char *pattern = NULL;
	unsigned long total = 0;
	glob_t gl;

	if (asprintf(&pattern, "%s/kernel/mm/hugepages/*/nr_hugepages",
		     vc->sysfs_root) < 0 ||
	    glob(pattern, 0, NULL, &gl) != 0)
		return;
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		_cleanup_fclose_ FILE *f = fopen(gl.gl_pathv[i], "re");
		unsigned long n = 0;

		if (f && fscanf(f, "%lu", &n) == 1)
			total += n;
	}
	globfree(&gl);
	if (total)
		check_note("size the pool outside RealMemory/MemSpecLimit: "
			   "Slurm limits none of it",
			   "%lu huge pages in this node's pool: a "
			   "--vm-hugepages guest's RAM is not in the job's "
			   "memory cgroup nor its MaxRSS",
			   total);
}

void check_adoption(const struct slurmconf *sc, const struct vmconf *vc,
		    uint32_t release, const char *node)
{
	_cleanup_free_ char *path = slurm_conf_sibling("cgroup.conf");
	struct slurmconf cg = { 0 };

	if (path && access(path, F_OK) == 0 && slurmconf_read(path, &cg) < 0)
		check_warn("correct the line named above",
			   "%s does not parse: its settings are not checked",
			   path);
	check_adoption_plugins(sc, release);
	check_adoption_accounting(sc, &cg);
	check_adoption_limits(sc, &cg, vc, node);
	check_adoption_hugepages(vc);
	slurmconf_free(&cg);
}
