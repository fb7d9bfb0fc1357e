# Items 2, 3 and 9 of "Fix what has landed": images. A user's image that
# qemu-img cannot put an overlay on drained the node (a base path over 1023
# bytes, a virtual size beyond 2 PiB); a path that is not UTF-8 made qemu
# open a file that was never checked. Each is submitted through libslurm
# (no spank_vm check) and must fail the job with the reason, leaving no
# overlay. Then a three-file image boots and its guest reads a file that
# only the bottom file holds (the domain XML named the top file only, and
# qemu read the deeper ones as zeros).
# shellcheck shell=bash

images_script=$'#!/bin/sh\nsrun true\necho "step exit $?"\n'

# images_refused WHAT EXPECTED VM_IMAGE: a job of the test user on that
# image ends, its step fails saying EXPECTED, and nothing of it is left.
images_refused() {
	local what=$1 msg=$2 job out left
	job=$(drain_submit_raw "$images_script" "VM_IMAGE=$3")
	drain_wait_end "$job" || {
		fail "$what: job $job did not end"
		return 0
	}
	out=$(cat "$work/raw-$job.out" 2>/dev/null || true)
	left=$(guest_leftovers "$job")
	if ! grep -q "step exit [1-9]" <<<"$out"; then
		fail "$what: the step ran: $out"
	elif ! grep -qF -- "$msg" <<<"$out"; then
		fail "$what: the step's message does not say '$msg': $out"
	elif [ -n "$left" ]; then
		fail "$what: job $job left: $left"
	else
		ok "$what: refused ($msg), nothing left"
	fi
}

# images_qcow2 PATH SIZE [OPTION...]: a readable qcow2 image, made by root.
images_qcow2() {
	qemu-img create -q -f qcow2 "${@:3}" "$1" "$2"
	chmod 0644 "$1"
}

# Item 3: qemu-img could not record a backing name this long ("Could not
# assign backing file") and the prolog drained the node.
drain_image_long_path() {
	local d
	d=$img/long$(printf '/%0100d' 1 2 3 4 5 6 7 8 9 10)
	mkdir -p "$d"
	chmod -R a+rx "$img/long"
	images_qcow2 "$d/disk.qcow2" 16M
	images_refused "an image path of ${#d} bytes" \
		"a qcow2 overlay can name at most 1023" "$d/disk.qcow2"
}
DRAIN_CASES+=(image_long_path)

# Item 3: 4 PiB with 2 MiB clusters is a valid image, but the job's 64 KiB
# overlay cannot be that large ("image size is too large").
drain_image_huge_virtual_size() {
	images_qcow2 "$img/huge.qcow2" 4P -o cluster_size=2M
	images_refused "a 4 PiB image" "larger than a job's overlay can hold" \
		"$img/huge.qcow2"
}
DRAIN_CASES+=(image_huge_virtual_size)

# Item 9: a Latin-1 name. libxml2 rewrote the byte in the domain XML.
drain_image_not_utf8() {
	images_qcow2 "$img/caf"$'\xe9'".qcow2" 16M
	images_refused "an image path that is not UTF-8" \
		"is not valid UTF-8 text" "$img/caf"$'\xe9'".qcow2"
}
DRAIN_CASES+=(image_not_utf8)

# Item 2: raw bottom (the test guest's root filesystem with a marker file
# written by debugfs), qcow2 middle, qcow2 top; the catalog boots the top.
drain_image_three_layers() {
	local cache marker job out
	cache=$(guest_cache)
	command -v debugfs >/dev/null ||
		{ fail "three layers: debugfs (e2fsprogs) is not installed"; return 0; }
	marker="bottom-layer-$RANDOM$RANDOM"
	qemu-img convert -O raw "$cache/rootfs.qcow2" "$img/chain-bottom.raw"
	echo "$marker" >"$HARNESS_DIR/chain-marker"
	chmod 0644 "$HARNESS_DIR/chain-marker"
	debugfs -w -R "write $HARNESS_DIR/chain-marker /chain-marker" \
		"$img/chain-bottom.raw" >/dev/null 2>&1
	(cd "$img" &&
		qemu-img create -q -f qcow2 -F raw -b chain-bottom.raw chain-mid.qcow2 &&
		qemu-img create -q -f qcow2 -F qcow2 -b chain-mid.qcow2 chain-top.qcow2)
	chmod 0644 "$img"/chain-*
	# qemu opens kernel and initrd as the job user: not from the checkout.
	harness_add_catalog_image chain3 "$img/chain-top.qcow2" qcow2 \
		"Kernel=$(harness_world_copy "$cache/vmlinux")" \
		"Initrd=$(harness_world_copy "$cache/initrd.img")" \
		"Cmdline=$(cat "$cache/cmdline")"
	job=$(drain_submit_raw \
		$'#!/bin/sh\nsrun cat /chain-marker\necho "step exit $?"\n' \
		VM_IMAGE=chain3)
	drain_wait_end "$job" 300 || fail "three layers: job $job did not end"
	out=$(cat "$work/raw-$job.out" 2>/dev/null || true)
	if grep -qx "$marker" <<<"$out" && grep -q "step exit 0" <<<"$out"; then
		ok "a three-file image boots and its guest reads the bottom file's data"
	else
		fail "three layers: the guest did not read the bottom file: $out"
	fi
	rm -f "$img"/chain-*
}
DRAIN_CASES+=(image_three_layers)
