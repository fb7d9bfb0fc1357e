/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-adopt --hold PID: on 22.05 and 24.11 the extern step's one task
 * is Slurm's `sleep`; when it dies the step ends and SIGKILLs everything
 * it holds, the adopted guest with it. Slurm sends it what it sends every
 * step: a job-wide signal (scancel --signal without --batch), and at the
 * job's end SIGCONT and SIGTERM, KillWait before SIGKILL. A bare job's
 * batch script has those KillWait seconds for its trap; a guest's script
 * would have none.
 *
 * A holder process traces the sleep (PTRACE_SEIZE, root) and keeps every
 * signal from it but SIGKILL, which no tracer can stop. Once a SIGTERM
 * came, it lets one through as soon as no other step of the job runs on
 * the node and slurmctld says the job ends (holdgate.h: a user's
 * `scancel -s TERM` is no end): the extern step then ends at once, as a
 * plain job's does, rather than at KillWait's SIGKILL. The holder is adopted
 * into the extern step too, so Slurm kills it with the rest; it ignores the
 * signals a user can send a job.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/run.h"
#include "hold.h"
#include "holdgate.h"
#include "slurm/jobfate.h"
#include "slurm/stepd.h"
#include "vm/pidfile.h"

#define HOLD_POLL_US (100 * 1000)

/* Only the sleep of the slurmstepd that runs us. */
static int hold_check(pid_t pid)
{
	char comm[16];
	pid_t parent = 0;

	if (pid <= 1 ||
	    proc_stat(pid, comm, sizeof(comm), NULL, &parent, NULL) < 0 ||
	    parent != getppid() || strcmp(comm, "sleep") != 0)
		return -EPERM;
	return 0;
}

static void hold_ignore_signals(void)
{
	signals_ignore_job_wide();
	signal(SIGTERM, SIG_IGN);
}

/*
 * Does job @job still run another step here? Counted are slurmstepd
 * processes executing @exes[0], the extern step's own slurmstepd (that
 * runs us: whatever `slurmd -d` says), or the configured SLURMSTEPD_PATH
 * as it is now (a step started after an upgrade of Slurm).
 */
static bool hold_steps_running(const char *node, unsigned job,
			       struct stepd_exe exes[2])
{
	size_t n = 1;

	if (stepd_exe_of_path(SLURMSTEPD_PATH, &exes[1]) == 0)
		n = 2;
	return stepd_job_steps_running(node, job, exes, n);
}

/* slurmctld, asked by the gate: says what it answered when that
 * changes. */
static int hold_ask_ctld(void *arg)
{
	static int said = 2; /* no answer yet */
	unsigned job = *(unsigned *)arg;
	char why[128];
	int r = job_ending(job, why, sizeof(why));

	if (r != said && r == 0)
		log_info("job %u: SIGTERM to the extern step, but the job "
			 "runs (%s): a signal, not its end; its guest stays",
			 job, why);
	else if (r != said && r < 0)
		log_warn("job %u: SIGTERM to the extern step, and slurmctld "
			 "cannot say whether the job ends (%s): its guest "
			 "stays until it can, or Slurm's SIGKILL",
			 job, why);
	said = r;
	return r;
}

/* Traces @pid until it ends; see the top of the file. */
static void hold_loop(const char *node, unsigned job, pid_t pid,
		      struct stepd_exe exes[2])
{
	struct hold_gate gate = { 0 };
	bool ending = false, released = false;
	int status;

	for (;;) {
		pid_t w =
			waitpid(pid, &status, __WALL | (ending ? WNOHANG : 0));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || (w > 0 && !WIFSTOPPED(status)))
			return; /* it ended: SIGKILL, or released */
		if (w == 0) {
			if (!released &&
			    hold_gate_release(
				    &gate, clock_now_s(),
				    hold_steps_running(node, job, exes),
				    hold_ask_ctld, &job)) {
				released = true;
				kill(pid, SIGTERM);
			}
			usleep(HOLD_POLL_US);
			continue;
		}
		if ((unsigned)status >> 16 == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_LISTEN, pid, NULL, NULL);
			continue;
		}
		if (released && WSTOPSIG(status) == SIGTERM) {
			ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)SIGTERM);
			return;
		}
		if (!ending && WSTOPSIG(status) == SIGTERM) {
			ending = true;
			log_info(
				"job %u: SIGTERM to the extern step: its guest "
				"stays until the job ends and its other steps "
				"here end",
				job);
		}
		ptrace(PTRACE_CONT, pid, NULL, NULL);
	}
}

/* The holder: traces @pid, says so on @ready (0 or an errno), then holds
 * it with stdin, stdout and stderr on /dev/null (the caller's output pipe
 * closes). */
_Noreturn static void hold_child(const char *node, unsigned job, pid_t pid,
				 struct stepd_exe exes[2], int ready)
{
	int err = 0, null_fd;

	setsid();
	hold_ignore_signals();
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0)
		err = errno;
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; null_fd >= 0 && fd <= 2; fd++)
		dup2(null_fd, fd);
	if (write(ready, &err, sizeof(err)) != (ssize_t)sizeof(err))
		err = EIO;
	close(ready);
	if (err == 0)
		hold_loop(node, job, pid, exes);
	_exit(err == 0 ? EXIT_SUCCESS : EXIT_FAILURE);
}

int hold_extern_sleep(const struct adopt_target *t, pid_t pid)
{
	const char *node = t->node;
	unsigned job = t->job_id;
	struct stepd_exe exes[2];
	int ready[2], err = EIO, r;
	pid_t child;

	r = hold_check(pid);
	if (r < 0)
		return log_errno(r,
				 "job %u: pid %ld is not the sleep of the "
				 "extern step that runs slurm-vm-adopt",
				 job, (long)pid);
	/* Our parent is the extern step's slurmstepd (hold_check()). */
	r = stepd_exe_of_pid(getppid(), &exes[0]);
	if (r < 0)
		return log_errno(r,
				 "job %u: cannot stat the executable of "
				 "the extern step's slurmstepd",
				 job);
	if (pipe2(ready, O_CLOEXEC) < 0)
		return log_errno(-errno, "job %u: pipe", job);
	child = fork();
	if (child < 0) {
		r = -errno;
		close(ready[0]);
		close(ready[1]);
		return log_errno(r, "job %u: fork", job);
	}
	if (child == 0) {
		close(ready[0]);
		hold_child(node, job, pid, exes, ready[1]);
	}
	close(ready[1]);
	if (read(ready[0], &err, sizeof(err)) != (ssize_t)sizeof(err))
		err = EIO;
	close(ready[0]);
	if (err != 0) {
		waitpid(child, NULL, 0);
		return log_errno(-err,
				 "job %u: cannot trace the extern step's "
				 "sleep (pid %ld)",
				 job, (long)pid);
	}
	if (adopt_target_join(t, child) < 0)
		log_warn("job %u: the extern step did not adopt the holder "
			 "of its sleep (pid %ld): it ends with the sleep",
			 job, (long)child);
	log_info("job %u: the extern step's sleep (pid %ld) is held by pid "
		 "%ld: the guest outlives the job's signals until the job "
		 "ends (as slurmctld says) and its steps here, or Slurm's "
		 "SIGKILL",
		 job, (long)pid, (long)child);
	return 0;
}
