#!/bin/bash
# cluster-timeout: 420
# An image with Firmware=uefi boots OVMF (Debian's ovmf package) under the
# job user's qemu:
# - the guest runs on UEFI firmware (/sys/firmware/efi), a BIOS image of the
#   same cluster does not;
# - OVMF's code is a read-only pflash, its NVRAM the job's own file in
#   OverlayDir (journaled NVRAM, the user's, 0600), and
#   UefiMmio64Window= reaches qemu as fw_cfg opt/ovmf/X-PciMmio64Mb;
# - after the job the NVRAM is gone with the rest;
# - a node whose NVRAM template is missing drains with the reason and keeps
#   nothing of the job.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

[ -f /usr/share/OVMF/OVMF_CODE_4M.fd ] ||
	harness_skip "no OVMF (package ovmf; scripts/install-deps.sh installs it)"

user=svmtest
uid=$(id -u "$user")
gid=$(id -g "$user")

guest_cluster_start 180 ShutdownTimeout=5 UefiMmio64Window=64
# OVMF starts the bzImage (EFI stub), not the ELF vmlinux the others boot
guest_add_to_catalog efiguest Firmware=uefi \
	"Kernel=$(guest_cache)/vmlinuz"
guest_add_to_catalog efielf Firmware=uefi
node=${HARNESS_NODES[0]}

ready() { grep -q "job $1: guest ready" "$HARNESS_VM_LOG"; }
ended() { ! squeue -h -j "$1" | grep -q .; }

# --- a UEFI image whose kernel OVMF cannot start: refused at submission
rc=0
out=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1G \
	--vm-image=efielf --wrap true 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -q "bzImage with an EFI stub" <<<"$out" &&
	ok "an ELF kernel with Firmware=uefi is refused at submission: $(grep -o 'Firmware=uefi needs.*' <<<"$out" | head -1)" ||
	fail "efielf: rc=$rc: $out"

# --- a UEFI guest
job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1G \
	--vm-image=efiguest --wrap 'sleep 300')
harness_wait 240 "job $job's guest" ready "$job" ||
	{ tail -20 "$HARNESS_VM_LOG"; harness_die "no UEFI guest"; }
ok "$(grep -o "job $job: guest ready.*" "$HARNESS_VM_LOG")"
state=$(guest_state_dir "$job")
dom=slurmvm-job-$job.0
nvram=$HARNESS_DIR/vm/overlay/job-$job.0.nvram.fd

out=$(guest_exec "$user" "$job" -- sh -c 'test -d /sys/firmware/efi && echo uefi || echo bios' 2>&1) || true
[ "$out" = uefi ] && ok "the guest runs on UEFI firmware (/sys/firmware/efi)" ||
	fail "the guest says '$out', not uefi"

xml=$(virsh dumpxml "$dom")
grep -q "<loader readonly='yes' secure='no' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.fd</loader>" <<<"$xml" &&
	ok "OVMF code is a read-only pflash, no secure boot" ||
	fail "no read-only OVMF loader: $(grep -E 'loader|nvram' <<<"$xml")"
grep -q "<nvram>$nvram</nvram>" <<<"$xml" && ok "the NVRAM is the job's own: $nvram" ||
	fail "NVRAM is not $nvram: $(grep nvram <<<"$xml")"
[ "$(stat -c '%u:%g %a' "$nvram" 2>/dev/null)" = "$uid:$gid 600" ] &&
	ok "the NVRAM is $user's, 0600 (qemu runs as $user)" ||
	fail "NVRAM $(stat -c '%U:%G %a' "$nvram" 2>&1)"
grep -q "^NVRAM	$nvram$" "$state/journal" && ok "NVRAM is journaled" ||
	fail "no NVRAM in the journal: $(cat "$state/journal")"
pid=$(cat "/run/libvirt/qemu/$dom.pid" 2>/dev/null || echo 0)
tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
	grep -q -- '-fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=65536' &&
	ok "qemu gives OVMF a 64 GiB 64-bit MMIO window (UefiMmio64Window=64)" ||
	fail "no fw_cfg window on qemu's command line (pid $pid)"
[ "$(ps -o uid= -p "$pid" | tr -d ' ')" = "$uid" ] && ok "qemu runs as $user" ||
	fail "qemu does not run as $user"

scancel "$job"
harness_wait 60 "job $job to end" ended "$job" || true
harness_wait 60 "job $job's epilog" bash -c "[ ! -e '$state' ]" || fail "state dir left"
[ ! -e "$nvram" ] && ok "NVRAM gone after the job" || fail "NVRAM left: $nvram"
guest_nothing_left "$job"

# --- the same cluster's BIOS image: the check above can tell them apart
job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1G \
	--vm-image=testguest --wrap 'sleep 300')
harness_wait 240 "job $job's guest" ready "$job" || harness_die "no BIOS guest"
out=$(guest_exec "$user" "$job" -- sh -c 'test -d /sys/firmware/efi && echo uefi || echo bios' 2>&1) || true
[ "$out" = bios ] && ok "a Firmware=bios image boots SeaBIOS" || fail "BIOS image says '$out'"
[ ! -e "$HARNESS_DIR/vm/overlay/job-$job.0.nvram.fd" ] && ok "no NVRAM for a BIOS guest" ||
	fail "a BIOS guest got an NVRAM"
scancel "$job"
harness_wait 60 "job $job to end" ended "$job" || true
harness_wait 60 "job $job's epilog" bash -c "[ ! -e '$(guest_state_dir "$job")' ]" || true
guest_nothing_left "$job"

# --- no NVRAM template on the node: a node fault, nothing left
harness_vmconf_set UefiVars /nonexistent/OVMF_VARS_4M.fd
job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1G \
	--vm-image=efiguest --wrap 'true')
harness_wait 90 "node $node to drain" bash -c \
	"sinfo -h -N -o %t | grep -Eq 'drain|drng'" ||
	fail "the node did not drain"
grep -q "cannot read UefiVars=/nonexistent/OVMF_VARS_4M.fd" "$HARNESS_VM_LOG" &&
	ok "the log says why: $(grep -o "cannot read UefiVars=[^:]*: .*" "$HARNESS_VM_LOG" | tail -1)" ||
	fail "no reason in the log: $(tail -5 "$HARNESS_VM_LOG")"
left=$(guest_leftovers "$job")
[ -z "$left" ] || [ "$left" = state-dir ] && ok "nothing of job $job left but its state (${left:-none})" ||
	fail "job $job left: $left"
scancel "$job" 2>/dev/null || true
harness_vmconf_set UefiVars /usr/share/OVMF/OVMF_VARS_4M.fd
scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true

[ "$failures" = 0 ]
