#!/bin/bash
# The guest channel without a VM: slurm-vm-agent listens on a unix socket
# standing in for the virtio port, slurm-vm-relay connects to it as it
# would to qemu's socket, and slurm-vm-exec runs tasks as a non-root user.
#
#   tests/unit/test_channel_local.sh [BUILD-DIR]
#
# Runs in `make check` (and so under the sanitizers too); it needs no
# cluster. BUILD-DIR defaults to $BUILD_DIR, else to the current directory
# when it holds the programs (`make check`), else build/. Needs root (creates the users
# svmtest and svmtest2 when absent). Exit 0 pass, 77 skip, else fail.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
if [ $# -ge 1 ]; then
	build=$(cd "$1" && pwd)
elif [ -n "${BUILD_DIR:-}" ]; then
	build=$BUILD_DIR
elif [ -x ./agent/slurm-vm-relay ]; then
	build=$(pwd)
else
	build=$top/build
fi
relay_bin=$build/agent/slurm-vm-relay
exec_bin=$build/agent/slurm-vm-exec
agent_bin=$build/agent/slurm-vm-agent-test
[ -x "$agent_bin" ] || agent_bin=$build/agent/slurm-vm-agent

skip() {
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (runs tasks as test users)"
for b in "$relay_bin" "$exec_bin" "$agent_bin"; do
	[ -x "$b" ] || skip "$b not built"
done
command -v setpriv >/dev/null || skip "setpriv (util-linux) missing"
# A python the test users can run (not one under /root).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)

for u in svmtest svmtest2; do
	# As the cluster harness makes them, with a group of their own.
	id "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash \
		--comment "slurm-vm test user" "$u" || skip "cannot create user $u"
done
uid=$(id -u svmtest)
gid=$(id -g svmtest)

# Everything under one root-owned directory that others can traverse.
work=$(mktemp -d /tmp/svm-channel.XXXXXX)
chmod 755 "$work"
state=$work/job42
mkdir -m 755 "$state"
# Sanitizer reports of the daemonized relay would go to /dev/null.
mkdir -m 1777 "$work/san"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$work/san/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$work/san/ubsan:print_stacktrace=1"
# The test users run the programs: copies they can reach, as the checkout
# may be in a directory they cannot enter (/root/slurm-vm).
mkdir -m 755 "$work/bin"
for b in relay_bin exec_bin agent_bin; do
	install -m 0755 "${!b}" "$work/bin/" || skip "cannot copy ${!b}"
	printf -v "$b" '%s' "$work/bin/${!b##*/}"
done
chan=$work/agent.sock
sock=$state/task/relay.sock
agent_pid=""
failures=0

cleanup() {
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null
	[ -f "$work/relay.pid" ] && kill "$(cut -d" " -f1 "$work/relay.pid")" 2>/dev/null
	sleep 0.3
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
pass() {
	echo "ok: $*"
}

start_agent() {
	"$agent_bin" --listen "$chan" --identity test-guest --debug \
		>>"$work/agent.log" 2>&1 &
	agent_pid=$!
	for _ in $(seq 50); do
		[ -S "$chan" ] && return 0
		sleep 0.1
	done
	return 1
}

# (Asks the relay: after a hostile guest its log lines are rate limited.)
wait_relay_ready() {
	for _ in $(seq 50); do
		[ "$(as svmtest --timeout 2 --wait-ready 2>/dev/null)" = test-guest ] &&
			return 0
		sleep 0.1
	done
	return 1
}

# as USER CMD...: run slurm-vm-exec as USER from /tmp.
as() {
	local user=$1
	shift
	(cd /tmp && setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
		"$exec_bin" --socket "$sock" --timeout 20 "$@")
}

# Finding the port without mdev's symlink: through sysfs, making the node
# (here a fake sysfs naming /dev/null's numbers; reading it is EOF, which
# is how an unconnected virtio port reads).
mkdir -p "$work/sys/class/virtio-ports/vport9p1" "$work/dev"
echo org.slurm-vm.agent.0 >"$work/sys/class/virtio-ports/vport9p1/name"
echo "1:3" >"$work/sys/class/virtio-ports/vport9p1/dev"
mkdir -p "$work/sys/class/virtio-ports/vport9p2"
echo org.qemu.guest_agent.0 >"$work/sys/class/virtio-ports/vport9p2/name"
"$agent_bin" --sysfs "$work/sys" --devdir "$work/dev" --debug \
	>"$work/port.log" 2>&1 &
port_agent=$!
for _ in $(seq 30); do
	grep -q "opened $work/dev/vport9p1" "$work/port.log" && break
	sleep 0.1
done
kill "$port_agent"
wait "$port_agent" 2>/dev/null
[ "$(stat -c '%F %t:%T' "$work/dev/vport9p1" 2>/dev/null)" = "character special file 1:3" ] &&
	grep -q "opened $work/dev/vport9p1" "$work/port.log" &&
	pass "agent finds its virtio port through sysfs" ||
	fail "port discovery: $(cat "$work/port.log")"

start_agent || { echo "FAIL: agent did not start"; cat "$work/agent.log"; exit 1; }

# The relay detaches like it must under the prolog: the caller's pipe sees
# EOF at once, the daemon leads its own session and holds no inherited fd.
exec 9>"$work/inherited"
out=$(timeout 10 "$relay_bin" --daemon --pidfile "$work/relay.pid" \
	--log-file "$work/relay.log" --debug --channel "$chan" \
	--socket "$sock" --uid "$uid" --gid "$gid" 2>&1 | cat)
rc=$?
exec 9>&-
read -r relay_pid relay_start <"$work/relay.pid" 2>/dev/null
if [ $rc -ne 0 ] || [ -z "$relay_pid" ] || ! kill -0 "$relay_pid"; then
	echo "FAIL: relay --daemon did not start: $out"
	cat "$work/relay.log" 2>/dev/null
	exit 1
fi
# The pid file names the relay by pid and start time (core/pidfile.h), so
# that the teardown, the adoption and a warm start's undo never take a
# process that reused the pid for it.
[ "$relay_start" = "$(sed 's/.*) //' /proc/"$relay_pid"/stat | cut -d' ' -f20)" ] &&
	pass "relay pid file holds its pid and start time" ||
	fail "relay pid file: '$(cat "$work/relay.pid")', not PID START_TIME"
sid=$(ps -o sid= -p "$relay_pid" | tr -d ' ')
[ "$sid" != "$(ps -o sid= -p $$ | tr -d " ")" ] && pass "relay daemon runs in a session of its own" ||
	fail "relay daemon session $sid, pid $relay_pid"
if ls -l /proc/"$relay_pid"/fd | grep -q "$work/inherited"; then
	fail "relay daemon kept an inherited descriptor"
else
	pass "relay daemon closed inherited descriptors"
fi
# The user may connect to the socket and store nothing beside it (the
# directory is on /run, a tmpfs).
[ "$(stat -c '%U %a' "$state/task")" = "root 711" ] &&
	[ "$(stat -c '%U %a' "$sock")" = "svmtest 600" ] &&
	[ "$(stat -c '%U' "$state")" = root ] &&
	pass "socket directory root's 0711, socket the job user's 0600, state dir root's" ||
	fail "socket directory: $(stat -c '%U %a' "$state/task"), socket $(stat -c '%U %a' "$sock")"
if setpriv --reuid="$uid" --regid="$gid" --clear-groups \
	sh -c "echo x >'$state/task/junk'" 2>/dev/null || [ -e "$state/task/junk" ]; then
	fail "the job user could write a file into the socket directory"
else
	pass "the job user cannot write a file into the socket directory"
fi

as svmtest --wait-ready >/dev/null || fail "--wait-ready"

# 1. Output, stderr, identity, cwd and exit code 7.
out=$(as svmtest -- sh -c 'id -u; pwd; echo to-stderr >&2; exit 7' \
	2>"$work/err")
rc=$?
[ "$out" = "$uid
/tmp" ] && pass "output as uid $uid in /tmp" || fail "output: '$out'"
grep -q to-stderr "$work/err" && pass "stderr" || fail "stderr: $(cat "$work/err")"
[ $rc -eq 7 ] && pass "exit code 7" || fail "exit code $rc, not 7"

# 2. Death by SIGSEGV is death by SIGSEGV on the host too (139 in sh).
as svmtest -- sh -c 'kill -SEGV $$' 2>/dev/null
rc=$?
[ $rc -eq 139 ] && pass "SIGSEGV propagated" || fail "SIGSEGV: status $rc"

# 3. stdin, environment and PATH search.
out=$(echo hello | FOO=bar as svmtest -- sh -c 'cat; echo "$FOO"')
[ "$out" = "hello
bar" ] && pass "stdin and environment" || fail "stdin/env: '$out'"
as svmtest -- sh -c 'echo to-nowhere; exit 5' <&- >&- 2>&-
rc=$?
[ $rc -eq 5 ] && pass "closed stdio on the host" || fail "closed stdio: $rc"
out=$(as svmtest -- no-such-command 2>&1)
rc=$?
[ $rc -eq 127 ] && echo "$out" | grep -q "No such file" &&
	pass "missing command: 127 and a message" || fail "missing command: $rc '$out'"

# 4. Signals reach the task's process group.
(cd /tmp && exec setpriv --reuid=svmtest --regid="$gid" --init-groups \
	"$exec_bin" --socket "$sock" -- sh -c 'trap "echo got-usr1; exit 3" USR1;
	echo up; while :; do sleep 0.1; done' >"$work/sig.out" 2>&1) &
spid=$!
for _ in $(seq 50); do grep -q up "$work/sig.out" && break; sleep 0.1; done
kill -USR1 $spid
wait $spid
rc=$?
[ $rc -eq 3 ] && grep -q got-usr1 "$work/sig.out" && pass "SIGUSR1 forwarded" ||
	fail "SIGUSR1: status $rc, output $(cat "$work/sig.out")"

# 5. A task whose stdout nobody reads does not stall another one.
as svmtest -- yes 2>/dev/null | sleep 120 &
stalled=$!
sleep 1
head -c 10M /dev/urandom >"$work/in"
chmod 644 "$work/in"
want=$(sha256sum <"$work/in" | cut -d' ' -f1)
got=$(timeout 120 bash -c "cd /tmp && setpriv --reuid=svmtest --regid=$gid \
	--init-groups '$exec_bin' --socket '$sock' -- cat <'$work/in'" |
	sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] && pass "10 MB through cat next to a stalled task" ||
	fail "10 MB checksum: got $got want $want"
# Its reader goes away: the task sees SIGPIPE, as it would on the host.
kill $stalled 2>/dev/null
wait $stalled 2>/dev/null
for _ in $(seq 100); do jobs -r | grep -q yes || break; sleep 0.1; done
jobs -r | grep -q yes && fail "yes did not end when its reader went away" ||
	pass "a vanished reader ends the writer"

# 6. Terminal.
out=$(as svmtest --pty -- tty </dev/null | tr -d '\r')
case $out in
/dev/pts/*) pass "pty" ;;
*) fail "pty: '$out'" ;;
esac

out=$(printf 'typed\n' | timeout 20 bash -c "cd /tmp && setpriv --reuid=svmtest \
	--regid=$gid --init-groups '$exec_bin' --socket '$sock' --pty -- \
	sh -c 'cat; echo done'" | tr -d '\r')
echo "$out" | grep -q done && pass "pty: stdin EOF ends cat" ||
	fail "pty stdin EOF: '$out'"

# A resized local terminal resizes the guest's (WINSIZE -> SIGWINCH).
out=$(cd /tmp && "$py" - "$exec_bin" "$sock" "$uid" "$gid" 2>&1 <<'PY'
import fcntl, os, select, signal, struct, subprocess, sys, termios, time
exe, sock, uid, gid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
def drop():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    os.setgroups([]); os.setgid(gid); os.setuid(uid)
p = subprocess.Popen([exe, "--socket", sock, "--pty", "--", "sh", "-c",
    'trap "stty size; exit 0" WINCH; stty size; while :; do sleep 0.1; done'],
    stdin=slave, stdout=slave, stderr=slave, preexec_fn=drop)
os.close(slave)
buf = b""
def read_until(word, t):
    global buf
    end = time.time() + t
    while word not in buf and time.time() < end:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                buf += os.read(master, 4096)
            except OSError:
                break
    return word in buf
ok1 = read_until(b"24 80", 20)
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
ok2 = read_until(b"50 132", 20)
try:
    p.wait(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
print(ok1, ok2, p.returncode)
PY
)
[ "$out" = "True True 0" ] && pass "pty window size and resize" ||
	fail "pty resize: '$out'"

# 7. PMI_FD bytes go both ways.
if command -v python3 >/dev/null; then
	out=$(python3 - "$exec_bin" "$sock" <<'EOF'
import os, socket, subprocess, sys
a, b = socket.socketpair()
os.set_inheritable(b.fileno(), True)
env = dict(os.environ, PMI_FD=str(b.fileno()))
def drop():
    os.setgid(int(subprocess.check_output(["id", "-g", "svmtest"])))
    os.setgroups([])
    os.setuid(int(subprocess.check_output(["id", "-u", "svmtest"])))
p = subprocess.Popen([sys.argv[1], "--socket", sys.argv[2], "--", "sh", "-c",
    'echo cmd=init >&$PMI_FD; read x <&$PMI_FD; echo "task got $x"'],
    env=env, pass_fds=[b.fileno()], stdout=subprocess.PIPE, cwd="/tmp",
    preexec_fn=drop)
b.close()
a.settimeout(20)
line = a.recv(100)
a.sendall(b"cmd=ok\n")
out, _ = p.communicate(timeout=20)
print(line.decode().strip(), out.decode().strip(), p.returncode)
EOF
)
	[ "$out" = "cmd=init task got cmd=ok 0" ] && pass "PMI forwarding" ||
		fail "PMI: '$out'"
fi

# 8. Only the job's uid (or root) may use the relay.
out=$(as svmtest2 -- true 2>&1)
rc=$?
[ $rc -ne 0 ] && pass "svmtest2 cannot reach the socket ($rc)" ||
	fail "svmtest2 reached the task socket"
chmod 666 "$sock"
out=$(as svmtest2 -- true 2>&1)
rc=$?
chmod 600 "$sock"
[ $rc -eq 255 ] && echo "$out" | grep -q "permission denied" &&
	pass "relay refuses uid $(id -u svmtest2) (SO_PEERCRED)" ||
	fail "svmtest2 through an open socket: $rc '$out'"
out=$(cd /tmp && "$exec_bin" --socket "$sock" -- id -u 2>&1)
rc=$?
[ $rc -eq 255 ] && echo "$out" | grep -q "permission denied" &&
	pass "root in the guest refused without --allow-root" ||
	fail "root task: $rc '$out'"

# 8b. A hostile task connection (the job user is not trusted either):
# garbage, then EXECs for identities the caller does not have.
if command -v python3 >/dev/null; then
	out=$(cd /tmp && setpriv --reuid=svmtest --regid="$gid" --init-groups \
		"$py" - "$sock" "$(id -u svmtest2)" 2>&1 <<'PY'
import os, socket, struct, sys
path, other = sys.argv[1], int(sys.argv[2])
def frame(kind, session, payload, flags=0):
    return struct.pack(">HBBIIHH", 0x5653, 1, kind, session, len(payload), flags, 0) + payload
def s(x):
    x = x.encode() + b"\0"
    return struct.pack(">I", len(x)) + x
def conn():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.settimeout(10)
    c.sendall(frame(1, 0, b"\0\1\0\1" + b"\0" * 8 + s("")))
    return c
def answer(c):
    data = b""
    try:
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data
def exec_as(uid, gid, groups):
    c = conn()
    p = struct.pack(">IIIIHHIII", uid, gid, 0, 0, 0, 0, len(groups), 1, 0)
    p += b"".join(struct.pack(">I", g) for g in groups) + s("/") + s("id")
    c.sendall(frame(3, 1, p))
    data = answer(c)
    return b"permission denied" in data
c = conn()
c.sendall(os.urandom(200000))
print("garbage:", b"protocol error" in answer(c))
print("gid 0:", exec_as(os.getuid(), 0, []))
print("group 0:", exec_as(os.getuid(), os.getgid(), [0]))
print("other uid:", exec_as(other, os.getgid(), []))
print("root:", exec_as(0, 0, []))
PY
)
	[ "$(echo "$out" | grep -c True)" = 5 ] &&
		pass "relay refuses hostile task connections" ||
		fail "hostile task connections: $out"
	kill -0 "$relay_pid" || fail "relay died on a hostile task connection"
fi

# A root job's relay: only where vm.conf says AllowRoot=yes (the prolog
# passes --allow-root then, and refuses the job otherwise).
out=$("$relay_bin" --channel "$chan" --socket "$work/root/relay.sock" \
	--uid 0 --gid 0 2>&1)
rc=$?
[ $rc = 2 ] && grep -q "only with --allow-root" <<<"$out" &&
	pass "relay refuses --uid 0 without --allow-root" ||
	fail "relay --uid 0 without --allow-root: $rc '$out'"

# 9. The host side reconnects: restart the relay, the agent serves it.
kill "$relay_pid"
for _ in $(seq 50); do kill -0 "$relay_pid" 2>/dev/null || break; sleep 0.1; done
"$relay_bin" --daemon --pidfile "$work/relay.pid" --log-file "$work/relay.log" \
	--debug --channel "$chan" --socket "$sock" --uid "$uid" --gid "$gid" \
	--allow-root
read -r relay_pid _ <"$work/relay.pid"
out=$(as svmtest -- echo again)
[ "$out" = again ] && pass "agent serves a reconnected relay" ||
	fail "after relay restart: '$out'"
out=$(cd /tmp && "$exec_bin" --socket "$sock" -- id -u 2>&1)
[ "$out" = 0 ] && pass "root task with --allow-root" ||
	fail "root task with --allow-root: '$out'"

# 10. Guest death fails open sessions with a message that says so.
as svmtest -- sleep 60 >"$work/death.out" 2>&1 &
dpid=$!
sleep 1
kill -9 "$agent_pid"
wait "$agent_pid" 2>/dev/null
agent_pid=""
timeout 20 tail --pid=$dpid -f /dev/null
wait $dpid
rc=$?
[ $rc -eq 255 ] && grep -q "guest died" "$work/death.out" &&
	pass "guest death reported: $(head -n1 "$work/death.out")" ||
	fail "guest death: status $rc, '$(cat "$work/death.out")'"
out=$(as svmtest -- true 2>&1)
echo "$out" | grep -q "guest died" && pass "new tasks hear the guest died" ||
	fail "task after guest death: '$out'"

# 11. The relay picks up a guest that comes back.
kill -0 "$relay_pid" || fail "relay died"
start_agent || fail "agent restart"
wait_relay_ready
out=$(as svmtest -- echo back 2>&1)
[ "$out" = back ] && pass "relay reconnects to a restarted guest" ||
	fail "after agent restart: '$out'"

# 12. A hostile guest: garbage, oversized and split frames, a PING flood it
# never reads. The relay must survive, stay small, and serve the real
# agent again afterwards.
if command -v python3 >/dev/null; then
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null
	agent_pid=""
	rm -f "$chan"
	log_mark=$(wc -l <"$work/relay.log")
	python3 - "$chan" >"$work/evil.log" 2>&1 <<'PY' &
import os, socket, struct, sys, time
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
def frame(kind, session, payload, flags=0, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">HBBIIHH", 0x5653, 1, kind, session, n, flags, 0) + payload
def hello_reply(c):
    data = b""
    while len(data) < 28:
        chunk = c.recv(4096)
        if not chunk:
            return False
        data += chunk
    nonce = data[20:28]
    c.sendall(frame(1, 0, b"\0\1\0\1" + nonce + struct.pack(">I", 5) + b"evil\0"))
    c.sendall(frame(2, 0, b""))
    return True
attacks = [
    lambda c: c.sendall(os.urandom(1 << 20)),
    lambda c: c.sendall(frame(4, 7, b"\1" + b"x" * 100)),
    lambda c: c.sendall(frame(4, 1, b"", length=0xffffffff)),
    lambda c: [c.sendall(frame(3, 1, b"\0" * 65536, flags=1)) for _ in range(40)],
    lambda c: c.sendall(frame(9, 0, struct.pack(">I", 1) + struct.pack(">I", 4) + b"\x1b[2\0")),
    lambda c: [c.sendall(frame(10, 0, b"\0" * 8) * 1000) for _ in range(20)],
] + [lambda c: c.sendall(b"\xff" * 64)] * 4

for attack in attacks:
    c, _ = srv.accept()
    c.settimeout(5)
    try:
        if hello_reply(c):
            attack(c)
            time.sleep(0.3)
    except OSError as e:
        print("connection:", e)
    c.close()
print("done")
PY
	evil=$!
	timeout 60 tail --pid=$evil -f /dev/null
	grep -q done "$work/evil.log" || fail "evil guest: $(cat "$work/evil.log")"
	kill -0 "$relay_pid" && pass "relay survived a hostile guest" ||
		fail "relay died on a hostile guest"
	rss=$(awk '/VmRSS/ {print $2}' /proc/"$relay_pid"/status)
	[ "${rss:-999999}" -lt 131072 ] && pass "relay RSS ${rss} kB" ||
		fail "relay RSS ${rss} kB after a hostile guest"
	# Each reset costs the guest a reconnection, not a log line.
	lines=$(sed -n "$((log_mark + 1)),\$p" "$work/relay.log" | grep -vc " debug: ")
	[ "$lines" -le 25 ] && pass "hostile guest: $lines relay log lines" ||
		fail "hostile guest: $lines relay log lines, not rate limited"

	# 13. A guest that never ends a task: the relay forgets the tasks of a
	# client that hung up (40 x 16 of them), and refuses tasks beyond its
	# limit (512) with a message that says so.
	rm -f "$chan"
	"$py" - "$chan" >"$work/silent.log" 2>&1 <<'PY' &
import socket, struct, sys
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1])
srv.listen(1)
c, _ = srv.accept()
data = b""
while len(data) < 28:
    data += c.recv(4096)
def frame(kind, payload):
    return struct.pack(">HBBIIHH", 0x5653, 1, kind, 0, len(payload), 0, 0) + payload
c.sendall(frame(1, b"\0\1\0\1" + data[20:28] + struct.pack(">I", 5) + b"deaf\0"))
c.sendall(frame(2, b""))
print("serving", flush=True)
while c.recv(1 << 16):
    pass
PY
	silent=$!
	# Until the relay is on this guest it may still be on the hostile one:
	# its reset would close the clients below (seen under ASan).
	for _ in $(seq 300); do
		grep -q serving "$work/silent.log" 2>/dev/null && break
		sleep 0.1
	done
	grep -q serving "$work/silent.log" || fail "the relay never reached the silent guest"
	out=$(cd /tmp && setpriv --reuid=svmtest --regid="$gid" --init-groups \
		"$py" - "$sock" 2>&1 <<'PY'
import os, socket, struct, sys, time
path = sys.argv[1]
def frame(kind, session, payload):
    return struct.pack(">HBBIIHH", 0x5653, 1, kind, session, len(payload), 0, 0) + payload
def s(x):
    x = x.encode() + b"\0"
    return struct.pack(">I", len(x)) + x
def frames(c, until):
    buf, got = b"", []
    while True:
        while len(buf) >= 16:
            _, _, kind, sess, n, _, _ = struct.unpack(">HBBIIHH", buf[:16])
            if len(buf) < 16 + n:
                break
            got.append((kind, buf[16:16 + n]))
            buf = buf[16 + n:]
            if kind == until:
                return got
        chunk = c.recv(65536)
        if not chunk:
            return got
        buf += chunk
def conn():
    for _ in range(100):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        c.settimeout(10)
        c.sendall(frame(1, 0, b"\0\1\0\1" + b"\0" * 8 + s("")))
        if any(k == 2 for k, _ in frames(c, 2)):
            return c
        c.close()
        time.sleep(0.2)
    raise SystemExit("the relay never became ready")
ex = struct.pack(">IIIIHHIII", os.getuid(), os.getgid(), 0, 0, 0, 0, 0, 1, 0) + s("/") + s("sleep")
def sixteen(c):
    c.sendall(b"".join(frame(3, i, ex) for i in range(1, 17)) + frame(10, 0, b"\0" * 8))
    return [p for k, p in frames(c, 11) if k == 9]
for _ in range(40):
    c = conn()
    sixteen(c)
    c.close()
time.sleep(0.5)
conns = [conn() for _ in range(33)]
errors = [e for c in conns for e in sixteen(c)]
print("refused", len(errors), sum(b"too many tasks" in e for e in errors))
PY
)
	kill "$silent" 2>/dev/null
	wait "$silent" 2>/dev/null
	[ "$out" = "refused 16 16" ] &&
		pass "relay forgets a gone client's tasks and refuses the 513th: too many tasks" ||
		fail "session limits: $out"
	kill -0 "$relay_pid" || fail "relay died with too many tasks"
	rm -f "$chan"
	start_agent || fail "agent restart"
	wait_relay_ready
	out=$(as svmtest -- echo fine 2>&1)
	[ "$out" = fine ] && pass "relay serves the real guest again" ||
		fail "after the hostile guest: '$out'"
fi

kill "$agent_pid" "$relay_pid" 2>/dev/null
sleep 0.5
if ls "$work/san/"* >/dev/null 2>&1; then
	fail "sanitizer reports:"
	cat "$work/san/"*
fi
if [ $failures -ne 0 ]; then
	echo "--- agent log"
	tail -n 30 "$work/agent.log"
	echo "--- relay log"
	tail -n 30 "$work/relay.log"
	echo "$failures check(s) failed"
	exit 1
fi
echo "all channel checks passed"
exit 0
