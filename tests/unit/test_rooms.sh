#!/bin/sh
# Rooms (doc/design.md, "Rooms"): each directory's local.mk says on its
# first line which rooms it may use, and only common/slurm includes
# libslurm's <slurm/slurm.h>. Two guards hold it, shown here on a
# planted wrong include (job, which spank_vm.so links, including vm's
# reclaim.h, which needs libvirt; the guest agent including a header of
# the host's slurm-vm-exec, the host's relay one of the guest agent's):
#  - scripts/check-rooms, over the includes of the tree (and here a copy
#    with the plant): FILE:LINE, the wrong arrow, the local.mk line;
#  - the compiler: a room's sources see only build/rooms/ROOM/
#    (scripts/room-includes), so the planted include does not compile.
set -eu
build=${BUILD_DIR:-$(pwd)}
src=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
ls=$(mktemp -d) # the second copy: check-rooms walks all of a copy
trap 'rm -rf "$t" "$ls"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

victim=common/job/request.c
plant='#include "vm/reclaim.h"'
# The copies: every room's local.mk and sources, the check itself.
(cd "$src" && tar cf - scripts/check-rooms */local.mk common/*/local.mk \
	agent/*/local.mk common/*/*.[ch] spank_vm/*.[ch] prolog/*.[ch] \
	epilog/*.[ch] agent/*/*.[ch] admin/*.[ch] gres_vgpu/*.[ch]) >"$t/tree.tar"
tar xf "$t/tree.tar" -C "$t"
tar xf "$t/tree.tar" -C "$ls"
line=$(grep -n '^#include "' "$t/$victim" | tail -1 | cut -d: -f1)
sed -i "${line}a $plant" "$t/$victim"
line=$((line + 1))
# The two sides of the guest channel: the guest agent including a header of
# the host's slurm-vm-exec, the host's relay one of the guest agent's.
guest=agent/guest/spawn.c
host=agent/host/relay.c
gline=$(grep -n '^#include "' "$t/$guest" | tail -1 | cut -d: -f1)
sed -i "${gline}a #include \"hostcmd_env.h\"" "$t/$guest"
gline=$((gline + 1))
hline=$(grep -n '^#include "' "$t/$host" | tail -1 | cut -d: -f1)
sed -i "${hline}a #include \"persona.h\"" "$t/$host"
hline=$((hline + 1))

if command -v python3 >/dev/null; then
	check "the tree: every include within its room's uses" \
		"'$src/scripts/check-rooms' '$src' >'$t/tree.out'"
	cat "$t/tree.out"
	rc=0
	"$t/scripts/check-rooms" "$t" >"$t/plant.out" || rc=$?
	cat "$t/plant.out"
	check "the planted include fails the check" "[ $rc = 1 ]"
	check "... named with its line, arrow and the uses line" \
		"grep -qxF '$victim:$line: includes \"vm/reclaim.h\" of room vm; room job may use only: channel core (common/job/local.mk:1)' '$t/plant.out'"
	check "the guest agent including a host side's header fails, named" \
		"grep -qxF '$guest:$gline: includes \"hostcmd_env.h\" of room agent_host; room agent_guest may use only: agent_shared channel core (agent/guest/local.mk:1)' '$t/plant.out'"
	check "... and the host's relay including the guest's" \
		"grep -qxF '$host:$hline: includes \"persona.h\" of room agent_guest; room agent_host may use only: agent_shared channel core (agent/host/local.mk:1)' '$t/plant.out'"
	# A cycle between rooms is named too: core saying it uses job.
	sed -i '1s/.*/# room: core uses: job/' "$t/common/core/local.mk"
	rc=0
	"$t/scripts/check-rooms" "$t" >"$t/cycle.out" || rc=$?
	check "a cycle between rooms fails the check, named" \
		"[ $rc = 1 ] && grep -q 'cycle: .*core -> .*job' '$t/cycle.out'"
	# A header of common/ by bare name (compiles only beside it): named.
	sed -i '1s/.*/# room: core uses: -/' "$t/common/core/local.mk"
	sed -i 's|^#include "job/vmconf.h"|#include "vmconf.h"|' "$t/common/job/image.h"
	rc=0
	"$t/scripts/check-rooms" "$t" >"$t/bare.out" || rc=$?
	check "a bare include of a room's header fails the check, named" \
		"[ $rc = 1 ] && grep -q '^common/job/image.h:[0-9]*: includes \"vmconf.h\" by bare name; write \"job/vmconf.h\"' '$t/bare.out'"
	# libslurm outside common/slurm (the prolog calling slurmctld
	# itself), in the second copy.
	for f in prolog/net.c:slurm.h epilog/epilog.c:slurm_errno.h; do
		src_file=${f%%:*}
		n=$(grep -n '^#include <' "$ls/$src_file" | tail -1 | cut -d: -f1)
		sed -i "${n}a #include <slurm/${f#*:}>" "$ls/$src_file"
		echo "$src_file:$((n + 1)):${f#*:}" >>"$t/libslurm.want"
	done
	rc=0
	"$ls/scripts/check-rooms" "$ls" >"$t/libslurm.out" || rc=$?
	cat "$t/libslurm.out"
	check "libslurm included outside common/slurm fails the check, twice" \
		"[ $rc = 1 ] && grep -q '^check-rooms: 2 wrong' '$t/libslurm.out'"
	while IFS=: read -r file n header; do
		check "... $file:$n named, sent to common/slurm" \
			"grep -qxF '$file:$n: includes <slurm/$header>: libslurm belongs in common/slurm alone; call a function of that room (slurm/ctld.h: what the prolog asks slurmctld)' '$t/libslurm.out'"
	done <"$t/libslurm.want"
else
	echo "skip: no python3 for scripts/check-rooms; the compiler half follows"
fi

cc=$(printf 'print-cc:\n\t@echo $(CC)\n' |
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory \
	-C "$build" -f Makefile -f - print-cc)
compile() { # ROOM FILE
	$cc -std=gnu11 -fsyntax-only -I"$build" -I"$build/rooms/$1" "$2" \
		2>"$t/cc.err"
}
check "the build made job's include directory: core, channel, job only" \
	"[ \"\$(ls '$build/rooms/job' | tr '\n' ' ')\" = 'channel core job ' ]"
check "$victim compiles as room job" "compile job '$src/$victim'"
rc=0
compile job "$t/$victim" || rc=$?
cat "$t/cc.err"
check "the planted include does not compile as room job" \
	"[ $rc != 0 ] && grep -q 'vm/reclaim.h: No such file' '$t/cc.err'"
check "... and compiles in a room that may use vm (prolog)" \
	"compile prolog '$t/$victim'"
check "$guest compiles as room agent_guest" \
	"compile agent_guest '$src/$guest'"
rc=0
compile agent_guest "$t/$guest" || rc=$?
cat "$t/cc.err"
check "a host side's header does not compile in the guest agent" \
	"[ $rc != 0 ] && grep -q 'hostcmd_env.h: No such file' '$t/cc.err'"
[ $fails = 0 ]
