#!/bin/bash
# The admin's path (issue #25): a clean Debian 12 root (root.sh) with the
# Slurm node and the distribution packages doc/admin-guide.md names, then,
# inside it, what the guide tells an admin to do (admin_path_node.sh): the
# built .debs installed, the examples and the guide's commands applied to
# /etc/slurm and /var/lib/slurm/slurmd, `slurm-vm check-config` silent, the
# daemons started as their units would, a user, the stock cloud image in the
# catalog, and the user's first VM job, whose task must run in the guest.
# Then two nodes n1 and n2 (namespaces of their own in the root, system
# paths inside), the guide's job network and shares on, and one -N2 job:
# a step in both guests, then Open MPI over PMIx (srun --mpi=pmix) across
# them (#24 item 9: the PMIx scratch directories under the system spool).
# Any step the test needs that the guide does not say is a bug in the guide.
#
#   tests/platform/test_admin_path.sh [--prepare]
#       --prepare: only build (or find up to date) the root and the cloud
#       image, for a CI stage to overlap them with other work.
# Environment: SLURM_VM_DEBS (the built .debs; default build-debs/, made by
# tests/packaging.sh), SVM_ADMIN_KEEP=1 keeps the scratch directory (the
# root's writes and the logs) after a success too. libvirt keeps its
# defaults (qemu in a private /dev per domain: root.sh enters with
# pivot_root, so the mount table reads as on a node).
# Boots three guests (two at once for the -N2 job) and starts slurmd and
# libvirtd on this node and on two node namespaces: run it under
# `flock /tmp/slurm-vm-cluster.lock`. Needs root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
debs=${SLURM_VM_DEBS:-$repo/build-debs}

# A plain Slurm 22.05 node with munge, and the packages section 2 of the
# guide names (opensm only on the subnet manager's node: not here), then
# what section 4.1 names for the job network of the two-node job.
pkgs=(slurmd slurmctld slurm-client munge
	libvirt-daemon-system qemu-system-x86 ovmf genisoimage driverctl
	mstflint rdma-core infiniband-diags libpmix-dev iproute2 nftables)
# Not the guide's: what the user builds the MPI program with, as on any
# login node of a Debian 12 cluster (the image's Open MPI is Debian 12's).
user_pkgs=(gcc libopenmpi-dev)

die() {
	echo "test_admin_path: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "run as root"
# The package list is the guide's: a package it no longer names is a test
# that no longer follows it.
for p in "${pkgs[@]:4}"; do
	grep -q "\`$p\`" "$repo/doc/admin-guide.md" ||
		die "doc/admin-guide.md does not name $p any more: update the test's package list"
done

t0=$(date +%s)
root=$("$here/root.sh" build bookworm "${pkgs[@]}" "${user_pkgs[@]}")
image=$("$repo/tests/guest/build-cloud.sh")
echo "test_admin_path: root and image ready in $(($(date +%s) - t0)) s"
[ "${1:-}" != --prepare ] || exit 0

ls "$debs"/slurm-vm_*_amd64.deb >/dev/null 2>&1 ||
	die "no packages in $debs: tests/packaging.sh $debs builds them (or set SLURM_VM_DEBS)"

scratch=$(mktemp -d /var/tmp/svm-admin-path.XXXXXX)
out=$scratch/out
mkdir -p "$out"

# Whatever the node script left in its mount namespace and in its node
# namespaces' (it stops its daemons by pid file; this is the net under it):
# found by namespace id, killed by pid, and a failure; so are the links it
# made (the underlay bridge and the nodes' veths), deleted here.
leftovers() {
	local ns pid n=0 l
	if [ -s "$out/mntns" ]; then
		for pid in /proc/[0-9]*; do
			pid=${pid#/proc/}
			ns=$(readlink "/proc/$pid/ns/mnt" 2>/dev/null) || continue
			grep -qxF "$ns" "$out/mntns" || continue
			echo "test_admin_path: left running: $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" >&2
			kill -9 "$pid" 2>/dev/null || true
			n=$((n + 1))
		done
	fi
	if [ -s "$out/links" ]; then
		while read -r l; do
			ip link show "$l" >/dev/null 2>&1 || continue
			echo "test_admin_path: link left: $l" >&2
			ip link del "$l" 2>/dev/null || true
			n=$((n + 1))
		done <"$out/links"
	fi
	[ "$n" = 0 ]
}

rc=0
"$here/root.sh" enter --scratch "$scratch/root" \
	--bind "$repo:/srv/slurm-vm" --bind "$debs:/srv/debs" \
	--bind "$image:/srv/debian12.qcow2" --bind "$out:/srv/out" \
	"$root" -- bash /srv/slurm-vm/tests/platform/admin_path_node.sh \
	/srv/slurm-vm /srv/debs /srv/debian12.qcow2 /srv/out || rc=$?
sleep 1
leftovers || rc=1
if findmnt -rn -o TARGET | grep -qF "$scratch"; then
	echo "test_admin_path: mounts left under $scratch" >&2
	rc=1
fi
echo "test_admin_path: $(($(date +%s) - t0)) s in all"
if [ "$rc" = 0 ] && [ "${SVM_ADMIN_KEEP:-0}" != 1 ]; then
	rm -rf --one-file-system "$scratch"
else
	echo "test_admin_path: the root's writes and the logs: $scratch" >&2
fi
[ "$rc" = 0 ] && echo "PASS: test_admin_path" || echo "FAIL: test_admin_path"
exit "$rc"
