#!/bin/bash
# doc/check-snippets.sh: the configuration snippets of the admin guide are
# the files the test cluster uses.
#
#   doc/check-snippets.sh [--rendered DIR] [--guide FILE] [--repo DIR]
#
# Every fenced code block of the guide carries a marker on the line before
# its opening ```:
#   <!-- snippet: etc/FILE -->        the block is consecutive lines of FILE
#   <!-- snippet: etc/FILE whole -->  the block is all of FILE
#   <!-- example -->                  not a file of the cluster (host
#                                     commands, output): not compared
# A block without a marker is an error, so no configuration can slip in
# unchecked. Checks:
#  - each snippet against etc/FILE as written, @PLACEHOLDERS@ included;
#  - with --rendered DIR (the cluster's configuration directory,
#    $HARNESS_ETC): against the file tests/cluster/harness.sh made from it
#    (etc/X.example -> DIR/X, etc/X -> DIR/X), each @PLACEHOLDER@ standing
#    for whatever the harness put there;
#  - every etc/ file tests/cluster/harness.sh renders or copies is shown in
#    the guide by at least one snippet.
# A mismatch prints a diff against the closest lines of the file. Exit 0:
# all agree; 1: something differs (all of it is reported).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
guide=
rendered=
while [ $# -gt 0 ]; do
	case "$1" in
	--rendered) rendered=$2; shift 2 ;;
	--guide) guide=$2; shift 2 ;;
	--repo) repo=$2; shift 2 ;;
	-h | --help) sed -n '2,22s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "check-snippets: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
guide=${guide:-$repo/doc/admin-guide.md}
[ -r "$guide" ] || { echo "check-snippets: cannot read $guide" >&2; exit 2; }
[ -z "$rendered" ] || [ -d "$rendered" ] ||
	{ echo "check-snippets: --rendered $rendered is not a directory" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
problems=0
problem() {
	echo "check-snippets: $*"
	problems=$((problems + 1))
}

# Split the guide: $work/N.snip (the block), $work/N.meta ("FILE MODE
# LINE"); unmarked blocks and bad markers are reported here.
awk -v dir="$work" -v guide="$guide" '
	function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
	/^[ \t]*```/ {
		if (inblock) { inblock = 0; close(out); next }
		inblock = 1
		if (marker == "") {
			printf "check-snippets: %s:%d: code block without a marker (<!-- snippet: etc/FILE --> or <!-- example -->)\n", guide, NR
			bad++
			out = "/dev/null"
		} else if (marker == "example") {
			out = "/dev/null"
		} else {
			n++
			out = dir "/" n ".snip"
			printf "" > out
			split(marker, w, " ")
			print w[1], (w[2] == "" ? "part" : w[2]), NR + 1 > (dir "/" n ".meta")
			close(dir "/" n ".meta")
		}
		marker = ""
		next
	}
	inblock { print > out; next }
	/^[ \t]*<!--[ \t]*(snippet:|example)/ {
		m = $0
		sub(/^[ \t]*<!--[ \t]*/, "", m)
		sub(/[ \t]*-->[ \t]*$/, "", m)
		if (m ~ /^example/) { marker = "example"; next }
		sub(/^snippet:/, "", m)
		m = trim(m)
		if (m !~ /^etc\/[A-Za-z0-9_.-]+( whole)?$/) {
			printf "check-snippets: %s:%d: bad marker \"%s\"\n", guide, NR, $0
			bad++
			marker = "example"
			next
		}
		marker = m
		next
	}
	/[^ \t]/ { marker = "" }
	END {
		if (inblock) { printf "check-snippets: %s: unterminated code block\n", guide; bad++ }
		exit bad ? 1 : 0
	}' "$guide" || problems=$((problems + 1))

# locate MODE SNIPPET FILE: "ok LINE" when SNIPPET is consecutive lines of
# FILE (MODE whole: all of FILE), else "bad LINE" of the closest window.
# With WILD=1 an @PLACEHOLDER@ of the snippet matches any text.
locate() {
	awk -v mode="$1" -v wild="${WILD:-0}" '
		function same(pat, act,   n, parts, i, pos, p, rest) {
			if (!wild || pat !~ /@[A-Z0-9_]+@/)
				return pat == act
			n = split(pat, parts, /@[A-Z0-9_]+@/)
			if (substr(act, 1, length(parts[1])) != parts[1])
				return 0
			pos = length(parts[1]) + 1
			for (i = 2; i < n; i++) {
				p = index(substr(act, pos), parts[i])
				if (!p)
					return 0
				pos += p - 1 + length(parts[i])
			}
			rest = substr(act, pos)
			return length(rest) >= length(parts[n]) &&
				substr(rest, length(rest) - length(parts[n]) + 1) == parts[n]
		}
		FNR == NR { s[++ns] = $0; next }
		{ f[++nf] = $0 }
		END {
			best = -1; at = 1
			last = mode == "whole" ? 1 : nf - ns + 1
			for (i = 1; i <= last; i++) {
				k = 0
				for (j = 1; j <= ns; j++)
					if (same(s[j], f[i + j - 1]))
						k++
				if (k == ns && (mode != "whole" || nf == ns)) {
					print "ok", i
					exit 0
				}
				if (k > best) { best = k; at = i }
			}
			print "bad", at
			exit 1
		}' "$2" "$3"
}

# compare LABEL SNIPPET FILE MODE GUIDE-LINE
compare() {
	local label=$1 snip=$2 file=$3 mode=$4 line=$5 res at n
	if [ ! -r "$file" ]; then
		problem "$guide:$line: $label: no such file $file"
		return
	fi
	res=$(locate "$mode" "$snip" "$file") && return 0
	at=${res#bad }
	n=$(wc -l <"$snip")
	[ "$mode" = whole ] && n=$(($(wc -l <"$file") > n ? $(wc -l <"$file") : n))
	problem "$guide:$line: the snippet is not $label (closest: lines $at-$((at + n - 1)) of $file):"
	sed -n "${at},$((at + n - 1))p" "$file" |
		diff -u --label "$file" --label "$guide:$line" - "$snip" | sed 's/^/    /' || true
}

shown=" "
nsnip=0
for meta in "$work"/*.meta; do
	[ -e "$meta" ] || break
	snip=${meta%.meta}.snip
	read -r file mode line <"$meta"
	if [ ! -s "$snip" ]; then
		problem "$guide:$line: empty snippet of $file"
		continue
	fi
	shown+="$file "
	nsnip=$((nsnip + 1))
	WILD=0 compare "in $file" "$snip" "$repo/$file" "$mode" "$line"
	if [ -n "$rendered" ]; then
		name=${file#etc/}
		WILD=1 compare "in the cluster's ${name%.example}" "$snip" \
			"$rendered/${name%.example}" "$mode" "$line"
	fi
done

# Every example the harness uses is shown.
used=$(grep -o 'HARNESS_ETC_EXAMPLES/[A-Za-z0-9_.-]\+' "$repo/tests/cluster/harness.sh" |
	sed 's|HARNESS_ETC_EXAMPLES/|etc/|' | sort -u)
[ -n "$used" ] || problem "found no etc/ file in tests/cluster/harness.sh"
for f in $used; do
	case "$shown" in
	*" $f "*) ;;
	*) problem "$f is used by the test cluster but the guide shows no snippet of it (<!-- snippet: $f -->)" ;;
	esac
done

if [ "$problems" = 0 ]; then
	echo "check-snippets: $nsnip snippets agree with etc/${rendered:+ and with $rendered}; every etc/ file of the harness is shown"
	exit 0
fi
echo "check-snippets: $problems problem(s)"
exit 1
