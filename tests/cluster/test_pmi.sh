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
# Open MPI 4.1 (Debian's, PMIx-only): srun --mpi=pmix runs the same
# MPI_Allreduce and MPI_Sendrecv ring in the guest, each task's PMIx client
# reaching slurmstepd's PMIx server through the guest channel, with the same
# program on the host as the reference, and MPI_Abort ends the step there
# as it does on the host. Open MPI in the guest works with the guest's own
# topology, not the host's that Slurm hands it as PMIx job data; a client
# with another gid is refused and told why.
# One guest boot serves every check; no environment settings are needed
# (Debian's MPICH is ch4:ucx; UCX uses its built-in shared-memory and self
# transports, its InfiniBand/RDMA-CM modules are not in the test guest).
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
# A second group of the user's (the seed gives the guest's user the host's
# groups): a setgid program of that group is a PMIx client with another gid.
getent group svmpmix >/dev/null || groupadd svmpmix
id -nG "$user" | grep -qw svmpmix || usermod -aG svmpmix "$user"
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
# Open MPI with PMIx on bare metal: the reference for the guest's runs.
mpicc.openmpi -O2 -o "$work/svm-ompi-allreduce" \
	"$HARNESS_REPO/tests/guest/files/mpi_allreduce.c"
chmod 0755 "$work/svm-ompi-allreduce"
ompi_host_rc=0
ompi_host_out=$(harness_as_user "$user" timeout 60 srun --mpi=pmix -n2 \
	--export=ALL,OMPI_MCA_hwloc_base_verbose=1 \
	"$work/svm-ompi-allreduce" 2>&1) || ompi_host_rc=$?
ompi_host=$(harness_as_user "$user" timeout 60 srun -n1 hostname 2>/dev/null) || true
ompi_abort_rc=0
ompi_abort_out=$(harness_as_user "$user" timeout 60 srun --mpi=pmix -n2 \
	"$work/svm-ompi-allreduce" abort 2>&1) || ompi_abort_rc=$?

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
# srun reports the kills as one line ("tasks 0-1: Killed") or one per task
# ("task 1: Killed"), as they happen to arrive: compare which tasks ended how.
norm() {
	grep -o 'tasks\? [0-9,-]*: [A-Za-z ]*\|MPI_Abort(MPI_COMM_WORLD, 3)' |
		awk -F': ' '/^task/ {
			sub(/^tasks? /, "", $1); n = split($1, parts, ",")
			for (i = 1; i <= n; i++) {
				if (split(parts[i], r, "-") == 1) r[2] = r[1]
				for (t = r[1]; t <= r[2]; t++) print "task " t ": " $2
			}
			next
		} { print }' | sort -u | tr '\n' ' '
}
rc=0
t0=$(date +%s)
out=$(step --mpi=pmi2 -n2 svm-mpi-allreduce abort 2>&1) || rc=$?
secs=$(($(date +%s) - t0))
ranks_left() { # program: how many, from the guest's ps (which must list its agent)
	local ps
	ps=$(step -n1 ps 2>/dev/null) || true
	grep -q '[s]lurm-vm-agent' <<<"$ps" || { echo "unknown (no ps)"; return; }
	grep -c "[${1:0:1}]${1:1}" <<<"$ps" || true
}
no_ranks_left() { [ "$(ranks_left "$1")" = 0 ]; }
harness_wait 20 "the aborted ranks to be gone from the guest" no_ranks_left svm-mpi-allreduce || true
left=$(ranks_left svm-mpi-allreduce)
if [ "$rc" = "$host_rc" ] && [ "$rc" != 0 ] && [ "$(norm <<<"$out")" = "$(norm <<<"$host_out")" ] &&
	[ "$left" = 0 ] && [ "$secs" -lt 60 ]; then
	ok "MPI_Abort in the guest ends the step as on bare metal (rc=$rc, '$(norm <<<"$out")', ${secs}s), no rank left in the guest"
else
	fail "MPI_Abort: guest rc=$rc in ${secs}s, $left ranks left, '$(norm <<<"$out")'; bare metal rc=$host_rc '$(norm <<<"$host_out")'"
	sed 's/^/    /' <<<"$out"
fi

# Open MPI 4.1.4 over PMIx: on the host first (the reference), then in the
# guest, where every task's PMIx client talks to slurmstepd's server through
# a listener on the guest's 127.0.0.1 and the channel.
ompi_ok() { # output host: both ranks' checks ok on host, Open MPI named
	[ "$(guest_mpi_ranks_ok <<<"$1")" = "0@$2 1@$2 " ] &&
		grep -q '^mpi: Open MPI v4' <<<"$1"
}
if [ "$ompi_host_rc" = 0 ] && ompi_ok "$ompi_host_out" "$ompi_host"; then
	ok "reference: Open MPI over PMIx on the host (srun --mpi=pmix -n2)"
else
	fail "reference: Open MPI over PMIx on the host: rc=$ompi_host_rc, output:"
	sed 's/^/    /' <<<"$ompi_host_out"
fi
rc=0
t0=$(date +%s)
out=$(step --mpi=pmix -n2 --export=ALL,OMPI_MCA_hwloc_base_verbose=1 \
	svm-ompi-allreduce 2>&1) || rc=$?
secs=$(($(date +%s) - t0))
if [ "$rc" = 0 ] && ompi_ok "$out" "$guest_host"; then
	ok "Open MPI over PMIx: MPI_Allreduce and a ring of 256 KiB MPI_Sendrecv over 2 ranks in the guest, as on the host (${secs}s, TCG)"
else
	fail "Open MPI over PMIx in the guest: srun rc=$rc, output:"
	sed 's/^/    /' <<<"$out"
fi
# The topology Open MPI works with (hwloc_base_verbose says where it came
# from): on the host, the XML Slurm hands every client as PMIx job data;
# in the guest, the guest's own (the agent hides the host's XML).
topo_from() { grep -o 'hwloc:base \(loading topology from XML\|discovering topology\)' <<<"$1" | sort | uniq -c | tr -s ' \n' ' '; }
if [ "$(topo_from "$ompi_host_out")" = " 2 hwloc:base loading topology from XML " ] &&
	[ "$(topo_from "$out")" = " 2 hwloc:base discovering topology " ]; then
	ok "Open MPI's topology: on the host Slurm's hwloc XML, in the guest the guest's own (both ranks)"
else
	fail "Open MPI's topology: host ranks:$(topo_from "$ompi_host_out"); guest ranks:$(topo_from "$out")"
fi

# MPI_Abort under PMIx: the server kills the step, srun ends with the
# aborting rank's code as on the host, and no rank is left in the guest.
rc=0
t0=$(date +%s)
out=$(step --mpi=pmix -n2 svm-ompi-allreduce abort 2>&1) || rc=$?
secs=$(($(date +%s) - t0))
harness_wait 20 "the aborted Open MPI ranks to be gone" no_ranks_left svm-ompi-allreduce || true
left=$(ranks_left svm-ompi-allreduce)
aborted='MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD'
if [ "$rc" = "$ompi_abort_rc" ] && [ "$rc" = 3 ] && grep -q "$aborted" <<<"$out" &&
	grep -q "$aborted" <<<"$ompi_abort_out" && [ "$left" = 0 ] && [ "$secs" -lt 60 ]; then
	ok "Open MPI MPI_Abort over PMIx in the guest ends the step as on the host (rc=$rc, ${secs}s), no rank left in the guest"
else
	fail "Open MPI MPI_Abort: guest rc=$rc in ${secs}s, $left ranks left; host rc=$ompi_abort_rc"
	sed 's/^/    /' <<<"$out"
fi

# A client with another gid (a setgid copy of the program, of the user's
# second group): Slurm's PMIx server refuses it (psec native checks the uid
# and primary gid), and the task's stderr says why and what to do.
rc=0
# shellcheck disable=SC2016 # expanded in the guest
out=$(step --mpi=pmix -n1 sh -c 'p=/tmp/svm-ompi-sg &&
	cp "$(command -v svm-ompi-allreduce)" $p && chgrp svmpmix $p &&
	chmod 2755 $p && exec $p' 2>&1) || rc=$?
uid=$(id -u "$user") gid=$(id -g "$user") sg_gid=$(getent group svmpmix | cut -d: -f3)
said="PMIx: this task's client runs as uid $uid gid $sg_gid, but the job's are uid $uid gid $gid: Slurm's PMIx server refuses it"
if [ "$rc" != 0 ] && grep -qF "$said" <<<"$out" && ! grep -q '^mpi: rank' <<<"$out"; then
	ok "a PMIx client with another gid ($sg_gid) is refused, and told why: $(grep -oF "$said" <<<"$out" | head -1)"
else
	fail "a PMIx client with another gid: rc=$rc, output:"
	sed 's/^/    /' <<<"$out"
fi

scancel "$job"
[ "$failures" = 0 ]
