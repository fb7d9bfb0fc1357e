/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test driver of the job network (common/net/jobnet.h) for
 * tests/unit/test_jobnet.sh, without Slurm:
 *
 *   svm-jobnet doc VMCONF JOBID SELF MTU WHAT NODE=ADDR...
 *       prints a planned document: network-config, hosts, fdb, nft, mac, ip
 *   svm-jobnet setup VMCONF JOBID SELF NODE=ADDR...
 *       sets the job network up on this node (StateDir of VMCONF, journal)
 *   svm-jobnet teardown VMCONF JOBID
 *       replays the job's journal as the epilog does
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "jobnet.h"
#include "journal.h"
#include "log.h"
#include "macro.h"
#include "strutil.h"
#include "teardown.h"
#include "vmconf.h"

static int plan_args(const struct vmconf *conf, char **argv, int argc,
		     unsigned job, unsigned self, unsigned mtu,
		     struct jobnet_plan *p)
{
	_cleanup_free_ const char **names =
		calloc((size_t)argc, sizeof(char *));
	_cleanup_free_ const char **addrs =
		calloc((size_t)argc, sizeof(char *));

	if (!names || !addrs)
		return -ENOMEM;
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		names[i] = argv[i];
		addrs[i] = eq + 1;
	}
	return jobnet_plan(conf, job, names, addrs, (size_t)argc, self, mtu, p);
}

static int print_doc(const struct jobnet_plan *p, const char *what)
{
	_cleanup_free_ char *doc = NULL;
	char buf[18];

	if (strcmp(what, "mac") == 0 || strcmp(what, "ip") == 0) {
		if (what[0] == 'm')
			jobnet_mac_string(p, p->self, buf);
		else
			jobnet_ip_string(p, p->self, buf);
		printf("%s\n", buf);
		return 0;
	}
	if (strcmp(what, "network-config") == 0)
		doc = jobnet_network_config(p);
	else if (strcmp(what, "hosts") == 0)
		doc = jobnet_hosts(p);
	else if (strcmp(what, "fdb") == 0)
		doc = jobnet_fdb_batch(p);
	else if (strcmp(what, "nft") == 0)
		doc = jobnet_nft_script(p);
	else
		return -EINVAL;
	if (!doc)
		return -ENOMEM;
	fputs(doc, stdout);
	return 0;
}

static int job_statedir(const struct vmconf *conf, unsigned job, bool create)
{
	char name[64];
	int r = statedir_name(job, 0, name, sizeof(name));

	return r < 0 ? r : statedir_open(conf->state_dir, name, create);
}

int main(int argc, char **argv)
{
	struct vmconf conf;
	struct jobnet_plan p = { 0 };
	unsigned job, self = 0, mtu = 0;
	_cleanup_close_ int fd = -1;
	int r;

	log_open("svm-jobnet");
	if (argc < 4 || vmconf_load(&conf, argv[2]) < 0 ||
	    str_to_uint(argv[3], &job) < 0)
		return 2;
	if (strcmp(argv[1], "teardown") == 0) {
		struct teardown_result res;

		fd = job_statedir(&conf, job, false);
		if (fd < 0)
			return 1;
		r = teardown_replay(&conf, fd, false, &res);
		printf("%u steps, %u failed\n", res.steps, res.failed);
		return r < 0 ? 1 : 0;
	}
	if (argc < 6 || str_to_uint(argv[4], &self) < 0)
		return 2;
	if (strcmp(argv[1], "doc") == 0) {
		if (argc < 8 || str_to_uint(argv[5], &mtu) < 0 ||
		    plan_args(&conf, argv + 7, argc - 7, job, self, mtu, &p) <
			    0)
			return 1;
		r = print_doc(&p, argv[6]);
	} else if (strcmp(argv[1], "setup") == 0) {
		double t0 = clock_now_s();

		r = jobnet_underlay_mtu(conf.jobnet_underlay);
		if (r < 0)
			return 1;
		if (plan_args(&conf, argv + 5, argc - 5, job, self, (unsigned)r,
			      &p) < 0)
			return 1;
		fd = job_statedir(&conf, job, true);
		if (fd < 0)
			return 1;
		r = jobnet_setup(&p, fd);
		printf("setup %.3f s\n", clock_now_s() - t0);
	} else {
		return 2;
	}
	jobnet_plan_free(&p);
	vmconf_free(&conf);
	return r < 0 ? 1 : 0;
}
