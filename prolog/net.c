/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The prolog's network phase (JobNetwork=vxlan): the job's nodes in
 * Slurm's order with their NodeAddr, this node's place among them, then
 * the job's bridge, VXLAN and filters on this node (common/net/jobnet.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm/ctld.h"
#include "net/jobnet.h"
#include "core/log.h"
#include "core/macro.h"
#include "prolog.h"

enum prolog_result prolog_network(struct prolog *p)
{
	/* Slurm 22.05 sets SLURM_NODELIST for the Prolog, later ones also
	 * SLURM_JOB_NODELIST. */
	const char *list =
		getenv("SLURM_JOB_NODELIST") ?: getenv("SLURM_NODELIST");
	struct ctld_nodes jn = { 0 };
	enum prolog_result res = PROLOG_JOB_FAULT;
	uint32_t job = p->req.job_id;
	size_t self;
	int mtu, r;

	if (p->conf.job_network != JOB_NETWORK_VXLAN)
		return PROLOG_OK;
	if (!list) {
		log_error("job %u: SLURM_NODELIST is not set: is this a Slurm "
			  "Prolog?",
			  job);
		return PROLOG_NODE_FAULT;
	}
	r = ctld_nodes_load(job, list, JOBNET_MAX_NODES, &jn);
	if (r < 0) {
		log_error("job %u: refused: cannot learn its nodes' addresses "
			  "for the job network",
			  job);
		goto out;
	}
	for (self = 0; self < jn.n; self++)
		if (strcmp(jn.names[self], p->alloc.node) == 0)
			break;
	if (self == jn.n) {
		log_error("job %u: refused: node %s is not in its node list %s",
			  job, p->alloc.node, list);
		goto out;
	}
	/* A missing underlay is this node's fault, named by jobnet; so is a
	 * plan this node's configuration cannot carry (-ENODEV). */
	mtu = jobnet_underlay_mtu(p->conf.jobnet_underlay);
	if (mtu < 0) {
		res = PROLOG_NODE_FAULT;
		goto out;
	}
	r = jobnet_plan(&p->conf, job, (const char *const *)jn.names,
			(const char *const *)jn.addrs, jn.n, self, mtu,
			&p->net);
	if (r == -ENODEV) {
		res = PROLOG_NODE_FAULT; /* named by jobnet_plan */
		goto out;
	}
	if (r < 0) {
		_cleanup_free_ char *cause = strdup(log_last_error());

		log_error("job %u: refused: no job network can be planned for "
			  "its nodes: %s",
			  job, cause ? cause : "?");
		goto out;
	}
	p->has_net = true;
	log_info("job %u: job network VNI %u on %s: bridge %s, vxlan %s, tap "
		 "%s, node %zu of %zu",
		 job, p->net.vni, p->net.underlay, p->net.bridge, p->net.vxlan,
		 p->net.tap, self, jn.n);
	r = jobnet_setup(&p->net, p->state_fd);
	if (r == -EADDRINUSE) {
		/* another job's VNI: named by jobnet_setup */
		_cleanup_free_ char *cause = strdup(log_last_error());

		state_record_reason(p, "job %u: refused: %s", job,
				    cause ? cause : "its VNI is in use");
	} else {
		res = r < 0 ? PROLOG_NODE_FAULT : PROLOG_OK;
	}
out:
	ctld_nodes_free(&jn);
	return res;
}
