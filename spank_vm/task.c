/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Remote context (slurmstepd, in each task as the job user): a task of a
 * VM job's step becomes slurm-vm-exec, which runs the task's command inside
 * the node's guest through the relay and ends the way it ended there.
 *
 * A job is a VM job on this node when the prolog made its state directory;
 * that directory, not the job's environment (which the user controls), is
 * the authority. If the prolog recorded a reason the guest failed, the task
 * fails with it. The batch script and the extern step stay on the host.
 *
 * Replacing the task here skips what slurmstepd does after task_init:
 * the --multi-prog line (taken here), TaskProlog, TMPDIR, the PATH lookup
 * of argv[0] and the user limits (the agent does those in the guest); see
 * spank_vm(8). The environment is translated for the guest (taskenv.h).
 */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/journal.h"
#include "core/log.h"
#include "job/multiprog.h"
#include "job/request.h"
#include "spank_vm.h"
#include "core/strutil.h"
#include "job/taskenv.h"
#include "job/vmconf.h"

/* What went wrong loading vm.conf, said only if the step needs it. */
static char conf_errors[2048];

static void conf_error_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR &&
	    strlen(conf_errors) + strlen(msg) + 2 < sizeof(conf_errors)) {
		strcat(conf_errors, msg);
		strcat(conf_errors, "\n");
	}
}

int spank_vm_load_conf(struct vmconf *conf)
{
	_cleanup_free_ char *default_path = NULL;
	const char *path = plugin_args.config;
	int r;

	if (!path)
		path = default_path = vmconf_default_path();
	conf_errors[0] = '\0';
	log_set_sink(conf_error_sink);
	r = vmconf_load(conf, path);
	log_set_sink(spank_vm_log_sink);
	return r;
}

/* Did the job ask for a VM? Its environment says so (--vm-image or
 * SLURM_VM_IMAGE, as srun passed them on); the user controls it, so it only
 * decides whether a step that cannot read vm.conf fails or runs as a plain
 * one, which the user's batch script can do anyway. */
static bool task_wants_vm(spank_t sp)
{
	static const char *const vars[] = {
		REQUEST_USER_ENV(REQUEST_IMAGE),
		"_SLURM_SPANK_OPTION_" PLUGIN_NAME "_vm_image",
	};
	char v[8];

	if (vm_opts.image)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		spank_err_t rc = spank_getenv(sp, vars[i], v, sizeof(v));

		if ((rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE) && v[0])
			return true;
	}
	return false;
}

/* The reason the prolog recorded for this job's guest, read while the task
 * is still root (task_init_privileged): the file is root's, 0400, as it may
 * hold the guest's console and a file of the user's in the state directory
 * could be grown without bound. At most REASON_READ_MAX bytes. */
#define REASON_READ_MAX (64 * 1024)
static char *job_reason;

/* Does the batch script go into the guest? --vm-batch (given to sbatch: its
 * callback ran here, or the job carries it), else SLURM_VM_BATCH in the
 * job's environment, else the site's BatchInVM. The user decides either
 * way where their own script runs: nothing to guard. */
static bool task_batch_in_vm(spank_t sp, const struct vmconf *conf)
{
	char v[8];
	spank_err_t rc;
	bool batch;

	if (vm_opts.batch_set)
		return true;
	rc = spank_getenv(sp, "_SLURM_SPANK_OPTION_" PLUGIN_NAME "_vm_batch", v,
			  sizeof(v));
	if (rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE)
		return true;
	if (spank_getenv(sp, REQUEST_USER_ENV(REQUEST_BATCH), v, sizeof(v)) ==
		    ESPANK_SUCCESS &&
	    vm_batch_parse(v, &batch) == 0)
		return batch;
	return conf->batch_in_vm;
}

/* The task's job's state directory and this node's vm.conf; 1 for a task
 * that stays on the host (the extern step, a batch script without
 * --vm-batch). *@batch: the task is the batch script. */
static int task_state_dir(spank_t sp, struct vmconf *conf, uint32_t *job,
			  char **state, bool *batch)
{
	char name[64], restart_s[16] = "";
	unsigned restart = 0;
	uint32_t step = 0;
	int r;

	*state = NULL;
	if (spank_get_item(sp, S_JOB_ID, job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 1;
	*batch = step == SLURM_BATCH_SCRIPT;
	if (step >= SLURM_MAX_NORMAL_STEP_ID && !*batch)
		return 1;
	if (spank_getenv(sp, "SLURM_RESTART_COUNT", restart_s,
			 sizeof(restart_s)) == ESPANK_SUCCESS)
		str_to_uint(restart_s, &restart);
	r = spank_vm_load_conf(conf);
	if (*batch && (r < 0 || !task_batch_in_vm(sp, conf)))
		return 1; /* a broken vm.conf: the steps say so */
	if (r < 0)
		return r;
	statedir_name(*job, restart, name, sizeof(name));
	if (asprintf(state, "%s/%s", conf->state_dir, name) < 0) {
		*state = NULL;
		return -ENOMEM;
	}
	return 0;
}

int task_init_privileged(spank_t sp)
{
	_cleanup_free_ char *state = NULL, *buf = NULL;
	_cleanup_close_ int dir = -1, fd = -1;
	struct vmconf conf = { 0 };
	struct stat st;
	uint32_t job = 0;
	size_t got = 0;
	ssize_t n;

	bool batch;

	/* Any failure here: task_init says what it can without it. */
	if (task_state_dir(sp, &conf, &job, &state, &batch) != 0)
		goto out;
	dir = open(state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0)
		fd = openat(dir, "reason",
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    !(buf = malloc(REASON_READ_MAX + 1)))
		goto out;
	while (got < REASON_READ_MAX &&
	       (n = read(fd, buf + got, REASON_READ_MAX - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	free(job_reason);
	job_reason = TAKE_PTR(buf);
out:
	vmconf_free(&conf);
	return 0;
}

/* The reason the prolog recorded, to the task's stderr. */
static void task_report_reason(uint32_t job)
{
	log_error(
		"the VM of job %u is not available, so this step cannot run in it:",
		job);
	fprintf(stderr, "%s",
		job_reason ? job_reason
			   : "(the reason could not be read; ask your "
			     "administrator to look at the prolog's log)\n");
}

/* srun's mark (launch.c) is ours: no task keeps it, VM job or not. */
static bool task_take_multi_prog_mark(spank_t sp)
{
	char mark[4] = "";
	spank_err_t rc = spank_getenv(sp, MULTI_PROG_ENV, mark, sizeof(mark));

	if (rc == ESPANK_ENV_NOEXIST)
		return false;
	spank_unsetenv(sp, MULTI_PROG_ENV);
	return rc == ESPANK_SUCCESS && strcmp(mark, "1") == 0;
}

/* The task's own argv: under --multi-prog its line of the file. */
static int task_argv(spank_t sp, bool multi_prog, char ***argv)
{
	char **step_argv = NULL;
	uint32_t rank = 0;
	int argc = 0, r;

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &step_argv) !=
		    ESPANK_SUCCESS ||
	    argc < 1)
		return -EINVAL;
	if (!multi_prog) {
		*argv = strv_copy(step_argv);
		return *argv ? 0 : -ENOMEM;
	}
	if (argc < 2 ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS)
		return -EINVAL;
	r = multiprog_task_argv(step_argv[1], rank, step_argv + 2,
				(size_t)argc - 2, argv);
	if (r == -ENOENT)
		log_error("Program for task rank %u not specified.", rank);
	else if (r < 0)
		log_error("the --multi-prog line of task rank %u is malformed",
			  rank);
	return r;
}

/* The task's environment for the guest (taskenv.h). */
static int task_env(spank_t sp, const struct vmconf *conf, const char *state,
		    char ***out)
{
	_cleanup_free_ char *path = NULL, *affinity = NULL;
	_cleanup_strv_free_ char **env = NULL;
	struct taskenv_rule rule = { 0 };
	struct task_map map;
	char **job_env = NULL;
	cpu_set_t set;
	int r;

	if (spank_get_item(sp, S_JOB_ENV, &job_env) != ESPANK_SUCCESS)
		return -EINVAL;
	env = strv_copy(job_env);
	if (!env)
		return -ENOMEM;
	r = task_prolog_run(&env);
	if (r < 0)
		return r;
	if (asprintf(&path, "%s/" TASKMAP_FILE, state) < 0)
		return -ENOMEM;
	r = task_map_load(path, &map);
	if (r < 0)
		return log_errno(r, "cannot read the VM's task map %s", path);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		taskenv_affinity(&map, &set, &affinity);
	rule.affinity = affinity;
	if (strcmp(conf->task_tmpdir, "keep") != 0)
		rule.tmpdir = conf->task_tmpdir;
	r = taskenv_translate(&map, &rule, env, out);
	task_map_free(&map);
	return r;
}

/* The batch script runs in the guest from a copy there: the host's is in
 * slurmd's spool. Its text becomes the task's stdin, which a shell in the
 * guest writes to a private file and executes, with the script's arguments
 * and stdin from /dev/null, as slurmstepd would. First the agent binary
 * (SLURM_VM_AGENT) sets up the Slurm commands the script may run on the
 * host over the session's PMI stream (agent/shared/hostcmd.h), first in its PATH. */
#define BATCH_RUNNER                                                          \
	"f=$(mktemp \"${TMPDIR:-/tmp}/slurm_script.XXXXXX\") && cat >\"$f\" " \
	"&& chmod 700 \"$f\" || exit 1\n"                                     \
	"if [ -n \"${SLURM_VM_AGENT:-}\" ] && [ -n \"${PMI_FD:-}\" ] && "     \
	"d=$(mktemp -d \"${TMPDIR:-/tmp}/slurm-vm-cmds.XXXXXX\") && "         \
	"\"$SLURM_VM_AGENT\" --host-commands \"$d\" </dev/null; then "        \
	"export PATH=\"$d:$PATH\" SLURM_VM_HOSTCMD=\"$d/socket\"; fi\n"       \
	"unset PMI_FD SLURM_VM_AGENT\n"                                       \
	"exec \"$f\" \"$@\" </dev/null 3>&-"

static int task_batch_argv(spank_t sp, char ***argv)
{
	static const char *const runner[] = { "/bin/sh", "-c", BATCH_RUNNER,
					      "slurm_script" };
	_cleanup_close_ int fd = -1;
	char **step_argv = NULL;
	int argc = 0;

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &step_argv) !=
		    ESPANK_SUCCESS ||
	    argc < 1)
		return -EINVAL;
	fd = open(step_argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return log_errno(errno, "cannot read the batch script %s",
				 step_argv[0]);
	if (dup2(fd, STDIN_FILENO) < 0)
		return -errno;
	*argv = calloc((size_t)argc + 4, sizeof(**argv));
	if (!*argv)
		return -ENOMEM;
	for (int i = 0; i < argc + 3; i++) {
		const char *a = i < 4 ? runner[i] : step_argv[i - 3];

		/* On a failure strv_free() frees what is there. */
		if (!((*argv)[i] = strdup(a)))
			return -ENOMEM;
	}
	return 0;
}

static int task_exec_in_guest(spank_t sp, const struct vmconf *conf,
			      const char *state, bool multi_prog, bool batch)
{
	_cleanup_free_ char *exec = NULL, *sock = NULL, *cwd = NULL;
	_cleanup_strv_free_ char **argv = NULL, **env = NULL;
	_cleanup_free_ char **nargv = NULL;
	int n = 0, r;

	r = batch ? task_batch_argv(sp, &argv)
		  : task_argv(sp, multi_prog, &argv);
	if (r == 0)
		r = task_env(sp, conf, state, &env);
	if (r < 0)
		return r;
	if (asprintf(&exec, "%s/slurm-vm-exec", conf->helper_dir) < 0 ||
	    asprintf(&sock, "%s/sock/relay.sock", state) < 0)
		return -ENOMEM;
	/* slurmstepd already went to the job's cwd, or to /tmp with an
	 * error, as on bare metal; the guest goes to the same one. */
	cwd = getcwd(NULL, 0);
	nargv = calloc(strv_length(argv) + 9, sizeof(*nargv));
	if (!nargv)
		return -ENOMEM;
	nargv[n++] = exec;
	nargv[n++] = "--socket";
	nargv[n++] = sock;
	if (batch)
		nargv[n++] = "--host-commands";
	if (cwd) {
		nargv[n++] = "--cwd";
		nargv[n++] = cwd;
	}
	/* srun --pty: slurmstepd made a terminal our stdin. */
	if (isatty(STDIN_FILENO))
		nargv[n++] = "--pty";
	nargv[n++] = "--";
	for (size_t i = 0; argv[i]; i++)
		nargv[n++] = argv[i];
	execve(exec, nargv, env);
	return log_errno(errno, "cannot run %s", exec);
}

int task_init_remote(spank_t sp)
{
	_cleanup_free_ char *state = NULL, *reason = NULL;
	struct vmconf conf = { 0 };
	struct stat st;
	bool multi_prog, batch = false;
	uint32_t job = 0;
	int r;

	multi_prog = task_take_multi_prog_mark(sp);
	r = task_state_dir(sp, &conf, &job, &state, &batch);
	if (r > 0) {
		r = 0;
		goto out;
	}
	/* A node without a readable vm.conf (a rolling install, a typo):
	 * plain jobs must not notice; a VM job's step fails and says why. */
	if (r < 0 && !task_wants_vm(sp)) {
		r = 0;
		goto out;
	}
	if (r < 0) {
		char *save = NULL;

		for (char *l = strtok_r(conf_errors, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save))
			log_error("%s", l);
		log_error("this node cannot run the steps of VM job %u: its "
			  "slurm-vm configuration is unusable; tell your "
			  "administrator",
			  job);
		goto out;
	}
	if (asprintf(&reason, "%s/reason", state) < 0) {
		reason = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (stat(state, &st) < 0) {
		r = 0; /* not a VM job here */
		goto out;
	}
	if (access(reason, F_OK) == 0) {
		task_report_reason(job);
		r = -EHOSTDOWN;
		goto out;
	}
	r = task_exec_in_guest(sp, &conf, state, multi_prog, batch);
out:
	vmconf_free(&conf);
	return r;
}
