/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Undoing a job's host changes: the journal (journal.h) replayed backwards.
 * Used by the epilog, by the prolog when a boot fails, and by `slurm-vm
 * cleanup`. Every step is idempotent and a failed step does not stop the
 * others; the result says which failed and whether the node is unsafe (a
 * device that could not be returned).
 *
 * Verbs: OVERLAY <path>, NVRAM <path> (a UEFI guest's variables; both only
 * inside OverlayDir), SEED <name in the state dir: NAME.iso and NAME/>,
 * DETACH <PCI address> (DeviceBinding=managed: reattached to its host
 * driver; failing that, the node is unsafe), DEVOWNER <device file> <uid>
 * <gid> <octal mode> (a VFIO group file given to the job user: put back,
 * then the user's processes still holding it killed; failing either, the
 * node is unsafe), DOMAIN <name>, RELAY <pidfile in the
 * state dir>, VIRTIOFSD <virtiofsd-I.pid in the state dir: share I's
 * virtiofsd stopped, its pid file and sock/virtiofsd-I.sock deleted>, and the
 * job network's NETLINK <ifname> and NFT <family> <table> (jobnet.h).
 *
 * A guest that could not be stopped (DOMAIN failed) may still run: the
 * records that keep it apart from other jobs (NFT, NETLINK, IBGUID,
 * IBRECORD) are then left as they are (counted in kept) for a later replay.
 *
 * Those records name their bridge, VXLAN device, tables and partition
 * record by the job id and their VFs by address, not by incarnation: a
 * requeued job's later incarnation on this node makes the same ones. Each
 * is undone by the last incarnation's journal that holds it: replaying
 * incarnation R, a record that the journal of a later one (its state here,
 * not torn down) also holds is left to that one (counted in yielded).
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "job/vmconf.h"

struct guest;

#define TEARDOWN_TIMED_STEPS 16

/* Share I's virtiofsd, in the state directory: its pid file ("PID
 * START_TIME"), listening socket and log. */
#define VIRTIOFSD_PID_FMT  "virtiofsd-%u.pid"
#define VIRTIOFSD_SOCK_FMT "sock/virtiofsd-%u.sock"
#define VIRTIOFSD_LOG_FMT  "virtiofsd-%u.log"
/* Its log's bound: virtiofsd (the user's, who may trace it) writes into a
 * pipe, root copies that much (prolog/virtiofs.c). */
#define VIRTIOFSD_LOG_MAX (1 << 20)

/* One undone journal record and how long undoing it took, for the logs. */
struct teardown_step_time {
	char verb[16];
	double seconds;
	int error; /* 0 or -errno */
};

struct teardown_result {
	unsigned steps;
	unsigned failed;
	unsigned kept;	  /* isolation records left while the guest may run */
	unsigned yielded; /* isolation records left to a later incarnation */
	bool node_unsafe; /* a guest may still run and hold its devices */
	struct teardown_step_time timed[TEARDOWN_TIMED_STEPS]; /* the first */
	unsigned n_timed;
};

int teardown_replay(const struct vmconf *conf, int state_fd, bool keep,
		    struct teardown_result *res);
/* The replay of guest @g's journal (the epilog, the prolog's reclaim,
 * `slurm-vm cleanup`): the records a later incarnation of @g's job holds
 * too are left to it. */
int teardown_replay_guest(const struct vmconf *conf, int state_fd,
			  const struct guest *g, bool keep,
			  struct teardown_result *res);
/* The files a torn-down guest kept for --vm-keep (OVERLAY, NVRAM, SEED)
 * deleted; no other record is undone again: its devices went back at the
 * teardown and may be another job's now. */
int teardown_kept_files(const struct vmconf *conf, int state_fd,
			struct teardown_result *res);
/* The guest's own records undone (DOMAIN, RELAY, VIRTIOFSD, OVERLAY), the
 * rest kept: a warm start's restored guest that cannot be the job's goes
 * and its virtiofsd with it, so the cold boot starts from a clean state
 * on the job's network and devices. */
int teardown_guest_only(const struct vmconf *conf, int state_fd,
			struct teardown_result *res);
