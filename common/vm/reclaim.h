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
#include <time.h>

#include "vm/incarnation.h"
#include "vm/teardown.h"
#include "job/vmconf.h"

/* Every guest of conf->state_dir, by state name. An unreachable libvirt is
 * not an error: list->libvirt_down is set and the state directories are
 * still listed. */
int guests_scan(const struct vmconf *conf, struct guest_list *list);
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
