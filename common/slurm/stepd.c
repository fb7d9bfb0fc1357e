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

/* Is process @pid a slurmstepd of a step of job @job_id other than its
 * extern one, on node @node? */
static bool pid_is_job_step(const char *pid, const char *node, uint32_t job_id)
{
	_cleanup_free_ char *env = NULL;
	char comm[16], title[128], want[48];
	ssize_t n;

	if (proc_comm((pid_t)atol(pid), comm) < 0 ||
	    strcmp(comm, "slurmstepd") != 0 || !proc_owned_by_us(pid) ||
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

bool stepd_job_steps_running(const char *node, uint32_t job_id)
{
	_cleanup_closedir_ DIR *proc = opendir("/proc");
	struct dirent *de;

	while (proc && (de = readdir(proc)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' &&
		    pid_is_job_step(de->d_name, node, job_id))
			return true;
	return false;
}
