# room: agent uses: core channel
# The guest channel: slurm-vm-agent (guest, static), slurm-vm-relay (host,
# one per guest, root) and slurm-vm-exec (host, the job user's task).
#
# The agent is linked statically against the libc-only core and channel
# sources. The
# sanitizer and fuzzer runtimes cannot be linked statically, so the agent
# gets its own plain flags; check builds also make agent/slurm-vm-agent-test,
# the same code linked the normal way (sanitized when configured so), which
# the local channel test runs.
AGENT_SOURCES = agent/agent.c agent/spawn.c agent/spawn.h \
	agent/util.c agent/util.h agent/hostcmd.c agent/hostcmd.h \
	agent/hostcmd_guest.c agent/workdir.c agent/workdir.h \
	agent/persona.c agent/persona.h
sbin_PROGRAMS += agent/slurm-vm-agent
agent_slurm_vm_agent_SOURCES = $(AGENT_SOURCES) \
	common/core/log.c common/core/strutil.c common/core/fileutil.c \
	common/channel/proto.c common/channel/netenv.c common/channel/pmixenv.c \
	common/channel/persona_format.c
agent_slurm_vm_agent_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent
agent_slurm_vm_agent_CFLAGS = -std=gnu11 $(WARN_CFLAGS) -fstack-protector-strong
agent_slurm_vm_agent_LDFLAGS = -all-static

check_PROGRAMS += agent/slurm-vm-agent-test
agent_slurm_vm_agent_test_SOURCES = $(AGENT_SOURCES)
agent_slurm_vm_agent_test_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent
agent_slurm_vm_agent_test_LDADD = common/channel/libslurmvm-channel.la

pkglibexec_PROGRAMS += agent/slurm-vm-relay agent/slurm-vm-exec
agent_slurm_vm_relay_SOURCES = agent/relay.c agent/util.c agent/util.h
agent_slurm_vm_relay_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent
agent_slurm_vm_relay_LDADD = common/channel/libslurmvm-channel.la
agent_slurm_vm_exec_SOURCES = agent/exec.c agent/util.c agent/util.h \
	agent/hostcmd.c agent/hostcmd.h agent/hostcmd_host.c \
	agent/hostcmd_env.c agent/hostcmd_env.h
agent_slurm_vm_exec_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/agent
agent_slurm_vm_exec_LDADD = common/channel/libslurmvm-channel.la

dist_noinst_SCRIPTS += tests/unit/test_channel_local.sh
# Runs in `make check` (skips with 77 unless root).
TESTS += tests/unit/test_channel_local.sh
EXTRA_DIST += doc/protocol.md
