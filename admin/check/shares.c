/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SharedDirs= and the transport that serves them. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "job/share_transport.h"
#include "job/vmconf.h"

/* A share's parent a user may write in (without the sticky bit) or own:
 * that user could remove or replace the share, and a missing share drains
 * the node. 0, or the first such directory in @bad. */
static int share_parent_unsafe(const char *share, char *bad, size_t size)
{
	struct stat st;

	snprintf(bad, size, "%s", share);
	for (char *slash = strrchr(bad, '/'); slash;
	     slash = strrchr(bad, '/')) {
		if (slash == bad)
			slash[1] = '\0'; /* "/" */
		else
			*slash = '\0';
		if (stat(bad, &st) < 0)
			return -errno;
		if (st.st_uid != 0 || ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
				       !(st.st_mode & S_ISVTX)))
			return 1;
		if (slash == bad)
			break;
	}
	return 0;
}

/* SharedDirTransport=: the transport in effect and why; virtiofs without
 * a virtiofsd slurm-vm can run as the job user (the prolog drains the node
 * then). 9p in @t when none can be had. */
static void check_share_transport(struct checker *c, const struct vmconf *vc,
				  enum shared_dir_transport *t)
{
	char why[1024];
	int r = share_transport_resolve(vc, t, why, sizeof(why));

	if (r == 0)
		check_ok("SharedDirs: served over %s (%s)",
			 share_transport_name(*t), why);
	else
		check_problem(
			c,
			"install the Rust virtiofsd (Debian 13, RHEL 9: "
			"package virtiofsd) and set VirtiofsdPath= to it, "
			"or set SharedDirTransport=9p",
			"SharedDirs: %s: the prolog drains the node", why);
}

/* SharedDirs=: each share is there and a directory (the prolog drains the
 * node otherwise), in directories no user can change. */
void check_shares(struct checker *c, const struct vmconf *vc)
{
	size_t n = vmconf_n_shared_dirs(vc);
	char parent[SHARED_DIR_PATH_MAX + 1];
	enum shared_dir_transport t = SHARED_DIR_9P;

	if (n || vc->shared_dir_transport != SHARED_DIR_9P)
		check_share_transport(c, vc, &t);

	for (size_t i = 0; i < n; i++) {
		const char *d = vc->shared_dirs[i];
		int r = vmconf_shared_dir_usable(d);

		if (r == -ENOTDIR)
			check_problem(c, "list directories only in SharedDirs=",
				      "SharedDirs: %s is not a directory", d);
		else if (r < 0)
			check_problem(
				c, "create it, or remove it from SharedDirs=",
				"SharedDirs: %s: %s", d, strerror(-r));
		else if (share_parent_unsafe(d, parent, sizeof(parent)) > 0)
			check_problem(c,
				      "share directories whose parents are "
				      "root's and not writable by others",
				      "SharedDirs: %s: its parent %s is not "
				      "root's or is writable by others, so a "
				      "user could remove or replace the share "
				      "(and a missing share drains the node)",
				      d, parent);
		else
			check_ok("SharedDirs: %s is shared with the guests "
				 "over %s, as the job user",
				 d, share_transport_name(t));
	}
}
