/* SPDX-License-Identifier: GPL-2.0-or-later */
/* PMIx across the guest channel (pmixenv.h): the port slurm-vm-exec may
 * connect to is only ever a 127.0.0.1 port the task's own environment
 * names, and the guest's task environment points at the guest listener
 * with the host-only settings replaced. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "channel/pmixenv.h"

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

/* A server's side of a connection: status 0, the client's index, then two
 * messages (16-byte header, body) as PMIx packs job data: key, NUL, type,
 * value. Cut anywhere into two pieces, the keys come out renamed and
 * nothing else changes; bytes outside bodies are never renamed. */
static size_t server_stream(uint8_t *buf, const char *body1, size_t len1,
			    const char *body2, size_t len2)
{
	uint32_t hdr[4] = { 0 };
	size_t n = 8;

	memset(buf, 0, 8);
	memcpy(buf + 4, "pmix", 4); /* the index: not a body */
	hdr[2] = htonl((uint32_t)len1);
	memcpy(buf + n, hdr, 16);
	memcpy(buf + n + 16, body1, len1);
	n += 16 + len1;
	hdr[2] = htonl((uint32_t)len2);
	memcpy(buf + n, hdr, 16);
	memcpy(buf + n + 16, body2, len2);
	return n + 16 + len2;
}

/* The stream of @body1 and @body2, cut anywhere into two pieces, comes
 * out as that of @want1 and @want2 (the same lengths), @renamed keys
 * renamed. */
static void assert_renamed(const char *body1, size_t len1, const char *body2,
			   size_t len2, const char *want1, const char *want2,
			   unsigned renamed)
{
	uint8_t in[512], want[512], out[512 + PMIXENV_HOST_KEY_MAX];
	size_t len = server_stream(in, body1, len1, body2, len2);

	server_stream(want, want1, len1, want2, len2);
	for (size_t cut = 0; cut <= len; cut++) {
		struct pmixenv_key_hider h = { 0 };
		size_t n;

		n = pmixenv_hide_host_keys(&h, in, cut, out);
		n += pmixenv_hide_host_keys(&h, in + cut, len - cut, out + n);
		assert_int_equal(n, len);
		assert_int_equal(h.renamed, renamed);
		assert_memory_equal(out, want, len);
	}
}

static void test_hide_topo(void **state)
{
	static const char body1[] =
		"ppmix.ltoppmix.ltopo\0\x03<?xml?>pmix.hwlocxml2\0\x03<t/>"
		"pmix.hwlocfile\0/dev/shm/x\0pmix.topo.xml\0pmix.topo.fi";
	static const char body2[] = "le\0pmix.hwlocxml1\0pmix.topo\0"
				    "pmix.toposig\0pmix.ltop\0pmix.ltopo";
	static const char want1[] =
		"ppmix.ltop_mix.ltopo\0\x03<?xml?>_mix.hwlocxml2\0\x03<t/>"
		"_mix.hwlocfile\0/dev/shm/x\0_mix.topo.xml\0pmix.topo.fi";
	static const char want2[] = "le\0_mix.hwlocxml1\0pmix.topo\0"
				    "pmix.toposig\0pmix.ltop\0_mix.ltopo";

	(void)state;
	assert_renamed(body1, sizeof(body1) - 1, body2, sizeof(body2) - 1,
		       want1, want2, 6);
}

/* The scratch directories Slurm 22.05's PMIx server names as job data
 * (PMIX_TMPDIR, PMIX_NSDIR, PMIX_TDIR_RMCLEAN) and a proc directory
 * (PMIX_PROCDIR), cut anywhere into two pieces: host paths no client in a
 * guest can make, hidden as the topology is. The server's and the
 * system's tmpdir keys are not the client's scratch: they stay. */
static void test_hide_scratch_dirs(void **state)
{
	static const char body1[] =
		"pmix.tmpdir\0\x03/var/spool/slurmd\0pmix.nsdir\0\x03"
		"/var/spool/slurmd/spmix_appdir_1000_7.0\0"
		"pmix.tdir.rmclean\0\x01\x01";
	static const char body2[] = "pmix.pdir\0\x03/x/0\0pmix.srvr.tmpdir\0"
				    "pmix.sys.tmpdir\0";
	static const char want1[] =
		"_mix.tmpdir\0\x03/var/spool/slurmd\0_mix.nsdir\0\x03"
		"/var/spool/slurmd/spmix_appdir_1000_7.0\0"
		"_mix.tdir.rmclean\0\x01\x01";
	static const char want2[] = "_mix.pdir\0\x03/x/0\0pmix.srvr.tmpdir\0"
				    "pmix.sys.tmpdir\0";

	(void)state;
	assert_renamed(body1, sizeof(body1) - 1, body2, sizeof(body2) - 1,
		       want1, want2, 4);
}

/* A refused client: after a status other than success nothing is
 * touched. */
static void test_hide_topo_refused(void **state)
{
	uint8_t in[32] = { 0, 0, 0, 1 }, out[32 + PMIXENV_HOST_KEY_MAX];
	struct pmixenv_key_hider h = { 0 };

	(void)state;
	memcpy(in + 4, "pmix.ltopo", 10);
	assert_int_equal(pmixenv_hide_host_keys(&h, in, sizeof(in), out),
			 sizeof(in));
	assert_memory_equal(out, in, sizeof(in));
}

/* A client's connect message as PMIx 4.2 builds it (ptl_base_fns.c), read
 * a byte at a time as it may arrive. */
static void test_client_ids(void **state)
{
	uint8_t msg[PMIXENV_HELLO_MAX] = { 0 }, *p = msg + 16;
	uint32_t size = htonl(8), uid = 1001, gid = 1002, u = 0, g = 0;
	size_t len;

	(void)state;
	memcpy(p, "native", 7);
	p += 7;
	memcpy(p, &size, 4);
	memcpy(p + 4, &uid, 4);
	memcpy(p + 8, &gid, 4);
	len = (size_t)(p + 12 - msg);
	for (size_t n = 0; n < len; n++)
		assert_int_equal(pmixenv_client_ids(msg, n, &u, &g), 0);
	assert_int_equal(pmixenv_client_ids(msg, len, &u, &g), 1);
	assert_int_equal(u, 1001);
	assert_int_equal(g, 1002);
	/* Another psec module, or a credential of another size. */
	memcpy(msg + 16, "munge", 6);
	assert_int_equal(pmixenv_client_ids(msg, len, &u, &g), -EINVAL);
	memcpy(msg + 16, "native", 7);
	size = htonl(4);
	memcpy(msg + 23, &size, 4);
	assert_int_equal(pmixenv_client_ids(msg, len, &u, &g), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_port),
		cmocka_unit_test(test_server_port_refused),
		cmocka_unit_test(test_guest_env),
		cmocka_unit_test(test_hide_topo),
		cmocka_unit_test(test_hide_scratch_dirs),
		cmocka_unit_test(test_hide_topo_refused),
		cmocka_unit_test(test_client_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
