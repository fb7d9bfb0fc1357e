/* SPDX-License-Identifier: GPL-2.0-or-later */
/* agent/persona.c's file edits on a root of the test's own: what they add,
 * that applying them twice changes nothing, the job's block of /etc/hosts. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "persona.h"

static char root[64];

static void put_file(const char *rel, const char *text, mode_t mode)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static char *get_file(const char *rel)
{
	static char buf[8192];
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static mode_t mode_of(const char *rel)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static int setup(void **state)
{
	char etc[96];

	snprintf(root, sizeof(root), "/tmp/test_persona.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(etc, sizeof(etc), "%s/etc", root);
	if (mkdir(etc, 0755) < 0)
		return -1;
	put_file("/etc/group", "root:x:0:\nusers:x:100:\nwheel:x:10:root\n",
		 0644);
	put_file("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0644);
	put_file("/etc/shadow", "root:*:0:0:99999:7:::", 0640);
	put_file("/etc/hosts", "127.0.0.1 localhost\n", 0644);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* Applies what a job's persona asks of the account files. */
static void apply_accounts(void)
{
	assert_int_equal(persona_group_add(root, "alice", 5000), 0);
	assert_int_equal(persona_group_add(root, "proj", 6000), 0);
	assert_int_equal(persona_group_add(root, "users", 999), 0);
	assert_int_equal(
		persona_user_add(root, "alice", 5000, 5000, "/home/alice"), 0);
	assert_int_equal(persona_member_add(root, "proj", "alice"), 0);
	assert_int_equal(persona_member_add(root, "wheel", "alice"), 0);
}

static void test_accounts(void **state)
{
	char group[1024], passwd[1024], shadow[1024];

	apply_accounts();
	assert_string_equal(get_file("/etc/group"),
			    "root:x:0:\nusers:x:100:\nwheel:x:10:root,alice\n"
			    "alice:x:5000:\nproj:x:6000:alice\n");
	assert_string_equal(get_file("/etc/passwd"),
			    "root:x:0:0:root:/root:/bin/sh\n"
			    "alice:x:5000:5000::/home/alice:/bin/sh\n");
	/* a last line without its newline gets one */
	assert_string_equal(get_file("/etc/shadow"),
			    "root:*:0:0:99999:7:::\n"
			    "alice:*:0:0:99999:7:::\n");
	assert_int_equal(mode_of("/etc/shadow"), 0640);
	assert_int_equal(mode_of("/etc/group"), 0644);

	/* twice: the same files */
	snprintf(group, sizeof(group), "%s", get_file("/etc/group"));
	snprintf(passwd, sizeof(passwd), "%s", get_file("/etc/passwd"));
	snprintf(shadow, sizeof(shadow), "%s", get_file("/etc/shadow"));
	apply_accounts();
	assert_string_equal(get_file("/etc/group"), group);
	assert_string_equal(get_file("/etc/passwd"), passwd);
	assert_string_equal(get_file("/etc/shadow"), shadow);
}

static void test_accounts_refused(void **state)
{
	assert_int_equal(persona_member_add(root, "nosuch", "alice"), -ENOENT);
	assert_int_equal(persona_group_add(root, "a:b", 1), -EINVAL);
	assert_int_equal(persona_group_add(root, "", 1), -EINVAL);
	assert_int_equal(persona_user_add(root, "bob", 1, 1, "relative"),
			 -EINVAL);
	assert_int_equal(persona_user_add(root, "bob", 1, 1, "/a:b"), -EINVAL);
	assert_int_equal(persona_member_add(root, "users", "a,b"), -EINVAL);
	/* no member "ali" because of "alice", nor the reverse */
	put_file("/etc/group", "g:x:1:alice\n", 0644);
	assert_int_equal(persona_member_add(root, "g", "ali"), 0);
	assert_string_equal(get_file("/etc/group"), "g:x:1:alice,ali\n");
	/* no shadow file: none made */
	unlink(strcat(strcpy((char[128]){ 0 }, root), "/etc/shadow"));
	assert_int_equal(persona_user_add(root, "bob", 7, 7, "/home/bob"), 0);
	assert_int_equal(
		access(strcat(strcpy((char[128]){ 0 }, root), "/etc/shadow"),
		       F_OK),
		-1);
}

static void test_hosts(void **state)
{
	char *a[] = { "10.0.0.1 n1", "10.0.0.2 n2" };
	char *b[] = { "10.0.0.9 n9" };
	const char *want_a =
		"127.0.0.1 localhost\n" PERSONA_HOSTS_BEGIN "\n"
		"10.0.0.1 n1\n10.0.0.2 n2\n" PERSONA_HOSTS_END "\n";

	assert_int_equal(persona_hosts_set(root, a, 2), 0);
	assert_string_equal(get_file("/etc/hosts"), want_a);
	assert_int_equal(persona_hosts_set(root, a, 2), 0);
	assert_string_equal(get_file("/etc/hosts"), want_a);
	/* replaced in place, what follows kept */
	put_file("/etc/hosts",
		 "127.0.0.1 localhost\n" PERSONA_HOSTS_BEGIN "\n"
		 "10.0.0.1 old\n" PERSONA_HOSTS_END "\n::1 localhost6\n",
		 0644);
	assert_int_equal(persona_hosts_set(root, b, 1), 0);
	assert_string_equal(get_file("/etc/hosts"),
			    "127.0.0.1 localhost\n" PERSONA_HOSTS_BEGIN "\n"
			    "10.0.0.9 n9\n" PERSONA_HOSTS_END
			    "\n::1 localhost6\n");
	/* no file, no newline at the end */
	put_file("/etc/hosts", "127.0.0.1 localhost", 0600);
	assert_int_equal(persona_hosts_set(root, b, 1), 0);
	assert_string_equal(get_file("/etc/hosts"),
			    "127.0.0.1 localhost\n" PERSONA_HOSTS_BEGIN "\n"
			    "10.0.0.9 n9\n" PERSONA_HOSTS_END "\n");
	assert_int_equal(mode_of("/etc/hosts"), 0600);
	unlink(strcat(strcpy((char[128]){ 0 }, root), "/etc/hosts"));
	assert_int_equal(persona_hosts_set(root, b, 1), 0);
	assert_string_equal(get_file("/etc/hosts"), PERSONA_HOSTS_BEGIN
			    "\n10.0.0.9 n9\n" PERSONA_HOSTS_END "\n");
}

static void test_mkdir_p(void **state)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/home/a b/c", root);
	assert_int_equal(persona_mkdir_p(path, 0700), 1);
	assert_int_equal(persona_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/etc/group", root);
	assert_int_equal(persona_mkdir_p(path, 0700), -ENOTDIR);
}

/* The parts persona_apply() can do without root in a guest: unknown keys
 * and malformed values are failures or warnings, never a crash. */
static void test_apply_malformed(void **state)
{
	char *e[] = {
		"group=nogid",	 "group=g:x",  "user=a:1",   "user=a:1:2",
		"member=proj",	 "net=bad",    "share=t 9p", "share=t nfs o /x",
		"time=abc",	 "entropy=zz", "entropy=",   "hostname=a b",
		"unknown=value", NULL
	};
	struct persona_result res;
	char identity[64] = "template";

	persona_apply(e, root, identity, sizeof(identity), &res);
	assert_int_equal(res.failures, 12);
	assert_non_null(strstr(res.text, "group: 'nogid' is no NAME:GID"));
	assert_non_null(strstr(res.text, "member: proj: no user= to add"));
	assert_null(strstr(res.text, "unknown"));
	assert_string_equal(identity, "template");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_accounts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accounts_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hosts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkdir_p, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_malformed, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
