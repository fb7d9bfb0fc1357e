/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The guest's start (common/vm/hypervisor.h) on libvirt's test driver,
 * whose test:///default state every connection of the process shares:
 * guests are made paused here, as hv_create() starts them (the test driver
 * cannot create one paused). A guest whose qemu memory hard limit libvirt
 * refuses never runs. */
#include "config.h"

#include <libvirt/libvirt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vm/hypervisor.h"
#include "core/log.h"

/* A paused guest; @swap_kib: a swap hard limit, below which libvirt
 * refuses any memory hard limit (0: none). */
static void paused_guest(virConnectPtr conn, const char *name,
			 unsigned swap_kib)
{
	char xml[512], memtune[128] = "";
	virDomainPtr dom;

	if (swap_kib)
		snprintf(memtune, sizeof(memtune),
			 "<memtune><swap_hard_limit unit='KiB'>%u"
			 "</swap_hard_limit></memtune>",
			 swap_kib);
	snprintf(xml, sizeof(xml),
		 "<domain type='test'><name>%s</name>"
		 "<memory unit='MiB'>64</memory>%s"
		 "<os><type>hvm</type></os></domain>",
		 name, memtune);
	dom = virDomainCreateXML(conn, xml, 0);
	assert_non_null(dom);
	assert_int_equal(virDomainSuspend(dom), 0);
	virDomainFree(dom);
}

static void test_memory_limit_set_or_no_guest(void **state)
{
	virConnectPtr conn = virConnectOpen("test:///default");
	struct hypervisor *hv = NULL;
	const char *st;

	assert_non_null(conn);
	paused_guest(conn, "bounded", 0);
	paused_guest(conn, "unbounded", 1024);
	assert_int_equal(hv_open("test:///default", &hv), 0);
	assert_int_equal(hv_domain_state(hv, "unbounded", &st), 0);
	assert_string_equal(st, "paused");
	/* bounded: the guest runs */
	assert_int_equal(hv_resume_bounded(hv, "bounded", 128), 0);
	assert_int_equal(hv_domain_state(hv, "bounded", &st), 0);
	assert_string_equal(st, "running");
	/* the limit (128 MiB) refused: the paused guest is destroyed, and
	 * the reason names the guest and the limit */
	assert_int_equal(hv_resume_bounded(hv, "unbounded", 128), -EIO);
	assert_int_equal(hv_is_running(hv, "unbounded"), 0);
	assert_non_null(strstr(log_last_error(), "guest unbounded"));
	assert_non_null(strstr(log_last_error(), "128 MiB"));
	assert_int_equal(hv_destroy(hv, "bounded"), 0);
	hv_close(hv);
	virConnectClose(conn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_limit_set_or_no_guest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
