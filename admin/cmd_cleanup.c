/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm cleanup: the epilog's teardown (guest_reclaim) for every guest of
 * this node's StateDir whose job has ended. slurmctld says which have ended;
 * when it does not answer, or libvirt does not, nothing is touched: a guest
 * of a running job must never be torn down on a guess.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "common_opts.h"
#include "slurm/jobfate.h"
#include "core/log.h"
#include "vm/reclaim.h"
#include "core/strutil.h"

static void cleanup_usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm cleanup [--config vm.conf] [--dry-run]\n"
		"       slurm-vm cleanup [--config vm.conf] --kept JOBID\n\n"
		"Tears down, as the epilog would, every guest of this node's "
		"StateDir whose\njob has ended (slurmctld says so, or no "
		"longer knows the job): guest stopped,\nrelay stopped, "
		"overlay and state removed (kept with --vm-keep). Guests of\n"
		"active jobs are left alone; when slurmctld or libvirt does "
		"not answer,\nnothing is touched. --dry-run: only say what "
		"would be reclaimed. --kept JOBID: remove that job's kept "
		"state (--vm-keep:\noverlay, NVRAM, seed) now, before "
		"KeepFor= passes. Root only.\n");
}

/* Every guest's fate, all known before anything is touched. */
static int cleanup_fates(const struct guest_list *list, enum job_fate *fates,
			 char (*why)[128])
{
	for (size_t i = 0; i < list->n; i++) {
		if (list->v[i].torn_down) {
			fates[i] = JOB_FATE_ACTIVE;
			snprintf(why[i], sizeof(why[i]),
				 "torn down, files kept (--vm-keep) until "
				 "KeepFor= passes");
			continue;
		}
		if (job_fate(list->v[i].job_id, list->v[i].restart, &fates[i],
			     NULL, why[i], sizeof(why[i])) < 0) {
			log_error("%s: nothing reclaimed; run `slurm-vm "
				  "cleanup` again once slurmctld answers",
				  why[i]);
			return -EHOSTDOWN;
		}
	}
	return 0;
}

static int cleanup_one(const struct vmconf *conf, const struct guest *g,
		       const char *why, bool dry_run)
{
	struct teardown_result res;
	int r;

	if (dry_run) {
		printf("would reclaim %s (job %s)\n", g->name, why);
		return 0;
	}
	r = guest_reclaim(conf, g, 0, false, &res);
	if (r == -EBUSY) {
		printf("skipped %s: its prolog or epilog runs now\n", g->name);
		return 0;
	}
	if (r < 0 && r != -ENOENT) {
		printf("FAILED %s (job %s): %u of %u steps failed%s\n", g->name,
		       why, res.failed, res.steps,
		       res.node_unsafe ? "; its guest may still hold devices"
				       : "");
		return r;
	}
	printf("reclaimed %s (job %s): %u steps\n", g->name, why, res.steps);
	return 0;
}

static int cleanup_run(const struct vmconf *conf, bool dry_run)
{
	_cleanup_free_ enum job_fate *fates = NULL;
	_cleanup_free_ char(*why)[128] = NULL;
	struct guest_list list;
	unsigned expired = 0;
	int r, failed = 0;

	/* Kept state past KeepFor= first (no libvirt needed): what is left
	 * is listed below. */
	if (!dry_run && kept_expire(conf, time(NULL), &expired) < 0)
		failed++;
	if (expired)
		printf("expired %u kept state%s older than KeepFor=%u hours\n",
		       expired, expired == 1 ? "" : "s", conf->keep_for_hours);
	r = guests_scan(conf, &list);
	if (r < 0)
		return r;
	if (list.libvirt_down) {
		log_error("libvirt at %s is unreachable: nothing reclaimed "
			  "(a guest that cannot be stopped would be left "
			  "without its journal)",
			  conf->libvirt_uri);
		guest_list_free(&list);
		return -EHOSTDOWN;
	}
	fates = calloc(list.n + 1, sizeof(*fates));
	why = calloc(list.n + 1, sizeof(*why));
	r = fates && why ? cleanup_fates(&list, fates, why) : -ENOMEM;
	for (size_t i = 0; r == 0 && i < list.n; i++) {
		if (fates[i] == JOB_FATE_ACTIVE)
			printf("left %s: job %s\n", list.v[i].name, why[i]);
		else if (cleanup_one(conf, &list.v[i], why[i], dry_run) < 0)
			failed++;
	}
	if (r == 0)
		printf("%zu guest%s of StateDir %s, %d failed\n", list.n,
		       list.n == 1 ? "" : "s", conf->state_dir, failed);
	guest_list_free(&list);
	if (r < 0)
		return r;
	return failed ? -EIO : 0;
}

/* --kept JOBID: the admin frees the space a --vm-keep job holds. */
static int cleanup_kept(const struct vmconf *conf, const char *job_text)
{
	unsigned job_id, removed, not_torn;
	int r;

	if (str_to_uint(job_text, &job_id) < 0 || job_id == 0) {
		log_error("--kept %s: a job id, e.g. --kept 1234", job_text);
		return -EINVAL;
	}
	r = kept_remove_job(conf, job_id, &removed, &not_torn);
	if (r < 0)
		return log_errno(r,
				 "job %u: kept state not all removed; "
				 "see the messages above",
				 job_id);
	if (not_torn)
		printf("left %u state director%s of job %u: not kept state "
		       "(its guest runs, or its epilog has not finished)\n",
		       not_torn, not_torn == 1 ? "y" : "ies", job_id);
	if (!removed && !not_torn) {
		log_error("job %u has no kept state (--vm-keep) in StateDir "
			  "%s on this node",
			  job_id, conf->state_dir);
		return -ENOENT;
	}
	if (removed)
		printf("removed the kept state of job %u (%u "
		       "incarnation%s)\n",
		       job_id, removed, removed == 1 ? "" : "s");
	return removed ? 0 : -EBUSY;
}

int cmd_cleanup(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "kept", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *config = NULL, *kept = NULL;
	bool dry_run = false;
	struct vmconf conf;
	int c, r;

	while ((c = getopt_long(argc, argv, "c:nk:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'n':
			dry_run = true;
			break;
		case 'k':
			kept = optarg;
			break;
		case 'h':
			cleanup_usage(stdout);
			return 0;
		default:
			cleanup_usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (kept && dry_run)) {
		cleanup_usage(stderr);
		return 2;
	}
	if (admin_require_root("cleanup") < 0)
		return 1;
	if (admin_load_config(&conf, config, NULL, NULL, NULL) < 0)
		return 1;
	if (conf.log_file)
		log_open_file(conf.log_file);
	r = kept ? cleanup_kept(&conf, kept) : cleanup_run(&conf, dry_run);
	vmconf_free(&conf);
	return r < 0 ? 1 : 0;
}
