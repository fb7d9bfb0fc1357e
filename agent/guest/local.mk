# room: agent_guest uses: core channel agent_shared
# The guest side: slurm-vm-agent, run in the guest as root (systemd), which
# starts the job user's tasks there; under its host command names, the
# client of the Slurm commands a --vm-batch script runs (hostcmd_guest.c).
#
# The agent is linked statically against the libc-only core and channel
# sources. The
# sanitizer and fuzzer runtimes cannot be linked statically, so the agent
# gets its own plain flags; check builds also make agent/slurm-vm-agent-test,
# the same code linked the normal way (sanitized when configured so), which
# the local channel test runs.
AGENT_SOURCES = agent/guest/agent.c agent/guest/spawn.c \
	agent/guest/spawn.h $(AGENT_SHARED_SOURCES) \
	agent/guest/hostcmd_guest.c agent/guest/workdir.c \
	agent/guest/workdir.h agent/guest/persona.c agent/guest/persona.h
sbin_PROGRAMS += agent/slurm-vm-agent
agent_slurm_vm_agent_SOURCES = $(AGENT_SOURCES) \
	common/core/log.c common/core/strutil.c common/core/fileutil.c \
	common/channel/proto.c common/channel/netenv.c common/channel/pmixenv.c \
	common/channel/persona_format.c
agent_slurm_vm_agent_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent_guest
agent_slurm_vm_agent_CFLAGS = -std=gnu11 $(WARN_CFLAGS) -fstack-protector-strong
agent_slurm_vm_agent_LDFLAGS = -all-static

check_PROGRAMS += agent/slurm-vm-agent-test
agent_slurm_vm_agent_test_SOURCES = $(AGENT_SOURCES)
agent_slurm_vm_agent_test_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent_guest
agent_slurm_vm_agent_test_LDADD = common/channel/libslurmvm-channel.la
