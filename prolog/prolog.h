/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* State of one prolog run, shared by its phases. */
#include "alloc.h"
#include "vm/domain.h"
#include "job/image.h"
#include "net/jobnet.h"
#include "hw/placement.h"
#include "vm/reclaim.h"
#include "job/request.h"
#include "job/vmconf.h"

#define DOMAIN_NAME_PREFIX GUEST_DOMAIN_PREFIX

enum prolog_result {
	PROLOG_OK = 0,
	PROLOG_JOB_FAULT,  /* the job fails, the node stays up */
	PROLOG_NODE_FAULT, /* Slurm drains the node */
};

struct prolog {
	struct vmconf conf;
	struct vm_request req;
	struct image_spec spec;
	struct image_chain chain;
	struct job_alloc alloc;
	struct topology *topo;
	struct plan plan;
	struct jobnet_plan net; /* JobNetwork=vxlan: valid when has_net */
	bool has_net;
	/* the shares' transport in effect (share_transport_resolve): 9p or
	 * virtiofs, never auto */
	enum shared_dir_transport share_transport;
	/* virtiofs: share i's virtiofsd socket, an absolute path
	 * (prolog_virtiofs); NULL-terminated, NULL before */
	char **share_sockets;
	/* BootTimeout's end (clock_now_s()), set as the boot starts: every
	 * wait for a guest, a warm template's and a cold boot after a failed
	 * restore too, ends by it, so a user cannot make the prolog outlast
	 * the budget check-config asks for (issue #41) */
	double boot_deadline;

	char state_name[64]; /* job-<id>.<restart> */
	char *state_path;
	int state_fd; /* -1 until state_dir_create() */
	bool reason_recorded;
	char reason[512]; /* the recorded reason's first line */
};

/* state.c: the job's state directory, its journal, its reason; it calls
 * no other file of the prolog. */

/* @name's path in the job's state directory, malloc'd; NULL: no memory. */
char *state_file(const struct prolog *p, const char *name);
/* Journals @verb @arg before the host change it names (journal.h). */
int state_journal(struct prolog *p, enum journal_verb verb, const char *arg);

/* Creates the job's root-owned state directory. */
enum prolog_result state_dir_create(struct prolog *p);
/* Writes the reason the job's steps fail with (and the console tail). */
void state_record_reason(struct prolog *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Tells slurmctld (prolog/fault.c): a node fault drains this node with
 * @reason (when slurmd runs the prolog); a job fault in a job of several
 * nodes ends the whole job FAILED, @reason naming this node in its
 * AdminComment. */
void fault_report_node(uint32_t job_id, const char *reason);
void fault_report_job(uint32_t job_id, const char *reason);

/* DeviceAttach=vfio: DeviceBinding=managed detaches each planned function
 * to vfio-pci (journaled DETACH); prebound checks each is on vfio-pci and
 * its group is held by nobody. A failure is the node's. */
enum prolog_result prolog_bind_devices(struct prolog *p);

/* IbPartitions=yes: the job's GUIDs on each of its InfiniBand VFs here
 * (journaled IBGUID with the old values) and the record for the subnet
 * manager's side (IBRECORD). A VF that cannot take GUIDs (ConnectX-3) is
 * the job's fault; sysfs refusing a write, the node's. */
enum prolog_result prolog_ib_partition(struct prolog *p);

/* JobNetwork=vxlan: the job's nodes and their NodeAddr from slurmctld,
 * then the job's bridge, VXLAN and filters here (journaled). slurmctld not
 * answering, more nodes than JobNetworkSubnet holds or a peer's unusable
 * NodeAddr is the job's fault; the underlay (missing, MTU too small), this
 * node's own NodeAddr, its vm.conf or the setup failing is the node's. */
enum prolog_result prolog_network(struct prolog *p);

/* SharedDirTransport=virtiofs (resolved): one Rust virtiofsd per share,
 * as the job user with its groups, on a socket in the state directory
 * (journaled VIRTIOFSD first); sets share_sockets. A failure is the
 * node's. Anything else: nothing. */
enum prolog_result prolog_virtiofs(struct prolog *p);

/* boot.c: the cold boot, and its pieces that the warm start (warm.c)
 * shares. */
struct boot_names {
	char name[96];
	char mac[18];
	char *console, *channel; /* in the state directory */
	struct domain_layer backing[IMAGE_CHAIN_MAX];
};
struct domain_params;
/* The domain's parameters a cold boot and a warm start share: name,
 * user, image chain, kernel, console, channel, NIC, vm.conf's, shares. */
void boot_domain_params(struct prolog *p, struct boot_names *n,
			struct domain_params *dp);
void boot_names_free(struct boot_names *n);
struct user_info;
/* The job user as this node's NSS knows them (user_info_load); unknown:
 * the job's fault, its reason recorded, -ESRCH. */
int boot_user_load(struct prolog *p, struct user_info *u);
void boot_domain_name(const struct prolog *p, char *name, size_t size);
/* qemu-img create @overlay over @base (@backing) or of its size alone. */
int boot_overlay_create(const char *overlay, const struct image_layer *base,
			bool backing, char *out, size_t outlen);
/* hv_create()'s @before_run for a guest with a job network: @arg is a
 * struct boot_tap_guard. */
struct boot_tap_guard {
	struct prolog *p;
	bool failed;
};
int boot_guard_tap(void *arg);
void boot_record_qemu(struct prolog *p, const char *name);
/* The relay; with @persona, the file of the job's identity it hands a
 * restored guest (slurm-vm-relay --persona). */
enum prolog_result boot_relay(struct prolog *p, const char *persona);
enum prolog_result boot_wait_ready(struct prolog *p, double t0);
/* Whole seconds left of BootTimeout (boot_deadline), 0 when it is over. */
unsigned boot_time_left(const struct prolog *p);

/* BootMode=warm (warm.c, doc/design.md section 7): restores the guest
 * from a template of its image and shape, built first when there is none.
 * PROLOG_OK with the guest ready, a fault as boot's, or WARM_COLD: it
 * cannot be (the reason logged), nothing of it is left, boot cold. */
#define WARM_COLD ((enum prolog_result)100)
enum prolog_result prolog_warm(struct prolog *p);

/* Overlay, NVRAM, seed, virtiofsd, domain, relay, then wait for the
 * agent; every host change journaled first. A job fault leaves the reason
 * in the state directory; what was made stays journaled (prolog_start
 * undoes it). */
enum prolog_result boot_cold(struct prolog *p);

/* start.c: devices, then BootMode=warm's restore (prolog_warm) or a cold
 * boot (boot_cold), a cold one too when the warm start cannot be, all
 * within BootTimeout (a watchdog kills the job's qemu past it, so
 * libvirt's calls end); a failed start is undone (the journal replayed).
 */
enum prolog_result prolog_start(struct prolog *p);
