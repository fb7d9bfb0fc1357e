/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "slurm/compat.h"
#include "slurm/ctld.h"
#include "slurm/ctld_job.h"

#define CTLD_TRIES 5 /* 1+2+4+8 s of waiting at most */

/* Calls @request(@arg) until it returns SLURM_SUCCESS. */
static int ctld_retrying(uint32_t job_id, int (*request)(void *), void *arg)
{
	unsigned delay = 1;

	slurm_compat_init();
	for (int attempt = 1;; attempt++) {
		if (request(arg) == SLURM_SUCCESS)
			return 0;
		if (attempt == CTLD_TRIES) {
			log_error("job %u: slurmctld did not answer after %d "
				  "tries (%s)",
				  job_id, attempt, ctld_last_error());
			return -EAGAIN;
		}
		log_warn("job %u: slurmctld did not answer (%s); retrying in "
			 "%us",
			 job_id, ctld_last_error(), delay);
		sleep(delay);
		delay *= 2;
	}
}

const char *ctld_last_error(void)
{
	return slurm_strerror(slurm_compat_errno());
}

struct load_job {
	uint32_t job_id;
	job_info_msg_t **msg;
};

static int load_job(void *arg)
{
	struct load_job *l = arg;

	return slurm_compat_load_job(l->msg, l->job_id, SHOW_DETAIL);
}

int ctld_job_node_fill(const slurm_job_info_t *job, unsigned node_index,
		       const char *cores, int ncpus, struct ctld_job_node *jn)
{
	jn->node_index = node_index;
	jn->cores = strdup(cores);
	if (!jn->cores)
		return -ENOMEM;
	if (node_index < job->gres_detail_cnt &&
	    job->gres_detail_str[node_index]) {
		jn->gres_detail = strdup(job->gres_detail_str[node_index]);
		if (!jn->gres_detail)
			return -ENOMEM;
	}
	if (job->pn_min_memory & MEM_PER_CPU) {
		jn->mem_mib = (job->pn_min_memory & ~MEM_PER_CPU) *
			      (uint64_t)(ncpus > 0 ? ncpus : 0);
	} else {
		jn->mem_mib = job->pn_min_memory;
	}
	return 0;
}

static int job_node_of(const slurm_job_info_t *job, const char *node,
		       struct ctld_job_node *jn)
{
	char cores[4096];
	int idx = slurm_hostlist_position(job->nodes, node);
	int ncpus;

	if (idx < 0) {
		log_error("job %u does not run on node %s", job->job_id, node);
		return -ENOENT;
	}
	if (slurm_job_node_cores(job, node, cores, sizeof(cores), &ncpus) < 0) {
		log_error("job %u: no cores allocated on %s", job->job_id,
			  node);
		return -ENOENT;
	}
	return ctld_job_node_fill(job, idx, cores, ncpus, jn);
}

int ctld_job_node_load(uint32_t job_id, const char *node,
		       struct ctld_job_node *jn)
{
	job_info_msg_t *msg = NULL;
	struct load_job l = { job_id, &msg };
	int r;

	memset(jn, 0, sizeof(*jn));
	r = ctld_retrying(job_id, load_job, &l);
	if (r < 0)
		return r;
	if (msg->record_count == 1)
		r = job_node_of(&msg->job_array[0], node, jn);
	else
		r = -ENOENT;
	slurm_free_job_info_msg(msg);
	if (r < 0)
		ctld_job_node_free(jn);
	return r;
}

void ctld_job_node_free(struct ctld_job_node *jn)
{
	free(jn->cores);
	free(jn->gres_detail);
	memset(jn, 0, sizeof(*jn));
}

/* @list's names into @nodes, in Slurm's order. */
static int nodelist_expand(const char *list, size_t max,
			   struct ctld_nodes *nodes)
{
	slurm_hostlist_ptr hl = slurm_hostlist_create(list);
	int count = hl ? slurm_hostlist_count(hl) : -1;
	char *h;
	int r;

	if (count <= 0 || (size_t)count > max) {
		r = count <= 0 ? -EINVAL : -E2BIG;
		goto out;
	}
	nodes->names = calloc(count, sizeof(*nodes->names));
	if (!nodes->names) {
		r = -ENOMEM;
		goto out;
	}
	while (nodes->n < (size_t)count && (h = slurm_hostlist_shift(hl)))
		nodes->names[nodes->n++] = h;
	r = 0;
out:
	if (hl)
		slurm_hostlist_destroy(hl);
	return r;
}

static int load_nodes(void *arg)
{
	return slurm_load_node(0, arg, SHOW_ALL);
}

static int nodes_addrs(uint32_t job_id, const node_info_msg_t *msg,
		       struct ctld_nodes *nodes)
{
	nodes->addrs = calloc(nodes->n ? nodes->n : 1, sizeof(*nodes->addrs));
	if (!nodes->addrs)
		return -ENOMEM;
	for (size_t i = 0; i < nodes->n; i++) {
		const char *addr = NULL;

		for (uint32_t k = 0; k < msg->record_count; k++) {
			const node_info_t *ni = &msg->node_array[k];

			if (ni->name && strcmp(ni->name, nodes->names[i]) == 0)
				addr = ni->node_addr ?: ni->name;
		}
		if (!addr) {
			log_error("job %u: slurmctld knows no node %s", job_id,
				  nodes->names[i]);
			return -ENOENT;
		}
		nodes->addrs[i] = strdup(addr);
		if (!nodes->addrs[i])
			return -ENOMEM;
	}
	return 0;
}

int ctld_nodes_load(uint32_t job_id, const char *list, size_t max,
		    struct ctld_nodes *nodes)
{
	node_info_msg_t *msg = NULL;
	int r;

	memset(nodes, 0, sizeof(*nodes));
	r = nodelist_expand(list, max, nodes);
	if (r == 0)
		r = ctld_retrying(job_id, load_nodes, &msg);
	if (r == 0)
		r = nodes_addrs(job_id, msg, nodes);
	if (msg)
		slurm_free_node_info_msg(msg);
	if (r < 0)
		ctld_nodes_free(nodes);
	return r;
}

void ctld_nodes_free(struct ctld_nodes *nodes)
{
	for (size_t i = 0; i < nodes->n; i++) {
		free(nodes->names[i]);
		if (nodes->addrs)
			free(nodes->addrs[i]);
	}
	free(nodes->names);
	free(nodes->addrs);
	memset(nodes, 0, sizeof(*nodes));
}

size_t ctld_nodelist_count(const char *list)
{
	slurm_hostlist_ptr hl = list ? slurm_hostlist_create(list) : NULL;
	int n = hl ? slurm_hostlist_count(hl) : 0;

	if (hl)
		slurm_hostlist_destroy(hl);
	return n > 0 ? (size_t)n : 0;
}

int ctld_drain_node(const char *node, const char *reason)
{
	update_node_msg_t msg;

	slurm_compat_init();
	slurm_init_update_node_msg(&msg);
	msg.node_names = (char *)node;
	msg.node_state = NODE_STATE_DRAIN;
	msg.reason = (char *)reason;
	return slurm_update_node(&msg) == SLURM_SUCCESS ? 0 : -EIO;
}

/* Done already (another node of the job failed it first): nothing to do. */
static int done_is_success(int rc)
{
	int e = slurm_compat_errno();

	if (rc == SLURM_SUCCESS || e == ESLURM_ALREADY_DONE ||
	    e == ESLURM_JOB_FINISHED)
		return SLURM_SUCCESS;
	return rc;
}

struct job_comment {
	uint32_t job_id;
	const char *text;
};

static int set_admin_comment(void *arg)
{
	const struct job_comment *c = arg;
	job_desc_msg_t desc;

	slurm_init_job_desc_msg(&desc);
	slurm_compat_job_desc_set_id(&desc, c->job_id);
	desc.admin_comment = (char *)c->text;
	return done_is_success(slurm_update_job(&desc));
}

int ctld_job_set_admin_comment(uint32_t job_id, const char *text)
{
	struct job_comment c = { job_id, text };

	return ctld_retrying(job_id, set_admin_comment, &c);
}

/* Slurm's SIG_OOM, not in its public headers: 253 from 22.05 to 26.05. */
#define CTLD_SIG_OOM 253

struct job_end {
	uint32_t job_id, return_code;
};

static int complete_job(void *arg)
{
	const struct job_end *e = arg;

	return done_is_success(
		slurm_compat_complete_job(e->job_id, e->return_code));
}

int ctld_job_complete_failed(uint32_t job_id)
{
	/* Exit status 1: FAILED, Reason=NonZeroExitCode. */
	struct job_end e = { job_id, 1 << 8 };

	return ctld_retrying(job_id, complete_job, &e);
}

int ctld_job_complete_oom(uint32_t job_id)
{
	/* SIG_OOM: OUT_OF_MEMORY, Reason=OutOfMemory (as srun ends a job of
	 * its own whose step was OOM-killed). */
	struct job_end e = { job_id, CTLD_SIG_OOM };

	return ctld_retrying(job_id, complete_job, &e);
}
