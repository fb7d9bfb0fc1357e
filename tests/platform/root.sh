#!/bin/bash
# Debian roots of a platform (a Debian suite and the Slurm it carries): a
# directory tree made by mmdebstrap from the apt mirror, entered with a
# private mount namespace and pivot_root. Everything of a platform (its Slurm,
# libvirtd, qemu, the build) runs inside its root, with its own glibc.
#
#   tests/platform/root.sh build SUITE [PACKAGE...]
#       builds, or finds up to date, the root of SUITE (bookworm, trixie,
#       forky) with PACKAGEs installed (mmdebstrap --variant=apt), and
#       prints its directory. Cached by content: the suite, the package
#       list, this script and mmdebstrap's version name the directory
#       (tests/platform/cache/SUITE-HASH, gitignored; SVM_ROOT_CACHE=DIR
#       elsewhere), so a change of any rebuilds and an unchanged root is
#       reused across runs. Other roots of SUITE are removed.
#
#   tests/platform/root.sh enter [--scratch DIR] [--bind SRC:DST]... ROOT
#                          [--] COMMAND [ARG...]
#       runs COMMAND in ROOT: a private mount namespace (unshare -m
#       --propagation private), /proc, /sys (with the host's cgroup v1
#       mounts) and /dev bound recursively, a private tmpfs on /run and
#       /tmp, the host's /etc/hosts and /etc/resolv.conf (same network),
#       each --bind SRC bound at DST inside (DST made if need be),
#       then pivot_root. With --scratch, ROOT stays as built: COMMAND sees an
#       overlay of it whose writes go to DIR/upper (kept for inspection,
#       DIR made if need be), so each run starts from the same clean root.
#       The mounts go with the namespace when COMMAND's last process ends.
#       One PID namespace: what COMMAND starts is visible on the host;
#       COMMAND stops its daemons itself, by their pid files.
#
# Needs root, mmdebstrap and apt access to the mirror of
# /etc/apt/sources.list* (SVM_DEBIAN_MIRROR overrides it, as for
# tests/guest/build-cloud.sh). forky's Release file is past its
# Valid-Until date: that suite is fetched with Check-Valid-Until off.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${SVM_ROOT_CACHE:-$here/cache}
mirror=${SVM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${SVM_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}

die() {
	echo "platform/root.sh: $*" >&2
	exit 1
}

usage() {
	sed -n '2,31s/^# \{0,1\}//p' "$0"
	exit "${1:-0}"
}

# The apt sources of SUITE, one per argument, as mmdebstrap takes them.
suite_sources() {
	case "$1" in
	bookworm | trixie)
		echo "deb $mirror $1 main"
		echo "deb $mirror $1-updates main"
		echo "deb $security $1-security main"
		;;
	forky) echo "deb [check-valid-until=no] $mirror $1 main" ;;
	*) die "unknown suite '$1' (bookworm, trixie, forky)" ;;
	esac
}

build() {
	local suite=$1 sum dir tmp start
	shift
	command -v mmdebstrap >/dev/null || die "mmdebstrap not found: apt-get install mmdebstrap"
	[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap --mode=root)"
	local -a sources pkgs
	mapfile -t sources < <(suite_sources "$suite")
	# mount: enter's umount after pivot_root runs the root's own (not
	# essential since trixie: without it enter fails, "umount: command
	# not found").
	mapfile -t pkgs < <(printf '%s\n' mount "$@" | sort -u | sed '/^$/d')
	sum=$(
		{
			echo "$suite"
			printf '%s\n' "${pkgs[@]+"${pkgs[@]}"}"
			# What makes the root, not how it is entered.
			declare -f build suite_sources | sha256sum
			dpkg-query -W -f='${Version}\n' mmdebstrap
		} | sha256sum | cut -c1-16
	)
	dir=$cache/$suite-$sum
	if [ -f "$dir/.svm-root-complete" ]; then
		echo "platform/root.sh: $suite root up to date" >&2
		echo "$dir"
		return 0
	fi
	mkdir -p "$cache"
	# Older roots of this suite: a changed input replaced them.
	for old in "$cache/$suite"-*; do
		[ -d "$old" ] && [ "$old" != "$dir" ] && rm -rf --one-file-system "$old"
	done
	rm -rf --one-file-system "$dir"
	tmp=$dir.tmp
	rm -rf --one-file-system "$tmp"
	start=$(date +%s)
	local include
	include=$(
		IFS=,
		echo "${pkgs[*]+"${pkgs[*]}"}"
	)
	echo "platform/root.sh: building the $suite root ($((${#pkgs[@]})) packages)" >&2
	# Kept: apt's lists (a test installs its own .debs with their
	# dependencies); dropped: the downloaded packages.
	# shellcheck disable=SC2016 # the hook's $1 is mmdebstrap's
	mmdebstrap --mode=root --variant=apt --format=directory \
		--aptopt='Acquire::Retries "3"' --skip=cleanup/apt/lists \
		${include:+--include="$include"} \
		--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
		--customize-hook='cp /etc/resolv.conf "$1/etc/resolv.conf"' \
		"$suite" "$tmp" "${sources[@]}" >&2 ||
		die "mmdebstrap failed (mirror reachable? see above)"
	touch "$tmp/.svm-root-complete"
	mv "$tmp" "$dir"
	echo "platform/root.sh: built in $(($(date +%s) - start)) s: $dir" >&2
	echo "$dir"
}

# The script run by unshare in the new mount namespace: $1 root, $2
# scratch ("" for none), $3 the --bind list (SRC:DST per line), then the
# command.
# shellcheck disable=SC2016 # expanded in the namespace
enter_ns_script='
set -eu
root=$1 scratch=$2 binds=$3
shift 3
if [ -n "$scratch" ]; then
	mkdir -p "$scratch/upper" "$scratch/work" "$scratch/merged"
	mount -t overlay svm-root \
		-o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" \
		"$scratch/merged"
	root=$scratch/merged
else
	# pivot_root needs the new root to be a mount.
	mount --bind "$root" "$root"
fi
for d in proc sys dev; do
	mount --rbind "/$d" "$root/$d"
done
mount -t tmpfs -o mode=0755 svm-run "$root/run"
mount -t tmpfs -o mode=1777 svm-tmp "$root/tmp"
mkdir -p "$root/run/lock"
# The host'"'"'s network, so the host'"'"'s names: a node resolves its own.
for f in /etc/hosts /etc/resolv.conf; do
	[ -e "$root$f" ] || : >"$root$f"
	mount --bind "$f" "$root$f"
done
printf "%s\n" "$binds" | while IFS= read -r b; do
	[ -n "$b" ] || continue
	src=${b%%:*} dst=${b#*:}
	if [ -d "$src" ]; then mkdir -p "$root$dst"; else mkdir -p "$root${dst%/*}"; : >>"$root$dst"; fi
	mount --bind "$src" "$root$dst"
done
# pivot_root, not chroot: the namespace'"'"'s mount table then reads as the
# root'"'"'s own (/dev/pts at /dev/pts), as libvirt'"'"'s per-domain /dev for
# qemu needs when it moves the submounts of /dev.
cd "$root"
pivot_root . .
umount -l .
exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 "$@"
'

enter() {
	local scratch="" binds="" root
	while [ $# -gt 0 ]; do
		case "$1" in
		--scratch)
			[ $# -ge 2 ] || die "--scratch needs a directory"
			scratch=$(realpath -m "$2")
			shift 2
			;;
		--bind)
			[ $# -ge 2 ] && [[ $2 == /*:/* ]] || die "--bind needs SRC:DST (absolute paths)"
			binds+="$2"$'\n'
			shift 2
			;;
		-*) die "enter: unknown option '$1'" ;;
		*) break ;;
		esac
	done
	[ $# -ge 2 ] || die "enter needs ROOT and a COMMAND"
	root=$(realpath "$1")
	shift
	[ "${1:-}" != -- ] || shift
	[ -f "$root/.svm-root-complete" ] || die "$root is not a root built by root.sh build"
	[ "$(id -u)" = 0 ] || die "run as root (mount namespaces, pivot_root)"
	exec unshare -m --propagation private -- \
		bash -c "$enter_ns_script" svm-root-ns "$root" "$scratch" "$binds" "$@"
}

[ $# -ge 1 ] || usage 2 >&2
cmd=$1
shift
case "$cmd" in
build)
	[ $# -ge 1 ] || die "build needs a SUITE"
	build "$@"
	;;
enter) enter "$@" ;;
-h | --help) usage 0 ;;
*) echo "platform/root.sh: unknown command '$cmd'" >&2; usage 2 >&2 ;;
esac
