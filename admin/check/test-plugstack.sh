#!/bin/bash
# check-config's plugstack.conf (plugstack.c):
#  - spank_vm.so's line in an included file (absolute and relative include)
#    is found; no line at all: the fix drops a file into plugstack.conf.d/
#    and leaves plugstack.conf as shipped;
#  - a spank_vm.so line naming a path where no plugin is.
. "$(dirname "$0")/test-setup.sh"

# Item 4: the line is in an included file, found as slurmd finds it.
echo "required spank_vm.so config=$cc/vm.conf" >"$cc/plugstack.conf.d/vm.conf"
check
grep -qF "ok:      $cc/plugstack.conf loads $cc/plugins/spank_vm.so ($cc/plugstack.conf.d/vm.conf:1)" "$out" ||
	fail "spank_vm.so in plugstack.conf.d/ (absolute include) not found"
echo "include plugstack.conf.d/*.conf # relative: from plugstack.conf's directory" >"$cc/plugstack.conf"
check
grep -qF "loads $cc/plugins/spank_vm.so" "$out" ||
	fail "spank_vm.so in plugstack.conf.d/ (relative include) not found"
cp "$cc/plugstack.conf.shipped" "$cc/plugstack.conf"

# No line: the fix adds a file to the included directory (made if need be).
rm -r "$cc/plugstack.conf.d"
check
grep -qF "problem: $cc/plugstack.conf does not load spank_vm.so" "$out" ||
	fail "a plugstack.conf that loads no spank_vm.so not reported"
run_fix "does not load spank_vm.so"
cmp -s "$cc/plugstack.conf" "$cc/plugstack.conf.shipped" ||
	fail "the fix changed plugstack.conf instead of adding to plugstack.conf.d/"
check
grep -qF "loads $cc/plugins/spank_vm.so ($cc/plugstack.conf.d/slurm-vm.conf:1)" "$out" ||
	fail "after its fix, spank_vm.so is still not loaded"

# Item 3: a line naming a path where there is no plugin (the old guide's).
echo "required /usr/lib/slurm-vm/spank_vm.so config=$cc/vm.conf" >"$cc/plugstack.conf.d/slurm-vm.conf"
check
grep -qF "problem: $cc/plugstack.conf.d/slurm-vm.conf:1: /usr/lib/slurm-vm/spank_vm.so is not there" "$out" ||
	fail "a spank_vm.so line naming a missing file not reported"
run_fix "/usr/lib/slurm-vm/spank_vm.so is not there"
grep -qxF "required $cc/plugins/spank_vm.so config=$cc/vm.conf" "$cc/plugstack.conf.d/slurm-vm.conf" ||
	fail "the fix did not name the installed plugin: $(cat "$cc/plugstack.conf.d/slurm-vm.conf")"
check
grep -qF "loads $cc/plugins/spank_vm.so" "$out" || fail "after its fix, spank_vm.so is still not found"
exit 0
