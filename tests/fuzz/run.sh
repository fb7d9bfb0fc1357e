#!/bin/sh
# Runs every proto libFuzzer target for a bounded time on its seed corpus.
#   tests/fuzz/run.sh [SECONDS-PER-TARGET] [BUILD-DIR]
# Builds nothing: configure a build with
#   CC=clang ../configure --enable-fuzzing --enable-sanitizers && make
# first. Exit 0 when no target crashed, 1 when one did (the reproducer is
# kept in tests/fuzz/artifacts/), 77 when the targets are not built.
set -u
secs=${1:-30}
here=$(cd "$(dirname "$0")" && pwd)
build=${2:-${FUZZ_BUILD:-$here/../../build-fuzz}}
fuzzdir=$build/tests/fuzz
artifacts=$here/artifacts
targets="fuzz_proto_frame fuzz_proto_hello fuzz_proto_ready fuzz_proto_exec
	fuzz_proto_data fuzz_proto_eof fuzz_proto_credit fuzz_proto_signal
	fuzz_proto_exit fuzz_proto_error fuzz_proto_ping fuzz_proto_shutdown
	fuzz_proto_winsize fuzz_image_header"

if [ ! -x "$fuzzdir/fuzz_proto_frame" ]; then
	echo "fuzz: no targets in $fuzzdir (configure with --enable-fuzzing, CC=clang)" >&2
	exit 77
fi
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=""
for t in $targets; do
	bin=$fuzzdir/$t
	# Work on a copy: new inputs found now do not pile up in git.
	mkdir -p "$work/$t"
	cp "$here/corpus/$t/"* "$work/$t/" 2>/dev/null
	echo "fuzz: $t for ${secs}s"
	if ! "$bin" -max_total_time="$secs" -max_len=140000 -rss_limit_mb=1024 \
		-timeout=10 -print_final_stats=0 \
		-artifact_prefix="$artifacts/$t-" "$work/$t" \
		>"$work/$t.log" 2>&1; then
		echo "fuzz: $t FAILED" >&2
		tail -n 40 "$work/$t.log" >&2
		failed="$failed $t"
	else
		grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$work/$t.log" | tail -n 1
	fi
done
if [ -n "$failed" ]; then
	echo "fuzz: crashes in:$failed (see $artifacts)" >&2
	exit 1
fi
echo "fuzz: all targets clean"
exit 0
