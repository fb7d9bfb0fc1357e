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
# unit's PIDFile= or the daemon's own -p/--pidfile default).
start_unit() {
	local unit=$1 pidfile=$2 exec envfile runtime type user cmd pid
	exec=$(unit_key "$unit" ExecStart)
	[ -n "$exec" ] || die "$unit.service has no ExecStart="
	envfile=$(unit_key "$unit" EnvironmentFile)
	runtime=$(unit_key "$unit" RuntimeDirectory)
	type=$(unit_key "$unit" Type)
	user=$(unit_key "$unit" User)
	[ -n "$runtime" ] && for d in $runtime; do
		mkdir -p "/run/$d"
		[ -z "$user" ] || chown "$user:" "/run/$d"
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
	say "starting $unit (Type=${type:-simple}${user:+ User=$user}): $cmd"
	rm -f "$pidfile"
	if [ "${type:-simple}" = forking ]; then
		if [ -n "$user" ]; then
			setpriv --reuid="$user" --regid="$user" --init-groups "${argv[@]}"
		else
			"${argv[@]}"
		fi
	else
		# A simple or notify service stays in the foreground: ours in
		# the background, its pid recorded by us.
		if [ -n "$user" ]; then
			setsid setpriv --reuid="$user" --regid="$user" --init-groups "${argv[@]}" \
				>>"$out/$unit.out" 2>&1 </dev/null &
		else
			setsid "${argv[@]}" >>"$out/$unit.out" 2>&1 </dev/null &
		fi
		echo $! >"$pidfile.ours"
		pidfile=$pidfile.ours
	fi
	for _ in $(seq 1 100); do
		pid=$(tr -dc 0-9 <"$pidfile" 2>/dev/null || true)
		alive "$pid" && break
		sleep 0.1
	done
	alive "$pid" || die "$unit did not start (see $out/$unit.out and its log)"
	echo "$unit $pid" >>"$pids"
}

stop_all() {
	local unit pid
	# The jobs first, so their epilogs run while the daemons still do.
	if [ -e /run/admin-path.slurm-up ]; then
		scancel --user="$user" 2>/dev/null || true
		for _ in $(seq 1 60); do
			[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
			sleep 1
		done
	fi
	# The guests and networks libvirtd started (qemu and dnsmasq outlive it).
	if virsh -c qemu:///system version >/dev/null 2>&1; then
		for d in $(virsh -c qemu:///system list --name 2>/dev/null); do
			fail "guest $d still running at the end"
			virsh -c qemu:///system destroy "$d" >/dev/null 2>&1 || true
		done
		for n in $(virsh -c qemu:///system net-list --name 2>/dev/null); do
			virsh -c qemu:///system net-destroy "$n" >/dev/null 2>&1 || true
		done
	fi
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
	for f in /run/libvirt/qemu/*.pid /run/libvirt/network/*.pid; do
		[ -e "$f" ] || continue
		pid=$(tr -dc 0-9 <"$f")
		alive "$pid" && kill -9 "$pid" 2>/dev/null
	done
	# The logs, for whoever reads the test's output.
	cp -r /var/log/slurm "$out/log-slurm" 2>/dev/null || true
	cp -r /var/log/libvirt "$out/log-libvirt" 2>/dev/null || true
	true
}
trap 'stop_all' EXIT

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

run_guide_block() { # run_guide_block TEXT
	local block
	block=$(guide_block "$1")
	[ -n "$block" ] || die "the guide has no host commands with '$1'"
	say "the guide's commands: $(printf '%s' "$block" | tr '\n' ' ' | tr -s ' \t' ' ')"
	bash -euo pipefail -c "$block" || die "the guide's commands failed: $block"
}

run_guide_block "mkdir -p /etc/slurm/vm-images.d"

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

# This machine, as `slurmd -C` describes it (no GRES: no GPU, no HCA).
hw=$(slurmd -C | head -n1)
nodeline="${hw/NodeName=* CPUs=/NodeName=$node CPUs=} State=UNKNOWN"
render "$examples/slurm.conf.example" /etc/slurm/slurm.conf \
	CLUSTER=admintest CONTROL_MACHINE="$node" CONTROL_ADDR=127.0.0.1 \
	SLURMCTLD_PORT=6817 SLURMD_PORT=6818 SLURM_USER=slurm \
	AUTH_TYPE=auth/munge CRED_TYPE=cred/munge \
	STATE_DIR=/var/lib/slurm/slurmctld SPOOL_DIR=/var/lib/slurm/slurmd \
	LOG_DIR=/var/log/slurm RUN_DIR=/run \
	PROCTRACK=proctrack/linuxproc TASK_PLUGIN=task/affinity \
	PROLOG_FLAGS=Alloc,Contain PROLOG=/usr/sbin/slurm-vm-prolog \
	EPILOG=/usr/sbin/slurm-vm-epilog PLUGSTACK=/etc/slurm/plugstack.conf \
	DEF_MEM_PER_CPU=1024 NODES="$nodeline" NODELIST="$node"
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
for _ in $(seq 1 60); do
	sinfo -h -n "$node" -o %t 2>/dev/null | grep -qx idle && break
	sleep 1
done
sinfo -h -n "$node" -o %t | grep -qx idle ||
	die "node $node not idle: $(sinfo -h -N -o '%N %t %E' 2>&1)"
ok "munged, virtlogd, libvirtd, slurmctld and slurmd run; $node is idle"

# ------------------------------------------------------------ 7 the first job
# The task prints what only the guest has: systemd as PID 1 (this root
# runs none) and the image's own kernel command line.
as_user() { setpriv --reuid="$user" --regid="$user" --init-groups env HOME="/home/$user" USER="$user" "$@"; }
# shellcheck disable=SC2016 # expanded in the guest
job=$(cd /tmp && as_user sbatch --parsable -n1 --mem=1G --vm-image=debian12 \
	-o /tmp/job.out \
	--wrap 'srun sh -c "echo PID1=\$(cat /proc/1/comm); echo CMDLINE=\$(cat /proc/cmdline); id -un"') ||
	die "sbatch --vm-image=debian12 refused"
say "job $job submitted"
state=
for _ in $(seq 1 420); do
	state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
	case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL) break ;; esac
	case "$(sinfo -h -n "$node" -o %t 2>/dev/null)" in down* | drain*)
		fail "node $node: $(sinfo -h -N -o '%t %E' 2>&1)"
		break ;;
	esac
	sleep 1
done
joblog=$(cat /tmp/job.out 2>/dev/null || true)
printf '%s\n' "$joblog" >"$out/job.out"
if [ "$state" = COMPLETED ] && grep -qx 'PID1=systemd' <<<"$joblog" &&
	grep -q '^CMDLINE=.*root=UUID=.*console=ttyS0' <<<"$joblog" &&
	grep -qx "$user" <<<"$joblog"; then
	ok "the first VM job ($job) ran its task in the guest as $user: $(tr '\n' ' ' <<<"$joblog")"
else
	fail "the first VM job ($job, $state) did not run its task in the guest; its output:"
	printf '%s\n' "$joblog"
	echo "--- slurm-vm.log:"
	tail -n 30 /var/log/slurm/slurm-vm.log 2>/dev/null || true
	echo "--- slurmd:"
	tail -n 20 "/var/log/slurm/slurmd-$node.log" 2>/dev/null || true
fi

say "done: $fails failure(s)"
[ "$fails" = 0 ]
