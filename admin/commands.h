/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * `slurm-vm` subcommands. Each is `int cmd_<name>(int argc, char **argv)`
 * with argv[0] the subcommand's name; it returns the exit status. Add one by
 * writing admin/cmd_<name>.c, declaring it here and adding a row to the table
 * in admin/slurm-vm.c.
 */
int cmd_gres(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_check_config(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_cleanup(int argc, char **argv);
int cmd_ib_partitions(int argc, char **argv);
int cmd_warm(int argc, char **argv);
