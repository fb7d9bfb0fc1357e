/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * channel_echo: streaming round trips through one session of a command that
 * echoes its stdin (bench/channel_bench.sh runs it around
 * `slurm-vm-exec -- cat`).
 *
 *   channel_echo COUNT -- COMMAND [ARG...]
 *
 * Starts COMMAND with pipes on its stdin and stdout, sends one byte and waits
 * for it to come back, once to warm up (the session's setup is not a round
 * trip), then COUNT times, printing each round trip in microseconds, one a
 * line. Closes COMMAND's stdin and exits 0 when COMMAND exits 0.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

/* A byte that takes longer than this to come back means a stuck session. */
#define ECHO_TIMEOUT_MS 30000

static double now_us(void)
{
	return clock_now_s() * 1e6;
}

/* Starts argv with *to_child on its stdin and *from_child on its stdout. */
static pid_t spawn_piped(char **argv, int *to_child, int *from_child)
{
	int in[2], out[2];
	pid_t pid;

	if (pipe(in) < 0 || pipe(out) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "channel_echo: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*to_child = in[1];
	*from_child = out[0];
	return pid;
}

/* One byte there and back; 0 or a negative errno. */
static int echo_once(int to_child, int from_child)
{
	struct pollfd pfd = { .fd = from_child, .events = POLLIN };
	char c = 'x', back;
	ssize_t n;
	int r;

	if (write(to_child, &c, 1) != 1)
		return -errno;
	do
		r = poll(&pfd, 1, ECHO_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	n = read(from_child, &back, 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE; /* the command exited */
	return back == c ? 0 : -EPROTO;
}

static int child_status(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	int to_child = -1, from_child = -1, i, count, r, status;
	char *end;
	pid_t pid;
	double t0;

	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr,
			"usage: channel_echo COUNT -- COMMAND [ARG...]\n");
		return 2;
	}
	count = (int)strtol(argv[1], &end, 10);
	if (*end || count < 1 || count > 1000000) {
		fprintf(stderr, "channel_echo: COUNT '%s' is not 1-1000000\n",
			argv[1]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	pid = spawn_piped(argv + 3, &to_child, &from_child);
	if (pid < 0) {
		fprintf(stderr, "channel_echo: cannot start %s: %s\n", argv[3],
			strerror((int)-pid));
		return 1;
	}
	r = echo_once(to_child, from_child);
	for (i = 0; r == 0 && i < count; i++) {
		t0 = now_us();
		r = echo_once(to_child, from_child);
		if (r == 0)
			printf("%.0f\n", now_us() - t0);
	}
	close(to_child);
	close(from_child);
	status = child_status(pid);
	if (r < 0) {
		fprintf(stderr, "channel_echo: round trip %d of %d: %s\n", i,
			count, strerror(-r));
		return 1;
	}
	if (status != 0) {
		fprintf(stderr, "channel_echo: %s exited with status %d\n",
			argv[3], status);
		return 1;
	}
	return 0;
}
