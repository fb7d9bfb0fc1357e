/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Device inventory over the sysfs fixtures (tests/fixtures/mksysfs.py). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hw/devices.h"
#include "core/log.h"

#define NODE SRCDIR "/tests/fixtures/sysfs/node-gpu-ib"
#define BAD  SRCDIR "/tests/fixtures/sysfs/bad"

static char last_error[2048];

static void capture_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR)
		snprintf(last_error, sizeof(last_error), "%s", msg);
}

static void test_addr(void **state)
{
	char a[PCI_ADDR_MAX];

	assert_int_equal(pci_addr_canonical("3b:00.0", a), 0);
	assert_string_equal(a, "0000:3b:00.0");
	assert_int_equal(pci_addr_canonical("0000:AF:1f.7", a), 0);
	assert_string_equal(a, "0000:af:1f.7");
	assert_int_equal(pci_addr_canonical("0000:3b:00.8", a), -EINVAL);
	assert_int_equal(pci_addr_canonical("0000:3b:20.0", a), -EINVAL);
	assert_int_equal(pci_addr_canonical("3b:00.0 ", a), -EINVAL);
	assert_int_equal(pci_addr_canonical("../../etc", a), -EINVAL);
	assert_int_equal(pci_addr_canonical("", a), -EINVAL);
	assert_int_equal(pci_addr_canonical("+3b:00.0", a), -EINVAL);
	assert_true(pci_addr_cmp("0000:01:00.0", "0000:81:00.0") < 0);
}

static void test_classify(void **state)
{
	assert_int_equal(pci_classify(0x10de, 0x030200), PCI_KIND_GPU);
	assert_int_equal(pci_classify(0x1002, 0x030000), PCI_KIND_GPU);
	assert_int_equal(pci_classify(0x15b3, 0x0c0600), PCI_KIND_IB);
	assert_int_equal(pci_classify(0x15b3, 0x020700), PCI_KIND_IB);
	assert_int_equal(pci_classify(0x15b3, 0x020000), PCI_KIND_ROCE);
	assert_int_equal(pci_classify(0x8086, 0x020000), PCI_KIND_OTHER);
	assert_int_equal(pci_classify(0x8086, 0x0c0600), PCI_KIND_OTHER);
	assert_int_equal(pci_classify(0x15b3, 0x010802), PCI_KIND_OTHER);
}

static void test_scan(void **state)
{
	struct device_list l;
	const char *want[] = { "0000:01:00.0", "0000:02:00.0", "0000:41:00.0",
			       "0000:42:00.0", "0000:81:00.0", "0000:81:00.1",
			       "0000:81:00.2", "0000:81:00.3", "0000:81:00.4",
			       "0000:c1:00.0", "0000:c1:00.1", "0000:c1:00.2",
			       "0000:e1:00.0", "0000:e1:00.1" };

	assert_int_equal(devices_scan(NODE, &l), 0);
	assert_int_equal(l.n, ARRAY_SIZE(want));
	for (size_t i = 0; i < l.n; i++)
		assert_string_equal(l.v[i].addr, want[i]);
	assert_null(devices_find(&l, "0000:03:00.0")); /* Intel NIC */
	assert_non_null(devices_find(&l, "e1:00.1"));
	device_list_free(&l);
}

static void test_gpu_with_audio(void **state)
{
	struct pci_device d;
	char path[32];

	assert_int_equal(devices_read(NODE, "0000:01:00.0", &d), 0);
	assert_int_equal(d.kind, PCI_KIND_GPU);
	assert_int_equal(d.vendor, 0x10de);
	assert_int_equal(d.device, 0x20b0);
	assert_int_equal(d.class, 0x030200);
	assert_int_equal(d.numa_node, 0);
	assert_int_equal(d.iommu_group, 10);
	assert_string_equal(d.driver, "vfio-pci");
	assert_false(d.is_vf);
	assert_null(d.rdma_dev);
	assert_int_equal(d.n_group, 2);
	assert_string_equal(d.group[0].addr, "0000:01:00.0");
	assert_string_equal(d.group[1].addr, "0000:01:00.1");
	assert_int_equal(d.group[1].class, 0x040300);
	assert_int_equal(devices_vfio_path(&d, path, sizeof(path)), 0);
	assert_string_equal(path, "/dev/vfio/10");
	pci_device_clear(&d);
}

static void test_shared_group(void **state)
{
	struct pci_device d;

	assert_int_equal(devices_read(NODE, "41:00.0", &d), 0);
	assert_int_equal(d.iommu_group, 20);
	assert_int_equal(d.numa_node, 1);
	assert_int_equal(d.n_group, 3); /* bridge + two GPUs */
	assert_string_equal(d.group[0].addr, "0000:40:01.0");
	assert_int_equal(d.group[0].class, 0x060400);
	assert_string_equal(d.group[2].addr, "0000:42:00.0");
	pci_device_clear(&d);
}

static void test_pf_and_vfs(void **state)
{
	struct pci_device pf, vf, vf3, vf4;

	assert_int_equal(devices_read(NODE, "0000:81:00.0", &pf), 0);
	assert_int_equal(pf.kind, PCI_KIND_IB);
	assert_false(pf.is_vf);
	assert_int_equal(pf.num_vfs, 4);
	assert_string_equal(pf.rdma_dev, "mlx5_0");
	assert_string_equal(pf.driver, "mlx5_core");

	/* bound to vfio-pci: no RDMA device of its own, the PF's */
	assert_int_equal(devices_read(NODE, "0000:81:00.1", &vf), 0);
	assert_true(vf.is_vf);
	assert_string_equal(vf.physfn, "0000:81:00.0");
	assert_string_equal(vf.rdma_dev, "mlx5_0");
	assert_int_equal(vf.iommu_group, 31);
	assert_int_equal(vf.n_group, 1);
	assert_true(vf.group[0].is_vf);

	assert_int_equal(devices_read(NODE, "0000:81:00.3", &vf3), 0);
	assert_string_equal(vf3.rdma_dev, "mlx5_3"); /* its own, mlx5_core */
	assert_int_equal(devices_read(NODE, "0000:81:00.4", &vf4), 0);
	assert_null(vf4.driver);
	pci_device_clear(&pf);
	pci_device_clear(&vf);
	pci_device_clear(&vf3);
	pci_device_clear(&vf4);
}

static void test_connectx3_and_roce(void **state)
{
	struct pci_device cx3, vf, roce;

	assert_int_equal(devices_read(NODE, "0000:c1:00.0", &cx3), 0);
	assert_int_equal(cx3.kind, PCI_KIND_IB);
	assert_int_equal(cx3.class, 0x0c0600);
	assert_int_equal(cx3.numa_node, -1); /* no numa_node file */
	assert_int_equal(devices_read(NODE, "0000:c1:00.2", &vf), 0);
	assert_int_equal(vf.n_group, 2);
	assert_string_equal(vf.rdma_dev, "mlx4_0");
	assert_int_equal(devices_read(NODE, "0000:e1:00.1", &roce), 0);
	assert_int_equal(roce.kind, PCI_KIND_ROCE);
	assert_true(roce.is_vf);
	assert_string_equal(roce.rdma_dev, "mlx5_4");
	pci_device_clear(&cx3);
	pci_device_clear(&vf);
	pci_device_clear(&roce);
}

static void test_numa_minus_one(void **state)
{
	struct pci_device d;

	assert_int_equal(devices_read(NODE, "0000:03:00.0", &d), 0);
	assert_int_equal(d.numa_node, -1);
	assert_int_equal(d.kind, PCI_KIND_OTHER);
	pci_device_clear(&d);
}

static void test_no_iommu(void **state)
{
	struct pci_device d;
	char path[32];

	assert_int_equal(devices_read(SRCDIR "/tests/fixtures/sysfs/no-iommu",
				      "0000:86:00.0", &d),
			 0);
	assert_int_equal(d.iommu_group, -1);
	assert_int_equal(d.n_group, 0);
	assert_int_equal(devices_vfio_path(&d, path, sizeof(path)), -ENODEV);
	pci_device_clear(&d);
}

struct bad_case {
	const char *addr;
	const char *msg;
};

static void test_bad_sysfs(void **state)
{
	static const struct bad_case cases[] = {
		{ "0000:01:00.0", "is not a NUMA node number" },
		{ "0000:02:00.0", "is not a hex number" },
		{ "0000:03:00.0", "vendor: cannot read" },
		{ "0000:04:00.0", "iommu_group" },
		{ "0000:05:00.0", "is not a NUMA node number" },
		{ "0000:06:00.0", "is not a hex number up to 0xffff" },
		{ "0000:07:00.0", "PCI device 0000:07:00.0" },
		{ "07:00.0/..", "is not a PCI address" },
	};
	struct device_list l;
	struct pci_device d;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		last_error[0] = '\0';
		assert_true(devices_read(BAD, cases[i].addr, &d) < 0);
		assert_non_null(strstr(last_error, cases[i].msg));
		assert_null(d.group);
		assert_null(d.driver);
	}
	assert_true(devices_scan(BAD, &l) < 0);
	assert_null(l.v);
	assert_true(devices_scan("/nonexistent", &l) < 0);
	assert_non_null(strstr(last_error, "SysfsRoot"));
}

static void test_read_group(void **state)
{
	struct device_list l;

	/* GPU + its audio: the GPU only, the planner adds the audio */
	assert_int_equal(devices_read_group(NODE, 10, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0].addr, "0000:01:00.0");
	device_list_free(&l);
	/* two GPUs behind a bridge: both, not the bridge */
	assert_int_equal(devices_read_group(NODE, 20, &l), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[1].addr, "0000:42:00.0");
	device_list_free(&l);
	assert_int_equal(devices_read_group(NODE, 41, &l), 0);
	assert_int_equal(l.n, 2);
	assert_true(l.v[0].is_vf && l.v[1].is_vf);
	device_list_free(&l);
	/* a bridge alone */
	assert_int_equal(devices_read_group(NODE, 1, &l), -ENODEV);
	assert_int_equal(devices_read_group(NODE, 99, &l), -ENOENT);
	assert_null(l.v);
	assert_int_equal(devices_read_group(NODE, -1, &l), -EINVAL);
}

static void test_gres_type(void **state)
{
	struct pci_device d = { .vendor = 0x10de, .device = 0x20b0 };
	char *t = devices_gres_type(&d);
	char *m;

	/* "GA100 [A100 SXM4 40GB]" in pci.ids; a bare id without it */
	assert_non_null(t);
	for (const char *p = t; *p; p++)
		assert_true((*p >= 'a' && *p <= 'z') ||
			    (*p >= '0' && *p <= '9') || *p == '_');
	assert_true(strlen(t) > 0 && strlen(t) <= 32);
	free(t);
	d.vendor = 0xfffe;
	d.device = 0x1234;
	m = devices_model_name(&d);
	assert_string_equal(m, "fffe:1234");
	free(m);
	t = devices_gres_type(&d);
	assert_string_equal(t, "fffe_1234");
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_gpu_with_audio),
		cmocka_unit_test(test_shared_group),
		cmocka_unit_test(test_pf_and_vfs),
		cmocka_unit_test(test_connectx3_and_roce),
		cmocka_unit_test(test_numa_minus_one),
		cmocka_unit_test(test_no_iommu),
		cmocka_unit_test(test_bad_sysfs),
		cmocka_unit_test(test_read_group),
		cmocka_unit_test(test_gres_type),
	};

	log_open("test_devices");
	log_set_sink(capture_sink);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
