/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Which transport serves the shares (vm.conf SharedDirTransport=): 9p,
 * served by qemu, or virtiofs, served by a Rust virtiofsd per share run as
 * the job user. The C virtiofsd of qemu 7.x and earlier (Debian 12's
 * /usr/lib/qemu/virtiofsd) must run as root: slurm-vm never uses it. `auto`
 * takes virtiofs where VirtiofsdPath= is the Rust one, 9p otherwise. For
 * root's programs (the prolog, check-config): it runs VirtiofsdPath=.
 */
#include <stdbool.h>
#include <stddef.h>

#include "job/vmconf.h"

enum virtiofsd_kind {
	VIRTIOFSD_MISSING = 0, /* not there, or not an executable file */
	VIRTIOFSD_RUST,	       /* gitlab virtio-fs/virtiofsd: unprivileged */
	VIRTIOFSD_C,	       /* qemu's tools/virtiofsd: root only */
	VIRTIOFSD_UNKNOWN,     /* runs, but says it is neither */
	VIRTIOFSD_UNSAFE,      /* another's than root's, or writable by group
				  or others: not run */
};

/* What `virtiofsd --version` printed (@text) says the program is: the Rust
 * one prints "virtiofsd X.Y.Z" (its command-line parser's name, 1.13.2 in
 * Debian 13, 1.14.0 in forky),
 * qemu's C one "virtiofsd version X.Y.Z (...)" and libfuse's "using FUSE
 * kernel interface version N.M". */
enum virtiofsd_kind virtiofsd_kind_of_version(const char *text);
/* Runs `@path --version` (argv only, bounded in time), only when the file
 * is root's (or the caller's) and not writable by group or others: the
 * prolog runs it as root. */
enum virtiofsd_kind virtiofsd_identify(const char *path);

/* The transport in effect for @want with the virtiofsd @kind at @path:
 * SHARED_DIR_9P or SHARED_DIR_VIRTIOFS in *@out and 0; when @want is
 * virtiofs and no Rust virtiofsd is at @path, -EINVAL. @why says which and
 * why, in words for the admin. */
int share_transport_choose(enum shared_dir_transport want,
			   enum virtiofsd_kind kind, const char *path,
			   enum shared_dir_transport *out, char *why,
			   size_t why_len);
/* The same for vm.conf @conf on this node (runs its VirtiofsdPath=). */
int share_transport_resolve(const struct vmconf *conf,
			    enum shared_dir_transport *out, char *why,
			    size_t why_len);
/* "9p" or "virtiofs". */
const char *share_transport_name(enum shared_dir_transport t);

/* How the prolog runs a share's virtiofsd (prolog/virtiofs.c): its
 * listening socket on this descriptor, at most this many threads serving
 * requests, and at most this many open files (RLIMIT_NOFILE, set by root
 * before it becomes the user: an open file pins host memory, and a guest
 * could otherwise open files until the host's limit). */
#define VIRTIOFSD_LISTEN_FD	3
#define VIRTIOFSD_LISTEN_FD_STR "3"
#define VIRTIOFSD_THREADS_STR	"4"
#define VIRTIOFSD_NOFILE	4096
#define VIRTIOFSD_ARGV_MAX	10

struct virtiofsd_args {
	char *argv[VIRTIOFSD_ARGV_MAX]; /* NULL-terminated */
	char *shared_dir;		/* owned: --shared-dir=DIR */
};

/* The command line of the Rust virtiofsd at @path serving the absolute
 * directory @dir on the listening socket VIRTIOFSD_LISTEN_FD. 0, or
 * -EINVAL, -ENOMEM. */
int virtiofsd_argv(const char *path, const char *dir, struct virtiofsd_args *a);
void virtiofsd_args_free(struct virtiofsd_args *a);
