/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The job network as the default network of MPI, UCX, libfabric and NCCL in
 * a task of the guest.
 *
 * Computed by the agent in the guest from its sysfs, not by the host's
 * taskenv from the task map: the names these variables take are the guest
 * kernel's (the job NIC's name comes from the seed, the InfiniBand devices'
 * mlx5_N from the order the guest's drivers probe the VFs), and a port is
 * usable only once the guest's subnet manager link is ACTIVE. The host
 * knows PCI functions, not those names. Read at each task's start.
 *
 *   - NETENV_JOB_IFACE present (JobNetwork=vxlan): OMPI_MCA_btl_tcp_if_include,
 *     OMPI_MCA_oob_tcp_if_include, FI_TCP_IFACE, NCCL_SOCKET_IFNAME name it;
 *   - InfiniBand ports in state ACTIVE with link layer InfiniBand (the IB
 *     VFs): UCX_NET_DEVICES and NCCL_IB_HCA list them as "mlx5_0:1,..."
 *     (devices and ports in natural order); without any, UCX_NET_DEVICES
 *     names the job interface when there is one;
 *   - the job's P_Key (IbPartitions=yes): the first full-member key other
 *     than the default partition's in those ports' tables, without the
 *     membership bit, in UCX_IB_PKEY and OMPI_MCA_btl_openib_pkey. The
 *     subnet manager put it there, so only the guest can read it.
 *
 * A variable the task's environment has already (the user's value) is left
 * as it is. RoCE ports (link layer Ethernet) are not chosen: which Ethernet
 * a site routes MPI over is its own decision.
 */
#define NETENV_JOB_IFACE "job0"
#define NETENV_MAX	 8

/* @sysfs: "/sys", or a tree shaped like it. @env: the task's NAME=value
 * strings, NULL-terminated. Fills @out (NETENV_MAX + 1 slots) with malloc'd
 * NAME=value strings for the variables @env lacks, NULL-terminated, and
 * returns their count; nothing to add (no job network, no IB) is 0. */
int netenv_defaults(const char *sysfs, char *const *env, char **out);
void netenv_free(char **out);
static inline void netenv_freep(char *(*out)[NETENV_MAX + 1])
{
	netenv_free(*out);
}
#define _cleanup_netenv_ __attribute__((cleanup(netenv_freep)))
