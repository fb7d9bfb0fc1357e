/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm-adopt: the guest's host processes (qemu, the relay, each
 * virtiofsd with its sandbox child) into the job's extern step, the way
 * pam_slurm_adopt adopts an ssh session. From then on they are the job's:
 * jobacct_gather counts them (sstat, sacct), task/cgroup constrains them
 * (ConstrainRAMSpace, ConstrainCores, ConstrainDevices) and proctrack
 * signals them at the job's end.
 *
 * spank_vm.so runs it as root from the extern step's task_post_fork: the
 * Prolog booted the guest before slurmd started that step, and no task of
 * the job runs yet. The processes are taken from the pid files the prolog
 * wrote (pidfile.h), never from anything the user can write.
 *
 * Moving a thread into a cpuset resets its affinity on kernels before 6.2:
 * each thread's mask from before (libvirt's vCPU pinning) is put back, as
 * far as the job's cpuset allows.
 *
 * An adoption that fails costs accounting, not the job: exit 1, the reason
 * in the log; the epilog's journal still stops every process.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"
#include "hold.h"
#include "job/journal.h"
#include "job/vmconf.h"
#include "slurm/ctld.h"
#include "slurm/slurmconf.h"
#include "slurm/stepd.h"
#include "vm/incarnation.h"
#include "vm/pidfile.h"

#define ADOPT_MAX_PIDS	  64
#define ADOPT_MAX_THREADS 1024

struct adopt_thread {
	pid_t tid;
	cpu_set_t mask;
};

struct adopt {
	const char *node;
	unsigned job_id;
	pid_t pids[ADOPT_MAX_PIDS];
	size_t n_pids;
	struct adopt_thread *threads;
	size_t n_threads;
};

static void adopt_add_pid(struct adopt *a, pid_t pid)
{
	for (size_t i = 0; i < a->n_pids; i++)
		if (a->pids[i] == pid)
			return;
	if (a->n_pids < ADOPT_MAX_PIDS)
		a->pids[a->n_pids++] = pid;
}

/* The process of pid file @name, if it is still the one the prolog
 * started (pid and start time). */
static void adopt_pidfile(struct adopt *a, int state_fd, const char *name,
			  const char *comm)
{
	unsigned long long start;
	pid_t pid;

	/* Without its command, only the start time tells qemu apart. */
	if (pidfile_read(state_fd, name, &pid, &start) < 0 ||
	    (!comm && !start) || !pid_is_process(pid, comm, start))
		return;
	adopt_add_pid(a, pid);
}

/* The other members of @leader's process group: virtiofsd's sandbox
 * child, forked before it became the job's. */
static void adopt_group_members(struct adopt *a, pid_t leader)
{
	_cleanup_closedir_ DIR *proc = opendir("/proc");
	struct dirent *de;
	unsigned pid;

	while (proc && (de = readdir(proc)))
		if (str_to_uint(de->d_name, &pid) == 0 &&
		    (pid_t)pid != leader && getpgid((pid_t)pid) == leader)
			adopt_add_pid(a, (pid_t)pid);
}

/* The pids of the journal's helpers and qemu's. */
static int adopt_collect(struct adopt *a, const struct vmconf *conf,
			 int state_fd)
{
	struct journal j = { 0 };
	char comm[16];
	size_t n_leaders;
	int r;

	r = journal_read(state_fd, &j);
	if (r < 0)
		return log_errno(r, "job %u: cannot read the journal",
				 a->job_id);
	adopt_pidfile(a, state_fd, QEMU_PIDFILE, NULL);
	for (size_t i = 0; i < j.n_entries; i++) {
		const struct journal_entry *e = &j.entries[i];

		if (e->n_args < 1)
			continue;
		if (e->kind == JOURNAL_RELAY)
			adopt_pidfile(a, state_fd, e->args[0],
				      "slurm-vm-relay");
		else if (e->kind == JOURNAL_VIRTIOFSD)
			adopt_pidfile(a, state_fd, e->args[0],
				      path_comm(conf->virtiofsd_path, comm));
	}
	journal_free(&j);
	n_leaders = a->n_pids;
	for (size_t i = 0; i < n_leaders; i++)
		if (getpgid(a->pids[i]) == a->pids[i])
			adopt_group_members(a, a->pids[i]);
	return 0;
}

/* Every thread's affinity now, before the move changes it. */
static int adopt_save_affinity(struct adopt *a)
{
	a->threads = calloc(ADOPT_MAX_THREADS, sizeof(*a->threads));
	if (!a->threads)
		return -ENOMEM;
	for (size_t i = 0; i < a->n_pids; i++) {
		_cleanup_closedir_ DIR *dir = NULL;
		struct dirent *de;
		char path[64];
		unsigned tid;

		snprintf(path, sizeof(path), "/proc/%ld/task",
			 (long)a->pids[i]);
		dir = opendir(path);
		while (dir && (de = readdir(dir)) &&
		       a->n_threads < ADOPT_MAX_THREADS) {
			struct adopt_thread *t = &a->threads[a->n_threads];

			if (str_to_uint(de->d_name, &tid) < 0)
				continue;
			t->tid = (pid_t)tid;
			if (sched_getaffinity(t->tid, sizeof(t->mask),
					      &t->mask) == 0)
				a->n_threads++;
		}
	}
	return 0;
}

/* Each thread's mask from before, within what the job's cpuset allows
 * (the kernel's mask after the move): nothing when they do not meet. */
static unsigned adopt_restore_affinity(const struct adopt *a)
{
	unsigned restored = 0;

	for (size_t i = 0; i < a->n_threads; i++) {
		const struct adopt_thread *t = &a->threads[i];
		cpu_set_t now, want;

		if (sched_getaffinity(t->tid, sizeof(now), &now) < 0)
			continue;
		CPU_AND(&want, &t->mask, &now);
		if (CPU_COUNT(&want) == 0 || CPU_EQUAL(&want, &now))
			continue;
		if (sched_setaffinity(t->tid, sizeof(want), &want) == 0)
			restored++;
	}
	return restored;
}

/* The state directory of the newest incarnation of job @job here that no
 * epilog ended: a descriptor, 0 when the job has no guest on this node
 * (*@fd untouched), or -errno. */
static int adopt_open_state(const struct vmconf *conf, uint32_t job, int *fd)
{
	unsigned restarts[16], restart = 0;
	char name[64];
	int n;

	n = guest_earlier_incarnations(conf, job, UINT_MAX, restarts,
				       ARRAY_SIZE(restarts));
	if (n <= 0)
		return n;
	for (int i = 0; i < n; i++)
		if (restarts[i] > restart)
			restart = restarts[i];
	statedir_name(job, restart, name, sizeof(name));
	*fd = statedir_open(conf->state_dir, name, false);
	if (*fd < 0)
		return log_errno(*fd, "job %u: cannot open %s/%s", job,
				 conf->state_dir, name);
	return 1;
}

/* The CPU seconds @pid used so far (all its threads). */
static double proc_cpu_seconds(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (file_read_small(path, buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')) ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		   &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int adopt_run(struct adopt *a, const struct vmconf *conf)
{
	_cleanup_close_ int state_fd = -1;
	struct adopt_target t;
	unsigned adopted = 0;
	double qemu_cpu;
	int r;

	r = adopt_open_state(conf, a->job_id, &state_fd);
	if (r <= 0)
		return r; /* 0: not a VM job on this node */
	r = adopt_collect(a, conf, state_fd);
	if (r < 0)
		return r;
	if (a->n_pids == 0) {
		log_warn("job %u: none of the guest's processes is running: "
			 "nothing to adopt",
			 a->job_id);
		return 0;
	}
	adopt_target_init(&t, conf->path, a->node, a->job_id);
	qemu_cpu = proc_cpu_seconds(a->pids[0]);
	r = adopt_save_affinity(a);
	for (size_t i = 0; r == 0 && i < a->n_pids; i++) {
		r = adopt_target_join(&t, a->pids[i]);
		if (r == 0)
			adopted++;
		else
			log_error("job %u: the extern step on %s did not adopt "
				  "pid %ld (%s): the guest is outside the "
				  "job's accounting and cgroups",
				  a->job_id, a->node, (long)a->pids[i],
				  r == -ENOENT	? "no extern step"
				  : r == -EPERM ? "refused: see slurmd's log"
				  : r == -ESRCH ? "the step's task is in no "
						  "cgroup of the job"
						: strerror(-r));
		/* 26.05's extern step has no task of its own: the first
		 * process it adopts is the one the others join */
		if (r == 0 && i == 0 && !t.model && t.join)
			t.model = a->pids[0];
	}
	if (r == 0)
		log_info("job %u: the guest's %u processes are the extern "
			 "step's (%s); %u threads pinned as before; qemu had "
			 "used %.2f s of CPU",
			 a->job_id, adopted,
			 t.model ? "its task's cgroups" : "adopted by the step",
			 adopt_restore_affinity(a), qemu_cpu);
	return r;
}

/* --oom: the job's memory cgroup killed its guest here (the relay made
 * GUEST_OOM_FILE in root's state directory), and the batch script has
 * ended: the job ends OUT_OF_MEMORY, as a bare job whose batch script was
 * killed for memory does, rather than FAILED by its steps' lost guest. */
static int adopt_report_oom(const struct adopt *a, const struct vmconf *conf)
{
	_cleanup_close_ int state_fd = -1;
	int r;

	r = adopt_open_state(conf, a->job_id, &state_fd);
	if (r <= 0)
		return r;
	if (faccessat(state_fd, GUEST_OOM_FILE, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	r = ctld_job_complete_oom(a->job_id);
	if (r < 0)
		return log_errno(r,
				 "job %u: cannot end the job OUT_OF_MEMORY "
				 "after its guest's OOM kill on %s: %s",
				 a->job_id, a->node, ctld_last_error());
	log_info("job %u: its guest on %s was killed by the job's memory "
		 "cgroup: the job ends OUT_OF_MEMORY",
		 a->job_id, a->node);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm-adopt --config VM.CONF --job JOBID --node NODENAME\n"
		"                      [--oom | --hold PID]\n"
		"The guest of job JOBID into its extern step on node NODENAME\n"
		"(run by spank_vm.so in the extern step, as root). With --oom:\n"
		"end the job OUT_OF_MEMORY if the job's memory cgroup killed\n"
		"its guest there (run by spank_vm.so in the batch step). With\n"
		"--hold: keep the extern step's sleep PID from the job's signals\n"
		"until its other steps here end (run by spank_vm.so there).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "job", required_argument, NULL, 'j' },
		{ "node", required_argument, NULL, 'n' },
		{ "oom", no_argument, NULL, 'o' },
		{ "hold", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct adopt a = { 0 };
	struct vmconf conf = { 0 };
	const char *config = NULL;
	bool oom = false;
	unsigned hold = 0;
	int c, r;

	log_open("slurm-vm-adopt");
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'j':
			if (str_to_uint(optarg, &a.job_id) < 0)
				a.job_id = 0;
			break;
		case 'n':
			a.node = optarg;
			break;
		case 'o':
			oom = true;
			break;
		case 'H':
			if (str_to_uint(optarg, &hold) < 0 || hold <= 1)
				hold = 1;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!config || !a.node || !a.job_id || optind != argc || hold == 1 ||
	    (oom && hold)) {
		usage(stderr);
		return 2;
	}
	if (vmconf_load(&conf, config) < 0)
		return EXIT_FAILURE;
	if (conf.log_file)
		log_open_file(conf.log_file);
	if (hold) {
		struct adopt_target t;

		adopt_target_init(&t, config, a.node, a.job_id);
		r = hold_extern_sleep(&t, (pid_t)hold);
	} else {
		r = oom ? adopt_report_oom(&a, &conf) : adopt_run(&a, &conf);
	}
	free(a.threads);
	vmconf_free(&conf);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
