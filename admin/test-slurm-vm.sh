#!/bin/bash
# `make check` test of the slurm-vm tool on the sysfs fixture and a real
# 2-node topology: gres.conf lines (golden), plan summaries, refusals, exit
# statuses. Run from the build directory (automake sets $srcdir).
set -euo pipefail

src=$(cd "${srcdir:-.}" && pwd)
svm=${SLURM_VM:-./admin/slurm-vm}
sysfs=$src/tests/fixtures/sysfs/node-gpu-ib
topo=$src/tests/fixtures/topology/32em64t-2n8c2t-pci-normalio.xml
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

expect_status() { # STATUS CMD...: runs CMD, output in $out/o, $out/e
	local want=$1 got=0
	shift
	"$@" >"$out/o" 2>"$out/e" || got=$?
	[ "$got" = "$want" ] ||
		fail "$* exited $got, not $want: $(cat "$out/e")"
}

# gres, prebound: only functions bound to vfio-pci, one line per group
expect_status 0 "$svm" gres --sysfs "$sysfs" --topology "$topo"
grep -v '^#' "$out/o" >"$out/lines"
cat >"$out/want" <<'LINES'
Name=gpu Type=a100_sxm4_40gb File=/dev/vfio/10 Cores=0-7
Name=gpu Type=a100_sxm4_40gb File=/dev/vfio/20 Cores=8-15
Name=ibvf File=/dev/vfio/31 Cores=8-15
Name=ibvf File=/dev/vfio/32 Cores=8-15
Name=ibvf File=/dev/vfio/41
Name=ibvf File=/dev/vfio/51 Cores=0-7
LINES
# the model name depends on the installed pci.ids: compare without Type=
sed -i 's/ Type=[a-z0-9_]*//' "$out/lines" "$out/want"
diff -u "$out/want" "$out/lines" || fail "gres lines differ"
grep -q 'skipped 0000:02:00.0 (gpu): bound to nvidia' "$out/o" ||
	fail "no note about the GPU bound to nvidia"
grep -q '0000:c1:00.1: NUMA node unknown' "$out/o" ||
	fail "no note about the unknown NUMA node"
grep -q 'may change across' "$out/o" || fail "no warning about group numbers"

# managed: unbound functions too, each with a warning
expect_status 0 "$svm" gres --sysfs "$sysfs" --topology "$topo" \
	--set DeviceBinding=managed
for g in 11 33 34; do
	grep -q "^Name=.* File=/dev/vfio/$g " "$out/o" || fail "managed: no group $g"
	grep -q "WARNING: .*/dev/vfio/$g exists only while" "$out/o" ||
		fail "managed: no warning for group $g"
done

expect_status 1 "$svm" gres --sysfs "$src/tests/fixtures/sysfs/bad"
grep -q 'is not a' "$out/e" || fail "bad sysfs: no reason"

# plan: summary of a two-cell guest
expect_status 0 "$svm" plan --summary --sysfs "$sysfs" --topology "$topo" \
	--cpus 0-1,16-17,8-9,24-25 --mem 8G --housekeeping 7 \
	--gpus 01:00.0 --ibvfs 81:00.1
grep -q '^vCPUs: 8 (sockets 2, cores 2, threads 2)' "$out/o" ||
	fail "plan: $(cat "$out/o")"
grep -q '^cell 1: host NUMA node 1' "$out/o" || fail "plan: no cell 1"
grep -q '^device 0000:01:00.0 .* guest cell 0.* +0000:01:00.1' "$out/o" ||
	fail "plan: GPU without its audio function"
grep -q '^device 0000:81:00.1 .* guest cell 1' "$out/o" ||
	fail "plan: VF not in cell 1"
! grep -q '<domain' "$out/o" || fail "--summary printed XML"

expect_status 0 "$svm" plan --xml --sysfs "$sysfs" --topology "$topo" \
	--cpus 8-11 --mem 4G --ibvfs 81:00.1 --set DeviceAttach=emulate
grep -q "<rng model=\"virtio\">" "$out/o" || fail "emulate: no stand-in"
! grep -q "<hostdev" "$out/o" || fail "emulate: hostdev"

# refusals: exit 1 with the reason
expect_status 1 "$svm" plan --sysfs "$sysfs" --topology "$topo" \
	--cpus 0-3 --mem 4G --ibvfs 81:00.1
grep -q 'NUMA node 1 where the job has no CPUs' "$out/e" || fail "locality"
expect_status 1 "$svm" plan --sysfs "$sysfs" --topology "$topo" \
	--cpus 8-11 --mem 4G --gpus 41:00.0
grep -q 'IOMMU group 20' "$out/e" || fail "group"
expect_status 1 "$svm" plan --sysfs "$sysfs" --topology "$topo" \
	--cpus 0-3 --mem 256 --set MemOverhead=512
grep -q 'MemOverhead' "$out/e" || fail "memory"
expect_status 1 "$svm" plan --sysfs "$sysfs" --topology "$topo" \
	--cpus 0-3 --mem 4G --gpus 81:00.1
grep -q 'not a GPU' "$out/e" || fail "kind"

# --seed-dir (the prolog's seed for a hand test) goes with --user; as root
# only, into a directory only root can write, for a user this node knows
pfx=(plan --xml --sysfs "$sysfs" --topology "$topo" --cpus 0-3 --mem 4G)
expect_status 2 "$svm" "${pfx[@]}" --seed-dir "$out/seed"
grep -q -- '--seed-dir DIR goes with --user USER' "$out/e" ||
	fail "--seed-dir without --user: $(cat "$out/e")"
[ ! -e "$out/seed" ] || fail "a refused --seed-dir was made"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	expect_status 1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$svm" "${pfx[@]}" --seed-dir /tmp --user nobody
	grep -q -- '--seed-dir needs root' "$out/e" ||
		fail "--seed-dir as a user: $(cat "$out/e")"
	expect_status 1 "$svm" "${pfx[@]}" --seed-dir "$out/s" --user no-such-user-x
	grep -q 'no-such-user-x: no such user' "$out/e" ||
		fail "--seed-dir for an unknown user: $(cat "$out/e")"
	mkdir -m 0777 "$out/open"
	expect_status 1 "$svm" "${pfx[@]}" --seed-dir "$out/open" --user nobody
	grep -q 'must be root.s and writable only by root' "$out/e" ||
		fail "--seed-dir in a world-writable directory: $(cat "$out/e")"
	! grep -q '<domain' "$out/o" || fail "a refused seed printed XML"
	ln -s /root "$out/link"
	expect_status 1 "$svm" "${pfx[@]}" --seed-dir "$out/link" --user nobody
	grep -q "cannot open --seed-dir $out/link" "$out/e" ||
		fail "--seed-dir a symlink: $(cat "$out/e")"
	[ -z "$(ls "$out/open")" ] || fail "a refused seed left $(ls "$out/open")"
fi

# list and cleanup refuse a user other than root, saying so
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	for cmd in list cleanup; do
		expect_status 1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
			"$svm" "$cmd"
		grep -q "$cmd needs root" "$out/e" || fail "$cmd as nobody: $(cat "$out/e")"
	done
else
	for cmd in list cleanup; do
		expect_status 1 "$svm" "$cmd"
		grep -q "$cmd needs root" "$out/e" || fail "$cmd as non-root: $(cat "$out/e")"
	done
fi

# warm: the templates of WarmDir, newest first; one a prolog holds (its
# lock) is not dropped; --all drops the rest
if [ "$(id -u)" = 0 ]; then
	wd=$out/warm
	for k in 00000000000000aa 00000000000000bb; do
		mkdir -p "$wd/$k"
		printf 'slurm-vm x\nlayer /images/%s.qcow2 1 2 3 4\n' "$k" >"$wd/$k/template"
		head -c 2M /dev/zero >"$wd/$k/state.save"
	done
	touch -d '1 hour ago' "$wd/00000000000000aa/template"
	mkdir "$wd/00000000000000cc" # being made: no marker
	printf 'WarmDir=%s\n' "$wd" >"$out/warm.conf"
	expect_status 0 "$svm" warm --config "$out/warm.conf" list
	[ "$(awk 'NR > 1 { print $1 }' "$out/o" | tr '\n' ' ')" = "00000000000000cc 00000000000000bb 00000000000000aa " ] ||
		fail "warm list order: $(cat "$out/o")"
	grep -q '^00000000000000bb .* 2 MiB  /images/00000000000000bb.qcow2$' "$out/o" ||
		fail "warm list: $(cat "$out/o")"
	grep -q '^00000000000000cc  (being made)' "$out/o" || fail "warm list: $(cat "$out/o")"
	exec 9>"$wd/00000000000000aa.lock"
	flock -s 9
	expect_status 1 "$svm" warm --config "$out/warm.conf" drop --all
	grep -q "template 00000000000000aa is in use" "$out/e" || fail "warm drop of a held template: $(cat "$out/e")"
	[ "$(ls "$wd" | grep -v '\.lock$')" = "00000000000000aa" ] ||
		fail "warm drop --all left: $(ls "$wd")"
	exec 9>&-
	expect_status 0 "$svm" warm --config "$out/warm.conf" drop 00000000000000aa
	# the lock files stay (warmcache_drop(): never unlinked)
	[ "$(ls "$wd" | grep -v '\.lock$')" = "" ] || fail "warm drop left: $(ls "$wd")"
	[ -f "$wd/00000000000000aa.lock" ] || fail "warm drop removed a lock file"
	expect_status 1 "$svm" warm --config "$out/warm.conf" drop ../etc
	expect_status 2 "$svm" warm --config "$out/warm.conf" drop
fi

# check-config reads only this node's gres.conf lines (the one block per
# node that gres.conf(5) documents): another node's missing File= is no
# problem, this node's is, also when named by a hostlist, and a line
# without NodeName= applies to every node.
cc=$out/cc
mkdir "$cc"
printf 'ClusterName=x\nSlurmctldHost=h\n' >"$cc/slurm.conf"
: >"$cc/vm.conf"
cat >"$cc/gres.conf" <<'GRES'
NodeName=other1 Name=gpu File=/nonexistent/other/vfio/[7-8]
NodeName=n[1-3] Name=gpu File=/dev/null
NodeName=n[1,3] Name=ibvf File=/nonexistent/n13/vfio/8
Name=gpu File=/dev/zero
GRES
# (exit 1 throughout: this slurm.conf lacks much else)
expect_status 1 "$svm" check-config --slurm-conf "$cc/slurm.conf" --node n2
grep -q '/nonexistent/' "$out/o" && fail "check-config: another node's File= reported: $(cat "$out/o")"
grep -q "^ok: .*gres.conf: all 2 device files of node n2 exist" "$out/o" ||
	fail "check-config: n2's device files: $(cat "$out/o")"
expect_status 1 "$svm" check-config --slurm-conf "$cc/slurm.conf" --node n3
grep -q '^problem: .*gres.conf:3: Name=ibvf File=/nonexistent/n13/vfio/8 is not a character device' "$out/o" ||
	fail "check-config: n3's missing File= not reported: $(cat "$out/o")"
grep -q '/nonexistent/other' "$out/o" && fail "check-config: other1's File= reported for n3"
# the default node is the host name up to its first dot
sed -i "s/^NodeName=other1 /NodeName=$(hostname -s) /" "$cc/gres.conf"
expect_status 1 "$svm" check-config --slurm-conf "$cc/slurm.conf"
grep -q 'File=/nonexistent/other/vfio/8 is not a character device' "$out/o" ||
	fail "check-config: this host's missing File= not reported: $(cat "$out/o")"

# usage
expect_status 2 "$svm"
expect_status 2 "$svm" frobnicate
expect_status 2 "$svm" plan --cpus 0
expect_status 0 "$svm" --help
expect_status 0 "$svm" plan --help
echo PASS
