/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which transport serves the shares (job/share_transport.h): 9p, or
 * virtiofs by the Rust virtiofsd only; qemu's C virtiofsd, which must run
 * as root, never. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "job/share_transport.h"

/* What each prints for --version: the Rust one's from its option parser's
 * name, Debian 12's qemu 7.2 C one as run on this machine. */
#define RUST_VERSION "virtiofsd 1.13.2\n"
#define C_VERSION                                                       \
	"virtiofsd version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\n"  \
	"Copyright (c) 2003-2022 Fabrice Bellard and the QEMU Project " \
	"developers\nusing FUSE kernel interface version 7.36\n"
#define QEMU_C_VIRTIOFSD "/usr/lib/qemu/virtiofsd"

static char dir[] = "/tmp/share-transport-XXXXXX";

/* A program at @name in the test's directory printing @text: a stand-in
 * for the Rust virtiofsd, which this machine lacks. */
static char *fake_virtiofsd(const char *name, const char *text, mode_t mode)
{
	char *path;
	FILE *f;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\nprintf '%%s' '%s'\n", text);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void test_kind_of_version(void **state)
{
	(void)state;
	assert_int_equal(virtiofsd_kind_of_version(RUST_VERSION),
			 VIRTIOFSD_RUST);
	assert_int_equal(virtiofsd_kind_of_version(C_VERSION), VIRTIOFSD_C);
	/* qemu's before 5.2 printed libfuse's line only */
	assert_int_equal(virtiofsd_kind_of_version(
				 "using FUSE kernel interface version 7.31\n"),
			 VIRTIOFSD_C);
	assert_int_equal(virtiofsd_kind_of_version(""), VIRTIOFSD_UNKNOWN);
	assert_int_equal(virtiofsd_kind_of_version("virtiofsd\n"),
			 VIRTIOFSD_UNKNOWN);
	assert_int_equal(virtiofsd_kind_of_version("virtiofsd 1.14.0\n"),
			 VIRTIOFSD_RUST);
	assert_int_equal(virtiofsd_kind_of_version("virtiofsd backend\n"),
			 VIRTIOFSD_UNKNOWN);
	assert_int_equal(virtiofsd_kind_of_version(NULL), VIRTIOFSD_UNKNOWN);
}

/* The program is run and told by what it prints; a path that is not an
 * executable file is missing. */
static void test_identify(void **state)
{
	char *rust = fake_virtiofsd("rust", RUST_VERSION, 0755);
	char *c = fake_virtiofsd("c", C_VERSION, 0755);
	char *other = fake_virtiofsd("other", "1.0\n", 0755);
	char *noexec = fake_virtiofsd("noexec", RUST_VERSION, 0644);
	char *writable = fake_virtiofsd("writable", RUST_VERSION, 0775);
	struct stat st;

	(void)state;
	assert_int_equal(virtiofsd_identify(rust), VIRTIOFSD_RUST);
	assert_int_equal(virtiofsd_identify(c), VIRTIOFSD_C);
	assert_int_equal(virtiofsd_identify(other), VIRTIOFSD_UNKNOWN);
	assert_int_equal(virtiofsd_identify(noexec), VIRTIOFSD_MISSING);
	/* one the group may change is not run (the prolog is root) */
	assert_int_equal(virtiofsd_identify(writable), VIRTIOFSD_UNSAFE);
	assert_int_equal(virtiofsd_identify(dir), VIRTIOFSD_MISSING);
	assert_int_equal(virtiofsd_identify("/nonexistent/virtiofsd"),
			 VIRTIOFSD_MISSING);
	assert_int_equal(virtiofsd_identify("/bin/false"), VIRTIOFSD_UNKNOWN);
	/* The real one where qemu 7.x installed it; Debian 13 and later keep
	 * that path as a link to the Rust one (/usr/libexec/virtiofsd). */
	if (lstat(QEMU_C_VIRTIOFSD, &st) == 0 &&
	    access(QEMU_C_VIRTIOFSD, X_OK) == 0)
		assert_int_equal(virtiofsd_identify(QEMU_C_VIRTIOFSD),
				 S_ISLNK(st.st_mode) ? VIRTIOFSD_RUST
						     : VIRTIOFSD_C);
	free(rust);
	free(c);
	free(other);
	free(noexec);
	free(writable);
}

/* 9p is 9p; virtiofs only by a Rust virtiofsd, else refused with the
 * reason; auto falls back to 9p, saying why. */
static void test_choose(void **state)
{
	static const struct {
		enum shared_dir_transport want;
		enum virtiofsd_kind kind;
		int ret;
		enum shared_dir_transport out;
		const char *why;
	} cases[] = {
		{ SHARED_DIR_9P, VIRTIOFSD_RUST, 0, SHARED_DIR_9P,
		  "SharedDirTransport=9p" },
		{ SHARED_DIR_VIRTIOFS, VIRTIOFSD_RUST, 0, SHARED_DIR_VIRTIOFS,
		  "SharedDirTransport=virtiofs, VirtiofsdPath=/v is the Rust "
		  "virtiofsd" },
		{ SHARED_DIR_AUTO, VIRTIOFSD_RUST, 0, SHARED_DIR_VIRTIOFS,
		  "SharedDirTransport=auto, VirtiofsdPath=/v is the Rust" },
		{ SHARED_DIR_VIRTIOFS, VIRTIOFSD_C, -EINVAL, SHARED_DIR_9P,
		  "SharedDirTransport=virtiofs, but VirtiofsdPath=/v is qemu's "
		  "C virtiofsd, which must run as root (slurm-vm runs "
		  "virtiofsd as the job user)" },
		{ SHARED_DIR_VIRTIOFS, VIRTIOFSD_MISSING, -EINVAL,
		  SHARED_DIR_9P,
		  "VirtiofsdPath=/v is missing or not an executable file" },
		{ SHARED_DIR_VIRTIOFS, VIRTIOFSD_UNSAFE, -EINVAL, SHARED_DIR_9P,
		  "VirtiofsdPath=/v is not root's or is writable by group or "
		  "others (the prolog would run it as root): not run" },
		{ SHARED_DIR_VIRTIOFS, VIRTIOFSD_UNKNOWN, -EINVAL,
		  SHARED_DIR_9P, "does not say it is the Rust virtiofsd" },
		{ SHARED_DIR_AUTO, VIRTIOFSD_C, 0, SHARED_DIR_9P,
		  "SharedDirTransport=auto, VirtiofsdPath=/v is qemu's C "
		  "virtiofsd, which must run as root" },
		{ SHARED_DIR_AUTO, VIRTIOFSD_MISSING, 0, SHARED_DIR_9P,
		  "is missing" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum shared_dir_transport out = SHARED_DIR_AUTO;
		char why[512] = "";
		int r = share_transport_choose(cases[i].want, cases[i].kind,
					       "/v", &out, why, sizeof(why));

		if (r != cases[i].ret || out != cases[i].out ||
		    !strstr(why, cases[i].why))
			fail_msg("case %zu: %d, %s, '%s'; want %d, %s, '%s'", i,
				 r, share_transport_name(out), why,
				 cases[i].ret,
				 share_transport_name(cases[i].out),
				 cases[i].why);
	}
}

/* vm.conf as the prolog and check-config read it on this node. */
static void test_resolve(void **state)
{
	char *c = fake_virtiofsd("c", C_VERSION, 0755);
	char *rust = fake_virtiofsd("rust", RUST_VERSION, 0755);
	struct vmconf conf;
	enum shared_dir_transport out;
	char why[512];

	(void)state;
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	/* the default: 9p, nothing run */
	free(conf.virtiofsd_path);
	conf.virtiofsd_path = strdup("/nonexistent/virtiofsd");
	assert_int_equal(share_transport_resolve(&conf, &out, why, sizeof(why)),
			 0);
	assert_int_equal(out, SHARED_DIR_9P);
	free(conf.virtiofsd_path);
	conf.virtiofsd_path = c;
	conf.shared_dir_transport = SHARED_DIR_VIRTIOFS;
	assert_int_equal(share_transport_resolve(&conf, &out, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "must run as root"));
	conf.shared_dir_transport = SHARED_DIR_AUTO;
	assert_int_equal(share_transport_resolve(&conf, &out, why, sizeof(why)),
			 0);
	assert_int_equal(out, SHARED_DIR_9P);
	conf.virtiofsd_path = rust;
	assert_int_equal(share_transport_resolve(&conf, &out, why, sizeof(why)),
			 0);
	assert_non_null(strstr(why, rust));
	conf.virtiofsd_path = NULL;
	vmconf_free(&conf);
	free(c);
	free(rust);
}

/* The prolog's command line for a share's virtiofsd: the socket it was
 * given, the share, its own namespaces (it runs as the user), bounded threads,
 * the open-file limit root set left alone, and never --tag (qemu 7.x). */
static void test_virtiofsd_argv(void **state)
{
	static const char *const want[] = {
		"/usr/libexec/virtiofsd", "--fd=3",
		"--shared-dir=/home/u",	  "--sandbox=namespace",
		"--cache=auto",		  "--thread-pool-size=4",
		"--rlimit-nofile=0",	  "--log-level=info",
	};
	struct virtiofsd_args a;
	size_t n = 0;

	(void)state;
	assert_int_equal(
		virtiofsd_argv("/usr/libexec/virtiofsd", "/home/u", &a), 0);
	while (a.argv[n])
		n++;
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(a.argv[i], want[i]);
		assert_null(strstr(a.argv[i], "--tag"));
	}
	assert_int_equal(VIRTIOFSD_LISTEN_FD, 3);
	virtiofsd_args_free(&a);
	assert_null(a.shared_dir);
	/* a relative share is no share */
	assert_int_equal(virtiofsd_argv("/v", "home/u", &a), -EINVAL);
	assert_int_equal(virtiofsd_argv(NULL, "/home/u", &a), -EINVAL);
	virtiofsd_args_free(&a);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_of_version),
		cmocka_unit_test(test_identify),
		cmocka_unit_test(test_choose),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_virtiofsd_argv),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
