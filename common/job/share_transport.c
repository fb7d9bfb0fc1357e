/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/run.h"
#include "job/share_transport.h"

#define VIRTIOFSD_VERSION_TIMEOUT_S 10

/* The prolog starts no virtiofsd yet (issue #28's last step): until it
 * does, SharedDirTransport=virtiofs is refused and auto means 9p, so that
 * no guest is defined with a share nothing serves. */
static const bool virtiofs_served = false;

enum virtiofsd_kind virtiofsd_kind_of_version(const char *text)
{
	if (!text)
		return VIRTIOFSD_UNKNOWN;
	if (strncmp(text, "virtiofsd backend ", 18) == 0)
		return VIRTIOFSD_RUST;
	if (strncmp(text, "virtiofsd version ", 18) == 0 ||
	    strstr(text, "using FUSE kernel interface version"))
		return VIRTIOFSD_C;
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
static const char *virtiofsd_unusable(enum virtiofsd_kind kind, bool served)
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
		       "prints no \"virtiofsd backend\")";
	case VIRTIOFSD_RUST:
		break;
	}
	return served ? NULL
		      : "is the Rust virtiofsd, but this build's prolog does "
			"not start it yet (issue #28)";
}

int share_transport_choose(enum shared_dir_transport want,
			   enum virtiofsd_kind kind, const char *path,
			   bool served, enum shared_dir_transport *out,
			   char *why, size_t why_len)
{
	const char *unusable = virtiofsd_unusable(kind, served);

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
	return kind == VIRTIOFSD_RUST ? -EOPNOTSUPP : -EINVAL;
}

int share_transport_resolve(const struct vmconf *conf,
			    enum shared_dir_transport *out, char *why,
			    size_t why_len)
{
	enum virtiofsd_kind kind = VIRTIOFSD_MISSING;

	if (conf->shared_dir_transport != SHARED_DIR_9P)
		kind = virtiofsd_identify(conf->virtiofsd_path);
	return share_transport_choose(conf->shared_dir_transport, kind,
				      conf->virtiofsd_path, virtiofs_served,
				      out, why, why_len);
}
