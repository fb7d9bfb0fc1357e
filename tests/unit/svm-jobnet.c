/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test driver of the job network (common/net/jobnet.h) for
 * tests/unit/test_jobnet.sh, without Slurm:
 *
 *   svm-jobnet doc VMCONF JOBID SELF MTU WHAT NODE=ADDR...
 *       prints a planned document: network-config, hosts, fdb, nft, mac, ip
 *   svm-jobnet setup VMCONF JOBID SELF NODE=ADDR...
 *       sets the job network up on this node (StateDir of VMCONF, journal)
 *   svm-jobnet tap VMCONF JOBID SELF NODE=ADDR...
 *       locks the guest's tap (a veth here) as the prolog does before the
 *       guest runs
 *   svm-jobnet teardown VMCONF JOBID
 *       replays the job's journal as the epilog does
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "net/jobnet.h"
#include "job/journal.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"
#include "vm/teardown.h"
#include "job/vmconf.h"

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

static int cmd_teardown(const struct vmconf *conf, unsigned job)
{
	_cleanup_close_ int fd = job_statedir(conf, job, false);
	struct teardown_result res;
	int r;

	if (fd < 0)
		return fd;
	r = teardown_replay(conf, fd, false, &res);
	printf("%u steps, %u failed\n", res.steps, res.failed);
	return r;
}

static int cmd_setup(const struct vmconf *conf, unsigned job, unsigned self,
		     char **nodes, int n, bool tap)
{
	struct jobnet_plan p = { 0 };
	_cleanup_close_ int fd = -1;
	double t0 = clock_now_s();
	int r;

	r = jobnet_underlay_mtu(conf->jobnet_underlay);
	if (r < 0)
		return r;
	r = plan_args(conf, nodes, n, job, self, (unsigned)r, &p);
	if (r < 0)
		return r;
	fd = job_statedir(conf, job, true);
	r = fd < 0 ? fd : tap ? jobnet_guard_tap(&p, fd) : jobnet_setup(&p, fd);
	printf("setup %.3f s\n", clock_now_s() - t0);
	jobnet_plan_free(&p);
	return r;
}

static int cmd_doc(const struct vmconf *conf, unsigned job, unsigned self,
		   const char *mtu_text, const char *what, char **nodes, int n)
{
	struct jobnet_plan p = { 0 };
	unsigned mtu;
	int r;

	if (str_to_uint(mtu_text, &mtu) < 0)
		return -EINVAL;
	r = plan_args(conf, nodes, n, job, self, mtu, &p);
	if (r == 0)
		r = print_doc(&p, what);
	jobnet_plan_free(&p);
	return r;
}

int main(int argc, char **argv)
{
	struct vmconf conf;
	unsigned job, self = 0;
	int r = -EINVAL;

	log_open("svm-jobnet");
	if (argc < 4)
		return 2;
	if (vmconf_load(&conf, argv[2]) < 0) {
		vmconf_free(&conf);
		return 2;
	}
	if (str_to_uint(argv[3], &job) < 0)
		;
	else if (strcmp(argv[1], "teardown") == 0)
		r = cmd_teardown(&conf, job);
	else if (argc < 6 || str_to_uint(argv[4], &self) < 0)
		;
	else if (strcmp(argv[1], "setup") == 0)
		r = cmd_setup(&conf, job, self, argv + 5, argc - 5, false);
	else if (strcmp(argv[1], "tap") == 0)
		r = cmd_setup(&conf, job, self, argv + 5, argc - 5, true);
	else if (strcmp(argv[1], "doc") == 0 && argc >= 8)
		r = cmd_doc(&conf, job, self, argv[5], argv[6], argv + 7,
			    argc - 7);
	vmconf_free(&conf);
	return r < 0 ? 1 : 0;
}
