/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job network's defaults for MPI in a task of the guest (netenv.h),
 * read from fake sysfs trees shaped like a guest's: class/net and
 * class/infiniband entries are symlinks into devices/, ports/N/state reads
 * "4: ACTIVE" and link_layer "InfiniBand" as the kernel writes them. */
#include "config.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/macro.h"
#include "channel/netenv.h"
#include "core/strutil.h"

#define VIRTIO_NET "devices/pci0000:00/0000:00:03.0/virtio1/net"
#define HCA(slot) \
	"devices/pci0000:00/0000:00:0" slot ".0/0000:0" slot ":00.0/infiniband"

static void mkdir_p(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	mkdir(path, 0755);
}

static void put(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* class/CLASS/NAME -> ../../DIR/NAME, as the kernel links them. */
static void add_class_link(const char *root, const char *class, const char *dir,
			   const char *name)
{
	char rel[PATH_MAX], target[PATH_MAX], link[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	mkdir_p(root, rel);
	snprintf(rel, sizeof(rel), "class/%s", class);
	mkdir_p(root, rel);
	snprintf(target, sizeof(target), "../../%s/%s", dir, name);
	snprintf(link, sizeof(link), "%s/class/%s/%s", root, class, name);
	assert_int_equal(symlink(target, link), 0);
}

static void add_netdev(const char *root, const char *dir, const char *name)
{
	char rel[PATH_MAX];

	add_class_link(root, "net", dir, name);
	snprintf(rel, sizeof(rel), "%s/%s/operstate", dir, name);
	put(root, rel, "up\n");
}

/* An HCA port: @state as sysfs shows it ("4: ACTIVE"), @layer
 * ("InfiniBand", "Ethernet"). */
static void add_ib_port(const char *root, const char *dir, const char *dev,
			unsigned port, const char *state, const char *layer)
{
	char rel[PATH_MAX], text[64];
	struct stat st;

	snprintf(rel, sizeof(rel), "%s/class/infiniband/%s", root, dev);
	if (lstat(rel, &st) < 0) {
		add_class_link(root, "infiniband", dir, dev);
		snprintf(rel, sizeof(rel), "%s/%s/node_type", dir, dev);
		put(root, rel, "1: CA\n");
	}
	snprintf(rel, sizeof(rel), "%s/%s/ports/%u", dir, dev, port);
	mkdir_p(root, rel);
	snprintf(rel, sizeof(rel), "%s/%s/ports/%u/state", dir, dev, port);
	snprintf(text, sizeof(text), "%s\n", state);
	put(root, rel, text);
	snprintf(rel, sizeof(rel), "%s/%s/ports/%u/link_layer", dir, dev, port);
	snprintf(text, sizeof(text), "%s\n", layer);
	put(root, rel, text);
	snprintf(rel, sizeof(rel), "%s/%s/ports/%u/rate", dir, dev, port);
	put(root, rel, "200 Gb/sec (4X HDR)\n");
}

static int rm_entry(const char *path, const struct stat *st _unused_,
		    int flag _unused_, struct FTW *ftw _unused_)
{
	return remove(path);
}

static int setup(void **state)
{
	char *root = strdup("/tmp/svm-netenv.XXXXXX");

	if (!root || !mkdtemp(root))
		return -1;
	/* Every guest has lo; the agent's channel is no NIC. */
	add_netdev(root, "devices/virtual/net", "lo");
	mkdir_p(root, "class/infiniband");
	*state = root;
	return 0;
}

static int teardown(void **state)
{
	char *root = *state;

	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(root);
	return 0;
}

/* The defaults for @env, as one "NAME=value|..." string, are @want. */
static void assert_defaults(const char *root, char *const *env,
			    const char *want)
{
	char *out[NETENV_MAX + 1];
	_cleanup_free_ char *got = NULL;
	int n = netenv_defaults(root, env, out);

	assert_true(n >= 0);
	assert_int_equal(strv_length(out), n);
	got = strv_join((const char *const *)out, "|");
	netenv_free(out);
	assert_non_null(got);
	assert_string_equal(got, want);
}

static void test_no_job_network(void **state)
{
	/* JobNetwork=none, no VFs: the task's environment stays as it is. */
	assert_defaults(*state, NULL, "");
}

static void test_job_network(void **state)
{
	add_netdev(*state, VIRTIO_NET, "job0");
	assert_defaults(*state, NULL,
			"OMPI_MCA_btl_tcp_if_include=job0|"
			"OMPI_MCA_oob_tcp_if_include=job0|"
			"FI_TCP_IFACE=job0|"
			"NCCL_SOCKET_IFNAME=job0|"
			"UCX_NET_DEVICES=job0");
}

static void test_ib_vfs(void **state)
{
	const char *root = *state;

	add_netdev(root, VIRTIO_NET, "job0");
	/* Probe order is not name order: mlx5_10 comes after mlx5_2. */
	add_ib_port(root, HCA("5"), "mlx5_10", 1, "4: ACTIVE", "InfiniBand");
	add_ib_port(root, HCA("4"), "mlx5_2", 1, "4: ACTIVE", "Ethernet");
	add_ib_port(root, HCA("2"), "mlx5_0", 1, "4: ACTIVE", "InfiniBand");
	add_ib_port(root, HCA("3"), "mlx5_1", 1, "1: DOWN", "InfiniBand");
	add_ib_port(root, HCA("3"), "mlx5_1", 2, "2: INIT", "InfiniBand");
	assert_defaults(root, NULL,
			"OMPI_MCA_btl_tcp_if_include=job0|"
			"OMPI_MCA_oob_tcp_if_include=job0|"
			"FI_TCP_IFACE=job0|"
			"NCCL_SOCKET_IFNAME=job0|"
			"UCX_NET_DEVICES=mlx5_0:1,mlx5_10:1|"
			"NCCL_IB_HCA=mlx5_0:1,mlx5_10:1");
}

static void test_ib_without_job_network(void **state)
{
	add_ib_port(*state, HCA("2"), "mlx5_0", 1, "4: ACTIVE", "InfiniBand");
	assert_defaults(*state, NULL,
			"UCX_NET_DEVICES=mlx5_0:1|"
			"NCCL_IB_HCA=mlx5_0:1");
}

static void test_ports_not_up(void **state)
{
	add_ib_port(*state, HCA("2"), "mlx5_0", 1, "1: DOWN", "InfiniBand");
	add_ib_port(*state, HCA("3"), "mlx5_1", 1, "4: ACTIVE", "Ethernet");
	assert_defaults(*state, NULL, "");
}

static void test_user_values_win(void **state)
{
	char *env[] = { "PATH=/usr/bin",
			"NCCL_SOCKET_IFNAME=mine",
			"UCX_NET_DEVICES=mlx5_1:1",
			"FI_TCP_IFACE=",
			"NCCL_IB_HCA_X=1",
			NULL };
	add_netdev(*state, VIRTIO_NET, "job0");
	add_ib_port(*state, HCA("2"), "mlx5_0", 1, "4: ACTIVE", "InfiniBand");
	/* Set, even empty, is the user's; a longer name is another one. */
	assert_defaults(*state, env,
			"OMPI_MCA_btl_tcp_if_include=job0|"
			"OMPI_MCA_oob_tcp_if_include=job0|"
			"NCCL_IB_HCA=mlx5_0:1");
}

static void test_renamed_device(void **state)
{
	/* The guest's root may rename a device; a name that would break
	 * the list is skipped. */
	add_ib_port(*state, HCA("2"), "a,b:1", 1, "4: ACTIVE", "InfiniBand");
	add_ib_port(*state, HCA("3"), "ib-x", 1, "4: ACTIVE", "InfiniBand");
	assert_defaults(*state, NULL,
			"UCX_NET_DEVICES=ib-x:1|NCCL_IB_HCA=ib-x:1");
}

/* A port's P_Key table (ports/N/pkeys/<index>), as the SM set it. */
static void add_pkeys(const char *root, const char *dir, const char *dev,
		      unsigned port, const char *const *keys)
{
	char rel[PATH_MAX], text[16];

	snprintf(rel, sizeof(rel), "%s/%s/ports/%u/pkeys", dir, dev, port);
	mkdir_p(root, rel);
	for (unsigned i = 0; keys[i]; i++) {
		snprintf(rel, sizeof(rel), "%s/%s/ports/%u/pkeys/%u", dir, dev,
			 port, i);
		snprintf(text, sizeof(text), "%s\n", keys[i]);
		put(root, rel, text);
	}
}

/* IbPartitions=yes: the job's P_Key is the full-member key beside the
 * default partition's; limited keys and empty slots are not it. */
static void test_job_pkey(void **state)
{
	const char *keys[] = { "0x7fff", "0x0000", "0x0005",
			       "0x94d2", "0x8063", NULL };
	const char *other[] = { "0xffff", "0x8111", NULL };
	char *env[] = { "OMPI_MCA_btl_openib_pkey=0x0042", NULL };

	add_ib_port(*state, HCA("2"), "mlx5_0", 1, "4: ACTIVE", "InfiniBand");
	add_pkeys(*state, HCA("2"), "mlx5_0", 1, keys);
	/* a port that is down does not count */
	add_ib_port(*state, HCA("1"), "mlx4_0", 1, "1: DOWN", "InfiniBand");
	add_pkeys(*state, HCA("1"), "mlx4_0", 1, other);
	assert_defaults(*state, NULL,
			"UCX_NET_DEVICES=mlx5_0:1|NCCL_IB_HCA=mlx5_0:1|"
			"UCX_IB_PKEY=0x14d2|OMPI_MCA_btl_openib_pkey=0x14d2");
	assert_defaults(*state, env,
			"UCX_NET_DEVICES=mlx5_0:1|NCCL_IB_HCA=mlx5_0:1|"
			"UCX_IB_PKEY=0x14d2");
}

/* Only the default partition (no IbPartitions): nothing to set. */
static void test_default_pkey_only(void **state)
{
	const char *keys[] = { "0xffff", "0x7fff", NULL };

	add_ib_port(*state, HCA("2"), "mlx5_0", 1, "4: ACTIVE", "InfiniBand");
	add_pkeys(*state, HCA("2"), "mlx5_0", 1, keys);
	assert_defaults(*state, NULL,
			"UCX_NET_DEVICES=mlx5_0:1|NCCL_IB_HCA=mlx5_0:1");
}

static void test_no_sysfs(void **state _unused_)
{
	assert_defaults("/nonexistent/sys", NULL, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_no_job_network),
		T(test_job_network),
		T(test_ib_vfs),
		T(test_ib_without_job_network),
		T(test_ports_not_up),
		T(test_user_values_win),
		T(test_renamed_device),
		T(test_job_pkey),
		T(test_default_pkey_only),
		cmocka_unit_test(test_no_sysfs),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
