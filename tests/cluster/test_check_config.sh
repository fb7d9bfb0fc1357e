#!/bin/bash
# slurm-vm check-config: the test cluster's configuration (made from etc/)
# passes; a copy with each rule broken reports every problem with its fix,
# among them every catalog file an ordinary user (qemu runs as the job's
# user) cannot open.
set -euo pipefail
. "$(dirname "$0")/harness.sh"

. "$(dirname "$0")/guest.sh"

tool=$BUILD_DIR/admin/slurm-vm
harness_add_catalog_image plain
# The test guest's entry as every guest test has it: check-config below
# opens each of its files as nobody, and none may be in the checkout, which
# may be in a directory job users cannot enter (/root/slurm-vm).
if [ -s "$(guest_cache)/vmlinux" ]; then
	guest_catalog_entry testguest
	if grep -H "=$HARNESS_REPO/" "$HARNESS_CATALOG/testguest.image"; then
		fail "the test guest's catalog entry points into the checkout $HARNESS_REPO"
	else
		ok "the test guest's catalog entry needs nothing of the checkout"
	fi
fi
harness_start

rc=0
out=$("$tool" check-config --node "${HARNESS_NODES[0]}" 2>&1) || rc=$?
if [ "$rc" = 0 ] && grep -q '^no problems' <<<"$out"; then
	ok "the test cluster's configuration passes ($(grep -c '^ok:' <<<"$out") checks)"
else
	fail "check-config on the test cluster: rc=$rc"
	echo "$out"
fi

bad=$HARNESS_DIR/badconf
mkdir -p "$bad"
cp "$HARNESS_ETC"/*.conf "$bad/"
sed -i -e 's/^PrologFlags=.*/PrologFlags=Serial/' \
	-e 's/^PrologEpilogTimeout=.*/PrologEpilogTimeout=100/' \
	-e 's/^SelectTypeParameters=.*/SelectTypeParameters=CR_CPU_Memory/' \
	-e 's/^GresTypes=.*/GresTypes=gpu/' \
	-e '/^CliFilterPlugins=/d' \
	-e "s|^PlugStackConfig=.*|PlugStackConfig=$bad/plugstack.conf|" "$bad/slurm.conf"
echo "# nothing" >"$bad/plugstack.conf"
# Slurm's mpi/pmix without libpmix-dev's libpmix.so beside it.
mkdir -p "$bad/lib/slurm-wlm"
: >"$bad/lib/slurm-wlm/mpi_pmix_v4.so"
sed -i '/^PluginDir=/d' "$bad/slurm.conf"
echo "PluginDir=$bad/lib/slurm-wlm" >>"$bad/slurm.conf"
echo "BootTimout=300" >>"$bad/vm.conf"
# (the first node's first File=: check-config reads only its node's lines)
awk '!done && /^NodeName.*File=/ { sub(/File=[^ ]*/, "File=/nonexistent/vfio/7"); done = 1 } 1' \
	"$HARNESS_ETC/gres.conf" >"$bad/gres.conf"
rc=0
out=$("$tool" check-config --slurm-conf "$bad/slurm.conf" \
	--node "${HARNESS_NODES[0]}" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "check-config on a broken configuration exited $rc"
for want in "lacks Alloc" "is less than BootTimeout" "needs whole cores" \
	"lacks gpu or ibvf" "no cli_filter/lua" "does not load spank_vm.so" \
	"did you mean 'BootTimeout'" "vm.conf does not parse" \
	"File=/nonexistent/vfio/7 is not a character device" \
	"opens $bad/lib/pmix2/lib/libpmix.so, which is missing"; do
	if grep -qF -- "$want" <<<"$out"; then
		ok "reported: $want"
	else
		fail "not reported: $want"
	fi
done
grep -q '^         fix: ' <<<"$out" && ok "each problem comes with a fix" || fail "no fixes printed"
grep -q '^[0-9]* problems to fix' <<<"$out" || fail "no problem count"
echo "$out" | sed 's/^/    /'

# The image catalog: a descriptor with a typo, a UEFI image without OVMF,
# one whose kernel OVMF cannot start
cat=$HARNESS_DIR/badcatalog
bad2=$HARNESS_DIR/badconf2
mkdir -p "$cat" "$bad2"
cp "$HARNESS_ETC"/* "$bad2/"
cp "$HARNESS_CATALOG"/*.image "$cat/"
sed -i "s|^PlugStackConfig=.*|PlugStackConfig=$bad2/plugstack.conf|" "$bad2/slurm.conf"
sed -i "s|$HARNESS_ETC/|$bad2/|g" "$bad2/plugstack.conf"
sed -i '/^ImageCatalog=/d;/^UefiVars=/d' "$bad2/vm.conf"
{
	echo "ImageCatalog=$cat"
	echo "UefiVars=/nonexistent/OVMF_VARS.fd"
} >>"$bad2/vm.conf"
src=$cat/plain.image
sed 's/^Format=/Fromat=/' "$src" >"$cat/typo.image"
{ cat "$src"; echo "Firmware=uefi"; } >"$cat/efi.image"
{ cat "$src"; echo "Firmware=uefi"; echo "Kernel=/bin/true"; echo "Initrd=/bin/true"; } >"$cat/efielf.image"
# ... and one whose files only root can open: qemu runs as the job's user.
priv=$HARNESS_DIR/private
mkdir -m 0700 "$priv"
cp /bin/true "$priv/vmlinuz"
install -m 0600 /bin/true "$HARNESS_DIR/initrd-0600"
install -m 0600 "$HARNESS_IMAGES/plain.raw" "$HARNESS_IMAGES/unread.raw"
{
	echo "Path=$HARNESS_IMAGES/unread.raw"
	echo "Format=raw"
	echo "Kernel=$priv/vmlinuz"
	echo "Initrd=$HARNESS_DIR/initrd-0600"
} >"$cat/unread.image"
rc=0
out=$("$tool" check-config --slurm-conf "$bad2/slurm.conf" \
	--node "${HARNESS_NODES[0]}" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "check-config with a broken catalog exited $rc"
for want in "catalog image typo cannot be used" "Fromat" \
	"image efi boots UEFI but UefiVars=/nonexistent/OVMF_VARS.fd is not a file" \
	"catalog image efielf: OVMF cannot start its kernel" \
	"catalog image unread: Path=$HARNESS_IMAGES/unread.raw cannot be opened by an ordinary user" \
	"chmod o+r $HARNESS_IMAGES/unread.raw" \
	"catalog image unread: Kernel=$priv/vmlinuz cannot be opened by an ordinary user" \
	"other users cannot enter $priv" \
	"catalog image unread: Initrd=$HARNESS_DIR/initrd-0600 cannot be opened by an ordinary user" \
	"chmod o+r $HARNESS_DIR/initrd-0600"; do
	if grep -qF -- "$want" <<<"$out"; then
		ok "reported: $want"
	else
		fail "not reported: $want"
	fi
done
grep -q '^6 problems to fix' <<<"$out" ||
	fail "not exactly the catalog's 6 problems: $(grep 'problem' <<<"$out")"
echo "$out" | sed 's/^/    /'

# IbPartitions=yes: ConnectX-3 VFs cannot take job GUIDs; the records'
# directory must be root's alone. Then a DGX-like node's ConnectX-6 VFs,
# with a private directory: no problem.
bad3=$HARNESS_DIR/badconf3
mkdir -p "$bad3" "$HARNESS_DIR/ibrec-open" "$HARNESS_DIR/ibrec"
chmod 0777 "$HARNESS_DIR/ibrec-open"
chmod 0755 "$HARNESS_DIR/ibrec"
cp "$HARNESS_ETC"/* "$bad3/"
sed -i "s|^PlugStackConfig=.*|PlugStackConfig=$bad3/plugstack.conf|" "$bad3/slurm.conf"
sed -i "s|$HARNESS_ETC/|$bad3/|g" "$bad3/plugstack.conf"
sed -i '/^SysfsRoot=/d' "$bad3/vm.conf"
printf 'IbPartitions=yes\nSysfsRoot=%s\nIbPartitionDir=%s\n' \
	"$HARNESS_REPO/tests/fixtures/sysfs/k40-cx3" "$HARNESS_DIR/ibrec-open" >>"$bad3/vm.conf"
rc=0
out=$("$tool" check-config --slurm-conf "$bad3/slurm.conf" \
	--node "${HARNESS_NODES[0]}" 2>&1) || rc=$?
if [ "$rc" = 1 ] && [ "$(grep -c '^problem: VF 0000:83:00.[12]: .*IbPartitions=yes needs ConnectX-4 or later' <<<"$out")" = 2 ] &&
	grep -q "^problem: IbPartitionDir=$HARNESS_DIR/ibrec-open: writable by others than root" <<<"$out" &&
	grep -q '^3 problems to fix' <<<"$out"; then
	ok "IbPartitions=yes: both ConnectX-3 VFs and a world-writable IbPartitionDir reported"
else
	fail "IbPartitions=yes on ConnectX-3: rc=$rc: $(grep -E '^problem|problems' <<<"$out")"
fi
sed -i '/^SysfsRoot=/d;/^IbPartitionDir=/d' "$bad3/vm.conf"
printf 'SysfsRoot=%s\nIbPartitionDir=%s\n' \
	"$HARNESS_REPO/tests/fixtures/sysfs/dgx" "$HARNESS_DIR/ibrec" >>"$bad3/vm.conf"
rc=0
out=$("$tool" check-config --slurm-conf "$bad3/slurm.conf" \
	--node "${HARNESS_NODES[0]}" 2>&1) || rc=$?
grep -q '^ok: *IbPartitions=yes: all 8 InfiniBand VFs take job GUIDs' <<<"$out" && [ "$rc" = 0 ] &&
	ok "IbPartitions=yes on ConnectX-6 VFs with a private IbPartitionDir: no problem" ||
	fail "IbPartitions=yes on ConnectX-6: rc=$rc: $(grep -E '^problem|IbPart' <<<"$out")"

[ "$failures" = 0 ]
