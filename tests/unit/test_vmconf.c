/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/log.h"
#include "job/vmconf.h"

static char last_error[2048];

static void capture_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR)
		snprintf(last_error, sizeof(last_error), "%s", msg);
}

static char *write_conf(const char *text)
{
	char *path = strdup("/tmp/vmconf-test-XXXXXX");
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	fputs(text, f);
	fclose(f);
	return path;
}

static int load_text(struct vmconf *conf, const char *text)
{
	char *path = write_conf(text);
	int r;

	last_error[0] = '\0';
	r = vmconf_load(conf, path);
	unlink(path);
	free(path);
	return r;
}

static void test_defaults(void **state)
{
	struct vmconf conf;

	assert_int_equal(vmconf_load(&conf, NULL), 0);
	assert_string_equal(conf.libvirt_uri, "qemu:///system");
	assert_string_equal(conf.domain_type, "kvm");
	assert_string_equal(conf.cpu_mode, "host-passthrough");
	assert_int_equal(conf.device_binding, DEVICE_BINDING_PREBOUND);
	assert_int_equal(conf.device_attach, DEVICE_ATTACH_VFIO);
	assert_int_equal(conf.boot_timeout, 300);
	assert_false(conf.allow_user_images);
	assert_true(conf.require_locality);
	assert_null(conf.topology_file);
	vmconf_free(&conf);
}

static void test_values_case_insensitive(void **state)
{
	struct vmconf conf;

	assert_int_equal(load_text(&conf, "domaintype=QEMU\n"
					  "  CpuMode = maximum \n"
					  "DeviceAttach=emulate   # no IOMMU\n"
					  "ImageDirs=/srv/a:/srv/b\n"
					  "AllowUserImages=yes\n"
					  "BootTimeout=60\n"
					  "MemOverhead=256\n"),
			 0);
	assert_string_equal(conf.domain_type, "qemu");
	assert_string_equal(conf.cpu_mode, "maximum");
	assert_int_equal(conf.device_attach, DEVICE_ATTACH_EMULATE);
	assert_string_equal(conf.image_dirs[0], "/srv/a");
	assert_string_equal(conf.image_dirs[1], "/srv/b");
	assert_null(conf.image_dirs[2]);
	assert_true(conf.allow_user_images);
	assert_int_equal(conf.boot_timeout, 60);
	assert_int_equal(conf.mem_overhead_mb, 256);
	vmconf_free(&conf);
}

static void test_typo_suggests_key(void **state)
{
	struct vmconf conf;

	assert_int_equal(load_text(&conf, "\nBootTimout=60\n"), -EINVAL);
	assert_non_null(strstr(last_error, ":2: unknown key 'BootTimout'"));
	assert_non_null(strstr(last_error, "did you mean 'BootTimeout'"));
	vmconf_free(&conf);
}

static void test_bad_values(void **state)
{
	static const struct {
		const char *text, *expect;
	} cases[] = {
		{ "BootTimeout=-1\n", "whole number from 0 to 3600" },
		{ "BootTimeout=99999\n", "whole number from 0 to 3600" },
		{ "BootTimeout=10s\n", "whole number" },
		{ "DomainType=xen\n", "expected one of kvm, qemu" },
		{ "AllowRoot=maybe\n", "expected yes or no" },
		{ "StateDir=relative/dir\n", "must be an absolute path" },
		{ "ImageDirs=/ok:relative\n",
		  "'relative' must be an absolute path" },
		{ "LogLevel=loud\n", "expected error, warn, info or debug" },
		{ "NoEquals\n", "expected Key=Value" },
		{ "BootTimeout=1\nboottimeout=2\n",
		  "BootTimeout is set twice" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vmconf conf;
		assert_int_equal(load_text(&conf, cases[i].text), -EINVAL);
		if (!strstr(last_error, cases[i].expect))
			fail_msg("'%s': got '%s', want '%s'", cases[i].text,
				 last_error, cases[i].expect);
		vmconf_free(&conf);
	}
}

/* SharedDirs=: the admin's list, each path as the domain, the seed and the
 * guest's mount(8) take it. SharedDirTransport= is auto by default;
 * which virtiofsd serves virtiofs is test_share_transport's. */
static void test_shared_dirs(void **state)
{
	static const struct {
		const char *text, *expect;
	} bad[] = {
		{ "SharedDirs=/\n", "'/': a normalized absolute path" },
		{ "SharedDirs=/home/\n", "'/home/': a normalized" },
		{ "SharedDirs=/a/../etc\n", "'/a/../etc': a normalized" },
		{ "SharedDirs=/a/./b\n", "'/a/./b': a normalized" },
		{ "SharedDirs=/a//b\n", "'/a//b': a normalized" },
		{ "SharedDirs=/a b\n", "'/a b': a normalized" },
		{ "SharedDirs=/a\"b\n", "letters, digits and /._+@- only" },
		{ "SharedDirs=home\n", "'home' must be an absolute path" },
		{ "SharedDirs=/home,/home/x\n",
		  "'/home' and '/home/x' overlap" },
		{ "SharedDirs=/scratch/a,/scratch\n", "overlap" },
		{ "SharedDirs=/d,/d\n", "'/d' and '/d' overlap" },
		{ "SharedDirs=/1,/2,/3,/4,/5,/6,/7,/8,/9,/10,/11,/12,/13,/14,"
		  "/15,/16,/17\n",
		  "17 directories, at most 16" },
		{ "SharedDirTransport=nfs\n",
		  "SharedDirTransport=nfs: expected one of 9p, virtiofs, auto" },
		{ "VirtiofsdPath=virtiofsd\n",
		  "VirtiofsdPath=virtiofsd: must be an absolute path" },
		{ "IbPKeyRange=0x1000-0x7fff\n",
		  "IbPKeyRange=0x1000-0x7fff: a" },
		{ "IbPKeyRange=0-0x10\n", "within 0x0001-0x7ffe" },
		{ "IbPKeyRange=0x20-0x10\n", "within 0x0001-0x7ffe" },
		{ "IbPKeyRange=0x10\n", "a range MIN-MAX" },
		{ "IbPKeyRange=0xzz-0x10\n", "a range MIN-MAX" },
		{ "IbGuidPrefix=0\n", "IbGuidPrefix=0: the first 16 bits" },
		{ "IbGuidPrefix=0x10000\n", "0x0001-0xffff" },
		{ "JobNetworkVni=0-5\n", "JobNetworkVni=0-5: a range" },
		{ "JobNetworkVni=1-16777216\n", "within 1-16777215" },
	};
	struct vmconf conf;

	assert_int_equal(vmconf_load(&conf, NULL), 0);
	assert_false(conf.ib_partitions);
	assert_int_equal(conf.ib_pkey_min, 0x1000);
	assert_int_equal(conf.ib_pkey_max, 0x7ffe);
	assert_int_equal(conf.ib_guid_prefix, 0x0200);
	assert_int_equal(conf.jobnet_vni_min, 100000);
	assert_int_equal(conf.jobnet_vni_max, 16000000);
	vmconf_free(&conf);
	assert_int_equal(load_text(&conf, "IbPKeyRange=16-0x20\n"
					  "IbGuidPrefix=0xfe80\n"),
			 0);
	assert_int_equal(conf.ib_pkey_min, 16);
	assert_int_equal(conf.ib_pkey_max, 0x20);
	assert_int_equal(conf.ib_guid_prefix, 0xfe80);
	vmconf_free(&conf);
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	assert_int_equal(vmconf_n_shared_dirs(&conf), 0);
	assert_int_equal(conf.shared_dir_transport, SHARED_DIR_AUTO);
	assert_string_equal(conf.virtiofsd_path, "/usr/libexec/virtiofsd");
	vmconf_free(&conf);
	assert_int_equal(load_text(&conf, "SharedDirs=/home\n"
					  "SharedDirTransport=auto\n"
					  "VirtiofsdPath=/opt/v/virtiofsd\n"),
			 0);
	assert_int_equal(conf.shared_dir_transport, SHARED_DIR_AUTO);
	assert_string_equal(conf.virtiofsd_path, "/opt/v/virtiofsd");
	vmconf_free(&conf);
	assert_int_equal(load_text(&conf, "SharedDirTransport=virtiofs\n"), 0);
	assert_int_equal(conf.shared_dir_transport, SHARED_DIR_VIRTIOFS);
	vmconf_free(&conf);
	assert_int_equal(load_text(&conf, "SharedDirs=/home,/scratch,"
					  "/home2,/srv/a.b_c+d@e-f\n"
					  "SharedDirTransport=9p\n"),
			 0);
	assert_int_equal(vmconf_n_shared_dirs(&conf), 4);
	assert_string_equal(conf.shared_dirs[0], "/home");
	assert_string_equal(conf.shared_dirs[1], "/scratch");
	assert_string_equal(conf.shared_dirs[2], "/home2");
	vmconf_free(&conf);
	assert_int_equal(load_text(&conf, "SharedDirs=\n"), 0);
	assert_int_equal(vmconf_n_shared_dirs(&conf), 0);
	vmconf_free(&conf);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(load_text(&conf, bad[i].text), -EINVAL);
		if (!strstr(last_error, bad[i].expect))
			fail_msg("'%s': got '%s', want '%s'", bad[i].text,
				 last_error, bad[i].expect);
		vmconf_free(&conf);
	}
}

/* What the prolog and check-config ask of a share on the node. */
static void test_shared_dir_usable(void **state)
{
	assert_int_equal(vmconf_shared_dir_usable("/tmp"), 0);
	assert_int_equal(vmconf_shared_dir_usable(SRCDIR "/doc/vm.conf.5"),
			 -ENOTDIR);
	assert_int_equal(vmconf_shared_dir_usable("/nonexistent/scratch"),
			 -ENOENT);
}

static void test_missing_file(void **state)
{
	struct vmconf conf;

	last_error[0] = '\0';
	assert_int_equal(vmconf_load(&conf, "/nonexistent/vm.conf"), -ENOENT);
	assert_non_null(strstr(last_error, "cannot read /nonexistent/vm.conf"));
	vmconf_free(&conf);
}

static void test_default_path_follows_slurm_conf(void **state)
{
	char *p;

	setenv("SLURM_CONF", "/tmp/cluster/etc/slurm.conf", 1);
	p = vmconf_default_path();
	assert_string_equal(p, "/tmp/cluster/etc/vm.conf");
	free(p);
	unsetenv("SLURM_CONF");
	p = vmconf_default_path();
	assert_string_equal(p, "/etc/slurm/vm.conf");
	free(p);
}

/* Every key the parser knows is documented in vm.conf(5). */
static void test_every_key_documented(void **state)
{
	FILE *f = fopen(SRCDIR "/doc/vm.conf.5", "r");
	static char man[65536];
	size_t n;

	assert_non_null(f);
	n = fread(man, 1, sizeof(man) - 1, f);
	man[n] = '\0';
	fclose(f);
	for (const char *const *k = vmconf_keys(); *k; k++) {
		char bi[128], br[128];
		snprintf(bi, sizeof(bi), ".BI %s=", *k);
		snprintf(br, sizeof(br), ".BR %s=", *k);
		if (!strstr(man, bi) && !strstr(man, br))
			fail_msg(
				"vm.conf key %s is not documented in vm.conf(5)",
				*k);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values_case_insensitive),
		cmocka_unit_test(test_typo_suggests_key),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_shared_dirs),
		cmocka_unit_test(test_shared_dir_usable),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_default_path_follows_slurm_conf),
		cmocka_unit_test(test_every_key_documented),
	};

	log_set_sink(capture_sink);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
