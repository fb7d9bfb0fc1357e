#!/bin/bash
# cluster-timeout: 300
# The domain XML of `slurm-vm plan` checked by libvirt itself:
#   - virt-xml-validate (the RNG schema),
#   - `virsh -c test:///default define` (the generic parser: hostdevs,
#     pxb-pcie, NUMA cells),
#   - `virsh -c qemu:///system domxml-to-native qemu-argv` (the real qemu
#     driver's checks, and the qemu command line it would run: pxb-pcie with
#     numa_node, vfio-pci per function, virtio-rng stand-ins for emulate).
# Plans come from the sysfs fixture (tests/fixtures/sysfs/node-gpu-ib) with a
# real 2-node topology (validate, define) and with this machine's live
# topology (domxml-to-native checks the host's NUMA nodes exist).
# Exit 0 pass, 77 skip, anything else fail.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$repo/build}
svm=$BUILD_DIR/admin/slurm-vm
sysfs=$repo/tests/fixtures/sysfs/node-gpu-ib
topo=$repo/tests/fixtures/topology

skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	exit 1
}

[ -x "$svm" ] || skip "$svm not built"
for tool in virt-xml-validate virsh; do
	command -v "$tool" >/dev/null || skip "$tool not installed (libvirt-clients)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/svm-domxml.XXXXXX")
started=0
cleanup() {
	if [ "$started" = 1 ]; then
		libvirt_stop svmtest- || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

common=(--sysfs "$sysfs" --job-id 4242 --uid 1000
	--image "$work/base.qcow2" --overlay "$work/overlay.qcow2"
	--seed "$work/seed.iso" --console-log "$work/console.log"
	--channel "$work/agent.sock" --kernel "$work/vmlinuz"
	--initrd "$work/initrd" --cmdline "console=ttyS0 quiet")

# generate NAME ARGS...: writes $work/NAME.xml and validates it
generate() {
	local name=$1 out
	shift
	"$svm" plan --xml --name "svmtest-$name" "${common[@]}" "$@" \
		>"$work/$name.xml" 2>"$work/$name.err" ||
		fail "slurm-vm plan ($name): $(cat "$work/$name.err")"
	out=$(virt-xml-validate "$work/$name.xml" domain 2>&1) ||
		fail "virt-xml-validate ($name): $out"
}

# plan NAME ARGS...: generates, validates and defines on test:///default
plan() {
	local name=$1 out
	generate "$@"
	out=$(virsh -q -c test:///default define "$work/$name.xml" 2>&1) ||
		fail "test:///default define ($name): $out"
	echo "ok: $name validates and defines"
}

# Two host nodes, SMT, two GPUs of one IOMMU group and an IB VF on node 1,
# the GPU with its audio function on node 0; housekeeping CPUs.
plan vfio-2node --topology "$topo/32em64t-2n8c2t-pci-normalio.xml" \
	--cpus 0-1,16-17,8-9,24-25 --mem 16G --housekeeping 7,23 \
	--gpus 0000:01:00.0,0000:41:00.0,0000:42:00.0 --ibvfs 0000:81:00.1
plan managed-emulate --topology "$topo/32em64t-2n8c2t-pci-normalio.xml" \
	--cpus 8-15,24-31 --mem 8G --gpus 0000:41:00.0,0000:42:00.0 \
	--ibvfs 0000:81:00.1,0000:81:00.2 \
	--set DeviceBinding=managed --set DeviceAttach=emulate \
	--set DomainType=qemu --set CpuMode=maximum
plan hugepages-2node --topology "$topo/synthetic-2x4.xml" \
	--cpus 0-1,4-5 --mem 8G --hugepages 1G
plan opteron-4node --topology "$topo/96em64t-4n4d3ca2co-pci.xml" \
	--cpus 0,4,24,28,1,5 --mem 6G
plan uefi-mmio64 --topology "$topo/32em64t-2n8c2t-pci-normalio.xml" \
	--cpus 8-11 --mem 4G --gpus 0000:41:00.0,0000:42:00.0 \
	--uefi "$work/nvram.fd" --set UefiMmio64Window=256
grep -q '<maxphysaddr mode="passthrough"/>' "$work/uefi-mmio64.xml" ||
	fail "UEFI with host-passthrough: the host's address width is not given"
# A DGX-like board (tests/fixtures/sysfs/dgx): two GPUs and a VF under one
# host PCIe switch get one guest switch (root port, upstream port, a
# downstream port each); a VF alone under its switch and a GPU on a root
# port get root ports.
dgx=(--sysfs "$repo/tests/fixtures/sysfs/dgx")
plan dgx-switch "${dgx[@]}" --topology "$topo/32em64t-2n8c2t-pci-normalio.xml" \
	--cpus 0-3,8-11 --mem 16G --gpus 0000:04:00.0,0000:05:00.0,0000:90:00.0 \
	--ibvfs 0000:06:00.1,0000:86:00.1
count() { grep -c "model=\"$1\"" "$work/dgx-switch.xml" || true; }
[ "$(count pcie-switch-upstream-port)/$(count pcie-switch-downstream-port)/$(count pcie-root-port)" = 1/3/3 ] ||
	fail "dgx-switch: want 1 upstream, 3 downstream, 3 root ports: $(grep model= "$work/dgx-switch.xml")"
echo "ok: dgx-switch: one guest switch for the GPU pair and its VF"

# A refusal is an error with the reason, and no XML.
if "$svm" plan --xml --sysfs "$sysfs" \
	--topology "$topo/32em64t-2n8c2t-pci-normalio.xml" \
	--cpus 0-3 --mem 4G --gpus 0000:41:00.0 >"$work/refused.xml" \
	2>"$work/refused.err"; then
	fail "a GPU without its group mate was planned"
fi
grep -q "IOMMU group 20" "$work/refused.err" ||
	fail "refusal without its reason: $(cat "$work/refused.err")"
[ ! -s "$work/refused.xml" ] || fail "a refused plan printed XML"

# domxml-to-native needs the real qemu driver.
[ -f "$here/libvirt.sh" ] || skip "tests/cluster/libvirt.sh missing"
[ "$(id -u)" = 0 ] || skip "domxml-to-native on qemu:///system needs root"
# shellcheck source=tests/cluster/libvirt.sh
. "$here/libvirt.sh"
started=1
libvirt_start svmtest- || fail "libvirtd does not start"

# This machine's topology: its first online CPU and NUMA node 0 are real.
cpu=$(cut -d, -f1 /sys/devices/system/cpu/online | cut -d- -f1)
live=(--cpus "$cpu" --mem 1G --set RequireLocality=no --set DomainType=qemu
	--set CpuMode=maximum --gpus 0000:01:00.0 --ibvfs 0000:e1:00.1)

native() { # name ARGS...: the qemu argv in $work/NAME.argv
	local name=$1
	generate "$@"
	timeout 240 virsh -q -c qemu:///system domxml-to-native qemu-argv \
		"$work/$name.xml" >"$work/$name.argv" 2>"$work/$name.nerr" ||
		fail "domxml-to-native ($name): $(cat "$work/$name.nerr")"
	echo "ok: $name converts to a qemu command line"
}

native live-vfio "${live[@]}"
argv=$work/live-vfio.argv
grep -q '"driver":"pxb-pcie"[^}]*"numa_node":0' "$argv" ||
	fail "no pxb-pcie in NUMA node 0: $(cat "$argv")"
for fn in 0000:01:00.0 0000:01:00.1 0000:e1:00.1; do
	grep -q "\"driver\":\"vfio-pci\",\"host\":\"$fn\"" "$argv" ||
		fail "no vfio-pci for $fn"
done
grep -q 'numa node,nodeid=0' "$argv" || fail "no guest NUMA node"
grep -q 'org.slurm-vm.agent.0' "$argv" || fail "no agent channel"

native live-emulate "${live[@]}" --set DeviceAttach=emulate
argv=$work/live-emulate.argv
! grep -q vfio-pci "$argv" || fail "emulate still passes devices through"
[ "$(grep -o '"driver":"virtio-rng-pci"' "$argv" | wc -l)" = 2 ] ||
	fail "not one virtio-rng stand-in per device: $(cat "$argv")"
# the stand-ins sit on root ports behind the expander (bus pci.1)
grep -q '"driver":"pcie-root-port"[^}]*"bus":"pci.1"' "$argv" ||
	fail "root ports are not on the expander"

# The guest switch in qemu's own terms: upstream and downstream ports.
native live-switch "${live[@]}" "${dgx[@]}" --gpus 0000:04:00.0 \
	--ibvfs 0000:06:00.1 --set DeviceAttach=emulate
argv=$work/live-switch.argv
grep -q '"driver":"x3130-upstream"' "$argv" &&
	[ "$(grep -o '"driver":"xio3130-downstream"' "$argv" | wc -l)" = 2 ] ||
	fail "no guest PCIe switch with two downstream ports: $(cat "$argv")"

# Firmware=uefi: OVMF's code read-only, the job's own NVRAM, the window
if [ -f /usr/share/OVMF/OVMF_CODE_4M.fd ]; then
	native live-uefi "${live[@]}" --uefi "$work/nvram.fd" \
		--set UefiMmio64Window=128
	argv=$work/live-uefi.argv
	grep -q '"filename":"/usr/share/OVMF/OVMF_CODE_4M.fd","node-name":"libvirt-pflash0-storage"' "$argv" &&
		grep -q '"node-name":"libvirt-pflash0-format","read-only":true' "$argv" ||
		fail "OVMF code is not a read-only pflash0: $(cat "$argv")"
	grep -q "\"filename\":\"$work/nvram.fd\",\"node-name\":\"libvirt-pflash1-storage\"" "$argv" &&
		grep -q '"node-name":"libvirt-pflash1-format","read-only":false' "$argv" ||
		fail "the job's NVRAM is not a writable pflash1"
	grep -q -- '-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=131072' "$argv" ||
		fail "no 64-bit MMIO window for OVMF"
else
	echo "note: no OVMF here (package ovmf): UEFI conversion not checked"
fi
echo "PASS"
