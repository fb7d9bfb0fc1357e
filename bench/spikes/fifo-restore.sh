#!/bin/bash
# Issue #30 spike (not part of the repo): restore a libvirt save file of a
# booted template guest under another domain name/uuid, by feeding libvirt a
# FIFO whose header XML has the job's name and uuid (fifo_tool.py writer).
# libvirt 9.0 / qemu 7.2, TCG, the busybox test guest of tests/guest/cache.
#
#   fifo-restore.sh            (takes /tmp/slurm-vm-cluster.lock itself)
#
# A private virtlogd+libvirtd in a mount namespace of their own whose
# /run/libvirt, /var/{lib,log,cache}/libvirt, /etc/libvirt are under $work
# (tests/cluster/libvirt.sh's node approach); clients use
# qemu+unix:///system?socket=$work/lv/run/libvirt-sock.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=/work/main
lock=/tmp/slurm-vm-cluster.lock
if [ "${FIFO_LOCKED:-0}" != 1 ]; then
	# The lock must be ours by 03:00 UTC.
	wait_s=$(($(date -u -d '03:00' +%s) - $(date -u +%s)))
	[ "$wait_s" -gt 0 ] || { echo "too late to take the lock" >&2; exit 2; }
	echo "$(date -u +%T) waiting up to ${wait_s}s for $lock" >&2
	exec env FIFO_LOCKED=1 flock -w "$wait_s" "$lock" "$0" "$@"
fi
echo "== $(date -u '+%F %T') lock taken"
tool="python3 $here/fifo_tool.py"
work=$(mktemp -d /var/tmp/fifo-restore.XXXXXX)
lv=$work/lv
URI="qemu+unix:///system?socket=$lv/run/libvirt-sock"
V() { virsh -q -c "$URI" "$@"; }
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
bg_pids=()
# wait_writer PID: the writer's exit status; killed after 5 s (a reader that
# never opened or stopped reading leaves it blocked)
wait_writer() {
	local i
	for i in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$1" 2>/dev/null; then
		echo "  writer $1 still blocked 5 s after virsh returned: killed"
		kill "$1"
	fi
	wait "$1"
}

cleanup() {
	local rc=$? p f
	trap - EXIT INT TERM
	echo "== $(date -u '+%T') cleanup (rc $rc)"
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
	if [ -S "$lv/run/libvirt-sock" ]; then
		for d in $(V list --name 2>/dev/null); do V destroy "$d" >/dev/null 2>&1; done
	fi
	for f in "$lv/state/libvirtd.pid" "$lv"/run/qemu/*.pid "$lv/state/virtlogd.pid"; do
		[ -r "$f" ] || continue
		p=$(tr -dc 0-9 <"$f")
		[ -n "$p" ] && [ -d "/proc/$p" ] || continue
		kill -TERM "$p" 2>/dev/null
		for _ in $(seq 50); do [ -d "/proc/$p" ] || break; sleep 0.1; done
		[ -d "/proc/$p" ] && kill -KILL "$p" 2>/dev/null
	done
	if [ "$rc" != 0 ] && [ -f "$lv/state/libvirtd.log" ]; then
		echo "--- libvirtd.log errors (tail)"
		grep -E ' (error|warning) ' "$lv/state/libvirtd.log" | tail -n 20 | cut -c1-300
	fi
	chmod -R u+w "$work" 2>/dev/null
	rm -rf "$work"
	echo "== $(date -u '+%T') lock released on exit"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "FAIL: $*"; exit 1; }

# ---- guest files: a private copy (the cache may be rebuilt by others) ----
g=$work/guest
mkdir -p "$g"
cp "$repo"/tests/guest/cache/{vmlinux,initrd.img,rootfs.qcow2,cmdline} "$g/"
cmdline="$(cat "$g/cmdline") svm.hostname=fifotest-tmpl"

# ---- private libvirtd -----------------------------------------------------
mkdir -p "$lv"/{run,lib,log,cache,state,etc}
for f in /etc/libvirt/*.conf; do [ -f "$f" ] && cp "$f" "$lv/etc/"; done
sed -e "s|@STATE@|$lv/state|g" -e "s|@LOG_FILTERS@|3:remote 3:util 3:rpc 3:qemu|g" \
	"$repo/tests/cluster/libvirt/libvirtd.conf.in" >"$lv/etc/libvirtd.conf"
sed -e "s|@STATE@|$lv/state|g" "$repo/tests/cluster/libvirt/virtlogd.conf.in" >"$lv/etc/virtlogd.conf"
cp "$repo/tests/cluster/libvirt/qemu.conf" "$lv/etc/qemu.conf"
[ -d /var/cache/slurm-vm-test/libvirt/qemu ] && cp -a /var/cache/slurm-vm-test/libvirt/. "$lv/cache/"
: >"$lv/state/passwd.bind"
if ! getent passwd libvirt-qemu >/dev/null; then
	cp /etc/passwd "$lv/state/passwd"; cp /etc/group "$lv/state/group"
	echo 'libvirt-qemu:x:64055:64055:libvirt:/nonexistent:/usr/sbin/nologin' >>"$lv/state/passwd"
	getent group libvirt-qemu >/dev/null || echo 'libvirt-qemu:x:64055:' >>"$lv/state/group"
	getent group kvm >/dev/null || echo 'kvm:x:64056:' >>"$lv/state/group"
	echo 1 >"$lv/state/passwd.bind"
fi
t0=$(now)
unshare -m --propagation private -- bash -ec '
lv=$1
mount --make-rprivate /
if [ -s "$lv/state/passwd.bind" ]; then
	mount --bind "$lv/state/passwd" /etc/passwd
	mount --bind "$lv/state/group" /etc/group
fi
mkdir -p /etc/libvirt /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt
mount --bind "$lv/etc" /etc/libvirt
mount --bind "$lv/run" /run/libvirt
mount --bind "$lv/lib" /var/lib/libvirt
mount --bind "$lv/log" /var/log/libvirt
mount --bind "$lv/cache" /var/cache/libvirt
mkdir -p /var/log/libvirt/qemu /var/lib/libvirt/qemu
virtlogd -d -f /etc/libvirt/virtlogd.conf -p "$lv/state/virtlogd.pid"
exec libvirtd -d -f /etc/libvirt/libvirtd.conf -p "$lv/state/libvirtd.pid"
' libvirt-ns "$lv" >"$lv/state/start.log" 2>&1 9>&- || die "libvirtd start: $(cat "$lv/state/start.log")"
for i in $(seq 240); do V version >/dev/null 2>&1 && break; sleep 0.25; done
V version >/dev/null || die "private libvirtd does not answer"
echo "private libvirtd pid $(cat "$lv/state/libvirtd.pid"), virtlogd pid $(cat "$lv/state/virtlogd.pid"), up in $(sub "$(now)" "$t0") s"
echo "URI: $URI"
V version | sed 's/^/  /'
echo "security model: $(V capabilities | grep -o '<model>[^<]*</model>' | tr '\n' ' ')"

# ---- template domain ------------------------------------------------------
# dom_xml NAME UUID DISK AGENT LOG: tests/guest/domain.xml.in filled as
# test_guest_boot.sh does, plus <uuid> and <genid/>.
dom_xml() {
	sed -e "s|@NAME@|$1|" -e "s|@MEMORY_MIB@|512|" -e "s|@KERNEL@|$g/vmlinux|" \
		-e "s|@INITRD@|$g/initrd.img|" -e "s|@CMDLINE@|$cmdline|" \
		-e "s|@DISK@|$3|" -e "s|@AGENT_SOCKET@|$4|" -e "s|@CONSOLE_LOG@|$5|" \
		-e "s|<name>$1</name>|<name>$1</name>\n  <uuid>$2</uuid>\n  <genid/>|" \
		"$repo/tests/guest/domain.xml.in"
}
pty_of() { V dumpxml "$1" | grep -o "<source path='/dev/pts/[0-9]*'" | head -1 | cut -d"'" -f2; }

qemu-img create -q -f qcow2 -b "$g/rootfs.qcow2" -F qcow2 "$work/tmpl.qcow2"
dom_xml fifotest-tmpl "$(cat /proc/sys/kernel/random/uuid)" "$work/tmpl.qcow2" \
	"$work/tmpl.agent" "$work/tmpl.console" >"$work/tmpl.xml"
echo
echo "== cold boot of the template: virsh create -> agent READY"
t0=$(now)
V create "$work/tmpl.xml" || die "virsh create of the template"
t_created=$(now)
read -r t_ready ident < <($tool ready "$work/tmpl.agent" 120) || die "template agent not ready"
echo "template: virsh create returned after $(sub "$t_created" "$t0") s, agent READY (ident $ident) after $(sub "$t_ready" "$t0") s"
grep -q SLURM-VM-GUEST-READY "$work/tmpl.console" && echo "template console has SLURM-VM-GUEST-READY"
V dumpxml fifotest-tmpl | grep -E '<(uuid|genid)>' | sed 's/^ */  live XML: /'
tpty=$(pty_of fifotest-tmpl)
echo "template console ($tpty):"
$tool console "$tpty" 'hostname; cat /proc/sys/kernel/random/boot_id; ls /sys/bus/acpi/devices | grep -i -e QEMUVGID -e VMGEN; sync; echo 3 >/proc/sys/vm/drop_caches' 10 | sed 's/^/  | /'
sleep 1

echo
echo "== virsh save fifotest-tmpl (raw) -> tmpl.save"
t0=$(now)
V save fifotest-tmpl "$work/tmpl.save" || die "virsh save"
echo "save took $(sub "$(now)" "$t0") s, $(stat -c %s "$work/tmpl.save") bytes; domains now: [$(V list --all --name | tr '\n' ' ')]"
chmod 0444 "$work/tmpl.qcow2"
tsum=$(sha256sum <"$work/tmpl.qcow2")
$tool header "$work/tmpl.save" | sed 's/^/  /'

# mkjob NAME [--empty-genid]: overlay, job XML; sets uuid_NAME
mkjob() {
	local n=$1
	shift
	local u
	u=$(cat /proc/sys/kernel/random/uuid)
	eval "uuid_${n//-/_}=$u"
	qemu-img create -q -f qcow2 -b "$work/tmpl.qcow2" -F qcow2 "$work/$n.qcow2"
	$tool xml "$work/tmpl.save" "$work/$n.xml" "$n" "$u" "$work/$n.qcow2" \
		"$work/$n.agent" "$work/$n.console" "$@"
}

echo
echo "== negative 1: plain 'virsh restore FILE --xml JOB.xml' with another name/uuid"
mkjob fifotest-plain
echo "\$ virsh restore $work/tmpl.save --xml fifotest-plain.xml --paused"
V restore "$work/tmpl.save" --xml "$work/fifotest-plain.xml" --paused 2>&1 | sed 's/^/  /'
echo "domains now: [$(V list --all --name | tr '\n' ' ')]"

echo
echo "== negative 1b: plain restore, JOB.xml keeps the header's uuid, only <name> differs"
huuid=$($tool header "$work/tmpl.save" | sed -n 's/^xml uuid: //p')
qemu-img create -q -f qcow2 -b "$work/tmpl.qcow2" -F qcow2 "$work/fifotest-plain2.qcow2"
$tool xml "$work/tmpl.save" "$work/fifotest-plain2.xml" fifotest-plain2 "$huuid" \
	"$work/fifotest-plain2.qcow2" "$work/fifotest-plain2.agent" "$work/fifotest-plain2.console"
echo "\$ virsh restore $work/tmpl.save --xml fifotest-plain2.xml --paused"
V restore "$work/tmpl.save" --xml "$work/fifotest-plain2.xml" --paused 2>&1 | sed 's/^/  /'
echo "domains now: [$(V list --all --name | tr '\n' ' ')]"

echo
echo "== negative 2: FIFO restore, header renamed, but JOB.xml has an empty <genid/> (not the header's value)"
mkjob fifotest-nogenid --empty-genid
grep -E '<genid' "$work/fifotest-nogenid.xml" | sed 's/^ */  JOB.xml: /'
$tool writer "$work/tmpl.save" "$work/fifotest-nogenid.fifo" fifotest-nogenid "$uuid_fifotest_nogenid" &
wp=$!; bg_pids+=("$wp")
while [ ! -p "$work/fifotest-nogenid.fifo" ]; do sleep 0.01; done
V restore "$work/fifotest-nogenid.fifo" --xml "$work/fifotest-nogenid.xml" --paused 2>&1 | sed 's/^/  /'
wait_writer "$wp"; echo "  writer exit $?"
echo "domains now: [$(V list --all --name | tr '\n' ' ')]"

# restore_fifo NAME: writer + virsh restore --paused + resume + agent; prints timings
restore_fifo() {
	local n=$1 u wp t0 t1 t2 t3 ident rc
	u=$(eval echo "\$uuid_${n//-/_}")
	rm -f "$work/$n.fifo"
	t0=$(now)
	$tool writer "$work/tmpl.save" "$work/$n.fifo" "$n" "$u" &
	wp=$!
	while [ ! -p "$work/$n.fifo" ]; do sleep 0.005; done
	echo "\$ virsh restore $work/$n.fifo --xml $work/$n.xml --paused"
	V restore "$work/$n.fifo" --xml "$work/$n.xml" --paused 2>&1 | sed "s/^/  [$n] /"
	rc=${PIPESTATUS[0]}
	t1=$(now)
	wait_writer "$wp"
	[ "$rc" = 0 ] || { echo "[$n] restore failed (rc $rc)"; return 1; }
	echo "[$n] state after restore: $(V domstate "$n" --reason)"
	V resume "$n" >/dev/null || { echo "[$n] resume failed"; return 1; }
	t2=$(now)
	read -r t3 ident < <($tool ready "$work/$n.agent" 60) || { echo "[$n] agent not ready"; return 1; }
	echo "[$n] TIMES: restore (fifo) $(sub "$t1" "$t0") s, +resume $(sub "$t2" "$t0") s, agent READY $(sub "$t3" "$t0") s (ident $ident)"
}

echo
echo "== FIFO restore, one job"
mkjob fifotest-job1
ls -l "$work/tmpl.save"
restore_fifo fifotest-job1 || die "FIFO restore of fifotest-job1"
echo "virsh list:"; V list | sed 's/^/  /'
V dumpxml fifotest-job1 | grep -E "<(name|uuid|genid)>|source file=|source mode='bind'|log file=" | sed 's/^ */  live XML: /'
ls -l "$work/fifotest-job1.fifo" | sed 's/^/  fifo after restore: /'
jpty=$(pty_of fifotest-job1)
echo "job1 console ($jpty):"
$tool console "$jpty" 'hostname; cat /proc/sys/kernel/random/boot_id; dmesg | grep -i -e crng -e vmgen -e "virtual machine"; uptime' 10 | sed 's/^/  | /'
echo "job1 console log ($work/fifotest-job1.console) has $(wc -c <"$work/fifotest-job1.console") bytes"
grep -h -e '-incoming' "$lv/log/qemu/fifotest-job1.log" | grep -o -- '-incoming [^ ]*' | head -1 | sed 's/^/  qemu: /'
grep -ci iohelper "$lv/state/libvirtd.log" | sed 's/^/  iohelper mentions in libvirtd.log: /'

echo
echo "== two FIFO restores of the same template at the same time"
mkjob fifotest-j2
mkjob fifotest-job3-long
t0=$(now)
restore_fifo fifotest-j2 >"$work/job2.out" 2>&1 &
p2=$!
restore_fifo fifotest-job3-long >"$work/job3.out" 2>&1 &
p3=$!
wait "$p2"; r2=$?
wait "$p3"; r3=$?
cat "$work/job2.out" "$work/job3.out"
echo "both done after $(sub "$(now)" "$t0") s (rc $r2 $r3)"
echo "virsh list:"; V list | sed 's/^/  /'
for n in fifotest-j2 fifotest-job3-long; do
	p=$(pty_of "$n")
	echo "$n console ($p):"
	$tool console "$p" 'cat /proc/sys/kernel/random/boot_id; dmesg | grep -i -e crng -e vmgen | tail -2' 10 | sed 's/^/  | /'
done
[ "$(sha256sum <"$work/tmpl.qcow2")" = "$tsum" ] && echo "template overlay unchanged (sha256)"

echo
echo "== cold boot of a fresh domain for comparison (the restored guests destroyed first)"
for n in fifotest-job1 fifotest-j2 fifotest-job3-long; do V destroy "$n" >/dev/null; done
for c in 1 2; do
	qemu-img create -q -f qcow2 -b "$g/rootfs.qcow2" -F qcow2 "$work/cold$c.qcow2"
	dom_xml fifotest-cold$c "$(cat /proc/sys/kernel/random/uuid)" "$work/cold$c.qcow2" \
		"$work/cold$c.agent" "$work/cold$c.console" >"$work/cold$c.xml"
	t0=$(now)
	V create "$work/cold$c.xml" >/dev/null || die "cold create"
	t1=$(now)
	read -r t2 ident < <($tool ready "$work/cold$c.agent" 120) || die "cold agent"
	echo "[fifotest-cold$c] TIMES: virsh create $(sub "$t1" "$t0") s, agent READY $(sub "$t2" "$t0") s (ident $ident)"
	V destroy fifotest-cold$c >/dev/null
done
echo "== $(date -u '+%T') done"
