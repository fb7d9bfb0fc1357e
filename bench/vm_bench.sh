#!/bin/bash
# The prolog's and epilog's own time, per phase, from N VM jobs on the test
# cluster (tests/cluster/harness.sh: real slurmctld, slurmd and libvirtd, the
# test guest under TCG), read from the phases both log:
#   prolog  check, alloc, plan, reclaim, overlay, seed and devices (when
#           logged), define+start; their sum and the whole prolog minus the guest's
#           boot (boot-to-ready: from define+start to the agent's ready,
#           relay start included) is our overhead;
#   libvirt define+start against `virsh create` of the same domain XML
#           (the peer: plain libvirt, measured in the same run);
#   epilog  each undone journal step (RELAY, DOMAIN: ACPI shutdown, OVERLAY)
#           and the state directory's removal;
#   non-VM  the prolog of a job without --vm-image against /bin/true, M
#           execs each: what plain jobs pay for the suite.
#
#   flock /tmp/slurm-vm-guest.lock bench/vm_bench.sh [N]    (root; N jobs, 3)
#
# The build from BUILD_DIR (default build/); SVM_BENCH_EXECS execs of each
# non-VM peer (200). SVM_BENCH_SHORT=1 (bench/run.sh --short): one job of
# 1 s (not 3), no UEFI guest, 20 execs.
#
# Prints a human table, then one line per figure:
#   BENCH|<name>|<value>|<unit>|<peer or ->|<ratio or ->|<note>
# Medians over the N jobs. Under TCG the boot and shutdown are regression
# figures only (the note says TCG); the prolog's own phases are not
# emulated work. Takes about N x 40 s plus the cluster start.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
short=${SVM_BENCH_SHORT:-0}
if [ "$short" = 1 ]; then
	n=${1:-1} m=${SVM_BENCH_EXECS:-20} job_secs=1
else
	n=${1:-3} m=${SVM_BENCH_EXECS:-200} job_secs=3
fi
user=svmtest
BUILD_DIR=$(cd "${BUILD_DIR:-$here/../build}" && pwd)
export BUILD_DIR
. "$here/../tests/cluster/harness.sh"
. "$here/../tests/cluster/guest.sh"
. "$here/cluster.sh"

[ "$(id -u)" = 0 ] || { echo "vm_bench: run as root" >&2; exit 1; }
bench_cluster_start 90 ShutdownTimeout=10
work=$HARNESS_DIR/bench
mkdir -p "$work"

# ---- N VM jobs, one after the other
vm_job() { # IMAGE: VM_JOB, once its prolog is done
	local j
	j=$(harness_as_user "$user" sbatch --parsable -c2 --mem=1G \
		--vm-image="$1" --gres=gpu:1,ibvf:1 --wrap "sleep $job_secs")
	harness_wait 240 "job $j's guest" grep -q "job $j: prolog done" "$HARNESS_VM_LOG" ||
		harness_die "job $j: no prolog end in the log"
	grep -q "job $j: prolog done in [0-9.]*s: ok" "$HARNESS_VM_LOG" ||
		harness_die "job $j: $(grep "job $j: prolog done" "$HARNESS_VM_LOG")"
	VM_JOB=$j
}
vm_job_end() {
	harness_wait 120 "job $1's epilog" grep -q "job $1: VM job ended" "$HARNESS_VM_LOG" ||
		harness_die "job $1: no epilog end in the log"
}
jobs=()
for ((i = 0; i < n; i++)); do
	vm_job testguest
	j=$VM_JOB
	jobs+=("$j")
	# The domain XML for the libvirt peer, once.
	if [ ! -s "$work/domain.xml" ]; then
		virsh dumpxml --inactive "slurmvm-job-$j.0" >"$work/domain.xml"
		# The cloud-init seed, when the guest has one: the peer boots
		# the same disks.
		cp "$(guest_state_dir "$j")/seed.iso" "$work/" 2>/dev/null || true
	fi
	vm_job_end "$j"
done

# ---- one UEFI guest (OVMF boots the bzImage; the others boot the ELF
# vmlinux through qemu's loader)
efi_job=
if [ "$short" != 1 ] && [ -f /usr/share/OVMF/OVMF_CODE_4M.fd ]; then
	guest_add_to_catalog efiguest Firmware=uefi \
		"Kernel=$HARNESS_REPO/tests/guest/cache/vmlinuz"
	vm_job efiguest
	efi_job=$VM_JOB
	vm_job_end "$efi_job"
fi

# ---- the peer: `virsh create` of the same XML, another name, own files
# (svmtest-*: libvirt.sh removes such domains should this script die),
# started as the prolog starts its guests: paused, its memory bounded live,
# resumed. The running domain's XML carries that bound as <memtune>, for
# which libvirt would raise qemu's RLIMIT_MEMLOCK at start (CAP_SYS_RESOURCE,
# which containers lack: "cannot limit locked memory").
harness_exit_hook() { virsh -q destroy "svmtest-bench-peer-$$" >/dev/null 2>&1 || true; }
hard_limit=$(sed -n "s|.*<hard_limit unit='KiB'>\([0-9]*\)</hard_limit>.*|\1|p" "$work/domain.xml")
sed -e "s|<name>[^<]*</name>|<name>svmtest-bench-peer-$$</name>|" -e '/<uuid>/d' \
	-e '/<memtune>/,/<\/memtune>/d' \
	-e "s|$HARNESS_DIR/vm/state/job-[0-9.]*/|$work/|g" \
	-e "s|$HARNESS_DIR/vm/overlay/[^']*\.qcow2|$work/peer.qcow2|g" \
	"$work/domain.xml" >"$work/peer.xml"
peer_start() {
	local dom=svmtest-bench-peer-$$
	if [ -z "$hard_limit" ]; then
		virsh -q create "$work/peer.xml" >/dev/null
		return
	fi
	virsh -q create --paused "$work/peer.xml" >/dev/null &&
		virsh -q memtune "$dom" --hard-limit "$hard_limit" --live &&
		virsh -q resume "$dom" >/dev/null
}
base=$(sed -n "s|.*<source file='\\($HARNESS_IMAGES/[^']*\\)'.*|\\1|p" "$work/domain.xml" | head -1)
for ((i = 0; i < n; i++)); do
	qemu-img create -q -f qcow2 -F qcow2 -b "$base" "$work/peer.qcow2"
	# qemu runs as the job user (the domain's DAC seclabel).
	chown "$user:" "$work" "$work/peer.qcow2" "$work"/seed.iso 2>/dev/null || true
	t0=$EPOCHREALTIME
	peer_start || harness_die "virsh create of the prolog's domain XML failed"
	t1=$EPOCHREALTIME
	virsh -q destroy "svmtest-bench-peer-$$" >/dev/null 2>&1 || true
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$work/peer.s"
	rm -f "$work/peer.qcow2"
done

# ---- a job without --vm-image: the prolog against /bin/true
prolog=$HARNESS_BIN/slurm-vm-prolog
time_execs() { # CMD -> one duration in seconds a line
	local i t0 t1
	for ((i = 0; i < m; i++)); do
		t0=$EPOCHREALTIME
		env -i SLURM_JOB_ID=1 SLURM_JOB_UID=0 SLURM_JOB_USER=root "$1"
		t1=$EPOCHREALTIME
		echo "$t0 $t1"
	done | awk '{ printf "%.6f\n", $2 - $1 }'
}
time_execs /bin/true >"$work/true.s"
time_execs "$prolog" >"$work/novm.s"

# ---- the figures
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "" }'; }
# phase JOB PATTERN: the seconds logged after PATTERN for JOB
phase() { { grep -o "job $1: $2 [0-9.]*s" "$HARNESS_VM_LOG" || true; } | tail -1 | sed 's/.* \([0-9.]*\)s$/\1/'; }
fig() { # NAME PATTERN -> median seconds over the jobs ("" when never logged)
	local j
	for j in "${jobs[@]}"; do phase "$j" "$2"; done | { grep . || true; } | median
}
ms() { [ -n "$1" ] && awk -v s="$1" 'BEGIN { printf "%.1f", s * 1000 }' || echo ""; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
bench() { printf 'BENCH|%s|%s|%s|%s|%s|%s\n' "$@"; }

# job_split JOB -> "boot-to-ready own-overhead" in seconds
job_split() {
	local j=$1 total boot ov seed dev def
	total=$(phase "$j" "prolog done in")
	boot=$(phase "$j" "phase boot")
	ov=$(phase "$j" "phase overlay")
	seed=$(phase "$j" "phase seed")
	dev=$(phase "$j" "phase devices")
	def=$(phase "$j" "phase define+start")
	awk -v t="$total" -v b="$boot" -v o="$ov" -v s="${seed:-0}" -v v="${dev:-0}" -v d="$def" \
		'BEGIN { r = b - o - s - v - d; printf "%.3f %.3f\n", r, t - r }'
}
for j in "${jobs[@]}"; do job_split "$j"; done >"$work/split"
ready=$(cut -d' ' -f1 "$work/split" | median)
overhead=$(cut -d' ' -f2 "$work/split" | median)
total=$(fig total "prolog done in")
define=$(fig define "phase define+start")
peer=$(median <"$work/peer.s")
epilog=$(fig epilog "VM job ended: [0-9]* steps undone in")
true_s=$(median <"$work/true.s")
novm_s=$(median <"$work/novm.s")
added=$(awk -v a="$novm_s" -v b="$true_s" 'BEGIN { printf "%.3f", (a - b) * 1000 }')

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "# slurm-vm prolog/epilog bench, $(date -u +%Y-%m-%dT%H:%MZ): $n VM jobs" \
	"(-c2 --mem=1G --gres=gpu:1,ibvf:1, test guest, DeviceAttach=emulate)"
echo "# TCG (no KVM): boot and shutdown are REGRESSION figures for this machine;" \
	"host $(uname -r), $cpu, $(nproc) cores"
{
	tcg="TCG guest (no KVM): regression figure"
	bench "prolog: whole, guest boot included" "$(ms "$total")" ms - - "$tcg; median of $n jobs"
	bench "prolog: own overhead (whole minus guest boot-to-ready)" "$(ms "$overhead")" ms \
		"guest boot-to-ready: $(ms "$ready") ms" "$(ratio "$overhead" "$ready")" "median of $n jobs; the boot is TCG"
	bench "prolog: guest boot-to-ready" "$(ms "$ready")" ms - - "$tcg; define+start done to the agent's ready, relay start included"
	if [ -n "$efi_job" ]; then
		efi=$(job_split "$efi_job" | cut -d' ' -f1)
		bench "prolog: UEFI guest boot-to-ready (OVMF)" "$(ms "$efi")" ms \
			"SeaBIOS guest: $(ms "$ready") ms" "$(ratio "$efi" "$ready")" \
			"$tcg; one job; OVMF starts the bzImage, SeaBIOS guests the ELF vmlinux"
	fi
	for p in check alloc plan reclaim overlay seed devices define+start; do
		v=$(fig "$p" "phase $p")
		[ -n "$v" ] || continue
		bench "prolog phase: $p" "$(ms "$v")" ms - - "median of $n jobs"
	done
	bench "libvirt start: define+start of the transient domain" "$(ms "$define")" ms \
		"virsh create (--paused, memtune, resume), same XML: $(ms "$peer") ms" "$(ratio "$define" "$peer")" "$tcg; median of $n"
	bench "epilog: whole" "$(ms "$epilog")" ms - - "$tcg; ACPI shutdown of the guest included (ShutdownTimeout=10); median of $n jobs"
	verbs=$(for j in "${jobs[@]}"; do grep -o "job $j: epilog phase [A-Z]*" "$HARNESS_VM_LOG"; done |
		awk '{ print $NF }' | awk '!seen[$0]++')
	for v in $verbs; do
		x=$(fig "$v" "epilog phase $v")
		[ -n "$x" ] || continue
		note="median of $n jobs"
		[ "$v" = DOMAIN ] && note="$tcg; ACPI shutdown; $note"
		bench "epilog phase: $(tr 'A-Z' 'a-z' <<<"$v")" "$(ms "$x")" ms - - "$note"
	done
	bench "prolog of a job without --vm-image, added time" "$added" ms \
		"/bin/true: $(ms "$true_s") ms" "$(ratio "$novm_s" "$true_s")" "exec of slurm-vm-prolog minus exec of /bin/true; medians of $m each"
} >"$work/bench"
awk -F'|' '{ printf "%-28s %10s %-3s  peer: %-24s ratio: %-5s %s\n", $2, $3, $4, $5, $6, $7 }' "$work/bench"
cat "$work/bench"
