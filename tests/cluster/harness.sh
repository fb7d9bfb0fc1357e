# shellcheck shell=bash
# tests/cluster/harness.sh: a real Slurm test cluster, from nothing, for one
# test script. Source it, then:
#
#   harness_ensure_test_users          # svmtest, svmtest2 (idempotent)
#   harness_start                      # slurmctld + slurmd, waits for idle
#   srun hostname; harness_as_user svmtest sbatch --wrap ...
#   (harness_stop runs from the EXIT trap, also after a failed test)
#
# Everything lives in one fresh directory ($HARNESS_DIR, under $TMPDIR or
# $HARNESS_TMPROOT): slurm.conf and friends (made from the etc/*.example
# files, so the examples are exercised), state, spool, logs, pid files, the
# fake device nodes and the vm.conf state directories. /etc/slurm is never
# read or written. The daemons are the installed Slurm (22.05) with
# auth/none, cred/none, select/cons_tres, proctrack/linuxproc, task/affinity
# and PrologFlags=Alloc,Contain (Contain works without cgroups in 22.05: the
# extern step is tracked by proctrack/linuxproc).
#
# The functions work under the caller's `set -euo pipefail` (they turn -e
# off inside with `local -`) and report errors themselves (harness_die).
#
# Settings (environment, all optional):
#   BUILD_DIR            the build tree (default: <repo>/build)
#   HARNESS_KEEP=1       keep $HARNESS_DIR after the test (kept anyway after a
#                        failure; its path is printed)
#   HARNESS_LIBVIRT=1    also start libvirtd: tests/cluster/libvirt.sh's
#                        libvirt_start/libvirt_stop, before slurmd and after
#                        it (LibvirtURI in vm.conf: $HARNESS_LIBVIRT_URI, else
#                        libvirt.sh's $LIBVIRT_URI, else qemu:///system)
#   HARNESS_START_TIMEOUT  seconds to wait for the node(s) to be idle (60)
#   HARNESS_TMPROOT      parent of $HARNESS_DIR (tests/cluster/run.sh sets it
#                        per test to sweep leftovers of a killed test)
#   HARNESS_GPU_GROUPS / HARNESS_IBVF_GROUPS  fake IOMMU group numbers
#                        ("12 13" / "40 41")
#   HARNESS_GRES_PLUGIN=1  slurmctld and slurmd load gres/ibvf: BUILD_DIR's
#                        gres_ibvf.so (configure --with-slurm-source) is
#                        copied to $HARNESS_BIN/plugins, first in PluginDir
#   HARNESS_INSTALLED=1  the installed packages' programs and plugins, not
#                        BUILD_DIR's (tests/cluster/test_headline.sh)
#   HARNESS_ACCOUNTING=1 as a centre runs it: proctrack/cgroup,
#                        task/cgroup (ConstrainCores, ConstrainRAMSpace,
#                        ConstrainDevices), jobacct_gather/cgroup, and a
#                        slurmdbd on a MariaDB of the cluster's own, so sacct
#                        works (harness_cgroup_leftovers JOBID: the job's
#                        cgroup directories still there)
#
# A test that defines a function harness_config_hook gets it called after
# the configuration is written ($HARNESS_ETC/*.conf) and before slurmctld
# and slurmd start: the place for test-specific slurm.conf changes.
# The harness owns the EXIT, INT, TERM and HUP traps (set at the first
# harness_* call that makes the directory): a test must not replace them;
# it defines harness_exit_hook (called with the exit status before
# harness_stop) for its own cleanup.
#
# After harness_start: SLURM_CONF (exported), HARNESS_DIR, HARNESS_ETC,
# HARNESS_BIN (the prolog, epilog and spank_vm.so the cluster runs, and
# slurm-vm-relay/-exec/-agent and slurm-vm when built: copies of BUILD_DIR's
# in one directory, see _harness_snapshot_build),
# HARNESS_VM_LOG (vm.conf LogFile), HARNESS_VM_CONF, HARNESS_WORK (one
# directory per test user, owned by it: $HARNESS_WORK/svmtest),
# HARNESS_NODES (array of node names), HARNESS_NODELIST (n1,n2),
# HARNESS_START_SECONDS, HARNESS_CATALOG, HARNESS_IMAGES.
#
# Several nodes: call harness_add_node NAME ADDR [PORT] before harness_start
# (ADDR a 127.x address; each node gets its own spool, log, pid file and
# device directory, a NodeName line with NodeAddr/NodeHostname/Port, its
# own `slurmd -N NAME`, and its own copy of the configuration in
# $HARNESS_DIR/nodes/NAME/etc whose vm.conf has the node's own StateDir and
# OverlayDir, $HARNESS_DIR/nodes/NAME/vm/{state,overlay}; see
# _harness_node_configs). Without any, harness_start adds this host as the
# one node, and StateDir/OverlayDir are $HARNESS_DIR/vm/{state,overlay}.
# Own hostnames per node: see harness_node_isolate below.
#
# How slurmd numbers GRES devices, measured on this harness with
# `slurmd -G` and jobs (harness_gres_table prints the table): doc/design.md,
# "How slurmd numbers GRES devices".

HARNESS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$HARNESS_REPO/build}
HARNESS_ETC_EXAMPLES=$HARNESS_REPO/etc
HARNESS_SLURM_LIBDIR=${HARNESS_SLURM_LIBDIR:-/usr/lib/x86_64-linux-gnu/slurm-wlm}

# Never inherited: a fresh cluster per sourcing shell.
HARNESS_STARTED=0
HARNESS_DIR=
HARNESS_NODES=()
declare -A HARNESS_NODE_ADDR=() HARNESS_NODE_PORT=() HARNESS_NODE_HOST=()
declare -A HARNESS_NODE_PID=() HARNESS_NODE_ISOLATED=() HARNESS_NODE_NETNS=()
HARNESS_NETNS=0
HARNESS_CTLD_PID=
HARNESS_DB_PID=
HARNESS_DBD_PID=
HARNESS_LIBVIRT_STARTED=0
HARNESS_TEST_USERS=(svmtest svmtest2)

# Checks of a test: `ok MSG`, `fail MSG` (counted in $failures, shown by
# run.sh), and `[ "$failures" = 0 ]` as the test's last line.
failures=0
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

harness_log() { printf 'harness: %s\n' "$*" >&2; }

harness_die() {
	printf 'harness: error: %s\n' "$*" >&2
	exit 1
}

# Exit status 77 = skipped (tests/cluster/run.sh prints the reason).
# harness_rust_virtiofsd [PATH]: PATH (default /usr/libexec/virtiofsd) is
# the Rust virtiofsd: its --version says "virtiofsd X.Y.Z" (qemu's C one
# "virtiofsd version X").
harness_rust_virtiofsd() {
	"${1:-/usr/libexec/virtiofsd}" --version 2>/dev/null | head -n 1 |
		grep -Eq '^virtiofsd [0-9]'
}

harness_skip() {
	printf 'SKIP: %s\n' "$*"
	exit 77
}

harness_now() { date +%s.%N; }

harness_elapsed() { # harness_elapsed START -> "1.23"
	awk -v s="$1" -v e="$(harness_now)" 'BEGIN { printf "%.2f", e - s }'
}

# harness_wait SECONDS WHAT CMD...: polls CMD every 0.2 s; 1 on timeout.
harness_wait() {
	local -
	set +e
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			harness_log "gave up after ${secs}s waiting for $what"
			return 1
		fi
		sleep 0.2
	done
}

# ---------------------------------------------------------------- users

# Non-root users jobs run as (harness_as_user svmtest sbatch ...).
harness_ensure_test_users() {
	local -
	set +e
	local u
	[ "$(id -u)" = 0 ] || harness_skip "creating test users needs root"
	for u in "${HARNESS_TEST_USERS[@]}"; do
		id -u "$u" >/dev/null 2>&1 && continue
		# Two harnesses may race here: tolerate "already exists".
		useradd --create-home --shell /bin/bash \
			--comment "slurm-vm test user" "$u" 2>/dev/null ||
			id -u "$u" >/dev/null 2>&1 ||
			harness_die "cannot create test user $u"
	done
}

# harness_as_user USER CMD...: CMD as USER, in USER's work directory, with
# the cluster's SLURM_CONF.
harness_as_user() {
	local user=$1
	shift
	(cd "$HARNESS_WORK/$user" 2>/dev/null || cd /tmp || exit
	 exec runuser -u "$user" -- env SLURM_CONF="${SLURM_CONF:-}" \
		HOME="$(getent passwd "$user" | cut -d: -f6)" "$@")
}

# ---------------------------------------------------------------- nodes

_harness_port_in_use() {
	[ -n "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
}

# The ports the kernel never hands out as a connection's source port: below
# ip_local_port_range (or above it when it starts too low).
_harness_port_range() {
	local lo=32768 hi=60999
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
	if [ "$lo" -gt 12000 ]; then
		echo "10000 $((lo - 1))"
	else
		echo "$((hi + 1)) 65535"
	fi
}

# A TCP port nobody listens on (random, so parallel harnesses do not meet),
# outside the ephemeral range: a port taken from that range can be given to
# any outgoing connection between this check and the daemon's bind.
harness_free_port() {
	local -
	set +e
	local p lo hi
	read -r lo hi <<<"$(_harness_port_range)"
	for _ in $(seq 1 200); do
		p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
		_harness_port_in_use "$p" && continue
		case " ${HARNESS_PORTS_TAKEN:-} " in *" $p "*) continue ;; esac
		HARNESS_PORTS_TAKEN="${HARNESS_PORTS_TAKEN:-} $p"
		echo "$p"
		return 0
	done
	harness_die "no free TCP port found"
}

# harness_add_node NAME ADDR [PORT]: one more slurmd. ADDR: a 127.x address
# (its NodeAddr; slurmd itself listens on all addresses). PORT: its Port=
# (default: a free port, so several slurmd can share one network namespace).
harness_add_node() {
	local -
	set +e
	local name=$1 addr=$2 port=${3:-}
	[ "$HARNESS_STARTED" = 1 ] && harness_die "harness_add_node $name: add nodes before harness_start"
	[[ "$name" =~ ^[a-z][a-z0-9-]*$ ]] || harness_die "bad node name '$name'"
	case "$addr" in 127.*) ;; *) harness_die "node $name: ADDR must be 127.x (got '$addr')" ;; esac
	HARNESS_NODES+=("$name")
	HARNESS_NODE_ADDR[$name]=$addr
	HARNESS_NODE_PORT[$name]=$port
	HARNESS_NODE_HOST[$name]=$name
}

# harness_node_isolate NAME: give node NAME its own hostname (a UTS
# namespace: `hostname` in its jobs prints NAME). Call after harness_add_node,
# before harness_start. Tested: two nodes n1/n2 on 127.0.0.11/12, each slurmd
# on its own port, `srun -N2 hostname` prints n1 and n2. Such nodes share
# this host's network (each slurmd listens on 0.0.0.0:<its Port>, which is
# why every node has its own port) and the one libvirtd of libvirt.sh.
#
# Nodes of their own (opt-in: `harness_start N` or HARNESS_NODE_COUNT=N,
# with no harness_add_node): nodes n1..nN, each a real `slurmd -N nI` in its
# own network, mount and UTS namespaces, as on a real cluster:
#   - Network: a bridge svb<tag> (MTU 9000, address $HARNESS_NET.1/24) in
#     the root namespace is the underlay; per node a veth pair svv<tag><I>
#     <-> eth0 (MTU 9000) in the node's network namespace (bound at
#     nodes/nI/ns/net, not /run/netns: `ip netns` does not list it),
#     address $HARNESS_NET.(10+I), its NodeAddr. $HARNESS_NET is a 10.213.X
#     prefix no address or route of this host uses. slurmctld stays in the
#     root namespace and listens on the bridge address (ControlAddr); the
#     test's srun/sbatch/squeue run in the root namespace.
#   - Mounts: a persistent mount (and UTS) namespace per node (bound at
#     nodes/nI/ns/mnt and uts) whose /run/libvirt, /var/{lib,log,cache}/libvirt and
#     /etc/libvirt are the node's own nodes/nI/libvirt/* (everything else,
#     the harness directory and the images included, is the host's).
#     Entered with nsenter, never `ip netns exec` (it remounts /sys, which
#     hides the cgroup v1 mounts).
#   - libvirt (HARNESS_LIBVIRT=1): each node runs its own virtlogd and
#     libvirtd inside its namespaces (libvirt.sh's libvirt_node_start), so
#     the prolog's qemu:///system reaches that node's daemon only.
#   - harness_node_exec NAME CMD...: CMD in node NAME's namespaces (e.g.
#     `harness_node_exec n2 virsh -q list --name`).
#   - Teardown: each namespace, mount and link is written to
#     run/netns.cleanup before it is made; harness_stop and harness_sweep
#     (so run.sh's sweep after a killed test too) kill the node's daemons
#     and qemu and undo that list.
harness_add_netns_nodes() { # harness_add_netns_nodes N
	local -
	set +e
	local n=$1 i
	[[ "$n" =~ ^[1-9][0-9]?$ ]] || harness_die "harness_start: bad node count '$n'"
	[ "${#HARNESS_NODES[@]}" = 0 ] ||
		harness_die "harness_start $n: nodes of their own do not mix with harness_add_node"
	HARNESS_NETNS=1
	for ((i = 1; i <= n; i++)); do
		HARNESS_NODES+=("n$i")
		HARNESS_NODE_ADDR[n$i]="" # set by _harness_netns_setup
		HARNESS_NODE_PORT[n$i]=""
		HARNESS_NODE_HOST[n$i]=n$i
	done
}

# A free /24: 10.213.X.0 that no address or route of this host touches.
_harness_free_subnet() {
	local x used
	used=$(ip -4 -o addr show 2>/dev/null; ip -4 route show table all 2>/dev/null)
	for _ in $(seq 1 50); do
		x=$((RANDOM % 250 + 1))
		printf '%s\n' "$used" | grep -q "10\.213\.$x\." && continue
		echo "10.213.$x"
		return 0
	done
	return 1
}

_harness_cleanup_note() { echo "$*" >>"$HARNESS_DIR/run/netns.cleanup"; }

# The namespaces of every node of a `harness_start N` cluster: see above.
_harness_netns_setup() {
	local tag node i nd ns veth f
	for f in ip nsenter unshare; do
		command -v "$f" >/dev/null || harness_skip "nodes of their own need $f"
	done
	tag=${HARNESS_DIR##*.}
	HARNESS_NET=$(_harness_free_subnet) || harness_die "no free 10.213.X.0/24 for the node network"
	HARNESS_NET_BRIDGE=svb$tag
	HARNESS_CTLD_ADDR=$HARNESS_NET.1
	export HARNESS_NET HARNESS_NET_BRIDGE
	_harness_cleanup_note "link $HARNESS_NET_BRIDGE"
	ip link add "$HARNESS_NET_BRIDGE" mtu 9000 type bridge &&
		ip addr add "$HARNESS_CTLD_ADDR/24" dev "$HARNESS_NET_BRIDGE" &&
		ip link set "$HARNESS_NET_BRIDGE" up ||
		harness_die "cannot make the underlay bridge $HARNESS_NET_BRIDGE"
	i=0
	for node in "${HARNESS_NODES[@]}"; do
		i=$((i + 1))
		nd=$HARNESS_DIR/nodes/$node ns=$nd/ns
		veth=svv$tag$i
		HARNESS_NODE_ADDR[$node]=$HARNESS_NET.$((10 + i))
		HARNESS_NODE_NETNS[$node]=$ns/net
		mkdir -p "$ns" "$nd"/libvirt/{run,lib,log,cache,state}
		# A private mount for the namespace files (unshare binds them
		# there; not /run/netns, which `ip netns add` would leave).
		_harness_cleanup_note "umount $ns"
		mount --bind "$ns" "$ns" && mount --make-private "$ns" &&
			touch "$ns/net" "$ns/mnt" "$ns/uts" || harness_die "cannot prepare $ns"
		_harness_cleanup_note "umount $ns/net"
		_harness_cleanup_note "umount $ns/mnt"
		_harness_cleanup_note "umount $ns/uts"
		_harness_cleanup_note "link $veth"
		# The veth pair is made inside; its outer end goes to this
		# shell's (the root) network namespace.
		# shellcheck disable=SC2016 # expanded by the inner shell
		_harness_node_unshare "$ns" "$HARNESS_DIR/log/ns-$node.log" \
			sh -ec 'hostname "$1"; ip link set lo up
				ip link add eth0 mtu 9000 type veth peer name "$5" mtu 9000 netns "$6"
				ip addr add "$2/24" dev eth0; ip link set eth0 up
				mkdir -p /run/libvirt /var/lib/libvirt \
					/var/log/libvirt /var/cache/libvirt
				mount --bind "$4/run" /run/libvirt
				mount --bind "$4/lib" /var/lib/libvirt
				mount --bind "$4/log" /var/log/libvirt
				mount --bind "$4/cache" /var/cache/libvirt' \
			ns-setup "$node" "${HARNESS_NODE_ADDR[$node]}" - "$nd/libvirt" "$veth" "$$" &&
			ip link set "$veth" master "$HARNESS_NET_BRIDGE" up ||
			harness_die "namespaces of node $node: $(cat "$HARNESS_DIR/log/ns-$node.log")"
	done
}

# _harness_node_unshare NSDIR LOG CMD...: CMD in new network, mount and UTS
# namespaces whose files unshare binds in NSDIR. Linux 6.18 takes namespace
# ids from per-CPU batches, and refuses (EINVAL) to bind a mount namespace
# whose id is below the binder's own: inside a platform root (a mount
# namespace of its own) a node's namespace made on the other CPU fails at
# random. Ids made on the CPU that made ours are always higher, so each CPU
# is tried in turn.
_harness_node_unshare() {
	local ns=$1 log=$2 cpu cpus pin=()
	shift 2
	cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
	# Unpinned first, then on each allowed CPU in turn.
	for cpu in any $(_harness_cpu_list "$cpus"); do
		[ "$cpu" = any ] || {
			umount "$ns/net" "$ns/uts" 2>/dev/null
			pin=(taskset -c "$cpu")
		}
		"${pin[@]}" unshare --net="$ns/net" --mount="$ns/mnt" \
			--uts="$ns/uts" --propagation private -- "$@" \
			>"$log" 2>&1 && return 0
		grep -q "ns/mnt on .*Invalid argument" "$log" || return 1
	done
	return 1
}

# _harness_cpu_list LIST: the CPUs of a cpulist ("0-3,8") one per line.
_harness_cpu_list() {
	local range
	for range in ${1//,/ }; do
		seq "${range%-*}" "${range#*-}"
	done
}

# harness_node_exec NAME CMD...: CMD in node NAME's namespaces (nodes of
# their own), or here.
harness_node_exec() {
	local node=$1
	shift
	_harness_node_prefix "$node"
	"${HARNESS_NODE_PREFIX[@]}" "$@"
}

# Kills node daemons and guests of the cluster in DIR (their pid files are
# in DIR), then undoes DIR's run/netns.cleanup, last entry first.
_harness_netns_teardown() {
	local dir=$1 list f pid what arg
	[ -n "$dir" ] && [ "$dir" != / ] || return 0
	find "$dir" -maxdepth 8 -path '*/nodes/*/libvirt/*' -name '*.pid' 2>/dev/null |
	while read -r f; do
		pid=$(tr -dc '0-9' <"$f" 2>/dev/null)
		[ -n "$pid" ] && [ -d "/proc/$pid" ] || continue
		case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
		libvirtd | virtlogd | qemu-system-*) kill -KILL "$pid" 2>/dev/null ;;
		esac
	done
	find "$dir" -maxdepth 3 -path '*/run/netns.cleanup' 2>/dev/null |
	while read -r list; do
		tac "$list" | while read -r what arg; do
			case "$what" in
			umount) umount -l "$arg" 2>/dev/null ;;
			link) ip link del "$arg" 2>/dev/null ;;
			esac
		done
		rm -f "$list"
	done
	return 0
}

harness_node_isolate() {
	local -
	set +e
	local name=$1
	[ -n "${HARNESS_NODE_ADDR[$name]:-}" ] || harness_die "harness_node_isolate: unknown node $name"
	command -v unshare >/dev/null || harness_die "unshare(1) is needed for harness_node_isolate"
	HARNESS_NODE_ISOLATED[$name]=1
}

# slurmstepd listens on SlurmdSpoolDir/<node>_<job>.<step> and qemu, the
# relay and libvirt put sockets under the harness directory too: a path
# longer than a unix socket allows (107 bytes) fails only when a job starts
# ("Unix socket path ... is too long" and a held job). Refuse it up front.
_harness_check_path_length() {
	local node sock
	for node in "${HARNESS_NODES[@]}"; do
		sock="$HARNESS_DIR/spool/$node/${node}_4294967295.4294967295"
		[ "${#sock}" -le 100 ] ||
			harness_die "harness directory $HARNESS_DIR is too deep for unix sockets ($sock: ${#sock} bytes, at most 100 here): use a shorter HARNESS_TMPROOT or node name"
	done
}

# Sets HARNESS_NODE_PREFIX: the words that run a command in node NAME's
# namespaces (none unless harness_node_isolate NAME).
_harness_node_prefix() {
	local name=$1
	HARNESS_NODE_PREFIX=()
	if [ -n "${HARNESS_NODE_NETNS[$name]:-}" ]; then
		HARNESS_NODE_PREFIX=(nsenter "--net=${HARNESS_NODE_NETNS[$name]}"
			"--mount=$HARNESS_DIR/nodes/$name/ns/mnt"
			"--uts=$HARNESS_DIR/nodes/$name/ns/uts" --)
	elif [ "${HARNESS_NODE_ISOLATED[$name]:-0}" = 1 ]; then
		# shellcheck disable=SC2016 # expanded by sh, not here
		HARNESS_NODE_PREFIX=(unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$name")
	fi
}

# Machine topology from `slurmd -C`: sets HARNESS_HW_* variables.
_harness_read_hw() {
	local line kv
	line=$(slurmd -C 2>/dev/null | head -n1)
	[ -n "$line" ] || harness_die "slurmd -C printed nothing"
	for kv in $line; do
		case "$kv" in
		CPUs=*) HARNESS_HW_CPUS=${kv#*=} ;;
		Boards=*) HARNESS_HW_BOARDS=${kv#*=} ;;
		SocketsPerBoard=*) HARNESS_HW_SOCKETS=${kv#*=} ;;
		CoresPerSocket=*) HARNESS_HW_CORES=${kv#*=} ;;
		ThreadsPerCore=*) HARNESS_HW_THREADS=${kv#*=} ;;
		RealMemory=*) HARNESS_HW_MEM=${kv#*=} ;;
		esac
	done
	[ -n "${HARNESS_HW_CPUS:-}" ] && [ -n "${HARNESS_HW_MEM:-}" ] ||
		harness_die "cannot parse slurmd -C: $line"
	# Below the machine's: slurmd refuses a node with more than it has,
	# and the guests need some left.
	HARNESS_NODE_MEM=${HARNESS_NODE_MEM:-$((HARNESS_HW_MEM * 3 / 4))}
}

# ---------------------------------------------------------------- config

# harness_render TEMPLATE OUT KEY=VALUE...: replaces every @KEY@. A
# placeholder left over is an error: the example and the harness disagree.
harness_render() {
	local -
	set +e
	local template=$1 out=$2 text kv key left
	shift 2
	local line
	[ -r "$template" ] || harness_die "cannot read $template"
	text=""
	# Comment lines stay as written (they may name placeholders).
	while IFS= read -r line || [ -n "$line" ]; do
		if [[ "$line" != *@*@* ]] || [[ "$line" =~ ^[[:space:]]*# ]]; then
			text+=$line$'\n'
			continue
		fi
		for kv in "$@"; do
			key=${kv%%=*}
			line=${line//@"$key"@/"${kv#*=}"}
		done
		text+=$line$'\n'
	done <"$template"
	# Comment lines may name placeholders; settings may not keep any.
	left=$(printf '%s\n' "$text" | grep -v '^[[:space:]]*#' |
		grep -o '@[A-Z0-9_]*@' | sort -u | tr '\n' ' ' || true)
	[ -z "$left" ] || harness_die "$template: no value for $left"
	printf '%s' "$text" >"$out"
}

# harness_vmconf_set KEY VALUE: sets (or replaces) one vm.conf key, in every
# node's copy too.
harness_vmconf_set() {
	local -
	set +e
	local key=$1 value=$2 dir
	[ -f "$HARNESS_VM_CONF" ] || harness_die "harness_vmconf_set before the configuration exists"
	for dir in $(_harness_etc_dirs); do
		sed -i "/^[[:space:]]*${key}[[:space:]]*=/Id" "$dir/vm.conf"
		printf '%s=%s\n' "$key" "$value" >>"$dir/vm.conf"
	done
}

# The configuration directories: $HARNESS_ETC (slurmctld and the test's
# commands) and, with several nodes, each node's own copy.
_harness_etc_dirs() {
	local d
	echo "$HARNESS_ETC"
	for d in "$HARNESS_DIR"/nodes/*/etc; do
		[ -d "$d" ] && echo "$d"
	done
}

# harness_add_catalog_image NAME [IMAGEFILE [FORMAT [Key=Value...]]]: an
# image catalog entry <ImageCatalog>/NAME.image (Path=, Format=, root-owned
# 0644). Without IMAGEFILE a small sparse image in $HARNESS_IMAGES (raw:
# 64 MiB with an empty MBR; qcow2: qemu-img create).
# May run before harness_start (then the directories are made first).
harness_add_catalog_image() {
	local -
	set +e
	local name=$1 file=${2:-} format=${3:-raw} entry
	shift $(($# < 3 ? $# : 3))
	_harness_make_dir
	if [ -z "$file" ]; then
		file=$HARNESS_IMAGES/$name.$format
		if [ "$format" = qcow2 ]; then
			qemu-img create -q -f qcow2 "$file" 64M ||
				harness_die "qemu-img create $file failed"
		else
			# A raw disk needs something a disk has: an MBR signature.
			truncate -s 64M "$file"
			printf '\125\252' | dd of="$file" bs=1 seek=510 \
				conv=notrunc status=none
		fi
		chmod 0644 "$file"
	fi
	entry=$HARNESS_CATALOG/$name.image
	{
		echo "# test image made by tests/cluster/harness.sh"
		echo "Path=$file"
		echo "Format=$format"
		for kv in "$@"; do echo "$kv"; done
	} >"$entry"
	chown root:root "$entry"
	chmod 0644 "$entry"
}

# The fake devices of node NAME: character device nodes standing in for
# /dev/vfio/<group> (GPUs and InfiniBand VFs bound to vfio-pci).
_harness_make_devices() {
	local name=$1 dev=$HARNESS_DIR/nodes/$1/dev g
	mkdir -p "$dev/vfio"
	for g in $HARNESS_GPU_GROUPS $HARNESS_IBVF_GROUPS; do
		[ -e "$dev/vfio/$g" ] || mknod -m 0600 "$dev/vfio/$g" c 240 "$g" ||
			harness_die "mknod $dev/vfio/$g failed"
	done
	# The vfio container device, as on a real host.
	[ -e "$dev/vfio/vfio" ] || mknod -m 0666 "$dev/vfio/vfio" c 10 196 ||
		harness_die "mknod $dev/vfio/vfio failed"
}

# Cores (Slurm numbering) of the two halves of the machine: the "NUMA
# nodes" the fake devices hang off. Slurm 24.11 and later refuse a node
# whose gres.conf Cores= split a socket ("GRES core specification ...
# doesn't match socket boundaries", src/interfaces/gres.c): there a
# one-socket machine is declared as two sockets, one per half
# (SlurmdParameters=config_overrides keeps slurmd to the declaration; the
# abstract core ids, socket by socket, stay the same).
_harness_core_halves() {
	local n=$((HARNESS_HW_SOCKETS * HARNESS_HW_CORES * ${HARNESS_HW_BOARDS:-1}))
	local v
	HARNESS_NODE_SOCKETS=$HARNESS_HW_SOCKETS HARNESS_NODE_CORES=$HARNESS_HW_CORES
	HARNESS_NODE_OVERRIDES=0
	if [ "$n" -le 1 ]; then
		HARNESS_CORES_A=0 HARNESS_CORES_B=0
	elif [ "$n" = 2 ]; then
		HARNESS_CORES_A=0 HARNESS_CORES_B=1
	else
		HARNESS_CORES_A="0-$((n / 2 - 1))" HARNESS_CORES_B="$((n / 2))-$((n - 1))"
	fi
	v=$(slurmd -V | awk '{print $2}')
	if [ "$HARNESS_HW_SOCKETS" = 1 ] && [ "${HARNESS_HW_BOARDS:-1}" = 1 ] &&
		[ $((n % 2)) = 0 ] && [ "$(printf '%s\n24.11\n' "$v" | sort -V | head -n1)" = 24.11 ]; then
		HARNESS_NODE_SOCKETS=2 HARNESS_NODE_CORES=$((n / 2))
		HARNESS_NODE_OVERRIDES=1
	fi
}

_harness_write_config() {
	local etc=$HARNESS_ETC node nodes="" gres="" ngpu nibvf part
	local -a gpu ib
	read -r -a gpu <<<"$HARNESS_GPU_GROUPS"
	read -r -a ib <<<"$HARNESS_IBVF_GROUPS"
	ngpu=${#gpu[@]} nibvf=${#ib[@]}
	[ "$ngpu" = 2 ] && [ "$nibvf" = 2 ] ||
		harness_die "gres.conf.example has two GPUs and two VFs: HARNESS_GPU_GROUPS and HARNESS_IBVF_GROUPS need two groups each"
	_harness_core_halves
	for node in "${HARNESS_NODES[@]}"; do
		[ -n "${HARNESS_NODE_PORT[$node]}" ] ||
			HARNESS_NODE_PORT[$node]=$(harness_free_port)
		[ -n "${HARNESS_NODE_PORT[$node]}" ] || harness_die "no free port for node $node"
		nodes+="NodeName=$node NodeHostname=${HARNESS_NODE_HOST[$node]} NodeAddr=${HARNESS_NODE_ADDR[$node]} Port=${HARNESS_NODE_PORT[$node]} CPUs=$HARNESS_HW_CPUS Boards=${HARNESS_HW_BOARDS:-1} SocketsPerBoard=$HARNESS_NODE_SOCKETS CoresPerSocket=$HARNESS_NODE_CORES ThreadsPerCore=$HARNESS_HW_THREADS RealMemory=$HARNESS_NODE_MEM Gres=gpu:$ngpu,ibvf:$nibvf State=UNKNOWN"$'\n'
		_harness_make_devices "$node"
		mkdir -p "$HARNESS_DIR/spool/$node"
		harness_render "$HARNESS_ETC_EXAMPLES/gres.conf.example" \
			"$HARNESS_DIR/run/gres-$node.conf" \
			NODENAME="$node" DEV_DIR="$HARNESS_DIR/nodes/$node/dev" \
			GPU0_GROUP="${gpu[0]}" GPU1_GROUP="${gpu[1]}" \
			IBVF0_GROUP="${ib[0]}" IBVF1_GROUP="${ib[1]}" \
			CORES_A="$HARNESS_CORES_A" CORES_B="$HARNESS_CORES_B"
		# The first node's block keeps the example's comments.
		if [ -z "$gres" ]; then
			gres=$(<"$HARNESS_DIR/run/gres-$node.conf")$'\n'
		else
			gres+=$(grep -v '^[[:space:]]*#' "$HARNESS_DIR/run/gres-$node.conf" | grep .)$'\n'
		fi
		rm -f "$HARNESS_DIR/run/gres-$node.conf"
	done
	printf '%s' "$gres" >"$etc/gres.conf"
	part=$(IFS=,; echo "${HARNESS_NODES[*]}")

	harness_render "$HARNESS_ETC_EXAMPLES/slurm.conf.example" "$etc/slurm.conf" \
		CLUSTER="svm$$" \
		CONTROL_MACHINE="$(hostname -s)" CONTROL_ADDR="$HARNESS_CTLD_ADDR" \
		SLURMCTLD_PORT="$HARNESS_CTLD_PORT" \
		SLURMD_PORT="${HARNESS_NODE_PORT[${HARNESS_NODES[0]}]}" \
		SLURM_USER=root AUTH_TYPE=auth/none CRED_TYPE=cred/none \
		STATE_DIR="$HARNESS_DIR/state" SPOOL_DIR="$HARNESS_DIR/spool" \
		LOG_DIR="$HARNESS_DIR/log" RUN_DIR="$HARNESS_DIR/run" \
		PROCTRACK=proctrack/linuxproc TASK_PLUGIN=task/affinity \
		PROLOG_FLAGS=Alloc,Contain \
		PROLOG="$HARNESS_BIN/slurm-vm-prolog" \
		EPILOG="$HARNESS_BIN/slurm-vm-epilog" \
		PLUGSTACK="$etc/plugstack.conf" \
		DEF_MEM_PER_CPU=1024 \
		NODES="${nodes%$'\n'}" NODELIST="$part"
	# The test cluster logs more than a production one.
	sed -i -e 's/^SlurmctldDebug=.*/SlurmctldDebug=debug/' \
		-e 's/^SlurmdDebug=.*/SlurmdDebug=debug/' \
		-e 's/^SlurmctldTimeout=.*/SlurmctldTimeout=30/' \
		-e 's/^MinJobAge=.*/MinJobAge=600/' \
		-e 's/^KillWait=.*/KillWait=5/' "$etc/slurm.conf"
	# The suite's cli_filter (etc/cli_filter.lua) beside slurm.conf, where
	# cli_filter/lua looks for it; without one, no CliFilterPlugins line.
	if [ -f "$HARNESS_ETC_EXAMPLES/cli_filter.lua" ]; then
		cp "$HARNESS_ETC_EXAMPLES/cli_filter.lua" "$etc/cli_filter.lua"
		chmod 0644 "$etc/cli_filter.lua"
	else
		sed -i '/^CliFilterPlugins=/d' "$etc/slurm.conf"
	fi
	echo "MailProg=/bin/true" >>"$etc/slurm.conf"
	[ "$HARNESS_NODE_OVERRIDES" = 0 ] ||
		echo "SlurmdParameters=config_overrides" >>"$etc/slurm.conf"
	# gres/ibvf first, then Slurm's own plugins (a list, as PluginDir takes).
	[ "${HARNESS_GRES_PLUGIN:-0}" = 1 ] &&
		echo "PluginDir=$HARNESS_BIN/plugins:$HARNESS_SLURM_LIBDIR" >>"$etc/slurm.conf"
	# Job ids (and so domain names slurmvm-job-ID.N) that another harness
	# sharing this libvirtd is unlikely to use at the same time.
	echo "FirstJobId=$(((RANDOM % 9000 + 1) * 100))" >>"$etc/slurm.conf"
	# Start batch jobs at once, not on the next 3 s scheduling tick.
	echo "SchedulerParameters=batch_sched_delay=0" >>"$etc/slurm.conf"

	harness_render "$HARNESS_ETC_EXAMPLES/plugstack.conf.example" \
		"$etc/plugstack.conf" \
		SPANK_VM_SO="$HARNESS_BIN/spank_vm.so" \
		VM_CONF="$etc/vm.conf"

	harness_render "$HARNESS_ETC_EXAMPLES/vm.conf.example" "$etc/vm.conf" \
		IMAGE_CATALOG="$HARNESS_CATALOG" IMAGE_DIRS="$HARNESS_IMAGES" \
		STATE_DIR="$HARNESS_DIR/vm/state" \
		OVERLAY_DIR="$HARNESS_DIR/vm/overlay" \
		LOG_FILE="$HARNESS_VM_LOG" \
		LIBVIRT_URI="${HARNESS_LIBVIRT_URI:-${LIBVIRT_URI:-qemu:///system}}" \
		DOMAIN_TYPE=qemu CPU_MODE=maximum DEVICE_ATTACH=emulate
	# No IOMMU here: the PCI functions behind the fake /dev/vfio/N nodes
	# come from a sysfs fixture shaped like a real node's (its groups are
	# HARNESS_GPU_GROUPS and HARNESS_IBVF_GROUPS' defaults).
	printf '\n# test cluster: the devices behind the fake /dev/vfio nodes\nSysfsRoot=%s\n' \
		"$HARNESS_REPO/tests/fixtures/sysfs/cluster" >>"$etc/vm.conf"
	# BootMode=warm's templates: the cluster's own, like its overlays.
	printf '# test cluster: warm templates of its own\nWarmDir=%s\n' \
		"$HARNESS_DIR/vm/warm" >>"$etc/vm.conf"
	[ "${HARNESS_INSTALLED:-0}" = 1 ] ||
		printf '# test cluster: the relay and exec of this build\nHelperDir=%s\n' \
			"$HARNESS_BIN" >>"$etc/vm.conf"
	# Without libvirtd no guest can boot: the prolog checks and plans only.
	[ "${HARNESS_LIBVIRT:-0}" = 1 ] ||
		printf '# test cluster without libvirtd\nBoot=no\n' >>"$etc/vm.conf"
	chmod 0644 "$etc"/*.conf
}

# The suite's binaries the cluster runs, as HARNESS_BIN/<name>. Copied from
# BUILD_DIR at start (HARNESS_COPY_BUILD=0: used in place), so a rebuild in a
# shared tree during a test cannot make slurmd find a half-linked epilog
# ("epilog: Unable to create list of paths" and a drained node).
_harness_snapshot_build() {
	local f
	if [ "${HARNESS_INSTALLED:-0}" = 1 ]; then
		_harness_link_installed
		return 0
	fi
	if [ "${HARNESS_COPY_BUILD:-1}" = 0 ]; then
		HARNESS_BIN=$HARNESS_DIR/bin
		mkdir -p "$HARNESS_BIN"
		ln -sf "$BUILD_DIR/prolog/slurm-vm-prolog" "$BUILD_DIR/epilog/slurm-vm-epilog" \
			"$BUILD_DIR/spank_vm/.libs/spank_vm.so" "$HARNESS_BIN/"
		for f in agent/slurm-vm-relay agent/slurm-vm-exec agent/slurm-vm-agent admin/slurm-vm \
			prolog/slurm-vm-prolog-vm prolog/slurm-vm-adopt epilog/slurm-vm-epilog-vm; do
			[ -e "$BUILD_DIR/$f" ] && ln -sf "$BUILD_DIR/$f" "$HARNESS_BIN/"
		done
		_harness_snapshot_gres_plugin
		export HARNESS_BIN
		return 0
	fi
	HARNESS_BIN=$HARNESS_DIR/bin
	mkdir -p "$HARNESS_BIN"
	for f in prolog/slurm-vm-prolog epilog/slurm-vm-epilog spank_vm/.libs/spank_vm.so \
		agent/slurm-vm-relay agent/slurm-vm-exec agent/slurm-vm-agent \
		admin/slurm-vm prolog/slurm-vm-prolog-vm prolog/slurm-vm-adopt \
		epilog/slurm-vm-epilog-vm; do
		# The helpers beside them, when built (same directory, as
		# installed: a tool that finds its siblings still does; the
		# prolog and epilog fronts exec their -vm programs from there).
		case "$f" in agent/* | admin/* | *-vm | *-adopt) [ -e "$BUILD_DIR/$f" ] || continue ;; esac
		# A file being relinked right now: try again a moment later.
		harness_wait 30 "$BUILD_DIR/$f to be complete" \
			_harness_copy_elf "$BUILD_DIR/$f" "$HARNESS_BIN/${f##*/}" ||
			harness_die "cannot copy $BUILD_DIR/$f"
	done
	chmod 0755 "$HARNESS_BIN" "$HARNESS_BIN"/*
	_harness_snapshot_gres_plugin
	export HARNESS_BIN
}

# harness_world_copy FILE [MODE]: prints the path of a copy of FILE that
# every user can read (MODE, default 0644; 0755 for a program a job user
# runs), in the cluster directory. Job users and qemu (which runs as the
# job's user) open it; the checkout may be in a directory they cannot enter
# (/root/slurm-vm), and its permissions are the user's, not ours to loosen.
harness_world_copy() {
	local dir=$HARNESS_DIR/vm/boot dst
	mkdir -p "$dir"
	chmod 0755 "$dir"
	dst=$dir/${1##*/}
	[ -e "$dst" ] || cp "$1" "$dst" || harness_die "cannot copy $1 to $dst"
	chmod "${2:-0644}" "$dst"
	echo "$dst"
}

# HARNESS_INSTALLED=1: the installed packages' files (Debian layout:
# debian/*.install), linked into HARNESS_BIN so that the tests' commands
# ($HARNESS_BIN/slurm-vm, ...) find them; the fronts exec their -vm
# programs from PKGLIBEXECDIR, and vm.conf keeps its built-in HelperDir.
HARNESS_INSTALLED_LIBEXEC=/usr/libexec/slurm-vm
_harness_link_installed() {
	local f plugindir=$HARNESS_SLURM_LIBDIR
	HARNESS_BIN=$HARNESS_DIR/bin
	mkdir -p "$HARNESS_BIN"
	for f in /usr/sbin/slurm-vm-prolog /usr/sbin/slurm-vm-epilog /usr/sbin/slurm-vm \
		/usr/sbin/slurm-vm-agent "$plugindir/spank_vm.so" \
		"$HARNESS_INSTALLED_LIBEXEC"/slurm-vm-relay "$HARNESS_INSTALLED_LIBEXEC"/slurm-vm-exec; do
		[ -f "$f" ] || harness_die "HARNESS_INSTALLED=1 but $f is not installed (the slurm-vm packages)"
		ln -sf "$f" "$HARNESS_BIN/"
	done
	if [ "${HARNESS_GRES_PLUGIN:-0}" = 1 ]; then
		mkdir -p "$HARNESS_BIN/plugins"
		ln -sf "$plugindir/gres_ibvf.so" "$HARNESS_BIN/plugins/"
	fi
	export HARNESS_BIN
}

# HARNESS_GRES_PLUGIN=1: gres_ibvf.so in a plugin directory of its own.
_harness_snapshot_gres_plugin() {
	local so=$BUILD_DIR/gres_vgpu/.libs/gres_ibvf.so
	[ "${HARNESS_GRES_PLUGIN:-0}" = 1 ] || return 0
	[ -f "$so" ] || harness_die "HARNESS_GRES_PLUGIN=1 but $so is missing: configure --with-slurm-source=DIR (scripts/install-deps.sh --slurm-source DIR)"
	mkdir -p "$HARNESS_BIN/plugins"
	harness_wait 30 "$so to be complete" \
		_harness_copy_elf "$so" "$HARNESS_BIN/plugins/gres_ibvf.so" ||
		harness_die "cannot copy $so"
	chmod 0755 "$HARNESS_BIN/plugins" "$HARNESS_BIN/plugins/gres_ibvf.so"
}

_harness_copy_elf() { # _harness_copy_elf SRC DST: a complete ELF file
	cp -f "$1" "$2.tmp" && [ "$(head -c4 "$2.tmp" | od -An -c | tr -d ' ')" = '177ELF' ] &&
		[ "$(stat -c %s "$1")" = "$(stat -c %s "$2.tmp")" ] && mv -f "$2.tmp" "$2"
}

# harness_gres_table [NODE]: slurmd's own view of NODE's gres.conf (`slurmd
# -G`), one "Name Index File" line per device, in the order slurmd counts
# them (IDX 0, 1, ... per name). The oracle for device numbering.
harness_gres_table() {
	local node=${1:-${HARNESS_NODES[0]}}
	timeout 60 slurmd -G -N "$node" -f "$SLURM_CONF" 2>&1 |
		sed -n 's/.*Gres Name=\([^ ]*\) .* Index=\([^ ]*\) .* File=\([^ ]*\) .*/\1 \2 \3/p'
}

# harness_plugstack_disable / harness_plugstack_enable: an empty
# plugstack.conf (no spank_vm.so anywhere: srun, sbatch, slurmstepd read it
# at each use) and back.
harness_plugstack_disable() {
	local -
	set +e
	local dir
	for dir in $(_harness_etc_dirs); do
		[ -f "$dir/plugstack.conf.enabled" ] ||
			cp "$dir/plugstack.conf" "$dir/plugstack.conf.enabled"
		echo "# spank_vm.so disabled by harness_plugstack_disable" >"$dir/plugstack.conf"
	done
}

harness_plugstack_enable() {
	local -
	set +e
	local dir
	for dir in $(_harness_etc_dirs); do
		[ -f "$dir/plugstack.conf.enabled" ] &&
			mv -f "$dir/plugstack.conf.enabled" "$dir/plugstack.conf"
	done
}

# Several nodes on one host share no node-local state, as on a real
# cluster: each slurmd reads its own copy of the configuration
# (nodes/NAME/etc; the prolog finds vm.conf beside the slurm.conf its slurmd
# read), whose vm.conf has the node's own StateDir and OverlayDir (LogFile
# stays shared). slurm.conf stays identical everywhere (slurmctld compares
# hashes): PlugStackConfig goes, so each reads plugstack.conf beside its
# slurm.conf, and each plugstack.conf names its own vm.conf.
_harness_node_configs() {
	local node d f
	sed -i '/^PlugStackConfig=/d' "$HARNESS_ETC/slurm.conf"
	for node in "${HARNESS_NODES[@]}"; do
		d=$HARNESS_DIR/nodes/$node/etc
		mkdir -p "$d" "$HARNESS_DIR/nodes/$node/vm/overlay"
		mkdir -m 0700 -p "$HARNESS_DIR/nodes/$node/vm/state"
		chmod 0755 "$d" "$HARNESS_DIR/nodes/$node/vm" "$HARNESS_DIR/nodes/$node"
		for f in "$HARNESS_ETC"/*; do
			[ -f "$f" ] && cp -p "$f" "$d/"
		done
		sed -i "s|^\(required[[:space:]].*\)config=[^[:space:]]*|\1config=$d/vm.conf|" \
			"$d/plugstack.conf"
		sed -i -e "s|^StateDir=.*|StateDir=$HARNESS_DIR/nodes/$node/vm/state|" \
			-e "s|^OverlayDir=.*|OverlayDir=$HARNESS_DIR/nodes/$node/vm/overlay|" \
			-e "s|^WarmDir=.*|WarmDir=$HARNESS_DIR/nodes/$node/vm/warm|" \
			"$d/vm.conf"
		# mpi/pmix names its clients' directory in /tmp by job and
		# step only: nodes sharing one /tmp would collide.
		mkdir -p "$HARNESS_DIR/nodes/$node/pmix"
		chmod 1777 "$HARNESS_DIR/nodes/$node/pmix"
		echo "PMIxCliTmpDirBase=$HARNESS_DIR/nodes/$node/pmix" >"$d/mpi.conf"
		if [ "${HARNESS_LIBVIRT:-0}" = 1 ] && [ "$HARNESS_NETNS" = 1 ]; then
			_harness_cgroup_partition "$node" make
			echo "CgroupPartition=/machine/$node" >>"$d/vm.conf"
		fi
	done
}

# The nodes' libvirtd share this machine's cgroup tree and name a job's
# guests alike (machine/qemu-1-slurmvm-job-J.0.libvirt-qemu): one directory
# and its memory limit would hold the guests of all nodes. Each node's
# guests go under a partition of its own (vm.conf CgroupPartition=), as if
# each node were a machine of its own; libvirt makes only /machine itself.
# _harness_cgroup_partition NODE make|remove
_harness_cgroup_partition() {
	local node=$1 how=$2 mnt dir f
	for mnt in /sys/fs/cgroup/*; do
		[ -f "$mnt/cgroup.procs" ] && [ ! -L "$mnt" ] || continue
		dir=$mnt/machine/$node.partition
		if [ "$how" = remove ]; then
			[ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
			[ -d "$dir" ] && harness_log "cgroup $dir left: $(cat "$dir/cgroup.procs" 2>/dev/null | tr '\n' ' ')"
			continue
		fi
		mkdir -p "$dir" || harness_die "cannot make cgroup $dir"
		# A new v1 cpuset has no CPUs until given its parent's.
		for f in cpuset.cpus cpuset.mems; do
			[ -e "$mnt/machine/$f" ] || continue
			[ -n "$(cat "$mnt/machine/$f")" ] || cat "$mnt/$f" >"$mnt/machine/$f"
			[ -n "$(cat "$dir/$f")" ] || cat "$mnt/machine/$f" >"$dir/$f"
		done
	done
}

# ------------------------------------------------------------- accounting

# HARNESS_ACCOUNTING=1: the cluster runs as a centre's does. Slurm's cgroup
# plugins (proctrack/cgroup, task/cgroup with ConstrainCores, ConstrainRAMSpace
# and ConstrainDevices, jobacct_gather/cgroup) on this host's cgroup v1, each
# node's jobs under /sys/fs/cgroup/<controller>/slurm_<node> (multiple-slurmd),
# and accounting through a slurmdbd of its own on a MariaDB of its own (both
# in $HARNESS_DIR, on 127.0.0.1), so that sacct works. Debian 12's slurmdbd
# and MariaDB 10.11; Debian 13's slurmdbd 24.11.5 stops at its first query
# to Debian 13's MariaDB 11.8 ("5027 Number of columns in result set
# exceeds ...", _check_mysql_concat_is_sane), so the platforms do without.
_harness_accounting_config() {
	local etc=$HARNESS_ETC
	HARNESS_DB_PORT=$(harness_free_port)
	HARNESS_DBD_PORT=$(harness_free_port)
	sed -i -e 's|^ProctrackType=.*|ProctrackType=proctrack/cgroup|' \
		-e 's|^TaskPlugin=.*|TaskPlugin=task/cgroup,task/affinity|' \
		-e 's|^JobAcctGatherType=.*|JobAcctGatherType=jobacct_gather/cgroup|' \
		-e 's|^AccountingStorageType=.*|AccountingStorageType=accounting_storage/slurmdbd|' \
		"$etc/slurm.conf"
	# sstat's figures two seconds old at most.
	printf '%s\n' "AccountingStorageHost=127.0.0.1" \
		"AccountingStoragePort=$HARNESS_DBD_PORT" \
		"JobAcctGatherFrequency=task=2" >>"$etc/slurm.conf"
	# cgroup/v1: the machines' controllers are mounted one by one on a
	# tmpfs /sys/fs/cgroup (26.05 warns that v1 is deprecated).
	printf '%s\n' "CgroupPlugin=cgroup/v1" "ConstrainCores=yes" \
		"ConstrainRAMSpace=yes" "ConstrainDevices=yes" >"$etc/cgroup.conf"
	# slurmdbd refuses a slurmdbd.conf others can read.
	(umask 077
	 printf '%s\n' "AuthType=$(sed -n 's/^AuthType=//p' "$etc/slurm.conf")" \
		"DbdHost=localhost" "DbdAddr=127.0.0.1" "DbdPort=$HARNESS_DBD_PORT" \
		"SlurmUser=root" "LogFile=$HARNESS_DIR/log/slurmdbd.log" \
		"PidFile=$HARNESS_DIR/run/slurmdbd.pid" "DebugLevel=info" \
		"StorageType=accounting_storage/mysql" "StorageHost=127.0.0.1" \
		"StoragePort=$HARNESS_DB_PORT" "StorageUser=slurm" \
		"StorageLoc=slurm_acct_db" >"$etc/slurmdbd.conf")
}

_harness_db_up() {
	mariadb --no-defaults -S "$HARNESS_DIR/run/mysqld.sock" -uroot -e 'select 1' >/dev/null 2>&1
}
_harness_dbd_up() { sacctmgr -n -P show cluster >/dev/null 2>&1; }

# MariaDB (a fresh data directory: mariadb-install-db takes about a second)
# and slurmdbd, before slurmctld; the cluster registered.
_harness_accounting_start() {
	local db=$HARNESS_DIR/db
	mkdir -p "$db"
	mariadb-install-db --no-defaults --datadir="$db" --user=root \
		--auth-root-authentication-method=normal --skip-test-db \
		>"$HARNESS_DIR/log/mariadb-install.log" 2>&1 ||
		harness_die "mariadb-install-db failed: $(tail -n 5 "$HARNESS_DIR/log/mariadb-install.log")"
	SLURM_VM_HARNESS_DIR=$HARNESS_DIR setsid mariadbd --no-defaults \
		--datadir="$db" --user=root --bind-address=127.0.0.1 \
		--port="$HARNESS_DB_PORT" --socket="$HARNESS_DIR/run/mysqld.sock" \
		--pid-file="$HARNESS_DIR/run/mysqld.pid" \
		--log-error="$HARNESS_DIR/log/mariadb.log" \
		--innodb-buffer-pool-size=64M --innodb-log-file-size=16M \
		--innodb-snapshot-isolation=OFF \
		--skip-name-resolve >/dev/null 2>&1 </dev/null &
	HARNESS_DB_PID=$!
	harness_wait 30 "MariaDB to answer" _harness_db_up ||
		harness_die "MariaDB did not come up: $(tail -n 5 "$HARNESS_DIR/log/mariadb.log")"
	# The database made here, as the admin guide says: a slurmdbd that
	# makes it itself reuses the connection its first attempt failed on,
	# which Connector/C 3.4 (Debian 13 and later, TLS by default) answers
	# with error 5027 at the first query, and slurmdbd stops. Snapshot
	# isolation (on by default from MariaDB 11.6.2) Slurm does not support.
	mariadb --no-defaults -S "$HARNESS_DIR/run/mysqld.sock" -uroot -e \
		"CREATE DATABASE slurm_acct_db; CREATE USER 'slurm'@'127.0.0.1'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
		harness_die "cannot make MariaDB's slurm_acct_db and slurm user"
	# slurmdbd reads slurmdbd.conf beside $SLURM_CONF.
	SLURM_VM_HARNESS_DIR=$HARNESS_DIR setsid slurmdbd -D \
		>"$HARNESS_DIR/log/slurmdbd.out" 2>&1 </dev/null &
	HARNESS_DBD_PID=$!
	harness_wait 60 "slurmdbd to answer" _harness_dbd_up ||
		harness_die "slurmdbd did not come up: $(cat "$HARNESS_DIR/log/slurmdbd.out"; tail -n 5 "$HARNESS_DIR/log/slurmdbd.log")"
	sacctmgr -i add cluster "$(sed -n 's/^ClusterName=//p' "$HARNESS_ETC/slurm.conf")" >/dev/null ||
		harness_die "sacctmgr add cluster failed"
}

# The cgroup directories of job $1 that still hold something of it, one a
# line, in any controller of any of this cluster's nodes: a process
# anywhere below, or memory charged. An empty directory is not the job's
# any more: 24.11's slurmd, when slurmctld ended the job before its batch
# step reported (a guest killed for memory), was seen to end the extern
# stepd before it removed its empty freezer directory.
harness_cgroup_leftovers() {
	local node d usage
	for node in "${HARNESS_NODES[@]}"; do
		while read -r d; do
			usage=$(cat "$d/memory.usage_in_bytes" 2>/dev/null || echo 0)
			if [ "$usage" != 0 ] ||
				find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | grep -q .; then
				echo "$d"
			fi
		done < <(find /sys/fs/cgroup/*/slurm_"$node" -maxdepth 2 -type d \
			-name "job_$1" 2>/dev/null)
	done
}

# After slurmd: each node's slurm_<node> tree, empty directories only,
# bottom up (one with a process in it stays, and says so).
_harness_cgroup_sweep() {
	local node d
	for node in "${HARNESS_NODES[@]}"; do
		for d in /sys/fs/cgroup/*/slurm_"$node"; do
			[ -d "$d" ] || continue
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
			[ -d "$d" ] && harness_log "cgroups left by node $node: $(find "$d" -name cgroup.procs -size +0 -printf '%h ' 2>/dev/null)"
		done
	done
}

# ---------------------------------------------------------------- daemons

# The directory (made once; harness_add_catalog_image may come first).
_harness_make_dir() {
	[ -n "$HARNESS_DIR" ] && [ -d "$HARNESS_DIR" ] && return 0
	local root=${HARNESS_TMPROOT:-${TMPDIR:-/tmp}} u
	mkdir -p "$root"
	# Short: slurmstepd's sockets live in the spool directory and a unix
	# socket path has at most 107 bytes (see _harness_check_path_length).
	HARNESS_DIR=$(mktemp -d "$root/svmh.XXXXXX") ||
		harness_die "mktemp in $root failed"
	# Test users read slurm.conf and the catalog, write their work dirs.
	chmod 0755 "$HARNESS_DIR"
	HARNESS_ETC=$HARNESS_DIR/etc
	HARNESS_WORK=$HARNESS_DIR/work
	HARNESS_CATALOG=$HARNESS_DIR/vm/catalog
	HARNESS_IMAGES=$HARNESS_DIR/vm/images
	HARNESS_VM_CONF=$HARNESS_ETC/vm.conf
	HARNESS_VM_LOG=$HARNESS_DIR/log/slurm-vm.log
	mkdir -p "$HARNESS_ETC" "$HARNESS_DIR"/{state,spool,log,run,nodes} \
		"$HARNESS_DIR"/vm/{state,overlay} "$HARNESS_CATALOG" \
		"$HARNESS_IMAGES" "$HARNESS_WORK"
	chmod 0755 "$HARNESS_DIR/vm" "$HARNESS_CATALOG" "$HARNESS_IMAGES" \
		"$HARNESS_ETC" "$HARNESS_WORK"
	chmod 0700 "$HARNESS_DIR/vm/state" "$HARNESS_DIR/state"
	_harness_user_dirs
	export HARNESS_DIR HARNESS_ETC HARNESS_WORK HARNESS_CATALOG \
		HARNESS_IMAGES HARNESS_VM_CONF HARNESS_VM_LOG
	_harness_install_trap
}

# $HARNESS_WORK/USER, owned by USER, for every test user that exists.
_harness_user_dirs() {
	local u
	for u in "${HARNESS_TEST_USERS[@]}"; do
		id -u "$u" >/dev/null 2>&1 || continue
		[ -d "$HARNESS_WORK/$u" ] && continue
		mkdir -p "$HARNESS_WORK/$u"
		chown "$u:" "$HARNESS_WORK/$u"
	done
}

_harness_install_trap() {
	[ "${HARNESS_TRAP_SET:-0}" = 1 ] && return 0
	HARNESS_TRAP_SET=1
	trap '_harness_on_exit' EXIT
	# A signal ends the test through exit, so the EXIT trap cleans up.
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
}

_harness_on_exit() {
	local rc=$?
	local -
	set +e
	[ "$rc" = 0 ] || [ "$rc" = 77 ] || HARNESS_FAILED=1
	[ "${HARNESS_FAILED:-0}" = 0 ] || _harness_show_reasons
	if declare -F harness_exit_hook >/dev/null; then
		harness_exit_hook "$rc"
	fi
	harness_stop
	return "$rc"
}

# Why a guest failed, as its prolog recorded it (with its console's tail):
# the epilog removes it, so it is shown while a job still holds it.
_harness_show_reasons() {
	local f
	for f in "$HARNESS_DIR"/vm/state/*/reason "$HARNESS_DIR"/nodes/*/vm/state/*/reason; do
		[ -s "$f" ] || continue
		echo "---- $f"
		tail -n 40 "$f"
	done >&2
}

_harness_tail_logs() {
	local f
	for f in "$HARNESS_DIR"/log/*; do
		[ -s "$f" ] || continue
		echo "---- last lines of $f"
		tail -n "${1:-15}" "$f"
	done >&2
	sinfo -R 2>/dev/null >&2 || true
}

# Up, or dead (then the caller reports it at once instead of waiting).
_harness_ctld_up() {
	_harness_alive "$HARNESS_CTLD_PID" || return 0
	scontrol ping >/dev/null 2>&1
}

_harness_nodes_idle() {
	local states node
	for node in "${HARNESS_NODES[@]}"; do
		_harness_alive "${HARNESS_NODE_PID[$node]}" || {
			HARNESS_DEAD_NODE=$node
			return 0
		}
	done
	states=$(sinfo -h -N -o '%N %T' 2>/dev/null) || return 1
	[ "$(printf '%s\n' "$states" | awk '$2 == "idle"' | wc -l)" = "${#HARNESS_NODES[@]}" ]
}

_harness_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

_harness_preflight() {
	local f
	[ "$(id -u)" = 0 ] || harness_skip "the cluster harness needs root (slurmd runs jobs as their users)"
	for f in slurmctld slurmd sinfo srun sbatch scontrol; do
		command -v "$f" >/dev/null || harness_skip "$f is not installed (scripts/install-deps.sh)"
	done
	[ -f "$HARNESS_SLURM_LIBDIR/auth_none.so" ] ||
		harness_skip "Slurm's auth_none.so is not in $HARNESS_SLURM_LIBDIR"
	for f in prolog/slurm-vm-prolog epilog/slurm-vm-epilog spank_vm/.libs/spank_vm.so; do
		[ "${HARNESS_INSTALLED:-0}" = 1 ] && break
		[ -e "$BUILD_DIR/$f" ] || harness_die "$BUILD_DIR/$f is missing: build first (BUILD_DIR=$BUILD_DIR)"
	done
	for f in slurm gres plugstack vm; do
		[ -f "$HARNESS_ETC_EXAMPLES/$f.conf.example" ] ||
			harness_die "$HARNESS_ETC_EXAMPLES/$f.conf.example is missing"
	done
}

# harness_start [N]: the cluster, from nothing; returns when every node is
# idle. N (or HARNESS_NODE_COUNT): N nodes of their own (see
# harness_node_isolate's comment).
harness_start() {
	local -
	set +e # callers may run under set -e; errors here are explicit
	local t0 node log conf count=${1:-${HARNESS_NODE_COUNT:-}}
	[ "$HARNESS_STARTED" = 1 ] && return 0
	[ -z "$count" ] || harness_add_netns_nodes "$count"
	t0=$(harness_now)
	_harness_preflight
	_harness_make_dir
	_harness_user_dirs
	HARNESS_GPU_GROUPS=${HARNESS_GPU_GROUPS:-"12 13"}
	HARNESS_IBVF_GROUPS=${HARNESS_IBVF_GROUPS:-"40 41"}
	[ "${#HARNESS_NODES[@]}" -gt 0 ] ||
		harness_add_node "$(hostname -s | tr 'A-Z_' 'a-z-')" 127.0.0.1
	# The single default node is this host: jobs see its real hostname.
	[ "${#HARNESS_NODES[@]}" = 1 ] && [ "$HARNESS_NETNS" = 0 ] &&
		HARNESS_NODE_HOST[${HARNESS_NODES[0]}]=$(hostname)
	HARNESS_CTLD_ADDR=127.0.0.1
	[ "$HARNESS_NETNS" = 1 ] && _harness_netns_setup
	_harness_check_path_length
	_harness_read_hw
	HARNESS_CTLD_PORT=$(harness_free_port)
	[ -n "$HARNESS_CTLD_PORT" ] || harness_die "no free port for slurmctld"
	HARNESS_STARTED=1

	if [ "${HARNESS_LIBVIRT:-0}" = 1 ]; then
		[ -f "$HARNESS_REPO/tests/cluster/libvirt.sh" ] ||
			harness_die "HARNESS_LIBVIRT=1 but tests/cluster/libvirt.sh does not exist"
		# shellcheck source=/dev/null
		. "$HARNESS_REPO/tests/cluster/libvirt.sh"
		HARNESS_LIBVIRT_STARTED=1
		if [ "$HARNESS_NETNS" = 1 ]; then
			for node in "${HARNESS_NODES[@]}"; do
				_harness_node_prefix "$node"
				SLURM_VM_HARNESS_DIR=$HARNESS_DIR libvirt_node_start \
					"$HARNESS_DIR/nodes/$node/libvirt" "${HARNESS_NODE_PREFIX[@]}" ||
					harness_die "libvirtd of node $node did not start"
			done
		else
			libvirt_start || harness_die "libvirt_start failed"
		fi
	fi

	_harness_snapshot_build
	_harness_write_config
	[ "${HARNESS_ACCOUNTING:-0}" = 1 ] && _harness_accounting_config
	# A test may change the generated files before any daemon reads them.
	if declare -F harness_config_hook >/dev/null; then
		harness_config_hook || harness_die "harness_config_hook failed"
	fi
	[ "${#HARNESS_NODES[@]}" -gt 1 ] || [ "$HARNESS_NETNS" = 1 ] && _harness_node_configs
	export SLURM_CONF=$HARNESS_ETC/slurm.conf

	[ "${HARNESS_ACCOUNTING:-0}" = 1 ] && _harness_accounting_start
	# -D: foreground daemons, run in the background in their own session.
	# The environment marks them (and the slurmstepd they start) as ours.
	SLURM_VM_HARNESS_DIR=$HARNESS_DIR setsid slurmctld -D -i -f "$SLURM_CONF" \
		>"$HARNESS_DIR/log/slurmctld.out" 2>&1 </dev/null &
	HARNESS_CTLD_PID=$!
	if ! harness_wait 30 "slurmctld to answer" _harness_ctld_up ||
		! _harness_alive "$HARNESS_CTLD_PID"; then
		_harness_tail_logs 25
		harness_die "slurmctld did not come up (logs above, dir $HARNESS_DIR)"
	fi
	for node in "${HARNESS_NODES[@]}"; do
		log=$HARNESS_DIR/log/slurmd-$node.out
		_harness_node_prefix "$node"
		conf=$SLURM_CONF
		[ -f "$HARNESS_DIR/nodes/$node/etc/slurm.conf" ] && conf=$HARNESS_DIR/nodes/$node/etc/slurm.conf
		SLURM_VM_HARNESS_DIR=$HARNESS_DIR SLURM_CONF=$conf setsid \
			"${HARNESS_NODE_PREFIX[@]}" slurmd -D -N "$node" \
			-f "$conf" >"$log" 2>&1 </dev/null &
		HARNESS_NODE_PID[$node]=$!
	done
	HARNESS_DEAD_NODE=""
	if ! harness_wait "${HARNESS_START_TIMEOUT:-60}" "all nodes idle" _harness_nodes_idle ||
		[ -n "$HARNESS_DEAD_NODE" ]; then
		[ -z "$HARNESS_DEAD_NODE" ] || harness_log "slurmd of node $HARNESS_DEAD_NODE exited"
		sinfo -N -l >&2 || true
		_harness_tail_logs 25
		harness_die "the node(s) never became idle (logs above, dir $HARNESS_DIR)"
	fi
	HARNESS_NODELIST=$(IFS=,; echo "${HARNESS_NODES[*]}")
	export HARNESS_NODELIST
	HARNESS_START_SECONDS=$(harness_elapsed "$t0")
	harness_log "cluster up in ${HARNESS_START_SECONDS}s: ${HARNESS_NODES[*]}, SLURM_CONF=$SLURM_CONF"
}

# The pids of processes (slurmstepd, job tasks, daemons of a killed test)
# whose environment, working directory or open files point into DIR.
_harness_pids_in() {
	local dir=$1
	{
		grep -lzE "^(SLURM_VM_HARNESS_DIR|SLURM_CONF)=$dir(/|\$)" \
			/proc/[0-9]*/environ 2>/dev/null
		find /proc/[0-9]*/cwd /proc/[0-9]*/fd -maxdepth 1 \
			\( -lname "$dir" -o -lname "$dir/*" \) 2>/dev/null
	} | cut -d/ -f3 | sort -un
}

# The ancestors of this shell: never swept (a test runs from inside DIR).
_harness_ancestors() {
	local p=$BASHPID
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		echo "$p"
		p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null)
	done
}

# harness_sweep DIR: kills, by pid, every process that belongs to the
# cluster in DIR (leftover slurmstepd, job tasks, daemons of a killed test).
harness_sweep() {
	local -
	set +e
	local dir=$1 pid pids sig round anc
	[ -n "$dir" ] && [ "$dir" != / ] || return 0
	anc=" $(_harness_ancestors | tr '\n' ' ') "
	for round in 1 2 3; do
		pids=()
		# Not our own pipeline: its programs would match SLURM_CONF.
		for pid in $(SLURM_CONF="" SLURM_VM_HARNESS_DIR="" _harness_pids_in "$dir"); do
			case "$anc" in *" $pid "*) continue ;; esac
			# libvirt.sh's daemons may be shared with other tests:
			# libvirt_stop decides about them.
			case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
			libvirtd | virtlogd | virtqemud)
				# A node's own daemons (nodes of their own) are.
				grep -qzE "^SLURM_VM_HARNESS_DIR=$dir(/|\$)" \
					"/proc/$pid/environ" 2>/dev/null || continue ;;
			esac
			[ -d "/proc/$pid" ] && pids+=("$pid")
		done
		[ "${#pids[@]}" = 0 ] && break
		sig=TERM
		[ "$round" -ge 2 ] && sig=KILL
		harness_log "sweeping $sig: $(ps -o pid=,comm= -p "$(IFS=,; echo "${pids[*]}")" 2>/dev/null | tr -s ' \n' ' ')"
		kill -s "$sig" "${pids[@]}" 2>/dev/null
		sleep 1
	done
	_harness_netns_teardown "$dir"
}

_harness_kill_wait() { # _harness_kill_wait SECONDS PID...
	local secs=$1 pid deadline
	shift
	for pid in "$@"; do _harness_alive "$pid" && kill -TERM "$pid" 2>/dev/null; done
	deadline=$(($(date +%s) + secs))
	for pid in "$@"; do
		while _harness_alive "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do
			sleep 0.2
		done
		_harness_alive "$pid" && kill -KILL "$pid" 2>/dev/null
	done
	wait "$@" 2>/dev/null
	return 0
}

# harness_stop: everything harness_start started, then the directory (kept
# with HARNESS_KEEP=1 or after a failure). Safe to call twice or without a
# start.
harness_stop() {
	local -
	set +e
	local node pids=() dir=$HARNESS_DIR
	[ -n "$dir" ] || return 0
	[ "${HARNESS_STOPPING:-0}" = 1 ] && return 0
	HARNESS_STOPPING=1
	if [ "$HARNESS_STARTED" = 1 ]; then
		if _harness_alive "$HARNESS_CTLD_PID"; then
			local jobs
			jobs=$(timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
			# shellcheck disable=SC2086 # a list of job ids
			[ -z "${jobs// /}" ] || timeout 10 scancel --quiet $jobs >/dev/null 2>&1
			# Epilogs run after a cancel: give them a moment.
			harness_wait 15 "jobs to end" \
				sh -c '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' || true
		fi
		for node in "${HARNESS_NODES[@]}"; do
			[ -n "${HARNESS_NODE_PID[$node]:-}" ] && pids+=("${HARNESS_NODE_PID[$node]}")
		done
		[ "${#pids[@]}" -gt 0 ] && _harness_kill_wait 10 "${pids[@]}"
		[ -n "$HARNESS_CTLD_PID" ] && _harness_kill_wait 10 "$HARNESS_CTLD_PID"
		[ -n "$HARNESS_DBD_PID" ] && _harness_kill_wait 10 "$HARNESS_DBD_PID"
		[ -n "$HARNESS_DB_PID" ] && _harness_kill_wait 20 "$HARNESS_DB_PID"
		[ "${HARNESS_ACCOUNTING:-0}" = 1 ] && _harness_cgroup_sweep
	fi
	if [ "$HARNESS_LIBVIRT_STARTED" = 1 ]; then
		if [ "$HARNESS_NETNS" = 1 ]; then
			for node in "${HARNESS_NODES[@]}"; do
				libvirt_node_stop "$dir/nodes/$node/libvirt" ||
					harness_log "libvirtd of node $node: stop failed"
				_harness_cgroup_partition "$node" remove
			done
		else
			libvirt_stop || harness_log "libvirt_stop failed"
		fi
		HARNESS_LIBVIRT_STARTED=0
	fi
	harness_sweep "$dir"
	if [ "${HARNESS_KEEP:-0}" = 1 ] || [ "${HARNESS_FAILED:-0}" = 1 ]; then
		harness_log "kept $dir (logs in $dir/log)"
	else
		rm -rf --one-file-system "$dir"
	fi
	# Ready for another harness_start (with other nodes) in the same test.
	HARNESS_STARTED=0 HARNESS_DIR="" HARNESS_CTLD_PID=""
	HARNESS_DB_PID="" HARNESS_DBD_PID=""
	HARNESS_NODES=() HARNESS_PORTS_TAKEN=""
	HARNESS_NODE_PID=() HARNESS_NODE_ADDR=() HARNESS_NODE_PORT=()
	HARNESS_NODE_HOST=() HARNESS_NODE_ISOLATED=() HARNESS_NODE_NETNS=()
	HARNESS_NETNS=0
	unset SLURM_CONF
	HARNESS_STOPPING=0
}
