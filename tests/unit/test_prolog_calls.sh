#!/bin/sh
# The files of prolog/ call each other with no circle (doc/design.md, "The
# prolog's files"): scripts/check-prolog-calls passes on the tree, and a
# circle planted in a copy (state.c, the bottom, calling prolog_start of
# start.c, which calls down to it) fails it, named with its arrows.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

if ! command -v python3 >/dev/null; then
	echo "skip: no python3 for scripts/check-prolog-calls"
	exit 77
fi
check "the tree: no circle among the files of prolog/" \
	"'$src/scripts/check-prolog-calls' '$src' >'$t/tree.out'"
cat "$t/tree.out"

mkdir "$t/copy"
(cd "$src" && tar cf - scripts/check-prolog-calls prolog/*.[ch]) |
	tar xf - -C "$t/copy"
printf '%s\n' '' 'void state_planted(struct prolog *p)' '{' \
	'	prolog_start(p);' '}' >>"$t/copy/prolog/state.c"
rc=0
"$t/copy/scripts/check-prolog-calls" "$t/copy" >"$t/plant.out" || rc=$?
cat "$t/plant.out"
check "a planted circle fails the check" "[ $rc = 1 ]"
check "... named: state.c -> start.c -> state.c, each arrow by a name" \
	"grep -qxF 'circle: prolog/state.c (prolog_start) -> prolog/start.c (state_record_reason) -> prolog/state.c' '$t/plant.out'"
# A name in a comment or a string is no call.
sed -i '/state_planted/,$d' "$t/copy/prolog/state.c"
echo '/* prolog_start() is above */ static const char *s = "prolog_start";' \
	>>"$t/copy/prolog/state.c"
check "... a name in a comment or string is no arrow" \
	"'$t/copy/scripts/check-prolog-calls' '$t/copy' >/dev/null"
[ $fails = 0 ]
