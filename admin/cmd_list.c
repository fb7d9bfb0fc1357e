/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm list: the guests of this node's StateDir, with the job, its user,
 * what slurmctld says about the job, the guest's libvirt state, the state
 * directory and the devices the guest holds (its domain metadata).
 */
#include "config.h"

#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "common_opts.h"
#include "slurm/jobfate.h"
#include "core/log.h"
#include "vm/reclaim.h"

static void list_usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm list [--config vm.conf] [--parsable]\n\n"
		"Lists the guests of this node's StateDir (root only): job, "
		"user, the job's\nstate in slurmctld, the guest's libvirt "
		"state, the state directory and\nthe devices the guest holds. "
		"--parsable: '|'-separated, no header.\n");
}

static void user_name(long uid, char *buf, size_t len)
{
	struct passwd *pw = uid >= 0 ? getpwuid((uid_t)uid) : NULL;

	if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else if (uid >= 0)
		snprintf(buf, len, "%ld", uid);
	else
		snprintf(buf, len, "-");
}

static void print_devices(FILE *out, const struct guest *g)
{
	if (!g->n_devices)
		fprintf(out, "-");
	for (size_t k = 0; k < g->n_devices; k++)
		fprintf(out, "%s%s:%d=%s", k ? "," : "", g->devices[k].gres,
			g->devices[k].index, g->devices[k].addr);
}

static const char *state_dir_word(const struct guest *g)
{
	if (!g->has_state)
		return "none";
	return g->torn_down ? "kept" : "yes";
}

/* One guest: JOB USER SLURM GUEST STATE-DIR DEVICES. */
static void list_guest(const struct guest *g, bool parsable, bool libvirt_down,
		       bool *ctld_down)
{
	char job[32], user[64], why[128], slurm[160];
	const char *guest = g->has_domain  ? g->domain_state
			    : libvirt_down ? "?"
					   : "none";
	enum job_fate fate;
	long job_uid = -1;

	snprintf(job, sizeof(job), "%u.%u", g->job_id, g->restart);
	/* One unanswered query is enough: each costs libslurm's retries. */
	if (*ctld_down || job_fate(g->job_id, g->restart, &fate, &job_uid, why,
				   sizeof(why)) < 0) {
		if (!*ctld_down)
			log_warn("%s: the SLURM column is unknown", why);
		*ctld_down = true;
		snprintf(slurm, sizeof(slurm), "?");
	} else
		snprintf(slurm, sizeof(slurm), "%s%s",
			 fate == JOB_FATE_ENDED ? "ended: " : "", why);
	user_name(g->uid >= 0 ? g->uid : job_uid, user, sizeof(user));
	if (parsable)
		printf("%s|%s|%s|%s|%s|", job, user, slurm, guest,
		       state_dir_word(g));
	else
		printf("%-12s  %-10s  %-28s  %-10s  %-9s  ", job, user, slurm,
		       guest, state_dir_word(g));
	print_devices(stdout, g);
	printf("\n");
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "parsable", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *config = NULL;
	struct guest_list list;
	bool parsable = false, ctld_down = false;
	struct vmconf conf;
	int c, r;

	while ((c = getopt_long(argc, argv, "c:ph", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'p':
			parsable = true;
			break;
		case 'h':
			list_usage(stdout);
			return 0;
		default:
			list_usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		list_usage(stderr);
		return 2;
	}
	if (admin_require_root("list") < 0)
		return 1;
	if (admin_load_config(&conf, config, NULL, NULL, NULL) < 0)
		return 1;
	r = guests_scan(&conf, &list);
	if (r < 0) {
		vmconf_free(&conf);
		return 1;
	}
	if (!parsable)
		printf("%-12s  %-10s  %-28s  %-10s  %-9s  %s\n", "JOB", "USER",
		       "SLURM", "GUEST", "STATE-DIR", "DEVICES");
	for (size_t i = 0; i < list.n; i++)
		list_guest(&list.v[i], parsable, list.libvirt_down, &ctld_down);
	if (list.libvirt_down)
		log_warn("libvirt at %s is unreachable: guests are shown from "
			 "StateDir %s only",
			 conf.libvirt_uri, conf.state_dir);
	guest_list_free(&list);
	vmconf_free(&conf);
	return 0;
}
