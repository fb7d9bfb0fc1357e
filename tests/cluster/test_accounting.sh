#!/bin/bash
# cluster-timeout: 900
# The guest is the job's (issue 29), on a cluster run as a centre's
# (HARNESS_ACCOUNTING=1: proctrack/cgroup, task/cgroup, jobacct_gather/cgroup,
# slurmdbd on MariaDB). The extern step adopts the guest's qemu: sstat shows
# the guest computing while it runs; sacct shows its CPU time (TotalCPU) and
# the memory it touched (MaxRSS) after, beside the same task run bare; qemu
# is in the job's cgroup of every controller, its vCPU still pinned to the
# job's CPU; a signal to the whole job (USR1, and TERM, which the job's end
# sends too) leaves the guest running. A guest
# that goes past the job's memory limit is killed by the
# job's cgroup (JOBID.extern OUT_OF_MEMORY, the task told why) and the job
# ends OUT_OF_MEMORY, as a bare job whose batch script goes past its memory
# does; the node stays in service. Nothing of any job is left in any cgroup after its epilog.
#
# The job's memory limit is half its --mem here (cgroup.conf
# AllowedRAMSpace=50), so that a guest of the job's size can exceed it.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

for prog in slurmdbd mariadbd mariadb-install-db; do
	command -v "$prog" >/dev/null || { echo "SKIP: no $prog (scripts/install-deps.sh installs slurmdbd and mariadb-server)"; exit 77; }
done
export HARNESS_ACCOUNTING=1
harness_config_hook() {
	echo "AllowedRAMSpace=50" >>"$HARNESS_ETC/cgroup.conf"
}
user=svmtest
guest_cluster_start 240
harness_vmconf_set SharedDirs "$HARNESS_WORK"
work=$HARNESS_WORK/$user

# --- helpers

# sacct's and sstat's times ([D-]HH:MM:SS, MM:SS.mmm) as whole seconds.
acct_seconds() {
	local t=${1%%.*} d=0 h=0 m=0 s=0
	case "$t" in *-*) d=${t%%-*}; t=${t#*-} ;; esac
	IFS=: read -r a b c <<<"$t"
	if [ -n "$c" ]; then h=$a m=$b s=$c; elif [ -n "$b" ]; then m=$a s=$b; else s=$a; fi
	echo $((10#${d:-0} * 86400 + 10#${h:-0} * 3600 + 10#${m:-0} * 60 + 10#${s:-0}))
}
# sacct's and sstat's sizes (1234K, 5.5M, 2G) as KiB.
acct_kib() {
	awk -v v="$1" 'BEGIN { n = v + 0; u = substr(v, length(v));
		if (u == "M") n *= 1024; else if (u == "G") n *= 1048576;
		else if (u != "K") n /= 1024; printf "%d\n", n }'
}
# sacct_field JOB.STEP FIELD: the step's FIELD, once slurmdbd has its end.
sacct_field() {
	local out
	harness_wait 60 "slurmdbd to have $1's $2" sh -c \
		"sacct -n -P -j $1 -o State | grep -qvE '^(RUNNING|PENDING|)$'" || true
	out=$(sacct -n -P -j "$1" -o "$2" | head -1)
	echo "$out"
}

# The CPU seconds process $1 used so far (utime + stime, all its threads),
# to the hundredth.
proc_cpu_seconds() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}

# The CPU seconds process $1 had used when it ended (its last reading, every
# 0.2 s, for at most $2 seconds).
proc_cpu_at_end() {
	local last=0 now end=$(($(date +%s) + $2))
	while [ -e "/proc/$1/stat" ] && [ "$(date +%s)" -lt "$end" ]; do
		now=$(proc_cpu_seconds "$1")
		[ "$now" = 0 ] || last=$now
		sleep 0.2
	done
	echo "$last"
}

# The guest's qemu of job $1 (libvirt's pid file, in the node's /run/libvirt).
vm_qemu_pid() {
	pgrep -f -- "-name guest=slurmvm-job-$1\." | head -1
}

# A task that holds 400 MiB for 8 s, then computes for 35 s, in the guest
# or on the host alike (busybox or coreutils). The hold is idle (a guest's
# vCPU halts), the 35 s after it leave sstat time to see 20 s of them
# while the job runs, as sacct must after it: 22.05 and 24.11
# count qemu's CPU from its start, its boot with it, 26.05 did count only
# what came after the adoption in one run.
write_burn() {
	cat >"$work/burn.sh" <<'EOF'
#!/bin/sh
touch "started-$SLURM_JOB_ID"
dd if=/dev/zero bs=400M count=1 2>/dev/null | (sleep 8; cat >/dev/null)
end=$(( $(date +%s) + ${1:-35} ))
while [ "$(date +%s)" -lt "$end" ]; do :; done
echo "burned on $(uname -r)"
EOF
	chmod 0755 "$work/burn.sh"
	chown "$user:" "$work/burn.sh"
}

# The VM job's TotalCPU (JOB.extern, the guest's) against what its CPUs
# could give and against what qemu used since the extern step adopted it
# (its CPU then is in slurm-vm-adopt's log line): sacct counted the guest
# once per adopted process, 3.4 times the job's one CPU (issue #41).
# Sets vm_totalcpu to the TotalCPU in seconds.
vm_totalcpu=
vm_cpu_checks() { # vm_cpu_checks JOB QEMU-PID QEMU-CPU-AT-END
	local id=$1 qemu=$2 end=$3 at_adopt t elapsed ncpu limit used
	at_adopt=$(sed -n "s/.*job $id: the guest's [0-9]* processes are the extern step's.*qemu had used \([0-9.]*\) s of CPU.*/\1/p" \
		"$HARNESS_VM_LOG" | tail -1)
	t=$(sacct_field "$id.extern" TotalCPU)
	IFS='|' read -r elapsed ncpu < <(sacct -n -P -X -j "$id" -o ElapsedRaw,AllocCPUS)
	limit=$((elapsed * ncpu + 1))
	t=$(acct_seconds "$t")
	used=$(awk -v a="${at_adopt:-0}" -v e="$end" 'BEGIN { printf "%.0f", e - a }')
	echo "job $id: TotalCPU ${t}s, Elapsed ${elapsed}s x $ncpu CPU; qemu used ${used}s (${at_adopt:-?} at adoption, $end at its end)"
	[ -n "$at_adopt" ] && [ "$t" -le "$limit" ] &&
		ok "sacct: job $id's guest TotalCPU ${t}s <= Elapsed x AllocCPUS ${elapsed}s x $ncpu (+1)" ||
		fail "sacct: job $id's guest TotalCPU ${t}s > Elapsed x AllocCPUS ${elapsed}s x $ncpu (+1), or no adoption logged"
	awk -v t="$t" -v u="$used" 'BEGIN { d = t - u; if (d < 0) d = -d; exit !(u > 0 && d <= 0.15 * u + 1) }' &&
		ok "sacct: job $id's TotalCPU ${t}s is within 15 % of qemu's own ${used}s since its adoption" ||
		fail "sacct: job $id's TotalCPU ${t}s is not within 15 % of qemu's own ${used}s since its adoption"
	vm_totalcpu=$t
}

vm_burn_job() {
	local id bare qemu cg want="" cpu0 cpu_burn t_vm t_bare rss_vm rss_bare live ctl cpus vcpu pin t_job j left end t1 id2 qemu2 end2 t2
	write_burn
	id=$(harness_as_user "$user" sbatch --parsable -c1 --mem=2048 --vm-image=testguest \
		-o "$work/burn-%j.txt" --wrap "srun ./burn.sh") || harness_die "sbatch (VM burn) failed"
	if ! harness_wait 300 "job $id's task to start in the guest" test -e "$work/started-$id"; then
		fail "VM burn job $id never started: $(scontrol -o show job "$id")"
		return
	fi
	# qemu, with every thread, in the job's cgroups of each controller.
	qemu=$(vm_qemu_pid "$id")
	cpu0=$(proc_cpu_seconds "$qemu")
	for ctl in freezer memory cpuacct cpuset devices; do
		cg=$(awk -F: -v c="$ctl" '$2 == c { print $3 }' "/proc/$qemu/cgroup")
		case "$cg" in
		*/job_"$id"/step_extern*) ;;
		*) want="$want $ctl=$cg" ;;
		esac
	done
	[ -n "$qemu" ] && [ -z "$want" ] &&
		ok "job $id: qemu ($qemu) is in the job's extern step in freezer, memory, cpuacct, cpuset, devices" ||
		fail "job $id: qemu '$qemu' outside the job's cgroups:$want"
	# The vCPU keeps its 1:1 pin, on the job's CPU.
	cpus=$(scontrol -d show job "$id" | sed -n 's/.* CPU_IDs=\([^ ]*\) .*/\1/p' | head -1)
	vcpu=$(grep -l "^CPU 0/" /proc/"$qemu"/task/*/comm 2>/dev/null | head -1)
	pin=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "${vcpu%/comm}/status" 2>/dev/null)
	[ -n "$pin" ] && [ "$pin" = "$cpus" ] &&
		ok "job $id: vCPU 0 pinned to the job's CPU $cpus after the adoption" ||
		fail "job $id: vCPU 0 ($vcpu) allowed on '$pin', the job has CPU_IDs=$cpus"
	# sstat sees the guest while it runs: the extern step.
	harness_wait 90 "sstat to show job $id's guest computing 20 s" sh -c \
		"sstat -n -P -j $id.extern -o AveCPU | awk -F: '{ s = \$(NF-1) * 60 + \$NF } s >= 20 { ok = 1 } END { exit !ok }'" || true
	live=$(sstat -n -P -j "$id.extern" -o AveCPU,MaxRSS 2>&1)
	[ "$(acct_seconds "${live%%|*}")" -ge 20 ] &&
		[ "$(acct_kib "${live##*|}")" -ge $((300 * 1024)) ] &&
		ok "sstat -j $id.extern while the guest computes: AveCPU|MaxRSS $live" ||
		fail "sstat -j $id.extern while the guest computes: '$live'"
	harness_wait 240 "job $id's task to end" grep -q burned "$work/burn-$id.txt" || true
	cpu_burn=$(awk -v a="$(proc_cpu_seconds "$qemu")" -v b="$cpu0" 'BEGIN { printf "%.0f", a - b }')
	echo "job $id: qemu used $cpu_burn s of CPU while the task ran (/proc/$qemu/stat)"
	end=$(proc_cpu_at_end "$qemu" 240)
	harness_wait 240 "job $id to end" sh -c "! squeue -h -j $id | grep -q ." || true
	vm_cpu_checks "$id" "$qemu" "$end"
	t1=$vm_totalcpu
	# A job with less work counts less: the figure is the guest's.
	id2=$(harness_as_user "$user" sbatch --parsable -c1 --mem=2048 --vm-image=testguest \
		-o "$work/burn-%j.txt" --wrap "srun ./burn.sh 10") || harness_die "sbatch (VM burn 10 s) failed"
	harness_wait 300 "job $id2's task to start in the guest" test -e "$work/started-$id2" || true
	qemu2=$(vm_qemu_pid "$id2")
	end2=$(proc_cpu_at_end "${qemu2:-0}" 240)
	harness_wait 240 "job $id2 to end" sh -c "! squeue -h -j $id2 | grep -q ." || true
	vm_cpu_checks "$id2" "$qemu2" "$end2"
	t2=$vm_totalcpu
	[ -n "$t2" ] && [ -n "$t1" ] && [ "$((t1 - t2))" -ge 15 ] &&
		ok "sacct: a 10 s burn counts ${t2}s, the 35 s burn ${t1}s" ||
		fail "sacct: a 10 s burn counts '${t2}'s, the 35 s burn '${t1}'s: not the guests' own work"
	# The same task on the host, for comparison.
	bare=$(harness_as_user "$user" sbatch --parsable -c1 --mem=2048 \
		-o "$work/burn-%j.txt" --wrap "srun ./burn.sh") || harness_die "sbatch (bare burn) failed"
	harness_wait 120 "job $bare to end" sh -c "! squeue -h -j $bare | grep -q ." || true
	t_vm=$(sacct_field "$id.extern" TotalCPU)
	rss_vm=$(sacct_field "$id.extern" MaxRSS)
	t_bare=$(sacct_field "$bare.0" TotalCPU)
	rss_bare=$(sacct_field "$bare.0" MaxRSS)
	echo "sacct: VM job $id.extern TotalCPU $t_vm MaxRSS $rss_vm; bare job $bare.0 TotalCPU $t_bare MaxRSS $rss_bare"
	[ "$(acct_seconds "$t_vm")" -ge 20 ] &&
		ok "sacct: the VM job's guest computed $t_vm (>= 20 s), as the bare job's task did ($t_bare)" ||
		fail "sacct: the VM job's extern step has TotalCPU '$t_vm', the bare job's task '$t_bare'"
	[ "$(acct_kib "${rss_vm:-0}")" -ge $((300 * 1024)) ] &&
		ok "sacct: the VM job's MaxRSS $rss_vm holds the 400 MiB the guest touched (bare: $rss_bare)" ||
		fail "sacct: the VM job's MaxRSS '$rss_vm' < 300 MiB (bare: $rss_bare)"
	# The job's line sums its steps' (the extern one's too); -X would
	# show the allocation's own, which no step fills.
	t_job=$(sacct -n -P -j "$id" -o JobID,TotalCPU | awk -F'|' -v j="$id" '$1 == j { print $2 }')
	[ "$(acct_seconds "$t_job")" -ge 20 ] &&
		ok "sacct: job $id's TotalCPU $t_job counts its guest" ||
		fail "sacct: job $id's TotalCPU '$t_job'"
	for j in "$id" "$bare"; do
		left=$(harness_cgroup_leftovers "$j")
		[ -z "$left" ] && ok "job $j: nothing left in any cgroup" ||
			fail "job $j left cgroups: $left"
	done
	guest_nothing_left "$id"
}

vm_oom_job() {
	local id out st ext reason
	cat >"$work/hog.sh" <<'EOF'
#!/bin/sh
dd if=/dev/zero bs=700M count=1 2>/dev/null | (sleep 20; cat >/dev/null)
echo "survived on $(uname -r)"
EOF
	chmod 0755 "$work/hog.sh"
	chown "$user:" "$work/hog.sh"
	harness_vmconf_set MemOverhead 64
	id=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1024 --vm-image=testguest \
		-o "$work/hog-%j.txt" --wrap "srun ./hog.sh") || harness_die "sbatch (VM hog) failed"
	harness_wait 400 "job $id to end" sh -c "! squeue -h -j $id | grep -q ." || true
	harness_vmconf_set MemOverhead 512
	out=$(cat "$work/hog-$id.txt" 2>&1)
	st=$(sacct_field "$id" State)
	ext=$(sacct_field "$id.extern" State)
	reason=$(scontrol -o show job "$id" 2>/dev/null | grep -o 'Reason=[^ ]*' || true)
	# The extern step says OUT_OF_MEMORY, or CANCELLED when slurmctld's
	# end of the job overtook its report (seen on 24.11); the job's state
	# is what counts.
	[ "$st" = OUT_OF_MEMORY ] && { [ "$ext" = OUT_OF_MEMORY ] || [ "$ext" = CANCELLED ]; } &&
		ok "a guest past the job's memory limit: $id.extern $ext, the job $st ($reason), as the bare one" ||
		fail "guest past the job's memory limit: job $id $st, $id.extern $ext: $out"
	grep -q "the job's memory cgroup killed its qemu" <<<"$out" &&
		ok "the task says why: $(grep -m1 'memory cgroup' <<<"$out")" ||
		fail "job $id's output does not say the guest was killed for memory: $out"
	guest_node_up "after the guest's OOM kill"
	left=$(harness_cgroup_leftovers "$id")
	[ -z "$left" ] && ok "job $id: nothing left in any cgroup after the OOM kill" ||
		fail "job $id left cgroups: $left"
	guest_nothing_left "$id"
}

bare_oom_job() {
	local id st left
	id=$(harness_as_user "$user" sbatch --parsable -c1 --mem=128 -o /dev/null \
		--wrap "dd if=/dev/zero bs=256M count=1 of=/dev/null") ||
		harness_die "sbatch (bare hog) failed"
	harness_wait 120 "job $id to end" sh -c "! squeue -h -j $id | grep -q ." || true
	st=$(sacct_field "$id" State)
	[ "$st" = OUT_OF_MEMORY ] && ok "a bare job past its memory limit: $st" ||
		fail "bare job $id past its memory limit: $st"
	left=$(harness_cgroup_leftovers "$id")
	[ -z "$left" ] && ok "job $id: nothing left in any cgroup" || fail "job $id left cgroups: $left"
}

# A signal to the whole job (scancel --signal without --batch) reaches the
# extern step too: the guest, the extern step's since the adoption, must
# outlive it as the batch script (which ignores it) does, for longer than
# KillWait (5 s here): a step still runs in it afterwards. SIGTERM is the
# signal the job's end sends too: while no step runs on the node, the
# holder of the extern step's sleep (22.05, 24.11) let it go at once, and
# the guest died mid-job (issue #41); only slurmctld's word that the job
# ends may (prolog/holdgate.h).
signal_job() { # SIGNAL
	local sig=$1 id out
	id=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1024 --vm-image=testguest \
		-o /dev/null --wrap "trap '' $sig; sleep 600") || harness_die "sbatch (signal $sig) failed"
	harness_wait 60 "job $id's adoption" grep -q \
		"job $id: the guest's [0-9]* processes are the extern step's" "$HARNESS_VM_LOG" ||
		harness_die "job $id: no guest adopted: $(grep "job $id" "$HARNESS_VM_LOG" | tail -5)"
	scancel --signal="$sig" "$id"
	sleep 8
	out=$(harness_as_user "$user" timeout 60 srun --jobid="$id" --overlap -n1 uname -r 2>&1) || true
	if [ "$out" = "$(guest_kernel_version)" ]; then
		ok "job $id: after a $sig to the whole job the guest still runs steps ($out)"
	else
		fail "job $id: after a $sig to the whole job: '$out', $(squeue -h -j "$id" -o %T) $(sacct -n -P -j "$id" -o JobID,State | tr '\n' ' ')"
	fi
	scancel "$id"
	harness_wait 60 "job $id to end" sh -c "! squeue -h -j $id | grep -q ." || true
	harness_wait 60 "job $id's epilog" bash -c "[ ! -e '$HARNESS_DIR/vm/state/job-$id.0' ]" || true
	guest_nothing_left "$id"
}

vm_burn_job
signal_job USR1
# A job-wide SIGTERM (scancel -s TERM, not the job's end) is held from the
# extern step's sleep (prolog/hold.c); 26.05's extern step has no sleep,
# and the signal reaches qemu itself, which ends the guest: a limit of
# that release (doc/security.md), not checked there.
if grep -q "the extern step's sleep (pid [0-9]*) is held" "$HARNESS_VM_LOG"; then
	signal_job TERM
else
	echo "note: no extern step sleep on Slurm $(scontrol -V | awk '{print $2}'): a job-wide TERM ends the guest there"
fi
bare_oom_job
vm_oom_job
guest_node_up

[ "$failures" = 0 ]
