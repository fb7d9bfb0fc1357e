#!/bin/bash
# cluster-timeout: 900
# The README's first command, end to end: tests/headline.sh installs,
# builds, starts a cluster of two nodes of their own (n1, n2: each slurmd in
# its own namespaces with its own libvirtd, JobNetwork=vxlan), submits
#   sbatch -N2 --vm-image=testguest --gres=gpu:1,ibvf:1 job.sh
# (doc/examples/job.sh) as a normal user, stops the cluster and checks that
# nothing is left. Here its output is held against what a user must see:
# the job completed with 0:0; one guest per node, each with the test
# guest's kernel (not the host's) and its node's name; on each node the
# vCPU pinning that node's prolog planned, as that node's libvirtd has it,
# and both devices that node's prolog allocated, their stand-ins in each
# guest's NUMA node 0; MPICH ranks 0 on n1 and 1 on n2 with a right
# MPI_Allreduce and point-to-point ring; nothing of the job left on either
# node, nothing of the cluster after it stopped.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/tests/cluster/guest.sh" # guest_mpi_ranks_ok, guest_kernel_version
failures=0
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

log=$(mktemp "${TMPDIR:-/tmp}/svm-headline.XXXXXX")
# SLURM_VM_DEBS (tests/run-all.sh, from tests/packaging.sh): the job runs
# on the installed Debian packages, with no build tree to fall back on, and
# they are purged afterwards (gres_ibvf.so in Slurm's plugin directory
# would change the other tests' slurmd).
pkgs="slurm-vm slurm-vm-spank slurm-vm-agent slurm-vm-gres-ibvf"
# Built without a Slurm source (forky: tests/platform/debs.sh) there is no
# gres/ibvf package.
if [ -n "${SLURM_VM_DEBS:-}" ] && ! compgen -G "$SLURM_VM_DEBS/slurm-vm-gres-ibvf_*.deb" >/dev/null; then
	pkgs=${pkgs% slurm-vm-gres-ibvf}
fi
installed=0
cleanup() {
	rm -f "$log"
	[ "$installed" = 1 ] || return 0
	# shellcheck disable=SC2086 # a list of names
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $pkgs >/dev/null 2>&1 || true
}
trap cleanup EXIT
headline=("$repo/tests/headline.sh")
if [ -n "${SLURM_VM_DEBS:-}" ]; then
	debs=()
	for p in $pkgs; do debs+=("$SLURM_VM_DEBS/${p}_"*.deb); done
	installed=1
	if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}" >"$log" 2>&1; then
		ok "installed: $(dpkg-query -W -f='${Package} ${Version}, ' $pkgs)"
	else
		fail "apt-get install of the packages: $(tail -5 "$log")"
	fi
	headline=(env SLURM_VM_INSTALLED=1 BUILD_DIR=/nonexistent/build "$repo/tests/headline.sh")
fi
rc=0
"${headline[@]}" >"$log" 2>&1 || rc=$?
show() { sed 's/^/    /' "$log"; }

[ "$rc" = 0 ] && ok "tests/headline.sh exited 0" || fail "tests/headline.sh exited $rc"

# Sections of headline.sh's output: "### TITLE" lines.
section() { awk -v t="$1" '/^### /{ on = index($0, t) == 5; next } on' "$log"; }
out=$(section "job output")
vmlog=$(section "what slurm-vm did")
guests=$(section "each node's guest")
result=$(section "result")

job=$(sed -n 's/^submitted job \([0-9]*\)$/\1/p' "$log")
[ -n "$job" ] || fail "no job was submitted"
grep -qx "job $job: COMPLETED, exit code 0:0" <<<"$result" &&
	ok "job $job COMPLETED with exit code 0:0" ||
	fail "job state: $(head -1 <<<"$result")"

# The job's lines of the shared vm.conf LogFile as "NODE TEXT": each
# prolog (by its pid) names its node in its "node NAME:" line.
by_node=$(awk -v j="job $job: " '
	match($0, /slurm-vm-prolog\[[0-9]+\]/) {
		pid = substr($0, RSTART, RLENGTH)
		i = index($0, j)
		if (!i) next
		rest = substr($0, i + length(j))
		if (rest ~ /^node [^ :]+:/) {
			n = rest; sub(/^node /, "", n); sub(/:.*/, "", n)
			node[pid] = n
		}
		if (pid in node) print node[pid] " " rest
	}' <<<"$vmlog")

workdir=$(sed -n 's/^.*job\.sh (as [a-z0-9]*, in \(.*\))$/\1/p' "$log" | head -1)
if grep -q "couldn't chdir" <<<"$out"; then
	fail "a task could not enter the submit directory: $(grep -m1 "couldn't chdir" <<<"$out")"
else
	ok "no task fell back from the submit directory to /tmp"
fi
guest_kernel=$(guest_kernel_version)
kernels=$(grep -c '^guest n[12]: kernel ' <<<"$out" || true)
for node in n1 n2; do
	if [ "$kernels" = 2 ] && [ -n "$guest_kernel" ] &&
		grep -qx "guest $node: kernel $guest_kernel" <<<"$out" &&
		[ "$(grep -c "^$node: domain " <<<"$guests")" = 1 ]; then
		ok "$node: one guest, on $node's libvirtd, hostname $node, the test guest's kernel $guest_kernel (host: $(uname -r))"
	else
		fail "$node: guest kernel lines: $(grep '^guest .*: kernel' <<<"$out" | tr '\n' ' ') (the test guest's is '$guest_kernel'); domains: $(grep ': domain ' <<<"$guests" | tr '\n' ' ')"
	fi

	# SharedDirs=: the task starts in the submit directory, in the guest,
	# and what it writes there is on the host for the batch script.
	if [ -n "$workdir" ] && grep -qx "guest $node: in $workdir" <<<"$out"; then
		ok "$node: the guest's task started in the submit directory $workdir and its file reached the host"
	else
		fail "$node: working directory lines: $(grep "^guest $node: in " <<<"$out" | tr '\n' ' ') (submit directory '$workdir')"
	fi

	# The share's transport (SharedDirTransport=auto): virtiofs, served
	# by a virtiofsd the node's prolog started, where the node has the
	# Rust one (Debian 13 and later), else 9p.
	served=$(grep -Ec "^$node virtiofsd [0-9]+ serves /" <<<"$by_node" || true)
	if /usr/libexec/virtiofsd --version 2>/dev/null | grep -Eq '^virtiofsd [0-9]'; then
		[ "$served" = 1 ] && ok "$node: the share over virtiofs, its virtiofsd started by $node's prolog" ||
			fail "$node: $served virtiofsd lines for the share (want 1): $(grep "^$node " <<<"$by_node" | head -20 | tr '\n' '|')"
	else
		[ "$served" = 0 ] && ok "$node: the share over 9p (no Rust virtiofsd on the node)" ||
			fail "$node: a virtiofsd started without a Rust virtiofsd"
	fi

	# Pinning: every "vCPU->PU" pair of this node's plan, as this node's
	# libvirtd shows it, and no other.
	plan=$(sed -n "s/^$node plan: cell [0-9]*: .*vCPU->PU //p" <<<"$by_node" | tr '\n' ' ')
	pins=$(grep -c "^$node: vCPU " <<<"$guests" || true)
	n=0
	for pair in $plan; do
		grep -qx "$node: vCPU ${pair%->*} -> host CPU ${pair#*->}" <<<"$guests" &&
			n=$((n + 1))
	done
	[ "$n" -gt 0 ] && [ "$n" = "$(wc -w <<<"$plan")" ] && [ "$pins" = "$n" ] &&
		ok "$node: the guest's vCPU pinning is $node's plan: $plan" ||
		fail "$node: pinning: plan '$plan', $n of $pins pins shown as planned: $(grep "^$node: vCPU" <<<"$guests" | tr '\n' ' ')"

	# Devices: this node's allocation (gres index = PCI address) in the
	# domain's metadata on this node; one stand-in per device in its guest.
	n=0
	for addr in $(sed -n "s/^$node [a-z]* [0-9]* = PCI \([^ ]*\) .*/\1/p" <<<"$by_node"); do
		grep -q "^$node: device address=\"$addr\"" <<<"$guests" && n=$((n + 1)) ||
			fail "$node: the planned device $addr is not in its domain"
	done
	standins=$(grep -c "^guest $node: .* vendor 0x1af4 device 0x1044 NUMA node 0$" <<<"$out" || true)
	if [ "$n" = 2 ] && grep -q "^$node: device .*gres=\"gpu\"" <<<"$guests" &&
		grep -q "^$node: device .*gres=\"ibvf\"" <<<"$guests" && [ "$standins" = 2 ]; then
		ok "$node: both planned devices (a gpu and an ibvf) in its domain, their stand-ins in its guest's NUMA node 0"
	else
		fail "$node: devices: $n of the prolog's addresses in the domain, $standins stand-ins in NUMA node 0"
	fi
done

ranks=$(guest_mpi_ranks_ok <<<"$out")
if [ "$ranks" = "0@n1 1@n2 " ] && grep -q '^mpi: MPICH Version:' <<<"$out" &&
	grep -qx -- "--- the MPI step's exit status: 0" <<<"$out"; then
	ok "srun --mpi=pmi2 -N2 -n2: MPICH rank 0 on n1's guest, rank 1 on n2's, MPI_Allreduce and the 256 KiB MPI_Sendrecv ring right on both, step exit 0"
else
	fail "MPI: ranks with both checks right: '$ranks' (want '0@n1 1@n2 ')"
fi

grep -q '^after the job: nothing of it left on n1 n2 ' <<<"$result" &&
	ok "after the job: no domain, overlay, state, relay, qemu, job network link or nftables table on n1 or n2" ||
	fail "$(grep '^after the job' <<<"$result")"
grep -q '^after stopping the cluster: nothing left' <<<"$result" &&
	! grep -q 'harness: sweeping' "$log" &&
	ok "after stopping the cluster: no directory, daemon, qemu or process (none had to be swept)" ||
	fail "$(grep '^after stopping' <<<"$result") $(grep 'harness: sweeping' "$log")"

if [ "$installed" = 1 ]; then
	# Prolog, epilog, plugin, relay, exec and the guest's agent: the
	# packages' files, nothing else.
	if grep -q "using the installed slurm-vm packages, no build tree" "$log"; then
		ok "the job ran the installed suite: /usr/sbin/slurm-vm-prolog, $(dpkg -S spank_vm.so | cut -d: -f2), /usr/libexec/slurm-vm, the guest's agent /usr/sbin/slurm-vm-agent (BUILD_DIR=/nonexistent)"
	else
		fail "the headline did not run on the installed packages"
	fi
fi

if [ "$failures" != 0 ]; then
	echo "--- tests/headline.sh's output:"
	show
else
	echo "--- the job's output and the result:"
	section "job output" | sed 's/^/    /'
	sed 's/^/    /' <<<"$guests"
	sed 's/^/    /' <<<"$result"
fi
[ "$failures" = 0 ]
