/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileutil.h"
#include "core/macro.h"
#include "slurm/compat.h"
#include "slurm/stepd.h"

/* libslurm exports both (slurm_ aliases of src/common/stepd_api.c), with
 * the same signatures from 22.05 to 26.05, but installs no header for
 * them: pam_slurm_adopt is built inside Slurm's tree. */
extern int slurm_stepd_connect(const char *directory, const char *nodename,
			       slurm_step_id_t *step_id,
			       uint16_t *protocol_version);
extern int slurm_stepd_add_extern_pid(int fd, uint16_t protocol_version,
				      pid_t pid);

int stepd_adopt_extern(const char *node, uint32_t job_id, pid_t pid)
{
	/* The fields every release has; 26.05's sluid stays zero. */
	slurm_step_id_t step = { .job_id = job_id,
				 .step_id = SLURM_EXTERN_CONT,
				 .step_het_comp = NO_VAL };
	uint16_t protocol = 0;
	int fd, rc;

	slurm_compat_init();
	fd = slurm_stepd_connect(NULL, node, &step, &protocol);
	if (fd < 0)
		return -ENOENT;
	rc = slurm_stepd_add_extern_pid(fd, protocol, pid);
	close(fd);
	return rc == SLURM_SUCCESS ? 0 : -EIO;
}

/* /proc/@pid/@name into @buf (file_read_small()). */
static ssize_t proc_read(const char *pid, const char *name, char *buf,
			 size_t size)
{
	char path[sizeof("/proc//environ") + NAME_MAX];

	snprintf(path, sizeof(path), "/proc/%s/%s", pid, name);
	return file_read_small(path, buf, size);
}

/* Is the environment block @env (@len bytes) free of SLURMD_NODENAME or
 * does it name @node? */
static bool env_names_node(const char *env, size_t len, const char *node)
{
	static const char key[] = "SLURMD_NODENAME=";

	for (size_t i = 0; i < len; i += strlen(env + i) + 1)
		if (strncmp(env + i, key, sizeof(key) - 1) == 0)
			return strcmp(env + i + sizeof(key) - 1, node) == 0;
	return true;
}

/* Does process @pid run as we do (root, as slurmd and its stepds)? A
 * user's process may take any name and title, not our uid. */
static bool proc_owned_by_us(const char *pid)
{
	char path[sizeof("/proc/") + NAME_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%s", pid);
	return stat(path, &st) == 0 && st.st_uid == geteuid();
}

int stepd_exe_of_path(const char *path, struct stepd_exe *exe)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*exe = (struct stepd_exe){ .dev = st.st_dev, .ino = st.st_ino };
	return 0;
}

int stepd_exe_of_pid(pid_t pid, struct stepd_exe *exe)
{
	char path[sizeof("/proc//exe") + 3 * sizeof(long)];

	snprintf(path, sizeof(path), "/proc/%ld/exe", (long)pid);
	return stepd_exe_of_path(path, exe);
}

/* Does process @pid execute one of @exes? */
static bool pid_runs_stepd(const char *pid, const struct stepd_exe *exes,
			   size_t n)
{
	struct stepd_exe exe;

	if (stepd_exe_of_pid((pid_t)atol(pid), &exe) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (exes[i].dev == exe.dev && exes[i].ino == exe.ino)
			return true;
	return false;
}

/* Is process @pid a slurmstepd of a step of job @job_id other than its
 * extern one, on node @node? */
static bool pid_is_job_step(const char *pid, const char *node, uint32_t job_id,
			    const struct stepd_exe *exes, size_t n_exes)
{
	_cleanup_free_ char *env = NULL;
	char comm[16], title[128], want[48];
	ssize_t n;

	if (proc_comm((pid_t)atol(pid), comm) < 0 ||
	    strcmp(comm, "slurmstepd") != 0 || !proc_owned_by_us(pid) ||
	    !pid_runs_stepd(pid, exes, n_exes) ||
	    proc_read(pid, "cmdline", title, sizeof(title)) <= 0)
		return false;
	n = snprintf(want, sizeof(want), "slurmstepd: [%u.", job_id);
	if (strncmp(title, want, (size_t)n) != 0 ||
	    strncmp(title + n, "extern]", 7) == 0)
		return false;
	env = malloc(65536);
	if (!env)
		return true;
	n = proc_read(pid, "environ", env, 65536);
	return n < 0 ? false : env_names_node(env, (size_t)n, node);
}

bool stepd_job_steps_running(const char *node, uint32_t job_id,
			     const struct stepd_exe *exes, size_t n)
{
	_cleanup_closedir_ DIR *proc = opendir("/proc");
	struct dirent *de;

	while (proc && (de = readdir(proc)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    pid_is_job_step(de->d_name, node, job_id, exes, n))
			return true;
	return false;
}
