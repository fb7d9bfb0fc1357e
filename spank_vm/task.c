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
 * TaskProlog, TMPDIR and the PATH lookup of argv[0]. The agent looks argv[0]
 * up in the guest's PATH; see spank_vm(8).
 */
#include "config.h"

#include <fcntl.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "spank_vm.h"
#include "strutil.h"
#include "vmconf.h"

static int task_load_conf(struct vmconf *conf)
{
	_cleanup_free_ char *default_path = NULL;
	const char *path = plugin_args.config;

	if (!path)
		path = default_path = vmconf_default_path();
	return vmconf_load(conf, path);
}

/* The reason the prolog recorded, to the task's stderr. */
static void task_report_reason(const char *state, uint32_t job)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	char line[1024];

	if (asprintf(&path, "%s/reason", state) < 0)
		return;
	f = fopen(path, "re");
	log_error("the VM of job %u is not available, so this step cannot run in it:",
		  job);
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "%s", line);
}

static int task_exec_in_guest(spank_t sp, const struct vmconf *conf,
			      const char *state)
{
	_cleanup_free_ char *exec = NULL, *sock = NULL, *cwd = NULL;
	char **argv = NULL, **env = NULL, **nargv;
	int argc = 0, n = 0;

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || argc < 1)
		return -EINVAL;
	if (asprintf(&exec, "%s/slurm-vm-exec", conf->helper_dir) < 0 ||
	    asprintf(&sock, "%s/sock/relay.sock", state) < 0)
		return -ENOMEM;
	cwd = getcwd(NULL, 0);
	nargv = calloc((size_t)argc + 8, sizeof(*nargv));
	if (!nargv)
		return -ENOMEM;
	nargv[n++] = exec;
	nargv[n++] = "--socket";
	nargv[n++] = sock;
	if (cwd) {
		nargv[n++] = "--cwd";
		nargv[n++] = cwd;
	}
	nargv[n++] = "--";
	for (int i = 0; i < argc; i++)
		nargv[n++] = argv[i];
	execve(exec, nargv, env);
	log_errno(errno, "cannot run %s", exec);
	free(nargv);
	return -errno;
}

int task_init_remote(spank_t sp)
{
	uint32_t job = 0, step = 0;
	unsigned restart = 0;
	char name[64], restart_s[16] = "";
	_cleanup_free_ char *state = NULL, *reason = NULL;
	struct vmconf conf;
	struct stat st;
	int r;

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 0;
	if (step >= SLURM_MAX_NORMAL_STEP_ID)
		return 0; /* batch script, extern step: on the host */
	if (spank_getenv(sp, "SLURM_RESTART_COUNT", restart_s,
			 sizeof(restart_s)) == ESPANK_SUCCESS)
		str_to_uint(restart_s, &restart);
	r = task_load_conf(&conf);
	if (r < 0)
		goto out;
	statedir_name(job, restart, name, sizeof(name));
	if (asprintf(&state, "%s/%s", conf.state_dir, name) < 0 ||
	    asprintf(&reason, "%s/reason", state) < 0) {
		r = -ENOMEM;
		goto out;
	}
	if (stat(state, &st) < 0) {
		r = 0; /* not a VM job here */
		goto out;
	}
	if (access(reason, F_OK) == 0) {
		task_report_reason(state, job);
		r = -EHOSTDOWN;
		goto out;
	}
	r = task_exec_in_guest(sp, &conf, state);
out:
	vmconf_free(&conf);
	return r;
}
