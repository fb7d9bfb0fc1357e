# shellcheck shell=bash
# libvirt side of the slurm-vm test harness. Source it, then:
#
#   libvirt_start [PREFIX]   start virtlogd + libvirtd by hand (no systemd) and
#                            wait until `virsh -c qemu:///system` answers
#   libvirt_stop [PREFIX]    destroy/undefine the domains named PREFIX*, stop
#                            the daemons libvirt_start started, remove their
#                            pid files, sockets and state
#
#   libvirt_restart [CMD...] stop our libvirtd (SIGTERM), run CMD while it
#                            is down, start it again with the same
#                            configuration; registered users and running
#                            guests stay (qemu outlives it and the new daemon
#                            reconnects). Returns 2 for a libvirtd the
#                            harness did not start, 3 when CMD failed. Every
#                            test sharing the daemon sees it go: fault tests
#                            run it under the guest lock.
#
# PREFIX defaults to $SVM_LIBVIRT_PREFIX or "svmtest-". Both functions are
# idempotent and safe under `set -eu`; libvirt_stop is meant for an EXIT trap.
# A libvirtd that was running before libvirt_start is used as it is and never
# stopped (only our PREFIX* domains are removed from it).
# Several test scripts may share the daemon: libvirt_start registers the
# calling shell ($$); libvirt_stop unregisters it and, while another
# registered shell is still alive, leaves the daemon and all domains alone
# (callers destroy their own domains; the last one out cleans up PREFIX*).
# Starts and stops are serialized with flock on $SVM_LIBVIRT_STATE.lock.
#
# The daemons run in a private mount namespace (unshare -m) in which
#   /etc/libvirt           is our generated configuration (libvirtd reads
#                          qemu.conf only from there; libvirtd.conf and
#                          virtlogd.conf are also passed with -f),
#   /etc/passwd, /etc/group gain a "libvirt-qemu" user/group when the host has
#                          none: the qemu driver resolves its compiled-in
#                          default user before it reads qemu.conf and refuses
#                          to start without it (qemu itself runs as root,
#                          see libvirt/qemu.conf),
#   /var/lib/libvirt/qemu  is $SVM_LIBVIRT_STATE/lib-qemu, 0751, where the
#                          node's is not enterable by others (Debian 13's
#                          package: 0750; slurm-vm's package makes it 0751),
#   /var/cache/libvirt     is $SVM_LIBVIRT_CACHE, so the qemu capability cache
#                          is ours and is not invalidated by other libvirtds
#                          run with other settings on the same host.
# Nothing in the host's /etc is changed. /run/libvirt is the host's, so every
# client (virsh, the prolog) reaches the daemon at the usual socket.
#
# Environment:
#   SVM_LIBVIRT_STATE  state dir (config, pid files, logs)
#                      [/run/slurm-vm-test/libvirt]
#   SVM_LIBVIRT_CACHE  persistent capability cache
#                      [/var/cache/slurm-vm-test/libvirt]
#   SVM_LIBVIRT_DEBUG  1: libvirtd debug log (qemu, util, rpc) in the state dir
#   SVM_LIBVIRT_TIMEOUT seconds to wait for libvirtd to answer [60]

LIBVIRT_URI=qemu:///system
LIBVIRT_SH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

_libvirt_state() {
	echo "${SVM_LIBVIRT_STATE:-/run/slurm-vm-test/libvirt}"
}

_libvirt_log() {
	echo "libvirt.sh: $*" >&2
}

# True while PID runs (a zombie does not count: PID 1 here may not reap).
_libvirt_alive() {
	local pid=$1 state
	[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
	state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ "$state" != Z ] && [ "$state" != X ]
}

_libvirt_pid() { # pidfile
	local pid
	[ -r "$1" ] || return 1
	pid=$(tr -dc '0-9' <"$1") # libvirt writes no trailing newline
	_libvirt_alive "$pid" || return 1
	echo "$pid"
}

_libvirt_answers() {
	virsh -q -c "$LIBVIRT_URI" version >/dev/null 2>&1
}

# Stop PID (TERM, then KILL after 10 s) and wait until it is gone.
_libvirt_kill() { # pid name
	local pid=$1 i
	_libvirt_alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		_libvirt_alive "$pid" || return 0
		sleep 0.1
	done
	_libvirt_log "$2 (pid $pid) ignored SIGTERM for 10 s, killing it"
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		_libvirt_alive "$pid" || return 0
		sleep 0.1
	done
	_libvirt_log "$2 (pid $pid) does not die"
	return 1
}

# Writes the daemons' configuration into $state/etc.
_libvirt_write_config() { # state
	local state=$1 etc=$1/etc filters f
	filters="3:remote 3:util 3:rpc 3:qemu"
	if [ "${SVM_LIBVIRT_DEBUG:-0}" = 1 ]; then
		filters="1:qemu 1:util 1:security 1:rpc 3:object 3:event 3:util.json"
	fi
	rm -rf "$etc"
	mkdir -p "$etc"
	# Keep the host's client-side files (libvirt.conf, ...) visible.
	for f in /etc/libvirt/*.conf; do
		[ -f "$f" ] && cp "$f" "$etc/"
	done
	for f in libvirtd.conf virtlogd.conf; do
		sed -e "s|@STATE@|$state|g" -e "s|@LOG_FILTERS@|$filters|g" \
			"$LIBVIRT_SH_DIR/libvirt/$f.in" >"$etc/$f"
	done
	cp "$LIBVIRT_SH_DIR/libvirt/qemu.conf" "$etc/qemu.conf"
	: >"$state/passwd.bind"
	if ! getent passwd libvirt-qemu >/dev/null; then
		cp /etc/passwd "$state/passwd"
		cp /etc/group "$state/group"
		echo 'libvirt-qemu:x:64055:64055:libvirt (slurm-vm test namespace):/nonexistent:/usr/sbin/nologin' \
			>>"$state/passwd"
		getent group libvirt-qemu >/dev/null ||
			echo 'libvirt-qemu:x:64055:' >>"$state/group"
		getent group kvm >/dev/null || echo 'kvm:x:64056:' >>"$state/group"
		echo 1 >"$state/passwd.bind"
	fi
}

# The script run by unshare inside the new mount namespace.
_libvirt_ns_script() {
	cat <<'EOF'
set -e
state=$1 cache=$2 start_virtlogd=$3
mount --make-rprivate /
if [ -s "$state/passwd.bind" ]; then
	mount --bind "$state/passwd" /etc/passwd
	mount --bind "$state/group" /etc/group
fi
mkdir -p /etc/libvirt /var/cache/libvirt
mount --bind "$state/etc" /etc/libvirt
mount --bind "$cache" /var/cache/libvirt
# qemu runs as the job user and opens files in /var/lib/libvirt/qemu/domain-*:
# where the distribution's package leaves that directory 0750 (Debian 13),
# slurm-vm's package makes it 0751 (admin guide); here a private one of
# that mode, the node's own left alone.
qemu_lib=/var/lib/libvirt/qemu
if [ -d "$qemu_lib" ] && [ "$(stat -c %A "$qemu_lib" | cut -c10)" != x ]; then
	mkdir -p "$state/lib-qemu"
	chown --reference="$qemu_lib" "$state/lib-qemu"
	chmod 0751 "$state/lib-qemu"
	mount --bind "$state/lib-qemu" "$qemu_lib"
fi
if [ "$start_virtlogd" = 1 ]; then
	virtlogd -d -f /etc/libvirt/virtlogd.conf -p "$state/virtlogd.pid"
fi
exec libvirtd -d -f /etc/libvirt/libvirtd.conf -p "$state/libvirtd.pid"
EOF
}

# Registered users of the daemon: $state/users/<pid of the calling shell>.
_libvirt_register() { # state
	mkdir -p "$1/users"
	: >"$1/users/$$"
}

# Unregisters this shell, drops dead users, prints the live others.
_libvirt_unregister() { # state
	local f
	rm -f "$1/users/$$"
	for f in "$1"/users/*; do
		[ -e "$f" ] || continue
		if _libvirt_alive "${f##*/}"; then
			echo "${f##*/}"
		else
			rm -f "$f"
		fi
	done
}

# Runs "$@" holding the harness's libvirt lock: concurrent starts and stops
# from several shells must not race (fd 9 is closed for the daemons).
_libvirt_locked() {
	local lock
	lock=$(_libvirt_state).lock
	mkdir -p "$(dirname "$lock")"
	(
		if ! flock -w 180 9; then
			_libvirt_log "another libvirt_start/stop holds $lock for 180 s"
			exit 1
		fi
		"$@"
	) 9>"$lock"
}

libvirt_start() {
	_libvirt_locked _libvirt_start_locked "$@"
}

libvirt_stop() {
	_libvirt_locked _libvirt_stop_locked "$@"
}

libvirt_restart() {
	_libvirt_locked _libvirt_restart_locked "$@"
}

_libvirt_restart_locked() {
	local state cache pid i
	state=$(_libvirt_state)
	cache=${SVM_LIBVIRT_CACHE:-/var/cache/slurm-vm-test/libvirt}
	if [ -e "$state/foreign" ]; then
		_libvirt_log "libvirtd was not started by the harness: not restarting it"
		return 2
	fi
	pid=$(_libvirt_pid "$state/libvirtd.pid") || {
		_libvirt_log "no libvirtd of ours runs"
		return 1
	}
	_libvirt_kill "$pid" libvirtd || return 1
	rm -f /run/libvirt/libvirt-sock /run/libvirt/libvirt-sock-ro \
		/run/libvirt/libvirt-admin-sock
	local cmd_rc=0
	[ "$#" = 0 ] || "$@" || cmd_rc=3
	# virtlogd keeps running: it holds the guests' console logs.
	unshare -m --propagation private -- bash -c "$(_libvirt_ns_script)" \
		libvirt-ns "$state" "$cache" 0 >"$state/start.log" 2>&1 9>&- || {
		sed 's/^/  /' "$state/start.log" >&2
		return 1
	}
	for ((i = 0; i < ${SVM_LIBVIRT_TIMEOUT:-60} * 4; i++)); do
		_libvirt_answers && return "$cmd_rc"
		sleep 0.25
	done
	_libvirt_log "libvirtd does not answer after the restart"
	return 1
}

# True when libvirtd answers within SVM_LIBVIRT_TIMEOUT while PID lives.
_libvirt_wait_answer() { # pid timeout
	local i
	for ((i = 0; i < $2 * 4; i++)); do
		_libvirt_answers && return 0
		_libvirt_alive "$1" || return 1
		sleep 0.25
	done
	return 1
}

_libvirt_start_locked() {
	local prefix=${1:-${SVM_LIBVIRT_PREFIX:-svmtest-}}
	local state cache timeout start_virtlogd=1 pid i
	state=$(_libvirt_state)
	cache=${SVM_LIBVIRT_CACHE:-/var/cache/slurm-vm-test/libvirt}
	timeout=${SVM_LIBVIRT_TIMEOUT:-60}
	: "$prefix"

	if [ "$(id -u)" != 0 ]; then
		_libvirt_log "libvirt_start needs root (qemu:///system)"
		return 1
	fi
	local tool
	for tool in libvirtd virtlogd virsh unshare; do
		if ! command -v "$tool" >/dev/null; then
			_libvirt_log "'$tool' not found: run scripts/install-deps.sh"
			return 1
		fi
	done

	if pid=$(_libvirt_pid "$state/libvirtd.pid"); then
		# Ours, maybe still starting.
		if _libvirt_wait_answer "$pid" "$timeout"; then
			_libvirt_register "$state"
			return 0
		fi
		_libvirt_log "our libvirtd (pid $pid) does not answer: restarting it"
	elif [ -e "$state/foreign" ] && _libvirt_answers; then
		_libvirt_register "$state"
		return 0
	elif _libvirt_answers; then
		# Someone else's libvirtd: use it, never stop it.
		_libvirt_log "using the libvirtd that was already running" \
			"(not started by the harness; its configuration is its own)"
		mkdir -p "$state"
		echo foreign >"$state/foreign"
		_libvirt_register "$state"
		return 0
	fi
	# Leftovers of a run that died: clean them before starting anew.
	rm -rf "$state/users"
	_libvirt_stop_locked "$prefix" 2>/dev/null || true

	mkdir -p "$state" "$cache" /run/libvirt /var/log/libvirt/qemu
	rm -f "$state/foreign" "$state/libvirtd.log" "$state/virtlogd.log"
	_libvirt_write_config "$state"
	if [ -S /run/libvirt/virtlogd-sock ] &&
		virt-admin -c virtlogd:///system version >/dev/null 2>&1; then
		start_virtlogd=0 # a running virtlogd serves us too
	else
		rm -f /run/libvirt/virtlogd-sock /run/libvirt/virtlogd-admin-sock
	fi
	# No daemon answers on these: stale sockets would make libvirtd fail.
	rm -f /run/libvirt/libvirt-sock /run/libvirt/libvirt-sock-ro \
		/run/libvirt/libvirt-admin-sock

	if ! unshare -m --propagation private -- bash -c "$(_libvirt_ns_script)" \
		libvirt-ns "$state" "$cache" "$start_virtlogd" \
		>"$state/start.log" 2>&1 9>&-; then
		_libvirt_log "starting virtlogd/libvirtd failed:"
		sed 's/^/  /' "$state/start.log" >&2
		_libvirt_stop_locked "$prefix"
		return 1
	fi

	for ((i = 0; i < timeout * 4; i++)); do
		if _libvirt_answers; then
			_libvirt_register "$state"
			return 0
		fi
		if [ "$i" -gt 4 ] && ! _libvirt_pid "$state/libvirtd.pid" >/dev/null; then
			break
		fi
		sleep 0.25
	done
	_libvirt_log "libvirtd does not answer on $LIBVIRT_URI after ${timeout}s;" \
		"its log ($state/libvirtd.log) ends with:"
	grep -E ' (error|warning) ' "$state/libvirtd.log" 2>/dev/null |
		tail -n 15 | cut -c1-300 | sed 's/^/  /' >&2 || true
	cp "$state/libvirtd.log" "${TMPDIR:-/tmp}/slurm-vm-libvirtd.failed.log" \
		2>/dev/null &&
		_libvirt_log "whole log: ${TMPDIR:-/tmp}/slurm-vm-libvirtd.failed.log"
	_libvirt_stop_locked "$prefix"
	return 1
}

# Destroys (and undefines) the domains named PREFIX*, on any libvirtd.
_libvirt_remove_domains() { # prefix
	local prefix=$1 dom
	_libvirt_answers || return 0
	while read -r dom; do
		case "$dom" in
		"$prefix"*) ;;
		*) continue ;;
		esac
		virsh -q -c "$LIBVIRT_URI" destroy "$dom" >/dev/null 2>&1 || true
		virsh -q -c "$LIBVIRT_URI" undefine --nvram "$dom" >/dev/null 2>&1 ||
			virsh -q -c "$LIBVIRT_URI" undefine "$dom" >/dev/null 2>&1 ||
			true
	done < <(virsh -q -c "$LIBVIRT_URI" list --all --name 2>/dev/null)
}

# qemu processes of PREFIX* domains whose libvirtd is gone (killed -9): their
# pid files are in /run/libvirt/qemu.
_libvirt_kill_orphans() { # prefix
	local prefix=$1 f pid
	for f in /run/libvirt/qemu/"$prefix"*.pid; do
		[ -e "$f" ] || continue
		if pid=$(_libvirt_pid "$f") &&
			tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'qemu-system'; then
			_libvirt_kill "$pid" "qemu of ${f##*/}" || true
		fi
		rm -f "$f" "${f%.pid}.xml"
	done
}

_libvirt_stop_locked() {
	local prefix=${1:-${SVM_LIBVIRT_PREFIX:-svmtest-}}
	local state pid others rc=0
	state=$(_libvirt_state)

	others=$(_libvirt_unregister "$state" | tr '\n' ' ')
	if [ -n "$others" ]; then
		_libvirt_log "libvirtd still used by pid(s) ${others% }: left running"
		return 0
	fi
	_libvirt_remove_domains "$prefix"
	if [ -e "$state/foreign" ]; then
		rm -rf "$state"
		return 0
	fi
	if pid=$(_libvirt_pid "$state/libvirtd.pid"); then
		_libvirt_kill "$pid" libvirtd || rc=1
	fi
	_libvirt_kill_orphans "$prefix"
	if pid=$(_libvirt_pid "$state/virtlogd.pid"); then
		_libvirt_kill "$pid" virtlogd || rc=1
	fi
	# Sockets of our daemons if they died without removing them (never
	# those of a daemon that answers).
	if [ -e "$state/libvirtd.pid" ] && ! _libvirt_answers; then
		rm -f /run/libvirt/libvirt-sock /run/libvirt/libvirt-sock-ro \
			/run/libvirt/libvirt-admin-sock
	fi
	if [ -e "$state/virtlogd.pid" ] &&
		! virt-admin -c virtlogd:///system version >/dev/null 2>&1; then
		rm -f /run/libvirt/virtlogd-sock /run/libvirt/virtlogd-admin-sock
	fi
	if [ -z "${SVM_KEEP_STATE:-}" ]; then
		rm -rf "$state"
	fi
	return "$rc"
}

# ---------------------------------------------------------------- per node
#
# libvirt_node_start DIR NSENTER...: a virtlogd and libvirtd of a test node
# of its own (harness.sh's `harness_start N`), started through NSENTER...
# (the words that enter the node's network, mount and UTS namespaces), in
# which /run/libvirt and /var/{lib,log,cache}/libvirt are already DIR/{run,
# lib,log,cache}. Their configuration, pid files and logs are in DIR/state;
# /etc/libvirt (and /etc/passwd when libvirt-qemu is missing) are bound in
# the node's mount namespace only. Waits until the node's qemu:///system
# answers. Not shared, not registered: one daemon pair per node, as on a
# real cluster.
# libvirt_node_stop DIR: stops them and the node's qemu processes (pid files
# in DIR/run/qemu), whatever their domains are.

_libvirt_node_ns_script() {
	cat <<'EOS'
set -e
state=$1
if [ -s "$state/passwd.bind" ]; then
	mount --bind "$state/passwd" /etc/passwd
	mount --bind "$state/group" /etc/group
fi
mkdir -p /etc/libvirt
mount --bind "$state/etc" /etc/libvirt
mkdir -p /var/log/libvirt/qemu
virtlogd -d -f /etc/libvirt/virtlogd.conf -p "$state/virtlogd.pid"
exec libvirtd -d -f /etc/libvirt/libvirtd.conf -p "$state/libvirtd.pid"
EOS
}

libvirt_node_start() {
	local dir=$1 state=$1/state cache i
	shift
	cache=${SVM_LIBVIRT_CACHE:-/var/cache/slurm-vm-test/libvirt}
	mkdir -p "$state"
	_libvirt_write_config "$state"
	# The probed qemu capabilities of libvirt.sh's daemon, when there:
	# each node probing qemu anew costs seconds of TCG start-up.
	[ -d "$cache/qemu" ] && cp -a "$cache/." "$dir/cache/" 2>/dev/null
	if ! "$@" bash -c "$(_libvirt_node_ns_script)" libvirt-node "$state" \
		>"$state/start.log" 2>&1 9>&-; then
		_libvirt_log "starting the node's virtlogd/libvirtd failed:"
		sed 's/^/  /' "$state/start.log" >&2
		return 1
	fi
	for ((i = 0; i < ${SVM_LIBVIRT_TIMEOUT:-60} * 4; i++)); do
		"$@" virsh -q -c "$LIBVIRT_URI" version >/dev/null 2>&1 && return 0
		if [ "$i" -gt 4 ] && ! _libvirt_pid "$state/libvirtd.pid" >/dev/null; then
			break
		fi
		sleep 0.25
	done
	_libvirt_log "the node's libvirtd does not answer; $state/libvirtd.log ends with:"
	grep -E ' (error|warning) ' "$state/libvirtd.log" 2>/dev/null |
		tail -n 15 | cut -c1-300 | sed 's/^/  /' >&2
	return 1
}

libvirt_node_stop() {
	local dir=$1 f pid rc=0
	if pid=$(_libvirt_pid "$dir/state/libvirtd.pid"); then
		_libvirt_kill "$pid" libvirtd || rc=1
	fi
	for f in "$dir"/run/qemu/*.pid; do
		[ -e "$f" ] || continue
		if pid=$(_libvirt_pid "$f") &&
			tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'qemu-system'; then
			_libvirt_kill "$pid" "qemu of ${f##*/}" || rc=1
		fi
	done
	if pid=$(_libvirt_pid "$dir/state/virtlogd.pid"); then
		_libvirt_kill "$pid" virtlogd || rc=1
	fi
	return "$rc"
}
