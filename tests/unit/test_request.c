/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The request contract between spank_vm.so and the prolog
 * (common/job/request.h): one check of its bounds, called by both, so that
 * what the prolog refuses sbatch refuses first, with the option's name. */
#include "config.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/log.h"
#include "job/request.h"
#include "spank_vm.h"

/* ---- what libslurm gives spank_vm.so: the options it registers ---- */

static struct spank_option registered[16];
static size_t n_registered;

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	assert_true(n_registered < ARRAY_SIZE(registered));
	registered[n_registered++] = *opt;
	return ESPANK_SUCCESS;
}

const char *spank_strerror(spank_err_t err)
{
	(void)err;
	return "stub";
}

static char last_error[512];

static void capture_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR)
		snprintf(last_error, sizeof(last_error), "%s", msg);
}

static int setup(void **state)
{
	(void)state;
	log_set_sink(capture_sink);
	last_error[0] = '\0';
	n_registered = 0;
	assert_int_equal(vm_options_register(NULL), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vm_options_free();
	return 0;
}

/* sbatch --NAME=ARG: the option's callback, as Slurm calls it. */
static int sbatch_option(const char *name, const char *arg)
{
	for (size_t i = 0; i < n_registered; i++)
		if (strcmp(registered[i].name, name) == 0)
			return registered[i].cb(registered[i].val, arg, 0);
	fail_msg("--%s is not registered", name);
	return -1;
}

/* The prolog's parse of a job that carries @name=@value and nothing odd. */
static int prolog_request(const char *name, const char *value)
{
	struct vm_request req;
	char id[16];
	int r;

	snprintf(id, sizeof(id), "%u", (unsigned)getuid());
	setenv("SLURM_JOB_ID", "42", 1);
	setenv("SLURM_JOB_UID", id, 1);
	snprintf(id, sizeof(id), "%u", (unsigned)getgid());
	setenv("SLURM_JOB_GID", id, 1);
	unsetenv("SLURM_JOB_USER");
	setenv(REQUEST_ENV(REQUEST_IMAGE), "img", 1);
	setenv(name, value, 1);
	r = request_from_env(&req);
	request_free(&req);
	unsetenv(name);
	return r;
}

/* ---- the one check ---- */

static void test_check_bounds(void **state)
{
	(void)state;
	assert_int_equal(request_check(REQUEST_VALUE_CPUS, 0), -ERANGE);
	assert_int_equal(request_check(REQUEST_VALUE_CPUS, 1), 0);
	assert_int_equal(request_check(REQUEST_VALUE_CPUS, REQUEST_CPUS_MAX),
			 0);
	assert_int_equal(
		request_check(REQUEST_VALUE_CPUS, REQUEST_CPUS_MAX + 1),
		-ERANGE);
	assert_int_equal(
		request_check(REQUEST_VALUE_MEM_MIB, REQUEST_MEM_MIB_MIN - 1),
		-ERANGE);
	assert_int_equal(
		request_check(REQUEST_VALUE_MEM_MIB, REQUEST_MEM_MIB_MIN), 0);
	assert_int_equal(
		request_check(REQUEST_VALUE_MEM_MIB, REQUEST_MEM_MIB_MAX), 0);
	assert_int_equal(
		request_check(REQUEST_VALUE_MEM_MIB, REQUEST_MEM_MIB_MAX + 1),
		-ERANGE);
	assert_int_equal(request_check(REQUEST_VALUE_IMAGE, 0), -ERANGE);
	assert_int_equal(request_check(REQUEST_VALUE_IMAGE, 1), 0);
	assert_int_equal(
		request_check(REQUEST_VALUE_IMAGE, REQUEST_IMAGE_LEN_MAX), 0);
	assert_int_equal(
		request_check(REQUEST_VALUE_IMAGE, REQUEST_IMAGE_LEN_MAX + 1),
		-ERANGE);
	assert_int_equal(request_check((enum request_value)99, 1), -EINVAL);
}

static void test_hugepages_parse(void **state)
{
	enum hugepages h = HUGEPAGES_NONE;

	(void)state;
	assert_int_equal(hugepages_parse("2m", &h), 0);
	assert_int_equal(h, HUGEPAGES_2M);
	assert_int_equal(hugepages_parse("1G", &h), 0);
	assert_int_equal(h, HUGEPAGES_1G);
	assert_int_equal(hugepages_parse("None", &h), 0);
	assert_int_equal(h, HUGEPAGES_NONE);
	assert_int_equal(hugepages_parse("4M", &h), -EINVAL);
	assert_int_equal(hugepages_parse("", &h), -EINVAL);
}

/* ---- the prolog: SPANK_VM_* as hostile input ---- */

static void test_prolog_bounds(void **state)
{
	char v[32];

	(void)state;
	snprintf(v, sizeof(v), "%llu", REQUEST_MEM_MIB_MAX);
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_MEM), v), 0);
	snprintf(v, sizeof(v), "%llu", REQUEST_MEM_MIB_MAX + 1);
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_MEM), v), -EINVAL);
	assert_non_null(strstr(last_error, "SPANK_VM_MEM='67108865' is not a "
					   "size in MiB from 64 to 67108864"));
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_MEM), "63"),
			 -EINVAL);
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_CPUS), "4096"), 0);
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_CPUS), "4097"),
			 -EINVAL);
	assert_non_null(strstr(last_error, "SPANK_VM_CPUS='4097' is not a "
					   "vCPU count from 1 to 4096"));
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_CPUS), "0"),
			 -EINVAL);
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_HUGEPAGES), "4M"),
			 -EINVAL);
	assert_non_null(strstr(last_error, "SPANK_VM_HUGEPAGES='4M' is not "
					   "none, 2M or 1G"));
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_IMAGE), ""),
			 -EINVAL);
	assert_non_null(strstr(last_error, "SPANK_VM_IMAGE is empty"));
}

/* ---- sbatch: the same bounds, said with the option's name ---- */

/* --vm-mem above what the prolog accepts was submitted and failed in the
 * prolog; now sbatch refuses it. */
static void test_sbatch_mem_above_the_prolog_cap(void **state)
{
	char v[32];

	(void)state;
	assert_int_equal(sbatch_option("vm-mem", "65T"), -1);
	assert_non_null(strstr(last_error, "--vm-mem=65T: expected a size of "
					   "at most 64T"));
	assert_int_equal(sbatch_option("vm-mem", "67108865M"), -1);
	assert_int_equal(sbatch_option("vm-mem", "99999999999T"), -1);
	/* The largest sbatch takes is what the prolog takes. */
	assert_int_equal(sbatch_option("vm-mem", "64T"), 0);
	assert_int_equal(vm_opts.mem_mib, REQUEST_MEM_MIB_MAX);
	snprintf(v, sizeof(v), "%" PRIu64, vm_opts.mem_mib);
	assert_int_equal(prolog_request(REQUEST_ENV(REQUEST_MEM), v), 0);
	/* The existing refusals keep their words. */
	assert_int_equal(sbatch_option("vm-mem", "5X"), -1);
	assert_non_null(strstr(last_error, "expected a size of at least 64M"));
	assert_int_equal(sbatch_option("vm-mem", "63M"), -1);
}

/* SLURM_VM_MEM, the user's default for --vm-mem, is held to the same. */
static void test_sbatch_mem_default_above_the_cap(void **state)
{
	(void)state;
	setenv(REQUEST_USER_ENV(REQUEST_MEM), "65T", 1);
	assert_int_equal(vm_options_apply_env_defaults(NULL), -EINVAL);
	unsetenv(REQUEST_USER_ENV(REQUEST_MEM));
	assert_non_null(strstr(last_error, "from SLURM_VM_MEM"));
}

static void test_sbatch_cpus_and_hugepages(void **state)
{
	(void)state;
	assert_int_equal(sbatch_option("vm-cpus", "4097"), -1);
	assert_non_null(strstr(last_error, "--vm-cpus=4097: expected a number "
					   "of vCPUs from 1 to 4096"));
	assert_int_equal(sbatch_option("vm-cpus", "0"), -1);
	assert_int_equal(sbatch_option("vm-cpus", "4096"), 0);
	assert_int_equal(sbatch_option("vm-hugepages", "4M"), -1);
	assert_non_null(strstr(last_error, "--vm-hugepages=4M: expected none, "
					   "2M or 1G"));
	assert_int_equal(sbatch_option("vm-hugepages", "2m"), 0);
	assert_string_equal(vm_opts.hugepages, "2m");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_bounds),
		cmocka_unit_test(test_hugepages_parse),
		cmocka_unit_test_setup_teardown(test_prolog_bounds, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_sbatch_mem_above_the_prolog_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_sbatch_mem_default_above_the_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sbatch_cpus_and_hugepages,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
