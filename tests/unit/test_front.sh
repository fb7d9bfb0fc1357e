#!/bin/sh
# The Prolog and Epilog fronts (common/front/front.h): a plain job costs an exec
# of a libc-only program and nothing is run; a VM job gets the -vm program
# beside the front with the same arguments; a missing one is a node fault
# with a message naming it.
set -eu
build=${BUILD_DIR:-$(pwd)}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
# The fronts fall back to the installed programs: on a host with the
# packages installed, hide them (a private tmpfs over the directory) so the
# "nothing anywhere" case is what it says.
libexec=$(printf 'print-dir:\n\t@echo $(pkglibexecdir)\n' |
	make -s -C "$build" -f Makefile -f - print-dir)
without_installed() {
	if [ -e "$libexec" ]; then
		unshare -m sh -c 'mount -t tmpfs tmpfs "$0" && exec "$@"' "$libexec" "$@"
	else
		"$@"
	fi
}

for prog in prolog/slurm-vm-prolog epilog/slurm-vm-epilog; do
	name=${prog#*/}
	cp "$build/$prog" "$t/$name"
	check "$name: loads none of the suite's libraries" \
		"! ldd '$t/$name' | grep -qE 'libvirt|libxml2|libhwloc|libpci|libslurm'"
	rc=0
	env -i SLURM_JOB_ID=1 "$t/$name" >"$t/out" 2>&1 || rc=$?
	check "$name: plain job, no $name-vm anywhere: exit 0, silent" "[ $rc = 0 ] && [ ! -s '$t/out' ]"
	rc=0
	without_installed env -i SLURM_JOB_ID=1 SPANK_VM_IMAGE=x "$t/$name" >"$t/out" 2>&1 || rc=$?
	check "$name: VM job without $name-vm: exit 1, says so" \
		"[ $rc = 1 ] && grep -q 'cannot run $name-vm' '$t/out'"
	printf '#!/bin/sh\necho "ran $0 $*"\n' >"$t/$name-vm"
	chmod 0755 "$t/$name-vm"
	out=$(env -i SLURM_JOB_ID=1 SPANK_VM_IMAGE=x "$t/$name" a1 a2)
	check "$name: VM job: execs $name-vm beside it with its arguments" \
		"[ \"\$out\" = 'ran $t/$name-vm a1 a2' ]"
	rm -f "$t/$name-vm"
done
[ "$fails" = 0 ]
