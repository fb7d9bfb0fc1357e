#!/bin/sh
# Installs every build and test dependency of slurm-vm on Debian 12.
# Idempotent: packages already present are left alone, no service is started.
set -eu

BUILD="build-essential autoconf automake libtool pkg-config clang-14
	libclang-rt-14-dev clang-format llvm-14
	libslurm-dev libvirt-dev libhwloc-dev libpci-dev libxml2-dev
	libibverbs-dev libcmocka-dev"
TEST="slurmd slurmctld slurm-client libvirt-daemon libvirt-daemon-driver-qemu
	libvirt-clients qemu-system-x86 qemu-utils hwloc libxml2-utils
	e2fsprogs cpio xz-utils zstd kmod iproute2 tmux procps psmisc
	util-linux python3 shellcheck"

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi

missing=""
for p in $BUILD $TEST; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# Packages must not start daemons on the build host: the test harness starts
# its own slurmctld/slurmd/libvirtd with private configuration.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=1
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
[ "$own_policy" = 1 ] && rm -f "$policy"
exit 0
