#!/bin/bash
# cluster-timeout: 600
# PMI through the guest: srun --mpi=pmi2 gives each task in the guest a
# socket as PMI_FD whose bytes reach slurmstepd's PMI server. The test
# guest's svm-pmi-check speaks the wire protocol itself (PMI-1 lines as
# MPICH's simple PMI does, PMI-2 length-prefixed commands): every rank puts,
# fences and checks every other rank's value. Then Debian's MPICH
# (libmpich12, copied into the guest) runs an MPI_Allreduce over 2 ranks
# and a ring of MPI_Sendrecv (256 KiB each way, every byte checked),
# and MPI_Abort in one rank ends the step as it does on bare metal (the same
# program built for the host, run first), leaving no rank in the guest.
# One guest boot serves every check; no environment settings are needed
# (Debian's MPICH is ch4:ucx; UCX uses its built-in shared-memory and self
# transports, its InfiniBand/RDMA-CM modules are not in the test guest).
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
guest_cluster_start 240
work=$HARNESS_WORK/$user

# MPI_Abort on bare metal first (the VM job below takes the node's CPUs):
# the same program built for the host; the guest's run must end the same.
mpicc.mpich -O2 -o "$work/svm-mpi-allreduce" \
	"$HARNESS_REPO/tests/guest/files/mpi_allreduce.c"
chmod 0755 "$work/svm-mpi-allreduce"
host_rc=0
host_out=$(harness_as_user "$user" timeout 60 srun --mpi=pmi2 -n2 \
	"$work/svm-mpi-allreduce" abort 2>&1) || host_rc=$?

job=$(harness_as_user "$user" sbatch --parsable -n2 -c1 --mem=768M \
	--vm-image=testguest --wrap 'sleep 900')
harness_wait 300 "job $job's guest" grep -q "job $job: guest ready" "$HARNESS_VM_LOG" ||
	harness_die "no guest for job $job"
step() { harness_as_user "$user" timeout 180 srun --jobid="$job" --overlap --chdir=/tmp "$@"; }

# The programs exist only in the guest image, not on the host.
guest_host=$(step -n1 hostname 2>/dev/null) || true
[ -n "$guest_host" ] || harness_die "srun hostname in the guest printed nothing"

# Ranks 0..N-1, each line "pmiV: rank R of N on <guest> (kvs JOB.STEP): ...",
# and srun's exit status 0.
check_pmi() { # version ntasks
	local v=$1 n=$2 out rc=0 want got
	out=$(step --mpi=pmi2 -n"$n" -O svm-pmi-check "$v" 2>&1) || rc=$?
	want=$(seq 0 $((n - 1)) | sed "s/.*/pmi$v: rank & of $n on $guest_host/")
	got=$(grep -o "^pmi$v: rank [0-9]* of [0-9]* on [^ ]*" <<<"$out" | sort -t' ' -k3 -n)
	if [ "$rc" = 0 ] && [ "$got" = "$want" ] &&
		[ "$(grep -c 'every rank.s value right' <<<"$out")" = "$n" ]; then
		ok "PMI-$v, $n ranks in the guest: put, fence, every rank got every other's value (twice)"
	else
		fail "PMI-$v, $n ranks: srun rc=$rc, output:"
		sed 's/^/    /' <<<"$out"
	fi
}
check_pmi 1 2
check_pmi 2 4

# Without --mpi=pmi2 there is no PMI server: the check must say so, not pass.
rc=0
out=$(step --mpi=none -n1 svm-pmi-check 1 2>&1) || rc=$?
if [ "$rc" != 0 ] && grep -q 'PMI_FD is not set' <<<"$out"; then
	ok "--mpi=none: svm-pmi-check fails (rc=$rc): no PMI_FD in the guest"
else
	fail "--mpi=none: rc=$rc '$out'"
fi

# MPICH 4 (ch4:ucx) from Debian: its simple PMI client speaks PMI-1 over
# PMI_FD; UCX carries the ranks' data over shared memory in the guest.
rc=0
t0=$(date +%s)
out=$(step --mpi=pmi2 -n2 svm-mpi-allreduce 2>&1) || rc=$?
secs=$(($(date +%s) - t0))
got=$(grep -o "^mpi: rank [0-9] of 2 on $guest_host: allreduce sum of ranks 1, expected 1: ok" <<<"$out" | sort)
ranks=$(guest_mpi_ranks_ok <<<"$out")
if [ "$rc" = 0 ] && [ "$(wc -l <<<"$got")" = 2 ] &&
	grep -q '^mpi: MPICH Version:' <<<"$out" &&
	[ "$(cut -d' ' -f3 <<<"$got" | tr '\n' ' ')" = "0 1 " ] &&
	[ "$ranks" = "0@$guest_host 1@$guest_host " ]; then
	ok "MPICH MPI_Allreduce and a ring of 256 KiB MPI_Sendrecv over 2 ranks in the guest: sum 1 and every byte right on both (${secs}s, TCG)"
	sed 's/^/    /' <<<"$out"
else
	fail "MPICH allreduce/sendrecv: srun rc=$rc, output:"
	sed 's/^/    /' <<<"$out"
fi

# MPI_Abort in one rank while the other waits in a barrier: the PMI server
# kills the step; srun ends as on bare metal and no rank is left in the guest.
norm() { grep -o 'tasks [0-9-]*: [A-Za-z ]*\|MPI_Abort(MPI_COMM_WORLD, 3)' | sort -u | tr '\n' ' '; }
rc=0
t0=$(date +%s)
out=$(step --mpi=pmi2 -n2 svm-mpi-allreduce abort 2>&1) || rc=$?
secs=$(($(date +%s) - t0))
ranks_left() { # how many, from the guest's ps (which must list its agent)
	local ps
	ps=$(step -n1 ps 2>/dev/null) || true
	grep -q '[s]lurm-vm-agent' <<<"$ps" || { echo "unknown (no ps)"; return; }
	grep -c '[s]vm-mpi-allreduce' <<<"$ps" || true
}
no_ranks_left() { [ "$(ranks_left)" = 0 ]; }
harness_wait 20 "the aborted ranks to be gone from the guest" no_ranks_left || true
left=$(ranks_left)
if [ "$rc" = "$host_rc" ] && [ "$rc" != 0 ] && [ "$(norm <<<"$out")" = "$(norm <<<"$host_out")" ] &&
	[ "$left" = 0 ] && [ "$secs" -lt 60 ]; then
	ok "MPI_Abort in the guest ends the step as on bare metal (rc=$rc, '$(norm <<<"$out")', ${secs}s), no rank left in the guest"
else
	fail "MPI_Abort: guest rc=$rc in ${secs}s, $left ranks left, '$(norm <<<"$out")'; bare metal rc=$host_rc '$(norm <<<"$host_out")'"
	sed 's/^/    /' <<<"$out"
fi

scancel "$job"
[ "$failures" = 0 ]
