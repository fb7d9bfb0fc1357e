# room: agent_host uses: core channel agent_shared
# The host side, on the node: slurm-vm-relay, as root, one per guest (its
# channel's socket, the guest's PERSONA); slurm-vm-exec, as the job user:
# a task into the guest and, for a --vm-batch script, the host's server of
# the Slurm commands it runs in the guest (hostcmd_host.c, hostcmd_env.c).
pkglibexec_PROGRAMS += agent/slurm-vm-relay agent/slurm-vm-exec
agent_slurm_vm_relay_SOURCES = agent/host/relay.c \
	agent/shared/util.c agent/shared/util.h
agent_slurm_vm_relay_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent_host
agent_slurm_vm_relay_LDADD = common/channel/libslurmvm-channel.la
agent_slurm_vm_exec_SOURCES = agent/host/exec.c $(AGENT_SHARED_SOURCES) \
	agent/host/hostcmd_host.c agent/host/hostcmd_env.c \
	agent/host/hostcmd_env.h
agent_slurm_vm_exec_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent_host
agent_slurm_vm_exec_LDADD = common/channel/libslurmvm-channel.la
