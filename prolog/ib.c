/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The prolog's InfiniBand phase (IbPartitions=yes): GUIDs of the job for
 * each of its IB VFs on this node (common/hw/ibpart.h), journaled with
 * the values they replace, then the record the subnet manager's side turns
 * into the job's partition.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "hw/devices.h"
#include "hw/ibpart.h"
#include "slurm/jobfate.h"
#include "job/journal.h"
#include "core/log.h"
#include "core/macro.h"
#include "prolog.h"
#include "vm/reclaim.h"

static enum prolog_result set_guids(struct prolog *p, const char *addr,
				    unsigned node, unsigned slot,
				    uint64_t *port_guid)
{
	_cleanup_free_ char *dir = NULL;
	struct pci_device vf;
	struct ibpart_vf_state old, now = { .policy = "Follow" };
	int r;

	r = devices_read(p->conf.sysfs_root, addr, &vf);
	if (r < 0)
		return PROLOG_NODE_FAULT;
	r = ibpart_vf_dir(p->conf.sysfs_root, &vf, &dir);
	pci_device_clear(&vf);
	if (r == -EOPNOTSUPP) {
		state_record_reason(p, "%s", log_last_error());
		return PROLOG_JOB_FAULT;
	}
	if (r < 0 || ibpart_vf_read(dir, &old) < 0)
		return PROLOG_NODE_FAULT;
	/* An earlier incarnation of the job not yet undone may have set
	 * them: the VF's own are in its journal. */
	r = guest_earlier_vf_state(&p->conf, p->req.job_id,
				   p->req.restart_count, dir, &old);
	if (r < 0)
		return PROLOG_NODE_FAULT;
	if (r > 0)
		log_info("job %u: VF %s: its own GUIDs (node %s, port %s) "
			 "from the journal of an earlier incarnation",
			 p->req.job_id, addr, old.node, old.port);
	*port_guid = ibpart_guid(p->conf.ib_guid_prefix, p->req.job_id, node,
				 slot, true);
	ibpart_guid_text(ibpart_guid(p->conf.ib_guid_prefix, p->req.job_id,
				     node, slot, false),
			 now.node);
	ibpart_guid_text(*port_guid, now.port);
	const char *args[] = { dir, old.node, old.port, old.policy, NULL };
	if (journal_append(p->state_fd, JOURNAL_IBGUID, args) < 0 ||
	    ibpart_vf_write(dir, &now) < 0)
		return PROLOG_NODE_FAULT;
	log_info("job %u: VF %s: node GUID %s, port GUID %s", p->req.job_id,
		 addr, now.node, now.port);
	return PROLOG_OK;
}

/* A P_Key another running job's record holds is refused (the job's
 * fault, saying which job and what to do): the two jobs' guests would be
 * full members of one partition. When slurmctld does not answer, every
 * record's job counts as running. */
static enum prolog_result write_record(struct prolog *p, uint16_t pkey,
				       const uint64_t *guids, size_t n)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ uint32_t *running = NULL;
	size_t n_running = 0;
	int r;

	if (!p->conf.ib_partition_dir)
		return PROLOG_OK;
	if (ibpart_record_path(p->conf.ib_partition_dir, p->req.job_id,
			       p->alloc.node, &path) < 0)
		return PROLOG_NODE_FAULT;
	if (jobs_active(&running, &n_running) < 0)
		log_warn("job %u: slurmctld does not say which jobs run: "
			 "every partition record counts",
			 p->req.job_id);
	const char *args[] = { path, NULL };
	if (journal_append(p->state_fd, JOURNAL_IBRECORD, args) < 0)
		return PROLOG_NODE_FAULT;
	r = ibpart_record_write(p->conf.ib_partition_dir, p->alloc.node,
				p->req.job_id, pkey, guids, n, running,
				n_running);
	if (r == -EEXIST) {
		state_record_reason(p, "%s", log_last_error());
		return PROLOG_JOB_FAULT;
	}
	if (r < 0)
		return PROLOG_NODE_FAULT;
	log_info("job %u: partition record %s", p->req.job_id, path);
	return PROLOG_OK;
}

enum prolog_result prolog_ib_partition(struct prolog *p)
{
	uint64_t guids[IBPART_MAX_VFS];
	enum prolog_result res = PROLOG_OK;
	uint16_t pkey;
	unsigned node, n = 0;

	for (size_t i = 0; i < p->plan.n_devices; i++)
		n += p->plan.devices[i].kind == PCI_KIND_IB &&
		     p->plan.devices[i].is_vf;
	if (!n)
		return PROLOG_OK;
	if (n > IBPART_MAX_VFS) {
		log_error("job %u: %u InfiniBand VFs on node %s, at most %d "
			  "take job GUIDs (IbPartitions=yes)",
			  p->req.job_id, n, p->alloc.node, IBPART_MAX_VFS);
		state_record_reason(p, "%s", log_last_error());
		return PROLOG_JOB_FAULT;
	}
	node = p->alloc.node_index;
	if (node >= IBPART_MAX_NODES) {
		log_error("job %u: node %s is the job's node %u: at most %d "
			  "take job GUIDs (IbPartitions=yes)",
			  p->req.job_id, p->alloc.node, node, IBPART_MAX_NODES);
		state_record_reason(p, "%s", log_last_error());
		return PROLOG_JOB_FAULT;
	}
	pkey = ibpart_pkey(p->req.job_id, p->conf.ib_pkey_min,
			   p->conf.ib_pkey_max);
	n = 0;
	for (size_t i = 0; i < p->plan.n_devices && res == PROLOG_OK; i++) {
		const struct plan_device *d = &p->plan.devices[i];

		if (d->kind == PCI_KIND_IB && d->is_vf) {
			res = set_guids(p, d->addr, node, n, &guids[n]);
			n++;
		}
	}
	if (res == PROLOG_OK)
		res = write_record(p, pkey, guids, n);
	if (res == PROLOG_OK)
		log_info("job %u: InfiniBand partition P_Key 0x%04x (full "
			 "member 0x%04x) for %u VF%s",
			 p->req.job_id, pkey, pkey | 0x8000, n,
			 n == 1 ? "" : "s");
	return res;
}
