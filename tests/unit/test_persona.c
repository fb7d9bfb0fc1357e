/* SPDX-License-Identifier: GPL-2.0-or-later */
/* agent/guest/persona.c's file edits on a root of the test's own: what they add,
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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel/persona_format.h"
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
	assert_int_equal(persona_user_add(root, "alice", 5000, 5000,
					  "/home/alice", NULL),
			 0);
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
	assert_int_equal(persona_user_add(root, "bob", 1, 1, "relative", NULL),
			 -EINVAL);
	assert_int_equal(persona_user_add(root, "bob", 1, 1, "/a:b", NULL),
			 -EINVAL);
	assert_int_equal(persona_member_add(root, "users", "a,b"), -EINVAL);
	/* no member "ali" because of "alice", nor the reverse */
	put_file("/etc/group", "g:x:1:alice\n", 0644);
	assert_int_equal(persona_member_add(root, "g", "ali"), 0);
	assert_string_equal(get_file("/etc/group"), "g:x:1:alice,ali\n");
	/* no shadow file: none made */
	unlink(strcat(strcpy((char[128]){ 0 }, root), "/etc/shadow"));
	assert_int_equal(persona_user_add(root, "bob", 7, 7, "/home/bob", NULL),
			 0);
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
	assert_non_null(strstr(res.text, "group: 'nogid': not NAME:GID"));
	assert_non_null(strstr(res.text, "member: proj: no user= to add"));
	assert_null(strstr(res.text, "unknown"));
	assert_string_equal(identity, "template");
}

/* The whole of a file under the root, malloc'd. */
static char *read_all(const char *rel)
{
	char path[256];
	char *text = NULL;
	size_t size = 0;
	FILE *f, *m = open_memstream(&text, &size);
	int c;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(m);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return text;
}

static void make_dir(const char *rel, mode_t mode)
{
	char path[384];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(persona_mkdir_p(path, mode) >= 0, 1);
}

static size_t count_lines(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);

	for (const char *l = text; l && *l;
	     l = strchr(l, '\n'), l = l ? l + 1 : l)
		n += strncmp(l, prefix, len) == 0;
	return n;
}

/* A job of 2400 nodes with long names and 256 long group names (issue
 * #41 item 1): the file is far beyond the one 64 KiB frame the relay took;
 * written, read and checked as the relay does, sent in frames, gathered
 * and applied by the agent whole. */
static void test_persona_large(void **state)
{
	char path[256], name[256], *text, **v = NULL, why[256];
	struct persona_writer w;
	struct persona_parts parts = { 0 };
	struct persona_result res;
	struct proto_buf b = { 0 };
	const uint8_t *at;
	size_t n, left, hosts = 2400, groups = 256;
	int r = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/persona", root);
	f = fopen(path, "w");
	assert_non_null(f);
	persona_writer_init(&w, f);
	persona_writef(&w, "group", "alice:%u", (unsigned)getgid());
	for (size_t i = 0; i < groups; i++)
		persona_writef(&w, "group", "%0200zu-g:%zu", i, 7000 + i);
	persona_writef(&w, "user", "alice:%u:%u:/home/alice",
		       (unsigned)getuid(), (unsigned)getgid());
	for (size_t i = 0; i < groups; i++)
		persona_writef(&w, "member", "%0200zu-g", i);
	persona_writef(&w, "authorized_key", "ssh-ed25519 AAAAC3Nza alice@x");
	for (size_t i = 0; i < hosts; i++)
		persona_writef(&w, "hosts", "10.%zu.%zu.1 node-%058zu", i / 250,
			       i % 250, i);
	assert_int_equal(w.error, 0);
	assert_true(w.bytes > 4 * PROTO_MAX_PAYLOAD);
	fclose(f);

	/* the relay: the file, its entries, its frames */
	text = read_all("/persona");
	assert_int_equal(persona_text_parse(text, &v, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2 * groups + 3 + hosts);
	assert_int_equal(persona_frames_put(&b, v), 0);

	/* the agent: every frame gathered, then applied once */
	at = proto_buf_head(&b);
	left = proto_buf_pending(&b);
	while (left) {
		struct proto_header h;
		struct proto_persona m;

		assert_int_equal(proto_header_decode(at, left, &h), 0);
		assert_int_equal(proto_decode_persona(at + PROTO_HEADER_SIZE,
						      h.length, &m),
				 0);
		assert_int_equal(r, 0);
		r = persona_parts_take(&parts, m.entries);
		proto_persona_free(&m);
		at += PROTO_HEADER_SIZE + h.length;
		left -= PROTO_HEADER_SIZE + h.length;
	}
	assert_int_equal(r, 1);
	make_dir("/home/alice", 0755);
	persona_apply(parts.entries, root, NULL, 0, &res);
	assert_string_equal(res.text, "");
	assert_int_equal(res.failures, 0);
	persona_parts_free(&parts);
	proto_buf_free(&b);
	free(v);
	free(text);

	text = read_all("/etc/hosts");
	assert_int_equal(count_lines(text, "10."), hosts);
	snprintf(name, sizeof(name),
		 "10.%zu.%zu.1 node-%058zu\n" PERSONA_HOSTS_END,
		 (hosts - 1) / 250, (hosts - 1) % 250, hosts - 1);
	assert_non_null(strstr(text, name));
	free(text);
	text = read_all("/etc/group");
	snprintf(name, sizeof(name), "%0200zu-g:x:%zu:alice\n", groups - 1,
		 7000 + groups - 1);
	assert_non_null(strstr(text, name));
	free(text);
	text = read_all("/home/alice/.ssh/authorized_keys");
	assert_string_equal(text, "ssh-ed25519 AAAAC3Nza alice@x\n");
	free(text);
}

/* Issue #41 item 9: the user's keys, as a cold boot's seed gives them. */
static void test_authorized_keys(void **state)
{
	char user[96], path[256], other[256];
	char *e[] = { user, "authorized_key=ssh-ed25519 AAAAC3 alice@host",
		      "authorized_key=ssh-rsa AAAAB3 alice@other", NULL };
	char *keys[] = { "ssh-ed25519 AAAAC3 x" };
	struct persona_result res;
	char *text;

	snprintf(user, sizeof(user), "user=alice:%u:%u:/home/alice",
		 (unsigned)getuid(), (unsigned)getgid());
	make_dir("/home/alice", 0755);
	persona_apply(e, root, NULL, 0, &res);
	assert_string_equal(res.text, "");
	assert_int_equal(mode_of("/home/alice/.ssh"), 0700);
	assert_int_equal(mode_of("/home/alice/.ssh/authorized_keys"), 0600);
	text = read_all("/home/alice/.ssh/authorized_keys");
	assert_string_equal(text, "ssh-ed25519 AAAAC3 alice@host\n"
				  "ssh-rsa AAAAB3 alice@other\n");
	free(text);
	/* twice: the same; a line of the user's own is kept */
	put_file("/home/alice/.ssh/authorized_keys", "own key\n", 0644);
	persona_apply(e, root, NULL, 0, &res);
	persona_apply(e, root, NULL, 0, &res);
	assert_int_equal(res.failures, 0);
	text = read_all("/home/alice/.ssh/authorized_keys");
	assert_string_equal(text, "own key\nssh-ed25519 AAAAC3 alice@host\n"
				  "ssh-rsa AAAAB3 alice@other\n");
	free(text);
	assert_int_equal(mode_of("/home/alice/.ssh/authorized_keys"), 0600);

	/* root code on the user's home follows no symlink */
	make_dir("/home/bob", 0755);
	make_dir("/elsewhere", 0755);
	snprintf(path, sizeof(path), "%s/home/bob/.ssh", root);
	snprintf(other, sizeof(other), "%s/elsewhere", root);
	assert_int_equal(symlink(other, path), 0);
	assert_int_equal(persona_keys_install(root, "/home/bob", getuid(),
					      getgid(), keys, 1),
			 -ELOOP);
	snprintf(path, sizeof(path), "%s/elsewhere/authorized_keys", root);
	assert_int_equal(access(path, F_OK), -1);
	make_dir("/home/carol/.ssh", 0700);
	snprintf(path, sizeof(path), "%s/home/carol/.ssh/authorized_keys",
		 root);
	snprintf(other, sizeof(other), "%s/etc/passwd", root);
	assert_int_equal(symlink(other, path), 0);
	text = read_all("/etc/passwd");
	assert_int_equal(persona_keys_install(root, "/home/carol", getuid(),
					      getgid(), keys, 1),
			 -ELOOP);
	assert_string_equal(get_file("/etc/passwd"), text);
	free(text);
}

static volatile sig_atomic_t hup;

static void on_hup(int sig)
{
	hup = 1;
}

/* A stand-in sshd: its /proc entry under the root; on SIGHUP it listens
 * on a new socket (its fd link changes), as sshd's re-execution does. */
static pid_t fake_sshd(const char *ppid, bool listener)
{
	char dir[256], link[300], tmp[320], ready;
	int pipefd[2];
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[0]);
		if (listener)
			signal(SIGHUP, on_hup);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(1);
		while (!hup)
			usleep(1000);
		snprintf(link, sizeof(link), "%s/proc/%ld/fd/3", root,
			 (long)getpid());
		snprintf(tmp, sizeof(tmp), "%s.new", link);
		if (symlink("socket:[222]", tmp) < 0 || rename(tmp, link) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &ready, 1), 1);
	close(pipefd[0]);
	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	make_dir(dir, 0755);
	snprintf(dir, sizeof(dir), "/proc/%ld/comm", (long)pid);
	put_file(dir, "sshd\n", 0644);
	snprintf(dir, sizeof(dir), "/proc/%ld/stat", (long)pid);
	snprintf(tmp, sizeof(tmp), "%ld (sshd) S %s 1 1 0 -1\n", (long)pid,
		 ppid);
	put_file(dir, tmp, 0644);
	snprintf(link, sizeof(link), "%s/proc/%ld/fd/3", root, (long)pid);
	assert_int_equal(symlink("socket:[111]", link), 0);
	return pid;
}

/* Issue #41 item 8: two jobs of one template must not share host keys,
 * not even for a moment after READY: the template's go, new ones are
 * there and a running sshd has been restarted with them when
 * persona_apply() returns (its answer goes after). */
static void test_ssh_host_keys(void **state)
{
	char *e[] = { "entropy=00112233445566778899aabbccddeeff", NULL };
	char link[300], target[64], path[256];
	struct persona_result res;
	pid_t listener, session;
	ssize_t n;
	char *text, *mid;

	if (access("/usr/bin/ssh-keygen", X_OK) < 0)
		skip();
	make_dir("/etc/ssh", 0755);
	make_dir("/usr/bin", 0755);
	make_dir("/var/lib/dbus", 0755);
	snprintf(path, sizeof(path), "%s/usr/bin/ssh-keygen", root);
	assert_int_equal(symlink("/usr/bin/ssh-keygen", path), 0);
	put_file("/etc/ssh/sshd_config", "", 0644);
	put_file("/etc/ssh/ssh_host_ed25519_key", "template\n", 0600);
	put_file("/etc/ssh/ssh_host_ed25519_key.pub", "template\n", 0644);
	put_file("/etc/machine-id", "template\n", 0444);
	put_file("/var/lib/dbus/machine-id", "template\n", 0444);
	listener = fake_sshd("1", true);
	session = fake_sshd("4242", false); /* a connection's: left alone */

	persona_apply(e, root, NULL, 0, &res);
	/* not root: RNDADDENTROPY is refused, nothing else */
	assert_null(strstr(res.text, "ssh"));
	assert_null(strstr(res.text, "machine-id"));
	assert_true(res.failures <= 1);

	text = read_all("/etc/ssh/ssh_host_ed25519_key");
	assert_non_null(strstr(text, "BEGIN OPENSSH PRIVATE KEY"));
	free(text);
	text = read_all("/etc/ssh/ssh_host_ed25519_key.pub");
	assert_int_equal(strncmp(text, "ssh-ed25519 ", 12), 0);
	free(text);
	mid = read_all("/etc/machine-id");
	assert_int_equal(strlen(mid), 33);
	assert_string_not_equal(mid, "template\n");
	text = read_all("/var/lib/dbus/machine-id");
	assert_string_equal(text, mid);
	free(text);
	free(mid);

	snprintf(link, sizeof(link), "%s/proc/%ld/fd/3", root, (long)listener);
	n = readlink(link, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "socket:[222]");
	assert_int_equal(waitpid(session, NULL, WNOHANG), 0);
	kill(listener, SIGKILL);
	kill(session, SIGKILL);
	waitpid(listener, NULL, 0);
	waitpid(session, NULL, 0);
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
		cmocka_unit_test_setup_teardown(test_persona_large, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_authorized_keys, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ssh_host_keys, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
