/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job state directory and journal: what root trusts must not be
 * steerable by symlinks or edits. */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "job/journal.h"
#include "core/log.h"

static char top[256], errors[4096];

static void capture_sink(enum log_level level, const char *msg)
{
	if (level <= LOG_LEVEL_WARN) {
		strncat(errors, msg, sizeof(errors) - strlen(errors) - 2);
		strcat(errors, "\n");
	}
}

static int setup(void **state)
{
	snprintf(top, sizeof(top), "/tmp/svm-journal-XXXXXX");
	return mkdtemp(top) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}

static void test_name(void **state)
{
	char name[64];

	assert_int_equal(statedir_name(1234, 2, name, sizeof(name)), 0);
	assert_string_equal(name, "job-1234.2");
	assert_int_equal(statedir_name(1234, 2, name, 5), -ENAMETOOLONG);
}

static void test_roundtrip_and_escaping(void **state)
{
	const char *a1[] = { "/var/lib/ovl/job 1.qcow2", NULL };
	const char *a2[] = { "tab\there", "nl\nand%pct", "", NULL };
	struct journal j;
	int fd;

	if (geteuid() != 0)
		skip();
	fd = statedir_open(top, "job-1.0", true);
	assert_true(fd >= 0);
	assert_int_equal(journal_append(fd, JOURNAL_OVERLAY, a1), 0);
	assert_int_equal(journal_append(fd, JOURNAL_IBRECORD, a2), 0);
	assert_int_equal(journal_append(fd, JOURNAL_DOMAIN, NULL), 0);
	assert_int_equal(journal_read(fd, &j), 0);
	assert_int_equal(j.n_entries, 3);
	assert_string_equal(j.entries[0].verb,
			    journal_verb_name(JOURNAL_OVERLAY));
	assert_int_equal(j.entries[0].kind, JOURNAL_OVERLAY);
	assert_int_equal(j.entries[1].kind, JOURNAL_IBRECORD);
	assert_int_equal(j.entries[2].kind, JOURNAL_DOMAIN);
	assert_string_equal(j.entries[0].args[0], "/var/lib/ovl/job 1.qcow2");
	assert_string_equal(j.entries[1].args[0], "tab\there");
	assert_string_equal(j.entries[1].args[1], "nl\nand%pct");
	assert_string_equal(j.entries[1].args[2], "");
	assert_int_equal(j.entries[1].n_args, 3);
	assert_int_equal(j.entries[2].n_args, 0);
	journal_free(&j);
	close(fd);
}

/* The table: each verb once, named, looked up by its name; a verb out of
 * the enum is never written. */
static void test_verb_table(void **state)
{
	const char *a[] = { "x", NULL };
	int fd;

	for (size_t i = 0; i < JOURNAL_N_VERBS; i++) {
		const char *name = journal_verbs[i].name;

		assert_non_null(name);
		assert_int_equal(journal_verb_lookup(name), (int)i);
		assert_true(journal_verbs[i].n_args >= 1 &&
			    journal_verbs[i].n_args <= JOURNAL_MAX_ARGS);
	}
	assert_int_equal(journal_verb_lookup("OVERLAYX"), JOURNAL_UNKNOWN);
	assert_int_equal(journal_verb_lookup(""), JOURNAL_UNKNOWN);
	assert_string_equal(journal_verb_name(JOURNAL_UNKNOWN), "?");
	assert_true(journal_verb_is(JOURNAL_NFT,
				    JOURNAL_ISOLATES | JOURNAL_PER_JOB));
	assert_false(journal_verb_is(JOURNAL_DEVOWNER, JOURNAL_ISOLATES));
	assert_false(journal_verb_is(JOURNAL_UNKNOWN, 0));
	if (geteuid() != 0)
		skip();
	fd = statedir_open(top, "job-9.0", true);
	assert_true(fd >= 0);
	errors[0] = '\0';
	assert_int_equal(journal_append(fd, JOURNAL_UNKNOWN, a), -EINVAL);
	assert_int_equal(journal_append(fd, (enum journal_verb) - 1, a),
			 -EINVAL);
	assert_non_null(strstr(errors, "journal record of no verb"));
	close(fd);
}

static void test_torn_and_malformed_lines(void **state)
{
	struct journal j;
	int fd, jfd;
	const char *text = "A\tx\nB\t%zz\nC\ty\nD\tpartial";

	if (geteuid() != 0)
		skip();
	fd = statedir_open(top, "job-2.0", true);
	assert_true(fd >= 0);
	jfd = openat(fd, JOURNAL_FILE, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(jfd, text, strlen(text)), (ssize_t)strlen(text));
	close(jfd);
	errors[0] = '\0';
	assert_int_equal(journal_read(fd, &j), 0);
	assert_int_equal(j.n_entries, 2);
	assert_string_equal(j.entries[0].verb, "A");
	assert_string_equal(j.entries[1].verb, "C");
	/* verbs of no journal of ours: read, to be skipped by the replay */
	assert_int_equal(j.entries[0].kind, JOURNAL_UNKNOWN);
	assert_int_equal(j.entries[1].kind, JOURNAL_UNKNOWN);
	assert_non_null(strstr(errors, "line 2 is malformed"));
	assert_non_null(strstr(errors, "line 4 is incomplete"));
	journal_free(&j);
	close(fd);
}

static void test_tampered_journal_refused(void **state)
{
	struct journal j;
	char path[512];
	int fd;
	const char *a[] = { "x", NULL };

	if (geteuid() != 0)
		skip();
	fd = statedir_open(top, "job-3.0", true);
	assert_true(fd >= 0);
	assert_int_equal(journal_append(fd, JOURNAL_RELAY, a), 0);
	snprintf(path, sizeof(path), "%s/job-3.0/%s", top, JOURNAL_FILE);
	chmod(path, 0666);
	errors[0] = '\0';
	assert_int_equal(journal_read(fd, &j), -EPERM);
	assert_non_null(strstr(errors, "not a private file of root's"));
	assert_int_equal(chown(path, 65534, 65534), 0);
	chmod(path, 0600);
	assert_int_equal(journal_read(fd, &j), -EPERM);

	/* A journal replaced by a symlink is not followed. */
	unlink(path);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_true(journal_read(fd, &j) < 0);
	assert_true(journal_append(fd, JOURNAL_RELAY, a) < 0);
	close(fd);
}

static void test_statedir_symlink_refused(void **state)
{
	char link[512], victim[512], probe[600];
	struct stat st;

	if (geteuid() != 0)
		skip();
	snprintf(victim, sizeof(victim), "%s/victim", top);
	snprintf(link, sizeof(link), "%s/job-4.0", top);
	mkdir(victim, 0700);
	snprintf(probe, sizeof(probe), "%s/keep", victim);
	close(open(probe, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(symlink(victim, link), 0);
	assert_true(statedir_open(top, "job-4.0", true) < 0);
	/* Removing the state "directory" removes the link, not its target. */
	assert_int_equal(statedir_remove(top, "job-4.0"), 0);
	assert_int_equal(lstat(link, &st), -1);
	assert_int_equal(stat(probe, &st), 0);
}

static void test_statedir_remove_does_not_follow(void **state)
{
	char path[512], outside[512], keep[600];
	struct stat st;
	int fd;

	if (geteuid() != 0)
		skip();
	snprintf(outside, sizeof(outside), "%s/outside", top);
	mkdir(outside, 0755);
	snprintf(keep, sizeof(keep), "%s/precious", outside);
	close(open(keep, O_CREAT | O_WRONLY, 0600));
	fd = statedir_open(top, "job-5.0", true);
	assert_true(fd >= 0);
	mkdirat(fd, "sock", 0700);
	snprintf(path, sizeof(path), "%s/job-5.0/sock/evil", top);
	assert_int_equal(symlink(outside, path), 0);
	close(fd);
	assert_int_equal(statedir_remove(top, "job-5.0"), 0);
	snprintf(path, sizeof(path), "%s/job-5.0", top);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(stat(keep, &st), 0);
	/* Twice is fine: nothing left is not an error. */
	assert_int_equal(statedir_remove(top, "job-5.0"), 0);
}

/* A tree deeper than the descriptor limit (a user's sock/ or seed/ in an
 * old layout, a hostile guest's leftovers) is removed all the same. */
static void test_statedir_remove_deep_tree(void **state)
{
	struct rlimit old, low = { .rlim_cur = 32 };
	char path[512];
	struct stat st;
	int fd, sub;

	snprintf(path, sizeof(path), "%s/job-7.0", top);
	assert_int_equal(mkdir(path, 0711), 0);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (int i = 0; i < 3000; i++) {
		assert_int_equal(mkdirat(fd, "d", 0700), 0);
		if (i % 100 == 0)
			close(openat(fd, "f", O_CREAT | O_WRONLY, 0600));
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		assert_true(sub >= 0);
		close(fd);
		fd = sub;
	}
	close(fd);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low.rlim_max = old.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	fd = statedir_remove(top, "job-7.0");
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(fd, 0);
	assert_int_equal(lstat(path, &st), -1);
}

static void test_writable_statedir_refused(void **state)
{
	char path[512];

	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/job-6.0", top);
	mkdir(path, 0777);
	chmod(path, 0777);
	errors[0] = '\0';
	assert_int_equal(statedir_open(top, "job-6.0", true), -EPERM);
	assert_non_null(strstr(errors, "writable only by root"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_roundtrip_and_escaping),
		cmocka_unit_test(test_verb_table),
		cmocka_unit_test(test_torn_and_malformed_lines),
		cmocka_unit_test(test_tampered_journal_refused),
		cmocka_unit_test(test_statedir_symlink_refused),
		cmocka_unit_test(test_statedir_remove_does_not_follow),
		cmocka_unit_test(test_statedir_remove_deep_tree),
		cmocka_unit_test(test_writable_statedir_refused),
	};

	log_set_sink(capture_sink);
	return cmocka_run_group_tests(tests, setup, teardown);
}
