#!/bin/bash
# cluster-timeout: 480
# The batch script in the guest (sbatch --vm-batch, issue 16): on the job's
# first node the script itself runs inside the guest, as the job user, in
# the job's working directory (SharedDirs), with its arguments, the job's
# environment (SLURM_JOB_NODELIST), stdin from /dev/null, stdout and stderr
# in the job's --output file as Slurm writes it, and its exit status as the
# job's (ExitCode=3:0). From inside the guest, `scontrol show hostnames`,
# `srun` (a step's output and exit status, a variable the script exported)
# and MPI (`srun --mpi=pmi2 -n2`) work as on the host. vm.conf BatchInVM=yes does the same for every VM job
# of the site; scancel, and the time limit (-t 1), end a script in the
# guest with SIGTERM (its trap runs there) and nothing is left. --vm-batch
# is refused by srun and salloc, and without --vm-image, with a message
# that says what to do. It runs as a centre's cluster where slurmdbd and
# MariaDB are installed (guest_centre_config): the guest is then the
# extern step's, and the job's SIGTERM must still leave it running for
# the script's trap.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
guest_centre_config
guest_cluster_start 240
harness_vmconf_set SharedDirs "$HARNESS_WORK"
work=$HARNESS_WORK/$user

# --- refusals, before any job exists
out=$(harness_as_user "$user" timeout 30 srun --vm-image=testguest --vm-batch true 2>&1) &&
	fail "srun --vm-batch ran: $out" ||
	{ grep -q -- "--vm-batch is an sbatch option" <<<"$out" &&
		ok "srun --vm-batch refused: $(grep -m1 -- '--vm-batch' <<<"$out")" ||
		fail "srun --vm-batch: $out"; }
out=$(harness_as_user "$user" timeout 30 salloc --vm-image=testguest --vm-batch true 2>&1) &&
	fail "salloc --vm-batch ran: $out" ||
	{ grep -q -- "--vm-batch is an sbatch option" <<<"$out" &&
		ok "salloc --vm-batch refused" || fail "salloc --vm-batch: $out"; }
out=$(harness_as_user "$user" sbatch --vm-batch --wrap true 2>&1) &&
	fail "sbatch --vm-batch without --vm-image was submitted: $out" ||
	{ grep -q -- "--vm-batch need --vm-image" <<<"$out" &&
		ok "sbatch --vm-batch without --vm-image refused" ||
		fail "sbatch --vm-batch without --vm-image: $out"; }

no_guest() { [ -z "$(guest_leftovers "$1")" ]; }
job_end() { # job_end JOB [SECONDS]: waits for it, prints "STATE EXITCODE"
	harness_wait "${2:-120}" "job $1 to end" sh -c \
		"squeue -h -j $1 -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL'" ||
		true
	harness_wait 60 "job $1's guest to be gone" no_guest "$1" || true
	scontrol -o show job "$1" | sed -n 's/.* JobState=\([A-Z_]*\) .* ExitCode=\([0-9:]*\) .*/\1 \2/p'
}

# --- a time limit, and scancel (with the site's default), side by side
guest_kernel=$(guest_kernel_version)
cat >"$work/term.sh" <<'EOF'
#!/bin/sh
trap 'echo "SIGTERM in $(uname -r)" >"term-$SLURM_JOB_ID.txt"; exit 143' TERM
echo started >"started-$SLURM_JOB_ID.txt"
while :; do sleep 1; done
EOF
chown "$user:" "$work/term.sh"
limited=$(harness_as_user "$user" sbatch --parsable -c1 -t 1 --vm-image=testguest \
	--vm-batch -o /dev/null term.sh) || harness_die "sbatch --vm-batch -t 1 failed"
harness_vmconf_set BatchInVM yes
id=$(harness_as_user "$user" sbatch --parsable -c1 --vm-image=testguest \
	-o /dev/null term.sh) || harness_die "sbatch (BatchInVM=yes) failed"
if harness_wait 120 "job $id's script to start" test -e "$work/started-$id.txt"; then
	scancel "$id"
	end=$(job_end "$id")
	got=$(cat "$work/term-$id.txt" 2>&1) || true
	[ "$got" = "SIGTERM in $guest_kernel" ] && [ "${end%% *}" = CANCELLED ] &&
		ok "BatchInVM=yes: the script ran in the guest; scancel's SIGTERM reached its trap there ($end)" ||
		fail "scancel of job $id: ended '$end', the trap wrote '$got'"
	guest_nothing_left "$id"
else
	fail "job $id's script never started: $(scontrol -o show job "$id")"
	scancel "$id"
fi
harness_vmconf_set BatchInVM no
# Slurm ends a job at its time limit as scancel does (SIGCONT and SIGTERM,
# SIGKILL KillWait later): the trap in the guest runs, the job is TIMEOUT.
end=$(job_end "$limited" 240)
got=$(cat "$work/term-$limited.txt" 2>&1) || true
[ "$got" = "SIGTERM in $guest_kernel" ] && [ "${end%% *}" = TIMEOUT ] &&
	ok "--vm-batch -t 1: at the time limit SIGTERM reached the script's trap in the guest ($end)" ||
	fail "time limit of job $limited: ended '$end', the trap wrote '$got'"
guest_nothing_left "$limited"

# --- a script with arguments, output and an exit code of its own
cat >"$work/batch.sh" <<'EOF'
#!/bin/sh
echo "kernel $(uname -r)"
echo "args $#: $1|$2"
echo "nodes $SLURM_JOB_NODELIST job $SLURM_JOB_ID"
echo "hostnames $(scontrol show hostnames "$SLURM_JOB_NODELIST")"
echo "in $(pwd)"
echo "stdin $(wc -c)"
export SVM_PROBE=42
srun -n1 sh -c 'echo "step kernel $(uname -r) in $(pwd)"; echo "step probe ${SVM_PROBE:-unset}"'
srun -n1 false
echo "srun false: $?"
srun --mpi=pmi2 -n2 svm-mpi-allreduce
echo "mpi step: $?"
echo "written in the guest" >"batch-$SLURM_JOB_ID.txt"
echo "to stderr" >&2
exit 3
EOF
chown "$user:" "$work/batch.sh"
id=$(harness_as_user "$user" sbatch --parsable -n2 -c1 --vm-image=testguest --vm-batch \
	-o "$work/batch-%j.out" batch.sh first "second arg") || harness_die "sbatch --vm-batch failed"
end=$(job_end "$id")
outf=$work/batch-$id.out
got=$(cat "$outf" 2>&1) || true
[ "$end" = "FAILED 3:0" ] && ok "job $id: the script's exit 3 is the job's: $end" ||
	fail "job $id ended '$end', want 'FAILED 3:0'; output: $got"
if [ -n "$guest_kernel" ] && grep -qx "kernel $guest_kernel" <<<"$got"; then
	ok "the batch script ran in the guest (kernel $guest_kernel; the host's is $(uname -r))"
else
	fail "the batch script's kernel: $(grep '^kernel' <<<"$got") (the guest's is '$guest_kernel')"
fi
for want in "args 2: first|second arg" "nodes $HARNESS_NODELIST job $id" "in $work" \
	"stdin 0" "to stderr" "hostnames $HARNESS_NODELIST" \
	"step kernel $guest_kernel in $work" "step probe 42" "srun false: 1" "mpi step: 0"; do
	grep -qxF "$want" <<<"$got" && ok "job $id's output: $want" ||
		fail "job $id's output lacks '$want': $got"
done
ranks=$(guest_mpi_ranks_ok <<<"$got")
[ "$ranks" = "0@$HARNESS_NODELIST 1@$HARNESS_NODELIST " ] &&
	ok "srun --mpi=pmi2 -n2 from the script in the guest: both MPICH ranks' checks right" ||
	fail "MPI from the script in the guest: ranks '$ranks'"
f=$work/batch-$id.txt
[ "$(cat "$f" 2>/dev/null)" = "written in the guest" ] && [ "$(stat -c %U "$f")" = "$user" ] &&
	ok "what the script wrote in the job's directory is on the host, the user's" ||
	fail "$f: $(ls -l "$f" 2>&1)"
guest_nothing_left "$id"

guest_node_up

[ "$failures" = 0 ]
