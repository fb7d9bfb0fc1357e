/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Setting up and taking down a job's network on its node with iproute2 and
 * nft (run.h): both read a batch on stdin, so the whole network phase is a
 * handful of processes whatever the job's size, the same commands an admin
 * reads in the log and types to inspect, and no netlink/nftables library
 * joins what root links.
 */
#include "config.h"

#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/jobnet.h"
#include "job/journal.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "core/strutil.h"

#define IP_PATH	    "/usr/sbin/ip"
#define BRIDGE_PATH "/usr/sbin/bridge"
#define NFT_PATH    "/usr/sbin/nft"
#define NET_TIMEOUT 30

int jobnet_underlay_mtu(const char *ifname)
{
	_cleanup_close_ int fd = -1;
	struct ifreq ifr = { 0 };

	if (!str_is_safe_name(ifname, IFNAMSIZ - 1))
		return -EINVAL;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* An ioctl, not /sys: sysfs shows the namespace that mounted it. */
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
		return log_errno(ENODEV,
				 "job network: the underlay interface %s "
				 "(JobNetworkUnderlay=) does not exist on this "
				 "node; fix vm.conf or the node's network",
				 ifname);
	return ifr.ifr_mtu;
}

/* Runs a helper with @input as its stdin; logs its output on failure. */
static int run_tool(char *const argv[], const char *input, const char *what)
{
	char out[1024];
	int r;

	r = input ? run_wait_input(argv, input, NET_TIMEOUT, out, sizeof(out))
		  : run_wait(argv, NET_TIMEOUT, out, sizeof(out));
	if (r == 0)
		return 0;
	for (char *c = out; *c; c++)
		if (*c == '\n')
			*c = ' ';
	log_error("job network: %s failed (%s %d): %s", what,
		  r > 0 ? "exit" : "error", r, out);
	return -EIO;
}

static int journal_netlink(int state_fd, const char *ifname)
{
	const char *args[] = { ifname, NULL };

	return journal_append(state_fd, JOURNAL_NETLINK, args);
}

static int journal_nft(int state_fd, const char *family, const char *table)
{
	const char *args[] = { family, table, NULL };

	return journal_append(state_fd, JOURNAL_NFT, args);
}

/* One IPv6 setting of @ifname. Nothing to do on a kernel without IPv6.
 * /proc/sys/net is the caller's namespace's. */
static int set_ipv6_conf(const char *ifname, const char *key, const char *val)
{
	_cleanup_close_ int fd = -1;
	char path[128];

	if (access("/proc/sys/net/ipv6", F_OK) < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", ifname,
		 key);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		return log_errno(errno ?: EIO,
				 "job network: cannot set IPv6 %s of %s", key,
				 ifname);
	return 0;
}

/* IPv6 off before the device is up: no link-local address a guest could
 * reach. ("addrgenmode none" is refused when a link is created.) */
static int disable_ipv6(const char *ifname)
{
	return set_ipv6_conf(ifname, "disable_ipv6", "1");
}

/* Another job running here whose VXLAN device holds this job's VNI:
 * -EADDRINUSE naming it, the job's fault (its id), not the node's. */
static int check_vni_free(const struct jobnet_plan *p)
{
	struct if_nameindex *ifs = if_nameindex();
	_cleanup_free_ const char **names = NULL;
	uint32_t holder;
	size_t n = 0;
	int r;

	if (!ifs)
		return log_errno(errno, "job network: cannot list interfaces");
	while (ifs[n].if_name)
		n++;
	names = calloc(n ?: 1, sizeof(*names));
	if (!names) {
		if_freenameindex(ifs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = ifs[i].if_name;
	r = jobnet_vni_holder(p, names, n, &holder);
	if_freenameindex(ifs);
	if (r > 0)
		return log_errno(EADDRINUSE,
				 "job network: VNI %u is held by job %u "
				 "running on this node (job ids that differ "
				 "by a multiple of the JobNetworkVni= range "
				 "share a VNI); the admin can widen "
				 "JobNetworkVni= (vm.conf) or lower MaxJobId= "
				 "(slurm.conf) to its width",
				 p->vni, holder);
	return 0;
}

static int setup_links(const struct jobnet_plan *p)
{
	char *const argv[] = { IP_PATH, "-batch", "-", NULL };
	_cleanup_free_ char *cmds = NULL;

	if (asprintf(&cmds,
		     "link add name %1$s mtu %2$u type bridge\n"
		     "link add name %3$s mtu %2$u type vxlan "
		     "id %4$u dev %5$s local %6$s dstport %7$u nolearning\n"
		     "link set dev %3$s master %1$s\n",
		     p->bridge, p->mtu, p->vxlan, p->vni, p->underlay,
		     p->nodes[p->self].addr, JOBNET_VXLAN_PORT) < 0)
		return -ENOMEM;
	return run_tool(argv, cmds, "creating the bridge and VXLAN device");
}

static int setup_up(const struct jobnet_plan *p)
{
	char *const argv[] = { IP_PATH, "-batch", "-", NULL };
	_cleanup_free_ char *cmds = NULL;

	/* The MTU set again once the bridge has a port: set by hand, it no
	 * longer follows its smallest port. libvirt gives the tap the
	 * bridge's. */
	if (asprintf(&cmds,
		     "link set dev %1$s mtu %3$u up\nlink set dev %2$s up\n",
		     p->bridge, p->vxlan, p->mtu) < 0)
		return -ENOMEM;
	return run_tool(argv, cmds, "bringing the job network up");
}

int jobnet_setup(const struct jobnet_plan *p, int state_fd)
{
	char *const bridge_argv[] = { BRIDGE_PATH, "-batch", "-", NULL };
	char *const nft_argv[] = { NFT_PATH, "-f", "-", NULL };
	_cleanup_free_ char *fdb = NULL, *nft = NULL;
	int r;

	r = jobnet_underlay_mtu(p->underlay);
	if (r < 0)
		return r;
	fdb = jobnet_fdb_batch(p);
	nft = jobnet_nft_script(p);
	if (!fdb || !nft)
		return -ENOMEM;
	r = check_vni_free(p);
	if (r < 0)
		return r;
	/* Journaled before they are made: undoing what is not there is
	 * success. */
	if ((r = journal_netlink(state_fd, p->bridge)) < 0 ||
	    (r = journal_netlink(state_fd, p->vxlan)) < 0)
		return r;
	r = setup_links(p);
	if (r < 0)
		return r;
	if ((r = disable_ipv6(p->bridge)) < 0 ||
	    (r = disable_ipv6(p->vxlan)) < 0)
		return r;
	if (*fdb && (r = run_tool(bridge_argv, fdb,
				  "adding the peers' forwarding entries")) < 0)
		return r;
	/* The filters before anything is up: no window without them. */
	if ((r = journal_nft(state_fd, "bridge", p->table)) < 0 ||
	    (r = journal_nft(state_fd, "inet", p->table)) < 0)
		return r;
	r = run_tool(nft_argv, nft, "loading the job's nftables tables");
	if (r < 0)
		return r;
	return setup_up(p);
}

int jobnet_guard_tap(const struct jobnet_plan *p, int state_fd)
{
	char *const nft_argv[] = { NFT_PATH, "-f", "-", NULL };
	_cleanup_free_ char *nft = jobnet_tap_nft_script(p);
	int r;

	if (!nft)
		return -ENOMEM;
	if (if_nametoindex(p->tap) == 0)
		return log_errno(ENODEV,
				 "job network: the guest's tap %s is "
				 "not there",
				 p->tap);
	/* No link-local address, no router advertisement taken from the
	 * guest (libvirt made the tap with IPv6 on). */
	if ((r = set_ipv6_conf(p->tap, "accept_ra", "0")) < 0 ||
	    (r = disable_ipv6(p->tap)) < 0)
		return r;
	if ((r = journal_nft(state_fd, "netdev", p->table)) < 0)
		return r;
	return run_tool(nft_argv, nft,
			"loading the guest tap's nftables table");
}

static bool is_job_ifname(const char *s)
{
	return str_is_safe_name(s, IFNAMSIZ - 1) && strncmp(s, "svm", 3) == 0;
}

static int undo_netlink(const char *ifname)
{
	char *const argv[] = { IP_PATH, "link",		"del",
			       "dev",	(char *)ifname, NULL };

	/* The journal is root's, but only delete the suite's devices. */
	if (!is_job_ifname(ifname))
		return -EBADMSG;
	if (if_nametoindex(ifname) == 0)
		return 0;
	if (run_tool(argv, NULL, "deleting a job network device") < 0 &&
	    if_nametoindex(ifname) != 0)
		return log_errno(EIO, "job network: %s is still there", ifname);
	return 0;
}

static int undo_nft(const char *family, const char *table)
{
	char *const del[] = { NFT_PATH,	      "delete",	     "table",
			      (char *)family, (char *)table, NULL };
	char *const list[] = { NFT_PATH,       "list",	      "table",
			       (char *)family, (char *)table, NULL };
	unsigned id;

	if ((strcmp(family, "bridge") != 0 && strcmp(family, "inet") != 0 &&
	     strcmp(family, "netdev") != 0) ||
	    strncmp(table, "svm_job_", 8) != 0 ||
	    str_to_uint(table + 8, &id) < 0)
		return -EBADMSG;
	if (run_wait(del, NET_TIMEOUT, NULL, 0) == 0)
		return 0;
	/* nft 1.0.6 has no "destroy": a table that cannot be listed is
	 * gone. */
	if (run_wait(list, NET_TIMEOUT, NULL, 0) != 0)
		return 0;
	return log_errno(EIO, "job network: cannot delete nftables table %s %s",
			 family, table);
}

int jobnet_undo(enum journal_verb verb, char *const *args, size_t n_args)
{
	if (verb == JOURNAL_NETLINK && n_args == 1)
		return undo_netlink(args[0]);
	if (verb == JOURNAL_NFT && n_args == 2)
		return undo_nft(args[0], args[1]);
	if (verb == JOURNAL_NETLINK || verb == JOURNAL_NFT)
		return -EBADMSG;
	return 1;
}
