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
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
#define MAX_HOSTS	 PROTO_MAX_PERSONA
#define SSH_KEYGEN	 "/usr/bin/ssh-keygen"

struct persona {
	const char *root; /* "" for "/" */
	char *identity;
	size_t identity_size;
	struct persona_result *res;
	/* user=, for member= and the home made at the end */
	char user[256], home[PROTO_MAX_PATH];
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

/* The whole of @path, NUL-terminated; -ENOENT when it does not exist. */
static int read_text(const char *path, char **text, size_t *len,
		     struct stat *st)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;

	if (fd < 0 || fstat(fd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode) || st->st_size >= ACCOUNT_FILE_MAX)
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

/* A user or group name as the account files can hold it. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 255 || s[0] == '-' || s[0] == '+')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f || *s == ':' ||
		    *s == ',' || *s == '/')
			return false;
	return true;
}

int persona_group_add(const char *root, const char *name, unsigned gid)
{
	char line[320];

	if (!name_ok(name))
		return -EINVAL;
	snprintf(line, sizeof(line), "%s:x:%u:", name, gid);
	return account_add(root, "/etc/group", name, line);
}

int persona_user_add(const char *root, const char *name, unsigned uid,
		     unsigned gid, const char *home)
{
	_cleanup_free_ char *bash = path_at(root, "/bin/bash");
	_cleanup_free_ char *shadow = path_at(root, "/etc/shadow");
	_cleanup_free_ char *line = NULL;
	int r;

	if (!bash || !shadow)
		return -ENOMEM;
	if (!name_ok(name) || home[0] != '/' || strpbrk(home, ":\n"))
		return -EINVAL;
	if (asprintf(&line, "%s:x:%u:%u::%s:%s", name, uid, gid, home,
		     access(bash, X_OK) == 0 ? "/bin/bash" : "/bin/sh") < 0)
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
	if (!name_ok(group) || !name_ok(user))
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
	return 0;
}

/* Removes /etc/ssh/ssh_host_*: 1 when a private key was among them. */
static int ssh_keys_remove(struct persona *p, const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	bool key = false;
	int r = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (strncmp(e->d_name, "ssh_host_", 9) != 0)
			continue;
		key = key || (n > 4 && strcmp(e->d_name + n - 4, "_key") == 0);
		if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
			r = fail(p, "entropy", "%s/%s: %s", dir, e->d_name,
				 strerror(errno));
	}
	return r < 0 ? r : key;
}

/* Two jobs restored from one template must not share host keys: the
 * template's go now, new ones come in the background (RSA under emulation
 * takes seconds; the child is reaped with the agent's others). */
static int ssh_keys_renew(struct persona *p)
{
	_cleanup_free_ char *dir = path_at(p->root, "/etc/ssh");
	_cleanup_free_ char *keygen = path_at(p->root, SSH_KEYGEN);
	pid_t pid;
	int r;

	if (!dir || !keygen)
		return fail(p, "entropy", "%s", strerror(ENOMEM));
	r = ssh_keys_remove(p, dir);
	if (r <= 0 || *root_of(p->root) || access(keygen, X_OK) < 0)
		return r;
	pid = fork();
	if (pid < 0)
		return fail(p, "entropy", "fork: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		setsid();
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execl(SSH_KEYGEN, "ssh-keygen", "-A", (char *)NULL);
		_exit(127);
	}
	log_info("persona: new ssh host keys coming (pid %ld)", (long)pid);
	return 0;
}

static int apply_entropy(struct persona *p, const char *v)
{
	uint8_t bytes[ENTROPY_MAX];
	int n = hex_decode(v, bytes, sizeof(bytes));

	if (n < 0)
		return fail(p, "entropy", "not hex of 1..%d bytes",
			    ENTROPY_MAX);
	n = entropy_add(p, bytes, n);
	explicit_bzero(bytes, sizeof(bytes));
	if (n < 0)
		return n;
	if (machine_id_renew(p) < 0)
		return -1;
	return ssh_keys_renew(p);
}

/* ---- hostname, accounts ---- */

static int apply_hostname(struct persona *p, const char *v)
{
	_cleanup_free_ char *path = path_at(p->root, "/etc/hostname");
	_cleanup_free_ char *line = NULL;
	struct stat st = { .st_mode = 0644 };
	size_t n = strlen(v);

	if (n == 0 || n > 64 ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyz"
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != n)
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

/* "NAME:NUMBER" into @name (of @size bytes), the number and the rest. */
static int split_name_id(const char *v, char *name, size_t size, unsigned *id,
			 const char **rest)
{
	const char *colon = strchr(v, ':');
	char *end;
	unsigned long n;

	if (!colon || (size_t)(colon - v) >= size)
		return -EINVAL;
	memcpy(name, v, (size_t)(colon - v));
	name[colon - v] = '\0';
	errno = 0;
	n = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || n >= 0xffffffffUL ||
	    !(*end == '\0' || (rest && *end == ':')))
		return -EINVAL;
	*id = (unsigned)n;
	if (rest)
		*rest = *end ? end + 1 : end;
	return 0;
}

static int apply_group(struct persona *p, const char *v)
{
	char name[256];
	unsigned gid;
	int r;

	if (split_name_id(v, name, sizeof(name), &gid, NULL) < 0)
		return fail(p, "group", "'%s' is no NAME:GID", v);
	r = persona_group_add(p->root, name, gid);
	if (r < 0)
		return fail(p, "group", "%s: %s", name, strerror(-r));
	return 0;
}

/* A decimal id up to @sep, which @end then points past. */
static int parse_id(const char *s, char sep, unsigned *id, const char **end)
{
	char *e;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &e, 10);
	if (errno || e == s || *e != sep || n >= 0xffffffffUL || s[0] == '-')
		return -EINVAL;
	*id = (unsigned)n;
	*end = *e ? e + 1 : e;
	return 0;
}

/* NAME:UID:GID:HOME; the home is made at the end (persona_home()). */
static int apply_user(struct persona *p, const char *v)
{
	const char *colon = strchr(v, ':'), *rest;
	int r;

	if (!colon || (size_t)(colon - v) >= sizeof(p->user) ||
	    parse_id(colon + 1, ':', &p->uid, &rest) < 0 ||
	    parse_id(rest, ':', &p->gid, &rest) < 0 ||
	    strlen(rest) >= sizeof(p->home))
		return fail(p, "user", "'%s' is no NAME:UID:GID:HOME", v);
	memcpy(p->user, v, (size_t)(colon - v));
	p->user[colon - v] = '\0';
	snprintf(p->home, sizeof(p->home), "%s", rest);
	r = persona_user_add(p->root, p->user, p->uid, p->gid, p->home);
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

/* ---- all of it ---- */

struct step {
	const char *key;
	int (*one)(struct persona *p, const char *value);
	int (*all)(struct persona *p, char *const *entries);
};

static const struct step steps[] = {
	{ "time", apply_time, NULL },
	{ "entropy", apply_entropy, NULL },
	{ "hostname", apply_hostname, NULL },
	{ "group", apply_group, NULL },
	{ "user", apply_user, NULL },
	{ "member", apply_member, NULL },
	{ "hosts", NULL, apply_hosts },
	{ "net", apply_net, NULL },
	{ "share", apply_share, NULL },
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

void persona_apply(char *const *entries, const char *root, char *identity,
		   size_t identity_size, struct persona_result *res)
{
	struct persona p = { .root = root,
			     .identity = identity,
			     .identity_size = identity_size,
			     .res = res };

	memset(res, 0, sizeof(*res));
	for (char *const *e = entries; *e; e++)
		if (!known_key(*e))
			log_warn("persona: ignoring the unknown key of '%.64s'",
				 *e);
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		size_t n = strlen(steps[i].key);

		if (steps[i].all) {
			steps[i].all(&p, entries);
			continue;
		}
		for (char *const *e = entries; *e; e++)
			if (strncmp(*e, steps[i].key, n) == 0 && (*e)[n] == '=')
				steps[i].one(&p, *e + n + 1);
	}
	persona_home(&p);
}
