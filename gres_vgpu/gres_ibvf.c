/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gres/ibvf: the GRES plugin for SR-IOV InfiniBand (and RoCE) virtual
 * functions bound to vfio-pci, one per IOMMU group (File=/dev/vfio/N).
 *
 * Without it Slurm counts ibvf (GRES_CONF_COUNT_ONLY) and slurm-vm-prolog
 * maps the job's indices to PCI functions itself. With it:
 *  - node_config_load: with IbvfAutoDetect=yes in vm.conf (gres.conf's
 *    AutoDetect= knows only nvml/rsmi/oneapi/off) the VFs are found in
 *    sysfs, Cores= from hwloc, in the order `slurm-vm gres` prints them;
 *  - SLURM_JOB_IBVFS for the Prolog, Epilog and batch step and
 *    SLURM_STEP_IBVFS for steps and tasks: "IDX=PCI[,IDX=PCI...]";
 *  - slurmd constrains the vfio device files (task/cgroup ConstrainDevices).
 * See gres_ibvf(8).
 *
 * This file is the Slurm half: it includes Slurm-internal headers from the
 * configured source tree (--with-slurm-source) and is built for exactly
 * that version. ibvf.c is the slurm-vm half.
 */
#include "config.h" /* Slurm's: -iquote puts its tree first */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/env.h"
#include "src/common/list.h"
#include "src/common/pack.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

/*
 * API differences, by release (each guard at the release that made it;
 * ibvf-compile-check.sh checks a configured tree of any release):
 *  22.05       src/common/gres.h, gres_p_epilog_{build,set}_env with
 *              gres_epilog_info_t; common_{node_config_load,send_stepd,
 *              recv_stepd}(), add_gres_to_list() with one argument per
 *              field; 13 entry points.
 *  23.02       src/interfaces/gres.h; the Prolog/Epilog hooks renamed to
 *              gres_p_prep_{build,set}_env with gres_prep_t; the helpers
 *              became gres_{node_config_load,send_stepd,recv_stepd}() and
 *              add_gres_to_list() takes a gres_slurmd_conf_t.
 *  24.11       gres_p_get_job_info and gres_p_get_step_info gone (11).
 */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#include "src/interfaces/gres.h"
typedef gres_prep_t ibvf_prep_t;
#define IBVF_PREP_BUILD_ENV gres_p_prep_build_env
#define IBVF_PREP_SET_ENV   gres_p_prep_set_env
typedef list_t *ibvf_list_t;
#define ibvf_devices_load(list, config, devices) \
	gres_node_config_load(list, config, devices)
#define ibvf_send_stepd gres_send_stepd
#define ibvf_recv_stepd gres_recv_stepd
#else
#include "src/common/gres.h"
typedef gres_epilog_info_t ibvf_prep_t;
#define IBVF_PREP_BUILD_ENV gres_p_epilog_build_env
#define IBVF_PREP_SET_ENV   gres_p_epilog_set_env
typedef List ibvf_list_t;
#define ibvf_devices_load(list, config, devices) \
	common_node_config_load(list, gres_name, config, devices)
#define ibvf_send_stepd common_send_stepd
#define ibvf_recv_stepd common_recv_stepd
#endif

#include "src/plugins/gres/common/gres_common.h"

#include "ibvf.h"

const char plugin_name[] = "Gres InfiniBand VF plugin (slurm-vm)";
const char plugin_type[] = "gres/ibvf";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static char gres_name[] = "ibvf";
#define JOB_VAR	 "SLURM_JOB_IBVFS"
#define STEP_VAR "SLURM_STEP_IBVFS"

static ibvf_list_t gres_devices;
/* Per device index: its "IDX=PCI[,...]" fragment (slurmd, and slurmstepd
 * through send/recv_stepd). */
static char **index_entries;
static uint32_t index_count;

static void ibvf_to_slurm_log(int level, const char *msg)
{
	switch (level) {
	case 0:
		error("%s", msg);
		break;
	case 1:
		info("WARNING: %s", msg);
		break;
	case 2:
		info("%s", msg);
		break;
	default:
		debug("%s", msg);
		break;
	}
}

static void index_entries_free(void)
{
	for (uint32_t i = 0; i < index_count; i++)
		xfree(index_entries[i]);
	xfree(index_entries);
	index_count = 0;
}

extern int init(void)
{
	ibvf_log_init(ibvf_to_slurm_log);
	debug("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	debug("unloading %s", plugin_name);
	FREE_NULL_LIST(gres_devices);
	index_entries_free();
	return SLURM_SUCCESS;
}

static int find_ibvf_conf(void *x, void *key)
{
	gres_slurmd_conf_t *c = x;

	return xstrcmp(c->name, gres_name) == 0;
}

static int count_ibvf_files(void *x, void *arg)
{
	gres_slurmd_conf_t *c = x;

	if (xstrcmp(c->name, gres_name) == 0 && c->file)
		(*(int *)arg)++;
	return 0;
}

/* Warns when slurmd's own core numbering differs from ours for @l. */
static void check_cores(const struct ibvf_line *l, node_config_load_t *config)
{
	char *abs = NULL;

	if (!config->xcpuinfo_mac_to_abs ||
	    config->xcpuinfo_mac_to_abs(l->cpus, &abs) != SLURM_SUCCESS)
		return;
	if (xstrcmp(abs, l->cores))
		info("WARNING: %s: CPUs %s are cores %s to slurmd but %s to "
		     "hwloc here: check TopologyFile in vm.conf",
		     l->file, l->cpus, abs, l->cores);
	xfree(abs);
}

/* One gres.conf line's record: Name=ibvf File=@file Cores=@cores. */
static void add_ibvf_record(ibvf_list_t list, uint32_t cpu_cnt, char *cores,
			    bitstr_t *cpus, char *file)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
	gres_slurmd_conf_t rec = { .count = 1,
				   .cpu_cnt = cpu_cnt,
				   .cpus = cores,
				   .cpus_bitmap = cpus,
				   .file = file,
				   .name = gres_name };

	add_gres_to_list(list, &rec);
#else
	add_gres_to_list(list, gres_name, 1, cpu_cnt, cores, cpus, file, NULL,
			 NULL, NULL, 0);
#endif
}

/* Replaces the ibvf records of @gres_conf_list with the detected VFs. */
static int detect_into(ibvf_list_t gres_conf_list, struct ibvf_conf *conf,
		       node_config_load_t *config)
{
	struct ibvf_line *lines = NULL;
	ibvf_list_t found;
	size_t n = 0;
	int with_file = 0;

	if (ibvf_detect(conf, &lines, &n) < 0) {
		error("IbvfAutoDetect=yes in %s but the VFs cannot be "
		      "detected (see above)",
		      conf->vm_conf);
		return SLURM_ERROR;
	}
	list_for_each(gres_conf_list, count_ibvf_files, &with_file);
	if (with_file)
		info("WARNING: IbvfAutoDetect=yes in %s: the %d Name=ibvf "
		     "File= lines of gres.conf are replaced by the %zu VFs "
		     "found; leave them out of gres.conf",
		     conf->vm_conf, with_file, n);
	list_delete_all(gres_conf_list, find_ibvf_conf, NULL);
	if (!n)
		error("IbvfAutoDetect=yes: no InfiniBand VF bound to vfio-pci "
		      "under %s (`slurm-vm gres` says why)",
		      conf->sysfs_root);
	found = list_create(destroy_gres_slurmd_conf);
	for (size_t i = 0; i < n; i++) {
		bitstr_t *cpus = NULL;

		if (lines[i].cpus) {
			cpus = bit_alloc(config->cpu_cnt);
			if (bit_unfmt(cpus, lines[i].cpus)) {
				error("%s: CPUs %s do not fit the %u CPUs of "
				      "this node",
				      lines[i].file, lines[i].cpus,
				      config->cpu_cnt);
				FREE_NULL_BITMAP(cpus);
				FREE_NULL_LIST(found);
				ibvf_lines_free(lines, n);
				return SLURM_ERROR;
			}
			check_cores(&lines[i], config);
		}
		add_ibvf_record(found, config->cpu_cnt, lines[i].cores, cpus,
				lines[i].file);
		FREE_NULL_BITMAP(cpus);
		info("detected: Name=ibvf File=%s%s%s", lines[i].file,
		     lines[i].cores ? " Cores=" : "",
		     lines[i].cores ? lines[i].cores : "");
	}
	list_transfer(gres_conf_list, found);
	FREE_NULL_LIST(found);
	ibvf_lines_free(lines, n);
	return SLURM_SUCCESS;
}

struct entries_ctx {
	struct ibvf_conf *conf;
	int rc;
};

/* Logs every device that does not resolve, not just the first. */
static int add_index_entry(void *x, void *arg)
{
	gres_device_t *dev = x;
	struct entries_ctx *ctx = arg;
	char *entry;

	if (dev->index < 0 || (uint32_t)dev->index >= index_count) {
		error("ibvf device %s has index %d of %u", dev->path,
		      dev->index, index_count);
		ctx->rc = SLURM_ERROR;
		return 0;
	}
	entry = ibvf_index_entry(ctx->conf, dev->index, dev->path);
	if (!entry) {
		ctx->rc = SLURM_ERROR;
		return 0;
	}
	index_entries[dev->index] = xstrdup(entry);
	free(entry);
	debug("ibvf %d: %s -> %s", dev->index, dev->path,
	      index_entries[dev->index]);
	return 0;
}

/* Each device's PCI functions, by index, for the environment. */
static int build_index_entries(struct ibvf_conf *conf)
{
	struct entries_ctx ctx = { .conf = conf, .rc = SLURM_SUCCESS };

	index_entries_free();
	if (!gres_devices)
		return SLURM_SUCCESS;
	index_count = list_count(gres_devices);
	index_entries = xcalloc(index_count, sizeof(*index_entries));
	list_for_each(gres_devices, add_index_entry, &ctx);
	return ctx.rc;
}

extern int gres_p_node_config_load(ibvf_list_t gres_conf_list,
				   node_config_load_t *config)
{
	struct ibvf_conf conf;
	char *path;
	int rc = SLURM_SUCCESS;

	/* scontrol reconfigure: start over */
	FREE_NULL_LIST(gres_devices);
	/* slurmctld (cloud nodes only): gres.conf as it is, no vm.conf */
	if (!config->in_slurmd)
		return ibvf_devices_load(gres_conf_list, config, &gres_devices);
	path = get_extra_conf_path("vm.conf");
	if (ibvf_conf_load(path, &conf) < 0) {
		error("%s is broken (see above): fix it, gres/ibvf cannot "
		      "work without it",
		      path);
		rc = SLURM_ERROR;
	} else if (conf.autodetect) {
		/* 24.11: slurmctld refuses Cores= that split a socket */
		conf.cores_whole_sockets =
			SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0);
		rc = detect_into(gres_conf_list, &conf, config);
	}
	if (rc == SLURM_SUCCESS)
		rc = ibvf_devices_load(gres_conf_list, config, &gres_devices);
	if (rc == SLURM_SUCCESS)
		rc = build_index_entries(&conf);
	ibvf_conf_free(&conf);
	xfree(path);
	if (rc != SLURM_SUCCESS)
		fatal("%s failed to load configuration", plugin_name);
	return rc;
}

/* "IDX=PCI,..." of the bits of @alloc (and of @usable, if given). */
static char *ibvfs_of(bitstr_t *alloc, bitstr_t *usable)
{
	char *out = NULL;

	if (!alloc)
		return NULL;
	for (bitoff_t i = 0; i < bit_size(alloc); i++) {
		if (!bit_test(alloc, i))
			continue;
		if (usable && (i >= bit_size(usable) || !bit_test(usable, i)))
			continue;
		if ((uint32_t)i >= index_count || !index_entries[i]) {
			error("ibvf index %" PRId64 " allocated but unknown "
			      "here: gres.conf or vm.conf changed without a "
			      "slurmd restart?",
			      (int64_t)i);
			continue;
		}
		xstrfmtcat(out, "%s%s", out ? "," : "", index_entries[i]);
	}
	return out;
}

static void set_env(char ***env_ptr, const char *var, bitstr_t *alloc,
		    bitstr_t *usable)
{
	char *value = ibvfs_of(alloc, usable);

	/* unset when nothing is allocated (e.g. a step with --gres=none) */
	if (value)
		env_array_overwrite(env_ptr, var, value);
	else
		unsetenvp(*env_ptr, var);
	xfree(value);
}

extern void gres_p_job_set_env(char ***job_env_ptr, bitstr_t *gres_bit_alloc,
			       uint64_t gres_cnt, gres_internal_flags_t flags)
{
	set_env(job_env_ptr, JOB_VAR, gres_bit_alloc, NULL);
}

extern void gres_p_step_set_env(char ***step_env_ptr, bitstr_t *gres_bit_alloc,
				uint64_t gres_cnt, gres_internal_flags_t flags)
{
	set_env(step_env_ptr, STEP_VAR, gres_bit_alloc, NULL);
}

extern void gres_p_task_set_env(char ***step_env_ptr, bitstr_t *gres_bit_alloc,
				uint64_t gres_cnt, bitstr_t *usable_gres,
				gres_internal_flags_t flags)
{
	set_env(step_env_ptr, STEP_VAR, gres_bit_alloc, usable_gres);
}

extern void gres_p_send_stepd(buf_t *buffer)
{
	ibvf_send_stepd(buffer, gres_devices);
	pack32(index_count, buffer);
	for (uint32_t i = 0; i < index_count; i++)
		packstr(index_entries[i], buffer);
}

extern void gres_p_recv_stepd(buf_t *buffer)
{
	uint32_t n, len;

	ibvf_recv_stepd(buffer, &gres_devices);
	index_entries_free();
	safe_unpack32(&n, buffer);
	if (n > 4096)
		goto unpack_error;
	index_entries = xcalloc(n, sizeof(*index_entries));
	index_count = n;
	for (uint32_t i = 0; i < n; i++)
		safe_unpackstr_xmalloc(&index_entries[i], &len, buffer);
	return;
unpack_error:
	error("%s: failed", __func__);
	index_entries_free();
}

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(24, 11, 0)
extern int gres_p_get_job_info(gres_job_state_t *gres_js, uint32_t node_inx,
			       enum gres_job_data_type data_type, void *data)
{
	return EINVAL;
}

extern int gres_p_get_step_info(gres_step_state_t *gres_ss, uint32_t node_inx,
				enum gres_step_data_type data_type, void *data)
{
	return EINVAL;
}
#endif

extern ibvf_list_t gres_p_get_devices(void)
{
	return gres_devices;
}

extern void gres_p_step_hardware_init(bitstr_t *usable_gres, char *settings)
{
}

extern void gres_p_step_hardware_fini(void)
{
}

/* slurmctld: the job's VFs per node, for the Prolog and Epilog. */
extern ibvf_prep_t *IBVF_PREP_BUILD_ENV(gres_job_state_t *gres_js)
{
	ibvf_prep_t *prep = xmalloc(sizeof(*prep));

	prep->node_cnt = gres_js->node_cnt;
	prep->gres_bit_alloc = xcalloc(prep->node_cnt, sizeof(bitstr_t *));
	for (uint32_t i = 0; i < prep->node_cnt; i++)
		if (gres_js->gres_bit_alloc && gres_js->gres_bit_alloc[i])
			prep->gres_bit_alloc[i] =
				bit_copy(gres_js->gres_bit_alloc[i]);
	return prep;
}

/* slurmd: SLURM_JOB_IBVFS in the Prolog's and Epilog's environment. */
extern void IBVF_PREP_SET_ENV(char ***env_ptr, ibvf_prep_t *prep, int node_inx)
{
	if (!prep || node_inx < 0 || (uint32_t)node_inx >= prep->node_cnt ||
	    !prep->gres_bit_alloc)
		return;
	set_env(env_ptr, JOB_VAR, prep->gres_bit_alloc[node_inx], NULL);
}
