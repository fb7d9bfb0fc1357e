/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job network (JobNetwork=vxlan) and InfiniBand partitions. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hw/devices.h"
#include "hw/ibpart.h"
#include "net/jobnet.h"
#include "slurm/slurmconf.h"
#include "core/log.h"
#include "core/strutil.h"
#include "job/vmconf.h"

/* Job ids that differ by a multiple of the VNI range share a VNI: two such
 * jobs on one node, the second is refused. Slurm's MaxJobId defaults to
 * 67043328, wider than a VNI's 24 bits. */
static void check_vni_range(const struct slurmconf *sc, const struct vmconf *vc)
{
	const char *text = slurmconf_get(sc, "MaxJobId");
	uint64_t range = (uint64_t)vc->jobnet_vni_max - vc->jobnet_vni_min + 1;
	unsigned max_job = 67043328;

	if (text && str_to_uint(text, &max_job) < 0)
		return;
	if (range >= max_job)
		check_ok("JobNetworkVni=%s: a VNI for each of MaxJobId=%u",
			 vc->jobnet_vni_text, max_job);
	else
		check_warn("lower MaxJobId= in slurm.conf to the range's width "
			   "or widen JobNetworkVni= (vm.conf(5))",
			   "JobNetworkVni=%s holds %" PRIu64
			   " VNIs, fewer than MaxJobId=%u: two jobs whose "
			   "ids differ by a multiple of %" PRIu64
			   " cannot run on one node at once",
			   vc->jobnet_vni_text, range, max_job, range);
}

/* JobNetwork=vxlan: the underlay is there, carries guests' 1280 at least,
 * its VNIs do not run out before job ids, and the tools the prolog runs
 * are installed. */
void check_job_network(struct checker *c, const struct slurmconf *sc,
		       const struct vmconf *vc)
{
	static const char *const tools[] = { "/usr/sbin/ip", "/usr/sbin/bridge",
					     "/usr/sbin/nft" };
	int mtu;

	if (vc->job_network != JOB_NETWORK_VXLAN)
		return;
	check_vni_range(sc, vc);
	mtu = jobnet_underlay_mtu(vc->jobnet_underlay);
	if (mtu < 0)
		check_problem(c,
			      "set JobNetworkUnderlay= to the interface of "
			      "this node's NodeAddr (see vm.conf(5))",
			      "JobNetworkUnderlay=%s: no such interface on "
			      "this node",
			      vc->jobnet_underlay);
	else if ((unsigned)mtu < 1280 + JOBNET_VXLAN_OVER4 ||
		 (vc->jobnet_mtu &&
		  vc->jobnet_mtu + JOBNET_VXLAN_OVER4 > (unsigned)mtu))
		check_problem(c,
			      "raise the underlay's MTU (9000 keeps guests at "
			      "1500 and more) or lower JobNetworkMtu=",
			      "JobNetworkUnderlay=%s: MTU %d is too small for "
			      "the guests' MTU and VXLAN's 50 bytes",
			      vc->jobnet_underlay, mtu);
	else
		check_ok("JobNetworkUnderlay=%s: MTU %d, guests get %u",
			 vc->jobnet_underlay, mtu,
			 vc->jobnet_mtu ?: (unsigned)mtu - JOBNET_VXLAN_OVER4);
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (access(tools[i], X_OK) < 0)
			check_problem(c, "apt-get install iproute2 nftables",
				      "JobNetwork=vxlan needs %s", tools[i]);
}

/* IbPartitions=yes: every InfiniBand VF of the node can take the job's
 * GUIDs (mlx5's sriov/<n>/), and the records have their directory. */
void check_ib_partitions(struct checker *c, const struct vmconf *vc)
{
	struct device_list list = { 0 };
	unsigned n = 0, bad = 0;
	struct stat st;

	if (!vc->ib_partitions)
		return;
	if (devices_scan(vc->sysfs_root, &list) < 0) {
		check_problem(c, "check SysfsRoot=", "%s: cannot list devices",
			      vc->sysfs_root);
		return;
	}
	for (size_t i = 0; i < list.n; i++) {
		_cleanup_free_ char *dir = NULL;

		if (list.v[i].kind != PCI_KIND_IB || !list.v[i].is_vf)
			continue;
		n++;
		if (ibpart_vf_dir(vc->sysfs_root, &list.v[i], &dir) < 0) {
			bad++;
			check_problem(c,
				      "use ConnectX-4 or later for VM jobs, or "
				      "IbPartitions=no on this node",
				      "%s", log_last_error());
		}
	}
	device_list_free(&list);
	if (n && !bad)
		check_ok("IbPartitions=yes: all %u InfiniBand VFs take job "
			 "GUIDs",
			 n);
	if (vc->ib_partition_dir &&
	    (stat(vc->ib_partition_dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		check_problem(c,
			      "create it on a filesystem the subnet manager's "
			      "node reads (see slurm-vm(8), ib-partitions)",
			      "IbPartitionDir=%s: not a directory",
			      vc->ib_partition_dir);
	else if (vc->ib_partition_dir && (st.st_uid != 0 || (st.st_mode & 022)))
		check_problem(c,
			      "chown root and chmod go-w it: the prolog writes "
			      "records there as root",
			      "IbPartitionDir=%s: writable by others than root",
			      vc->ib_partition_dir);
	else if (!vc->ib_partition_dir)
		check_problem(c,
			      "set IbPartitionDir= to where `slurm-vm "
			      "ib-partitions` reads the records",
			      "IbPartitions=yes without IbPartitionDir=: the "
			      "subnet manager never hears of the jobs' VFs");
}
