/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/macro.h"
#include "agent_shared/util.h"

int fd_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

int fd_set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl < 0)
		return -errno;
	return fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0 ? -errno : 0;
}

int pollset_add(struct pollset *ps, int fd, short events, int kind, void *obj,
		int num)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 64;
		struct pollfd *f = realloc(ps->fds, cap * sizeof(*f));
		struct pollref *r;

		if (!f)
			return -ENOMEM;
		ps->fds = f;
		r = realloc(ps->refs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		ps->refs = r;
		ps->cap = cap;
	}
	ps->fds[ps->n] = (struct pollfd){ .fd = fd, .events = events };
	ps->refs[ps->n] = (struct pollref){ kind, obj, num };
	ps->n++;
	return 0;
}

int pollset_wait(struct pollset *ps, int timeout_ms)
{
	if (poll(ps->fds, (nfds_t)ps->n, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

void pollset_free(struct pollset *ps)
{
	free(ps->fds);
	free(ps->refs);
	*ps = (struct pollset){ 0 };
}

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

int unix_listen(const char *path, mode_t mode)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	struct stat st;
	int r = unix_addr(path, &sa);

	if (r < 0)
		return r;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(path) < 0)
			return -errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (chmod(path, mode) < 0 || listen(fd, 64) < 0)
		return -errno;
	return TAKE_FD(fd);
}

int unix_connect(const char *path)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	int r = unix_addr(path, &sa);

	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	r = fd_set_nonblock(fd, true);
	if (r < 0)
		return r;
	return TAKE_FD(fd);
}

int signalfd_open(const int *sigs, size_t n)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	for (size_t i = 0; i < n; i++)
		sigaddset(&mask, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

uint64_t random_u64(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	return clock_now_ms() ^ ((uint64_t)getpid() << 32);
}

int stdio_ensure_open(void)
{
	for (int fd = 0; fd < 3; fd++) {
		int n;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (n < 0)
			return -errno;
		if (n != fd) {
			/* A lower fd was closed too: it gets its own. */
			close(n);
			return -EBADF;
		}
	}
	return 0;
}

void exit_like(bool signaled, int value)
{
	struct rlimit no_core = { 0, 0 };
	sigset_t set;

	if (!signaled)
		exit(value);
	/* Die of the same signal, without a core dump of our own. */
	setrlimit(RLIMIT_CORE, &no_core);
	signal(value, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, value);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(value);
	exit(128 + value);
}
