/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * InfiniBand partitions per job (vm.conf IbPartitions=yes).
 *
 * On the node: each of the job's VFs gets a node and a port GUID derived
 * from the job, the node's place in the job's node list and the VF's place
 * among the job's VFs on the node, written to its PF's
 * sriov/<n>/{node,port,policy} (mlx5: ConnectX-4 and later) before the guest
 * starts, and the old values back at the end. The P_Key of the job comes
 * from the site's range (IbPKeyRange=).
 *
 * On the subnet manager's node: `slurm-vm ib-partitions` turns the records
 * the prologs leave in IbPartitionDir= into OpenSM's partitions.conf, the
 * job's VFs full members of the job's P_Key and limited members of the
 * default partition.
 *
 * GUID, 64 bits: IbGuidPrefix (16) | job id (26) | node index (16) |
 * VF slot (5) | 0 node GUID, 1 port GUID (1).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pci_device;

#define IBPART_MAX_VFS	    32	  /* VF slots per job and node */
#define IBPART_MAX_NODES    65536 /* node indexes */
#define IBPART_GUID_TEXT    24	  /* "xx:xx:xx:xx:xx:xx:xx:xx" + NUL */
#define IBPART_DEFAULT_PKEY 0x7fff

uint64_t ibpart_guid(uint16_t prefix, uint32_t job_id, unsigned node_index,
		     unsigned slot, bool port);
/* The job's P_Key (without the full-member bit), in [@min, @max]. */
uint16_t ibpart_pkey(uint32_t job_id, uint16_t min, uint16_t max);

/* sysfs's form "02:00:00:00:12:34:00:03". */
void ibpart_guid_text(uint64_t guid, char out[IBPART_GUID_TEXT]);
int ibpart_guid_parse(const char *s, uint64_t *guid);

/* What a VF's sriov/<n>/ holds: restored as it was at the end. */
struct ibpart_vf_state {
	char node[32]; /* a GUID's text, and room for its newline */
	char port[32];
	char policy[16]; /* Down, Up, Follow */
};

/* The VF's sriov/<n> directory under its PF (malloc'd). -EOPNOTSUPP with
 * the reason logged when the PF has none (ConnectX-3, mlx4: its VFs take
 * alias GUIDs from the subnet manager instead). */
int ibpart_vf_dir(const char *sysfs_root, const struct pci_device *vf,
		  char **dir);
int ibpart_vf_read(const char *dir, struct ibpart_vf_state *st);
/* @st from a journal's text: -EBADMSG when a value does not fit. */
int ibpart_vf_state_set(struct ibpart_vf_state *st, const char *node,
			const char *port, const char *policy);
int ibpart_vf_write(const char *dir, const struct ibpart_vf_state *st);

/* The record a node's prolog leaves for the subnet manager's side:
 * "<dir>/job-<id>.<node>", written whole (file_replace(): a killed writer
 * leaves only its FILE_REPLACE_TMP_SUFFIX file, which readers skip and
 * the IBRECORD undo removes) and 0644. Refused, -EEXIST with the reason
 * logged (the job that holds it, what to do), when a record in @dir of
 * another job in @running (sorted; NULL: every record's job counts) holds
 * @pkey: the two jobs' guests would share a partition. */
int ibpart_record_path(const char *dir, uint32_t job_id, const char *node,
		       char **path);
int ibpart_record_write(const char *dir, const char *node, uint32_t job_id,
			uint16_t pkey, const uint64_t *guids, size_t n,
			const uint32_t *running, size_t n_running);

struct ibpart_render_stats {
	unsigned jobs;	     /* partitions written */
	unsigned stale;	     /* records of jobs not running: left out */
	unsigned collisions; /* jobs left out: their P_Key is another's */
};

/* partitions.conf: @base (the site's own, may be NULL) as is, then a
 * partition per job of the records in @dir. Records of jobs not in
 * @running (sorted; NULL: every job counts as running) get no partition;
 * of two running jobs with one P_Key the second gets none, with an error
 * naming both. Every recorded VF, also of those, is a limited member of
 * Default. */
int ibpart_render(FILE *out, const char *base, const char *dir,
		  const uint32_t *running, size_t n_running,
		  struct ibpart_render_stats *st);
