/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * A job's private network on one node (JobNetwork=vxlan): a bridge with no
 * host address, a VXLAN device on the underlay with static forwarding
 * entries for every peer node of the job, the guest's tap locked to its
 * MAC and IP by an nftables table of the job's own.
 *
 * The plan is pure: from vm.conf, the job id, the job's nodes in Slurm's
 * order with their NodeAddr and this node's index it derives every name,
 * address and document. Setting it up (root) journals each change before it
 * makes it (journal.h verbs NETLINK <ifname> and NFT <family> <table>);
 * jobnet_undo() takes them back, idempotently.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/journal.h"
#include "job/vmconf.h"

#define JOBNET_MAX_NODES    65534
#define JOBNET_NAME_MAX	    64 /* a node name (hostname label rules) */
#define JOBNET_ADDR_MAX	    46 /* INET6_ADDRSTRLEN */
#define JOBNET_IFNAME_MAX   16 /* IFNAMSIZ */
#define JOBNET_VXLAN_PORT   4789
#define JOBNET_VXLAN_OVER4  50 /* VXLAN over IPv4: outer Ethernet excluded */
#define JOBNET_VXLAN_OVER6  70
#define JOBNET_GUEST_IFNAME "job0" /* the guest's name for it */

struct jobnet_node {
	char name[JOBNET_NAME_MAX + 1];
	char addr[JOBNET_ADDR_MAX]; /* NodeAddr, normalised */
	uint8_t mac[6];		    /* its guest's */
	uint32_t ip;		    /* its guest's, host byte order */
};

struct jobnet_plan {
	uint32_t job_id;
	uint32_t vni;
	uint32_t vni_min; /* JobNetworkVni= */
	uint32_t vni_range;
	unsigned mtu;
	int family; /* AF_INET or AF_INET6: the underlay's */
	unsigned prefix;
	char underlay[JOBNET_IFNAME_MAX];
	char bridge[JOBNET_IFNAME_MAX];
	char vxlan[JOBNET_IFNAME_MAX];
	char tap[JOBNET_IFNAME_MAX];
	char table[32]; /* the nftables tables' name (bridge and inet) */
	size_t self;	/* this node's index in nodes */
	size_t n_nodes;
	struct jobnet_node *nodes;
};

/* @names and @addrs: the job's @n nodes in Slurm's order and their NodeAddr;
 * @self: this node's index; @underlay_mtu: used when JobNetworkMtu=0.
 * Every input is checked as hostile; failures are logged and say whose
 * fault they are: -ENODEV this node's (its vm.conf, its underlay's MTU,
 * its own name or NodeAddr), -E2BIG the job's (more nodes than
 * JobNetworkSubnet holds), -EINVAL another node's or Slurm's (a peer's
 * name or NodeAddr, duplicates). */
int jobnet_plan(const struct vmconf *conf, uint32_t job_id,
		const char *const *names, const char *const *addrs, size_t n,
		size_t self, unsigned underlay_mtu, struct jobnet_plan *plan);
void jobnet_plan_free(struct jobnet_plan *plan);

/* "02:xx:..." of node @i's guest into @buf (18 bytes). */
void jobnet_mac_string(const struct jobnet_plan *plan, size_t i, char *buf);
/* "A.B.C.D" of node @i's guest into @buf (16 bytes). */
void jobnet_ip_string(const struct jobnet_plan *plan, size_t i, char *buf);

/* The documents, malloc'd (NULL: out of memory): `bridge -batch` lines for
 * every peer, the nft script of the job's tables, the cloud-init
 * network-config v2 of this node's guest and the /etc/hosts lines of the
 * job's guests. */
char *jobnet_fdb_batch(const struct jobnet_plan *plan);
char *jobnet_nft_script(const struct jobnet_plan *plan);
char *jobnet_network_config(const struct jobnet_plan *plan);
char *jobnet_hosts(const struct jobnet_plan *plan);
/* The nft script of the guest's tap (a netdev table whose ingress chain is
 * bound to the tap, so it can only be loaded once the tap exists). */
char *jobnet_tap_nft_script(const struct jobnet_plan *plan);

/* The VNI of job @job_id under @plan's JobNetworkVni= range. */
uint32_t jobnet_vni_of(const struct jobnet_plan *plan, uint32_t job_id);
/* Another job among the network devices @ifnames whose VXLAN device holds
 * @plan's VNI (jobs whose ids differ by a multiple of the range share one):
 * 1 with its id in @holder, else 0. */
int jobnet_vni_holder(const struct jobnet_plan *plan,
		      const char *const *ifnames, size_t n, uint32_t *holder);

/* The underlay's MTU, or -ENODEV (a node fault, logged naming it). */
int jobnet_underlay_mtu(const char *ifname);
/* Creates the bridge, the VXLAN device, its forwarding entries and the
 * nftables tables, each journaled in @state_fd before it is made. Fails
 * with the reason logged; what was made stays journaled for jobnet_undo().
 * -EADDRINUSE: another job running here holds the VNI (the job's fault,
 * logged naming that job). */
int jobnet_setup(const struct jobnet_plan *plan, int state_fd);
/* Locks the guest's tap, made by libvirt, before the guest runs: IPv6 and
 * router advertisements off on it, and a netdev table (journaled) whose
 * ingress chain admits only the guest's own IPv4 and ARP, before the
 * bridge sees a frame. */
int jobnet_guard_tap(const struct jobnet_plan *plan, int state_fd);
/* Undoes one journal record (NETLINK, NFT); 1 when @verb is not ours.
 * Something already gone is success. */
int jobnet_undo(enum journal_verb verb, char *const *args, size_t n_args);
