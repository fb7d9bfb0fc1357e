#!/bin/sh
# `slurm-vm ib-partitions` output read by OpenSM's own partitions.conf parser
# (osm_prtn_config.c of the installed OpenSM version, compiled here with
# tests/unit/opensm-parse.c; scripts/install-deps.sh --opensm-source fetches
# it): the site's partitions kept, each running job's VFs full members of
# its P_Key and limited members of Default (which demotes them from the
# base's ALL=full), also a job left without a partition by a P_Key clash,
# a 1024-node job past OpenSM's 4 KiB line, a base
# without Default refused, and a broken file refused by OpenSM itself.
set -eu
build=${BUILD_DIR:-$(pwd)}
src=$(cd "$(dirname "$0")/../.." && pwd)
osm=${OPENSM_SOURCE_DIR:-/var/cache/slurm-vm/opensm}
if [ ! -f "$osm/opensm/osm_prtn_config.c" ] || [ ! -f /usr/include/infiniband/opensm/osm_subnet.h ]; then
	# run-all.sh sets OPENSM_SOURCE_DIR: there a missing source fails.
	[ -z "${OPENSM_SOURCE_DIR:-}" ] || {
		echo "FAIL: no OpenSM source in $OPENSM_SOURCE_DIR"
		exit 1
	}
	echo "SKIP: no OpenSM source (scripts/install-deps.sh --opensm-source $osm) or libopensm-dev"
	exit 77
fi
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

${CC:-cc} -o "$t/opensm-parse" -I"$osm/include" -I/usr/include/infiniband \
	"$src/tests/unit/opensm-parse.c" "$osm/opensm/osm_prtn_config.c" \
	-lopensm -losmcomp
svm() { "$build/admin/slurm-vm" ib-partitions --config /dev/null --all "$@"; }

cat >"$t/base" <<'EOF'
# the site's partitions
Default=0x7fff, ipoib, defmember=full : ALL, SELF=full;
storage=0x0002, ipoib : ALL=full;
EOF
mkdir "$t/rec"
# records as the prologs write them (common/hw/ibpart.c)
printf '# slurm-vm\njob 1234\npkey 0x14d2\nguid 0x0200000134800001\nguid 0x0200000134800003\n' >"$t/rec/job-1234.n1"
printf 'job 1234\npkey 0x14d2\nguid 0x0200000134800041\n' >"$t/rec/job-1234.n2"
printf 'job 99\npkey 0x1063\nguid 0x0200000018c00001\n' >"$t/rec/job-99.n1"

svm --base "$t/base" --records "$t/rec" --output "$t/partitions.conf" >"$t/out"
check "written, and says so" "grep -q '2 job partitions' '$t/out'"
rc=0
"$t/opensm-parse" "$t/partitions.conf" >"$t/parsed" 2>"$t/err" || rc=$?
check "OpenSM parses it" "[ $rc = 0 ] && [ ! -s '$t/err' ]"
check "the site's partitions first, as written" \
	"head -4 '$t/parsed' | tr '\n' ' ' | grep -qx 'partition Default 0x7fff member Default ALL full member Default 0x0000000000000000 full partition storage 0x0002 '"
check "job 1234: P_Key 0x14d2, its three VFs of two nodes full members" \
	"grep -q '^partition slurmvm_job1234 0x14d2$' '$t/parsed' && [ \$(grep -c '^member slurmvm_job1234 0x02000001348000[04][13] full$' '$t/parsed') = 3 ]"
check "job 99: its own P_Key 0x1063 and VF" \
	"grep -q '^partition slurmvm_job99 0x1063$' '$t/parsed' && grep -q '^member slurmvm_job99 0x0200000018c00001 full$' '$t/parsed'"
check "every job VF a limited member of Default, after the base's ALL" \
	"[ \$(grep -c '^member Default 0x0200000[0-9a-f]* limited$' '$t/parsed') = 4 ]"
check "no job VF a full member of another job's partition" \
	"! grep -q 'member slurmvm_job99 0x0200000134' '$t/parsed' && ! grep -q 'member slurmvm_job1234 0x0200000018' '$t/parsed'"

# unchanged input: the file is left alone (OpenSM not told again)
before=$(stat -c %Y.%i "$t/partitions.conf")
svm --base "$t/base" --records "$t/rec" --output "$t/partitions.conf" >"$t/out2"
check "unchanged: not rewritten" "[ ! -s '$t/out2' ] && [ \"\$(stat -c %Y.%i '$t/partitions.conf')\" = '$before' ]"

# OpenSM told (SIGHUP, its heavy sweep rereads the partitions) only when
# the file changed: a stand-in that counts the signals it gets
# (python, not a shell trap: a shell cannot trap a signal it inherited
# ignored, and CI may run under nohup)
python3 -c '
import os, signal, sys, time
n = 0
def hup(sig, frame):
    global n
    n += 1
    open(sys.argv[1] + "/hups", "w").write("%d\n" % n)
signal.signal(signal.SIGHUP, hup)
open(sys.argv[1] + "/opensm.pid", "w").write("%d\n" % os.getpid())
while True:
    time.sleep(0.1)
' "$t" &
sm=$!
i=0
while [ ! -s "$t/opensm.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
printf 'job 7\npkey 0x1007\nguid 0x0200000001c00001\n' >"$t/rec/job-7.n1"
hups() { cat "$t/hups" 2>/dev/null || echo 0; }
# the stand-in sees a signal once its sleep ends: wait for it (a loaded
# machine may take a while), then for a second one that must not come
svm --base "$t/base" --records "$t/rec" --output "$t/partitions.conf" --pid-file "$t/opensm.pid" >"$t/out3"
i=0
while [ "$(hups)" = 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
svm --base "$t/base" --records "$t/rec" --output "$t/partitions.conf" --pid-file "$t/opensm.pid" >>"$t/out3"
sleep 1
kill "$sm" 2>/dev/null || true
check "changed: OpenSM gets one SIGHUP; unchanged: none" \
	"[ \"\$(hups)\" = 1 ] && grep -q 'told to read its partitions again' '$t/out3' && grep -q slurmvm_job7 '$t/partitions.conf'"
rm -f "$t/rec/job-7.n1"

# a job of 1024 nodes, 2 VFs each: 2048 members, far past a 4 KiB line
rm -f "$t/rec/"*
i=0
while [ $i -lt 1024 ]; do
	printf 'job 4242\npkey 0x2092\nguid 0x%016x\nguid 0x%016x\n' \
		$((0x0200000424800000 + i * 64 + 1)) $((0x0200000424800000 + i * 64 + 3)) >"$t/rec/job-4242.n$i"
	i=$((i + 1))
done
svm --base "$t/base" --records "$t/rec" --dry-run >"$t/big.conf"
rc=0
"$t/opensm-parse" "$t/big.conf" >"$t/big.parsed" 2>"$t/err" || rc=$?
check "1024 nodes: OpenSM reads all 2048 members" \
	"[ $rc = 0 ] && [ \$(grep -c '^member slurmvm_job4242 .* full$' '$t/big.parsed') = 2048 ]"

# two running jobs on one P_Key (their prologs at once): the second gets no
# partition and is named, but its VF is a limited member of Default all the
# same, never left a full one by the base's ALL
rm -f "$t/rec/"*
printf 'job 99\npkey 0x1063\nguid 0x0200000018c00001\n' >"$t/rec/job-99.n1"
printf 'job 100\npkey 0x1063\nguid 0x0200000019000001\n' >"$t/rec/job-100.n1"
rc=0
svm --base "$t/base" --records "$t/rec" --dry-run >"$t/clash.conf" 2>"$t/err" || rc=$?
prc=0
"$t/opensm-parse" "$t/clash.conf" >"$t/clash.parsed" 2>/dev/null || prc=$?
check "a P_Key clash: named, no partition, its VF a limited member of Default" \
	"[ $rc = 1 ] && [ $prc = 0 ] && grep -q 'jobs 99 and 100' '$t/err' && ! grep -q slurmvm_job100 '$t/clash.parsed' && grep -q '^member Default 0x0200000019000001 limited$' '$t/clash.parsed'"

# the parser really refuses a bad file
printf 'broken=notakey, ipoib : ALL=full;\n' >"$t/bad"
rc=0
"$t/opensm-parse" "$t/bad" >/dev/null 2>"$t/err" || rc=$?
check "a bad P_Key: OpenSM refuses it" "[ $rc = 1 ] && grep -q 'PARSE ERROR' '$t/err'"

# a base without Default: the jobs' lines would make one of only their VFs
printf 'storage=0x0002 : ALL=full;\n' >"$t/nodefault"
rc=0
svm --base "$t/nodefault" --records "$t/rec" --output "$t/x.conf" >/dev/null 2>"$t/err" || rc=$?
check "a base without Default: refused, nothing written" \
	"[ $rc = 1 ] && grep -q 'does not define the Default partition' '$t/err' && [ ! -e '$t/x.conf' ]"

[ "$fails" = 0 ] && echo PASS || echo "FAIL: $fails checks"
[ "$fails" = 0 ]
