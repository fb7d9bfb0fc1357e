#!/bin/bash
# spank_vm at submit time, on the real test cluster: every bad request is
# refused by sbatch and by srun with a message that says what to do, and no
# job is created; a good request reaches the prolog resolved; plain jobs run.
set -euo pipefail
. "$(dirname "$0")/harness.sh"

harness_ensure_test_users
harness_start
harness_vmconf_set AllowUserImages yes
harness_add_catalog_image testimg "" raw
harness_add_catalog_image testqcow "" qcow2

img=$HARNESS_IMAGES
user=svmtest
work=$HARNESS_WORK/$user

jobs_count() { squeue -h -t all -o %i | wc -l; }

# refused WHAT EXPECTED-MESSAGE OPTIONS...: sbatch and srun both refuse.
refused() {
	local what=$1 msg=$2 before out rc cmd
	shift 2
	for cmd in sbatch srun; do
		before=$(jobs_count)
		rc=0
		if [ "$cmd" = sbatch ]; then
			out=$(harness_as_user "$user" sbatch "$@" --wrap true 2>&1) || rc=$?
		else
			out=$(harness_as_user "$user" timeout 60 srun "$@" true 2>&1) || rc=$?
		fi
		if [ "$rc" = 0 ]; then
			fail "$cmd $what: accepted ($out)"
		elif ! grep -qF -- "$msg" <<<"$out"; then
			fail "$cmd $what: message lacks '$msg': $out"
		elif [ "$(jobs_count)" != "$before" ]; then
			fail "$cmd $what: a job was created"
		else
			echo "ok: $cmd refuses $what: $(grep -F -- "$msg" <<<"$out" | head -1)"
		fi
	done
}

# Hostile and broken images, all inside the allowed directory.
printf 'not a disk\n' >"$img/notes.txt"
truncate -s 1M "$img/empty.raw"
qemu-img create -q -f qcow2 "$img/private.qcow2" 64M
chmod 600 "$img/private.qcow2"
qemu-img create -q -f qcow2 -u -b /etc/shadow -F raw "$img/steal.qcow2" 64M
qemu-img create -q -f qcow2 -u -F raw \
	-b 'json:{"driver":"file","filename":"/etc/shadow"}' "$img/json.qcow2" 64M
qemu-img create -q -f qcow2 -o data_file="$img/data.raw" "$img/datafile.qcow2" 64M
ln -sf /etc/shadow "$img/link.raw"
qemu-img create -q -f qcow2 -u -b link.raw -F raw "$img/viasymlink.qcow2" 64M
mkdir -p "$img/adir"
qemu-img create -q -f qcow2 -u -b adir -F raw "$img/dirbacking.qcow2" 64M
chmod 644 "$img"/*.qcow2 "$img"/*.txt "$img"/*.raw 2>/dev/null || true
chmod 600 "$img/private.qcow2"
outside=$HARNESS_DIR/outside
mkdir -p "$outside" && chmod 755 "$outside"
qemu-img create -q -f qcow2 "$outside/x.qcow2" 64M
chmod 644 "$outside/x.qcow2"

refused "a missing image" "does not exist" --vm-image="$img/nope.qcow2"
refused "an unreadable image" "is not readable by you" --vm-image="$img/private.qcow2"
refused "a text file" "neither qcow2 nor a raw disk" --vm-image="$img/notes.txt"
refused "an empty raw file" "no partition table or filesystem" --vm-image="$img/empty.raw"
refused "a backing file outside ImageDirs" "lies outside the allowed image directories" --vm-image="$img/steal.qcow2"
refused "a backing symlink to a host file" "lies outside the allowed image directories" --vm-image="$img/viasymlink.qcow2"
refused "a directory as backing file" "is not a regular file" --vm-image="$img/dirbacking.qcow2"
refused "a json: backing file" "a protocol or json: name" --vm-image="$img/json.qcow2"
refused "an external data file" "external data file (data-file)" --vm-image="$img/datafile.qcow2"
refused "an image outside ImageDirs" "lies outside the allowed image directories" --vm-image="$outside/x.qcow2"
refused "an unknown catalog name" "available images: testimg, testqcow" --vm-image=centos7
refused "a bad image name" "not a valid image name" --vm-image=..
refused "a relative path to nothing" "$work/images/x.qcow2 does not exist" --vm-image=images/x.qcow2
refused "a catalog image's file name" "the catalog image 'testimg' is that file: use --vm-image=testimg" --vm-image=testimg.raw
refused "a malformed --vm-cpus" "expected a number of vCPUs" --vm-image=testimg --vm-cpus=many
refused "a malformed --vm-mem" "expected a size of at least 64M" --vm-image=testimg --vm-mem=5X
refused "a malformed --vm-hugepages" "expected none, 2M or 1G" --vm-image=testimg --vm-hugepages=4M
refused "--vm-cpus without --vm-image" "need --vm-image" --vm-cpus=1
if grep -q '^CliFilterPlugins=cli_filter/lua' "$HARNESS_ETC/slurm.conf"; then
	refused "--vm-cpus above the request" "more than the 1 CPUs per node" --vm-image=testimg -c1 --vm-cpus=2
	refused "--vm-mem above the request" "more than the 200M per node" --vm-image=testimg --mem=200M --vm-mem=300M
	before=$(jobs_count)
	rc=0
	out=$(harness_as_user "$user" sbatch --vm-image=testimg -n1 : -n1 --wrap true 2>&1) || rc=$?
	if [ "$rc" != 0 ] && grep -q "heterogeneous" <<<"$out" && [ "$(jobs_count)" = "$before" ]; then
		echo "ok: sbatch refuses a heterogeneous VM job"
	else
		fail "heterogeneous VM job: rc=$rc $out"
	fi
else
	fail "the test cluster does not load etc/cli_filter.lua (CliFilterPlugins)"
fi

# The environment defaults are checked like the options.
for cmd in "sbatch --wrap true" "srun true"; do
	rc=0
	out=$(harness_as_user "$user" env SLURM_VM_IMAGE=centos7 timeout 60 $cmd 2>&1) || rc=$?
	if [ "$rc" != 0 ] && grep -q "unknown image 'centos7'" <<<"$out"; then
		echo "ok: ${cmd%% *} refuses SLURM_VM_IMAGE=centos7"
	else
		fail "SLURM_VM_IMAGE=centos7 $cmd: rc=$rc $out"
	fi
done

# A good request: the prolog sees it resolved, checked as the job user.
jobid=$(harness_as_user "$user" sbatch --parsable --vm-image=testimg -c1 \
	--mem=512M --vm-cpus=1 --vm-mem=256M --vm-hugepages=2M --vm-keep \
	--wrap true)
harness_wait 60 "job $jobid to end" \
	bash -c "squeue -h -j $jobid -t all -o %T | grep -qx COMPLETED"
line=$(grep "job $jobid: user $user image testimg -> $img/testimg.raw (raw, 1 layer" "$HARNESS_VM_LOG" || true)
if [ -z "$line" ]; then
	fail "prolog did not log the resolved image for job $jobid:"
	cat "$HARNESS_VM_LOG"
elif ! grep -q "vcpus=1 mem=256M hugepages=2M keep=yes" <<<"$line"; then
	fail "prolog saw other options: $line"
else
	echo "ok: the prolog resolved it: ${line#*slurm-vm-prolog}"
fi
if scontrol show job "$jobid" | grep -q "GresEnforceBind=Yes"; then
	echo "ok: the cli_filter set --gres-flags=enforce-binding"
else
	fail "job $jobid has no GresEnforceBind=Yes"
fi

# The mission's own command: an image in the directory the user submits
# from, by its file name or a relative path. spank_vm makes it absolute;
# the prolog checks that path. The job's srun, after the script went
# elsewhere, is a step of that job: it must not resolve the (inherited,
# relative) image again and refuse.
qemu-img create -q -f qcow2 "$img/mine.qcow2" 64M
chmod 644 "$img/mine.qcow2"
for rel in mine.qcow2 ./mine.qcow2 ../images/mine.qcow2; do
	rc=0
	jobid=$(harness_as_user "$user" sh -c 'cd "$1" && shift && exec "$@"' \
		sh "$img" sbatch --parsable -o "$work/rel.%j.out" --vm-image="$rel" \
		--wrap 'cd / && srun -n1 true; true' 2>&1) || rc=$?
	if [ "$rc" != 0 ]; then
		fail "sbatch --vm-image=$rel in $img: refused: $jobid"
		continue
	fi
	harness_wait 60 "job $jobid to end" \
		bash -c "squeue -h -j $jobid -t all -o %T | grep -qx COMPLETED"
	if grep -q "job $jobid: user $user image $img/.*mine.qcow2 -> $img/mine.qcow2 (qcow2" "$HARNESS_VM_LOG"; then
		ok "sbatch --vm-image=$rel from the image's directory reaches the prolog as an absolute path"
	else
		fail "job $jobid (--vm-image=$rel): the prolog did not resolve it: $(grep "job $jobid:" "$HARNESS_VM_LOG" | tail -3)"
	fi
	if grep -q "no job was submitted\|unknown image\|does not exist" "$work/rel.$jobid.out"; then
		fail "job $jobid (--vm-image=$rel): its srun after 'cd /' re-resolved the image: $(cat "$work/rel.$jobid.out")"
	else
		ok "job $jobid (--vm-image=$rel): its srun after 'cd /' is a step of the job"
	fi
done

# plugstack.conf arguments are strict: a typo is reported to the user (and
# slurmd's log), and "required" stops the job instead of ignoring it.
cp "$HARNESS_ETC/plugstack.conf" "$HARNESS_DIR/plugstack.conf.good"
sed -i 's|config=|confg=/x config=|' "$HARNESS_ETC/plugstack.conf"
rc=0
out=$(harness_as_user "$user" sbatch --vm-image=testimg --wrap true 2>&1) || rc=$?
if [ "$rc" != 0 ] && grep -q "unknown argument 'confg=/x'" <<<"$out"; then
	ok "a plugstack.conf typo is refused: $(grep -o "spank_vm: plugstack.conf.*" <<<"$out" | head -1)"
else
	fail "plugstack.conf typo: rc=$rc $out"
fi
cp "$HARNESS_DIR/plugstack.conf.good" "$HARNESS_ETC/plugstack.conf"

# A plain job with the plugin loaded: runs, and the prolog does not speak.
jobid=$(harness_as_user "$user" sbatch --parsable --wrap 'echo plain')
harness_wait 60 "job $jobid to end" \
	bash -c "squeue -h -j $jobid -t all -o %T | grep -qx COMPLETED"
if grep -q "job $jobid:" "$HARNESS_VM_LOG"; then
	fail "the prolog logged something for plain job $jobid"
else
	echo "ok: plain job $jobid ran without the suite noticing"
fi

[ "$failures" = 0 ]
