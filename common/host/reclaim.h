/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The guests of this node's StateDir, for `slurm-vm list`, and reclaiming
 * one (`slurm-vm cleanup`, and the prolog when a device it planned is still
 * held). Whether a guest's job has ended is Slurm's to say: jobfate.h.
 *
 * A guest is known by its state name job-<id>.<restart>: a state directory
 * <StateDir>/job-<id>.<restart>, an active libvirt domain
 * slurmvm-job-<id>.<restart>, or both. A domain is this node's only when its
 * XML names a file inside that very state directory (agent channel, console
 * log): several clusters may share one libvirtd, and a domain of another
 * StateDir is never listed, reclaimed or counted as ours.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ibpart.h"
#include "journal.h"
#include "teardown.h"
#include "vmconf.h"

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

/* Every guest of conf->state_dir, by state name. An unreachable libvirt is
 * not an error: list->libvirt_down is set and the state directories are
 * still listed. */
int guests_scan(const struct vmconf *conf, struct guest_list *list);
void guest_list_free(struct guest_list *list);
/* The guest holding host PCI function @addr, or NULL. */
const struct guest *guests_holding(const struct guest_list *list,
				   const char *addr);
/* The foreign domain passing @addr through, or NULL. */
const char *guests_foreign_holder(const struct guest_list *list,
				  const char *addr);

/* Undoes @g: its journal replayed backwards (--vm-keep honoured when the
 * prolog recorded it), a domain of ours without a journal record destroyed,
 * the state directory removed (or, kept, marked torn down). The epilog, the
 * prolog's reclaim and `slurm-vm cleanup` all end a guest this way.
 * Waits up to @lock_wait_s for the state directory's lock: -EBUSY when a
 * prolog or epilog holds it still. -ENOENT: neither state nor domain.
 * @hurry (a job waits for the devices): no ACPI shutdown first unless the
 * files are kept (--vm-keep), the guest is destroyed at once.
 * On a failed step returns -EIO with @res telling which; the state
 * directory is then kept, so that the teardown can be tried again. */
int guest_reclaim(const struct vmconf *conf, const struct guest *g,
		  unsigned lock_wait_s, bool hurry,
		  struct teardown_result *res);
/* Kept state (--vm-keep) of a torn-down guest @name: the files its journal
 * names (overlay, NVRAM in OverlayDir; the seed) deleted, no other record
 * undone again, the state directory removed. -EBUSY when still locked
 * after @lock_wait_s. */
int guest_remove_kept(const struct vmconf *conf, const char *name,
		      unsigned lock_wait_s);
/* Every kept state whose teardown is older than KeepFor= removed
 * (`slurm-vm cleanup` and each prolog); *@removed says how many. */
int kept_expire(const struct vmconf *conf, time_t now, unsigned *removed);
/* The kept state of every torn-down incarnation of job @job_id removed
 * now, before KeepFor= (`slurm-vm cleanup --kept`): *@removed how many;
 * *@not_torn_down how many of its state directories are not kept state
 * (its guest runs, or its epilog has not finished) and were left. */
int kept_remove_job(const struct vmconf *conf, uint32_t job_id,
		    unsigned *removed, unsigned *not_torn_down);
/* Frees the state name job-<id>.<restart> for a new job: a directory of
 * that name is an earlier job's (job ids wrap), and so is its keep marker.
 * Kept and torn down: its files removed; else its guest torn down with
 * nothing kept. 0 when the name is free (or was); else -errno, with
 * guest_reclaim()'s @res (res->node_unsafe: its guest may still hold
 * devices). */
int guest_take_name(const struct vmconf *conf, uint32_t job_id,
		    unsigned restart, unsigned lock_wait_s,
		    struct teardown_result *res);
/* Has @g's job ended, as slurmctld says (jobfate.h)? 1 yes, 0 no (@why
 * says how), -errno when it cannot say. */
typedef int (*guest_fate_fn)(const struct guest *g, char *why, size_t why_len);
/* Every other incarnation of job @job_id here than @restart, not torn down,
 * that @ended says has ended, reclaimed (guest_reclaim() in a hurry), the
 * highest restart count first; one whose job is active is left alone. For
 * the prolog of incarnation @restart, before it makes anything of the
 * names they share: a lower count was requeued since, a higher one is an
 * older job's whose id this one got (ids wrap). 0 when done, else the
 * first failure (@ended's, or guest_reclaim()'s with its @res;
 * res->node_unsafe: its guest may still hold devices), with the state name
 * in @left. */
int guest_reclaim_incarnations(const struct vmconf *conf, uint32_t job_id,
			       unsigned restart, unsigned lock_wait_s,
			       guest_fate_fn ended, struct teardown_result *res,
			       char *left, size_t left_len);
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
			 unsigned restart, const char *verb, const char *what,
			 struct journal *j, const struct journal_entry **found);
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

/* The first process other than ours with @path open (a /dev/vfio group):
 * its pid, and its name in @comm. 0 when none, 1 when found. */
int device_file_holder(const char *path, pid_t *pid, char *comm,
		       size_t comm_len);

/* How long a killed holder of a device file may take to exit. */
#define DEVICE_FREE_WAIT_MS 5000

struct device_holder {
	pid_t pid;
	long uid; /* its real uid; 0: root's */
	char comm[32];
};

/* Takes @path (a VFIO group file, root's between jobs) back from the
 * processes that are not root's: a group file is only ever lent to a job
 * user, so such a holder is a leftover of an ended lending (a batch script
 * or its children that opened it during the job). Each gets SIGKILL; waits
 * up to @wait_ms for all to be gone. 0: nobody holds it (any more;
 * @killed says how many holders there were); -EBUSY: held by a process of
 * root's, or one that did not die, named in @h; or -errno. */
int device_file_free(const char *path, unsigned wait_ms,
		     struct device_holder *h, unsigned *killed);
