/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job network's plan (common/net/jobnet.h) and its vm.conf keys. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "net/jobnet.h"
#include "core/log.h"
#include "job/vmconf.h"

static char last_error[2048];

static void capture_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR)
		snprintf(last_error, sizeof(last_error), "%s", msg);
}

static int load_text(struct vmconf *conf, const char *text)
{
	char path[] = "/tmp/jobnet-test-XXXXXX";
	int fd = mkstemp(path), r;
	FILE *f = fdopen(fd, "w");

	fputs(text, f);
	fclose(f);
	last_error[0] = '\0';
	r = vmconf_load(conf, path);
	unlink(path);
	return r;
}

static void vxlan_conf(struct vmconf *conf)
{
	assert_int_equal(load_text(conf, "JobNetwork=vxlan\n"
					 "JobNetworkUnderlay=eth0\n"
					 "JobNetworkVni=1000-1999\n"
					 "JobNetworkSubnet=10.9.0.0/16\n"),
			 0);
}

static void test_conf_defaults(void **state)
{
	struct vmconf conf;

	(void)state;
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	assert_int_equal(conf.job_network, JOB_NETWORK_NONE);
	assert_int_equal(conf.jobnet_vni_min, 100000);
	assert_int_equal(conf.jobnet_vni_max, 16000000);
	assert_int_equal(conf.jobnet_subnet, 0x0ac80000);
	assert_int_equal(conf.jobnet_prefix, 16);
	assert_int_equal(conf.jobnet_mtu, 0);
	assert_null(conf.jobnet_underlay);
	vmconf_free(&conf);
	vxlan_conf(&conf);
	assert_int_equal(conf.job_network, JOB_NETWORK_VXLAN);
	assert_int_equal(conf.jobnet_vni_min, 1000);
	assert_int_equal(conf.jobnet_subnet, 0x0a090000);
	vmconf_free(&conf);
}

static void test_conf_rejects(void **state)
{
	static const char *const bad[] = {
		"JobNetworkVni=0-5\n",
		"JobNetworkVni=5-3\n",
		"JobNetworkVni=1-16777216\n",
		"JobNetworkVni=7\n",
		"JobNetworkVni=-5\n",
		"JobNetworkVni=1--5\n",
		"JobNetworkSubnet=10.200.0.1/16\n",
		"JobNetworkSubnet=10.200.0.0/31\n",
		"JobNetworkSubnet=10.0.0.0/7\n",
		"JobNetworkSubnet=300.0.0.0/8\n",
		"JobNetworkSubnet=10.0.0.0\n",
		"JobNetworkSubnet=10.0.0.0/16x\n",
		"JobNetworkSubnet=fd00::/64\n",
		"JobNetworkMtu=1000\n",
		"JobNetworkMtu=70000\n",
		"JobNetwork=vxlan\n",
		"JobNetwork=vxlan\nJobNetworkUnderlay=eth0;rm\n",
		"JobNetwork=vxlan\nJobNetworkUnderlay=averylonginterface\n",
		"JobNetwork=bridge\n",
	};
	struct vmconf conf;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (load_text(&conf, bad[i]) == 0)
			fail_msg("accepted: %s", bad[i]);
		assert_true(strstr(last_error, "vm.conf") ||
			    strstr(last_error, "JobNetwork"));
		vmconf_free(&conf);
	}
}

static const char *const names3[] = { "n1", "n2", "n3" };
static const char *const addrs3[] = { "192.168.7.1", "192.168.7.2",
				      "192.168.7.3" };

static void test_plan_three_nodes(void **state)
{
	struct vmconf conf;
	struct jobnet_plan p;
	char *doc;

	(void)state;
	vxlan_conf(&conf);
	assert_int_equal(
		jobnet_plan(&conf, 4242, names3, addrs3, 3, 1, 9000, &p), 0);
	assert_int_equal(p.vni, 1000 + 4242 % 1000);
	assert_int_equal(p.mtu, 8950);
	assert_string_equal(p.bridge, "svmb00001092");
	assert_string_equal(p.vxlan, "svmx00001092");
	assert_string_equal(p.tap, "svmt00001092");
	doc = jobnet_fdb_batch(&p);
	assert_string_equal(
		doc,
		"fdb append 00:00:00:00:00:00 dev svmx00001092 dst 192.168.7.1 "
		"self permanent\n"
		"fdb add 02:00:10:92:00:00 dev svmx00001092 dst 192.168.7.1 "
		"self permanent\n"
		"fdb append 00:00:00:00:00:00 dev svmx00001092 dst 192.168.7.3 "
		"self permanent\n"
		"fdb add 02:00:10:92:00:02 dev svmx00001092 dst 192.168.7.3 "
		"self permanent\n");
	free(doc);
	doc = jobnet_hosts(&p);
	assert_string_equal(doc, "10.9.0.1\tn1\n10.9.0.2\tn2\n10.9.0.3\tn3\n");
	free(doc);
	doc = jobnet_network_config(&p);
	assert_string_equal(doc, "network:\n"
				 "  version: 2\n"
				 "  ethernets:\n"
				 "    job0:\n"
				 "      match:\n"
				 "        macaddress: \"02:00:10:92:00:01\"\n"
				 "      set-name: job0\n"
				 "      dhcp4: false\n"
				 "      dhcp6: false\n"
				 "      addresses:\n"
				 "        - 10.9.0.2/16\n"
				 "      mtu: 8950\n");
	free(doc);
	doc = jobnet_nft_script(&p);
	assert_non_null(strstr(doc, "table bridge svm_job_4242 {"));
	assert_non_null(strstr(doc, "iifname \"svmt00001092\" ether saddr != "
				    "02:00:10:92:00:01 drop"));
	assert_non_null(strstr(doc, "ip saddr != 10.9.0.2 drop"));
	assert_non_null(strstr(doc, "arp saddr ip != 10.9.0.2 drop"));
	assert_non_null(strstr(doc, "iifname { \"svmt00001092\", "
				    "\"svmx00001092\" } drop"));
	assert_non_null(strstr(doc, "udp dport 4789 @th,96,24 1242 ip saddr != "
				    "{ 192.168.7.1, 192.168.7.3 } drop"));
	free(doc);
	jobnet_plan_free(&p);
	vmconf_free(&conf);
}

/* Jobs 4242 and 5242 share VNI 1242 on a range of 1000: the second is
 * refused naming the first, whose VXLAN device is up on the node; its own
 * device, other jobs' and foreign names are no clash. */
static void test_vni_clash(void **state)
{
	const char *none[] = { "lo",	       "eth0",	       "svmx00001092",
			       "svmb0000147a", "svmx0000147b", "svmxzz00147a" };
	const char *held[] = { "lo", "svmx00001092", "svmt00001092" };
	struct vmconf conf;
	struct jobnet_plan p;
	uint32_t holder = 0;

	(void)state;
	vxlan_conf(&conf);
	assert_int_equal(
		jobnet_plan(&conf, 5242, names3, addrs3, 3, 1, 9000, &p), 0);
	assert_int_equal(p.vni, 1242);
	assert_int_equal(jobnet_vni_of(&p, 4242), 1242);
	assert_int_equal(jobnet_vni_holder(&p, held, 3, &holder), 1);
	assert_int_equal(holder, 4242);
	jobnet_plan_free(&p);
	assert_int_equal(
		jobnet_plan(&conf, 4242, names3, addrs3, 3, 1, 9000, &p), 0);
	assert_int_equal(jobnet_vni_holder(&p, none, 6, &holder), 0);
	jobnet_plan_free(&p);
	vmconf_free(&conf);
}

/* The guest's tap: its own MAC, IPv4 and ARP only, nothing to the IEEE
 * link-local groups; VXLAN only through the underlay. */
static void test_tap_script(void **state)
{
	struct vmconf conf;
	struct jobnet_plan p;
	char *doc;

	(void)state;
	vxlan_conf(&conf);
	assert_int_equal(
		jobnet_plan(&conf, 4242, names3, addrs3, 3, 1, 9000, &p), 0);
	doc = jobnet_tap_nft_script(&p);
	assert_string_equal(
		doc,
		"table netdev svm_job_4242 {\n"
		"\tchain tap {\n"
		"\t\ttype filter hook ingress device \"svmt00001092\" "
		"priority -500; policy drop;\n"
		"\t\tether saddr != 02:00:10:92:00:01 drop\n"
		"\t\tether daddr 01:80:c2:00:00:00-01:80:c2:00:00:0f drop\n"
		"\t\tether type ip ip saddr 10.9.0.2 accept\n"
		"\t\tether type arp arp saddr ether 02:00:10:92:00:01 arp "
		"saddr ip 10.9.0.2 accept\n"
		"\t}\n"
		"}\n");
	free(doc);
	doc = jobnet_nft_script(&p);
	assert_non_null(strstr(doc, "udp dport 4789 @th,96,24 1242 iifname != "
				    "\"eth0\" drop\n"));
	free(doc);
	jobnet_plan_free(&p);
	vmconf_free(&conf);
}

/* Names fit IFNAMSIZ for every job id; MACs are locally administered
 * unicast; a one-node job accepts VXLAN from no one. */
static void test_plan_limits(void **state)
{
	static const char *const name1[] = { "only" };
	static const char *const addr1[] = { "fd00::1" };
	struct vmconf conf;
	struct jobnet_plan p;
	char mac[18], *doc;

	(void)state;
	vxlan_conf(&conf);
	assert_int_equal(
		jobnet_plan(&conf, 0xffffffffu, name1, addr1, 1, 0, 1500, &p),
		0);
	assert_true(strlen(p.bridge) < 16 && strlen(p.vxlan) < 16 &&
		    strlen(p.tap) < 16);
	assert_int_equal(p.mtu, 1430); /* IPv6 underlay: 70 bytes */
	jobnet_mac_string(&p, 0, mac);
	assert_string_equal(mac, "02:ff:ff:ff:00:00");
	assert_int_equal(p.nodes[0].mac[0] & 3, 2);
	doc = jobnet_fdb_batch(&p);
	assert_string_equal(doc, "");
	free(doc);
	doc = jobnet_nft_script(&p);
	assert_non_null(strstr(doc, "@th,96,24 1295 drop"));
	free(doc);
	jobnet_plan_free(&p);
	vmconf_free(&conf);
}

static void test_plan_hostile(void **state)
{
	static const struct {
		const char *n[2], *a[2];
	} bad[] = {
		{ { "n1", "n;2" }, { "10.0.0.1", "10.0.0.2" } },
		{ { "n1", "-n" }, { "10.0.0.1", "10.0.0.2" } },
		{ { "n1", "" }, { "10.0.0.1", "10.0.0.2" } },
		{ { "n1", "n\nx" }, { "10.0.0.1", "10.0.0.2" } },
		{ { "n1", "N1" }, { "10.0.0.1", "10.0.0.2" } },
		{ { "n1", "n2" }, { "10.0.0.1", "10.0.0.1" } },
		{ { "n1", "n2" }, { "10.0.0.1", "10.0.0" } },
		{ { "n1", "n2" }, { "10.0.0.1", "127.0.0.1" } },
		{ { "n1", "n2" }, { "10.0.0.1", "224.0.0.1" } },
		{ { "n1", "n2" }, { "10.0.0.1", "0.0.0.0" } },
		{ { "n1", "n2" }, { "10.0.0.1", "255.255.255.255" } },
		{ { "n1", "n2" }, { "10.0.0.1", "10.0.0.2 dst 1.1.1.1" } },
		{ { "n1", "n2" }, { "10.0.0.1", "fd00::2" } },
		{ { "n1", "n2" }, { "10.0.0.1", "::ffff:10.0.0.2" } },
		{ { "n1", "n2" }, { "10.0.0.1", NULL } },
	};
	char longname[80];
	const char *ln[] = { "n1", longname },
		   *la[] = { "10.0.0.1", "10.0.0.2" };
	struct vmconf conf;
	struct jobnet_plan p;

	(void)state;
	vxlan_conf(&conf);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		last_error[0] = '\0';
		if (jobnet_plan(&conf, 7, bad[i].n, bad[i].a, 2, 0, 9000, &p) !=
		    -EINVAL)
			fail_msg("accepted case %zu", i);
		assert_non_null(strstr(last_error, "job network"));
	}
	memset(longname, 'a', 65);
	longname[65] = '\0';
	assert_int_equal(jobnet_plan(&conf, 7, ln, la, 2, 0, 9000, &p),
			 -EINVAL);
	/* self out of range, no nodes, underlay too small for 1280 */
	assert_int_equal(jobnet_plan(&conf, 7, ln, la, 1, 1, 9000, &p),
			 -EINVAL);
	assert_int_equal(jobnet_plan(&conf, 7, ln, la, 0, 0, 9000, &p),
			 -EINVAL);
	longname[64] = '\0';
	/* The underlay's MTU is this node's fault (-ENODEV: drained). */
	assert_int_equal(jobnet_plan(&conf, 7, ln, la, 2, 0, 1300, &p),
			 -ENODEV);
	assert_non_null(strstr(last_error, "eth0"));
	assert_int_equal(jobnet_plan(&conf, 7, ln, la, 2, 0, 9000, &p), 0);
	jobnet_plan_free(&p);
	vmconf_free(&conf);
	/* An explicit MTU above what the underlay carries */
	assert_int_equal(load_text(&conf, "JobNetwork=vxlan\n"
					  "JobNetworkUnderlay=eth0\n"
					  "JobNetworkMtu=1500\n"),
			 0);
	assert_int_equal(jobnet_plan(&conf, 7, ln, la, 2, 0, 1500, &p),
			 -ENODEV);
	assert_int_equal(jobnet_plan(&conf, 7, ln, la, 2, 0, 1550, &p), 0);
	assert_int_equal(p.mtu, 1500);
	jobnet_plan_free(&p);
	vmconf_free(&conf);
	/* More nodes than the subnet has addresses */
	assert_int_equal(load_text(&conf, "JobNetwork=vxlan\n"
					  "JobNetworkUnderlay=eth0\n"
					  "JobNetworkSubnet=10.1.2.0/30\n"),
			 0);
	/* The user chose the job's size: the job's fault, not the node's. */
	assert_int_equal(jobnet_plan(&conf, 7, names3, addrs3, 3, 0, 9000, &p),
			 -E2BIG);
	assert_int_equal(jobnet_plan(&conf, 7, names3, addrs3, 2, 0, 9000, &p),
			 0);
	jobnet_plan_free(&p);
	vmconf_free(&conf);
}

/* Whose fault a bad plan is: this node's own name or NodeAddr, or its
 * vm.conf, drains it (-ENODEV); a peer's is the job's (-EINVAL), so that
 * only the node at fault is drained. */
static void test_plan_fault_owner(void **state)
{
	static const char *const names[] = { "n1", "n2" };
	static const char *const bad_addr[] = { "10.0.0.1", "127.0.0.2" };
	static const char *const bad_name[] = { "n1", "n;2" };
	static const char *const addrs[] = { "10.0.0.1", "10.0.0.2" };
	struct vmconf conf;
	struct jobnet_plan p;

	(void)state;
	vxlan_conf(&conf);
	assert_int_equal(jobnet_plan(&conf, 7, names, bad_addr, 2, 1, 9000, &p),
			 -ENODEV);
	assert_non_null(strstr(last_error, "node n2 has an unusable NodeAddr"));
	assert_int_equal(jobnet_plan(&conf, 7, names, bad_addr, 2, 0, 9000, &p),
			 -EINVAL);
	assert_int_equal(jobnet_plan(&conf, 7, bad_name, addrs, 2, 1, 9000, &p),
			 -ENODEV);
	assert_int_equal(jobnet_plan(&conf, 7, bad_name, addrs, 2, 0, 9000, &p),
			 -EINVAL);
	vmconf_free(&conf);
	/* This node's JobNetworkMtu= above what its underlay carries */
	assert_int_equal(load_text(&conf, "JobNetwork=vxlan\n"
					  "JobNetworkUnderlay=eth0\n"
					  "JobNetworkMtu=9000\n"),
			 0);
	assert_int_equal(jobnet_plan(&conf, 7, names, addrs, 2, 1, 1500, &p),
			 -ENODEV);
	assert_non_null(strstr(last_error, "JobNetworkMtu="));
	vmconf_free(&conf);
}

/* 1024 nodes: every peer has its two entries, addresses stay unique. */
static void test_plan_1024(void **state)
{
	static char nbuf[1024][16], abuf[1024][16];
	const char *names[1024], *addrs[1024];
	struct vmconf conf;
	struct jobnet_plan p;
	char *doc, ip[16];
	size_t lines = 0;

	(void)state;
	for (int i = 0; i < 1024; i++) {
		snprintf(nbuf[i], 16, "node%04d", i);
		snprintf(abuf[i], 16, "10.%d.%d.%d", 100, i / 250, i % 250 + 1);
		names[i] = nbuf[i];
		addrs[i] = abuf[i];
	}
	vxlan_conf(&conf);
	assert_int_equal(
		jobnet_plan(&conf, 99, names, addrs, 1024, 1023, 9000, &p), 0);
	doc = jobnet_fdb_batch(&p);
	for (char *c = doc; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 2 * 1023);
	free(doc);
	jobnet_ip_string(&p, 1023, ip);
	assert_string_equal(ip, "10.9.4.0");
	jobnet_plan_free(&p);
	vmconf_free(&conf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf_defaults),
		cmocka_unit_test(test_conf_rejects),
		cmocka_unit_test(test_plan_three_nodes),
		cmocka_unit_test(test_vni_clash),
		cmocka_unit_test(test_tap_script),
		cmocka_unit_test(test_plan_limits),
		cmocka_unit_test(test_plan_hostile),
		cmocka_unit_test(test_plan_fault_owner),
		cmocka_unit_test(test_plan_1024),
	};

	log_set_sink(capture_sink);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
