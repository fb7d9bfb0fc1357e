/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "job/journal.h"
#include "core/log.h"

int statedir_name(uint32_t job_id, unsigned restart, char *buf, size_t len)
{
	int n = snprintf(buf, len, "job-%u.%u", job_id, restart);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A directory root may trust: root's, not writable by anybody else. */
static int check_root_private(int fd, const char *what)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return log_errno(errno, "stat %s", what);
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_error("%s must be owned by root and writable only by root; "
			  "refusing to use it",
			  what);
		return -EPERM;
	}
	return 0;
}

int statedir_open(const char *state_dir, const char *name, bool create)
{
	_cleanup_close_ int top = -1;
	_cleanup_close_ int fd = -1;
	int r;

	if (create && mkdir(state_dir, 0755) < 0 && errno != EEXIST)
		return log_errno(errno, "cannot create StateDir %s", state_dir);
	top = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0)
		return create ? log_errno(errno, "cannot open StateDir %s",
					  state_dir)
			      : -errno;
	r = check_root_private(top, state_dir);
	if (r < 0)
		return r;
	/* Job users reach their relay socket by name below it. */
	if (create && fchmod(top, 0711) < 0)
		return log_errno(errno, "cannot make StateDir %s searchable",
				 state_dir);
	if (create && mkdirat(top, name, 0711) < 0 && errno != EEXIST)
		return log_errno(errno, "cannot create %s/%s", state_dir, name);
	fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = check_root_private(fd, name);
	if (r < 0)
		return r;
	return TAKE_FD(fd);
}

int statedir_lock(int fd, unsigned wait_s)
{
	time_t deadline = time(NULL) + wait_s;

	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (time(NULL) >= deadline)
			return -EBUSY;
		usleep(100 * 1000);
	}
	return 0;
}

/* The device and inode of each directory above the one being emptied. */
struct dir_path {
	struct stat *v;
	size_t n, cap;
};

static int dir_path_push(struct dir_path *p, int fd)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct stat *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	return fstat(fd, &p->v[p->n++]) < 0 ? -errno : 0;
}

/* Empties @fd of everything but its non-empty subdirectories; *@sub gets
 * the first of those, opened (never through a symlink), or -1. */
static int remove_flat(int fd, int *sub)
{
	DIR *d;
	struct dirent *de;
	int r = 0, dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*sub = -1;
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	while (*sub < 0 && r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(fd, de->d_name, 0) == 0 ||
		    (errno == EISDIR &&
		     unlinkat(fd, de->d_name, AT_REMOVEDIR) == 0) ||
		    errno == ENOENT)
			continue;
		if (errno != ENOTEMPTY && errno != EEXIST) {
			r = -errno;
			break;
		}
		*sub = openat(fd, de->d_name,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (*sub < 0)
			r = -errno;
	}
	closedir(d);
	return r;
}

/* Removes what is inside @top, depth first, never following a symlink,
 * with two descriptors whatever the depth (a tree deeper than the
 * descriptor limit must not outlive its job): down into the first
 * non-empty subdirectory, back up through "..", which must be the very
 * directory it came from, and that one scanned again. */
static int remove_contents(int top)
{
	struct dir_path up = { 0 };
	struct stat st;
	int cur = dup(top), sub, parent, r = 0;

	if (cur < 0)
		return -errno;
	for (;;) {
		r = remove_flat(cur, &sub);
		if (r < 0)
			break;
		if (sub >= 0) {
			r = dir_path_push(&up, cur);
			close(cur);
			cur = sub;
			if (r < 0)
				break;
			continue;
		}
		if (up.n == 0)
			break;
		parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = parent;
		if (cur < 0 || fstat(cur, &st) < 0) {
			r = -errno;
			break;
		}
		up.n--;
		if (st.st_dev != up.v[up.n].st_dev ||
		    st.st_ino != up.v[up.n].st_ino) {
			r = -ESTALE; /* moved meanwhile: not followed */
			break;
		}
	}
	if (cur >= 0)
		close(cur);
	free(up.v);
	return r;
}

int statedir_remove(const char *state_dir, const char *name)
{
	_cleanup_close_ int top = -1;
	_cleanup_close_ int fd = -1;
	int r;

	top = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0)
		return errno == ENOENT ? 0 : -errno;
	fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		/* Not a directory (a planted symlink): remove the name only. */
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(top, name, 0) < 0 ? -errno : 0;
		return -errno;
	}
	r = remove_contents(fd);
	if (unlinkat(top, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = r ?: -errno;
	return r;
}

static bool byte_needs_escape(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '%';
}

static void escape_arg(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (byte_needs_escape(c))
			fprintf(f, "%%%02X", c);
		else
			fputc(c, f);
	}
}

const struct journal_verb_info journal_verbs[JOURNAL_N_VERBS] = {
	[JOURNAL_OVERLAY] = { "OVERLAY", 1, JOURNAL_KEPT_FILE | JOURNAL_GUEST },
	[JOURNAL_NVRAM] = { "NVRAM", 1, JOURNAL_KEPT_FILE },
	[JOURNAL_SEED] = { "SEED", 1, JOURNAL_KEPT_FILE },
	[JOURNAL_VIRTIOFSD] = { "VIRTIOFSD", 1, JOURNAL_GUEST },
	[JOURNAL_DOMAIN] = { "DOMAIN", 1, JOURNAL_GUEST },
	[JOURNAL_RELAY] = { "RELAY", 1, JOURNAL_GUEST },
	[JOURNAL_DEVOWNER] = { "DEVOWNER", 4, JOURNAL_PER_JOB },
	[JOURNAL_DETACH] = { "DETACH", 1, JOURNAL_PER_JOB },
	[JOURNAL_NETLINK] = { "NETLINK", 1,
			      JOURNAL_ISOLATES | JOURNAL_PER_JOB },
	[JOURNAL_NFT] = { "NFT", 2, JOURNAL_ISOLATES | JOURNAL_PER_JOB },
	[JOURNAL_IBGUID] = { "IBGUID", 4, JOURNAL_ISOLATES | JOURNAL_PER_JOB },
	[JOURNAL_IBRECORD] = { "IBRECORD", 1,
			       JOURNAL_ISOLATES | JOURNAL_PER_JOB },
};

const char *journal_verb_name(enum journal_verb verb)
{
	if ((unsigned)verb >= JOURNAL_N_VERBS)
		return "?";
	return journal_verbs[verb].name;
}

enum journal_verb journal_verb_lookup(const char *name)
{
	for (size_t i = 0; i < JOURNAL_N_VERBS; i++)
		if (strcmp(name, journal_verbs[i].name) == 0)
			return (enum journal_verb)i;
	return JOURNAL_UNKNOWN;
}

bool journal_verb_is(enum journal_verb verb, unsigned flags)
{
	if ((unsigned)verb >= JOURNAL_N_VERBS)
		return false;
	return (journal_verbs[verb].flags & flags) == flags;
}

int journal_append(int dirfd, enum journal_verb verb, const char *const *args)
{
	_cleanup_free_ char *line = NULL;
	_cleanup_close_ int fd = -1;
	size_t len = 0;
	FILE *f;
	ssize_t n;

	if ((unsigned)verb >= JOURNAL_N_VERBS) {
		log_error("journal record of no verb (%d): a bug", (int)verb);
		return -EINVAL;
	}
	f = open_memstream(&line, &len);
	if (!f)
		return -ENOMEM;
	escape_arg(f, journal_verbs[verb].name);
	for (size_t i = 0; args && args[i]; i++) {
		if (i == JOURNAL_MAX_ARGS ||
		    strlen(args[i]) > JOURNAL_ARG_MAX) {
			fclose(f);
			return -E2BIG;
		}
		fputc('\t', f);
		escape_arg(f, args[i]);
	}
	fputc('\n', f);
	if (fclose(f) != 0)
		return -ENOMEM;

	fd = openat(dirfd, JOURNAL_FILE,
		    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return log_errno(errno, "cannot open the job journal");
	n = write(fd, line, len);
	if (n < 0 || (size_t)n != len)
		return log_errno(n < 0 ? errno : EIO,
				 "cannot write the job journal");
	/* The record must be on disk before the change it announces. */
	if (fsync(fd) < 0)
		return log_errno(errno, "cannot sync the job journal");
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Unescapes in place; rejects malformed escapes and raw control bytes. */
static int unescape_arg(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return -EBADMSG;
		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		if (hexval(s[1]) < 0 || hexval(s[2]) < 0)
			return -EBADMSG;
		*out = (char)(hexval(s[1]) << 4 | hexval(s[2]));
		if (*out == '\0')
			return -EBADMSG;
		out++;
		s += 2;
	}
	*out = '\0';
	return 0;
}

static int parse_record(char *line, struct journal_entry *e)
{
	char *tok;
	size_t n = 0;

	memset(e, 0, sizeof(*e));
	while ((tok = strsep(&line, "\t"))) {
		if (n > JOURNAL_MAX_ARGS || unescape_arg(tok) < 0)
			return -EBADMSG;
		if (n == 0)
			e->verb = tok;
		else
			e->args[n - 1] = tok;
		n++;
	}
	if (!e->verb || !*e->verb)
		return -EBADMSG;
	e->n_args = n - 1;
	return 0;
}

static int journal_copy_entry(struct journal *j, const struct journal_entry *e)
{
	struct journal_entry *ne;
	struct journal_entry *dst;

	ne = realloc(j->entries, (j->n_entries + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	j->entries = ne;
	dst = &j->entries[j->n_entries];
	memset(dst, 0, sizeof(*dst));
	j->n_entries++;
	dst->verb = strdup(e->verb);
	if (!dst->verb)
		return -ENOMEM;
	dst->kind = journal_verb_lookup(dst->verb);
	for (size_t i = 0; i < e->n_args; i++) {
		dst->args[i] = strdup(e->args[i]);
		if (!dst->args[i])
			return -ENOMEM;
	}
	dst->n_args = e->n_args;
	return 0;
}

int journal_read(int dirfd, struct journal *j)
{
	_cleanup_close_ int fd = -1;
	_cleanup_fclose_ FILE *f = NULL;
	char line[JOURNAL_MAX_ARGS * (3 * JOURNAL_ARG_MAX + 1) + 64];
	unsigned lineno = 0;
	struct stat st;
	int r;

	memset(j, 0, sizeof(*j));
	fd = openat(dirfd, JOURNAL_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT
			       ? 0
			       : log_errno(errno,
					   "cannot open the job journal");
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_error("the job journal is not a private file of root's; "
			  "refusing it");
		return -EPERM;
	}
	if (st.st_size > JOURNAL_MAX_SIZE) {
		log_error(
			"the job journal is larger than %u bytes; refusing it",
			JOURNAL_MAX_SIZE);
		return -EFBIG;
	}
	f = fdopen(fd, "r");
	if (!f)
		return -ENOMEM;
	fd = -1;
	while (fgets(line, sizeof(line), f)) {
		struct journal_entry e;
		size_t len = strlen(line);

		lineno++;
		if (len == 0 || line[len - 1] != '\n') {
			/* A torn last record: the change it announced may
			 * not have started; nothing to undo beyond it. */
			log_warn("job journal line %u is incomplete; ignored",
				 lineno);
			break;
		}
		line[len - 1] = '\0';
		if (parse_record(line, &e) < 0) {
			log_error("job journal line %u is malformed; ignored",
				  lineno);
			continue;
		}
		r = journal_copy_entry(j, &e);
		if (r < 0) {
			journal_free(j);
			return r;
		}
	}
	return 0;
}

void journal_free(struct journal *j)
{
	for (size_t i = 0; i < j->n_entries; i++) {
		free(j->entries[i].verb);
		for (size_t k = 0; k < j->entries[i].n_args; k++)
			free(j->entries[i].args[k]);
	}
	free(j->entries);
	memset(j, 0, sizeof(*j));
}
