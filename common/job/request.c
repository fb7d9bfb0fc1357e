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
	const char *image = getenv(REQUEST_ENV(REQUEST_IMAGE));

	return image && *image;
}

int request_check(enum request_value what, uint64_t value)
{
	static const struct {
		uint64_t min, max;
	} bounds[] = {
		[REQUEST_VALUE_IMAGE] = { 1, REQUEST_IMAGE_LEN_MAX },
		[REQUEST_VALUE_CPUS] = { 1, REQUEST_CPUS_MAX },
		[REQUEST_VALUE_MEM_MIB] = { REQUEST_MEM_MIB_MIN,
					    REQUEST_MEM_MIB_MAX },
	};

	if ((size_t)what >= ARRAY_SIZE(bounds))
		return -EINVAL;
	if (value < bounds[what].min || value > bounds[what].max)
		return -ERANGE;
	return 0;
}

int hugepages_parse(const char *s, enum hugepages *h)
{
	if (strcasecmp(s, "none") == 0)
		*h = HUGEPAGES_NONE;
	else if (strcasecmp(s, "2M") == 0)
		*h = HUGEPAGES_2M;
	else if (strcasecmp(s, "1G") == 0)
		*h = HUGEPAGES_1G;
	else
		return -EINVAL;
	return 0;
}

static int env_u32(const char *name, bool required, uint32_t max, uint32_t *out)
{
	const char *v = getenv(name);
	uint64_t n;

	if (!v || !*v) {
		if (required) {
			log_error(
				"%s is not set: is this running as a Slurm Prolog/Epilog?",
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
	const char *image = getenv(REQUEST_ENV(REQUEST_IMAGE));
	const char *cpus = getenv(REQUEST_ENV(REQUEST_CPUS));
	const char *mem = getenv(REQUEST_ENV(REQUEST_MEM));
	const char *huge = getenv(REQUEST_ENV(REQUEST_HUGEPAGES));
	const char *keep = getenv(REQUEST_ENV(REQUEST_KEEP));

	if (!image || request_check(REQUEST_VALUE_IMAGE, strlen(image)) < 0) {
		log_error("%s is empty or too long",
			  REQUEST_ENV(REQUEST_IMAGE));
		return -EINVAL;
	}
	req->image = strdup(image);
	if (!req->image)
		return -ENOMEM;
	if (cpus && *cpus &&
	    (str_to_uint(cpus, &req->cpus) < 0 ||
	     request_check(REQUEST_VALUE_CPUS, req->cpus) < 0)) {
		log_error("%s='%.32s' is not a vCPU count from 1 to %d",
			  REQUEST_ENV(REQUEST_CPUS), cpus, REQUEST_CPUS_MAX);
		return -EINVAL;
	}
	if (mem && *mem &&
	    (str_to_u64(mem, &req->mem_mib) < 0 ||
	     request_check(REQUEST_VALUE_MEM_MIB, req->mem_mib) < 0)) {
		log_error("%s='%.32s' is not a size in MiB from %d to %llu",
			  REQUEST_ENV(REQUEST_MEM), mem, REQUEST_MEM_MIB_MIN,
			  (unsigned long long)REQUEST_MEM_MIB_MAX);
		return -EINVAL;
	}
	req->hugepages = HUGEPAGES_NONE;
	if (huge && *huge && hugepages_parse(huge, &req->hugepages) < 0) {
		log_error("%s='%.32s' is not none, 2M or 1G",
			  REQUEST_ENV(REQUEST_HUGEPAGES), huge);
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
