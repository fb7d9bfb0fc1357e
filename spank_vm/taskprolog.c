/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm.conf TaskProlog for a task that runs in the guest. slurmstepd runs
 * it after task_init, which a VM task never leaves on the host, so we run
 * it here the way slurmstepd does (task.c _run_script_and_set_env): on the
 * node, as the job user, in the task's cwd, with the task's environment
 * and SLURM_SCRIPT_CONTEXT=prolog_task; its "export", "unset" and "print"
 * lines change the environment that is then translated for the guest, a
 * SLURM_PROLOG_CPU_MASK rebinds the task (until Slurm 24.05, as
 * slurmstepd), and a non-zero exit N ends the
 * task with "TaskProlog failed status=N" and exit status N.
 *
 * The path is slurmstepd's own configuration: the plugin runs inside
 * slurmstepd, whose libslurmfull holds it in `slurm_conf`, a slurm_conf_t
 * of the public <slurm/slurm.h>.
 */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "spank_vm.h"
#include "job/taskenv.h"

#define PROLOG_OUTPUT_MAX (1u << 20)

static const char *task_prolog_path(void)
{
	const slurm_conf_t *conf = dlsym(RTLD_DEFAULT, "slurm_conf");

	if (!conf || !conf->task_prolog || !conf->task_prolog[0])
		return NULL;
	return conf->task_prolog;
}

static _Noreturn void prolog_child(const char *path, char **env, int out)
{
	char *argv[] = { (char *)path, NULL };
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0)
		_exit(127);
	setpgid(0, 0);
	execve(path, argv, env);
	_exit(127);
}

/* The script's whole standard output (at most PROLOG_OUTPUT_MAX). */
static int prolog_read(int fd, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	while ((n = read(fd, buf + len, cap - len - 1)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
		if (cap - len > 1)
			continue;
		if (cap >= PROLOG_OUTPUT_MAX)
			break;
		char *p = realloc(buf, cap * 2);
		if (!p) {
			free(buf);
			return -ENOMEM;
		}
		buf = p;
		cap *= 2;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

int task_prolog_run(char ***env)
{
	const char *path = task_prolog_path();
	_cleanup_free_ char *out = NULL, *mask = NULL;
	int pipefd[2], status = 0, r;
	cpu_set_t set;
	pid_t pid;

	if (!path)
		return 0;
	r = taskenv_set(env, "SLURM_SCRIPT_CONTEXT", "prolog_task");
	if (r < 0 || pipe2(pipefd, O_CLOEXEC) < 0)
		return r < 0 ? r : -errno;
	pid = fork();
	if (pid == 0)
		prolog_child(path, *env, pipefd[1]);
	close(pipefd[1]);
	r = pid < 0 ? -errno : prolog_read(pipefd[0], &out);
	close(pipefd[0]);
	if (pid < 0)
		return log_errno(-r, "cannot run TaskProlog %s", path);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return r;
	/* As slurmstepd: the task ends with the script's status. */
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;

		if (!WIFEXITED(status))
			log_error("slurm task_prolog did not exit normally");
		log_error("TaskProlog failed status=%d", code);
		_exit(code);
	}
	r = taskenv_apply_prolog_output(out, SLURM_VERSION_NUMBER, env,
					STDOUT_FILENO, &mask);
	if (r == 0 && mask && taskenv_mask_to_cpuset(mask, &set) == 0 &&
	    sched_setaffinity(0, sizeof(set), &set) < 0)
		log_error("Failed SLURM_PROLOG_CPU_MASK setup");
	return r;
}
