#!/bin/bash
# Warm start spike (issue #30): how long the test guest takes to become
# usable when a saved, booted guest is restored, against a cold boot of the
# same guest measured in the same run. Plain qemu, no libvirt:
#   cold  qemu start (kernel boot on a fresh qcow2 overlay of the image)
#         until the guest is usable
#   save  a template guest, once usable: QMP stop, migrate to
#         "exec:cat > FILE" until query-migrate says completed (qemu 7.2 has
#         no file: URI); the time and the file's size
#   warm  qemu start with the same command line plus -S -incoming defer, on
#         a new overlay whose backing file is the template's overlay, kept
#         read-only as it was at save time; migrate-incoming
#         "exec:cat FILE", cont, until the guest is usable again
# "Usable" is what the prolog waits for (prolog/boot.c boot_wait_ready, via
# slurm-vm-relay): on the org.slurm-vm.agent.0 channel socket the host says
# HELLO and slurm-vm-agent answers HELLO (same nonce) and READY
# (common/channel/proto.h). A restored guest does not rerun its init, so the
# same round trip to the running agent is the criterion both times. The
# template's channel client disconnects before the save, as a template's
# relay would be gone; the restored agent then finds the host again by
# itself (it retries every second, agent/guest/agent.c RETRY_MS).
#
#   bench/restore_spike.sh [N]   (N cold and N warm starts, default 3;
#                                 medians)
#
# The guest: tests/guest/cache (tests/guest/build.sh --agent, as the
# harness builds it), booted from its uncompressed vmlinux like the
# harness's catalog entry, q35, 1 vCPU, SVM_SPIKE_MEM MiB (512), virtio
# disk, the agent's virtio-serial port, serial console to a file, no
# network, accel=tcg (no KVM here): the figures are TCG regression figures
# for this machine, not what a KVM node delivers. Not included: libvirt
# (its save header, ABI check, define/start), changing the guest's identity
# (name, uuid, genid, hostname), device hot-plug after the restore, shares.
#
# Every qemu runs under flock SVM_GUEST_LOCK (default
# /tmp/slurm-vm-cluster.lock, shared with the cluster tests): the whole run
# holds it, the wait for it is not timed. Work files live in a mktemp
# directory under /var/tmp, removed on exit (SVM_KEEP_STATE=1 keeps it);
# every qemu it started is killed by pid.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
runs=${1:-3}
case "$runs" in '' | *[!0-9]* | 0) echo "restore_spike: N must be a positive integer" >&2; exit 2 ;; esac
lock=${SVM_GUEST_LOCK:-/tmp/slurm-vm-cluster.lock}
if [ "${SVM_SPIKE_LOCKED:-0}" != 1 ]; then
	echo "restore_spike: waiting for $lock" >&2
	exec env SVM_SPIKE_LOCKED=1 flock "$lock" "$0" "$@"
fi

mem=${SVM_SPIKE_MEM:-512}
timeout=${SVM_SPIKE_TIMEOUT:-120}
cache=${SVM_SPIKE_GUEST:-$top/tests/guest/cache}
qemu=${QEMU:-qemu-system-x86_64}
for f in vmlinux initrd.img rootfs.qcow2 cmdline; do
	[ -r "$cache/$f" ] || { echo "restore_spike: no $cache/$f: run tests/guest/build.sh --agent build/agent/slurm-vm-agent" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "restore_spike: needs python3" >&2; exit 2; }

work=$(mktemp -d /var/tmp/restore-spike.XXXXXX)
qpid=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill "$qpid" 2>/dev/null || true
		wait "$qpid" 2>/dev/null || true
	fi
	if [ "$rc" != 0 ]; then
		for f in "$work"/*.console "$work"/*.qemu.log; do
			[ -s "$f" ] || continue
			echo "--- $f (tail) ---" >&2
			tail -n 15 "$f" >&2
		done
	fi
	if [ "${SVM_KEEP_STATE:-0}" = 1 ]; then
		echo "kept: $work" >&2
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() {
	echo "restore_spike: $*" >&2
	exit 1
}

# The host side: QMP, and the agent's HELLO/READY round trip.
cat >"$work/spike.py" <<'EOF'
import json, os, socket, struct, sys, time

def connect(path, deadline):
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.time() > deadline:
                sys.exit("no socket %s" % path)
            time.sleep(0.01)

class QMP:
    def __init__(self, path):
        self.s = connect(path, time.time() + 30)
        self.f = self.s.makefile("rw")
        self.recv()
        self.cmd("qmp_capabilities")

    def recv(self):
        while True:
            line = self.f.readline()
            if not line:
                sys.exit("QMP: qemu closed the monitor")
            m = json.loads(line)
            if "event" not in m:
                return m

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        self.f.flush()
        m = self.recv()
        if "error" in m:
            sys.exit("QMP %s: %s" % (name, m["error"].get("desc")))
        return m["return"]

def ready(path, timeout):
    """HELLO to the agent; the time its HELLO (our nonce) and READY are in."""
    deadline = time.time() + timeout
    s = connect(path, deadline)
    nonce = int.from_bytes(os.urandom(8), "big")
    pl = struct.pack(">HHQI", 1, 1, nonce, 1) + b"\0"
    s.sendall(struct.pack(">HBBIIHH", 0x5653, 1, 1, 0, len(pl), 0, 0) + pl)
    buf, hello, ident = b"", False, ""
    while True:
        left = deadline - time.time()
        if left <= 0:
            sys.exit("the agent was not ready within %ss" % timeout)
        s.settimeout(left)
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        if not d:
            sys.exit("qemu closed the agent channel")
        buf += d
        while len(buf) >= 16:
            magic, ver, kind, _, ln, _, _ = struct.unpack(">HBBIIHH", buf[:16])
            if magic != 0x5653 or ver != 1:
                buf = buf[1:]  # resync
                continue
            if len(buf) < 16 + ln:
                break
            p, buf = buf[16:16 + ln], buf[16 + ln:]
            if kind == 1 and struct.unpack(">HHQ", p[:12])[2] == nonce:
                hello, ident = True, p[16:].rstrip(b"\0").decode()
            elif kind == 2 and hello:
                t = time.time()
                s.close()
                return t, ident

def wait_migration(q, what, deadline):
    while True:
        st = q.cmd("query-migrate")
        if st.get("status") == "completed":
            return st
        if st.get("status") in ("failed", "cancelled"):
            sys.exit("%s: %s" % (what, st.get("error-desc", st.get("status"))))
        if time.time() > deadline:
            sys.exit("%s: not completed: %s" % (what, st))
        time.sleep(0.005)

op = sys.argv[1]
if op == "ready":
    # ready CHAN TIMEOUT: prints the epoch time of READY and the identity
    t, ident = ready(sys.argv[2], float(sys.argv[3]))
    print("%.6f %s" % (t, ident or "-"))
elif op == "save":
    # save QMP FILE: stop, migrate to FILE; prints seconds from stop to
    # completed, and qemu's own total-time (ms)
    q = QMP(sys.argv[2])
    t0 = time.time()
    q.cmd("stop")
    q.cmd("migrate", uri="exec:cat > " + sys.argv[3])
    st = wait_migration(q, "save", t0 + 300)
    print("%.6f %s" % (time.time() - t0, st.get("total-time", "-")))
    q.cmd("quit")
elif op == "restore":
    # restore QMP FILE TIMEOUT: migrate-incoming from FILE, cont; prints the
    # epoch times of incoming completed and of cont's return
    q = QMP(sys.argv[2])
    deadline = time.time() + float(sys.argv[4])
    q.cmd("migrate-incoming", uri="exec:cat " + sys.argv[3])
    while True:
        st = q.cmd("query-status")["status"]
        if st == "paused":
            break
        m = q.cmd("query-migrate")
        if m.get("status") == "failed":
            sys.exit("restore: %s" % m.get("error-desc", "failed"))
        if time.time() > deadline:
            sys.exit("restore: still %s / %s" % (st, m))
        time.sleep(0.005)
    t1 = time.time()
    q.cmd("cont")
    print("%.6f %.6f" % (t1, time.time()))
elif op == "quit":
    QMP(sys.argv[2]).cmd("quit")
EOF
spike() { python3 "$work/spike.py" "$@"; }
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# start NAME OVERLAY [QEMU-ARGS...]: the test guest's qemu in the
# background ($qpid); its sockets are $work/NAME.{qmp,agent}.
start() {
	local name=$1 disk=$2
	shift 2
	"$qemu" -name svm-spike -machine q35,accel=tcg -cpu max -m "$mem" -smp 1 \
		-nodefaults -no-user-config -display none -nic none -rtc base=utc \
		-no-reboot -kernel "$cache/vmlinux" -initrd "$cache/initrd.img" \
		-append "$(cat "$cache/cmdline") svm.hostname=svm-spike" \
		-drive "file=$disk,format=qcow2,if=none,id=disk0" \
		-device virtio-blk-pci,drive=disk0 \
		-chardev "file,id=ser0,path=$work/$name.console" -serial chardev:ser0 \
		-device virtio-serial-pci,id=vser0 \
		-chardev "socket,id=agent0,path=$work/$name.agent,server=on,wait=off" \
		-device virtserialport,bus=vser0.0,chardev=agent0,name=org.slurm-vm.agent.0 \
		-qmp "unix:$work/$name.qmp,server=on,wait=off" \
		"$@" >"$work/$name.qemu.log" 2>&1 &
	qpid=$!
}
stop() {
	spike quit "$work/$1.qmp" >/dev/null 2>&1 || kill "$qpid" 2>/dev/null || true
	wait "$qpid" 2>/dev/null || true
	qpid=
}

# ---- the template: boot, usable, save ------------------------------------
qemu-img create -q -f qcow2 -b "$cache/rootfs.qcow2" -F qcow2 "$work/template.qcow2"
start template "$work/template.qcow2"
spike ready "$work/template.agent" "$timeout" >"$work/template.ready" ||
	die "the template guest did not become usable"
read -r save_s save_qemu_ms < <(spike save "$work/template.qmp" "$work/template.state") ||
	die "save failed (qemu: $(cat "$work/template.qemu.log"))"
wait "$qpid" 2>/dev/null || true
qpid=
save_bytes=$(stat -c %s "$work/template.state")
# The disk as it was at save time, read-only: each restore gets its own
# overlay on top of it (qemu opens a backing file read-only; the checksum
# shows it stayed as saved).
chmod 0444 "$work/template.qcow2"
template_sum=$(sha256sum <"$work/template.qcow2")

# ---- cold and warm, alternating ------------------------------------------
: >"$work/cold"
: >"$work/warm"
: >"$work/load"
: >"$work/resume"
for r in $(seq "$runs"); do
	qemu-img create -q -f qcow2 -b "$cache/rootfs.qcow2" -F qcow2 "$work/cold$r.qcow2"
	t0=$(now)
	start "cold$r" "$work/cold$r.qcow2"
	read -r t1 _ < <(spike ready "$work/cold$r.agent" "$timeout") ||
		die "cold boot $r: the guest did not become usable"
	stop "cold$r"
	{ sub "$t1" "$t0"; echo; } >>"$work/cold"
	rm -f "$work/cold$r.qcow2"

	qemu-img create -q -f qcow2 -b "$work/template.qcow2" -F qcow2 "$work/warm$r.qcow2"
	t0=$(now)
	start "warm$r" "$work/warm$r.qcow2" -S -incoming defer
	read -r t_loaded t_cont < <(spike restore "$work/warm$r.qmp" "$work/template.state" "$timeout") ||
		die "restore $r failed (qemu: $(cat "$work/warm$r.qemu.log"))"
	read -r t1 ident < <(spike ready "$work/warm$r.agent" "$timeout") ||
		die "restore $r: the restored guest's agent did not answer"
	stop "warm$r"
	[ "$ident" = svm-spike ] || die "restore $r: the agent says it is '$ident'"
	{ sub "$t1" "$t0"; echo; } >>"$work/warm"
	{ sub "$t_loaded" "$t0"; echo; } >>"$work/load"
	{ sub "$t1" "$t_cont"; echo; } >>"$work/resume"
	rm -f "$work/warm$r.qcow2"
done

[ "$(sha256sum <"$work/template.qcow2")" = "$template_sum" ] ||
	die "the template's overlay changed during the restores"

cold=$(median <"$work/cold")
warm=$(median <"$work/warm")
load=$(median <"$work/load")
resume=$(median <"$work/resume")
ratio=$(awk -v a="$warm" -v b="$cold" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
mib=$(awk -v b="$save_bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
qv=$("$qemu" --version | head -1 | sed 's/^QEMU emulator version //')
echo "Warm start spike, TCG: qemu $qv, ${mem} MiB, 1 vCPU, $runs cold and $runs warm starts (medians)"
echo "usable = the agent's HELLO+READY on org.slurm-vm.agent.0 (what the prolog waits for)"
echo
echo "| figure | value | peer (same run) | ratio |"
echo "|---|---|---|---|"
echo "| **TCG** cold: qemu start to usable (boot) | $cold s | - | - |"
echo "| **TCG** warm: qemu start to usable (restore + cont) | $warm s | cold: $cold s | $ratio |"
echo "| **TCG** warm: of which qemu start to state loaded (paused) | $load s | warm: $warm s | $(awk -v a="$load" -v b="$warm" 'BEGIN { printf "%.2f", a / b }') |"
echo "| **TCG** warm: of which cont to usable | $resume s | warm: $warm s | $(awk -v a="$resume" -v b="$warm" 'BEGIN { printf "%.2f", a / b }') |"
echo "| **TCG** save: stop + migrate to file, completed | $(printf '%.3f' "$save_s") s (qemu total-time ${save_qemu_ms} ms) | - | - |"
echo "| save file size | $mib MiB ($save_bytes bytes) | guest memory: $mem MiB | $(awk -v a="$save_bytes" -v b="$mem" 'BEGIN { printf "%.3f", a / (b * 1048576) }') |"
echo
echo "cold runs: $(paste -sd' ' "$work/cold") s; warm runs: $(paste -sd' ' "$work/warm") s (load $(paste -sd' ' "$work/load"), cont to usable $(paste -sd' ' "$work/resume"))"
