/* SPDX-License-Identifier: GPL-2.0-or-later */
/* InfiniBand partitions per job (common/hw/ibpart.h): GUIDs and P_Keys,
 * the VF's sriov/<n>/ on a copy of the DGX fixture, ConnectX-3 refused,
 * records and the partitions.conf made of them. */
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

#include "hw/devices.h"
#include "core/fileutil.h"
#include "hw/ibpart.h"
#include "core/log.h"
#include "core/macro.h"

#define DGX	SRCDIR "/tests/fixtures/sysfs/dgx"
#define K40_CX3 SRCDIR "/tests/fixtures/sysfs/k40-cx3"

static char tmp[] = "/tmp/svm-ibpart.XXXXXX";

static int setup(void **state)
{
	char cmd[512];

	if (!mkdtemp(tmp))
		return -1;
	/* sysfs is written: a copy, links kept */
	snprintf(cmd, sizeof(cmd), "cp -a %s %s/sys && mkdir %s/rec", DGX, tmp,
		 tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_guids(void **state)
{
	char text[IBPART_GUID_TEXT];
	uint64_t g, back;

	g = ibpart_guid(0x0200, 1234, 1, 0, true);
	assert_true(g == 0x0200000134800041ull);
	assert_true(ibpart_guid(0x0200, 1234, 1, 0, false) == (g & ~1ull));
	/* every field apart: job, node, slot, node/port */
	assert_true(ibpart_guid(0x0200, 1235, 1, 0, true) != g);
	assert_true(ibpart_guid(0x0200, 1234, 2, 0, true) != g);
	assert_true(ibpart_guid(0x0200, 1234, 1, 1, true) != g);
	/* Slurm's largest job id and node index stay in their fields */
	g = ibpart_guid(0xffff, 0x3ffffff, 65535, 31, true);
	assert_true(g == 0xffffffffffffffffull);
	assert_true(ibpart_guid(0x0001, 0x3ffffff, 0, 0, false) >> 48 == 1);
	ibpart_guid_text(0x0200000134800041ull, text);
	assert_string_equal(text, "02:00:00:01:34:80:00:41");
	assert_int_equal(ibpart_guid_parse(text, &back), 0);
	assert_true(back == 0x0200000134800041ull);
	assert_int_equal(ibpart_guid_parse("02:00:00:00:4d:20:00", &back),
			 -EINVAL);
	assert_int_equal(ibpart_guid_parse("02:00:00:00:4d:20:00:41:", &back),
			 -EINVAL);
}

static void test_pkeys(void **state)
{
	assert_int_equal(ibpart_pkey(0x1000, 0x1000, 0x7ffe), 0x1000 + 0x1000);
	assert_int_equal(ibpart_pkey(0, 0x1000, 0x7ffe), 0x1000);
	assert_int_equal(ibpart_pkey(0x6fff, 0x1000, 0x7ffe), 0x1000);
	for (uint32_t j = 0; j < 100000; j += 7) {
		uint16_t k = ibpart_pkey(j, 0x0100, 0x01ff);

		assert_true(k >= 0x0100 && k <= 0x01ff);
	}
	assert_int_equal(ibpart_pkey(5, 0x0042, 0x0042), 0x0042);
}

/* A ConnectX-6 VF: its PF's sriov/<n> (virtfn order); set and back. */
static void test_vf_sysfs(void **state)
{
	char sys[256];
	_cleanup_free_ char *dir = NULL;
	struct pci_device vf;
	struct ibpart_vf_state old, now = { .policy = "Follow" }, got;

	snprintf(sys, sizeof(sys), "%s/sys", tmp);
	assert_int_equal(devices_read(sys, "0000:86:00.2", &vf), 0);
	assert_int_equal(ibpart_vf_dir(sys, &vf, &dir), 0);
	pci_device_clear(&vf);
	assert_non_null(strstr(dir, "/0000:86:00.0/sriov/1"));
	assert_int_equal(ibpart_vf_read(dir, &old), 0);
	assert_string_equal(old.node, "00:00:00:00:00:00:00:00");
	assert_string_equal(old.policy, "Down");
	ibpart_guid_text(ibpart_guid(0x0200, 77, 3, 1, false), now.node);
	ibpart_guid_text(ibpart_guid(0x0200, 77, 3, 1, true), now.port);
	assert_int_equal(ibpart_vf_write(dir, &now), 0);
	assert_int_equal(ibpart_vf_read(dir, &got), 0);
	assert_string_equal(got.port, now.port);
	assert_string_equal(got.policy, "Follow");
	assert_int_equal(ibpart_vf_write(dir, &old), 0);
	assert_int_equal(ibpart_vf_read(dir, &got), 0);
	assert_memory_equal(&got, &old, sizeof(got));
}

/* ConnectX-4, -5 and -6 VFs in InfiniBand mode: each its PF's sriov/0. */
static void test_connectx456(void **state)
{
	const char *vfs[][2] = { { "0000:b0:00.1", "0000:b0:00.0/sriov/0" },
				 { "0000:a0:00.1", "0000:a0:00.0/sriov/0" },
				 { "0000:06:00.1", "0000:06:00.0/sriov/0" } };

	for (size_t i = 0; i < ARRAY_SIZE(vfs); i++) {
		_cleanup_free_ char *dir = NULL;
		struct ibpart_vf_state st;
		struct pci_device vf;

		assert_int_equal(devices_read(DGX, vfs[i][0], &vf), 0);
		assert_int_equal(vf.kind, PCI_KIND_IB);
		assert_int_equal(ibpart_vf_dir(DGX, &vf, &dir), 0);
		assert_non_null(strstr(dir, vfs[i][1]));
		assert_int_equal(ibpart_vf_read(dir, &st), 0);
		pci_device_clear(&vf);
	}
}

/* ConnectX-3 (mlx4) has no sriov/<n>: refused, saying why. */
static void test_connectx3_refused(void **state)
{
	_cleanup_free_ char *dir = NULL;
	struct pci_device vf;

	assert_int_equal(devices_read(K40_CX3, "0000:83:00.1", &vf), 0);
	assert_int_equal(ibpart_vf_dir(K40_CX3, &vf, &dir), -EOPNOTSUPP);
	assert_non_null(strstr(log_last_error(), "ConnectX-4 or later"));
	assert_null(dir);
	pci_device_clear(&vf);
	/* not a VF at all */
	assert_int_equal(devices_read(K40_CX3, "0000:83:00.0", &vf), 0);
	assert_int_equal(ibpart_vf_dir(K40_CX3, &vf, &dir), -EINVAL);
	pci_device_clear(&vf);
}

static char *render(const uint32_t *running, size_t n,
		    struct ibpart_render_stats *st)
{
	char dir[256], *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	snprintf(dir, sizeof(dir), "%s/rec", tmp);
	assert_non_null(f);
	assert_int_equal(ibpart_render(f, "Default=0x7fff : ALL=full;", dir,
				       running, n, st),
			 0);
	fclose(f);
	return text;
}

static int record_running(uint32_t job, const char *node, uint16_t pkey,
			  const uint64_t *g, size_t n, const uint32_t *running,
			  size_t n_running)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%s/rec", tmp);
	return ibpart_record_write(dir, node, job, pkey, g, n, running,
				   n_running);
}

static void record(uint32_t job, const char *node, uint16_t pkey,
		   const uint64_t *g, size_t n)
{
	assert_int_equal(record_running(job, node, pkey, g, n, NULL, 0), 0);
}

/* A record file written by hand: as a prolog killed before its rename
 * leaves it (@suffix FILE_REPLACE_TMP_SUFFIX), or one that slipped past
 * the check (""). */
static void record_raw(uint32_t job, const char *node, const char *suffix,
		       uint16_t pkey, uint64_t guid)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/rec/job-%u.%s%s", tmp, job, node,
		 suffix);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "job %u\npkey 0x%04x\nguid 0x%016" PRIx64 "\n", job, pkey,
		guid);
	fclose(f);
}

static void test_records_render(void **state)
{
	const uint64_t a1[] = { 0x0200000004d20003ull, 0x0200000004d20005ull };
	const uint64_t a2[] = { 0x0200000004d20043ull };
	const uint64_t b[] = { 0x0200000000630003ull };
	const uint64_t c[] = { 0x0200000000640003ull };
	const uint32_t running[] = { 99, 1234 };
	struct ibpart_render_stats st;
	_cleanup_free_ char *all = NULL, *some = NULL, *clash = NULL;
	char path[300];

	record(1234, "n1", 0x14d2, a1, 2);
	record(1234, "n2", 0x14d2, a2, 1);
	record(99, "n1", 0x1063, b, 1);
	all = render(NULL, 0, &st);
	assert_int_equal(st.jobs, 2);
	assert_int_equal(st.stale, 0);
	assert_true(strncmp(all, "Default=0x7fff : ALL=full;\n", 27) == 0);
	/* job order, both nodes' VFs in one partition, each a line */
	assert_non_null(strstr(all, "slurmvm_job99=0x1063, ipoib :\n"
				    "\t0x0200000000630003=full;\n"
				    "Default=0x7fff :\n"
				    "\t0x0200000000630003=limited;\n"
				    "slurmvm_job1234=0x14d2, ipoib :\n"));
	assert_non_null(strstr(all, "\t0x0200000004d20005=full,\n"));
	assert_non_null(strstr(all, "\t0x0200000004d20043=limited;\n"));
	/* a job slurmctld no longer lists: its partition goes */
	some = render(running + 1, 1, &st);
	assert_int_equal(st.jobs, 1);
	assert_int_equal(st.stale, 1);
	assert_null(strstr(some, "job99"));
	/* ...but its VFs stay limited members of Default, never left full
	 * members through the base's ALL=full */
	assert_non_null(strstr(some, "Default=0x7fff :\n"
				     "\t0x0200000000630003=limited;\n"));
	/* a second running job on the same P_Key (its record written past
	 * the prolog's check, e.g. by two prologs at once): no partition,
	 * named, its VFs limited members of Default */
	record_raw(100, "n3", "", 0x1063, c[0]);
	clash = render(NULL, 0, &st);
	assert_int_equal(st.collisions, 1);
	assert_null(strstr(clash, "job100"));
	assert_non_null(strstr(log_last_error(), "jobs 99 and 100"));
	assert_non_null(strstr(clash, "Default=0x7fff :\n"
				      "\t0x0200000000640003=limited;\n"));
	/* half-written records and foreign files are not read */
	record_raw(5, "n1", FILE_REPLACE_TMP_SUFFIX, 0x1005,
		   0x0200000000140003ull);
	snprintf(path, sizeof(path), "%s/rec/README", tmp);
	fclose(fopen(path, "w"));
	free(render(NULL, 0, &st));
	assert_int_equal(st.jobs, 2);
}

/* The prolog of a job whose P_Key a running job's record holds is
 * refused, saying which job and what to do; the record of an ended job
 * does not count, nor does the job's own record of another node. */
static void test_pkey_clash_refused(void **state)
{
	const uint64_t a[] = { 0x0200000000c80003ull };
	const uint64_t b[] = { 0x0200000000c90003ull };
	const uint32_t running_both[] = { 200, 201 };
	const uint32_t running_201[] = { 201 };
	char path[300];

	assert_int_equal(record_running(200, "n1", 0x10c8, a, 1, NULL, 0), 0);
	assert_int_equal(record_running(200, "n2", 0x10c8, a, 1, NULL, 0), 0);
	assert_int_equal(
		record_running(201, "n3", 0x10c8, b, 1, running_both, 2),
		-EEXIST);
	assert_non_null(strstr(log_last_error(), "P_Key 0x10c8"));
	assert_non_null(strstr(log_last_error(), "running job 200"));
	assert_non_null(strstr(log_last_error(), "IbPKeyRange"));
	snprintf(path, sizeof(path), "%s/rec/job-201.n3", tmp);
	assert_int_equal(access(path, F_OK), -1);
	/* no other file either */
	snprintf(path, sizeof(path),
		 "%s/rec/job-201.n3" FILE_REPLACE_TMP_SUFFIX, tmp);
	assert_int_equal(access(path, F_OK), -1);
	/* job 200 ended: its record holds nothing */
	assert_int_equal(
		record_running(201, "n3", 0x10c8, b, 1, running_201, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guids),
		cmocka_unit_test(test_pkeys),
		cmocka_unit_test(test_vf_sysfs),
		cmocka_unit_test(test_connectx456),
		cmocka_unit_test(test_connectx3_refused),
		cmocka_unit_test(test_records_render),
		cmocka_unit_test(test_pkey_clash_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
