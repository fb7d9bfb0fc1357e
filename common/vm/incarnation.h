/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The guests of this node's StateDir by state name job-<id>.<restart>, and
 * the incarnations of one job among them: what reclaim (reclaim.h) lists
 * and what a teardown (teardown.h) asks before it undoes a record that a
 * later incarnation holds too. The state directories and their journals
 * only: no libvirt.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/ibpart.h"
#include "job/journal.h"
#include "job/vmconf.h"

#define GUEST_DOMAIN_PREFIX "slurmvm-"
/* Written by the epilog into a state directory it kept (--vm-keep): the
 * guest is gone, the files stay for the user; nothing left to reclaim. */
#define GUEST_TORN_DOWN_FILE "torn-down"
/* Written by the prolog when the job asked for --vm-keep, so that whoever
 * tears the guest down (epilog, cleanup, a later prolog) keeps its files. */
#define GUEST_KEEP_FILE "keep"

struct guest_device {
	char *addr; /* host PCI address, from the domain metadata */
	char *gres; /* "gpu", "ibvf" */
	int index;  /* the job's GRES index */
};

struct guest {
	char name[64]; /* job-<id>.<restart> */
	uint32_t job_id;
	unsigned restart;
	bool has_state;		  /* the state directory exists */
	bool torn_down;		  /* the epilog finished; kept for --vm-keep */
	bool has_domain;	  /* an active domain of ours */
	const char *domain_state; /* "running", "paused", ...; NULL: none */
	long uid;		  /* from the domain metadata; -1 unknown */
	struct guest_device *devices;
	size_t n_devices;
};

/* A PCI function a domain that is not one of ours passes through. */
struct foreign_hostdev {
	char *addr;
	char *domain;
};

struct guest_list {
	struct guest *v;
	size_t n;
	struct foreign_hostdev *foreign;
	size_t n_foreign;
	bool libvirt_down; /* only the state directories are known */
};

void guest_list_free(struct guest_list *list);
/* The restart counts (at most @max, into @out) of job @job_id's state
 * directories below @restart that no epilog finished yet: its earlier
 * incarnations. Slurm 22.05 requeues a job whose prolog failed on a node
 * before the epilogs run, and gives them the new SLURM_JOB_RESTART_COUNT
 * (the epilog undoes them once slurmctld says so: jobfate.h).
 * Returns how many, or a negative errno. */
int guest_earlier_incarnations(const struct vmconf *conf, uint32_t job_id,
			       unsigned restart, unsigned *out, size_t max);
/* The later incarnation of @g's job (a higher restart count, its state
 * here and not torn down) whose journal holds a record of the resource
 * @e names (the same verb and device, table, VF or file): 1 with its state
 * name in @holder, 0 when none, or -errno when a later journal cannot be
 * read (it may hold it). */
int guest_later_holder(const struct vmconf *conf, const struct guest *g,
		       const struct journal_entry *e, char *holder,
		       size_t holder_len);
/* The record @verb on @what (a device, VF directory, file) in the journal
 * of the earliest incarnation of job @job_id below @restart still here
 * (not torn down) that holds one: 1 with *@found pointing into *@j, 0 when
 * none holds it, or -errno. journal_free(@j) in any case. A later
 * incarnation journals the state before the job that record saved, not
 * the earlier incarnation's it finds, so that whichever incarnation is
 * undone last puts back what was there before the job. */
int guest_earlier_record(const struct vmconf *conf, uint32_t job_id,
			 unsigned restart, enum journal_verb verb,
			 const char *what, struct journal *j,
			 const struct journal_entry **found);
/* What VF directory @vf_dir held before the earliest incarnation of job
 * @job_id below @restart still here (not torn down) set its GUIDs, from
 * that incarnation's IBGUID record: 1 with it in @old, 0 when none holds
 * the VF, or -errno. A later incarnation journals these, not the earlier
 * one's GUIDs it finds, so that the VF's own come back whichever
 * incarnation is undone last. */
int guest_earlier_vf_state(const struct vmconf *conf, uint32_t job_id,
			   unsigned restart, const char *vf_dir,
			   struct ibpart_vf_state *old);
/* A guest by name only (what the epilog knows): state, no domain seen. */
void guest_from_job(struct guest *g, uint32_t job_id, unsigned restart);

/* For reclaim.c: the state name @name as job id and restart count
 * (-EINVAL unless exactly as statedir_name() writes it); the guest of
 * that name in @list, added when new (NULL: out of memory); every state
 * directory of conf->state_dir into @list; the incarnations of job
 * @job_id here, not torn down, restart count in [@lo, @hi), lowest first;
 * guests by job id, then restart count (qsort). */
int guest_name_parse(const char *name, uint32_t *job, unsigned *restart);
struct guest *guest_list_add(struct guest_list *list, const char *name,
			     uint32_t job, unsigned restart);
int guest_list_scan_state(const struct vmconf *conf, struct guest_list *list);
int guest_list_scan_incarnations(const struct vmconf *conf, uint32_t job_id,
				 unsigned lo, unsigned hi,
				 struct guest_list *list);
int guest_order(const void *a, const void *b);
