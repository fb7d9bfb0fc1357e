/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "channel/proto.h"
#include "core/macro.h"
#include "workdir.h"

/* Is @source the tag the domain gives a share (SHARED_DIR_TAG_FMT)? */
static bool share_tag(const char *source)
{
	unsigned index;
	int end = -1;

	return sscanf(source, SHARED_DIR_TAG_FMT "%n", &index, &end) == 1 &&
	       end > 0 && source[end] == '\0';
}

/* Is @fstype one the shares come by (vm.conf SharedDirTransport=)? */
static bool share_fstype(const char *fstype)
{
	return strcmp(fstype, "9p") == 0 || strcmp(fstype, "virtiofs") == 0;
}

/* Is @dev the device of a share's mount (9p or virtiofs) in @mountinfo?
 * Its fields (proc(5)): "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS... -
 * FSTYPE SOURCE ...". The device, not the path: a share's subdirectory
 * reached through a symlink or "..", or a filesystem the host mounts below
 * a share (one mount here: 9p's multidevs=remap, virtiofs's one FUSE
 * superblock), is on it; an empty mount point is not. */
static bool on_share(const char *mountinfo, dev_t dev)
{
	_cleanup_fclose_ FILE *f = fopen(mountinfo, "re");
	_cleanup_free_ char *line = NULL;
	size_t size = 0;

	while (f && getline(&line, &size, f) > 0) {
		char fstype[16], source[32];
		unsigned maj, min;
		const char *tail = strstr(line, " - ");

		if (sscanf(line, "%*u %*u %u:%u", &maj, &min) == 2 && tail &&
		    sscanf(tail, " - %15s %31s", fstype, source) == 2 &&
		    share_fstype(fstype) && share_tag(source) &&
		    makedev(maj, min) == dev)
			return true;
	}
	return false;
}

int workdir_enter(const char *cwd, const char *mountinfo, char *why,
		  size_t why_len)
{
	struct stat st;

	if (chdir(cwd) < 0)
		snprintf(why, why_len, "%s", strerror(errno));
	else if (strcmp(cwd, "/tmp") == 0 ||
		 (stat(".", &st) == 0 && on_share(mountinfo, st.st_dev)))
		return 0;
	else
		snprintf(why, why_len,
			 "the guest's own directory, not on a share");
	return chdir("/tmp") < 0 ? -errno : 1;
}
