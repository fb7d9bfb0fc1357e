/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job's identity for a restored guest (persona.h). The agent is root
 * in the guest, linked statically, without NSS: the account files are
 * edited as text, the network is set with ioctls (no ip(8) needed).
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"
#include "persona.h"

#define ACCOUNT_FILE_MAX (16u * 1024 * 1024)
#define NET_WAIT_MS	 10000
#define NET_POLL_MS	 50
#define ENTROPY_MAX	 512 /* bytes */
#define MAX_HOSTS	 PERSONA_MAX_ENTRIES
#define SSH_KEYGEN	 "/usr/bin/ssh-keygen"
#define SSH_KEYGEN_S	 120 /* RSA 4096 under emulation takes long */
#define SSHD_RESTART_MS	 10000
#define SSHD_MAX	 16
#define SOCKETS_MAX	 64
#define KEYS_FILE_MAX	 (1024u * 1024)

struct persona {
	const char *root; /* "" for "/" */
	char *identity;
	size_t identity_size;
	struct persona_result *res;
	/* user=, for member= and the home made at the end */
	char user[256], home[PROTO_MAX_PATH];
	const char *shell; /* shell=, or NULL */
	unsigned uid, gid;
	bool have_user;
};

/* Records a failure of @key: counted, logged, and in the answer's text. */
static int fail(struct persona *p, const char *key, const char *fmt, ...)
	_printf_(3, 4);
static int fail(struct persona *p, const char *key, const char *fmt, ...)
{
	struct persona_result *res = p->res;
	size_t len = strlen(res->text);
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_error("persona: %s: %s", key, why);
	res->failures++;
	snprintf(res->text + len, sizeof(res->text) - len, "%s%s: %s",
		 len ? "; " : "", key, why);
	return -1;
}

/* ---- files ---- */

static const char *root_of(const char *root)
{
	return !root || strcmp(root, "/") == 0 ? "" : root;
}

/* @root and @path ("/etc/group") as one path, or NULL. */
static char *path_at(const char *root, const char *path)
{
	char *s;

	return asprintf(&s, "%s%s", root_of(root), path) < 0 ? NULL : s;
}

/* The whole of the regular file @fd (at most @max bytes), NUL-terminated;
 * its stat in @st. */
static int read_fd_text(int fd, size_t max, char **text, size_t *len,
			struct stat *st)
{
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;

	if (fstat(fd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode) || (size_t)st->st_size >= max)
		return -EFBIG;
	buf = malloc((size_t)st->st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (n < (size_t)st->st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st->st_size - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	*len = n;
	*text = TAKE_PTR(buf);
	return 0;
}

/* The whole of @path, NUL-terminated; -ENOENT when it does not exist. */
static int read_text(const char *path, char **text, size_t *len,
		     struct stat *st)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return read_fd_text(fd, ACCOUNT_FILE_MAX, text, len, st);
}

/* Replaces @path with @data, with the mode and owner of @st (/etc/shadow
 * is root:shadow 0640 on some systems, 0000 on others). */
static int replace_like(const char *path, const char *data, size_t len,
			const struct stat *st)
{
	return file_replace_as(path, data, len, st->st_mode & 07777, st->st_uid,
			       st->st_gid);
}

/* Replaces @path with @text and @line (and a newline between where @text
 * lacks one). */
static int append_line(const char *path, const char *text, size_t len,
		       const char *line, const struct stat *st)
{
	_cleanup_free_ char *out = NULL;
	bool nl = len > 0 && text[len - 1] != '\n';
	int n = asprintf(&out, "%s%s%s\n", text, nl ? "\n" : "", line);

	if (n < 0)
		return -ENOMEM;
	return replace_like(path, out, (size_t)n, st);
}

/* The line of @text whose first field is @name ("name:..."), or NULL. */
static const char *find_entry(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = text; l && *l;
	     l = strchr(l, '\n'), l = l ? l + 1 : l)
		if (strncmp(l, name, n) == 0 && l[n] == ':')
			return l;
	return NULL;
}

/* Adds @line to @path (under @root) unless an entry of @name is there. */
static int account_add(const char *root, const char *file, const char *name,
		       const char *line)
{
	_cleanup_free_ char *path = path_at(root, file), *text = NULL;
	struct stat st;
	size_t len;
	int r;

	if (!path)
		return -ENOMEM;
	r = read_text(path, &text, &len, &st);
	if (r < 0)
		return r;
	if (find_entry(text, name))
		return 0;
	return append_line(path, text, len, line, &st);
}

int persona_group_add(const char *root, const char *name, unsigned gid)
{
	char line[320];

	if (!persona_name_ok(name))
		return -EINVAL;
	snprintf(line, sizeof(line), "%s:x:%u:", name, gid);
	return account_add(root, "/etc/group", name, line);
}

/* The user's shell as on the host when the guest has it, as a cold boot's
 * seed gives it; else bash, else sh. */
static const char *user_shell(const char *root, const char *shell)
{
	_cleanup_free_ char *want = shell ? path_at(root, shell) : NULL;
	_cleanup_free_ char *bash = path_at(root, "/bin/bash");

	if (want && shell[0] == '/' && !strpbrk(shell, ":\n") &&
	    access(want, X_OK) == 0)
		return shell;
	return bash && access(bash, X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

int persona_user_add(const char *root, const char *name, unsigned uid,
		     unsigned gid, const char *home, const char *shell)
{
	_cleanup_free_ char *shadow = path_at(root, "/etc/shadow");
	_cleanup_free_ char *line = NULL;
	int r;

	if (!shadow)
		return -ENOMEM;
	if (!persona_name_ok(name) || home[0] != '/' || strpbrk(home, ":\n"))
		return -EINVAL;
	if (asprintf(&line, "%s:x:%u:%u::%s:%s", name, uid, gid, home,
		     user_shell(root, shell)) < 0)
		return -ENOMEM;
	r = account_add(root, "/etc/passwd", name, line);
	if (r < 0 || access(shadow, F_OK) < 0)
		return r;
	free(line);
	if (asprintf(&line, "%s:*:0:0:99999:7:::", name) < 0)
		return -ENOMEM;
	return account_add(root, "/etc/shadow", name, line);
}

/* Is @user in the comma-separated @members (up to the end of the line)? */
static bool is_member(const char *members, const char *user)
{
	size_t n = strlen(user);

	for (const char *m = members; *m && *m != '\n';) {
		size_t k = strcspn(m, ",\n");

		if (k == n && strncmp(m, user, n) == 0)
			return true;
		m += k;
		if (*m == ',')
			m++;
	}
	return false;
}

int persona_member_add(const char *root, const char *group, const char *user)
{
	_cleanup_free_ char *path = path_at(root, "/etc/group"), *text = NULL;
	_cleanup_free_ char *out = NULL;
	const char *line, *members, *end;
	struct stat st;
	size_t len;
	int r, n;

	if (!path)
		return -ENOMEM;
	if (!persona_name_ok(group) || !persona_name_ok(user))
		return -EINVAL;
	r = read_text(path, &text, &len, &st);
	if (r < 0)
		return r;
	line = find_entry(text, group);
	if (!line)
		return -ENOENT;
	/* NAME:PASSWORD:GID:MEMBERS */
	members = line;
	for (int i = 0; i < 3 && members; i++) {
		members = strpbrk(members, ":\n");
		members = members && *members == ':' ? members + 1 : NULL;
	}
	if (!members)
		return -EINVAL;
	if (is_member(members, user))
		return 0;
	end = members + strcspn(members, "\n");
	n = asprintf(&out, "%.*s%s%s%s", (int)(end - text), text,
		     end > members ? "," : "", user, end);
	if (n < 0)
		return -ENOMEM;
	return replace_like(path, out, (size_t)n, &st);
}

/* @text without the job's block; where it was (or the end) in @at. */
static void hosts_cut_block(char *text, size_t *at)
{
	char *begin = strstr(text, PERSONA_HOSTS_BEGIN "\n");
	char *end;

	*at = strlen(text);
	if (!begin || (begin != text && begin[-1] != '\n'))
		return;
	end = strstr(begin, "\n" PERSONA_HOSTS_END);
	if (!end)
		return;
	end += 1 + strlen(PERSONA_HOSTS_END);
	if (*end == '\n')
		end++;
	memmove(begin, end, strlen(end) + 1);
	*at = (size_t)(begin - text);
}

int persona_hosts_set(const char *root, char *const *lines, size_t n)
{
	_cleanup_free_ char *path = path_at(root, "/etc/hosts"), *text = NULL;
	_cleanup_free_ char *out = NULL;
	struct stat st = { .st_mode = S_IFREG | 0644 };
	size_t len = 0, at, size, off;
	int r;

	if (!path)
		return -ENOMEM;
	r = read_text(path, &text, &len, &st);
	if (r == -ENOENT)
		text = strdup("");
	else if (r < 0)
		return r;
	if (!text)
		return -ENOMEM;
	hosts_cut_block(text, &at);
	size = strlen(text) + 2 * sizeof(PERSONA_HOSTS_BEGIN) + 2;
	for (size_t i = 0; i < n; i++) {
		if (strchr(lines[i], '\n'))
			return -EINVAL;
		size += strlen(lines[i]) + 1;
	}
	out = malloc(size);
	if (!out)
		return -ENOMEM;
	off = (size_t)snprintf(out, size, "%.*s%s%s\n", (int)at, text,
			       at && text[at - 1] != '\n' ? "\n" : "",
			       PERSONA_HOSTS_BEGIN);
	for (size_t i = 0; i < n; i++)
		off += (size_t)snprintf(out + off, size - off, "%s\n",
					lines[i]);
	off += (size_t)snprintf(out + off, size - off, "%s\n%s",
				PERSONA_HOSTS_END, text + at);
	return replace_like(path, out, off, &st);
}

int persona_mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	struct stat st;

	if (!p)
		return -ENOMEM;
	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0)
		return errno == EEXIST ? 0 : -errno;
	return 1;
}

/* ---- time, entropy ---- */

static int apply_time(struct persona *p, const char *v)
{
	struct timespec ts = { 0 };
	long long sec;
	long nsec;
	int end = -1;

	if (sscanf(v, "%lld.%9ld%n", &sec, &nsec, &end) != 2 || v[end] ||
	    sec < 0 || nsec < 0)
		return fail(p, "time", "'%s' is no SEC.NSEC", v);
	ts.tv_sec = (time_t)sec;
	ts.tv_nsec = nsec;
	if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		return fail(p, "time", "clock_settime: %s", strerror(errno));
	return 0;
}

static int hex_decode(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n % 2 || n / 2 > max)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1 ||
		    !strchr("0123456789abcdefABCDEF", s[2 * i + 1]) ||
		    !strchr("0123456789abcdefABCDEF", s[2 * i]))
			return -EINVAL;
		out[i] = (uint8_t)b;
	}
	return (int)(n / 2);
}

/* Credits the host's bytes to the pool and reseeds the CRNG at once: what
 * getrandom gives from now on is no template's. */
static int entropy_add(struct persona *p, const uint8_t *bytes, int n)
{
	_cleanup_close_ int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	_cleanup_free_ struct rand_pool_info *info =
		malloc(sizeof(*info) + (size_t)n);

	if (!info)
		return fail(p, "entropy", "%s", strerror(ENOMEM));
	if (fd < 0)
		return fail(p, "entropy", "/dev/urandom: %s", strerror(errno));
	info->entropy_count = 8 * n;
	info->buf_size = n;
	memcpy(info->buf, bytes, (size_t)n);
	if (ioctl(fd, RNDADDENTROPY, info) < 0)
		return fail(p, "entropy", "RNDADDENTROPY: %s", strerror(errno));
	explicit_bzero(info->buf, (size_t)n);
#ifdef RNDRESEEDCRNG
	if (ioctl(fd, RNDRESEEDCRNG) < 0)
		return fail(p, "entropy", "RNDRESEEDCRNG: %s", strerror(errno));
#endif
	return 0;
}

/* D-Bus keeps its own copy where it is no symlink to /etc/machine-id. */
static int dbus_machine_id_renew(struct persona *p, const char *id)
{
	_cleanup_free_ char *path =
		path_at(p->root, "/var/lib/dbus/machine-id");
	struct stat st;

	if (!path || lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	if (replace_like(path, id, 33, &st) < 0)
		return fail(p, "entropy", "%s: %s", path, strerror(errno));
	return 0;
}

static int machine_id_renew(struct persona *p)
{
	_cleanup_free_ char *path = path_at(p->root, "/etc/machine-id");
	struct stat st = { .st_mode = 0444 };
	uint8_t b[16];
	char id[34];

	if (!path || access(path, F_OK) < 0)
		return 0;
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return fail(p, "entropy", "getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
	id[32] = '\n';
	id[33] = '\0';
	if (replace_like(path, id, 33, &st) < 0)
		return fail(p, "entropy", "%s: %s", path, strerror(errno));
	return dbus_machine_id_renew(p, id);
}

/* ---- ssh host keys ---- */

/* Runs @argv (argv[0] a path) to its end within @timeout_s: its exit
 * code, or -errno. The agent's signals are blocked for its signalfd: the
 * child gets them back. */
static int run_sync(char *const *argv, unsigned timeout_s)
{
	uint64_t until = clock_now_ms() + timeout_s * 1000ull;
	sigset_t none;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -EINTR;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (clock_now_ms() >= until) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		usleep(10 * 1000);
	}
}

static const char *const key_types[] = { "rsa", "ecdsa", "ed25519", "dsa" };

/* Removes /etc/ssh/ssh_host_*; the types of the private keys among them
 * in @had (a bit per key_types[]). */
static int ssh_keys_remove(struct persona *p, const char *dir, unsigned *had)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	int r = 0;

	*had = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "ssh_host_", 9) != 0)
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(key_types); i++) {
			char name[64];

			snprintf(name, sizeof(name), "ssh_host_%s_key",
				 key_types[i]);
			if (strcmp(e->d_name, name) == 0)
				*had |= 1u << i;
		}
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			r = fail(p, "entropy", "%s/%s: %s", dir, e->d_name,
				 strerror(errno));
	}
	return r;
}

/* The listening sockets of @pid (inodes from @proc/PID/fd), at most
 * SOCKETS_MAX: their count, or -errno (-ENOENT: no such process). */
static int socket_inodes(const char *proc, pid_t pid, unsigned long *ino)
{
	char path[PATH_MAX];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%ld/fd", proc, (long)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < SOCKETS_MAX) {
		char link[64];
		ssize_t k =
			readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);

		if (k <= 0)
			continue;
		link[k] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino[n]) == 1)
			n++;
	}
	return n;
}

/* sshd's listeners: processes named sshd whose parent is init (daemons
 * and systemd's services alike); connections' processes are not. */
static int sshd_listeners(const char *proc, pid_t *pids, size_t max)
{
	_cleanup_closedir_ DIR *d = opendir(proc);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) && (size_t)n < max) {
		char path[PATH_MAX], buf[512], *close;
		long ppid;
		pid_t pid = (pid_t)atol(e->d_name);

		if (pid <= 1 ||
		    strspn(e->d_name, "0123456789") != strlen(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", proc, e->d_name);
		if (file_read_small(path, buf, sizeof(buf)) <= 0 ||
		    strcmp(buf, "sshd\n") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", proc, e->d_name);
		if (file_read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		close = strrchr(buf, ')');
		if (close && sscanf(close + 1, " %*c %ld", &ppid) == 1 &&
		    ppid == 1)
			pids[n++] = pid;
	}
	return n;
}

static bool shares_inode(const unsigned long *a, int na, const unsigned long *b,
			 int nb)
{
	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++)
			if (a[i] == b[j])
				return true;
	return false;
}

/* A running sshd keeps the host keys it read at its start: SIGHUP makes
 * it execute itself again (what systemctl reload ssh does), reading the
 * new ones before it listens again. It is done once its listening
 * sockets are new ones; one that ended holds no key either. */
static int sshd_restart(struct persona *p, const char *proc, pid_t pid)
{
	unsigned long old[SOCKETS_MAX], now[SOCKETS_MAX];
	uint64_t until = clock_now_ms() + SSHD_RESTART_MS;
	int nold = socket_inodes(proc, pid, old), n;

	if (nold < 0)
		return 0;
	if (kill(pid, SIGHUP) < 0)
		return errno == ESRCH ? 0
				      : fail(p, "entropy", "sshd %ld: %s",
					     (long)pid, strerror(errno));
	while ((n = socket_inodes(proc, pid, now)) >= 0 &&
	       (n == 0 || shares_inode(old, nold, now, n))) {
		if (clock_now_ms() >= until)
			return fail(p, "entropy",
				    "sshd %ld did not restart with the new "
				    "host keys within %d s",
				    (long)pid, SSHD_RESTART_MS / 1000);
		usleep(20 * 1000);
	}
	if (n < 0)
		log_warn("persona: sshd %ld ended on SIGHUP", (long)pid);
	else
		log_info("persona: sshd %ld restarted with new host keys",
			 (long)pid);
	return 0;
}

/* Two jobs restored from one template must not share host keys: the
 * template's go, new ones of the same types (ed25519 when it had none but
 * has sshd) are made before the guest is ready, and a running sshd is
 * restarted with them: the host's READY comes after all of it. */
static int ssh_keys_renew(struct persona *p)
{
	_cleanup_free_ char *dir = path_at(p->root, "/etc/ssh");
	_cleanup_free_ char *keygen = path_at(p->root, SSH_KEYGEN);
	_cleanup_free_ char *config = path_at(p->root, "/etc/ssh/sshd_config");
	_cleanup_free_ char *proc = path_at(p->root, "/proc");
	pid_t pids[SSHD_MAX];
	unsigned had;
	int r, n;

	if (!dir || !keygen || !config || !proc)
		return fail(p, "entropy", "%s", strerror(ENOMEM));
	r = ssh_keys_remove(p, dir, &had);
	if (r < 0)
		return r;
	if (!had && access(config, F_OK) == 0)
		had = 1u << 2; /* ed25519, as the seed asks cloud-init */
	if (!had)
		return 0;
	if (access(keygen, X_OK) < 0)
		return fail(p, "entropy",
			    "the template had ssh host keys, but no %s to "
			    "make new ones",
			    SSH_KEYGEN);
	for (size_t i = 0; i < ARRAY_SIZE(key_types); i++) {
		_cleanup_free_ char *key = NULL;
		char *argv[] = { keygen, "-q", "-N",
				 "",	 "-t", (char *)key_types[i],
				 "-f",	 NULL, NULL };

		if (!(had & (1u << i)))
			continue;
		if (asprintf(&key, "%s/ssh_host_%s_key", dir, key_types[i]) < 0)
			return fail(p, "entropy", "%s", strerror(ENOMEM));
		argv[7] = key;
		r = run_sync(argv, SSH_KEYGEN_S);
		if (r != 0)
			return fail(p, "entropy", "ssh-keygen -t %s: %s",
				    key_types[i],
				    r < 0 ? strerror(-r) : "failed");
	}
	n = sshd_listeners(proc, pids, ARRAY_SIZE(pids));
	for (int i = 0; i < n; i++)
		if (sshd_restart(p, proc, pids[i]) < 0)
			return -1;
	log_info("persona: new ssh host keys%s", n ? ", sshd restarted" : "");
	return 0;
}

static int apply_entropy(struct persona *p, const char *v)
{
	uint8_t bytes[ENTROPY_MAX];
	int n = hex_decode(v, bytes, sizeof(bytes));

	if (n < 0)
		return fail(p, "entropy", "not hex of 1..%d bytes",
			    ENTROPY_MAX);
	/* The kernel reseeded on the restore's new generation ID too: what
	 * follows goes on when this fails (a failure is a cold boot anyway),
	 * so no template identity outlives a failed persona either. */
	n = entropy_add(p, bytes, n);
	explicit_bzero(bytes, sizeof(bytes));
	if (machine_id_renew(p) < 0)
		n = -1;
	if (ssh_keys_renew(p) < 0)
		n = -1;
	return n < 0 ? -1 : 0;
}

/* ---- hostname, accounts ---- */

static int apply_hostname(struct persona *p, const char *v)
{
	_cleanup_free_ char *path = path_at(p->root, "/etc/hostname");
	_cleanup_free_ char *line = NULL;
	struct stat st = { .st_mode = 0644 };
	size_t n = strlen(v);

	if (!persona_hostname_ok(v))
		return fail(p, "hostname", "'%s' is no host name", v);
	if (!path || asprintf(&line, "%s\n", v) < 0)
		return fail(p, "hostname", "%s", strerror(ENOMEM));
	if (sethostname(v, n) < 0)
		return fail(p, "hostname", "sethostname: %s", strerror(errno));
	stat(path, &st);
	if (replace_like(path, line, n + 1, &st) < 0)
		return fail(p, "hostname", "%s: %s", path, strerror(errno));
	if (p->identity && n < p->identity_size)
		memcpy(p->identity, v, n + 1);
	return 0;
}

static int apply_group(struct persona *p, const char *v)
{
	char name[PERSONA_NAME_MAX + 1];
	unsigned gid;
	int r;

	if (persona_parse_group(v, name, &gid) < 0)
		return fail(p, "group", "'%s' is no NAME:GID", v);
	r = persona_group_add(p->root, name, gid);
	if (r < 0)
		return fail(p, "group", "%s: %s", name, strerror(-r));
	return 0;
}

/* NAME:UID:GID:HOME; the home is made at the end (persona_home()). */
static int apply_user(struct persona *p, const char *v)
{
	struct persona_user u;
	int r;

	if (persona_parse_user(v, &u) < 0)
		return fail(p, "user", "'%s' is no NAME:UID:GID:HOME", v);
	snprintf(p->user, sizeof(p->user), "%s", u.name);
	snprintf(p->home, sizeof(p->home), "%s", u.home);
	p->uid = u.uid;
	p->gid = u.gid;
	r = persona_user_add(p->root, p->user, p->uid, p->gid, p->home,
			     p->shell);
	if (r < 0)
		return fail(p, "user", "%s: %s", p->user, strerror(-r));
	p->have_user = true;
	return 0;
}

static int apply_member(struct persona *p, const char *v)
{
	int r;

	if (!p->have_user)
		return fail(p, "member", "%s: no user= to add", v);
	r = persona_member_add(p->root, v, p->user);
	if (r == -ENOENT)
		return fail(p, "member", "%s: no such group", v);
	if (r < 0)
		return fail(p, "member", "%s: %s", v, strerror(-r));
	return 0;
}

/* Every hosts= line, in their order, as the job's block. */
static int apply_hosts(struct persona *p, char *const *entries)
{
	_cleanup_free_ char **lines = calloc(MAX_HOSTS + 1, sizeof(char *));
	size_t n = 0;
	int r;

	if (!lines)
		return fail(p, "hosts", "%s", strerror(ENOMEM));
	for (char *const *e = entries; *e && n < MAX_HOSTS; e++)
		if (strncmp(*e, "hosts=", 6) == 0)
			lines[n++] = *e + 6;
	if (n == 0)
		return 0;
	r = persona_hosts_set(p->root, lines, n);
	if (r < 0)
		return fail(p, "hosts", "/etc/hosts: %s", strerror(-r));
	return 0;
}

/* ---- network ---- */

/* The interface whose MAC is @mac into @name: 0, or -ENOENT. */
static int net_find(const char *mac, char name[IFNAMSIZ])
{
	_cleanup_closedir_ DIR *d = opendir("/sys/class/net");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[PATH_MAX], addr[64];
		ssize_t n;

		if (e->d_name[0] == '.' || strlen(e->d_name) >= IFNAMSIZ)
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/address",
			 e->d_name);
		n = file_read_small(path, addr, sizeof(addr));
		if (n <= 0)
			continue;
		addr[strcspn(addr, "\n")] = '\0';
		if (strcasecmp(addr, mac) == 0) {
			snprintf(name, IFNAMSIZ, "%s", e->d_name);
			return 0;
		}
	}
	return -ENOENT;
}

/* The NIC is plugged just before the guest resumes: it may come late. */
static int net_wait(const char *mac, char name[IFNAMSIZ])
{
	uint64_t until = clock_now_ms() + NET_WAIT_MS;

	while (net_find(mac, name) < 0) {
		if (clock_now_ms() >= until)
			return -ENOENT;
		usleep(NET_POLL_MS * 1000);
	}
	return 0;
}

static int if_flags(int fd, const char *name, bool up)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	if (up == !!(ifr.ifr_flags & IFF_UP))
		return 0;
	ifr.ifr_flags = up ? (short)(ifr.ifr_flags | IFF_UP)
			   : (short)(ifr.ifr_flags & ~IFF_UP);
	return ioctl(fd, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static int if_set_inet(int fd, const char *name, unsigned long req,
		       struct in_addr a)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a };

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	memcpy(&ifr.ifr_addr, &sin, sizeof(sin));
	return ioctl(fd, req, &ifr) < 0 ? -errno : 0;
}

/* Renames (down first: the kernel refuses an up interface), MTU, IPv4
 * address and netmask, up; what is already so stays so. */
static int net_configure(struct persona *p, const char *dev, const char *ifname,
			 struct in_addr addr, struct in_addr mask, int mtu)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	int r;

	if (fd < 0)
		return fail(p, "net", "socket: %s", strerror(errno));
	if (strcmp(dev, ifname) != 0) {
		snprintf(ifr.ifr_name, IFNAMSIZ, "%s", dev);
		snprintf(ifr.ifr_newname, IFNAMSIZ, "%s", ifname);
		r = if_flags(fd, dev, false);
		if (r < 0 || ioctl(fd, SIOCSIFNAME, &ifr) < 0)
			return fail(p, "net", "rename %s to %s: %s", dev,
				    ifname, strerror(r < 0 ? -r : errno));
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	ifr.ifr_mtu = mtu;
	if (ioctl(fd, SIOCSIFMTU, &ifr) < 0)
		return fail(p, "net", "%s: MTU %d: %s", ifname, mtu,
			    strerror(errno));
	r = if_set_inet(fd, ifname, SIOCSIFADDR, addr);
	if (r == 0)
		r = if_set_inet(fd, ifname, SIOCSIFNETMASK, mask);
	if (r < 0)
		return fail(p, "net", "%s: address: %s", ifname, strerror(-r));
	r = if_flags(fd, ifname, true);
	if (r < 0)
		return fail(p, "net", "%s: up: %s", ifname, strerror(-r));
	return 0;
}

/* MAC IFNAME ADDR/PREFIX MTU */
static int apply_net(struct persona *p, const char *v)
{
	char mac[32], ifname[IFNAMSIZ], addr[32], dev[IFNAMSIZ];
	struct in_addr a, mask;
	unsigned prefix;
	int mtu, end = -1;
	char *slash;

	if (sscanf(v, "%31s %15s %31s %d%n", mac, ifname, addr, &mtu, &end) !=
		    4 ||
	    v[end] || !(slash = strchr(addr, '/')))
		return fail(p, "net", "'%s' is no MAC IFNAME ADDR/PREFIX MTU",
			    v);
	*slash = '\0';
	if (inet_pton(AF_INET, addr, &a) != 1 ||
	    sscanf(slash + 1, "%u", &prefix) != 1 || prefix > 32 || mtu < 68 ||
	    mtu > 65535)
		return fail(p, "net", "'%s': bad address, prefix or MTU", v);
	mask.s_addr = htonl(prefix ? ~0u << (32 - prefix) : 0);
	if (net_wait(mac, dev) < 0)
		return fail(p, "net", "no interface with MAC %s after %d s",
			    mac, NET_WAIT_MS / 1000);
	return net_configure(p, dev, ifname, a, mask, mtu);
}

/* ---- shares ---- */

#define SHARE_WAIT_MS 10000

/* Is @path a mount point of @source (/proc/self/mountinfo)? */
static bool mounted(const char *path, const char *source)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t size = 0;

	while (f && getline(&line, &size, f) > 0) {
		char point[PROTO_MAX_PATH], src[256], *o = point;
		const char *tail = strstr(line, " - ");
		int at = -1;

		if (sscanf(line, "%*u %*u %*s %*s %n", &at) != 0 || at < 0 ||
		    !tail || sscanf(tail, " - %*s %255s", src) != 1)
			continue;
		/* the mount point, octal escapes (\040) undone */
		for (const char *i = line + at;
		     *i && *i != ' ' && o < point + sizeof(point) - 1; o++) {
			unsigned c;

			if (i[0] == '\\' && sscanf(i + 1, "%3o", &c) == 1) {
				*o = (char)c;
				i += 4;
			} else {
				*o = *i++;
			}
		}
		*o = '\0';
		if (strcmp(point, path) == 0 && strcmp(src, source) == 0)
			return true;
	}
	return false;
}

/* TAG TRANSPORT OPTIONS PATH, PATH the rest (it may hold spaces). */
/* A virtiofs share is hot-plugged just before the guest runs again: its
 * tag is unknown (EINVAL) until the driver has probed the device. */
static int share_mount(const char *tag, const char *path, const char *transport,
		       const char *options)
{
	bool virtiofs = strcmp(transport, "virtiofs") == 0;

	for (int waited_ms = 0;; waited_ms += 50) {
		if (mount(tag, path, transport, 0, virtiofs ? NULL : options) ==
		    0)
			return 0;
		if (!virtiofs ||
		    (errno != EINVAL && errno != ENOENT && errno != ENODEV) ||
		    waited_ms >= SHARE_WAIT_MS)
			return -1;
		usleep(50 * 1000);
	}
}

static int apply_share(struct persona *p, const char *v)
{
	char tag[64], transport[16], options[1024];
	const char *path;
	int end = -1, r;

	if (sscanf(v, "%63s %15s %1023s %n", tag, transport, options, &end) !=
		    3 ||
	    end < 0 || v[end] != '/' ||
	    (strcmp(transport, "9p") && strcmp(transport, "virtiofs")))
		return fail(p, "share",
			    "'%s' is no TAG 9p|virtiofs OPTIONS PATH", v);
	path = v + end;
	r = persona_mkdir_p(path, 0755);
	if (r < 0)
		return fail(p, "share", "%s: %s", path, strerror(-r));
	if (mounted(path, tag))
		return 0;
	if (share_mount(tag, path, transport, options) < 0)
		return fail(p, "share", "%s at %s: %s", tag, path,
			    strerror(errno));
	log_info("persona: share %s at %s", tag, path);
	return 0;
}

/* The user's home, unless it exists: after the shares, which may hold
 * it, as on a cold boot. */
static int persona_home(struct persona *p)
{
	_cleanup_free_ char *home = NULL;
	int r;

	if (!p->have_user)
		return 0;
	home = path_at(p->root, p->home);
	r = home ? persona_mkdir_p(home, 0755) : -ENOMEM;
	if (r == 1 && chown(home, p->uid, p->gid) < 0)
		r = -errno;
	if (r < 0)
		return fail(p, "user", "home %s: %s", p->home, strerror(-r));
	return 0;
}

/* ---- the user's ssh keys ---- */

/* The whole of the regular file @name in @dir, opened without following
 * a symlink: "" when there is none. */
static int keys_read(int dir, const char *name, char **text)
{
	_cleanup_close_ int fd = openat(
		dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	size_t len;

	if (fd < 0 && errno == ENOENT) {
		*text = strdup("");
		return *text ? 0 : -ENOMEM;
	}
	if (fd < 0)
		return -errno;
	return read_fd_text(fd, KEYS_FILE_MAX, text, &len, &st);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *l = text; l && *l;
	     l = strchr(l, '\n'), l = l ? l + 1 : l)
		if (strncmp(l, line, n) == 0 && (l[n] == '\n' || !l[n]))
			return true;
	return false;
}

/* @text and the @keys it lacks, written as @dir's authorized_keys
 * (temporary file, rename), the user's, 0600. */
static int keys_write(int dir, const char *text, char *const *keys, size_t n,
		      unsigned uid, unsigned gid)
{
	static const char tmp[] = ".authorized_keys.slurm-vm";
	_cleanup_fclose_ FILE *f = NULL;
	size_t len = strlen(text);
	int fd, r = 0;

	unlinkat(dir, tmp, 0);
	fd = openat(dir, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlinkat(dir, tmp, 0);
		return -ENOMEM;
	}
	fputs(text, f);
	if (len && text[len - 1] != '\n')
		fputc('\n', f);
	for (size_t i = 0; i < n; i++)
		if (!has_line(text, keys[i]))
			fprintf(f, "%s\n", keys[i]);
	if (fflush(f) != 0 || fchown(fileno(f), uid, gid) < 0 ||
	    fchmod(fileno(f), 0600) < 0 || fsync(fileno(f)) < 0 ||
	    renameat(dir, tmp, dir, "authorized_keys") < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dir, tmp, 0);
	return r;
}

int persona_keys_install(const char *root, const char *home, unsigned uid,
			 unsigned gid, char *const *keys, size_t n)
{
	_cleanup_free_ char *path = path_at(root, home), *text = NULL;
	_cleanup_close_ int hfd = -1, sfd = -1;
	struct stat st;
	bool missing = false;
	int r;

	if (!path)
		return -ENOMEM;
	if (n == 0)
		return 0;
	/* The home and .ssh are the user's: never followed out of them. */
	hfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hfd < 0)
		return -errno;
	if (mkdirat(hfd, ".ssh", 0700) == 0) {
		if (fchownat(hfd, ".ssh", uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	} else if (errno != EEXIST) {
		return -errno;
	}
	sfd = openat(hfd, ".ssh",
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return errno == ENOTDIR ? -ELOOP : -errno;
	if (fstat(sfd, &st) < 0)
		return -errno;
	if (st.st_uid != uid && st.st_uid != 0)
		return -EPERM;
	r = keys_read(sfd, "authorized_keys", &text);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && !missing; i++)
		missing = !has_line(text, keys[i]);
	if (!missing)
		return 0;
	return keys_write(sfd, text, keys, n, uid, gid);
}

/* Every authorized_key=, into the user's home once it exists. */
static int apply_keys(struct persona *p, char *const *entries)
{
	_cleanup_free_ char **keys = NULL;
	size_t n = 0, max = 0;
	int r;

	for (char *const *e = entries; *e; e++)
		max += strncmp(*e, "authorized_key=", 15) == 0;
	if (max == 0)
		return 0;
	if (!p->have_user)
		return fail(p, "authorized_key", "no user= to give them to");
	keys = calloc(max, sizeof(*keys));
	if (!keys)
		return fail(p, "authorized_key", "%s", strerror(ENOMEM));
	for (char *const *e = entries; *e; e++)
		if (strncmp(*e, "authorized_key=", 15) == 0)
			keys[n++] = *e + 15;
	r = persona_keys_install(p->root, p->home, p->uid, p->gid, keys, n);
	if (r < 0)
		return fail(p, "authorized_key", "%s/.ssh/authorized_keys: %s",
			    p->home,
			    r == -ELOOP ? "a symlink, not followed"
					: strerror(-r));
	return 0;
}

/* ---- all of it ---- */

/* shell=: the user's, taken by user= whatever the order. */
static int apply_shell(struct persona *p, const char *v)
{
	p->shell = v;
	return 0;
}

struct step {
	const char *key;
	int (*one)(struct persona *p, const char *value);
	int (*all)(struct persona *p, char *const *entries);
};

/* authorized_key= comes last, into the home persona_home() made. */
static const struct step steps[] = {
	{ "time", apply_time, NULL },
	{ "entropy", apply_entropy, NULL },
	{ "hostname", apply_hostname, NULL },
	{ "group", apply_group, NULL },
	{ "shell", apply_shell, NULL },
	{ "user", apply_user, NULL },
	{ "member", apply_member, NULL },
	{ "hosts", NULL, apply_hosts },
	{ "net", apply_net, NULL },
	{ "share", apply_share, NULL },
	{ "authorized_key", NULL, NULL },
};

static bool known_key(const char *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		size_t n = strlen(steps[i].key);

		if (strncmp(e, steps[i].key, n) == 0 && e[n] == '=')
			return true;
	}
	return false;
}

/* The entries that pass channel/persona_format.h's checks, those the writer and
 * the relay made: any other is a failure of its key. */
static char **entries_checked(struct persona *p, char *const *entries)
{
	size_t n = 0, k = 0;
	char **ok;

	while (entries[n])
		n++;
	ok = calloc(n + 1, sizeof(*ok));
	if (!ok) {
		fail(p, "persona", "%s", strerror(ENOMEM));
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		char why[256], key[32];
		const char *e = entries[i];
		size_t klen = strcspn(e, "=");

		if (persona_entry_check(e, false, why, sizeof(why)) == 0) {
			ok[k++] = entries[i];
			continue;
		}
		snprintf(key, sizeof(key), "%.*s", (int)(klen < 31 ? klen : 31),
			 e);
		fail(p, key, "'%.64s': %s", e[klen] ? e + klen + 1 : e, why);
	}
	return ok;
}

void persona_apply(char *const *entries, const char *root, char *identity,
		   size_t identity_size, struct persona_result *res)
{
	struct persona p = { .root = root,
			     .identity = identity,
			     .identity_size = identity_size,
			     .res = res };
	_cleanup_free_ char **checked = NULL;

	memset(res, 0, sizeof(*res));
	checked = entries_checked(&p, entries);
	if (!checked)
		return;
	for (char *const *e = checked; *e; e++)
		if (!known_key(*e))
			log_warn("persona: ignoring the unknown key of '%.64s'",
				 *e);
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		size_t n = strlen(steps[i].key);

		if (steps[i].all) {
			steps[i].all(&p, checked);
			continue;
		}
		for (char *const *e = checked; *e && steps[i].one; e++)
			if (strncmp(*e, steps[i].key, n) == 0 && (*e)[n] == '=')
				steps[i].one(&p, *e + n + 1);
	}
	if (persona_home(&p) == 0)
		apply_keys(&p, checked);
}
