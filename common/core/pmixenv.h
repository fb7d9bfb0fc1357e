/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * PMIx across the guest channel (srun --mpi=pmix).
 *
 * Slurm's mpi/pmix runs the PMIx server in slurmstepd on the host. PMIx
 * 4.2's server listens on TCP 127.0.0.1 only and names itself to each task
 * in PMIX_SERVER_URI* as "<nspace>.<rank>;tcp4://127.0.0.1:<port>".
 *
 *   - host (slurm-vm-exec, the task's own process): pmixenv_server_port()
 *     reads the port from the task's environment; the connection to it is
 *     made as the job user, and only when the guest's client speaks.
 *   - guest (the agent): the task gets a listener on the guest's
 *     127.0.0.1 and pmixenv_guest() points every PMIX_SERVER_URI* at it;
 *     the client is forced to the gds "hash" (the server's default keeps
 *     the job's data in host shared memory, which does not reach a guest)
 *     and psec "native" (uid and primary gid, the job's); the host's
 *     topology (PMIX_HWLOC_*) and shared-memory store (PMIX_DSTORE_*) are
 *     dropped so the guest's own hwloc discovery wins.
 */
#include <stdbool.h>
#include <stdint.h>

#define PMIXENV_URI_PREFIX "PMIX_SERVER_URI"
#define PMIXENV_MAX	   16

/* 0 and @port from every PMIX_SERVER_URI* of @env (NULL-terminated
 * NAME=value strings), -ENOENT without any, -EINVAL when one is not
 * "<nspace>.<rank>;tcp4://127.0.0.1:<port>" or they name different ports. */
int pmixenv_server_port(char *const *env, uint16_t *port);

/* Whether the guest replaces or drops @entry (NAME=value) for a PMIx task. */
bool pmixenv_consumed(const char *entry);

/* Fills @out (PMIXENV_MAX + 1 slots) with malloc'd NAME=value strings for a
 * task whose PMIx server is at 127.0.0.1:@port in the guest: each
 * PMIX_SERVER_URI* of @env pointed there, PMIX_GDS_MODULE, PMIX_MCA_gds,
 * PMIX_SECURITY_MODE and PMIX_MCA_psec; NULL-terminated. Returns the count
 * or -ENOMEM (then @out holds nothing). */
int pmixenv_guest(char *const *env, uint16_t port, char **out);
void pmixenv_free(char **out);
