# room: agent_shared uses: core
# What both sides of the guest channel compile in: the guest's
# slurm-vm-agent (agent/guest/) and the host's slurm-vm-relay and
# slurm-vm-exec (agent/host/). libc only: the agent is linked statically.
# Nothing here may assume which side, or which user, it runs as.
AGENT_SHARED_SOURCES = agent/shared/util.c agent/shared/util.h \
	agent/shared/hostcmd.c agent/shared/hostcmd.h
