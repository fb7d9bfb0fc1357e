#!/bin/bash
# cluster-timeout: 420
# A guest of another Debian release than the host: the Debian 13 cloud image
# (tests/guest/build-cloud.sh --suite trixie: Open MPI 5, PMIx 5, netplan
# with systemd-networkd) on this Slurm 22.05 node, whose mpi/pmix plugin
# serves PMIx 4.2. One job, one guest, two tasks: the program is compiled in
# the guest with its own mpicc (the host's is Debian 12's Open MPI 4, and a
# user builds for the image they run), then `srun --mpi=pmix -n2` runs it,
# the guest's PMIx 5 clients against the host's PMIx 4 server through the
# agent's relay: allreduce and ring ok for both ranks, and Open MPI v5.
# On the trixie platform (tests/platform/run.sh) the same image meets
# Slurm 24.11's PMIx 5 server.
set -uo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
HARNESS_NODE_COUNT=1 guest_cluster_start 300 JobNetwork=vxlan JobNetworkUnderlay=eth0
harness_vmconf_set ShutdownTimeout 60
harness_vmconf_set SharedDirs "$HARNESS_WORK"
work=$HARNESS_WORK/$user
mkdir -p "$work"
chown "$user:" "$work"

# tests/run-all.sh builds it while the unit tests run; found up to date here.
# HARNESS_CLOUD_TRIXIE_DIR: made beforehand (tests/platform/run.sh binds the
# host's in).
t0=$(date +%s)
if [ -n "${HARNESS_CLOUD_TRIXIE_DIR:-}" ]; then
	cloud=$HARNESS_CLOUD_TRIXIE_DIR/debian13.qcow2
	[ -f "$cloud" ] || harness_die "HARNESS_CLOUD_TRIXIE_DIR: no $cloud"
else
	cloud=$("$HARNESS_REPO/tests/guest/build-cloud.sh" --suite trixie \
		2>"$HARNESS_DIR/log/cloud-trixie-build.log") || {
		tail -20 "$HARNESS_DIR/log/cloud-trixie-build.log" >&2
		harness_die "tests/guest/build-cloud.sh --suite trixie failed"
	}
fi
echo "# trixie image: $(($(date +%s) - t0)) s to build or check"
image=$HARNESS_IMAGES/debian13.qcow2
cp "$cloud" "$image"
chmod 0644 "$image"
harness_add_catalog_image debian13 "$image" qcow2

job=$(harness_as_user "$user" sbatch --parsable -n2 -c1 --mem=1G \
	--vm-image=debian13 --wrap 'sleep 900')
harness_wait 360 "job $job's guest (debian13)" \
	grep -q "job $job: guest ready" "$HARNESS_VM_LOG" || {
	grep "job $job" "$HARNESS_VM_LOG" | tail -n 30 >&2
	harness_die "no guest for job $job (debian13)"
}
step() { # srun-args...
	harness_as_user "$user" timeout 180 srun --jobid="$job" --overlap -O \
		--chdir="$work" "$@"
}

cp "$HARNESS_REPO/tests/guest/files/mpi_allreduce.c" "$work/"
chown "$user:" "$work/mpi_allreduce.c"
out=$(step -n1 sh -c '. /etc/os-release; echo "VERSION_ID=$VERSION_ID"; mpicc -O2 -o svm-ompi5-allreduce mpi_allreduce.c && echo built' 2>&1) || true
if grep -qx 'VERSION_ID=13' <<<"$out" && grep -qx built <<<"$out"; then
	ok "the job compiled the MPI program in the Debian 13 guest with its mpicc"
else
	fail "compiling in the guest: $out"
fi

out=$(step --mpi=pmix -n2 ./svm-ompi5-allreduce 2>&1) || true
ghost=$(step -n1 hostname 2>/dev/null) || true
if [ -n "$ghost" ] && [ "$(guest_mpi_ranks_ok <<<"$out")" = "0@$ghost 1@$ghost " ] &&
	grep -q '^mpi: Open MPI v5' <<<"$out"; then
	ok "Open MPI 5 (PMIx 5 client) over slurmd $(slurmd -V | cut -d' ' -f2)'s PMIx server: ranks 0 and 1 on $ghost"
else
	fail "Open MPI 5 over PMIx in the trixie guest (guest '$ghost'):"
	sed 's/^/    /' <<<"$out"
fi

scancel "$job"
harness_wait 120 "job $job to end" bash -c "! squeue -h -j $job | grep -q ." || true
harness_wait 90 "job $job's epilog" bash -c "[ ! -e '$HARNESS_DIR/nodes/n1/vm/state/job-$job.0' ]" || true
guest_nothing_left "$job" n1
guest_node_up "the trixie guest's job"
[ "$failures" = 0 ]
