#!/bin/bash
# slurmd loads gres/ibvf: the gres_ibvf.so of a build (configure
# --with-slurm-source) in slurmd's PluginDir ahead of Slurm's own plugins,
# IbvfAutoDetect=yes in vm.conf and no Name=ibvf line in gres.conf:
# `slurmd -G` (slurmd's own GRES table, as tests/cluster/harness.sh's
# harness_gres_table reads it) must list exactly the ibvf lines that
# `slurm-vm gres` prints for the sysfs fixture of the cluster tests (its VFs
# in IOMMU groups 40 and 41, fake /dev/vfio nodes made here). Only the
# plugin's detection puts them there: without it slurmd lists no ibvf line,
# which is checked too (the oracle would else prove nothing).
#
#   tests/platform/gres-ibvf-check.sh BUILD_DIR SRC_DIR
#
# Runs as root where the Slurm the build was made for is installed: a
# platform root (tests/platform/build-check.sh, run.sh) or the host. Needs no
# slurmctld, no munged: slurmd -G reads the configuration and exits.
set -euo pipefail

build=$(realpath "$1") src=$(realpath "$2")
so=$build/gres_vgpu/.libs/gres_ibvf.so
[ -f "$so" ] || { echo "gres-ibvf-check: no $so: configure --with-slurm-source" >&2; exit 1; }
slurm_plugindir=$(ldd "$(command -v slurmd)" | sed -n 's|.*libslurmfull.so => \(.*\)/libslurmfull.so .*|\1|p')
[ -d "$slurm_plugindir" ] || { echo "gres-ibvf-check: no Slurm plugin directory (ldd slurmd)" >&2; exit 1; }

dir=$(mktemp -d /tmp/gres-ibvf-check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/etc" "$dir/plugins" "$dir/vfio"
cp "$so" "$dir/plugins/"
for g in 40 41; do
	mknod -m 0600 "$dir/vfio/$g" c 240 "$g"
done
cpus=$(nproc)
cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=ibvfcheck
SlurmctldHost=localhost
GresTypes=ibvf
SlurmdSpoolDir=$dir/spool
NodeName=n1 NodeHostname=localhost CPUs=$cpus Gres=ibvf:2 State=UNKNOWN
PartitionName=p Nodes=n1 Default=YES
EOF
# slurmd -G makes an auth context since 23.11: auth/slurm with a key of its
# own where Slurm has it (no munged to run), else munge's, unused by 22.05.
if [ -f "$slurm_plugindir/auth_slurm.so" ]; then
	head -c 1024 /dev/urandom >"$dir/etc/slurm.key"
	chmod 0600 "$dir/etc/slurm.key"
	printf 'AuthType=auth/slurm\nCredType=cred/slurm\n' >>"$dir/etc/slurm.conf"
fi
# The plugin reads vm.conf beside slurm.conf (get_extra_conf_path).
cat >"$dir/etc/vm.conf" <<EOF
IbvfAutoDetect=yes
SysfsRoot=$src/tests/fixtures/sysfs/cluster
VfioDir=$dir/vfio
EOF
: >"$dir/etc/gres.conf"
chmod 0644 "$dir/etc"/*.conf

# slurmd -G's ibvf rows, "File Cores", in slurmd's index order.
ibvf_table() {
	timeout 60 slurmd -G -N n1 -f "$dir/etc/slurm.conf" >"$dir/slurmd-G.out" 2>&1 || true
	sed -n 's/.*Gres Name=ibvf .* File=\([^ ]*\) Cores=\([^ ]*\) .*/\1 \2/p' "$dir/slurmd-G.out"
}

want=$("$build/admin/slurm-vm" gres --config "$dir/etc/vm.conf" |
	sed -n 's/^Name=ibvf File=\([^ ]*\) Cores=\([^ ]*\)$/\1 \2/p')
[ "$(echo "$want" | grep -c .)" = 2 ] || {
	echo "gres-ibvf-check: FAIL: slurm-vm gres finds '$want', not the fixture's 2 VFs" >&2
	exit 1
}

echo "PluginDir=$slurm_plugindir" >>"$dir/etc/slurm.conf"
without=$(ibvf_table)
if [ -n "$without" ]; then
	echo "gres-ibvf-check: FAIL: slurmd -G lists ibvf devices without the plugin: '$without'" >&2
	exit 1
fi

sed -i "s|^PluginDir=.*|PluginDir=$dir/plugins:$slurm_plugindir|" "$dir/etc/slurm.conf"
got=$(ibvf_table)
if [ "$got" != "$want" ]; then
	echo "gres-ibvf-check: FAIL: slurmd -G lists '$got', slurm-vm gres '$want'; slurmd -G said:" >&2
	tail -20 "$dir/slurmd-G.out" >&2
	exit 1
fi
echo "gres-ibvf-check: slurmd $(slurmd -V | cut -d' ' -f2) loads gres/ibvf and lists the detected VFs:"
echo "$got" | sed 's/^/  /'
