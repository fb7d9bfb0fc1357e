/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm: the admin tool. Dispatches to admin/cmd_*.c through one table.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "core/log.h"
#include "core/macro.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "gres", cmd_gres, "print gres.conf lines for this node's devices" },
	{ "plan", cmd_plan,
	  "print the domain XML and placement for a job (--seed-dir: its seed)" },
	{ "check-config", cmd_check_config,
	  "check slurm.conf, gres.conf, plugstack.conf and vm.conf, with fixes" },
	{ "list", cmd_list,
	  "this node's guests: job, user, job and guest state, devices" },
	{ "cleanup", cmd_cleanup,
	  "tear down the guests of ended jobs, as their epilog would" },
	{ "ib-partitions", cmd_ib_partitions,
	  "write OpenSM's partitions.conf: a partition per VM job (SM node)" },
	{ "warm", cmd_warm,
	  "list or drop this node's warm-start templates (BootMode=warm)" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: slurm-vm COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out, "\n`slurm-vm COMMAND --help` for its options; "
		     "see slurm-vm(8).\n");
}

int main(int argc, char **argv)
{
	log_open("slurm-vm");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("slurm-vm %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	log_error("unknown command \"%s\"", argv[1]);
	usage(stderr);
	return 2;
}
