# shellcheck shell=bash
# tests/cluster/guest.sh: the test guest (tests/guest/build.sh) as an image
# of the harness's catalog. Source after harness.sh, call after
# harness_start (with HARNESS_LIBVIRT=1 for a cluster that boots guests).
#
#   guest_add_to_catalog NAME [Key=Value...]   extra catalog keys, e.g. a
#                                              broken Cmdline= for fault tests
#                                              (Kernel=vmlinuz: the bzImage,
#                                              which UEFI needs)
#   guest_exec USER JOBID -- CMD...            runs CMD in the job's guest
#   guest_cluster_start BOOT-TIMEOUT [Key=Value...]
#                       the test users, a cluster with libvirtd, the vm.conf
#                       settings given, and the guest as image "testguest"
#   guest_node_up [WHAT]  ok/fail: the node is still in service (after WHAT)
#   guest_nothing_left JOBID [NODE]  ok/fail: no domain, qemu, overlay,
#                       relay or state directory of the job's guest remains
#                       (on NODE of a `harness_start N` cluster; there also
#                       no link or nftables table of the job network)
#   guest_leftovers JOBID [NODE]     the same as words ("domain overlay
#                       ..."), empty when nothing remains
#   guest_mpi_ranks_ok < OUTPUT   the ranks of svm-mpi-allreduce whose
#                       allreduce and ring sendrecv (from the previous rank)
#                       both printed ok, as "RANK@HOST ..." in rank order
#   guest_names_by_rank STEP...  "RANK@HOST ..." of `STEP -l hostname`
#   guest_ranks_on N RANKS  true when RANKS ("RANK@HOST ...") ran in N guests
#   guest_jobnet_nothing_left NODE   ok/fail: NODE (of a `harness_start N`
#                       cluster) keeps no link (bridge, VXLAN, tap) or
#                       nftables table of any job network

guest_cluster_start() {
	local kv
	harness_ensure_test_users
	HARNESS_LIBVIRT=1 harness_start
	harness_vmconf_set BootTimeout "$1"
	shift
	for kv in "$@"; do
		harness_vmconf_set "${kv%%=*}" "${kv#*=}"
	done
	guest_add_to_catalog testguest
}

guest_node_up() {
	local s label=${1:+$1: }
	s=$(sinfo -h -N -o %t | head -1)
	# plnd: backfill planned the node for a job that waited on it (Slurm
	# 22.05 keeps the flag until its next cycle); in service all the same.
	case "$s" in
	idle | mix | alloc | plnd) ok "${label}node $s" ;;
	*)
		fail "${label}node $s"
		sinfo -N -R
		;;
	esac
}

# Builds the guest (cached) with this build's agent (booted from the
# uncompressed vmlinux: under TCG that halves the boot), copies its disk into
# the allowed image directory, its kernel and initrd into the cluster
# directory (harness_world_copy), and writes the catalog entry.
guest_add_to_catalog() {
	guest_build >"$HARNESS_DIR/log/guest-build.log" 2>&1 || {
		tail -20 "$HARNESS_DIR/log/guest-build.log" >&2
		harness_die "tests/guest/build.sh failed"
	}
	guest_catalog_entry "$@"
}

# harness.sh's, for a script that sources only this file (test_headline.sh:
# guest_mpi_ranks_ok, guest_kernel_version).
HARNESS_REPO=${HARNESS_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

# The test guest's cache: this build's agent in tests/guest/cache; with
# HARNESS_INSTALLED=1 the installed slurm-vm-agent, in a cache of its own.
guest_cache() {
	if [ -n "${HARNESS_GUEST_DIR:-}" ]; then
		echo "$HARNESS_GUEST_DIR"
	elif [ "${HARNESS_INSTALLED:-0}" = 1 ]; then
		echo "$HARNESS_REPO/tests/guest/cache-installed"
	else
		echo "$HARNESS_REPO/tests/guest/cache"
	fi
}

# The test guest's kernel release (uname -r in it), from its bzImage.
guest_kernel_version() {
	file -bL "$(guest_cache)/vmlinuz" | grep -o 'version [^ ]*' | cut -d' ' -f2
}

# guest_build: tests/guest/build.sh (cached) with the agent the cluster runs.
# HARNESS_GUEST_DIR: a guest tests/guest/build.sh made beforehand, used as
# it is (tests/platform/run.sh: the host's guest on another platform).
guest_build() {
	[ -z "${HARNESS_GUEST_DIR:-}" ] || return 0
	local agent=$BUILD_DIR/agent/slurm-vm-agent
	[ "${HARNESS_INSTALLED:-0}" = 1 ] && agent=/usr/sbin/slurm-vm-agent
	"$HARNESS_REPO/tests/guest/build.sh" --agent "$agent" --out "$(guest_cache)"
}

# guest_catalog_entry NAME [KEY=VALUE...]: the catalog entry of the guest
# already in guest_cache.
guest_catalog_entry() {
	local name=$1 cache image cmdline= kernel= initrd
	cache=$(guest_cache)
	shift
	image=$HARNESS_IMAGES/$name.qcow2
	cp "$cache/rootfs.qcow2" "$image"
	chmod 0644 "$image"
	local kv extra=()
	for kv in "$@"; do
		case "$kv" in
		Cmdline=*) cmdline=${kv#Cmdline=} ;;
		Kernel=*) kernel=${kv#Kernel=} ;;
		*) extra+=("$kv") ;;
		esac
	done
	[ -n "$cmdline" ] || cmdline=$(cat "$cache/cmdline")
	# qemu opens them as the job's user: not from the checkout.
	kernel=$(harness_world_copy "${kernel:-$cache/vmlinux}")
	initrd=$(harness_world_copy "$cache/initrd.img")
	harness_add_catalog_image "$name" "$image" qcow2 \
		"Kernel=$kernel" "Initrd=$initrd" \
		"Cmdline=$cmdline" "${extra[@]+"${extra[@]}"}"
}

# The job's state directory (StateDir/job-<id>.<restart>).
guest_state_dir() {
	echo "$HARNESS_DIR/vm/state/job-$1.${2:-0}"
}

guest_exec() {
	local user=$1 job=$2
	shift 3 # USER JOBID --
	harness_as_user "$user" "$HARNESS_BIN/slurm-vm-exec" \
		--socket "$(guest_state_dir "$job")/sock/relay.sock" --cwd /tmp -- "$@"
}

# guest_leftovers JOB [NODE]: what of the job's guest is still on the node
# (NODE: that node of a `harness_start N` cluster, with its own libvirtd,
# StateDir and OverlayDir; the guests of one job have one domain name on
# every node), as words (domain, overlay, nvram, state-dir, relay, qemu,
# jobnet-link, nft-table, cgroup, libvirt-cgroup);
# empty when nothing is.
guest_leftovers() {
	local job=$1 node=${2:-} dom="slurmvm-job-$1.0" left="" vm=$HARNESS_DIR/vm
	local ex=() p
	if [ -n "$node" ]; then
		vm=$HARNESS_DIR/nodes/$node/vm
		ex=(harness_node_exec "$node")
	fi
	"${ex[@]}" virsh -q list --name 2>/dev/null | grep -qx "$dom" && left+=" domain"
	[ -e "$vm/overlay/job-$job.0.qcow2" ] && left+=" overlay"
	[ -e "$vm/overlay/job-$job.0.nvram.fd" ] && left+=" nvram"
	[ -e "$vm/state/job-$job.0" ] && left+=" state-dir"
	pgrep -f "slurm-vm-relay.*$vm/state/job-$job\\.0/" >/dev/null && left+=" relay"
	for p in $(pgrep -f "guest=$dom,"); do
		# With NODE: only a qemu in that node's network namespace.
		[ -z "$node" ] || [ "$(readlink "/proc/$p/ns/net")" = \
			"$(readlink "/proc/${HARNESS_NODE_PID[$node]}/ns/net")" ] || continue
		left+=" qemu"
		break
	done
	# With NODE: the job network's links (svmb/svmx/svmt<job hex>) and
	# nftables tables.
	if [ -n "$node" ]; then
		"${ex[@]}" ip -o link 2>/dev/null |
			grep -q " svm[bxt]$(printf %08x "$job")[:@]" && left+=" jobnet-link"
		"${ex[@]}" nft list tables 2>/dev/null |
			grep -q " svm_job_$job\$" && left+=" nft-table"
	fi
	# The job's cgroups (HARNESS_ACCOUNTING: Slurm's, which removes them
	# as its steps end) and libvirt's for the guest, in any controller.
	if [ "${HARNESS_ACCOUNTING:-0}" = 1 ] &&
		! harness_wait 10 "job $job's cgroups to go" _guest_no_cgroups "$job"; then
		left+=" cgroup"
	fi
	if compgen -G "/sys/fs/cgroup/*/machine/*-$dom.libvirt-qemu" >/dev/null ||
		compgen -G "/sys/fs/cgroup/*/machine/*/*-$dom.libvirt-qemu" >/dev/null; then
		left+=" libvirt-cgroup"
	fi
	echo "${left# }"
}

_guest_no_cgroups() { [ -z "$(harness_cgroup_leftovers "$1")" ]; }

guest_nothing_left() { # guest_nothing_left JOB [NODE]
	local left
	left=$(guest_leftovers "$@")
	if [ -z "$left" ]; then
		ok "job $1: nothing left on ${2:-the node}"
	else
		fail "job $1 left${2:+ on $2}: $left"
	fi
}

# svm-mpi-allreduce's lines (tests/guest/files/mpi_allreduce.c) on stdin:
# "mpi: rank R of N on HOST: allreduce ...: ok" and "mpi: rank R of N on
# HOST: sendrecv B bytes from rank R-1 mod N: ok"; prints "R@HOST " for
# each rank with both.
guest_mpi_ranks_ok() {
	awk '
	/^mpi: rank [0-9]+ of [0-9]+ on [^ ]+: allreduce .*: ok$/ {
		h = $7; sub(/:$/, "", h); ar[$3] = h
	}
	/^mpi: rank [0-9]+ of [0-9]+ on [^ ]+: sendrecv [0-9]+ bytes from rank [0-9]+: ok$/ {
		f = $13; sub(/:$/, "", f)
		if (f == ($3 + $5 - 1) % $5) sr[$3] = 1
	}
	END { for (r in ar) if (r in sr) print r "@" ar[r] }' | sort -n | tr '\n' ' '
}

# guest_names_by_rank STEP-CMD... : "RANK@HOST ..." of `STEP-CMD -l hostname`
# (the guests a step's ranks ran in, in rank order, as guest_mpi_ranks_ok).
guest_names_by_rank() {
	"$@" -l hostname 2>/dev/null | sort -n |
		sed -n 's/^\([0-9]*\): \(.*\)$/\1@\2/p' | tr '\n' ' '
}

# guest_ompi_allreduce NODES MAJOR WHAT STEP-CMD...: svm-ompi-allreduce over
# PMIx, two ranks (STEP-CMD --mpi=pmix -n2 ./svm-ompi-allreduce): ok when
# both ranks' checks are right, in NODES guests, under Open MPI MAJOR; WHAT
# names the run in the message.
guest_ompi_allreduce() {
	local nodes=$1 major=$2 what=$3 out want
	shift 3
	out=$("$@" --mpi=pmix -n2 ./svm-ompi-allreduce 2>&1) || true
	want=$(guest_names_by_rank "$@" -n2)
	if guest_ranks_on "$nodes" "$want" && [ "$(guest_mpi_ranks_ok <<<"$out")" = "$want" ] &&
		grep -q "^mpi: Open MPI v$major" <<<"$out"; then
		ok "$what: ranks $want"
	else
		fail "$what (ranks on '$want'):"
		sed 's/^/    /' <<<"$out"
	fi
}

# guest_ranks_on N "RANK@HOST ...": true when the ranks ran in N guests.
guest_ranks_on() {
	[ -n "$2" ] && [ "$(tr ' ' '\n' <<<"$2" | sed -n 's/^[0-9]*@//p' |
		sort -u | wc -l)" = "$1" ]
}

guest_jobnet_nothing_left() { # guest_jobnet_nothing_left NODE
	local left
	left=$(harness_node_exec "$1" ip -o link 2>&1 | grep -o ' svm[^:@]*' | tr '\n' ' ')
	left+=$(harness_node_exec "$1" nft list tables 2>&1 | grep -o 'svm_job_.*' | tr '\n' ' ')
	if [ -z "$left" ]; then
		ok "$1: no link or nftables table of a job network left"
	else
		fail "$1: job network left: $left"
	fi
}

# guest_hold_core USER NODE: runs a one-core job of USER on NODE and prints
# its id once it runs; scancel it when the guests it made room for are up.
# The harness's nodes share this machine's CPUs, and Slurm gives a job each
# node's first core, CPU 0 on all of them: held, a two-node job's second
# guest gets the other CPU, as on two machines (two TCG guests on one CPU
# boot at half speed).
guest_hold_core() {
	local hold
	hold=$(harness_as_user "$1" sbatch --parsable -w "$2" -n1 -c1 --mem=64 \
		--wrap 'sleep 900') || harness_die "sbatch of the one-core job on $2 failed"
	harness_wait 30 "job $hold to run on $2" sh -c "squeue -h -j $hold -o %t | grep -qx R" ||
		harness_die "the one-core job on $2 does not run"
	echo "$hold"
}

# guest_shares_script OUTSIDE: the job script of test_shares.sh, as a user
# writes it for bare metal: two tasks append "task R KERNEL INPUT" to
# $PWD/out.txt (INPUT from $HOME/shares-input.txt), "step exit N" goes to
# step.done, a step starts in OUTSIDE (no share), then it sleeps.
guest_shares_script() {
	cat <<EOS
#!/bin/sh
srun -n2 -O sh -c 'echo "task \$SLURM_PROCID \$(uname -r) \$(cat "\$HOME/shares-input.txt")" >>"\$PWD/out.txt"'
echo "step exit \$?" >step.done
srun -n1 --chdir=$1 pwd
sleep 900
EOS
}

# guest_centre_config: the cluster about to start runs as a centre's
# (harness.sh, HARNESS_ACCOUNTING) where the machine has slurmdbd and
# MariaDB: the guest is then its job's, in that node's own cgroup tree, and
# guest_nothing_left also checks that no cgroup of the job is left.
guest_centre_config() {
	command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null &&
		export HARNESS_ACCOUNTING=${HARNESS_ACCOUNTING:-1}
	return 0
}
