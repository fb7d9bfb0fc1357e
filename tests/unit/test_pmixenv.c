/* SPDX-License-Identifier: GPL-2.0-or-later */
/* PMIx across the guest channel (pmixenv.h): the port slurm-vm-exec may
 * connect to is only ever a 127.0.0.1 port the task's own environment
 * names, and the guest's task environment points at the guest listener
 * with the host-only settings replaced. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pmixenv.h"

#define URI(name, port) name "=slurm.pmix.7.0.1;tcp4://127.0.0.1:" port

static void test_server_port(void **state)
{
	char *env[] = { "PATH=/bin",
			URI("PMIX_SERVER_URI4", "40123"),
			URI("PMIX_SERVER_URI2", "40123"),
			URI("PMIX_SERVER_URI21", "40123"),
			"PMIX_RANK=1",
			NULL };
	uint16_t port = 0;

	(void)state;
	assert_int_equal(pmixenv_server_port(env, &port), 0);
	assert_int_equal(port, 40123);
}

static void test_server_port_refused(void **state)
{
	static const char *const bad[] = {
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://10.0.0.1:40123",
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://127.0.0.10:40123",
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp6://[::1]:40123",
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://127.0.0.1:0",
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://127.0.0.1:65536",
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://127.0.0.1:22x",
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://127.0.0.1:",
		"PMIX_SERVER_URI4=slurm.pmix.7.0.1;tcp4://127.0.0.1:+22",
		"PMIX_SERVER_URI4=a;b;tcp4://127.0.0.1:22",
		"PMIX_SERVER_URI4=;tcp4://127.0.0.1:22",
		"PMIX_SERVER_URI4=usock:/tmp/x",
	};
	uint16_t port = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *env[] = { (char *)bad[i], NULL };

		assert_int_equal(pmixenv_server_port(env, &port), -EINVAL);
	}
	/* Two servers: which one would be ours? */
	char *two[] = { URI("PMIX_SERVER_URI4", "40123"),
			URI("PMIX_SERVER_URI3", "40124"), NULL };
	assert_int_equal(pmixenv_server_port(two, &port), -EINVAL);
	char *none[] = { "PMIX_RANK=0", "PMIX_SERVER_URIX", NULL };
	assert_int_equal(pmixenv_server_port(none, &port), -ENOENT);
	assert_int_equal(port, 7);
}

static const char *find(char **out, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; out[i]; i++)
		if (strncmp(out[i], name, n) == 0 && out[i][n] == '=')
			return out[i] + n + 1;
	return NULL;
}

static void test_guest_env(void **state)
{
	char *env[] = { URI("PMIX_SERVER_URI4", "40123"),
			URI("PMIX_SERVER_URI21", "40123"),
			"PMIX_GDS_MODULE=ds21,ds12,hash",
			"PMIX_SECURITY_MODE=munge,native",
			"PMIX_HWLOC_SHMEM_FILE=/var/spool/slurmd/hwloc",
			"PMIX_NAMESPACE=slurm.pmix.7.0",
			"PMIX_RANK=1",
			NULL };
	char *out[PMIXENV_MAX + 1];
	int n;

	(void)state;
	n = pmixenv_guest(env, 34567, out);
	assert_int_equal(n, 6);
	assert_string_equal(find(out, "PMIX_SERVER_URI4"),
			    "slurm.pmix.7.0.1;tcp4://127.0.0.1:34567");
	assert_string_equal(find(out, "PMIX_SERVER_URI21"),
			    "slurm.pmix.7.0.1;tcp4://127.0.0.1:34567");
	assert_string_equal(find(out, "PMIX_GDS_MODULE"), "hash");
	assert_string_equal(find(out, "PMIX_MCA_gds"), "hash");
	assert_string_equal(find(out, "PMIX_SECURITY_MODE"), "native");
	assert_string_equal(find(out, "PMIX_MCA_psec"), "native");
	assert_null(out[n]);
	/* What is replaced or host-only goes; the job's identity stays. */
	for (size_t i = 0; i < 5; i++)
		assert_true(pmixenv_consumed(env[i]));
	assert_false(pmixenv_consumed("PMIX_NAMESPACE=slurm.pmix.7.0"));
	assert_false(pmixenv_consumed("PMIX_RANK=1"));
	assert_false(pmixenv_consumed("PATH=/bin"));
	pmixenv_free(out);
	assert_null(out[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_port),
		cmocka_unit_test(test_server_port_refused),
		cmocka_unit_test(test_guest_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
