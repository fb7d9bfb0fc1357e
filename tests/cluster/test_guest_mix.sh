#!/bin/bash
# cluster-timeout: 480
# A guest of a newer Debian release: the Debian 13 cloud image
# (tests/guest/build-cloud.sh --suite trixie: Open MPI 5, PMIx 5, netplan
# with systemd-networkd) on this Slurm 22.05 node, whose mpi/pmix plugin
# serves PMIx 4.2. One job, a guest on each of two nodes, the shares (the
# work directory and /home) on: the job script of test_shares.sh runs
# unchanged, its two tasks writing $PWD/out.txt with the input from $HOME;
# the program is compiled in the guest with its own mpicc (the host's is
# Debian 12's Open MPI 4, and a user builds for the image they run), then
# `srun --mpi=pmix -n2` runs it across both guests, the guests' PMIx 5
# clients against the host's PMIx 4 server through the agent's relay:
# allreduce and ring ok for both ranks, and the image's Open MPI major. On a platform (tests/platform/run.sh) the image is that
# platform's own stock one (trixie: Debian 13 on Slurm 24.11's PMIx 5;
# forky: forky's on 26.05's PMIx 7, Open MPI 6). Where a Rust virtiofsd is
# installed (the platforms) the image is the one with Debian's cloud kernel
# (debian13-cloud, forky-cloud: no 9p, as RHEL-family kernels), its share
# over virtiofs (issue 28): the program is compiled and run from it.
set -uo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
platform=${SVM_PLATFORM:-bookworm}
suite=trixie name=debian13 ompi=5
[ "$platform" != forky ] || suite=forky name=forky ompi=6
transport=9p
if harness_rust_virtiofsd; then
	transport=virtiofs name=$name-cloud
fi
# Two nodes, a guest on each: the job script of test_shares.sh and Open MPI
# across both.
nodes=2
HARNESS_NODE_COUNT=$nodes guest_cluster_start 300 JobNetwork=vxlan JobNetworkUnderlay=eth0
harness_vmconf_set ShutdownTimeout 60
harness_vmconf_set SharedDirs "$HARNESS_WORK,/home"
home=$(getent passwd "$user" | cut -d: -f6)
case "$home" in
/home/*) ;;
*) harness_die "$user's home $home is not under /home" ;;
esac
harness_vmconf_set SharedDirTransport "$transport"
work=$HARNESS_WORK/$user
mkdir -p "$work"
chown "$user:" "$work"

# tests/run-all.sh builds it while the unit tests run; found up to date here.
# HARNESS_CLOUD_TRIXIE_DIR, HARNESS_CLOUD_FORKY_DIR: made beforehand
# (tests/platform/run.sh binds the host's in).
t0=$(date +%s)
dir_var=HARNESS_CLOUD_${suite^^}_DIR
if [ -n "${!dir_var:-}" ]; then
	cloud=${!dir_var}/$name.qcow2
	[ -f "$cloud" ] || harness_die "$dir_var: no $cloud"
else
	cloud=$("$HARNESS_REPO/tests/guest/build-cloud.sh" --suite "$suite" \
		2>"$HARNESS_DIR/log/cloud-$suite-build.log") || {
		tail -20 "$HARNESS_DIR/log/cloud-$suite-build.log" >&2
		harness_die "tests/guest/build-cloud.sh --suite $suite failed"
	}
	cloud=$(dirname "$cloud")/$name.qcow2 # the generic or the cloud kernel's
fi
echo "# $suite image: $(($(date +%s) - t0)) s to build or check"
image=$HARNESS_IMAGES/$name.qcow2
cp "$cloud" "$image"
chmod 0644 "$image"
harness_add_catalog_image "$name" "$image" qcow2

# The job script of test_shares.sh, unchanged: its two tasks, one in each
# guest, write $PWD/out.txt on the share with the input from $HOME (the
# share /home).
outside=/var/tmp/svm-outside-$$
echo "input-$$" >"$home/shares-input.txt"
chown "$user:" "$home/shares-input.txt"
rm -f "$work/out.txt" "$work/step.done"
hold=$(guest_hold_core "$user" n2)
job=$(guest_shares_script "$outside" | harness_as_user "$user" sbatch --parsable \
	-N"$nodes" -n2 -c1 --mem=1G --vm-image="$name" -o "$work/job-%j.out")
harness_wait 420 "job $job's guests ($name)" sh -c \
	"[ \$(grep -c 'job $job: guest ready' '$HARNESS_VM_LOG') -ge $nodes ]" || {
	grep "job $job" "$HARNESS_VM_LOG" | tail -n 30 >&2
	harness_die "no guests for job $job ($name)"
}
scancel "$hold"
harness_wait 120 "job $job's first step" test -s "$work/step.done" ||
	harness_die "job $job's first step did not end: $(tail -5 "$work/job-$job.out" 2>/dev/null)"
got=$(sort "$work/out.txt" 2>/dev/null || true)
kernel=$(sed -n '1s/^task 0 \([^ ]*\) .*/\1/p' <<<"$got")
want=$(printf 'task 0 %s input-%s\ntask 1 %s input-%s' "$kernel" $$ "$kernel" $$)
if [ "$(cat "$work/step.done")" = "step exit 0" ] && [ -n "$kernel" ] && [ "$got" = "$want" ] &&
	[ "$(stat -c %U "$work/out.txt")" = "$user" ]; then
	ok "test_shares' job script across $nodes $suite guests over $transport: \$PWD/out.txt, $user's, with the input from \$HOME: $(tr '\n' '|' <<<"$got")"
else
	fail "test_shares' job script across $nodes $suite guests over $transport: out.txt '$got', $(cat "$work/step.done" 2>&1), $(ls -l "$work/out.txt" 2>&1)"
	sed 's/^/    /' "$work/job-$job.out" 2>/dev/null
fi
rm -f "$home/shares-input.txt"
step() { # srun-args...
	harness_as_user "$user" timeout 180 srun --jobid="$job" --overlap -O \
		--chdir="$work" "$@"
}

cp "$HARNESS_REPO/tests/guest/files/mpi_allreduce.c" "$work/"
chown "$user:" "$work/mpi_allreduce.c"
out=$(step -n1 sh -c '. /etc/os-release; echo "ID=$VERSION_CODENAME"; echo "kernel $(uname -r)"; modinfo 9p >/dev/null 2>&1 && echo "9p yes" || echo "9p no"; echo "mount $(grep " '"$HARNESS_WORK"' " /proc/mounts | cut -d" " -f3)"; mpicc -O2 -o svm-ompi-allreduce mpi_allreduce.c && echo built' 2>&1) || true
if grep -qx "ID=$suite" <<<"$out" && grep -qx built <<<"$out" &&
	grep -qx "mount $transport" <<<"$out"; then
	ok "the job compiled the MPI program in the $suite guest ($(grep '^kernel ' <<<"$out")) with its mpicc, in $work, on the share $HARNESS_WORK over $transport"
else
	fail "compiling in the $suite guest ($name), in $work, the share $HARNESS_WORK over $transport: $out"
fi
if [ "$transport" = virtiofs ]; then
	# The cloud kernel has no 9p: virtiofs is what gives it the share.
	grep -q '^kernel .*-cloud-amd64$' <<<"$out" && grep -qx "9p no" <<<"$out" &&
		ok "the guest runs Debian's cloud kernel, which has no 9p" ||
		fail "the $name guest's kernel and 9p: $out"
fi

guest_ompi_allreduce "$nodes" "$ompi" \
	"Open MPI $ompi over slurmd $(slurmd -V | cut -d' ' -f2)'s PMIx server in $nodes $suite guest(s)" step

scancel "$job"
harness_wait 120 "job $job to end" bash -c "! squeue -h -j $job | grep -q ." || true
for n in $(seq "$nodes"); do
	harness_wait 90 "job $job's epilog on n$n" bash -c "[ ! -e '$HARNESS_DIR/nodes/n$n/vm/state/job-$job.0' ]" || true
	guest_nothing_left "$job" "n$n"
done
guest_node_up "the $suite guests' job"
[ "$failures" = 0 ]
