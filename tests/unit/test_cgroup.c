/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A process into the cgroups of Slurm's job another is in
 * (common/core/cgroup.c), on a /proc and cgroup mounts laid out in a
 * directory: each v1 hierarchy by its controllers, v2, a hierarchy
 * mounted below its root; cgroups of other jobs and of no job untouched.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/cgroup.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *get(const char *rel)
{
	static char buf[256];
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/svm-cgroup-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void mountinfo(void)
{
	char text[2048];

	snprintf(
		text, sizeof(text),
		"22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
		"30 22 0:26 / %s/fs/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		"31 22 0:27 / %s/fs/freezer rw - cgroup cgroup rw,freezer\n"
		"32 22 0:28 /slurm_n1 %s/fs/memory rw - cgroup cgroup rw,memory\n"
		"33 22 0:29 / %s/fs/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
		"34 22 0:30 / %s/fs/unified rw - cgroup2 cgroup2 rw\n",
		dir, dir, dir, dir, dir);
	put("mountinfo", text);
}

/* Every hierarchy of job 7's that the model is in: each move writes the
 * pid where the mount holds that cgroup; other jobs' and no job's not. */
static void test_join_v1_v2(void **state)
{
	char proc[128], procs[128];

	(void)state;
	mountinfo();
	put("proc/100/cgroup",
	    "6:name=systemd:/system.slice/slurmd.service\n"
	    "5:memory:/slurm_n1/uid_0/job_7/step_extern/task_0\n"
	    "4:freezer:/slurm_n1/uid_0/job_7/step_extern\n"
	    "3:cpu,cpuacct:/slurm_n1/uid_0/job_7/step_extern/task_0\n"
	    "2:blkio:/slurm_n1/uid_0/job_7/step_extern\n"
	    "0::/system.slice/slurmstepd.scope/job_7/step_extern/user/task_0\n");
	put("fs/memory/uid_0/job_7/step_extern/task_0/cgroup.procs", "");
	put("fs/freezer/slurm_n1/uid_0/job_7/step_extern/cgroup.procs", "");
	put("fs/cpu,cpuacct/slurm_n1/uid_0/job_7/step_extern/task_0/cgroup.procs",
	    "");
	put("fs/unified/system.slice/slurmstepd.scope/job_7/step_extern/user/task_0/cgroup.procs",
	    "");
	put("fs/systemd/system.slice/slurmd.service/cgroup.procs", "");

	snprintf(procs, sizeof(procs), "%s/mountinfo", dir);
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	assert_int_equal(cgroup_join_at(proc, procs, 4242, 100, 7), 0);
	/* job 70 is not job 7 */
	assert_int_equal(cgroup_join_at(proc, procs, 4242, 100, 70), -ENOENT);
	assert_string_equal(
		get("fs/memory/uid_0/job_7/step_extern/task_0/cgroup.procs"),
		"4242\n");
	assert_string_equal(
		get("fs/freezer/slurm_n1/uid_0/job_7/step_extern/cgroup.procs"),
		"4242\n");
	assert_string_equal(
		get("fs/cpu,cpuacct/slurm_n1/uid_0/job_7/step_extern/task_0/cgroup.procs"),
		"4242\n");
	assert_string_equal(
		get("fs/unified/system.slice/slurmstepd.scope/job_7/step_extern/user/task_0/cgroup.procs"),
		"4242\n");
	assert_string_equal(
		get("fs/systemd/system.slice/slurmd.service/cgroup.procs"), "");
}

/* A cgroup of the job that cannot be written is an error, not a silent
 * half move; a model in no cgroup of the job is -ENOENT. */
static void test_join_fails(void **state)
{
	char proc[128], mi[128];

	(void)state;
	mountinfo();
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	snprintf(mi, sizeof(mi), "%s/mountinfo", dir);
	put("proc/101/cgroup", "4:freezer:/slurm/uid_0/job_8/step_extern\n");
	put("fs/freezer/slurm/uid_0/job_8/step_extern/cgroup.procs/x", "");
	assert_int_equal(cgroup_join_at(proc, mi, 4242, 101, 8), -EISDIR);
	put("proc/102/cgroup", "4:freezer:/slurm/uid_0/job_9/step_0\n"
			       "3:cpu,cpuacct:/user.slice\n");
	assert_int_equal(cgroup_join_at(proc, mi, 4242, 102, 8), -ENOENT);
	assert_int_equal(cgroup_join_at(proc, mi, 4242, 103, 8), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_join_v1_v2, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_join_fails, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
