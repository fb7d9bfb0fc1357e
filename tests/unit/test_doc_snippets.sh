#!/bin/bash
# `make check`: the admin guide's configuration snippets are the etc/ files
# the test cluster is built from (doc/check-snippets.sh), and the check
# catches a changed line, an unmarked code block and an etc/ file the guide
# does not show. Run from the build directory (automake sets $srcdir).
set -euo pipefail

src=$(cd "${srcdir:-.}" && pwd)
check=$src/doc/check-snippets.sh
guide=$src/doc/admin-guide.md
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect STATUS WANT-IN-OUTPUT GUIDE: the checker on GUIDE
expect() {
	local want=$1 text=$2 g=$3 got=0
	"$check" --repo "$src" --guide "$g" >"$out/o" 2>&1 || got=$?
	[ "$got" = "$want" ] || { cat "$out/o" >&2; fail "check-snippets on $g exited $got, not $want"; }
	grep -qF -- "$text" "$out/o" || { cat "$out/o" >&2; fail "no '$text' in the output"; }
}

expect 0 "every etc/ file of the harness is shown" "$guide"
cat "$out/o"

# One character of a slurm.conf snippet changed: a diff names the line.
sed 's/^PrologFlags=@PROLOG_FLAGS@$/PrologFlags=Alloc/' "$guide" >"$out/changed.md"
cmp -s "$guide" "$out/changed.md" && fail "the guide has no PrologFlags snippet to change"
expect 1 "+PrologFlags=Alloc" "$out/changed.md"
grep -qF -- "-PrologFlags=@PROLOG_FLAGS@" "$out/o" || fail "the diff lacks the file's line"

# A code block without a marker.
{ cat "$guide"; printf '\n```\nPrologEpilogTimeout=5\n```\n'; } >"$out/unmarked.md"
expect 1 "code block without a marker" "$out/unmarked.md"

# An etc/ file of the harness that the guide no longer shows.
sed 's|<!-- snippet: etc/plugstack.conf.example whole -->|<!-- example -->|' \
	"$guide" >"$out/uncovered.md"
cmp -s "$guide" "$out/uncovered.md" && fail "the guide has no plugstack.conf snippet"
expect 1 "etc/plugstack.conf.example is used by the test cluster but the guide shows no snippet" \
	"$out/uncovered.md"
echo "ok: changed, unmarked and missing snippets are caught"
