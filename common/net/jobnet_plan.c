/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net/jobnet.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"

/* A NodeAddr: a unicast IPv4 or IPv6 address, normalised into @out. */
static int parse_node_addr(const char *s, int *family, char *out)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (!s || strlen(s) >= JOBNET_ADDR_MAX)
		return -EINVAL;
	if (inet_pton(AF_INET, s, buf) == 1) {
		uint32_t a = ntohl(((struct in_addr *)buf)->s_addr);

		/* unspecified, loopback, multicast and broadcast */
		if (a == 0 || (a >> 24) == 127 || (a >> 28) == 0xe ||
		    a == 0xffffffff)
			return -EINVAL;
		*family = AF_INET;
	} else if (inet_pton(AF_INET6, s, buf) == 1) {
		struct in6_addr *a6 = (struct in6_addr *)buf;

		if (IN6_IS_ADDR_UNSPECIFIED(a6) || IN6_IS_ADDR_LOOPBACK(a6) ||
		    IN6_IS_ADDR_MULTICAST(a6) || IN6_IS_ADDR_V4MAPPED(a6))
			return -EINVAL;
		*family = AF_INET6;
	} else {
		return -EINVAL;
	}
	return inet_ntop(*family, buf, out, JOBNET_ADDR_MAX) ? 0 : -EINVAL;
}

/* Node @i's own name or NodeAddr being unusable is that node's fault
 * (-ENODEV on that node, -EINVAL on its peers): each node of the job drains
 * itself only. */
static int plan_nodes(struct jobnet_plan *p, const char *const *names,
		      const char *const *addrs)
{
	for (size_t i = 0; i < p->n_nodes; i++) {
		struct jobnet_node *nd = &p->nodes[i];
		int own = i == p->self ? ENODEV : EINVAL;
		int family;

		if (!str_is_safe_name(names[i], JOBNET_NAME_MAX))
			return log_errno(own,
					 "job network: node %zu of the job has "
					 "an unusable name",
					 i);
		if (parse_node_addr(addrs[i], &family, nd->addr) < 0)
			return log_errno(own,
					 "job network: node %s has an "
					 "unusable NodeAddr (a unicast IP "
					 "address is needed); fix slurm.conf",
					 names[i]);
		if (i == 0)
			p->family = family;
		if (family != p->family)
			return log_errno(EINVAL,
					 "job network: node %s's NodeAddr %s "
					 "is not of the same IP version as "
					 "the other nodes'",
					 names[i], nd->addr);
		snprintf(nd->name, sizeof(nd->name), "%s", names[i]);
		for (size_t k = 0; k < i; k++) {
			if (strcasecmp(p->nodes[k].name, nd->name) == 0)
				return log_errno(EINVAL,
						 "job network: node %s is "
						 "twice in the job's node list",
						 nd->name);
			/* Two nodes behind one address cannot be told
			 * apart by the VXLAN forwarding entries. */
			if (strcmp(p->nodes[k].addr, nd->addr) == 0)
				return log_errno(EINVAL,
						 "job network: nodes %s and %s "
						 "share NodeAddr %s",
						 p->nodes[k].name, nd->name,
						 nd->addr);
		}
		/* Locally administered unicast: 02, the job, the index. */
		nd->mac[0] = 0x02;
		nd->mac[1] = (uint8_t)(p->job_id >> 16);
		nd->mac[2] = (uint8_t)(p->job_id >> 8);
		nd->mac[3] = (uint8_t)p->job_id;
		nd->mac[4] = (uint8_t)(i >> 8);
		nd->mac[5] = (uint8_t)i;
	}
	return 0;
}

static int plan_mtu(const struct vmconf *conf, struct jobnet_plan *p,
		    unsigned underlay_mtu)
{
	unsigned over =
		p->family == AF_INET6 ? JOBNET_VXLAN_OVER6 : JOBNET_VXLAN_OVER4;
	unsigned max = underlay_mtu > over ? underlay_mtu - over : 0;

	p->mtu = conf->jobnet_mtu ? conf->jobnet_mtu : max;
	if (p->mtu < 1280 || p->mtu > max)
		return log_errno(ENODEV,
				 "job network: MTU %u does not fit: the "
				 "underlay %s carries %u, VXLAN needs %u of "
				 "it and guests at least 1280; fix "
				 "JobNetworkMtu= or the underlay's MTU",
				 p->mtu, p->underlay, underlay_mtu, over);
	return 0;
}

int jobnet_plan(const struct vmconf *conf, uint32_t job_id,
		const char *const *names, const char *const *addrs, size_t n,
		size_t self, unsigned underlay_mtu, struct jobnet_plan *plan)
{
	struct jobnet_plan p = { .job_id = job_id,
				 .self = self,
				 .n_nodes = n,
				 .prefix = conf->jobnet_prefix };
	uint64_t hosts = (1ull << (32 - conf->jobnet_prefix)) - 2;
	uint64_t range =
		(uint64_t)conf->jobnet_vni_max - conf->jobnet_vni_min + 1;
	int r;

	memset(plan, 0, sizeof(*plan));
	if (!conf->jobnet_underlay || conf->jobnet_vni_min == 0 ||
	    !str_is_safe_name(conf->jobnet_underlay, JOBNET_IFNAME_MAX - 1))
		return log_errno(ENODEV,
				 "job network: JobNetworkUnderlay= or "
				 "JobNetworkVni= is unusable; fix vm.conf");
	if (n == 0 || self >= n)
		return log_errno(EINVAL, "job network: node %zu of %zu nodes",
				 self, n);
	/* The user chose the job's size. */
	if (n > JOBNET_MAX_NODES || n > hosts)
		return log_errno(E2BIG,
				 "job network: %zu nodes do not fit "
				 "JobNetworkSubnet=%s",
				 n, conf->jobnet_subnet_text);
	/* Jobs whose ids differ by a multiple of the range share a VNI:
	 * vm.conf(5) asks for a range at least as wide as MaxJobId. */
	p.vni_min = conf->jobnet_vni_min;
	p.vni_range = (uint32_t)range;
	p.vni = jobnet_vni_of(&p, job_id);
	snprintf(p.underlay, sizeof(p.underlay), "%s", conf->jobnet_underlay);
	snprintf(p.bridge, sizeof(p.bridge), "svmb%08x", job_id);
	snprintf(p.vxlan, sizeof(p.vxlan), "svmx%08x", job_id);
	snprintf(p.tap, sizeof(p.tap), "svmt%08x", job_id);
	snprintf(p.table, sizeof(p.table), "svm_job_%u", job_id);
	p.nodes = calloc(n, sizeof(*p.nodes));
	if (!p.nodes)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		p.nodes[i].ip = conf->jobnet_subnet + (uint32_t)i + 1;
	r = plan_nodes(&p, names, addrs);
	if (r == 0)
		r = plan_mtu(conf, &p, underlay_mtu);
	if (r < 0) {
		jobnet_plan_free(&p);
		return r;
	}
	*plan = p;
	return 0;
}

uint32_t jobnet_vni_of(const struct jobnet_plan *plan, uint32_t job_id)
{
	return plan->vni_min + job_id % plan->vni_range;
}

int jobnet_vni_holder(const struct jobnet_plan *plan,
		      const char *const *ifnames, size_t n, uint32_t *holder)
{
	for (size_t i = 0; i < n; i++) {
		unsigned long job;
		char *end;

		/* svmx<job in 8 hex digits>, as jobnet_plan() names it */
		if (strncmp(ifnames[i], "svmx", 4) != 0 ||
		    strlen(ifnames[i]) != 12)
			continue;
		job = strtoul(ifnames[i] + 4, &end, 16);
		if (*end || job == plan->job_id ||
		    jobnet_vni_of(plan, (uint32_t)job) != plan->vni)
			continue;
		*holder = (uint32_t)job;
		return 1;
	}
	return 0;
}

void jobnet_plan_free(struct jobnet_plan *plan)
{
	free(plan->nodes);
	memset(plan, 0, sizeof(*plan));
}

void jobnet_mac_string(const struct jobnet_plan *plan, size_t i, char *buf)
{
	const uint8_t *m = plan->nodes[i].mac;

	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

void jobnet_ip_string(const struct jobnet_plan *plan, size_t i, char *buf)
{
	uint32_t a = plan->nodes[i].ip;

	snprintf(buf, 16, "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff,
		 (a >> 8) & 0xff, a & 0xff);
}

/* A document built with stdio; NULL when out of memory. */
struct doc {
	FILE *f;
	char *text;
	size_t len;
};

static FILE *doc_open(struct doc *d)
{
	d->text = NULL;
	d->f = open_memstream(&d->text, &d->len);
	return d->f;
}

static char *doc_close(struct doc *d)
{
	if (fclose(d->f) != 0 || !d->text) {
		free(d->text);
		return NULL;
	}
	return d->text;
}

char *jobnet_fdb_batch(const struct jobnet_plan *p)
{
	struct doc d;
	FILE *f = doc_open(&d);

	if (!f)
		return NULL;
	for (size_t i = 0; i < p->n_nodes; i++) {
		char mac[18];

		if (i == p->self)
			continue;
		jobnet_mac_string(p, i, mac);
		/* Head-end replication: broadcast and unknown unicast go to
		 * every peer; the peer's guest straight to its node. */
		fprintf(f,
			"fdb append 00:00:00:00:00:00 dev %s dst %s self "
			"permanent\n"
			"fdb add %s dev %s dst %s self permanent\n",
			p->vxlan, p->nodes[i].addr, mac, p->vxlan,
			p->nodes[i].addr);
	}
	return doc_close(&d);
}

char *jobnet_nft_script(const struct jobnet_plan *p)
{
	const char *ipkw = p->family == AF_INET6 ? "ip6" : "ip";
	char mac[18], ip[16];
	struct doc d;
	FILE *f = doc_open(&d);
	bool first = true;

	if (!f)
		return NULL;
	jobnet_mac_string(p, p->self, mac);
	jobnet_ip_string(p, p->self, ip);
	/* The guest's port: only its own MAC and IP, ARP included, and
	 * nothing but IPv4 and ARP (no IPv6, no VLAN tags). Nothing from the
	 * job's ports reaches the host (the input hook
	 * sees what the bridge passes up; "meta ibrname" needs a kernel
	 * module Debian's may lack). */
	fprintf(f,
		"table bridge %1$s {\n"
		"\tchain guest {\n"
		"\t\ttype filter hook prerouting priority -300; "
		"policy accept;\n"
		"\t\tiifname \"%2$s\" ether saddr != %3$s drop\n"
		"\t\tiifname \"%2$s\" ether type != { ip, arp } drop\n"
		"\t\tiifname \"%2$s\" ether type ip ip saddr != %4$s drop\n"
		"\t\tiifname \"%2$s\" ether type arp arp saddr ether != %3$s "
		"drop\n"
		"\t\tiifname \"%2$s\" ether type arp arp saddr ip != %4$s "
		"drop\n"
		"\t}\n"
		"\tchain host {\n"
		"\t\ttype filter hook input priority -300; policy accept;\n"
		"\t\tiifname { \"%2$s\", \"%5$s\" } drop\n"
		"\t}\n"
		"}\n",
		p->table, p->tap, mac, ip, p->vxlan);
	/* VXLAN has no authentication: this job's VNI is taken only from
	 * the job's other nodes, through the underlay. (Not "chain vxlan":
	 * nft 1.1, Debian 13, reads that word as its VXLAN keyword.) */
	fprintf(f,
		"table inet %1$s {\n"
		"\tchain underlay {\n"
		"\t\ttype filter hook input priority -300; policy accept;\n"
		"\t\tudp dport %2$u @th,96,24 %3$u iifname != \"%4$s\" drop\n"
		"\t\tudp dport %2$u @th,96,24 %3$u ",
		p->table, JOBNET_VXLAN_PORT, p->vni, p->underlay);
	if (p->n_nodes > 1) {
		fprintf(f, "%s saddr != { ", ipkw);
		for (size_t i = 0; i < p->n_nodes; i++) {
			if (i == p->self)
				continue;
			fprintf(f, "%s%s", first ? "" : ", ", p->nodes[i].addr);
			first = false;
		}
		fprintf(f, " } ");
	}
	fprintf(f, "drop\n\t}\n}\n");
	return doc_close(&d);
}

char *jobnet_tap_nft_script(const struct jobnet_plan *p)
{
	char mac[18], ip[16];
	struct doc d;
	FILE *f = doc_open(&d);

	if (!f)
		return NULL;
	jobnet_mac_string(p, p->self, mac);
	jobnet_ip_string(p, p->self, ip);
	/* On the tap itself, before the bridge: a bridge hands frames to
	 * the IEEE link-local groups 01:80:c2:00:00:0X to its ingress
	 * port's own IP stack without running its hooks. Only the guest's
	 * own IPv4 and ARP pass; nothing to those groups. */
	fprintf(f,
		"table netdev %1$s {\n"
		"\tchain tap {\n"
		"\t\ttype filter hook ingress device \"%2$s\" priority -500; "
		"policy drop;\n"
		"\t\tether saddr != %3$s drop\n"
		"\t\tether daddr 01:80:c2:00:00:00-01:80:c2:00:00:0f drop\n"
		"\t\tether type ip ip saddr %4$s accept\n"
		"\t\tether type arp arp saddr ether %3$s arp saddr ip %4$s "
		"accept\n"
		"\t}\n"
		"}\n",
		p->table, p->tap, mac, ip);
	return doc_close(&d);
}

char *jobnet_network_config(const struct jobnet_plan *p)
{
	char mac[18], ip[16];
	struct doc d;
	FILE *f = doc_open(&d);

	if (!f)
		return NULL;
	jobnet_mac_string(p, p->self, mac);
	jobnet_ip_string(p, p->self, ip);
	fprintf(f,
		"network:\n"
		"  version: 2\n"
		"  ethernets:\n"
		"    %s:\n"
		"      match:\n"
		"        macaddress: \"%s\"\n"
		"      set-name: %s\n"
		"      dhcp4: false\n"
		"      dhcp6: false\n"
		"      addresses:\n"
		"        - %s/%u\n"
		"      mtu: %u\n",
		JOBNET_GUEST_IFNAME, mac, JOBNET_GUEST_IFNAME, ip, p->prefix,
		p->mtu);
	return doc_close(&d);
}

char *jobnet_hosts(const struct jobnet_plan *p)
{
	struct doc d;
	FILE *f = doc_open(&d);

	if (!f)
		return NULL;
	for (size_t i = 0; i < p->n_nodes; i++) {
		char ip[16];

		jobnet_ip_string(p, i, ip);
		fprintf(f, "%s\t%s\n", ip, p->nodes[i].name);
	}
	return doc_close(&d);
}
