#!/bin/bash
# check-config's image catalog (images.c): ImageCatalog and ImageDirs
# missing, the catalog empty; (as root) a warm image's files not root's
# alone.
. "$(dirname "$0")/test-setup.sh"

cp "$cc/vm.conf" "$cc/vm.conf.base"

# Item 8: the image catalog and image directory missing, then empty.
printf 'ImageCatalog=%s\nImageDirs=%s\n' "$cc/catalog" "$cc/images" >"$cc/vm.conf"
check
grep -qF "problem: ImageCatalog=$cc/catalog is not a directory" "$out" ||
	fail "a missing ImageCatalog not reported"
run_fix "ImageCatalog=$cc/catalog is not a directory"
check
grep -qF "problem: ImageDirs=$cc/images is not a directory" "$out" ||
	fail "a missing ImageDirs directory not reported"
run_fix "ImageDirs=$cc/images is not a directory"
check
grep -q "^problem: Image" "$out" && fail "after their fixes, the image directories are still reported"
grep -qF "warning: ImageCatalog=$cc/catalog is empty" "$out" ||
	fail "an empty catalog not reported"

# BootMode=warm runs the catalog image's files in root's qemu (the
# template): a layer, kernel or initrd another user owns, or below a
# directory group or others may write, is reported (as root: the tree is
# under /run, root's, since $cc is below /tmp, which anyone may write).
if [ "$(id -u)" = 0 ] && [ "$(stat -c '%u %a' /run)" = "0 755" ]; then
	wt=$(mktemp -d /run/svm-cc-warm-XXXXXX)
	trap 'rm -rf "$cc" "$wt"' EXIT
	chmod 755 "$wt"
	mkdir -m 755 "$wt/catalog" "$wt/images"
	qemu-img create -q -f qcow2 "$wt/images/deb.qcow2" 1M
	: >"$wt/images/vmlinuz"
	: >"$wt/images/initrd.img"
	chmod 644 "$wt/images/deb.qcow2" "$wt/images/vmlinuz" "$wt/images/initrd.img"
	printf 'Path=%s\nFormat=qcow2\nKernel=%s\nInitrd=%s\nBootMode=warm\n' \
		"$wt/images/deb.qcow2" "$wt/images/vmlinuz" "$wt/images/initrd.img" \
		>"$wt/catalog/deb.image"
	{ cat "$cc/vm.conf.base"; printf 'ImageCatalog=%s\nImageDirs=%s\n' \
		"$wt/catalog" "$wt/images"; } >"$cc/vm.conf"
	check
	grep -qF "ok:      $wt/catalog: all 1 images resolve" "$out" ||
		fail "a warm image of root's files not taken"
	chown nobody "$wt/images/vmlinuz"
	check
	grep -qF "problem: catalog image deb boots warm, but $wt/images/vmlinuz is not root's alone" "$out" ||
		fail "a warm image's kernel another user owns not reported"
	chown root "$wt/images/vmlinuz"
	chmod 775 "$wt/images"
	check
	grep -qF "problem: catalog image deb boots warm, but $wt/images is not root's alone" "$out" ||
		fail "a warm image in a group-writable directory not reported"
	run_fix "catalog image deb boots warm"
	check
	grep -qF "ok:      $wt/catalog: all 1 images resolve" "$out" ||
		fail "after its fix, the warm image is still reported"
	# Cold: root's qemu never runs them, nothing to say.
	chmod 775 "$wt/images"
	sed -i 's/^BootMode=warm$/BootMode=cold/' "$wt/catalog/deb.image"
	check
	grep -qF "boots warm" "$out" && fail "a cold image's files reported"
	rm -rf "$wt"
fi
exit 0
