/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/run.h"
#include "job/share_transport.h"

#define VIRTIOFSD_VERSION_TIMEOUT_S 10

enum virtiofsd_kind virtiofsd_kind_of_version(const char *text)
{
	if (!text)
		return VIRTIOFSD_UNKNOWN;
	if (strncmp(text, "virtiofsd version ", 18) == 0 ||
	    strstr(text, "using FUSE kernel interface version"))
		return VIRTIOFSD_C;
	/* "virtiofsd 1.13.2": its option parser's name and version */
	if (strncmp(text, "virtiofsd ", 10) == 0 &&
	    isdigit((unsigned char)text[10]))
		return VIRTIOFSD_RUST;
	return VIRTIOFSD_UNKNOWN;
}

enum virtiofsd_kind virtiofsd_identify(const char *path)
{
	char *const argv[] = { (char *)path, "--version", NULL };
	char out[512] = "";
	struct stat st;

	if (!path || stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    access(path, X_OK) < 0)
		return VIRTIOFSD_MISSING;
	if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return VIRTIOFSD_UNSAFE;
	if (run_wait(argv, VIRTIOFSD_VERSION_TIMEOUT_S, out, sizeof(out)) != 0)
		return VIRTIOFSD_UNKNOWN;
	return virtiofsd_kind_of_version(out);
}

const char *share_transport_name(enum shared_dir_transport t)
{
	return t == SHARED_DIR_VIRTIOFS ? "virtiofs" : "9p";
}

/* Why the virtiofsd at @path cannot serve the shares; NULL: it can. */
static const char *virtiofsd_unusable(enum virtiofsd_kind kind)
{
	switch (kind) {
	case VIRTIOFSD_MISSING:
		return "is missing or not an executable file";
	case VIRTIOFSD_C:
		return "is qemu's C virtiofsd, which must run as root (slurm-vm "
		       "runs virtiofsd as the job user)";
	case VIRTIOFSD_UNSAFE:
		return "is not root's or is writable by group or others (the "
		       "prolog would run it as root): not run";
	case VIRTIOFSD_UNKNOWN:
		return "does not say it is the Rust virtiofsd (`--version` "
		       "prints no \"virtiofsd X.Y.Z\")";
	case VIRTIOFSD_RUST:
		break;
	}
	return NULL;
}

int share_transport_choose(enum shared_dir_transport want,
			   enum virtiofsd_kind kind, const char *path,
			   enum shared_dir_transport *out, char *why,
			   size_t why_len)
{
	const char *unusable = virtiofsd_unusable(kind);

	*out = SHARED_DIR_9P;
	if (want == SHARED_DIR_9P) {
		snprintf(why, why_len, "SharedDirTransport=9p");
		return 0;
	}
	if (!unusable) {
		*out = SHARED_DIR_VIRTIOFS;
		snprintf(why, why_len,
			 "SharedDirTransport=%s, VirtiofsdPath=%s is the Rust "
			 "virtiofsd",
			 want == SHARED_DIR_AUTO ? "auto" : "virtiofs", path);
		return 0;
	}
	if (want == SHARED_DIR_AUTO) {
		snprintf(why, why_len,
			 "SharedDirTransport=auto, VirtiofsdPath=%s %s", path,
			 unusable);
		return 0;
	}
	snprintf(why, why_len,
		 "SharedDirTransport=virtiofs, but VirtiofsdPath=%s %s", path,
		 unusable);
	return -EINVAL;
}

int share_transport_resolve(const struct vmconf *conf,
			    enum shared_dir_transport *out, char *why,
			    size_t why_len)
{
	enum virtiofsd_kind kind = VIRTIOFSD_MISSING;

	if (conf->shared_dir_transport != SHARED_DIR_9P)
		kind = virtiofsd_identify(conf->virtiofsd_path);
	return share_transport_choose(conf->shared_dir_transport, kind,
				      conf->virtiofsd_path, out, why, why_len);
}

void virtiofsd_args_free(struct virtiofsd_args *a)
{
	free(a->shared_dir);
	a->shared_dir = NULL;
}

/* --sandbox=namespace: virtiofsd, the job user, pivots into the share in
 * user and mount namespaces of its own, so a guest kernel that sends ".."
 * at the root or a name holding '/' (which --sandbox=none lets through)
 * finds nothing outside it; only the user's uid and gid are mapped (other
 * owners show as nobody in the guest), access is the user's real
 * credentials and groups.
 * --cache=auto: close-to-open, as NFS; the host's side (the batch script,
 * other nodes) may change the files too. No --tag: qemu 7.x crashes on
 * it. --rlimit-nofile=0: the prolog set the bound (VIRTIOFSD_NOFILE),
 * which an unprivileged virtiofsd could not raise anyway. */
int virtiofsd_argv(const char *path, const char *dir, struct virtiofsd_args *a)
{
	size_t n = 0;

	memset(a, 0, sizeof(*a));
	if (!path || !dir || dir[0] != '/')
		return -EINVAL;
	if (asprintf(&a->shared_dir, "--shared-dir=%s", dir) < 0) {
		a->shared_dir = NULL;
		return -ENOMEM;
	}
	a->argv[n++] = (char *)path;
	a->argv[n++] = "--fd=" VIRTIOFSD_LISTEN_FD_STR;
	a->argv[n++] = a->shared_dir;
	a->argv[n++] = "--sandbox=namespace";
	a->argv[n++] = "--cache=auto";
	a->argv[n++] = "--thread-pool-size=" VIRTIOFSD_THREADS_STR;
	a->argv[n++] = "--rlimit-nofile=0";
	a->argv[n++] = "--log-level=info";
	a->argv[n] = NULL;
	return 0;
}
