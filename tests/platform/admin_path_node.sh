#!/bin/bash
# The node side of tests/platform/test_admin_path.sh: runs inside a clean
# Debian root (tests/platform/root.sh enter) as root, and does what
# doc/admin-guide.md tells an admin, nothing more:
#   section 2.0   install the built packages, the guide's mkdir line
#   section 3     the examples from /usr/share/doc/slurm-vm/examples copied
#                 to /etc/slurm with this machine's values for the
#                 @PLACEHOLDERS@ (DomainType=qemu, CpuMode=maximum,
#                 DeviceAttach=emulate: no KVM, no IOMMU, no GPU or HCA);
#                 the guide's plugstack.conf.d command
#   (check)       every snippet of the guide is in the files so made
#                 (doc/check-snippets.sh --rendered)
#   section 5     a user; the stock cloud image into the catalog
#   section 6     slurm-vm check-config reports nothing (no problem, no
#                 warning), before the daemons start
#   daemons       munged, virtlogd, libvirtd, slurmctld, slurmd started as
#                 their systemd units' ExecStart= lines say (no systemd)
#   section 7     the user's first VM job: its srun task's output must
#                 come from inside the guest.
#   two nodes     n1 and n2, each its own network, mount and UTS namespace
#                 (as tests/cluster/harness.sh's nodes of their own: a veth
#                 to a bridge made here, the underlay, their NodeAddr on
#                 it), with the system paths inside: its own /run,
#                 /var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt and
#                 OverlayDir, its own virtlogd, libvirtd and slurmd; the
#                 rest (/etc, /home, the spool's parent, munge's socket) is
#                 the root's. Then the guide's job network (4.1) and shares
#                 (4.2) turned on, check-config silent on n1, and one -N2
#                 job: a step on both guests, then Open MPI over PMIx
#                 (srun --mpi=pmix) across them, built by the user with
#                 mpicc into the shared home.
# Everything it starts is stopped by pid file on exit, failed or not.
#
#   admin_path_node.sh SRC DEBS IMAGE OUT
# SRC: the source tree (read: the guide, doc/check-snippets.sh); DEBS: the
# built .debs; IMAGE: the stock cloud image (tests/guest/build-cloud.sh);
# OUT: a host directory for the logs and the mount namespace's id.
set -euo pipefail
shopt -s extglob

src=$1 debs=$2 image=$3 out=$4
guide=$src/doc/admin-guide.md
user=alice
node=$(hostname -s)
fails=0
t0=$(date +%s)

say() { echo "admin-path: [$(($(date +%s) - t0))s] $*"; }
ok() { say "ok: $*"; }
fail() {
	say "FAIL: $*"
	fails=$((fails + 1))
}
die() {
	say "FAIL: $*"
	exit 1
}

# The host side finds anything left in this mount namespace by its id.
readlink /proc/self/ns/mnt >"$out/mntns"

# ------------------------------------------------------------ daemons
# Started as the distribution's units would: ExecStart= (with the unit's
# Environment=, EnvironmentFile= and RuntimeDirectory=), as its User=. Each
# one's pid goes into $pids (stopped in reverse order on exit).
pids=/run/admin-path.pids
: >"$pids"

unit_key() { # unit key: the unit file's value of key (last one wins)
	sed -n "s/^$2=//p" "/lib/systemd/system/$1.service" | tail -n1
}

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# start_unit UNIT PIDFILE: PIDFILE is where the daemon writes its pid (the
# unit's PIDFile= or the daemon's own -p/--pidfile default). In a node's
# namespaces when $in_node names one (on_node): its /run is then
# $in_node_run here.
in_node="" in_node_run=/run
start_unit() {
	local unit=$1 pidfile=$2 exec envfile runtime type user cmd pid
	exec=$(unit_key "$unit" ExecStart)
	[ -n "$exec" ] || die "$unit.service has no ExecStart="
	envfile=$(unit_key "$unit" EnvironmentFile)
	runtime=$(unit_key "$unit" RuntimeDirectory)
	type=$(unit_key "$unit" Type)
	user=$(unit_key "$unit" User)
	[ -n "$runtime" ] && for d in $runtime; do
		mkdir -p "$in_node_run/$d"
		[ -z "$user" ] || chown "$user:" "$in_node_run/$d"
	done
	# systemd's "-" prefixes: ignore a missing file / a failure.
	cmd=$(
		set +u -a
		# Environment= lines, then EnvironmentFile= (systemd's order).
		eval "$(sed -n 's/^Environment=//p' "/lib/systemd/system/$unit.service")"
		# shellcheck disable=SC1090 # the unit's environment file
		[ -z "$envfile" ] || [ ! -r "${envfile#-}" ] || . "${envfile#-}"
		set +a
		eval "echo ${exec#-}"
	)
	# libvirtd's --timeout (idle exit) relies on libvirtd.socket starting
	# it again on the next connection: no socket activation here.
	[ "$unit" != libvirtd ] || cmd=${cmd/ --timeout [0-9]*([0-9])/}
	local -a argv
	read -r -a argv <<<"$cmd"
	say "starting $unit${in_node:+ on $in_node} (Type=${type:-simple}${user:+ User=$user}): $cmd"
	rm -f "$pidfile"
	[ -z "$user" ] || argv=(setpriv --reuid="$user" --regid="$user" --init-groups "${argv[@]}")
	[ -z "$in_node" ] || argv=(nsenter --target="${node_holder[$in_node]}" --net --mount --uts -- "${argv[@]}")
	if [ "${type:-simple}" = forking ]; then
		"${argv[@]}"
	else
		# A simple or notify service stays in the foreground: ours in
		# the background, its pid recorded by us.
		setsid "${argv[@]}" >>"$out/$unit${in_node:+-$in_node}.out" 2>&1 </dev/null &
		echo $! >"$pidfile.ours"
		pidfile=$pidfile.ours
	fi
	for _ in $(seq 1 100); do
		pid=$(tr -dc 0-9 <"$pidfile" 2>/dev/null || true)
		alive "$pid" && break
		sleep 0.1
	done
	alive "$pid" || die "$unit${in_node:+ on $in_node} did not start (see $out/$unit.out and its log)"
	echo "$unit${in_node:+@$in_node} $pid" >>"$pids"
}

stop_all() {
	local unit pid
	# The jobs first, so their epilogs run while the daemons still do.
	if [ -e /run/admin-path.slurm-up ]; then
		scancel --user="$user" 2>/dev/null || true
		for _ in $(seq 1 120); do
			[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
			sleep 1
		done
	fi
	# The guests and networks each libvirtd started (qemu and dnsmasq
	# outlive it), on this node and on each of the node namespaces.
	for n in "" $nodes_made; do
		on_node "$n" virsh -c qemu:///system version >/dev/null 2>&1 || continue
		for d in $(on_node "$n" virsh -c qemu:///system list --name 2>/dev/null); do
			fail "guest $d still running at the end${n:+ on $n}"
			on_node "$n" virsh -c qemu:///system destroy "$d" >/dev/null 2>&1 || true
		done
		for d in $(on_node "$n" virsh -c qemu:///system net-list --name 2>/dev/null); do
			on_node "$n" virsh -c qemu:///system net-destroy "$d" >/dev/null 2>&1 || true
		done
	done
	tac "$pids" | while read -r unit pid; do
		alive "$pid" || continue
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			alive "$pid" || break
			sleep 0.1
		done
		alive "$pid" && kill -9 "$pid" 2>/dev/null
		say "stopped $unit ($pid)"
	done
	for f in /run/libvirt/qemu/*.pid /run/libvirt/network/*.pid \
		"$nodes_dir"/*/run/libvirt/qemu/*.pid "$nodes_dir"/*/run/libvirt/network/*.pid; do
		[ -e "$f" ] || continue
		pid=$(tr -dc 0-9 <"$f")
		alive "$pid" && kill -9 "$pid" 2>/dev/null
	done
	# The logs, for whoever reads the test's output.
	cp -r /var/log/slurm "$out/log-slurm" 2>/dev/null || true
	cp -r /var/log/libvirt "$out/log-libvirt" 2>/dev/null || true
	for n in $nodes_made; do
		cp -r "$nodes_dir/$n/log-libvirt" "$out/log-libvirt-$n" 2>/dev/null || true
	done
	nodes_teardown
	true
}
trap 'stop_all' EXIT

# ------------------------------------------------------------ node namespaces
# Nodes n1 and n2 for the -N2 job, each in network, mount and UTS
# namespaces of its own (Debian's slurmd is one per host: no
# --enable-multiple-slurmd, so one slurmd per hostname and network), as
# tests/cluster/harness.sh's nodes of their own: a bridge here with the
# controller's address (the underlay), a veth to eth0 in each node
# (MTU 9000, as section 4.1 asks), the node's NodeAddr on it. Inside, the
# system paths are the node's own where two nodes on one machine would
# collide (libvirt's runtime, state, logs and cache; slurm-vm's StateDir
# under /run and OverlayDir; the daemons' pid files in /run; /tmp, Slurm's
# TmpFS, where each node's PMIx server makes spmix_appdir_<uid>_<step>):
# copies of the root's as the packages left them. /etc, /home and munge's socket are the
# root's. Each node's namespaces are held by a process of their own (a
# sleep, stopped by pid with the daemons): binding them to files instead
# (unshare --net=FILE, as the harness) failed here now and then with
# EINVAL. Each link is deleted on exit.
nodes_dir=/run/admin-path-nodes
nodes_made="" bridge=""
declare -A node_addr=() node_holder=()

on_node() { # on_node NODE CMD...: CMD in NODE's namespaces ("" for here)
	local n=$1
	shift
	if [ -n "$n" ]; then
		nsenter --target="${node_holder[$n]}" --net --mount --uts -- "$@"
	else
		"$@"
	fi
}

# A free /24 (10.213.X.0 that no address or route of this host touches):
# tests/cluster/harness.sh's choice, so the two never take one subnet.
eval "$(sed -n '/^_harness_free_subnet() {$/,/^}$/p' "$src/tests/cluster/harness.sh")"
declare -F _harness_free_subnet >/dev/null || die "tests/cluster/harness.sh has no _harness_free_subnet"

nodes_setup() { # nodes_setup NODE...
	local net n i=0 d veth
	net=$(_harness_free_subnet) || die "no free 10.213.X.0/24 for the node network"
	bridge=svba$$
	echo "$bridge" >>"$out/links"
	ip link add "$bridge" mtu 9000 type bridge &&
		ip addr add "$net.1/24" dev "$bridge" &&
		ip link set "$bridge" up || die "cannot make the underlay bridge $bridge"
	ctl_addr=$net.1
	# munged's socket directory (its unit's RuntimeDirectory=), shared.
	mkdir -p "$nodes_dir" /run/munge
	cp /etc/hosts "$nodes_dir/hosts"
	for n in "$@"; do
		i=$((i + 1))
		node_addr[$n]=$net.$((10 + i))
		echo "${node_addr[$n]} $n" >>"$nodes_dir/hosts"
	done
	i=0
	for n in "$@"; do
		i=$((i + 1))
		d=$nodes_dir/$n veth=svva$$$i
		echo "$veth" >>"$out/links"
		mkdir -p "$d/run/munge" "$d/run/lock"
		mkdir -p -m 1777 "$d/tmp"
		mkdir -p /var/lib/libvirt /var/log/libvirt /var/cache/libvirt /var/lib/slurm-vm/overlay
		cp -a /var/lib/libvirt "$d/lib-libvirt"
		cp -a /var/log/libvirt "$d/log-libvirt"
		cp -a /var/cache/libvirt "$d/cache-libvirt"
		cp -a /var/lib/slurm-vm/overlay "$d/overlay"
		nodes_made+=" $n"
		# shellcheck disable=SC2016 # expanded by the inner shell
		unshare --net --mount --uts --propagation private -- \
			sh -ec 'hostname "$1"; ip link set lo up
				ip link add eth0 mtu 9000 type veth peer name "$4" mtu 9000 netns "$5"
				ip addr add "$2/24" dev eth0; ip link set eth0 up
				mount --bind "$3/lib-libvirt" /var/lib/libvirt
				mount --bind "$3/log-libvirt" /var/log/libvirt
				mount --bind "$3/cache-libvirt" /var/cache/libvirt
				mount --bind "$3/overlay" /var/lib/slurm-vm/overlay
				mount --bind "$6" /etc/hosts
				mount --bind "$3/tmp" /tmp
				mount --bind /run/munge "$3/run/munge"
				mount --rbind "$3/run" /run
				: >/run/admin-path-node.ready
				exec sleep infinity' \
			ns-setup "$n" "${node_addr[$n]}" "$d" "$veth" "$$" "$nodes_dir/hosts" \
			>"$out/ns-$n.log" 2>&1 </dev/null &
		node_holder[$n]=$!
		echo "namespaces@$n ${node_holder[$n]}" >>"$pids"
		for _ in $(seq 1 100); do
			if [ -e "$d/run/admin-path-node.ready" ] || ! alive "${node_holder[$n]}"; then
				break
			fi
			sleep 0.1
		done
		[ -e "$d/run/admin-path-node.ready" ] &&
			ip link set "$veth" master "$bridge" up ||
			die "the namespaces of node $n: $(cat "$out/ns-$n.log")"
		# The host side finds what is left in the node's mounts by id.
		on_node "$n" readlink /proc/self/ns/mnt >>"$out/mntns"
	done
}

nodes_teardown() {
	local l
	[ -e "$out/links" ] || return 0
	while read -r l; do
		! ip link show "$l" >/dev/null 2>&1 || ip link del "$l" 2>/dev/null || true
	done <"$out/links"
}

# ------------------------------------------------------------ 2.0 packages
# The guide's command for a compute node, with the .debs built here.
main_debs=()
for p in slurm-vm slurm-vm-spank slurm-vm-agent; do
	f=$(find "$debs" -maxdepth 1 -name "${p}_*_amd64.deb" | head -n1)
	[ -n "$f" ] || die "no $p .deb in $debs"
	main_debs+=("$f")
done
# A root whose apt lists were dropped: fetch them, as on any new host.
if ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
	say "apt-get update"
	apt-get update -q >"$out/apt-update.log" 2>&1 || die "apt-get update failed"
fi
say "apt-get install ${main_debs[*]##*/}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${main_debs[@]}" \
	>"$out/apt.log" 2>&1 || {
	tail -20 "$out/apt.log"
	die "apt-get install of the packages failed"
}
ok "the packages install on a clean Debian 12 with Slurm and libvirt-daemon-system"

# A block of host commands of the guide: the one that contains TEXT.
guide_block() { # guide_block TEXT
	awk -v want="$1" '
		/^<!-- example: host commands -->/ { marked = 1; next }
		/^```/ && marked && !inblock { inblock = 1; body = ""; next }
		/^```/ && inblock { inblock = 0; marked = 0; if (index(body, want)) { printf "%s", body; exit } next }
		inblock { body = body $0 "\n"; next }
		{ marked = 0 }' "$guide"
}

run_guide_block() { # run_guide_block TEXT [NODE]: on NODE's namespaces
	local block
	block=$(guide_block "$1")
	[ -n "$block" ] || die "the guide has no host commands with '$1'"
	say "the guide's commands${2:+ on $2}: $(printf '%s' "$block" | tr '\n' ' ' | tr -s ' \t' ' ')"
	on_node "${2:-}" bash -euo pipefail -c "$block" || die "the guide's commands failed: $block"
}

run_guide_block "mkdir -p /etc/slurm/vm-images.d"
nodes_setup n1 n2
for n in $nodes_made; do
	run_guide_block "mkdir -p /etc/slurm/vm-images.d" "$n"
done

# ------------------------------------------------------------ 3 configuration
examples=/usr/share/doc/slurm-vm/examples

# render EXAMPLE OUT KEY=VALUE...: every @KEY@ of the settings replaced
# (comments stay as written); a placeholder left over is a failure.
render() {
	local example=$1 dst=$2 line kv text="" left
	shift 2
	[ -r "$example" ] || die "the packages installed no $example"
	while IFS= read -r line || [ -n "$line" ]; do
		if [[ $line != *@*@* ]] || [[ $line =~ ^[[:space:]]*# ]]; then
			text+=$line$'\n'
			continue
		fi
		for kv in "$@"; do
			line=${line//@"${kv%%=*}"@/"${kv#*=}"}
		done
		text+=$line$'\n'
	done <"$example"
	left=$(printf '%s' "$text" | grep -v '^[[:space:]]*#' | grep -o '@[A-Z0-9_]*@' | sort -u | tr '\n' ' ' || true)
	[ -z "$left" ] || die "$example: no value for $left"
	printf '%s' "$text" >"$dst"
	chmod 0644 "$dst"
}

# This machine, as `slurmd -C` describes it (no GRES: no GPU, no HCA), and
# n1 and n2 as the same machine at their NodeAddr. slurmctld listens on
# the underlay's address, which the node namespaces reach.
hw=$(slurmd -C | head -n1)
nodeline="${hw/NodeName=* CPUs=/NodeName=$node CPUs=} State=UNKNOWN"
for n in $nodes_made; do
	nodeline+=$'\n'"${hw/NodeName=* CPUs=/NodeName=$n NodeAddr=${node_addr[$n]} CPUs=} State=UNKNOWN"
done
render "$examples/slurm.conf.example" /etc/slurm/slurm.conf \
	CLUSTER=admintest CONTROL_MACHINE="$node" CONTROL_ADDR="$ctl_addr" \
	SLURMCTLD_PORT=6817 SLURMD_PORT=6818 SLURM_USER=slurm \
	AUTH_TYPE=auth/munge CRED_TYPE=cred/munge \
	STATE_DIR=/var/lib/slurm/slurmctld SPOOL_DIR=/var/lib/slurm/slurmd \
	LOG_DIR=/var/log/slurm RUN_DIR=/run \
	PROCTRACK=proctrack/linuxproc TASK_PLUGIN=task/affinity \
	PROLOG_FLAGS=Alloc,Contain PROLOG=/usr/sbin/slurm-vm-prolog \
	EPILOG=/usr/sbin/slurm-vm-epilog PLUGSTACK=/etc/slurm/plugstack.conf \
	DEF_MEM_PER_CPU=1024 NODES="$nodeline" NODELIST="$node${nodes_made// /,}"
render "$examples/vm.conf.example" /etc/slurm/vm.conf \
	IMAGE_CATALOG=/etc/slurm/vm-images.d IMAGE_DIRS=/var/lib/slurm-vm/images \
	STATE_DIR=/run/slurm-vm OVERLAY_DIR=/var/lib/slurm-vm/overlay \
	LOG_FILE=/var/log/slurm/slurm-vm.log LIBVIRT_URI=qemu:///system \
	DOMAIN_TYPE=qemu CPU_MODE=maximum DEVICE_ATTACH=emulate
# A node without devices: gres.conf has no lines for it.
grep '^#' "$examples/gres.conf.example" >/etc/slurm/gres.conf
chmod 0644 /etc/slurm/gres.conf
cp "$examples/cli_filter.lua" /etc/slurm/cli_filter.lua
chmod 0644 /etc/slurm/cli_filter.lua
run_guide_block "plugstack.conf.d/slurm-vm.conf"
ok "configuration from the installed examples and the guide's commands"

# The guide's snippets are what this node runs: the files as made above,
# under the names check-snippets expects (gres.conf: this node has no
# device lines, so its snippets are checked against the example alone).
view=/run/admin-path-etc
mkdir -p "$view"
ln -s /etc/slurm/slurm.conf /etc/slurm/vm.conf /etc/slurm/cli_filter.lua "$view/"
ln -s /etc/slurm/plugstack.conf.d/slurm-vm.conf "$view/plugstack.conf"
ln -s "$examples/gres.conf.example" "$view/gres.conf"
if "$src/doc/check-snippets.sh" --guide "$guide" --repo "$src" --rendered "$view" \
	>"$out/check-snippets.out" 2>&1; then
	ok "every snippet of the guide is in this node's files"
else
	cat "$out/check-snippets.out"
	fail "the guide's snippets differ from this node's files"
fi

# This test bed's timeouts, as section 3's timeout rule asks: two guests
# booting at once under TCG (no KVM here) on two cores took longer than the
# example's BootTimeout=300 (and an earlier try's 240), so 600 s, and
# PrologEpilogTimeout >= BootTimeout + ShutdownTimeout + 60.
sed -i 's/^BootTimeout=300$/BootTimeout=600/' /etc/slurm/vm.conf
sed -i 's/^PrologEpilogTimeout=600$/PrologEpilogTimeout=720/' /etc/slurm/slurm.conf
grep -qx BootTimeout=600 /etc/slurm/vm.conf && grep -qx PrologEpilogTimeout=720 /etc/slurm/slurm.conf ||
	die "the examples' BootTimeout or PrologEpilogTimeout line changed: update the test bed's timeouts"
# Section 4.1 for the -N2 job's job network: a JobNetworkVni range (the
# example's 100000-16000000) at least as wide as MaxJobId (Slurm's default
# is wider: check-config warns), set before slurmctld starts.
echo "MaxJobId=15900001" >>/etc/slurm/slurm.conf

# ------------------------------------------------------------ the user
useradd -m -s /bin/bash "$user"

# ------------------------------------------------------------ 5 the image
cp --reflink=auto "$image" /var/lib/slurm-vm/images/debian12.qcow2
chmod 0644 /var/lib/slurm-vm/images/debian12.qcow2
cat >/etc/slurm/vm-images.d/debian12.image <<EOF
Path=/var/lib/slurm-vm/images/debian12.qcow2
Format=qcow2
Description=Debian 12 generic cloud image (tests/guest/build-cloud.sh)
EOF
chmod 0644 /etc/slurm/vm-images.d/debian12.image

# ------------------------------------------------------------ 6 check-config
rc=0
slurm-vm check-config >"$out/check-config.out" 2>&1 || rc=$?
if [ "$rc" = 0 ] && ! grep -q '^\(problem\|warning\):' "$out/check-config.out"; then
	ok "slurm-vm check-config reports nothing"
else
	cat "$out/check-config.out"
	fail "slurm-vm check-config (exit $rc) on a node set up as the guide says"
fi

# ------------------------------------------------------------ daemons
# munge: Debian's postinst made /etc/munge/munge.key.
start_unit munge /run/munge/munged.pid
start_unit virtlogd /run/virtlogd.pid.x
start_unit libvirtd /run/libvirtd.pid.x
for _ in $(seq 1 300); do
	virsh -q -c qemu:///system version >/dev/null 2>&1 && break
	sleep 0.2
done
virsh -q -c qemu:///system version >/dev/null 2>&1 || die "libvirtd does not answer"
start_unit slurmctld /run/slurmctld.pid
start_unit slurmd "/run/slurmd-$node.pid"
touch /run/admin-path.slurm-up
wait_idle() { # wait_idle NODE: within a minute, or die
	for _ in $(seq 1 60); do
		sinfo -h -n "$1" -o %t 2>/dev/null | grep -qx idle && return 0
		sleep 1
	done
	die "node $1 not idle: $(sinfo -h -N -o '%N %t %E' 2>&1)"
}
wait_idle "$node"
ok "munged, virtlogd, libvirtd, slurmctld and slurmd run; $node is idle"

# The node namespaces' daemons: their own virtlogd, libvirtd and slurmd,
# the same units' ExecStart= lines.
for n in $nodes_made; do
	in_node=$n in_node_run=$nodes_dir/$n/run
	start_unit virtlogd "$in_node_run/virtlogd.pid.x"
	start_unit libvirtd "$in_node_run/libvirtd.pid.x"
	for _ in $(seq 1 300); do
		on_node "$n" virsh -q -c qemu:///system version >/dev/null 2>&1 && break
		sleep 0.2
	done
	on_node "$n" virsh -q -c qemu:///system version >/dev/null 2>&1 ||
		die "libvirtd on $n does not answer"
	start_unit slurmd "$in_node_run/slurmd-$n.pid"
done
in_node="" in_node_run=/run
for n in $nodes_made; do
	wait_idle "$n"
done
ok "nodes$nodes_made run their own virtlogd, libvirtd and slurmd in namespaces of their own; idle"

# What the node namespaces still share is the cgroup tree (one kernel):
# libvirt puts each qemu in machine/qemu-<domain id>-<domain name>, the
# guests of one job have one name, and every fresh libvirtd numbers its
# first domain 1, so both qemu of the -N2 job landed in one memory cgroup
# bounded at one node's job memory, and one was OOM-killed
# (tests/cluster/LIBVIRT.md). n2's libvirtd numbers one paused domain
# first, so its guest's id and cgroup differ from n1's.
cat >"$out/id-bump.xml" <<'EOF'
<domain type='qemu'><name>admin-path-id-bump</name><memory unit='MiB'>32</memory>
<os><type arch='x86_64'>hvm</type></os></domain>
EOF
on_node n2 virsh -q -c qemu:///system create --paused "$out/id-bump.xml" >"$out/id-bump.out" 2>&1 &&
	on_node n2 virsh -q -c qemu:///system destroy admin-path-id-bump >>"$out/id-bump.out" 2>&1 ||
	die "n2's libvirtd: a paused domain for a domain id of its own: $(cat "$out/id-bump.out")"

# ------------------------------------------------------------ 7 the first job
# The task prints what only the guest has: systemd as PID 1 (this root
# runs none) and the image's own kernel command line.
as_user() { setpriv --reuid="$user" --regid="$user" --init-groups env HOME="/home/$user" USER="$user" "$@"; }

# wait_job JOB SECONDS NODE...: sets $state, the job's last state; a node
# of it down or drained is a failure.
wait_job() {
	local job=$1 secs=$2 n
	shift 2
	state=
	for _ in $(seq 1 "$secs"); do
		state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
		case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL) return 0 ;; esac
		for n in "$@"; do
			case "$(sinfo -h -n "$n" -o %t 2>/dev/null)" in down* | drain*)
				fail "node $n: $(sinfo -h -N -o '%N %t %E' 2>&1)"
				return 0 ;;
			esac
		done
		sleep 1
	done
}

job_start=$(date +%s)
# shellcheck disable=SC2016 # expanded in the guest
job=$(cd /tmp && as_user sbatch --parsable -n1 --mem=1G --vm-image=debian12 -w "$node" \
	-o /tmp/job.out \
	--wrap 'srun sh -c "echo PID1=\$(cat /proc/1/comm); echo CMDLINE=\$(cat /proc/cmdline); id -un"') ||
	die "sbatch --vm-image=debian12 refused"
say "job $job submitted"
wait_job "$job" 420 "$node"
joblog=$(cat /tmp/job.out 2>/dev/null || true)
printf '%s\n' "$joblog" >"$out/job.out"
if [ "$state" = COMPLETED ] && grep -qx 'PID1=systemd' <<<"$joblog" &&
	grep -q '^CMDLINE=.*root=UUID=.*console=ttyS0' <<<"$joblog" &&
	grep -qx "$user" <<<"$joblog"; then
	ok "the first VM job ($job, $(($(date +%s) - job_start)) s) ran its task in the guest as $user: $(tr '\n' ' ' <<<"$joblog")"
else
	fail "the first VM job ($job, $state) did not run its task in the guest; its output:"
	printf '%s\n' "$joblog"
	echo "--- slurm-vm.log:"
	tail -n 30 /var/log/slurm/slurm-vm.log 2>/dev/null || true
	echo "--- slurmd:"
	tail -n 20 "/var/log/slurm/slurmd-$node.log" 2>/dev/null || true
fi

# ------------------------------------------------------------ the -N2 job
# The guide's job network (4.1) and shares (4.2), as an admin turns them on
# for MPI across nodes: the example's own lines, uncommented. Then
# check-config on a node of the job silent again.
sed -i -e 's/^JobNetwork=none$/JobNetwork=vxlan/' \
	-e 's/^#JobNetworkUnderlay=eth0$/JobNetworkUnderlay=eth0/' \
	-e 's|^#SharedDirs=/home,/scratch$|SharedDirs=/home|' /etc/slurm/vm.conf
grep -qx JobNetwork=vxlan /etc/slurm/vm.conf && grep -qx JobNetworkUnderlay=eth0 /etc/slurm/vm.conf &&
	grep -qx SharedDirs=/home /etc/slurm/vm.conf ||
	die "vm.conf.example's JobNetwork/JobNetworkUnderlay/SharedDirs lines changed: update the test"
rc=0
on_node n1 slurm-vm check-config >"$out/check-config-n1.out" 2>&1 || rc=$?
if [ "$rc" = 0 ] && ! grep -q '^\(problem\|warning\):' "$out/check-config-n1.out"; then
	ok "slurm-vm check-config on n1 reports nothing with JobNetwork=vxlan and SharedDirs=/home"
else
	cat "$out/check-config-n1.out"
	fail "slurm-vm check-config on n1 (exit $rc) with the job network and shares on"
fi

# The user's MPI program, built as on a login node of a Debian 12 cluster
# (the image's Open MPI is Debian 12's) into the shared home.
install -o "$user" -g "$user" -m 0644 "$src/tests/guest/files/mpi_allreduce.c" "/home/$user/allreduce.c"
(cd "/home/$user" && as_user mpicc -O2 -o allreduce allreduce.c) >"$out/mpicc.out" 2>&1 ||
	die "mpicc as $user failed: $(cat "$out/mpicc.out")"

# One job, two steps: each guest says who it is (systemd as PID 1 only in
# a guest; the working directory is the shared home only with shares),
# then Open MPI over PMIx across both: its ranks' MPI_Init needs PMIx
# scratch directories under SlurmdSpoolDir=/var/lib/slurm/slurmd/%n, a
# path the user cannot create in the guest (#24 item 9).
# shellcheck disable=SC2016 # expanded in the job
printf '%s\n' '#!/bin/bash' \
	'echo "T batch $(date +%s)"' \
	'srun -N2 -n2 --ntasks-per-node=1 sh -c '\''echo "GUEST node=$SLURM_NODEID host=$(hostname) pid1=$(cat /proc/1/comm) cwd=$(pwd)"'\''' \
	'echo "T step $(date +%s)"' \
	'srun --mpi=pmix -N2 -n2 --ntasks-per-node=1 ./allreduce' \
	'echo "T mpi $(date +%s)"' >"/home/$user/two-nodes.sh"
chown "$user:" "/home/$user/two-nodes.sh"
job_start=$(date +%s)
job=$(cd "/home/$user" && as_user sbatch --parsable -N2 --ntasks-per-node=1 --mem=1G \
	-w "$(tr ' ' , <<<"${nodes_made# }")" --vm-image=debian12 -o "/home/$user/two-nodes.out" two-nodes.sh) ||
	die "sbatch -N2 --vm-image=debian12 refused"
say "job $job (-N2) submitted"
# shellcheck disable=SC2086 # one word per node
wait_job "$job" 900 $nodes_made
joblog=$(cat "/home/$user/two-nodes.out" 2>/dev/null || true)
printf '%s\n' "$joblog" >"$out/two-nodes.out"
t_batch=$(sed -n 's/^T batch //p' <<<"$joblog")
t_step=$(sed -n 's/^T step //p' <<<"$joblog")
t_mpi=$(sed -n 's/^T mpi //p' <<<"$joblog")
times="job $job: $(($(date +%s) - job_start)) s in all"
[ -z "$t_batch" ] || times+=", batch script after $((t_batch - job_start)) s (the guests' boot)"
[ -z "$t_step" ] || times+=", first step $((t_step - t_batch)) s"
[ -z "$t_mpi" ] || times+=", MPI step $((t_mpi - t_step)) s"
say "-N2 $times"
guests=$(sed -n 's/^GUEST node=\([0-9]*\) host=\([^ ]*\) pid1=systemd cwd=\/home\/'"$user"'$/\1@\2/p' <<<"$joblog" | sort | tr '\n' ' ')
hosts=$(sed 's/[0-9]*@//g' <<<"$guests" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
if [ "$state" = COMPLETED ] && [[ $guests == "0@"*" 1@"*" " ]] && [ "$(wc -w <<<"$hosts")" = 2 ]; then
	ok "the -N2 job ran a step in both guests, in the shared home: $guests ($times)"
else
	fail "the -N2 job ($job, $state) did not run its step in two guests ('$guests'); its output:"
	printf '%s\n' "$joblog"
fi
# Each rank's MPI_Allreduce of the ranks and its MPI_Sendrecv ring right,
# rank 0 and rank 1 on different guests.
ranks=$(awk '
	/^mpi: rank [0-9]+ of 2 on [^ ]+: allreduce sum of ranks 1, expected 1: ok$/ {
		h = $7; sub(/:$/, "", h); ar[$3] = h
	}
	/^mpi: rank [0-9]+ of 2 on [^ ]+: sendrecv [0-9]+ bytes from rank [0-9]+: ok$/ { sr[$3] = 1 }
	END { for (r in ar) if (r in sr) print r "@" ar[r] }' <<<"$joblog" | sort | tr '\n' ' ')
rank_hosts=$(sed 's/[0-9]*@//g' <<<"$ranks" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
if [[ $ranks == "0@"*" 1@"*" " ]] && [ "$rank_hosts" = "$hosts" ] &&
	grep -q '^mpi: Open MPI v4' <<<"$joblog"; then
	ok "Open MPI over PMIx (srun --mpi=pmix -N2 -n2) across both guests, shares on, spool /var/lib/slurm/slurmd/%n: MPI_Allreduce and MPI_Sendrecv right on $ranks"
else
	fail "Open MPI over PMIx across the two guests: ranks '$ranks' on '$rank_hosts' (guests '$hosts'); its output:"
	printf '%s\n' "$joblog"
	echo "--- slurm-vm.log:"
	tail -n 40 /var/log/slurm/slurm-vm.log 2>/dev/null || true
fi

# The epilogs took the job network down on both nodes.
for _ in $(seq 1 120); do
	[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
	sleep 1
done
for n in $nodes_made; do
	left=$(on_node "$n" ip -o link | grep -o ' svm[^:@]*' | tr '\n' ' ' || true)
	left+=$(on_node "$n" nft list tables 2>&1 | grep -o 'svm_job_.*' | tr '\n' ' ' || true)
	[ -z "$left" ] || fail "the job network of job $job left on $n: $left"
done

say "done: $fails failure(s)"
[ "$fails" = 0 ]
