#!/bin/bash
# The virtual cluster's test bed: two nodes of their own (harness_start 2),
# each a real `slurmd -N nI` in its own network namespace (veth to the
# underlay bridge, its own 10.213.X address) and mount namespace with its
# own libvirtd. srun -N2 reaches both; one `sbatch -N2 --vm-image=testguest`
# job boots one guest per node, each by that node's own libvirtd, and its
# two tasks run inside the two guests; afterwards nothing of the job is left
# on either node. With JobNetwork=vxlan the guests meet on the job's private
# network: each node has the job's bridge, VXLAN and tap, the guest on n1
# reaches the guest on n2 by its node name, every task's environment names
# the job interface for MPI (a value the user set wins), MPICH runs an
# allreduce and a point-to-point ring across the guests with no network
# settings, and afterwards neither node
# keeps a link or nftables table of the job. With slurmdbd and MariaDB on
# the machine the cluster runs as a centre's (HARNESS_ACCOUNTING), and each
# node's guest is its job's, in that node's own cgroup tree. (The harness's teardown of namespaces, links, mounts and
# daemons is checked by hand, see the harness's header.)
# cluster-timeout: 420
set -uo pipefail

. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

failures=0
ns_of() { readlink "/proc/$1/ns/$2" 2>/dev/null; }

guest_centre_config
# TCG: two guests boot at once on this machine's two cores.
HARNESS_NODE_COUNT=2 guest_cluster_start 180 JobNetwork=vxlan JobNetworkUnderlay=eth0

# 1. Both nodes answer srun, each with its own hostname.
out=$(timeout 60 srun -N2 hostname 2>&1 | sort | tr '\n' ' ')
[ "$out" = "n1 n2 " ] && ok "srun -N2 hostname: $out" || fail "srun -N2 hostname printed '$out'"

# 2. Each slurmd in its own network and mount namespace, with its address.
for node in n1 n2; do
	pid=${HARNESS_NODE_PID[$node]}
	addr=${HARNESS_NODE_ADDR[$node]}
	if [ "$(ns_of "$pid" net)" != "$(ns_of $$ net)" ] &&
		[ "$(ns_of "$pid" mnt)" != "$(ns_of $$ mnt)" ] &&
		harness_node_exec "$node" ip -4 -o addr show dev eth0 | grep -q " $addr/" &&
		harness_node_exec "$node" ip -o link show dev eth0 | grep -q ' mtu 9000 '; then
		ok "$node: slurmd in its own netns and mount namespace, eth0 $addr (MTU 9000)"
	else
		fail "$node: slurmd pid $pid net $(ns_of "$pid" net) mnt $(ns_of "$pid" mnt) (ours $(ns_of $$ net) $(ns_of $$ mnt)); eth0: $(harness_node_exec "$node" ip -4 -o addr 2>&1)"
	fi
done
[ "$(ns_of "${HARNESS_NODE_PID[n1]}" net)" != "$(ns_of "${HARNESS_NODE_PID[n2]}" net)" ] &&
	ok "n1 and n2 are in different network namespaces" ||
	fail "n1 and n2 share a network namespace"

# 3. One job, one guest per node, its tasks inside the guests.
guest_cmdline=$(cat "$(guest_cache)/cmdline")
cat >"$HARNESS_WORK/svmtest/job.sh" <<'EOS'
#!/bin/bash
netvars='^(UCX_NET_DEVICES|NCCL_IB_HCA|OMPI_MCA_btl_tcp_if_include|OMPI_MCA_oob_tcp_if_include|FI_TCP_IFACE|NCCL_SOCKET_IFNAME)='
export netvars
srun -N2 -n2 --ntasks-per-node=1 sh -c 'echo "task $SLURM_PROCID on $SLURMD_NODENAME: kernel $(uname -r) cmdline $(cat /proc/cmdline)"; echo "env on $SLURMD_NODENAME: $(env | grep -E "$netvars" | sort | tr "\n" " ")"'
# The job network: n2's guest listens, n1's guest sends to it by name (a
# variable the user set is theirs: it stays).
srun -N1 -n1 -w n2 sh -c 'echo "net: n2 is $(hostname -i)"; timeout 90 nc -l -p 7777 | sed "s/^/net: n2 got /"' &
NCCL_SOCKET_IFNAME=mine srun -N1 -n1 -w n1 sh -c 'echo "net: n1 is $(hostname -i)"; echo "user env on n1: $(env | grep -E "$netvars" | sort | tr "\n" " ")"; for i in 1 2 3 4 5 6 7 8 9 10; do echo "hello from n1" | nc -w 5 n2 7777 && exit 0; sleep 2; done; echo "net: n1 cannot reach n2"'
wait
# MPICH ch4:ucx across the two guests over the job network, with nothing
# set: the tasks' defaults name the job interface.
timeout 120 srun --mpi=pmi2 -N2 -n2 --ntasks-per-node=1 svm-mpi-allreduce 2>&1 | sed 's/^/mpi-out: /'
# Open MPI over PMIx across the guests: each node's slurmstepd serves its
# guest's rank; the ranks meet over the job network (btl tcp on job0).
timeout 120 srun --mpi=pmix -N2 -n2 --ntasks-per-node=1 svm-ompi-allreduce 2>&1 | sed 's/^/ompi-out: /'
sleep 30
EOS
chmod 0755 "$HARNESS_WORK/svmtest/job.sh"
job=$(harness_as_user svmtest timeout 30 sbatch --parsable -N2 -c1 --vm-cpus=1 \
	--vm-image=testguest -o job.out job.sh 2>&1)
[[ "$job" =~ ^[0-9]+$ ]] || { fail "sbatch: $job"; exit 1; }
# Both guests of the job have one domain name, each on its own libvirtd.
dom=slurmvm-job-$job.0
job_ended() { [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; }
harness_wait 300 "the tasks of job $job" sh -c "[ \"\$(grep -c '^task ' '$HARNESS_WORK/svmtest/job.out' 2>/dev/null)\" = 2 ] || [ -z \"\$(squeue -h -j $job)\" ]"
cat "$HARNESS_WORK/svmtest/job.out" 2>/dev/null | sed 's/^/    job: /'

# While the job sleeps: each node's own libvirtd runs its own guest.
qemu_pids=()
for node in n1 n2; do
	if harness_node_exec "$node" virsh -q -c qemu:///system list --name 2>/dev/null | grep -qx "$dom"; then
		ok "$node: its own libvirtd runs $dom"
	else
		fail "$node: virsh list shows no $dom: $(harness_node_exec "$node" virsh -q list --all 2>&1 | tr '\n' ' ')"
	fi
	qpid=$(tr -dc 0-9 <"$HARNESS_DIR/nodes/$node/libvirt/run/qemu/$dom.pid" 2>/dev/null)
	if [ -n "$qpid" ] && [ "$(ns_of "$qpid" net)" = "$(ns_of "${HARNESS_NODE_PID[$node]}" net)" ]; then
		ok "$node: the guest's qemu (pid $qpid) runs in $node's network namespace"
		qemu_pids+=("$qpid")
	else
		fail "$node: no qemu of $dom in $node's namespace (pid '$qpid')"
	fi
done
# The nodes share this machine's cgroup v1 tree, and both libvirtds name
# the guest's cgroup machine/qemu-1-<domain>.libvirt-qemu (same first
# domain id, same domain name): until the extern step adopts them, both
# qemu are in one. Adopted, each is in its own node's job cgroup.
if [ "${HARNESS_ACCOUNTING:-0}" = 1 ] && [ "${#qemu_pids[@]}" = 2 ]; then
	for i in 0 1; do
		node=n$((i + 1))
		cg=$(awk -F: '$2 == "memory" { print $3 }' "/proc/${qemu_pids[$i]}/cgroup" 2>/dev/null)
		case "$cg" in
		/slurm_"$node"/uid_*/job_"$job"/step_extern*)
			ok "$node: its guest's qemu is the job's, in $node's memory cgroup $cg" ;;
		*) fail "$node: qemu ${qemu_pids[$i]} in memory cgroup '$cg', not $node's job $job" ;;
		esac
	done
fi

# The job network on each node: its bridge, VXLAN, the guest's tap on the
# bridge, and the job's nftables tables naming that tap.
hex=$(printf %08x "$job")
for node in n1 n2; do
	# Captured first: grep -q stops reading early, and with pipefail the
	# writer's SIGPIPE would fail the check.
	links=$(harness_node_exec "$node" ip -d -o link 2>&1)
	ports=$(harness_node_exec "$node" ip -o link show master "svmb$hex" 2>&1)
	table=$(harness_node_exec "$node" nft list table bridge "svm_job_$job" 2>&1)
	if grep -q "^[0-9]*: svmb$hex: .* bridge " <<<"$links" &&
		grep -q "^[0-9]*: svmx$hex: .* vxlan id " <<<"$links" &&
		grep -q ": svmt$hex[:@]" <<<"$ports" &&
		grep -q "svmt$hex" <<<"$table"; then
		ok "$node: job network up: bridge svmb$hex, vxlan svmx$hex, tap svmt$hex on the bridge, nft table svm_job_$job naming it"
	else
		fail "$node: job network incomplete: $(grep svm <<<"$links" | cut -c1-160 | tr '\n' ' '); table: $(head -c 300 <<<"$table")"
	fi
done

guest_kernel=$(guest_kernel_version)
for node in n1 n2; do
	l=$(grep "^task [01] on $node: " "$HARNESS_WORK/svmtest/job.out" 2>/dev/null)
	if [ -n "$l" ] && [[ "$l" == *"kernel $guest_kernel cmdline $guest_cmdline" ]]; then
		ok "a task ran inside $node's guest: $l"
	else
		fail "no task inside $node's guest (line '$l'; the guest's kernel $guest_kernel, cmdline '$guest_cmdline')"
	fi
done

# 4. The job ends; nothing of it is left on either node.
harness_wait 120 "job $job to end" job_ended || fail "job $job did not end"
harness_wait 60 "the epilogs" sh -c '[ -z "$(sinfo -h -N -t completing -o %N)" ]'
state=$(sacct -n -X -j "$job" -o State 2>/dev/null | tr -d ' ')
[ -z "$state" ] && state=$(scontrol -o show job "$job" | grep -o 'JobState=[A-Z]*')
[ "$state" = COMPLETED ] || [ "$state" = JobState=COMPLETED ] &&
	ok "job $job COMPLETED" || fail "job $job: $state"
grep -q "^net: n2 got hello from n1$" "$HARNESS_WORK/svmtest/job.out" 2>/dev/null &&
	ok "n1's guest reached n2's guest by its node name over the job network" ||
	fail "no TCP exchange between the guests: $(grep '^net:' "$HARNESS_WORK/svmtest/job.out" 2>/dev/null | tr '\n' ' ')"
mpi=$(sed -n 's/^mpi-out: //p' "$HARNESS_WORK/svmtest/job.out" 2>/dev/null | guest_mpi_ranks_ok)
[ "$mpi" = "0@n1 1@n2 " ] &&
	ok "srun --mpi=pmi2 -N2 -n2 with no network settings: MPI_Allreduce and a 256 KiB MPI_Sendrecv ring right on both guests ($mpi)" ||
	fail "MPI across the guests: $(grep '^mpi-out:' "$HARNESS_WORK/svmtest/job.out" 2>/dev/null | head -5 | tr '\n' ' ')"
ompi=$(sed -n 's/^ompi-out: //p' "$HARNESS_WORK/svmtest/job.out" 2>/dev/null | guest_mpi_ranks_ok)
[ "$ompi" = "0@n1 1@n2 " ] &&
	ok "srun --mpi=pmix -N2 -n2: Open MPI's MPI_Allreduce and 256 KiB MPI_Sendrecv ring right on both guests ($ompi)" ||
	fail "Open MPI over PMIx across the guests: $(grep '^ompi-out:' "$HARNESS_WORK/svmtest/job.out" 2>/dev/null | head -8 | tr '\n' ' ')"
for node in n1 n2; do
	guest_nothing_left "$job" "$node"
	guest_jobnet_nothing_left "$node"
done
# The job network as the tasks' default for MPI (netenv.h), and the user's
# own value winning over it.
defaults="FI_TCP_IFACE=job0 NCCL_SOCKET_IFNAME=job0 OMPI_MCA_btl_tcp_if_include=job0 OMPI_MCA_oob_tcp_if_include=job0 UCX_NET_DEVICES=job0 "
for node in n1 n2; do
	grep -qxF "env on $node: $defaults" "$HARNESS_WORK/svmtest/job.out" 2>/dev/null &&
		ok "$node: a task's environment names the job network: $defaults" ||
		fail "$node: task environment: $(grep "^env on $node:" "$HARNESS_WORK/svmtest/job.out" 2>/dev/null)"
done
grep -qxF "user env on n1: ${defaults/NCCL_SOCKET_IFNAME=job0/NCCL_SOCKET_IFNAME=mine}" "$HARNESS_WORK/svmtest/job.out" 2>/dev/null &&
	ok "NCCL_SOCKET_IFNAME=mine srun: the user's value reaches the task, the other defaults stay" ||
	fail "the user's NCCL_SOCKET_IFNAME: $(grep '^user env' "$HARNESS_WORK/svmtest/job.out" 2>/dev/null)"
for qpid in "${qemu_pids[@]}"; do
	[ ! -d "/proc/$qpid" ] || fail "qemu pid $qpid still runs"
done
s=$(sinfo -h -N -o '%N %t' | sort | tr '\n' ' ')
[ "$s" = "n1 idle n2 idle " ] && ok "both nodes idle: $s" || { fail "nodes: $s"; sinfo -R; }

[ "$failures" = 0 ]
