/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"

static void child_exec(char *const argv[], int infd, int outfd)
{
	int in = infd >= 0 ? infd : open("/dev/null", O_RDONLY | O_CLOEXEC);

	setpgid(0, 0);
	if (in < 0 || dup2(in, 0) < 0 || dup2(outfd, 1) < 0 ||
	    dup2(outfd, 2) < 0)
		_exit(127);
	execv(argv[0], argv);
	dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Keeps the last @outlen-1 bytes of the output in @out. */
static void keep_tail(char *out, size_t outlen, size_t *used, const char *buf,
		      size_t n)
{
	if (!out || outlen < 2)
		return;
	if (n >= outlen - 1) {
		memcpy(out, buf + n - (outlen - 1), outlen - 1);
		*used = outlen - 1;
	} else {
		if (*used + n > outlen - 1) {
			size_t drop = *used + n - (outlen - 1);
			memmove(out, out + drop, *used - drop);
			*used -= drop;
		}
		memcpy(out + *used, buf, n);
		*used += n;
	}
	out[*used] = '\0';
}

static int run_wait_fd(char *const argv[], int infd, unsigned timeout_s,
		       char *out, size_t outlen,
		       bool (*keep_waiting)(void *arg), void *arg)
{
	time_t deadline = time(NULL) + timeout_s;
	size_t used = 0;
	int pipefd[2], status = 0;
	bool timed_out = false, given_up = false;
	pid_t pid;

	if (out && outlen)
		out[0] = '\0';
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	if (pid == 0)
		child_exec(argv, infd, pipefd[1]);
	close(pipefd[1]);
	/* Read until EOF: a daemonizing helper closes what it inherited. */
	for (;;) {
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
		char buf[4096];
		long left = (long)(deadline - time(NULL));
		ssize_t n;

		if (left <= 0) {
			timed_out = true;
			kill(-pid, SIGKILL);
			break;
		}
		if (poll(&pfd, 1, (int)(left > 1 ? 1000 : left * 1000)) <= 0) {
			if (keep_waiting && !keep_waiting(arg)) {
				given_up = true;
				kill(-pid, SIGKILL);
				break;
			}
			continue;
		}
		n = read(pipefd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		keep_tail(out, outlen, &used, buf, (size_t)n);
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out)
		return -ETIMEDOUT;
	if (given_up)
		return -ECANCELED;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return -ECHILD;
}

int run_wait(char *const argv[], unsigned timeout_s, char *out, size_t outlen)
{
	return run_wait_fd(argv, -1, timeout_s, out, outlen, NULL, NULL);
}

int run_wait_while(char *const argv[], unsigned timeout_s, char *out,
		   size_t outlen, bool (*keep_waiting)(void *arg), void *arg)
{
	return run_wait_fd(argv, -1, timeout_s, out, outlen, keep_waiting, arg);
}

int run_wait_input(char *const argv[], const char *input, unsigned timeout_s,
		   char *out, size_t outlen)
{
	_cleanup_close_ int fd = memfd_create("run-input", MFD_CLOEXEC);
	size_t len = strlen(input), done = 0;

	if (fd < 0)
		return -errno;
	/* A memory file, not a pipe: a large batch cannot block us. */
	while (done < len) {
		ssize_t n = write(fd, input + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return run_wait_fd(argv, fd, timeout_s, out, outlen, NULL, NULL);
}

void signals_ignore_job_wide(void)
{
	static const int sigs[] = { SIGINT,  SIGHUP,  SIGQUIT,	 SIGUSR1,
				    SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF,
				    SIGXCPU, SIGTSTP, SIGTTIN,	 SIGTTOU };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_IGN);
}
