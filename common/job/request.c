/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "job/request.h"
#include "core/strutil.h"

bool request_wanted(void)
{
	const char *image = getenv("SPANK_VM_IMAGE");

	return image && *image;
}

static int env_u32(const char *name, bool required, uint32_t max,
		   uint32_t *out)
{
	const char *v = getenv(name);
	uint64_t n;

	if (!v || !*v) {
		if (required) {
			log_error("%s is not set: is this running as a Slurm Prolog/Epilog?",
				  name);
			return -EINVAL;
		}
		*out = 0;
		return 0;
	}
	if (str_to_u64(v, &n) < 0 || n > max) {
		log_error("%s='%.64s' is not a number from 0 to %u", name, v,
			  max);
		return -EINVAL;
	}
	*out = (uint32_t)n;
	return 0;
}

static int request_parse_vm(struct vm_request *req)
{
	const char *image = getenv("SPANK_VM_IMAGE");
	const char *cpus = getenv("SPANK_VM_CPUS");
	const char *mem = getenv("SPANK_VM_MEM");
	const char *huge = getenv("SPANK_VM_HUGEPAGES");
	const char *keep = getenv("SPANK_VM_KEEP");

	if (!image || !*image || strlen(image) > REQUEST_IMAGE_LEN_MAX) {
		log_error("SPANK_VM_IMAGE is empty or too long");
		return -EINVAL;
	}
	req->image = strdup(image);
	if (!req->image)
		return -ENOMEM;
	if (cpus && *cpus &&
	    (str_to_uint(cpus, &req->cpus) < 0 || req->cpus == 0 ||
	     req->cpus > REQUEST_CPUS_MAX)) {
		log_error("SPANK_VM_CPUS='%.32s' is not a vCPU count from 1 to %d",
			  cpus, REQUEST_CPUS_MAX);
		return -EINVAL;
	}
	if (mem && *mem &&
	    (str_to_u64(mem, &req->mem_mib) < 0 ||
	     req->mem_mib < REQUEST_MEM_MIB_MIN ||
	     req->mem_mib > REQUEST_MEM_MIB_MAX)) {
		log_error("SPANK_VM_MEM='%.32s' is not a size in MiB from %d to %llu",
			  mem, REQUEST_MEM_MIB_MIN,
			  (unsigned long long)REQUEST_MEM_MIB_MAX);
		return -EINVAL;
	}
	if (!huge || !*huge || strcasecmp(huge, "none") == 0)
		req->hugepages = HUGEPAGES_NONE;
	else if (strcasecmp(huge, "2M") == 0)
		req->hugepages = HUGEPAGES_2M;
	else if (strcasecmp(huge, "1G") == 0)
		req->hugepages = HUGEPAGES_1G;
	else {
		log_error("SPANK_VM_HUGEPAGES='%.32s' is not none, 2M or 1G",
			  huge);
		return -EINVAL;
	}
	req->keep = keep && strcmp(keep, "1") == 0;
	return 0;
}

/* The uid decides whose credentials check the image; the name must agree
 * with it so the guest gets the same identity. */
static int request_parse_user(struct vm_request *req)
{
	uint32_t uid, gid;
	const char *user = getenv("SLURM_JOB_USER");
	struct passwd *pw;
	int r;

	r = env_u32("SLURM_JOB_UID", true, UINT32_MAX - 1, &uid);
	if (r == 0)
		r = env_u32("SLURM_JOB_GID", true, UINT32_MAX - 1, &gid);
	if (r < 0)
		return r;
	req->uid = uid;
	req->gid = gid;
	pw = getpwuid(req->uid);
	if (!pw) {
		log_error("job user uid %u is unknown on this node", uid);
		return -ENOENT;
	}
	if (user && strcmp(user, pw->pw_name) != 0) {
		log_error("SLURM_JOB_USER '%.64s' does not match uid %u (%s)",
			  user, uid, pw->pw_name);
		return -EINVAL;
	}
	req->user = strdup(pw->pw_name);
	return req->user ? 0 : -ENOMEM;
}

int request_job_from_env(uint32_t *job_id, unsigned *restart_count)
{
	int r = env_u32("SLURM_JOB_ID", true, UINT32_MAX - 1, job_id);

	if (r == 0)
		r = env_u32("SLURM_JOB_RESTART_COUNT", false, 1u << 20,
			    restart_count);
	return r;
}

int request_from_env(struct vm_request *req)
{
	int r;

	memset(req, 0, sizeof(*req));
	r = request_job_from_env(&req->job_id, &req->restart_count);
	if (r == 0)
		r = request_parse_user(req);
	if (r == 0)
		r = request_parse_vm(req);
	return r;
}

void request_free(struct vm_request *req)
{
	free(req->image);
	free(req->user);
	memset(req, 0, sizeof(*req));
}

const char *hugepages_name(enum hugepages h)
{
	switch (h) {
	case HUGEPAGES_2M:
		return "2M";
	case HUGEPAGES_1G:
		return "1G";
	default:
		return "none";
	}
}
