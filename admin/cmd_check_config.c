/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm check-config: reads slurm.conf, gres.conf, plugstack.conf and
 * vm.conf as this node's daemons will, and reports every setting that breaks
 * what slurm-vm needs, with the fix. Exit 0: nothing to fix; 1: problems.
 */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "commands.h"
#include "slurm/compat.h"
#include "slurm/slurmconf.h"
#include "core/log.h"
#include "core/strutil.h"
#include "job/vmconf.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm check-config [--slurm-conf PATH] [--node NAME] [--libvirt-dir DIR]\n"
		"Checks slurm.conf, gres.conf, plugstack.conf and vm.conf for what slurm-vm needs.\n"
		"NAME: this node's NodeName (slurmd -N), default the host name up to its first dot.\n"
		"DIR: libvirt's qemu driver directory, default " LIBVIRT_QEMU_DIR
		"\n"
		"     (LOCALSTATEDIR/lib/libvirt/qemu of a libvirt built elsewhere).\n");
}

/* slurmd's node name without -N: the host name up to its first dot. */
static void short_host_name(char *name, size_t size)
{
	if (gethostname(name, size) < 0)
		snprintf(name, size, "localhost");
	name[size - 1] = '\0';
	name[strcspn(name, ".")] = '\0';
}

int cmd_check_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "slurm-conf", required_argument, NULL, 's' },
		{ "node", required_argument, NULL, 'n' },
		{ "libvirt-dir", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct checker c = { 0 };
	struct slurmconf sc = { 0 };
	_cleanup_free_ char *vm_path = NULL;
	char node[HOST_NAME_MAX + 1] = "", fix[1024];
	const char *libvirt_dir = LIBVIRT_QEMU_DIR;
	uint32_t release = slurm_compat_release();
	struct vmconf vc;
	char rel[16];
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 's') {
			setenv("SLURM_CONF", optarg, 1);
		} else if (opt == 'n') {
			snprintf(node, sizeof(node), "%s", optarg);
		} else if (opt == 'l') {
			libvirt_dir = optarg;
		} else if (opt == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!node[0])
		short_host_name(node, sizeof(node));
	c.slurm_conf_path = getenv("SLURM_CONF") ?: "/etc/slurm/slurm.conf";
	if (slurmconf_read(c.slurm_conf_path, &sc) < 0)
		return 1;
	check_ok("%s read as Slurm %s does (the release slurm-vm is built "
		 "against)",
		 c.slurm_conf_path,
		 slurm_release_str(release, rel, sizeof(rel)));
	vm_path = vmconf_default_path();
	if (access(vm_path, F_OK) < 0 && errno == ENOENT) {
		snprintf(fix, sizeof(fix),
			 "cp %s/vm.conf.example %s and replace its "
			 "@PLACEHOLDERS@ (vm.conf(5))",
			 EXAMPLES_DIR, vm_path);
		check_problem(&c, fix,
			      "%s does not exist: every VM job is refused and "
			      "the prolog drains the node (the checks below "
			      "use vm.conf's defaults)",
			      vm_path);
		vmconf_load(&vc, NULL);
	} else if (vmconf_load(&vc, vm_path) < 0) {
		check_problem(&c,
			      "correct the lines named above (see vm.conf(5))",
			      "%s does not parse", vm_path);
	} else {
		check_ok("%s parses", vm_path);
	}
	check_scripts(&c, &sc, release);
	check_spool_dir(&c, &sc, node);
	check_timeouts(&c, &sc, &vc, release);
	check_adoption(&sc, &vc, release, node);
	check_scheduling(&c, &sc);
	check_plugstack(&c, &sc);
	check_gres_files(&c, &sc, &vc, node, release);
	check_ibvf_plugin(&c, &sc, &vc);
	check_pmix(&c, &sc, release);
	check_catalog(&c, &vc);
	check_job_network(&c, &sc, &vc);
	check_ib_partitions(&c, &vc);
	check_shares(&c, &vc);
	check_libvirt_dir(&c, libvirt_dir);
	if (c.problems)
		printf("%u problem%s to fix\n", c.problems,
		       c.problems == 1 ? "" : "s");
	else
		printf("no problems\n");
	vmconf_free(&vc);
	slurmconf_free(&sc);
	return c.problems ? 1 : 0;
}
