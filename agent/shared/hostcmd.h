/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Slurm commands from a --vm-batch script in the guest (doc/protocol.md,
 * "Slurm commands from a --vm-batch script").
 *
 * The batch session's PMI stream, unused by a batch script, carries frames
 * of the channel protocol between two small programs:
 *   - guest: slurm-vm-agent --host-commands DIR (the mux) listens on
 *     DIR/socket and puts DIR/srun, DIR/scontrol... (the agent binary under
 *     those names: the client) first in the script's PATH. Each client sends
 *     one EXEC (its argv, environment and cwd) and gets its command's
 *     output and EXIT back; the mux numbers the clients' sessions.
 *   - host: slurm-vm-exec --host-commands forks the server, which runs each
 *     command as the job user (it is the batch task's own process): only
 *     the Slurm commands below, found in its own PATH.
 */
#include <stdbool.h>

#define HOSTCMD_SOCKET "socket"
#define HOSTCMD_ENV    "SLURM_VM_HOSTCMD" /* the mux's socket, for clients */
#define HOSTCMD_MAX    64		  /* commands at once */

/* The Slurm commands a script in the guest may run on the host. */
extern const char *const hostcmd_names[];
bool hostcmd_is_name(const char *name);

/* Guest: run as one of hostcmd_names (argv[0]'s base name): the client. */
int hostcmd_client_main(int argc, char **argv);
/* Guest: --host-commands DIR, PMI_FD from the agent: sets DIR up, forks
 * the mux (which ends with the script, our parent) and returns 0 once the
 * socket listens. */
int hostcmd_mux_start(const char *dir);

/* Host: the server on @fd (one end of a socketpair), in a forked child of
 * slurm-vm-exec; never returns. */
_Noreturn void hostcmd_serve(int fd);
