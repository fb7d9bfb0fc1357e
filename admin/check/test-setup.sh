# Sourced by the planted-fault tests of `slurm-vm check-config` (one
# admin/check/test-AREA.sh beside each area's source, admin/check/AREA.c;
# admin/test-check-config.sh for the command's own), in `make check`, from
# the build directory (automake sets $srcdir). A node laid out as Debian
# ships Slurm: plugstack.conf only includes plugstack.conf.d/*.conf, and
# spank_vm.so is in PluginDir; vm.conf empty. Each planted fault is
# reported, and its fix, run as printed, makes the next check-config pass
# that check. $release: the Slurm release check-config applies (e.g. 2411).
set -euo pipefail

svm=${SLURM_VM:-./admin/slurm-vm}
svm=$(cd "$(dirname "$svm")" && pwd)/$(basename "$svm")
cc=$(mktemp -d)
trap 'rm -rf "$cc"' EXIT
cc=$(cd "$cc" && pwd -P)
out=$cc/out

fail() {
	echo "FAIL: $*" >&2
	[ -f "$out" ] && sed 's/^/    /' "$out" >&2
	exit 1
}

check() { # runs check-config on $cc's slurm.conf as node n1, output in $out
	"$svm" check-config --slurm-conf "$cc/slurm.conf" --node n1 >"$out" 2>&1 || true
}

fix_for() { # PATTERN: the fix printed under the problem matching PATTERN
	awk -v pat="$1" 'found && /^         fix: / { sub(/^         fix: /, ""); print; exit }
		/^problem: / { found = index($0, pat) > 0 }' "$out"
}

run_fix() { # PATTERN: runs that problem's fix as the admin would paste it
	local fix
	fix=$(fix_for "$1")
	[ -n "$fix" ] || fail "no fix for: $1"
	(cd / && sh -c "$fix") || fail "the fix does not run: $fix"
}

mkdir -p "$cc/plugins" "$cc/plugstack.conf.d"
: >"$cc/plugins/spank_vm.so"
cat >"$cc/slurm.conf" <<EOF
ClusterName=x
SlurmctldHost=h
PluginDir=$cc/plugins
SlurmdUser=$(id -un)
SlurmdSpoolDir=$cc/spool/%n
PlugStackConfig=$cc/plugstack.conf
EOF
: >"$cc/vm.conf"
echo "include $cc/plugstack.conf.d/*.conf" >"$cc/plugstack.conf"
cp "$cc/plugstack.conf" "$cc/plugstack.conf.shipped"
cp "$cc/slurm.conf" "$cc/slurm.conf.base"
check
release=$(sed -n 's/^ok: .* read as Slurm \([0-9]*\)\.\([0-9]*\) does .*/\1\2/p' "$out")
[ -n "$release" ] || fail "check-config does not say which Slurm release's rules it applies"
