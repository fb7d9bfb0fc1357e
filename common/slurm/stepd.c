/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <unistd.h>

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
