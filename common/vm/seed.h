/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The cloud-init NoCloud seed of a job's guest: meta-data (instance-id from
 * the job id and restart count, so a requeued job is a new instance;
 * local-hostname), user-data (#cloud-config: the job user with the host's
 * uid, name, primary group and groups with their gids, the public keys of
 * the user's ~/.ssh/authorized_keys, and how to start the agent when the
 * image has none: from the seed itself), network-config (version 2).
 * Packed with genisoimage as an ISO 9660 volume labelled "cidata", which
 * the domain attaches as a read-only virtio disk.
 *
 * Every value is written as a YAML double-quoted scalar with control bytes
 * escaped, and shell commands take values only as positional arguments, so
 * no name from NSS or line from authorized_keys can become YAML structure
 * or shell syntax. The seed passes `cloud-init schema`.
 */
#include <stddef.h>
#include <stdint.h>

#include "job/user.h"
#include "job/vmconf.h"

#define SEED_LABEL	  "cidata"
#define SEED_AGENT_NAME	  "slurm-vm-agent"
#define SEED_SSH_KEYS_MAX (64u * 1024)
#define SEED_GENISOIMAGE  "/usr/bin/genisoimage"
/* How the guest mounts a share (SharedDirs=, 9p): large messages, and
 * cache=mmap so that writable shared mmap works. */
#define SEED_SHARE_MOUNT_OPTIONS \
	"trans=virtio,version=9p2000.L,msize=524288,cache=mmap"

struct seed_params {
	uint32_t job_id;
	unsigned restart;
	const char *hostname;
	const struct user_info *user;
	const char *ssh_keys; /* authorized_keys text or NULL */
	const char *agent;    /* static agent put on the seed, or NULL */
	/* the job network (JobNetwork=vxlan, jobnet.h): the guest's
	 * network-config v2 (NULL: DHCP on a virtio NIC, optional) and the
	 * lines appended to its /etc/hosts (NULL: none) */
	const char *network_config;
	const char *hosts;
	/* host directories the guest mounts at the same path before the
	 * agent starts (a bootcmd each), share i by the tag
	 * SHARED_DIR_TAG_FMT i, as the domain names it, over
	 * @share_transport (resolved: 9p, the default, or virtiofs) */
	char *const *shares;
	unsigned n_shares;
	enum shared_dir_transport share_transport;
};

/* The three documents, malloc'd. */
int seed_meta_data(const struct seed_params *p, char **out);
int seed_user_data(const struct seed_params *p, char **out);
int seed_network_config(const struct seed_params *p, char **out);

/* The user's ~/.ssh/authorized_keys, read as the user (user_read_file):
 * NULL in *@keys when there is none. A file that cannot be read is a
 * warning, not an error: the guest is reachable through the agent. A read
 * that does not finish in time is: -ETIMEDOUT, the job's fault. */
int seed_read_ssh_keys(const struct user_info *u, char **keys);

/* The static agent the seed carries for images that have none: HelperDir's
 * (@helper_dir), else the installed SBINDIR one; NULL in *@agent when there
 * is neither (a warning: the image must have its own). Both the prolog and
 * `slurm-vm plan --seed-dir` put the same one on their seeds. */
int seed_find_agent(const char *helper_dir, char **agent);

/* Writes the documents into @dir_path (an existing directory of root's,
 * 0700) and packs them, with the agent when @p->agent is set, into
 * @iso_path: the job user's, 0600 (packed as @dir_path/SEED_ISO_PACKED,
 * then moved). */
#define SEED_ISO_PACKED "seed.iso"
int seed_build(const struct seed_params *p, const char *dir_path,
	       const char *iso_path);
