/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * What the prolog asks slurmctld (public libslurm API), in plain types: its
 * callers include no Slurm header. A request slurmctld does not answer is
 * retried, waiting 1, 2, 4, 8 s between tries, then given up with -EAGAIN
 * (logged): a job fault, never a reason to drain the node.
 */
#include <stddef.h>
#include <stdint.h>

/* What a job has on one of its nodes, as slurmctld says (SHOW_DETAIL). */
struct ctld_job_node {
	unsigned node_index; /* the node's place in the job's node list */
	char *cores;	     /* Slurm's core ids on the node, "0-3" */
	uint64_t mem_mib;    /* the job's memory there, 0 if unknown */
	char *gres_detail;   /* the node's gres_detail_str, NULL if none */
};

/* Loads job @job_id and what it has on @node. -EAGAIN when slurmctld never
 * answered; -ENOENT when it does not know the job, or (logged) the job
 * does not run on @node or has no cores there. */
int ctld_job_node_load(uint32_t job_id, const char *node,
		       struct ctld_job_node *jn);
void ctld_job_node_free(struct ctld_job_node *jn);

/* The nodes of a Slurm node list ("n[1-3]"), in its order, each with the
 * NodeAddr slurmctld has for it (its name when it has none). */
struct ctld_nodes {
	char **names;
	char **addrs;
	size_t n;
};

/* Expands @list (at most @max nodes: -E2BIG; empty or not a node list:
 * -EINVAL) and loads the nodes' addresses for job @job_id. -EAGAIN when
 * slurmctld never answered, -ENOENT (logged) for a node it does not
 * know. */
int ctld_nodes_load(uint32_t job_id, const char *list, size_t max,
		    struct ctld_nodes *nodes);
void ctld_nodes_free(struct ctld_nodes *nodes);

/* The number of nodes in the node list @list; 0 when @list is NULL or not
 * a node list. */
size_t ctld_nodelist_count(const char *list);

/* Drains @node with @reason, once, not retried (slurmd drains it anyway
 * when the prolog fails). -EIO when slurmctld refused or did not answer:
 * ctld_last_error() says why. */
int ctld_drain_node(const char *node, const char *reason);

/* Sets job @job_id's AdminComment to @text. A job done already (another
 * node of it failed it first) is a success. */
int ctld_job_set_admin_comment(uint32_t job_id, const char *text);

/* Ends the whole job @job_id as FAILED (exit status 1, Reason
 * NonZeroExitCode). A job done already is a success. */
int ctld_job_complete_failed(uint32_t job_id);
/* Ends the whole job @job_id as OUT_OF_MEMORY (Reason OutOfMemory). A job
 * done already is a success. */
int ctld_job_complete_oom(uint32_t job_id);

/* What slurmctld (or libslurm) said of the last request that failed. */
const char *ctld_last_error(void);
