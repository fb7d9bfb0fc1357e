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
 *   - guest, the server's bytes: Slurm hands every client the host's hwloc
 *     XML as job data (PMIX_LOCAL_TOPO), and Open MPI 4.1 loads that in
 *     preference to discovering the topology it runs on; it hands every
 *     client the host's scratch directories too (PMIX_TMPDIR, PMIX_NSDIR:
 *     PMIxCliTmpDirBase or TmpFS, and a directory of it per job and step),
 *     which Open MPI makes its session directory in, and which the user
 *     cannot make in a guest whose parents are root's (a share's). Both
 *     are paths and files of the host. pmixenv_hide_host_keys() renames
 *     those keys in the stream, so the guest's own topology wins and Open
 *     MPI makes its session directory where it does without a resource
 *     manager: under the task's TMPDIR in the guest, 0700, its own, per
 *     job and step (named by the namespace), removed at MPI_Finalize (with
 *     PMIX_TDIR_RMCLEAN hidden too) and anyway with the guest.
 *   - guest, the client's first bytes: pmixenv_client_ids() reads the uid
 *     and gid its psec "native" credential claims, so that a client the
 *     server will refuse (a task that changed its group) is told why.
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

/* The keys that carry a host's topology (an XML document or a
 * shared-memory file) or scratch directories to its clients, as PMIx 4.2
 * names them, and the longest. */
#define PMIXENV_HOST_KEYS    10
#define PMIXENV_HOST_KEY_MAX 17

/* The server's side of one connection as it goes by: a status word, the
 * client's index, then messages (a 16-byte header with the body's length,
 * the body). Keys never span messages, so holding back the few bytes that
 * may begin a key is safe inside a body (more of it is on the way) and
 * never needed at its end. */
struct pmixenv_key_hider {
	uint8_t state, got;
	uint8_t field[16];
	uint32_t body_left;
	uint8_t matched[PMIXENV_HOST_KEYS];
	uint8_t carry_len;
	uint8_t carry[PMIXENV_HOST_KEY_MAX];
	unsigned renamed;
};

/* Copies the next @len bytes of a server's stream at @in to @out (room for
 * @len + PMIXENV_HOST_KEY_MAX bytes) with each of those keys renamed to one
 * no client asks for ("pmix.ltopo" becomes "_mix.ltopo": not a reserved
 * key, so PMIx stores it as any application's); the lengths stay, so the
 * messages stay well-formed. Returns how many bytes @out holds; bytes that
 * may begin a key are held back until the next call. */
size_t pmixenv_hide_host_keys(struct pmixenv_key_hider *h, const uint8_t *in,
			      size_t len, uint8_t *out);

/* The first bytes a PMIx 4 client sends its server (on a 64-bit machine: a
 * 16-byte header, the psec module's name, the credential's length in
 * network order and, for "native", the uid and gid in host order). Returns
 * 1 with @uid and @gid, 0 while more bytes are needed, -EINVAL when they
 * are not a native credential. */
#define PMIXENV_HELLO_MAX 64
int pmixenv_client_ids(const uint8_t *buf, size_t len, uint32_t *uid,
		       uint32_t *gid);
