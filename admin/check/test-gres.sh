#!/bin/bash
# check-config's gres.conf (gres.c): Cores= splitting a socket (Slurm
# 24.11 and later).
. "$(dirname "$0")/test-setup.sh"

# gres.conf Cores= of one NUMA node on an SNC2 node (two NUMA nodes per
# socket): slurmctld 24.11 and later refuses it and drains the node; the
# fix is whole sockets. Earlier releases take it. (Each release's rule on
# this topology: tests/unit/test_slurmconf, test_gres_cores.)
printf 'TopologyFile=%s\n' "$(cd "${srcdir:-.}" && pwd)/tests/fixtures/topology/24em64t-2p4n3c2t-snc2-pci.xml" >>"$cc/vm.conf"
echo "NodeName=n1 Name=gpu File=/dev/null Cores=3-5" >"$cc/gres.conf"
check
if [ "$release" -ge 2411 ]; then
	grep -qF "problem: $cc/gres.conf:1: Name=gpu Cores=3-5 splits socket 0: slurmctld of Slurm ${release:0:2}.${release:2} refuses it" "$out" ||
		fail "a Cores= splitting a socket not reported on Slurm $release"
	[ "$(fix_for "Cores=3-5 splits socket 0")" = "Cores=0-5 (whole sockets), or regenerate gres.conf with \`slurm-vm gres\`" ] ||
		fail "the Cores= fix is: $(fix_for "Cores=3-5 splits socket 0")"
	echo "NodeName=n1 Name=gpu File=/dev/null Cores=0-5" >"$cc/gres.conf"
	check
	grep -qF "ok:      $cc/gres.conf: all 1 device files of node n1 exist, every Cores= holds whole sockets" "$out" ||
		fail "whole sockets in Cores= still reported"
else
	grep -q "splits socket" "$out" && fail "Slurm $release takes any Cores=, yet reported"
	grep -qF "ok:      $cc/gres.conf: all 1 device files of node n1 exist" "$out" ||
		fail "the gres.conf line not checked"
fi
rm "$cc/gres.conf"
exit 0
