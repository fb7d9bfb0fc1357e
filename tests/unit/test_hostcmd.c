/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The host's server of a --vm-batch script's Slurm commands (hostcmd.h),
 * run in a child over a socketpair whose other end plays a hostile guest:
 * the environment a command gets is the batch step's plus the guest's
 * checked Slurm option variables and, renamed for the tasks, its others,
 * and a guest that never reads its answers
 * cannot grow the server's queue. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent_shared/hostcmd.h"
#include "hostcmd_env.h"
#include "channel/proto.h"
#include "core/strutil.h"
#include "agent_shared/util.h"

/* Over the server's 1 MiB bound plus what the socket buffers and the
 * reader hold, far under the flood. */
#define FLOOD_BYTES	     (16u * 1024u * 1024u)
#define FLOOD_ACCEPTED_MAX   (4u * 1024u * 1024u)
#define FLOOD_MEMORY_MAX_KIB (16u * 1024u)

static pid_t server_start(int *guest)
{
	int sv[2];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		signal(SIGPIPE, SIG_IGN); /* as in slurm-vm-exec */
		hostcmd_serve(sv[1]);
	}
	close(sv[1]);
	fd_set_nonblock(sv[0], true);
	*guest = sv[0];
	return pid;
}

static void server_stop(pid_t pid, int guest)
{
	int status;

	close(guest);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void put_exec(struct proto_buf *b, uint32_t session, char **argv,
		     char **env)
{
	struct proto_exec m = { .cwd = "/", .argv = argv, .env = env };

	assert_int_equal(proto_put_exec(b, session, &m), 0);
}

/* Bytes of the server's memory in use (VmRSS, or VmHWM: its peak), KiB. */
static unsigned long proc_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	unsigned long kib = 0;
	size_t len = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			kib = strtoul(line + len + 1, NULL, 10);
	fclose(f);
	assert_true(kib > 0);
	return kib;
}

static void test_env_kind(void **state)
{
	char long_value[HOSTCMD_ENV_GUEST_VALUE_MAX + 32] = "SLURM_JOB_NAME=";
	static const char *const option[] = {
		"SLURM_NTASKS=2",	  "SBATCH_TIMELIMIT=10",
		"SRUN_CPUS_PER_TASK=4",	  "SQUEUE_FORMAT=%i %j",
		"SLURM_VM_IMAGE=a.qcow2", "SLURM_EXPORT_ENV=NONE",
		"SALLOC_PARTITION=debug", "SLURM_JOB_NAME=",
	};
	static const char *const guest[] = {
		"LD_PRELOAD=/tmp/x.so",
		"LD_LIBRARY_PATH=/tmp",
		"PATH=/tmp",
		"PMIX_SERVER_URI=tcp4://127.0.0.1:1",
		"OMP_NUM_THREADS=4",
		"_private=a\nb\x1b",
		"MSG=caf\xc3\xa9",
		"EMPTY=",
	};
	static const char *const refused[] = {
		"SLURM_CONF=/tmp/x",
		"SLURM_CONF_SERVER=evil:6817",
		"SLURM_PROLOG=/tmp/x",
		"SLURM_EPILOG=/tmp/x",
		"SLURM_TASK_PROLOG=/tmp/x",
		"SLURM_TASK_EPILOG=/tmp/x",
		"SLURM_CONTAINER=/tmp/bundle",
		"SLURM_TIME_FORMAT=\x1b[2J",
		"SLURM_JOB_NAME=a\nb",
		"SLURM-X=1",
		"SLURM_NTASKS",
		"BASH_FUNC_f%%=() { :; }",
		"1X=1",
		"=1",
		PROTO_ENV_GUEST_PREFIX "PATH=/tmp",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(option) / sizeof(option[0]); i++)
		assert_int_equal(hostcmd_env_kind(option[i]),
				 HOSTCMD_ENV_OPTION);
	for (size_t i = 0; i < sizeof(guest) / sizeof(guest[0]); i++)
		assert_int_equal(hostcmd_env_kind(guest[i]), HOSTCMD_ENV_GUEST);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_int_equal(hostcmd_env_kind(refused[i]),
				 HOSTCMD_ENV_REFUSED);
	memset(long_value + strlen(long_value), 'a', HOSTCMD_ENV_VALUE_MAX + 1);
	assert_int_equal(hostcmd_env_kind(long_value), HOSTCMD_ENV_REFUSED);
	long_value[strlen("SLURM_JOB_NAME=") + HOSTCMD_ENV_VALUE_MAX] = '\0';
	assert_int_equal(hostcmd_env_kind(long_value), HOSTCMD_ENV_OPTION);
	/* The same lengths for the tasks' variables. */
	memcpy(long_value, "GUEST_JOB_NAME", 14);
	memset(long_value + 15, 'a', HOSTCMD_ENV_GUEST_VALUE_MAX);
	assert_int_equal(hostcmd_env_kind(long_value), HOSTCMD_ENV_GUEST);
	long_value[15 + HOSTCMD_ENV_GUEST_VALUE_MAX] = 'a';
	long_value[16 + HOSTCMD_ENV_GUEST_VALUE_MAX] = '\0';
	assert_int_equal(hostcmd_env_kind(long_value), HOSTCMD_ENV_REFUSED);
}

static void test_env_build(void **state)
{
	char *host[] = { "PATH=/usr/bin", "SLURM_JOB_ID=7", "SLURM_NTASKS=1",
			 PROTO_ENV_GUEST_PREFIX "PATH=/home/u/bin", NULL };
	char *guest[] = { "PATH=/tmp",	    "LD_PRELOAD=/tmp/x.so",
			  "SLURM_NTASKS=2", "SLURM_CONF=/tmp/x",
			  "SBATCH_QOS=low", NULL };
	char **env = hostcmd_env_build(host, guest);

	(void)state;
	assert_non_null(env);
	assert_string_equal(env[0], "PATH=/usr/bin");
	assert_string_equal(env[1], "SLURM_JOB_ID=7");
	assert_string_equal(env[2], "SLURM_NTASKS=2");
	assert_string_equal(env[3], PROTO_ENV_GUEST_PREFIX "PATH=/tmp");
	assert_string_equal(env[4],
			    PROTO_ENV_GUEST_PREFIX "LD_PRELOAD=/tmp/x.so");
	assert_string_equal(env[5], "SBATCH_QOS=low");
	assert_null(env[6]);
	strv_free(env);
}

/* Frames from @guest until session @session's EXIT; its stdout into @out. */
static void read_until_exit(int guest, uint32_t session, struct proto_buf *out)
{
	struct proto_reader rd;
	struct proto_frame f;
	bool done = false;

	assert_int_equal(proto_reader_init(&rd), 0);
	while (!done) {
		struct pollfd p = { guest, POLLIN, 0 };
		const uint8_t *data;
		size_t len;
		uint8_t st;

		assert_int_equal(poll(&p, 1, 10000), 1);
		assert_int_equal(proto_reader_pull(&rd, guest), 0);
		while (proto_reader_next(&rd, &f) > 0) {
			assert_int_equal(f.hdr.session, session);
			if (f.hdr.kind == PROTO_EXIT)
				done = true;
			if (f.hdr.kind == PROTO_DATA &&
			    proto_decode_data(f.payload, f.length, &st, &data,
					      &len) == 0 &&
			    st == PROTO_STDOUT)
				proto_buf_append(out, data, len);
		}
	}
	proto_buf_append(out, "", 1);
	proto_reader_free(&rd);
}

static bool has_line(const char *text, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, line, len) && (p[len] == '\n' || !p[len]))
			return true;
	return false;
}

static bool has_name(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, name, len) && p[len] == '=')
			return true;
	return false;
}

/* The host's srun (here: a script printing its environment, first in the
 * server's PATH) sees the batch step's environment, the guest's good
 * option variable and its other variables renamed, nothing else the guest
 * sent. */
static void test_command_env(void **state)
{
	char dir[] = "/tmp/test_hostcmd.XXXXXX", script[64], path[128];
	char long_value[HOSTCMD_ENV_VALUE_MAX + 32] = "SLURM_JOB_NAME=";
	char *argv[] = { "srun", NULL };
	char *env[] = { "LD_PRELOAD=/tmp/evil.so", "SLURM_CONF=/tmp/x",
			"PMIX_SERVER_URI=tcp4://127.0.0.1:1", "PATH=/tmp",
			"SLURM_NTASKS=2", "SLURM_TIME_FORMAT=\x1b]0;x\x07",
			long_value, "OMP_NUM_THREADS=4",
			"GREETING=caf\xc3\xa9 au lait",
			/* pre-renamed: would reach the tasks as X */
			PROTO_ENV_GUEST_PREFIX "X=1", NULL };
	struct proto_buf b = { 0 }, out = { 0 };
	const char *text;
	FILE *f;
	int guest;
	pid_t pid;

	(void)state;
	memset(long_value + strlen(long_value), 'a', HOSTCMD_ENV_VALUE_MAX + 1);
	long_value[sizeof(long_value) - 1] = '\0';
	assert_non_null(mkdtemp(dir));
	snprintf(script, sizeof(script), "%s/srun", dir);
	f = fopen(script, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nexec env\n", f);
	fclose(f);
	assert_int_equal(chmod(script, 0755), 0);
	/* The batch step's environment. */
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", dir);
	setenv("PATH", path, 1);
	setenv("SLURM_JOB_ID", "4242", 1);
	setenv("SLURM_NTASKS", "1", 1);
	unsetenv("LD_PRELOAD");
	unsetenv("SLURM_CONF");
	unsetenv("PMIX_SERVER_URI");
	unsetenv("SLURM_TIME_FORMAT");
	unsetenv("SLURM_JOB_NAME");
	unsetenv("OMP_NUM_THREADS");
	unsetenv("GREETING");

	pid = server_start(&guest);
	put_exec(&b, 1, argv, env);
	assert_int_equal(
		write_all(guest, proto_buf_head(&b), proto_buf_pending(&b)), 0);
	read_until_exit(guest, 1, &out);
	server_stop(pid, guest);
	text = (const char *)proto_buf_head(&out);

	assert_true(has_line(text, "SLURM_JOB_ID=4242"));
	assert_true(has_line(text, "SLURM_NTASKS=2"));
	assert_false(has_line(text, "SLURM_NTASKS=1"));
	assert_true(has_name(text, "PATH"));
	assert_false(has_line(text, "PATH=/tmp"));
	assert_false(has_name(text, "LD_PRELOAD"));
	assert_false(has_name(text, "SLURM_CONF"));
	assert_false(has_name(text, "PMIX_SERVER_URI"));
	assert_false(has_name(text, "SLURM_TIME_FORMAT"));
	assert_false(has_name(text, "SLURM_JOB_NAME"));
	/* The guest's other variables, for the step's tasks in the guests,
	 * renamed so that nothing on the host takes them. */
	assert_true(has_line(text, PROTO_ENV_GUEST_PREFIX "LD_PRELOAD=/tmp/"
							  "evil.so"));
	assert_true(has_line(text, PROTO_ENV_GUEST_PREFIX "OMP_NUM_THREADS=4"));
	assert_true(has_line(text, PROTO_ENV_GUEST_PREFIX "PATH=/tmp"));
	assert_true(has_line(text,
			     PROTO_ENV_GUEST_PREFIX "PMIX_SERVER_URI="
						    "tcp4://127.0.0.1:1"));
	assert_true(has_line(text,
			     PROTO_ENV_GUEST_PREFIX "GREETING=caf\xc3\xa9 "
						    "au lait"));
	assert_false(has_name(text, "OMP_NUM_THREADS"));
	assert_false(has_name(text, "GREETING"));
	/* Refused ones stay refused, renamed or not. */
	assert_false(has_name(text, PROTO_ENV_GUEST_PREFIX "SLURM_CONF"));
	assert_false(
		has_name(text, PROTO_ENV_GUEST_PREFIX "SLURM_TIME_FORMAT"));
	assert_false(has_name(text, PROTO_ENV_GUEST_PREFIX "SLURM_JOB_NAME"));
	assert_false(has_name(text, PROTO_ENV_GUEST_PREFIX "X"));
	assert_false(has_name(
		text, PROTO_ENV_GUEST_PREFIX PROTO_ENV_GUEST_PREFIX "X"));

	proto_buf_free(&b);
	proto_buf_free(&out);
	unlink(script);
	rmdir(dir);
}

/* Sends refused requests (each answered by an error and an EXIT) without
 * reading, until the server stops taking them for a second or the flood
 * is out. Returns the requests sent whole; @b keeps what is not out. */
static uint32_t flood(int guest, struct proto_buf *b, char **argv, char **env,
		      size_t *sent)
{
	uint32_t queued = 0;

	*sent = 0;
	while (*sent < FLOOD_BYTES) {
		struct pollfd p = { guest, POLLOUT, 0 };
		ssize_t n;

		while (proto_buf_pending(b) < 65536)
			put_exec(b, ++queued, argv, env);
		if (poll(&p, 1, 1000) == 0)
			break;
		n = proto_buf_write(b, guest);
		assert_true(n >= 0 || n == -EAGAIN);
		if (n > 0)
			*sent += (size_t)n;
	}
	return queued;
}

/* Reads the answers while the rest of @b goes out: every request gets its
 * EXIT once the guest reads. */
static void drain(int guest, struct proto_buf *b, uint32_t requests)
{
	struct proto_reader rd;
	struct proto_frame f;
	uint32_t exits = 0;

	assert_int_equal(proto_reader_init(&rd), 0);
	while (exits < requests) {
		struct pollfd p = {
			guest, POLLIN | (proto_buf_pending(b) ? POLLOUT : 0), 0
		};

		assert_int_equal(poll(&p, 1, 10000), 1);
		if (p.revents & POLLOUT)
			proto_buf_write(b, guest);
		if (p.revents & POLLIN)
			assert_int_equal(proto_reader_pull(&rd, guest), 0);
		while (proto_reader_next(&rd, &f) > 0)
			if (f.hdr.kind == PROTO_EXIT)
				exits++;
	}
	assert_int_equal(proto_buf_pending(b), 0);
	proto_reader_free(&rd);
}

static void test_unread_answers_bounded(void **state)
{
	char *argv[] = { "not-a-slurm-command", NULL };
	char *env[] = { NULL };
	struct proto_buf b = { 0 }, answer = { 0 };
	unsigned long before, peak;
	uint32_t requests;
	size_t sent;
	int guest;
	pid_t pid;

	(void)state;
	pid = server_start(&guest);
	/* Its memory once it has answered a first request. */
	put_exec(&b, 1, argv, env);
	assert_int_equal(
		write_all(guest, proto_buf_head(&b), proto_buf_pending(&b)), 0);
	proto_buf_consume(&b, proto_buf_pending(&b));
	read_until_exit(guest, 1, &answer);
	before = proc_kib(pid, "VmRSS");
	requests = flood(guest, &b, argv, env, &sent);
	peak = proc_kib(pid, "VmHWM");
	print_message("flood: %zu bytes taken, server memory %lu -> %lu KiB\n",
		      sent, before, peak);
	/* The server stopped reading us, its queue (memory) stayed small. */
	assert_true(sent < FLOOD_ACCEPTED_MAX);
	assert_true(peak - before < FLOOD_MEMORY_MAX_KIB);
	/* And it answers everything once we read. */
	drain(guest, &b, requests);
	server_stop(pid, guest);
	proto_buf_free(&b);
	proto_buf_free(&answer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_kind),
		cmocka_unit_test(test_env_build),
		cmocka_unit_test(test_command_env),
		cmocka_unit_test(test_unread_answers_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
