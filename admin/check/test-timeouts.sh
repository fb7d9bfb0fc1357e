#!/bin/bash
# check-config's Prolog and Epilog timeouts (timeouts.c): PrologTimeout
# (25.05) over PrologEpilogTimeout, one shorter than a boot.
. "$(dirname "$0")/test-setup.sh"

echo "PrologEpilogTimeout=200" >>"$cc/slurm.conf"
if [ "$release" -ge 2505 ]; then
	echo "PrologTimeout=3000" >>"$cc/slurm.conf"
	check
	grep -qF "ok:      PrologTimeout=3000 covers the Prolog's" "$out" ||
		fail "PrologTimeout (25.05) does not override PrologEpilogTimeout"
	grep -qF "ok:      PrologEpilogTimeout=200 covers the Epilog's" "$out" ||
		fail "the Epilog's timeout is not PrologEpilogTimeout without EpilogTimeout"
else
	check
	grep -qF "problem: PrologEpilogTimeout=200 is less than BootTimeout" "$out" ||
		fail "a PrologEpilogTimeout shorter than a boot not reported"
fi
cp "$cc/slurm.conf.base" "$cc/slurm.conf"
exit 0
