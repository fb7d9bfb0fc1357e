/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libvirt's qemu driver directory, LOCALSTATEDIR/lib/libvirt/qemu: libvirt
 * puts each guest's key, master-key.aes, into DIR/domain-ID-NAME/, which it
 * gives to the domain's DAC user (the job user) 0750, and qemu, as that
 * user, opens the key by its path: it must be able to enter DIR and every
 * directory above. Debian's libvirt-daemon-system makes DIR
 * libvirt-qemu's 0750 (upstream's libvirt.spec: 0751). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "job/user.h"
#include "core/strutil.h"

#define SEARCH_DIRS_MAX 64

struct search_dirs {
	char *paths[SEARCH_DIRS_MAX]; /* "/" down to the directory checked */
	int fds[SEARCH_DIRS_MAX];     /* each opened O_PATH, as root */
	int errs[SEARCH_DIRS_MAX];    /* what an ordinary user gets there */
	size_t n;
};

static void search_dirs_free(struct search_dirs *sd)
{
	for (size_t i = 0; i < sd->n; i++) {
		free(sd->paths[i]);
		if (sd->fds[i] >= 0)
			close(sd->fds[i]);
	}
}

/* Takes @path. */
static int search_dirs_add(struct search_dirs *sd, char *path)
{
	if (!path)
		return -ENOMEM;
	if (sd->n == SEARCH_DIRS_MAX) {
		free(path);
		return -ENAMETOOLONG;
	}
	sd->paths[sd->n] = path;
	sd->fds[sd->n] = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return sd->fds[sd->n++] < 0 ? -errno : 0;
}

/* The directories a lookup of @dir searches: those of its canonical path
 * (a symbolic link is followed where the lookup would follow it). */
static int search_dirs_open(const char *dir, struct search_dirs *sd)
{
	_cleanup_free_ char *canon = realpath(dir, NULL);
	size_t len;
	int r;

	if (!canon)
		return -errno;
	len = strlen(canon);
	r = search_dirs_add(sd, strndup(canon, 1));
	for (size_t i = 2; r == 0 && i <= len; i++)
		if (i == len || canon[i] == '/')
			r = search_dirs_add(sd, strndup(canon, i));
	return r;
}

/* In a child that is the ordinary user: for each directory, 0 or the errno
 * of a lookup of "." in it. That needs search permission on that directory
 * alone, so each one that would stop qemu is found, not only the first. */
static int search_child(const void *arg, int fd)
{
	const struct search_dirs *sd = arg;

	for (size_t i = 0; i < sd->n; i++) {
		int dot = openat(sd->fds[i], ".",
				 O_PATH | O_DIRECTORY | O_CLOEXEC);

		dprintf(fd, "%d\n", dot < 0 ? errno : 0);
		if (dot >= 0)
			close(dot);
	}
	return 0;
}

/* As nobody when root; else from the mode bits only (the caller says so). */
static int search_dirs_try(struct search_dirs *sd)
{
	struct passwd *pw = getpwnam("nobody");
	_cleanup_free_ char *out = NULL;
	char *p, *end;
	struct stat st;
	int r;

	if (geteuid() != 0) {
		for (size_t i = 0; i < sd->n; i++)
			sd->errs[i] = fstat(sd->fds[i], &st) < 0 ? errno
				      : st.st_mode & S_IXOTH	 ? 0
								 : EACCES;
		return 0;
	}
	r = user_run(pw ? pw->pw_uid : 65534, pw ? pw->pw_gid : 65534,
		     search_child, sd, 16 * SEARCH_DIRS_MAX, &out, NULL);
	if (r < 0)
		return r;
	p = out;
	for (size_t i = 0; i < sd->n; i++, p = end) {
		long e = strtol(p, &end, 10);

		if (end == p)
			return -EPROTO;
		sd->errs[i] = (int)e;
	}
	return 0;
}

/* The command that lets every user enter @dir and survives the packages'
 * upgrades: a dpkg statoverride (libvirt-daemon-system's postinst and
 * dpkg's unpack both keep one) with @dir's owner, group and mode plus o+x. */
static void search_fix(const char *dir, int fd, char *fix, size_t size)
{
	struct passwd *pw;
	struct group *gr;
	char user[64], group[64];
	struct stat st;

	if (fstat(fd, &st) < 0 ||
	    access("/usr/bin/dpkg-statoverride", X_OK) < 0) {
		snprintf(fix, size, "chmod o+x %s", dir);
		return;
	}
	pw = getpwuid(st.st_uid);
	gr = getgrgid(st.st_gid);
	if (pw)
		snprintf(user, sizeof(user), "%s", pw->pw_name);
	else
		snprintf(user, sizeof(user), "#%u", (unsigned)st.st_uid);
	if (gr)
		snprintf(group, sizeof(group), "%s", gr->gr_name);
	else
		snprintf(group, sizeof(group), "#%u", (unsigned)st.st_gid);
	snprintf(fix, size,
		 "dpkg-statoverride --list %s >/dev/null && "
		 "dpkg-statoverride --remove %s; "
		 "dpkg-statoverride --update --add %s %s %04o %s",
		 dir, dir, user, group, (st.st_mode & 07777) | S_IXOTH, dir);
}

/* qemu runs as the job user: every directory on the way to libvirt's
 * per-domain directory must let an ordinary user in. Tried, as nobody,
 * the way qemu will look it up. No such directory: libvirt is not the
 * system's here (libvirtd makes it 0755 when it starts). */
void check_libvirt_dir(struct checker *c, const char *dir)
{
	struct search_dirs sd = { 0 };
	char fix[3 * PATH_MAX + 256];
	unsigned bad = 0;
	int r;

	if (access(dir, F_OK) < 0 && errno == ENOENT)
		return;
	r = search_dirs_open(dir, &sd);
	if (r == 0)
		r = search_dirs_try(&sd);
	if (r < 0) {
		check_problem(c, "run slurm-vm check-config as root",
			      "%s: cannot try what qemu does there: %s", dir,
			      strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < sd.n; i++) {
		if (!sd.errs[i])
			continue;
		bad++;
		search_fix(sd.paths[i], sd.fds[i], fix, sizeof(fix));
		check_problem(c, fix,
			      "%s: an ordinary user cannot enter it (%s: %s): "
			      "qemu runs as the job's user and opens "
			      "%s/domain-ID-NAME/master-key.aes, so every VM "
			      "job fails",
			      sd.paths[i],
			      geteuid() == 0 ? "tried as nobody"
					     : "no o+x; run as root to try it "
					       "as nobody",
			      strerror(sd.errs[i]), dir);
	}
	if (!bad)
		check_ok("%s: an ordinary user can enter it and every "
			 "directory above (%s), as qemu running as the job's "
			 "user must",
			 dir,
			 geteuid() == 0 ? "tried as nobody" : "by their modes");
out:
	search_dirs_free(&sd);
}
