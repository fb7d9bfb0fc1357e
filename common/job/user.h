/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The job user as the host's NSS knows it, and root becoming that user.
 * Root reads files a user owns (an image, ~/.ssh/authorized_keys) only in a
 * child that has become the user, so it never reads for a user what the
 * user could not read (a planted symlink to a root-only file fails there).
 */
#include <stddef.h>
#include <sys/types.h>

struct user_group {
	char *name;
	gid_t gid;
};

struct user_info {
	char *name;
	uid_t uid;
	gid_t gid;
	char *home;
	char *shell;
	struct user_group primary;
	struct user_group *groups; /* supplementary, without the primary */
	size_t n_groups;
};

/* Switches the calling process to @uid, @gid and @uid's groups, for good.
 * Only for a child that exits afterwards. */
int user_become(uid_t uid, gid_t gid);

/* Looks @uid up (passwd, group, getgrouplist). The passwd entry must say
 * @uid; the primary group is @gid (the job's), whatever passwd says. */
int user_info_load(uid_t uid, gid_t gid, struct user_info *u);
void user_info_free(struct user_info *u);

/* How long a child that runs as the user may take: a hung NFS or FUSE
 * path the user controls must not hold the prolog past Slurm's
 * PrologEpilogTimeout (a drained node). Fixed, well below any sane
 * PrologEpilogTimeout; the unit tests shorten it. */
#define USER_CHILD_TIMEOUT_S 30
extern unsigned user_child_timeout_ms;

/* What a child does once it is the user: writes its answer to @fd and
 * returns 0 or a negative errno (its exit status). */
typedef int (*user_child_fn)(const void *arg, int fd);

/* Runs @fn in a child that has become @uid/@gid and collects what it
 * writes, at most @max bytes (more: -EFBIG), as malloc'd, NUL-terminated
 * *@out (its length in *@len if @len). A child that fails: its negative
 * errno, and *@out still holds what it wrote. A child still running after
 * user_child_timeout_ms is killed: -ETIMEDOUT, and *@out is NULL. */
int user_run(uid_t uid, gid_t gid, user_child_fn fn, const void *arg,
	     size_t max, char **out, size_t *len);

/* Reads @path with the credentials of @uid/@gid in a child: O_NOFOLLOW on
 * the last component, a regular file, at most @max bytes (larger: -EFBIG).
 * A missing file is -ENOENT; too late, -ETIMEDOUT (user_run). *@data is
 * malloc'd and NUL-terminated. */
int user_read_file(uid_t uid, gid_t gid, const char *path, size_t max,
		   char **data);

/* 0 if @uid/@gid can open @path for reading (in a child, user_run), else
 * the negative errno it got. */
int user_can_open(uid_t uid, gid_t gid, const char *path);
