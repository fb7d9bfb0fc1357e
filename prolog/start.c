/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The guest's start: BootTimeout's deadline and its watchdog over the
 * devices, then a warm start (warm.c) or a cold boot (boot.c), the cold
 * one after a warm start that cannot be; a failed start undone. Above
 * both ways of booting (doc/design.md, "The prolog's files"). */
#include "config.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "prolog.h"
#include "vm/hypervisor.h"
#include "vm/teardown.h"

/* A failed boot leaves nothing running: the journal is replayed now (the
 * epilog replays it again, harmlessly); the reason stays for the steps. */
static void start_undo(struct prolog *p)
{
	struct teardown_result res;

	teardown_replay(&p->conf, p->state_fd, false, &res);
	if (res.failed)
		log_error("job %u: %u of %u cleanup steps failed",
			  p->req.job_id, res.failed, res.steps);
}

/* The image's BootMode= wins over vm.conf's. */
static bool start_is_warm(const struct prolog *p)
{
	if (p->spec.boot_mode)
		return strcmp(p->spec.boot_mode, "warm") == 0;
	return p->conf.boot_mode == BOOT_MODE_WARM;
}

static enum prolog_result start_run(struct prolog *p)
{
	enum prolog_result res;
	double t;

	/* Devices first: a warm start hot-plugs them as they are bound. */
	t = clock_now_s();
	res = prolog_bind_devices(p);
	log_info("job %u: phase devices %.3fs", p->req.job_id,
		 clock_now_s() - t);
	if (res == PROLOG_OK && start_is_warm(p)) {
		res = prolog_warm(p);
		if (res != WARM_COLD) {
			if (res != PROLOG_OK)
				start_undo(p);
			return res;
		}
		res = PROLOG_OK;
		if (boot_time_left(p) == 0) {
			state_record_reason(
				p,
				"the guest of job %u did not become ready within BootTimeout=%us (image %s): its warm start failed, no time was left to boot it cold",
				p->req.job_id, p->conf.boot_timeout,
				p->req.image);
			start_undo(p);
			return PROLOG_JOB_FAULT;
		}
	}
	if (res == PROLOG_OK)
		res = boot_cold(p);
	if (res != PROLOG_OK)
		start_undo(p);
	return res;
}

/* libvirt waits for qemu's monitor without a bound: a qemu its user stopped
 * (SIGSTOP, as any process of theirs may be) in a restore, a hot-plug, a
 * start or a shutdown would hold the prolog until slurmd killed it and
 * drained the node. Past the boot's deadline, and the waits' own slack, a
 * watchdog kills the job's qemu each second until the boot is over, and
 * libvirt's call fails: a job fault. */
#define START_WATCHDOG_SLACK_S 15

static pid_t start_watchdog_begin(const struct prolog *p)
{
	double at = p->boot_deadline + START_WATCHDOG_SLACK_S;
	char name[96];
	pid_t pid, qemu;

	boot_domain_name(p, name, sizeof(name));
	pid = fork();
	if (pid != 0)
		return pid; /* -1: no watchdog, the boot goes on as before */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (clock_now_s() < at)
		usleep(200 * 1000);
	for (;;) {
		if (hv_qemu_pid(name, &qemu) == 0)
			kill(qemu, SIGKILL);
		sleep(1);
	}
}

static void start_watchdog_end(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

enum prolog_result prolog_start(struct prolog *p)
{
	enum prolog_result res;
	pid_t watchdog;

	p->boot_deadline = clock_now_s() + p->conf.boot_timeout;
	watchdog = start_watchdog_begin(p);
	res = start_run(p);
	start_watchdog_end(watchdog);
	return res;
}
