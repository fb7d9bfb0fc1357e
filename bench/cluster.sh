# shellcheck shell=bash
# The test cluster of a bench that boots guests on one node. Source after
# tests/cluster/harness.sh and guest.sh:
#
#   bench_cluster_start BOOT-TIMEOUT [Key=Value...]
#       guest_cluster_start with these vm.conf settings; or, under
#       `bench/run.sh --short` ($SVM_BENCH_CLUSTER: the harness state of the
#       one cluster run.sh started for all these benches), that cluster,
#       joined with the settings given: started and stopped once, not per
#       bench. run.sh cancels what a bench leaves running there.
#
# bench/run.sh --short: bench_shared_cluster_start writes that state.

bench_cluster_start() {
	local kv
	if [ -z "${SVM_BENCH_CLUSTER:-}" ]; then
		guest_cluster_start "$@"
		return
	fi
	# shellcheck source=/dev/null
	. "$SVM_BENCH_CLUSTER" || harness_die "cannot read $SVM_BENCH_CLUSTER"
	harness_vmconf_set BootTimeout "$1"
	shift
	for kv in "$@"; do
		harness_vmconf_set "${kv%%=*}" "${kv#*=}"
	done
	# Not ours to stop; what the bench made beside it is.
	trap 'declare -F harness_exit_hook >/dev/null && harness_exit_hook' EXIT
}

# bench_shared_cluster_start STATE-FILE: the cluster with libvirtd and the
# test guest, stopped when the calling shell exits; its harness state in
# STATE-FILE for bench_cluster_start.
bench_shared_cluster_start() {
	guest_cluster_start 300
	# HARNESS_STARTED=1: a joining bench never starts another.
	# Globals (-g) where bench_cluster_start reads them, exported as here.
	# shellcheck disable=SC2046 # the names are words
	declare -p $(compgen -v HARNESS_ | grep -vx HARNESS_TRAP_SET) \
		SLURM_CONF BUILD_DIR | sed 's/^declare /declare -g /' >"$1"
}
