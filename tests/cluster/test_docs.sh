#!/bin/bash
# cluster-timeout: 120
# The admin guide's configuration snippets are the files this test cluster
# runs on: each snippet matches the configuration harness.sh rendered from
# etc/ (placeholders standing for the cluster's values), and a changed line
# in the cluster's files is caught. No guest.
set -euo pipefail
. "$(dirname "$0")/harness.sh"

check=$HARNESS_REPO/doc/check-snippets.sh
harness_start

rc=0
out=$("$check" --rendered "$HARNESS_ETC" 2>&1) || rc=$?
if [ "$rc" = 0 ]; then
	ok "$out"
else
	fail "the guide's snippets differ from the cluster's configuration:"
	echo "$out"
fi

# The same check on a copy of the cluster's files with one setting changed
# as an admin might: it must fail and show the line.
copy=$HARNESS_DIR/etc-changed
cp -r "$HARNESS_ETC" "$copy"
sed -i 's/^PrologEpilogTimeout=.*/PrologEpilogTimeout=60/' "$copy/slurm.conf"
rc=0
out=$("$check" --rendered "$copy" 2>&1) || rc=$?
if [ "$rc" = 1 ] && grep -q '^    -PrologEpilogTimeout=60$' <<<"$out"; then
	ok "a changed PrologEpilogTimeout in the cluster's slurm.conf is reported with a diff"
else
	fail "a changed slurm.conf was not reported (rc=$rc)"
	echo "$out"
fi

[ "$failures" = 0 ]
