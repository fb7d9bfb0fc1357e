/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svm-submit-raw: submits a batch job straight through libslurm with a
 * hand-made job-control environment, as slurmrestd or any libslurm program
 * can: spank_vm.so never sees it. The test for the prolog's distrust of
 * SPANK_* values.
 *
 *   svm-submit-raw WORKDIR SCRIPT-TEXT [NAME=VALUE...]   -> prints the job id
 * Each NAME=VALUE reaches the Prolog as SPANK_NAME=VALUE. The job's
 * environment is PATH and the caller's HOME.
 */
#include "config.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm/compat.h"

extern char **environ;

int main(int argc, char **argv)
{
	job_desc_msg_t desc;
	submit_response_msg_t *resp = NULL;
	char out[4096];
	char home[4096];
	char *env[] = { "PATH=/usr/bin:/bin", home, NULL };

	if (argc < 3) {
		fprintf(stderr, "usage: %s WORKDIR SCRIPT [NAME=VALUE...]\n",
			argv[0]);
		return 2;
	}
	slurm_compat_init();
	slurm_init_job_desc_msg(&desc);
	desc.name = "svm-raw";
	desc.user_id = getuid();
	desc.group_id = getgid();
	desc.work_dir = argv[1];
	snprintf(out, sizeof(out), "%s/raw-%%j.out", argv[1]);
	desc.std_out = out;
	desc.script = argv[2];
	/* as sbatch exports it: Slurm itself sets no HOME */
	snprintf(home, sizeof(home), "HOME=%s", getenv("HOME") ?: "/");
	desc.environment = env;
	desc.env_size = 2;
	desc.min_nodes = 1;
	desc.spank_job_env = argv + 3;
	desc.spank_job_env_size = (uint32_t)(argc - 3);
	if (slurm_submit_batch_job(&desc, &resp) != SLURM_SUCCESS) {
		fprintf(stderr, "submit: %s\n",
			slurm_strerror(slurm_compat_errno()));
		return 1;
	}
	printf("%u\n", slurm_compat_submitted_job_id(resp));
	slurm_free_submit_response_response_msg(resp);
	return 0;
}
