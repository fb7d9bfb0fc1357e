#!/bin/bash
# `make check` test of slurm-vm check-config's own checks
# (cmd_check_config.c): no vm.conf is said plainly, with the installed
# example to copy. Each area's planted faults are beside its source,
# admin/check/test-AREA.sh, on admin/check/test-setup.sh's node.
. "$(dirname "$0")/check/test-setup.sh"

# Item 8: no vm.conf is said as such; the fixes name the installed examples.
rm "$cc/vm.conf"
check
grep -qF "problem: $cc/vm.conf does not exist" "$out" || fail "a missing vm.conf not reported as missing"
grep -q "does not parse" "$out" && fail "a missing vm.conf reported as not parsing"
fix_for "$cc/vm.conf does not exist" | grep -q "^cp /.*/examples/vm.conf.example $cc/vm.conf " ||
	fail "the missing vm.conf's fix copies no installed example"
exit 0
