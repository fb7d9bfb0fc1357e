#!/bin/sh
# The journal's verbs are defined once (journal_verbs[], job/journal.h):
# scripts/check-journal-verbs passes on the tree and names, with its line,
# a verb by its quoted name planted in a copy (a writer in prolog/ and a
# classifier in common/vm/), which fails it.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

check "the tree: each verb named in journal_verbs[] alone" \
	"'$src/scripts/check-journal-verbs' '$src' >'$t/tree.out'"
cat "$t/tree.out"

mkdir "$t/copy"
(cd "$src" && tar cf - scripts/check-journal-verbs common/*/*.[ch] \
	prolog/*.[ch]) | tar xf - -C "$t/copy"
echo 'static const char *planted = "RELAY";' >>"$t/copy/prolog/net.c"
n=$(wc -l <"$t/copy/prolog/net.c")
echo 'static int planted_nft(const char *v) { return v[0] == *"NFT"; }' \
	>>"$t/copy/common/vm/teardown.c"
m=$(wc -l <"$t/copy/common/vm/teardown.c")
rc=0
"$t/copy/scripts/check-journal-verbs" "$t/copy" >"$t/plant.out" || rc=$?
cat "$t/plant.out"
check "a planted verb name fails the check" "[ $rc = 1 ]"
check "... prolog/net.c:$n named" "grep -q '^prolog/net.c:$n:' '$t/plant.out'"
check "... common/vm/teardown.c:$m named" \
	"grep -q '^common/vm/teardown.c:$m:' '$t/plant.out'"
check "... two of them" \
	"grep -q '^check-journal-verbs: 2 verb name' '$t/plant.out'"
[ $fails = 0 ]
