/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cloud-init seed (what the guest is told about its user), reading a
 * user's file with the user's credentials, and the teardown of SEED and
 * DETACH journal records. */
#include "config.h"

#include <fcntl.h>
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

#include "hw/devices.h"
#include "job/journal.h"
#include "core/log.h"
#include "vm/seed.h"
#include "vm/teardown.h"
#include "job/user.h"
#include "job/vmconf.h"

#define NOBODY 65534

static char top[256], logged[8192];

static void capture_sink(enum log_level level, const char *msg)
{
	strncat(logged, msg, sizeof(logged) - strlen(logged) - 2);
	strcat(logged, "\n");
}

static int setup(void **state)
{
	snprintf(top, sizeof(top), "/tmp/svm-seed-XXXXXX");
	if (!mkdtemp(top))
		return -1;
	/* nobody must reach the files made below */
	return chmod(top, 0755);
}

static int teardown(void **state)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}

static struct user_group test_groups[] = {
	{ .name = "video", .gid = 44 },
	{ .name = "proj\"x", .gid = 5001 },
};

static struct user_info test_user = {
	.name = "alice",
	.uid = 1234,
	.gid = 1234,
	.home = "/home/alice",
	.shell = "/bin/bash",
	.primary = { .name = "alice", .gid = 1234 },
	.groups = test_groups,
	.n_groups = 2,
};

static struct seed_params params(void)
{
	struct seed_params p = {
		.job_id = 77,
		.restart = 2,
		.hostname = "n1",
		.user = &test_user,
		.ssh_keys = "# my keys\n"
			    "ssh-ed25519 AAAAC3Nza alice@laptop\r\n"
			    "\n"
			    "from=\"10.0.0.1\" ssh-rsa AAAAB3Nza alice@old\n"
			    "ssh-rsa bad\x01key\n",
	};
	return p;
}

static char *write_tmp(const char *name, const char *text)
{
	char *path;
	FILE *f;

	assert_true(asprintf(&path, "%s/%s", top, name) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

#define run(fmt, arg)                                   \
	({                                              \
		char cmd_[1024];                        \
		snprintf(cmd_, sizeof(cmd_), fmt, arg); \
		system(cmd_);                           \
	})

static void test_meta_data(void **state)
{
	struct seed_params p = params();
	char *doc;

	assert_int_equal(seed_meta_data(&p, &doc), 0);
	assert_string_equal(doc, "instance-id: \"slurmvm-job-77.2\"\n"
				 "local-hostname: \"n1\"\n");
	free(doc);
}

static void test_user_data(void **state)
{
	struct seed_params p = params();
	char *doc;

	assert_int_equal(seed_user_data(&p, &doc), 0);
	assert_true(strncmp(doc, "#cloud-config\n", 14) == 0);
	assert_non_null(strstr(doc, "  - name: \"alice\"\n    uid: 1234\n"
				    "    primary_group: \"alice\"\n"));
	assert_non_null(strstr(doc, "groups: [\"video\", \"proj\\\"x\"]\n"));
	/* the gids come with the groups, as arguments */
	assert_non_null(strstr(doc, "    - \"proj\\\"x\"\n    - \"5001\"\n"));
	/* keys: two real ones, no comment, no control byte, no CR */
	assert_non_null(strstr(
		doc, "      - \"ssh-ed25519 AAAAC3Nza alice@laptop\"\n"));
	assert_non_null(strstr(
		doc,
		"      - \"from=\\\"10.0.0.1\\\" ssh-rsa AAAAB3Nza alice@old\"\n"));
	assert_null(strstr(doc, "bad"));
	assert_null(strstr(doc, "my keys"));
	free(doc);
}

static void test_bad_names_refused(void **state)
{
	struct user_group g = { .name = "x\nusers: [root]", .gid = 9 };
	struct user_info u = test_user;
	struct seed_params p = params();
	char *doc = NULL;

	u.groups = &g;
	u.n_groups = 1;
	p.user = &u;
	assert_int_equal(seed_user_data(&p, &doc), -EINVAL);
	assert_null(doc);
	assert_non_null(strstr(logged, "cannot take"));
}

/* cloud-init itself says the user-data is valid, and a YAML parser reads
 * back exactly the values, quotes included. */
static void test_cloud_init_schema(void **state)
{
	struct seed_params p = params();
	char *doc, *path, *bad;
	size_t len;

	if (access("/usr/bin/cloud-init", X_OK) != 0)
		skip();
	assert_int_equal(seed_user_data(&p, &doc), 0);
	path = write_tmp("user-data", doc);
	assert_int_equal(
		run("/usr/bin/cloud-init schema -c %s >/dev/null 2>&1", path),
		0);
	assert_int_equal(
		run("/usr/bin/python3 -c 'import sys, yaml; "
		    "d = yaml.safe_load(open(sys.argv[1])); u = d[\"users\"][0]; "
		    "assert u[\"name\"] == \"alice\" and u[\"uid\"] == 1234, u; "
		    "assert u[\"groups\"] == [\"video\", \"proj\\\"x\"], u; "
		    "assert len(u[\"ssh_authorized_keys\"]) == 2; "
		    "assert d[\"bootcmd\"][2][4:] == [\"proj\\\"x\", \"5001\"]; "
		    "assert d[\"ssh_genkeytypes\"] == [\"ed25519\"]; "
		    "assert d[\"resize_rootfs\"] is False' %s",
		    path),
		0);
	/* the check can fail: a wrong type is refused */
	len = strlen(doc);
	doc = realloc(doc, len + 32);
	strcat(doc, "ssh_pwauth: [1, 2]\n");
	bad = write_tmp("bad-user-data", doc);
	assert_int_not_equal(
		run("/usr/bin/cloud-init schema -c %s >/dev/null 2>&1", bad),
		0);
	free(doc);
	free(path);
	free(bad);
}

/* JobNetwork=vxlan: the guest gets the job's network-config instead of
 * the DHCP default, and the job's node names appended to /etc/hosts. */
static void test_job_network(void **state)
{
	struct seed_params p = params();
	char *doc, *path;

	assert_int_equal(seed_network_config(&p, &doc), 0);
	assert_non_null(strstr(doc, "dhcp4: true"));
	free(doc);
	assert_int_equal(seed_user_data(&p, &doc), 0);
	assert_null(strstr(doc, "write_files"));
	free(doc);
	p.network_config = "version: 2\n";
	p.hosts = "10.0.0.1 n1\n10.0.0.2 n2\n";
	assert_int_equal(seed_network_config(&p, &doc), 0);
	assert_string_equal(doc, "version: 2\n");
	free(doc);
	assert_int_equal(seed_user_data(&p, &doc), 0);
	path = write_tmp("user-data-net", doc);
	if (access("/usr/bin/cloud-init", X_OK) == 0)
		assert_int_equal(
			run("/usr/bin/cloud-init schema -c %s >/dev/null 2>&1",
			    path),
			0);
	assert_int_equal(
		run("/usr/bin/python3 -c 'import sys, yaml; "
		    "w = yaml.safe_load(open(sys.argv[1]))[\"write_files\"][0]; "
		    "assert w == {\"path\": \"/etc/hosts\", \"append\": True, "
		    "\"content\": \"10.0.0.1 n1\\n10.0.0.2 n2\\n\"}, w' %s",
		    path),
		0);
	free(doc);
	free(path);
}

/* The user-data of @p with its two shares passes cloud-init's schema, and
 * the second share's bootcmd, run with a stand-in mount(8), mounts its tag
 * at the host path with exactly @want_options. */
static void check_share_mounts(const struct seed_params *p,
			       const char *want_options)
{
	char *doc, *path, *bin;

	assert_int_equal(seed_user_data(p, &doc), 0);
	path = write_tmp("user-data-shares", doc);
	if (access("/usr/bin/cloud-init", X_OK) == 0)
		assert_int_equal(
			run("/usr/bin/cloud-init schema -c %s >/dev/null 2>&1",
			    path),
			0);
	bin = write_tmp("mount", "#!/bin/sh\necho \"$@\" >>\"$0.log\"\n");
	assert_int_equal(chmod(bin, 0755), 0);
	free(write_tmp("mountpoint", "#!/bin/sh\nexit 1\n"));
	assert_int_equal(run("chmod 755 %s/mountpoint", top), 0);
	assert_int_equal(setenv("WANT_MOUNT", want_options, 1), 0);
	assert_int_equal(
		run("/usr/bin/python3 -c 'import sys, yaml, subprocess, os; "
		    "top = os.path.dirname(sys.argv[1]); "
		    "b = yaml.safe_load(open(sys.argv[1]))[\"bootcmd\"]; "
		    "m = [c for c in b if c[3:4] == [\"slurm-vm-share\"]]; "
		    "assert len(m) == 2 and b.index(m[1]) == len(b) - 2, b; "
		    "assert m[0][4:6] == [\"svmshare0\", \"/home\"], m; "
		    "assert m[1][4:6] == [\"svmshare1\", "
		    "\"/scratch/a b\\\"c\"], m; "
		    "env = dict(os.environ, PATH=top + \":/usr/bin:/bin\"); "
		    "c = m[1][:5] + [top + \"/mnt\"] + m[1][6:]; "
		    "subprocess.run(c, env=env, check=True); "
		    "got = open(top + \"/mount.log\").read(); "
		    "want = os.environ[\"WANT_MOUNT\"] + \" svmshare1 \" + top + "
		    "\"/mnt\\n\"; "
		    "assert got == want, (got, want); "
		    "assert os.path.isdir(top + \"/mnt\")' %s",
		    path),
		0);
	assert_int_equal(run("rm -f %s/mount.log", top), 0);
	free(doc);
	free(path);
	free(bin);
}

/* SharedDirs=: one bootcmd per share, before the agent's, mounting the
 * domain's tag at the host path with the 9p options; cloud-init takes it,
 * and the command run with a stand-in mount(8) mounts exactly that. */
static void test_shares(void **state)
{
	struct seed_params p = params();
	char *const shares[] = { "/home", "/scratch/a b\"c" };

	p.shares = shares;
	p.n_shares = 2;
	check_share_mounts(&p, "-t 9p -o trans=virtio,version=9p2000.L,"
			       "msize=524288,cache=mmap");
}

/* Over virtiofs: the same bootcmds, at the same paths, mount the same tags
 * with `mount -t virtiofs TAG PATH` (a kernel without 9p has it). */
static void test_shares_virtiofs(void **state)
{
	struct seed_params p = params();
	char *const shares[] = { "/home", "/scratch/a b\"c" };

	p.shares = shares;
	p.n_shares = 2;
	p.share_transport = SHARED_DIR_VIRTIOFS;
	check_share_mounts(&p, "-t virtiofs");
}

static void test_iso(void **state)
{
	struct seed_params p = params();
	struct user_info user = test_user;
	char dir[512], iso[512], cmd[1200];
	struct stat st;

	if (access(SEED_GENISOIMAGE, X_OK) != 0)
		skip();
	snprintf(dir, sizeof(dir), "%s/seed", top);
	snprintf(iso, sizeof(iso), "%s/seed.iso", top);
	assert_int_equal(mkdir(dir, 0700), 0);
	if (geteuid() != 0) { /* only root gives files away */
		user.uid = getuid();
		user.gid = getgid();
	}
	p.user = &user;
	assert_int_equal(seed_build(&p, dir, iso), 0);
	/* the user's keys, groups and network plan: the job user's alone
	 * (qemu runs as the user), never its primary group's */
	assert_int_equal(stat(iso, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, user.uid);
	snprintf(cmd, sizeof(cmd),
		 "isoinfo -d -i %s | grep -qx 'Volume id: cidata' && "
		 "isoinfo -R -f -i %s | sort | tr '\\n' ' ' | "
		 "grep -qx '/meta-data /network-config /user-data '",
		 iso, iso);
	assert_int_equal(system(cmd), 0);
}

static void test_read_file_as_user(void **state)
{
	char *secret, *open_file, *link, *big, *data = NULL;
	char bigtext[300];

	if (geteuid() != 0)
		skip();
	secret = write_tmp("secret", "root only\n");
	chmod(secret, 0600);
	open_file = write_tmp("public", "ssh-ed25519 AAAA\n");
	chmod(open_file, 0644);
	assert_true(asprintf(&link, "%s/link", top) > 0);
	assert_int_equal(symlink(secret, link), 0);
	memset(bigtext, 'k', sizeof(bigtext) - 1);
	bigtext[sizeof(bigtext) - 1] = '\0';
	big = write_tmp("big", bigtext);
	chmod(big, 0644);

	assert_int_equal(user_read_file(NOBODY, NOBODY, open_file, 256, &data),
			 0);
	assert_string_equal(data, "ssh-ed25519 AAAA\n");
	free(data);
	/* root's file, directly or through a planted link: never */
	assert_int_equal(user_read_file(NOBODY, NOBODY, secret, 256, &data),
			 -EACCES);
	assert_null(data);
	assert_int_equal(user_read_file(NOBODY, NOBODY, link, 256, &data),
			 -ELOOP);
	assert_int_equal(user_read_file(0, 0, link, 256, &data), -ELOOP);
	assert_int_equal(user_read_file(NOBODY, NOBODY, big, 256, &data),
			 -EFBIG);
	assert_int_equal(
		user_read_file(NOBODY, NOBODY, "/nonexistent/x", 256, &data),
		-ENOENT);
	free(secret);
	free(open_file);
	free(link);
	free(big);
}

/* SEED files go; DETACH is replayed after DOMAIN (the guest lets go of the
 * device first), and a device that cannot be returned makes the node
 * unsafe while the other steps still run. */
static void test_teardown_seed_and_detach(void **state)
{
	const char *seed[] = { "seed", NULL };
	const char *dev[] = { "0000:3b:00.0", NULL };
	const char *dom[] = { "slurmvm-job-9.0", NULL };
	struct teardown_result res;
	struct vmconf conf;
	char *stopped, *pci;
	int fd, sfd;

	if (geteuid() != 0)
		skip();
	assert_int_equal(vmconf_load(&conf, NULL), 0);
	free(conf.libvirt_uri);
	conf.libvirt_uri = strdup("test:///default");
	conf.shutdown_timeout = 0;
	fd = statedir_open(top, "job-9.0", true);
	assert_true(fd >= 0);
	assert_int_equal(journal_append(fd, JOURNAL_SEED, seed), 0);
	assert_int_equal(mkdirat(fd, "seed", 0700), 0);
	sfd = openat(fd, "seed", O_RDONLY | O_DIRECTORY);
	close(openat(sfd, "user-data", O_WRONLY | O_CREAT, 0600));
	close(openat(sfd, "meta-data", O_WRONLY | O_CREAT, 0600));
	close(sfd);
	close(openat(fd, "seed.iso", O_WRONLY | O_CREAT, 0600));
	assert_int_equal(journal_append(fd, JOURNAL_DETACH, dev), 0);
	assert_int_equal(journal_append(fd, JOURNAL_DOMAIN, dom), 0);

	logged[0] = '\0';
	log_set_level(LOG_LEVEL_INFO);
	assert_int_equal(teardown_replay(&conf, fd, false, &res), -EIO);
	assert_int_equal(res.steps, 3);
	assert_int_equal(res.failed, 1);
	assert_true(res.node_unsafe);
	assert_int_equal(faccessat(fd, "seed.iso", F_OK, 0), -1);
	assert_int_equal(faccessat(fd, "seed", F_OK, 0), -1);
	stopped = strstr(logged, "guest slurmvm-job-9.0 was not running");
	pci = strstr(logged, "PCI device 0000:3b:00.0");
	assert_non_null(stopped);
	assert_non_null(pci);
	assert_true(stopped < pci);

	/* a seed name that leaves the state directory is refused */
	{
		const char *evil[] = { "../x", NULL };
		int fd2 = statedir_open(top, "job-10.0", true);

		assert_int_equal(journal_append(fd2, JOURNAL_SEED, evil), 0);
		assert_int_equal(teardown_replay(&conf, fd2, false, &res),
				 -EIO);
		assert_int_equal(res.failed, 1);
		assert_false(res.node_unsafe);
		close(fd2);
	}
	close(fd);
	vmconf_free(&conf);
}

/* A VFIO group file given to the job user goes back to its owner and mode;
 * a link or a regular file in its place is never touched. */
static void test_devowner(void **state)
{
	struct teardown_result res;
	struct vmconf conf;
	struct stat st;
	char *dev, *link, *plain;
	int fd;

	if (geteuid() != 0)
		skip();
	assert_true(asprintf(&dev, "%s/vfio-12", top) > 0);
	assert_true(asprintf(&link, "%s/vfio-link", top) > 0);
	plain = write_tmp("vfio-plain", "x");
	if (mknod(dev, S_IFCHR | 0600, makedev(1, 3)) < 0)
		skip(); /* no mknod in this container */
	assert_int_equal(symlink(dev, link), 0);
	assert_int_equal(devices_file_chown(dev, NOBODY, NOBODY, 0600, &st), 0);
	assert_int_equal(st.st_uid, 0);
	/* O_PATH|O_NOFOLLOW names the link itself: not a device */
	assert_int_equal(devices_file_chown(link, NOBODY, NOBODY, 0600, NULL),
			 -ENOTTY);
	assert_int_equal(devices_file_chown(plain, NOBODY, NOBODY, 0600, NULL),
			 -ENOTTY);
	assert_int_equal(stat(dev, &st), 0);
	assert_int_equal(st.st_uid, NOBODY);

	assert_int_equal(vmconf_load(&conf, NULL), 0);
	fd = statedir_open(top, "job-11.0", true);
	{
		const char *a[] = { dev, "0", "0", "600", NULL };
		const char *b[] = { link, "0", "0", "644", NULL };

		assert_int_equal(journal_append(fd, JOURNAL_DEVOWNER, a), 0);
		assert_int_equal(journal_append(fd, JOURNAL_DEVOWNER, b), 0);
	}
	assert_int_equal(teardown_replay(&conf, fd, false, &res), -EIO);
	assert_int_equal(res.failed, 1); /* the link */
	assert_true(res.node_unsafe);
	assert_int_equal(stat(dev, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
	vmconf_free(&conf);
	free(dev);
	free(link);
	free(plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta_data),
		cmocka_unit_test(test_user_data),
		cmocka_unit_test(test_bad_names_refused),
		cmocka_unit_test(test_cloud_init_schema),
		cmocka_unit_test(test_job_network),
		cmocka_unit_test(test_shares),
		cmocka_unit_test(test_shares_virtiofs),
		cmocka_unit_test(test_iso),
		cmocka_unit_test(test_read_file_as_user),
		cmocka_unit_test(test_teardown_seed_and_detach),
		cmocka_unit_test(test_devowner),
	};

	log_set_sink(capture_sink);
	return cmocka_run_group_tests(tests, setup, teardown);
}
