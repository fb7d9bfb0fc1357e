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

/* Reads @path with the credentials of @uid/@gid in a child: O_NOFOLLOW on
 * the last component, a regular file, at most @max bytes (larger: -EFBIG).
 * A missing file is -ENOENT. *@data is malloc'd and NUL-terminated. */
int user_read_file(uid_t uid, gid_t gid, const char *path, size_t max,
		   char **data);
