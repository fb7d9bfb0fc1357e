#!/bin/bash
# The test cluster itself, and the suite's hooks in it: srun and sbatch work,
# spank_vm.so's options reach the Prolog and Epilog as SPANK_VM_*, and a job
# without --vm-image leaves no trace, even on a node whose vm.conf is
# missing or broken. Prints the cost of the plugin on
# `srun true` (not asserted).
# cluster-timeout: 180
set -uo pipefail

. "$(dirname "$0")/harness.sh"

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

# job_wait ID SECONDS: until the job has ended and its node finished the
# epilog (no node COMPLETING).
job_done() {
	local st
	st=$(scontrol -o show job "$1" 2>/dev/null) || return 1
	# A failed prolog requeues the job held: that is an end too.
	case "$st" in *Reason=launch_failed* | *Reason=JobHeld*) ;;
	*JobState=PENDING* | *JobState=RUNNING* | *JobState=CONFIGURING* | *JobState=COMPLETING*) return 1 ;;
	esac
	[ -z "$(sinfo -h -N -t completing -o %N 2>/dev/null)" ]
}

# A drained node (failed prolog or epilog): say why, and resume it so the
# remaining checks still run.
undrain() {
	local drained
	drained=$(sinfo -h -N -t drain,drained,draining -o '%N' 2>/dev/null | sort -u | paste -sd,)
	[ -n "$drained" ] || return 0
	fail "node(s) $drained drained: $(sinfo -h -R -o '%n: %E' 2>/dev/null | tr '\n' ' ')"$'\n'"slurmd says: $(grep -h -A3 'prolog failed\|epilog failed' "$HARNESS_DIR"/log/slurmd-*.log | tail -n 8)"
	scontrol update nodename="$drained" state=resume >/dev/null 2>&1 || true
}
job_wait() {
	harness_wait "$2" "job $1 to end" job_done "$1"
}
job_field() { # job_field ID Key
	scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# submit USER ARGS...: sbatch --parsable as USER; the job id, or a failure
# that says what sbatch said.
submit() {
	local user=$1 out rc
	shift
	out=$(harness_as_user "$user" timeout 30 sbatch --parsable "$@" 2>&1)
	rc=$?
	if [ "$rc" != 0 ] || ! [[ "$out" =~ ^[0-9]+$ ]]; then
		case "$out" in
		*atalog*)
			echo "sbatch $* was refused with an error about the image catalog ($HARNESS_CATALOG):" >&2 ;;
		*)
			echo "sbatch $* failed (rc $rc):" >&2 ;;
		esac
		printf '    %s\n' "$out" >&2
		return 1
	fi
	echo "$out"
}

harness_ensure_test_users
harness_add_catalog_image testimg
harness_start
echo "cluster start: ${HARNESS_START_SECONDS}s"

# 1. srun runs on this host.
out=$(timeout 30 srun -N1 hostname 2>&1)
if [ "$out" = "$(hostname)" ]; then
	ok "srun hostname -> $out"
else
	fail "srun hostname printed '$out', expected '$(hostname)'"
fi

# 2. A batch job as a normal user: completes, exit 0, its output is there.
marker="basic-$$-$RANDOM"
if id=$(submit svmtest -o "$HARNESS_WORK/svmtest/plain-%j.out" --wrap "echo $marker; id -un"); then
	if ! job_wait "$id" 60; then
		fail "plain job $id did not end: $(scontrol -o show job "$id" 2>&1)"
	else
		state=$(job_field "$id" JobState) code=$(job_field "$id" ExitCode)
		[ "$state" = COMPLETED ] && [ "$code" = 0:0 ] &&
			ok "plain job $id: $state, exit $code" ||
			fail "plain job $id ended $state with exit $code"
		outf=$HARNESS_WORK/svmtest/plain-$id.out
		if [ "$(cat "$outf" 2>/dev/null)" = "$marker"$'\n'"svmtest" ]; then
			ok "plain job $id output: $marker, ran as svmtest"
		else
			fail "plain job $id output $outf: '$(cat "$outf" 2>&1)', expected '$marker' and 'svmtest'"
		fi
		# No --vm-image: the prolog and epilog say nothing about it.
		if grep -q "job $id:" "$HARNESS_VM_LOG" 2>/dev/null; then
			fail "job $id had no --vm-image but left lines in $HARNESS_VM_LOG:"$'\n'"$(grep "job $id:" "$HARNESS_VM_LOG")"
		else
			ok "plain job $id left nothing in the slurm-vm log"
		fi
	fi
else
	fail "plain sbatch as svmtest"
fi

# 3. --vm-image and --vm-cpus reach the Prolog and the Epilog.
if id=$(submit svmtest --vm-image=testimg --vm-cpus=1 -o /dev/null --wrap true); then
	want_pro="job $id: VM requested: SPANK_VM_IMAGE=testimg SPANK_VM_CPUS=1"
	want_epi="job $id: VM job ended"
	job_wait "$id" 60 || fail "VM job $id did not end: $(scontrol -o show job "$id" 2>&1)"
	# The epilog's line may follow the job's end by a moment.
	harness_wait 20 "the epilog's line" grep -qF "$want_epi" "$HARNESS_VM_LOG"
	if grep -qF "$want_pro" "$HARNESS_VM_LOG" 2>/dev/null; then
		ok "prolog: $(grep -F "$want_pro" "$HARNESS_VM_LOG" | sed 's/.*info: //')"
	else
		fail "no '$want_pro' in $HARNESS_VM_LOG; it has:"$'\n'"$(cat "$HARNESS_VM_LOG" 2>&1)"$'\n'"slurmd log: $(grep -iE "prolog|job $id" "$HARNESS_DIR"/log/slurmd-*.log | tail -n 10)"
	fi
	if grep -qF "$want_epi" "$HARNESS_VM_LOG" 2>/dev/null; then
		ok "epilog: $(grep -F "$want_epi" "$HARNESS_VM_LOG" | sed 's/.*info: //')"
	else
		fail "no '$want_epi' in $HARNESS_VM_LOG; it has:"$'\n'"$(cat "$HARNESS_VM_LOG" 2>&1)"
	fi
	state=$(job_field "$id" JobState)
	[ "$state" = COMPLETED ] && ok "VM job $id: $state" ||
		fail "VM job $id ended $state (reason $(job_field "$id" Reason))"
	scancel "$id" 2>/dev/null
	undrain
else
	fail "sbatch --vm-image=testimg as svmtest"
fi

# 4. The options are in sbatch's and srun's help.
for cmd in sbatch srun; do
	# (Not piped into grep -q: with pipefail, SIGPIPE would fail it.)
	help=$(timeout 20 "$cmd" --help 2>&1)
	if grep -q -- '--vm-image' <<<"$help"; then
		ok "$cmd --help lists --vm-image"
	else
		fail "$cmd --help does not list --vm-image"
	fi
done

# 5. What the plugin costs `srun true` (printed, not asserted).
srun_true_times() { # srun_true_times N -> "mean min max" seconds
	local i t0 all=""
	for i in $(seq 1 "$1"); do
		t0=$(harness_now)
		timeout 20 srun -N1 true >/dev/null 2>&1 || {
			echo "srun true failed"
			return 1
		}
		all+="$(harness_elapsed "$t0") "
	done
	echo "$all" | tr ' ' '\n' | grep . | awk '{ s += $1; if (NR == 1 || $1 < mn) mn = $1; if ($1 > mx) mx = $1 }
		END { printf "mean %.3fs min %.3fs max %.3fs (n=%d)", s / NR, mn, mx, NR }'
}
timeout 20 srun -N1 true >/dev/null 2>&1 # warm up
with=$(srun_true_times 5)
harness_plugstack_disable
without=$(srun_true_times 5)
harness_plugstack_enable
echo "srun true with spank_vm.so:    $with"
echo "srun true without spank_vm.so: $without"
case "$with$without" in *failed*) fail "srun true failed while timing" ;; esac

# 6. Two nodes on this host (the harness's multi-node mode): each slurmd
# has its own name, hostname (UTS namespace), 127.x address and port; a VM
# job on both runs the prolog and epilog on each.
{
	# Keep the first cluster's directory when something failed there.
	[ "$failures" = 0 ] || HARNESS_FAILED=1
	harness_stop
	harness_add_node n1 127.0.0.11
	harness_add_node n2 127.0.0.12
	harness_node_isolate n1
	harness_node_isolate n2
	harness_add_catalog_image testimg
	harness_start
	echo "two-node cluster start: ${HARNESS_START_SECONDS}s"
	out=$(timeout 30 srun -N2 -l hostname 2>&1 | sort)
	if [ "$out" = "0: n1"$'\n'"1: n2" ]; then
		ok "srun -N2 hostname -> n1, n2"
	else
		fail "srun -N2 -l hostname printed '$out', expected '0: n1' and '1: n2'"
	fi
	if id=$(submit svmtest -N2 --vm-image=testimg -o /dev/null --wrap true); then
		job_wait "$id" 60 || fail "two-node VM job $id did not end"
		harness_wait 20 "both epilogs" sh -c \
			"[ \$(grep -c 'job $id: VM job ended' '$HARNESS_VM_LOG') = 2 ]"
		n_pro=$(grep -c "job $id: VM requested: SPANK_VM_IMAGE=testimg" "$HARNESS_VM_LOG")
		n_epi=$(grep -c "job $id: VM job ended" "$HARNESS_VM_LOG")
		if [ "$n_pro" = 2 ] && [ "$n_epi" = 2 ]; then
			ok "two-node VM job $id: prolog and epilog ran on both nodes"
		else
			fail "two-node VM job $id: $n_pro prolog and $n_epi epilog lines, expected 2 and 2:"$'\n'"$(cat "$HARNESS_VM_LOG")"
		fi
	else
		fail "sbatch -N2 --vm-image=testimg as svmtest"
	fi
	undrain

	# 7. Node n1's vm.conf is missing, then broken (a rolling install, a
	# typo): plain jobs do not notice, srun's steps and the prolog and
	# epilog alike; a VM job's step there fails and says why.
	n1conf=$HARNESS_DIR/nodes/n1/etc/vm.conf
	cp -p "$n1conf" "$n1conf.good"
	for breakage in missing broken; do
		case $breakage in
		missing) rm -f "$n1conf" ;;
		broken) printf 'NoSuchKey=1\n' >"$n1conf" ;;
		esac
		out=$(harness_as_user svmtest timeout 30 srun -N2 -l true 2>&1)
		rc=$?
		if [ "$rc" = 0 ] && [ -z "$out" ]; then
			ok "vm.conf $breakage on n1: srun -N2 true as svmtest, exit 0, nothing said"
		else
			fail "vm.conf $breakage on n1: srun -N2 true as svmtest: exit $rc: $out"
		fi
		if id=$(submit svmtest -N2 -o "$HARNESS_WORK/svmtest/conf-%j.out" --wrap "srun -N2 -l echo hi"); then
			job_wait "$id" 60 || fail "plain job $id did not end"
			state=$(job_field "$id" JobState)
			outf=$HARNESS_WORK/svmtest/conf-$id.out
			if [ "$state" = COMPLETED ] && [ "$(sort "$outf")" = "0: hi"$'\n'"1: hi" ]; then
				ok "vm.conf $breakage on n1: plain sbatch -N2 job $id COMPLETED"
			else
				fail "vm.conf $breakage on n1: plain job $id ended $state: $(cat "$outf" 2>&1)"
			fi
		fi
		undrain
	done
	cp -p "$n1conf.good" "$n1conf"
	# The VM job's prologs ran with a good vm.conf; its step, started
	# from the submit side (whose vm.conf is good), finds n1's broken. The
	# epilog needs it again.
	done_mark=$HARNESS_WORK/svmtest/done-$$
	if id=$(submit svmtest -N2 --vm-image=testimg -o /dev/null \
		--wrap "while [ ! -e $done_mark ]; do sleep 0.2; done"); then
		# RUNNING comes before the prologs end: break n1's vm.conf only
		# after both have read it.
		harness_wait 60 "job $id's prologs on n1 and n2" sh -c \
			"[ \$(grep -c 'job $id: prolog done in .*: ok' '$HARNESS_VM_LOG') = 2 ]"
		printf 'NoSuchKey=1\n' >"$n1conf"
		out=$(harness_as_user svmtest timeout 30 srun --jobid="$id" --overlap \
			--vm-image=testimg -N2 -l true 2>&1)
		rc=$?
		cp -p "$n1conf.good" "$n1conf"
		touch "$done_mark"
		job_wait "$id" 60 || fail "VM job $id did not end"
		rm -f "$done_mark"
		if [ "$rc" != 0 ] &&
			grep -q "this node cannot run the steps of VM job $id: its slurm-vm configuration is unusable" <<<"$out" &&
			grep -q "NoSuchKey" <<<"$out"; then
			ok "vm.conf broken on n1: VM job $id's step fails: $(grep -m1 'cannot run the steps' <<<"$out")"
		else
			fail "vm.conf broken on n1: VM job $id's step did not fail with the reason (exit $rc): $out"
		fi
	fi
	undrain
}

if [ "$failures" != 0 ]; then
	echo "$failures check(s) failed; cluster directory kept: $HARNESS_DIR" >&2
	exit 1
fi
echo "all checks passed"
