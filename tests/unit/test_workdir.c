/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where a task starts in the guest (agent/guest/workdir.c): in the host's
 * directory only when the guest has it from a share, else in /tmp with the
 * reason. The shares are read from a mountinfo file as the kernel writes
 * it; the directories are real. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "workdir.h"

static char top[64], mountinfo[128], share[128], home[128];

static int setup(void **state)
{
	snprintf(top, sizeof(top), "/tmp/svm-workdir-XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(mountinfo, sizeof(mountinfo), "%s/mountinfo", top);
	snprintf(share, sizeof(share), "%s/share", top);
	snprintf(home, sizeof(home), "%s/home", top);
	return mkdir(share, 0755) || mkdir(home, 0755);
}

static int teardown(void **state)
{
	char cmd[128];

	if (chdir("/") < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}

/* The guest's mount table: its root, and @fstype from @source at the
 * share's path, with the device our directories are on. */
static void write_mountinfo(const char *fstype, const char *source)
{
	FILE *f = fopen(mountinfo, "w");
	struct stat st;

	assert_non_null(f);
	assert_int_equal(stat(share, &st), 0);
	fprintf(f, "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n");
	if (fstype)
		fprintf(f,
			"31 22 %u:%u / %s rw,relatime - %s %s "
			"rw,access=client,msize=524288,trans=virtio\n",
			major(st.st_dev), minor(st.st_dev), share, fstype,
			source);
	fclose(f);
}

static void assert_in(const char *dir)
{
	char here[PATH_MAX];

	assert_non_null(getcwd(here, sizeof(here)));
	assert_string_equal(here, dir);
}

/* On a share, at its top or below: the host's directory, no message; over
 * 9p or virtiofs (vm.conf SharedDirTransport=), which mount the same tag. */
static void test_on_share(void **state)
{
	const char *fstypes[] = { "9p", "virtiofs" };
	char sub[160];

	snprintf(sub, sizeof(sub), "%s/alice", share);
	assert_int_equal(mkdir(sub, 0755), 0);
	for (size_t i = 0; i < sizeof(fstypes) / sizeof(fstypes[0]); i++) {
		char why[128] = "";

		write_mountinfo(fstypes[i], "svmshare0");
		assert_int_equal(
			workdir_enter(share, mountinfo, why, sizeof(why)), 0);
		assert_in(share);
		assert_int_equal(
			workdir_enter(sub, mountinfo, why, sizeof(why)), 0);
		assert_in(sub);
		assert_string_equal(why, "");
	}
}

/* The guest's own directory of the host's name (cloud-init made the
 * user's home): /tmp, and the reason says so. So with no share at all, a
 * 9p or virtiofs mount that is not the job's, or a share on another
 * device. */
static void test_guest_own_directory(void **state)
{
	const char *tables[][2] = {
		{ NULL, NULL },		 { "9p", "hostshare" },
		{ "9p", "svmshare0x" },	 { "virtiofs", "hostshare" },
		{ "ext4", "svmshare0" },
	};

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char why[128] = "";

		write_mountinfo(tables[i][0], tables[i][1]);
		assert_int_equal(
			workdir_enter(home, mountinfo, why, sizeof(why)), 1);
		assert_in("/tmp");
		assert_non_null(strstr(why, "not on a share"));
		/* The share's path is ours only when it is the share. */
		assert_int_equal(
			workdir_enter(share, mountinfo, why, sizeof(why)), 1);
		assert_in("/tmp");
	}
	/* No mount table to read: nothing is known to be shared. */
	unlink(mountinfo);
	assert_int_equal(workdir_enter(share, mountinfo, (char[128]){ 0 }, 128),
			 1);
	assert_in("/tmp");
}

/* A directory the guest lacks: /tmp with the error, as slurmstepd says
 * it; /tmp itself (slurmstepd's own fallback on the host) needs no share
 * and no message. */
static void test_missing_and_tmp(void **state)
{
	char missing[160], why[128] = "";

	write_mountinfo(NULL, NULL);
	snprintf(missing, sizeof(missing), "%s/nowhere", share);
	assert_int_equal(workdir_enter(missing, mountinfo, why, sizeof(why)),
			 1);
	assert_in("/tmp");
	assert_string_equal(why, strerror(ENOENT));
	why[0] = '\0';
	assert_int_equal(workdir_enter("/", mountinfo, why, sizeof(why)), 1);
	why[0] = '\0';
	assert_int_equal(workdir_enter("/tmp", mountinfo, why, sizeof(why)), 0);
	assert_in("/tmp");
	assert_string_equal(why, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_on_share, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guest_own_directory, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_missing_and_tmp, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
