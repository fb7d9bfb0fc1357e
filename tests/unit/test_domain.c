/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Domain XML from plans: parsed back with libxml2 and checked by XPath.
 * libvirt's own checks run in tests/cluster/test_domain_xml.sh. */
#include "config.h"

#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hw/devices.h"
#include "vm/domain.h"
#include "core/log.h"
#include "core/strutil.h"
#include "hw/placement.h"

#define SANDY SRCDIR "/tests/fixtures/topology/32em64t-2n8c2t-pci-normalio.xml"
#define NODE  SRCDIR "/tests/fixtures/sysfs/node-gpu-ib"

struct ctx {
	struct topology *topo;
	struct pci_device dev[3];
	struct plan_device_request req[3];
	struct plan plan;
	xmlDocPtr doc;
	xmlXPathContextPtr xp;
	char *xml;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));
	const char *addrs[] = { "0000:41:00.0", "0000:42:00.0",
				"0000:81:00.1" };
	struct plan_request r = { .cpus = "8-11,24-27",
				  .mem_mib = 16384,
				  .mem_overhead_mib = 512,
				  .housekeeping = "0,16",
				  .require_locality = true,
				  .devices = c->req,
				  .n_devices = 3 };

	assert_int_equal(topology_load(SANDY, &c->topo), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(devices_read(NODE, addrs[i], &c->dev[i]), 0);
		c->req[i] = (struct plan_device_request){
			.dev = &c->dev[i],
			.gres = i < 2 ? "gpu" : "ibvf",
			.gres_index = i < 2 ? i : 0
		};
	}
	assert_int_equal(plan_compute(c->topo, &r, &c->plan), 0);
	*state = c;
	return 0;
}

static void reset(struct ctx *c)
{
	if (c->xp)
		xmlXPathFreeContext(c->xp);
	if (c->doc)
		xmlFreeDoc(c->doc);
	free(c->xml);
	c->xp = NULL;
	c->doc = NULL;
	c->xml = NULL;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	reset(c);
	plan_free(&c->plan);
	for (int i = 0; i < 3; i++)
		pci_device_clear(&c->dev[i]);
	topology_free(c->topo);
	free(c);
	return 0;
}

static void base_params(struct domain_params *p)
{
	*p = (struct domain_params){
		.name = "slurm-vm-42",
		.job_id = 42,
		.uid = 1000,
		.image = "/var/lib/slurm-vm/images/base.qcow2",
		.overlay = "/var/lib/slurm-vm/overlays/42.qcow2",
		.seed = "/run/slurm-vm/42/seed.iso",
		.console_log = "/run/slurm-vm/42/console.log",
		.channel_socket = "/run/slurm-vm/42/agent.sock",
		.domain_type = "kvm",
		.cpu_mode = "host-passthrough",
		.binding = DEVICE_BINDING_PREBOUND,
		.attach = DEVICE_ATTACH_VFIO,
	};
}

static void build(struct ctx *c, const struct domain_params *p)
{
	reset(c);
	assert_int_equal(domain_xml_build(&c->plan, p, &c->xml), 0);
	c->doc = xmlReadMemory(c->xml, strlen(c->xml), "domain.xml", NULL,
			       XML_PARSE_NONET);
	assert_non_null(c->doc);
	c->xp = xmlXPathNewContext(c->doc);
	xmlXPathRegisterNs(c->xp, BAD_CAST "svm", BAD_CAST DOMAIN_XMLNS);
	xmlXPathRegisterNs(c->xp, BAD_CAST "q",
			   BAD_CAST
			   "http://libvirt.org/schemas/domain/qemu/1.0");
}

static char *xstr(struct ctx *c, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, c->xp);
	xmlChar *s;
	char *r;

	assert_non_null(o);
	s = xmlXPathCastToString(o);
	r = strdup((char *)s);
	xmlFree(s);
	xmlXPathFreeObject(o);
	return r;
}

static void assert_xpath(struct ctx *c, const char *expr, const char *want)
{
	char *got = xstr(c, expr);

	if (strcmp(got, want) != 0)
		fail_msg("%s: got \"%s\", want \"%s\"\n%s", expr, got, want,
			 c->xml);
	free(got);
}

static void test_cpus_and_memory(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;

	base_params(&p);
	build(c, &p);
	assert_xpath(c, "/domain/@type", "kvm");
	assert_xpath(c, "count(/domain/features/tcg)", "0");
	assert_xpath(c, "/domain/name", "slurm-vm-42");
	assert_xpath(c, "/domain/vcpu", "8");
	assert_xpath(c, "count(/domain/cputune/vcpupin)", "8");
	assert_xpath(c, "/domain/cputune/vcpupin[@vcpu='1']/@cpuset", "24");
	assert_xpath(c, "/domain/cputune/emulatorpin/@cpuset", "0,16");
	assert_xpath(c, "/domain/cputune/iothreadpin/@cpuset", "0,16");
	assert_xpath(c, "/domain/cpu/@mode", "host-passthrough");
	assert_xpath(c, "/domain/cpu/topology/@threads", "2");
	assert_xpath(c, "/domain/cpu/topology/@cores", "4");
	assert_xpath(c, "/domain/cpu/numa/cell[@id='0']/@cpus", "0-7");
	assert_xpath(c, "/domain/cpu/numa/cell[@id='0']/@memory", "15872");
	assert_xpath(c, "/domain/memory", "15872");
	assert_xpath(c, "/domain/numatune/memnode[@cellid='0']/@nodeset", "1");
	assert_xpath(c, "/domain/numatune/memnode/@mode", "strict");
	assert_xpath(c, "/domain/os/type/@machine", "q35");
	assert_xpath(c, "count(/domain/memoryBacking)", "0");
	assert_xpath(c, "count(/domain/resource)", "0");
}

static void assert_libvirt_accepts(struct ctx *c, const char *what);

/* CgroupPartition=: libvirt's own element, checked by its schema too. */
static void test_partition(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;

	base_params(&p);
	p.partition = "/machine/slurmvm";
	build(c, &p);
	assert_xpath(c, "/domain/resource/partition", "/machine/slurmvm");
	assert_libvirt_accepts(c, "the resource partition");
}

static void test_hostdevs(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;

	base_params(&p);
	build(c, &p);
	assert_xpath(c, "count(//hostdev)", "3");
	assert_xpath(c, "count(//hostdev[@managed='no'])", "3");
	assert_xpath(c, "count(//hostdev/driver[@name='vfio'])", "3");
	assert_xpath(c, "//hostdev[1]/source/address/@bus", "0x41");
	assert_xpath(c, "//hostdev[3]/source/address/@function", "0x1");
	/* the expander in cell 0 (host node 1), a root port per device */
	assert_xpath(c, "//controller[@model='pcie-expander-bus']/target/node",
		     "0");
	assert_xpath(c, "count(//controller[@model='pcie-root-port'])", "3");
	assert_xpath(c, "//controller[@model='pcie-root-port'][1]/address/@bus",
		     "0x01");
	assert_xpath(c, "//hostdev[2]/address/@bus", "0x03");
	assert_xpath(c, "count(//rng)", "0");

	/* managed: the prolog detaches (journaled), libvirt never rebinds */
	p.binding = DEVICE_BINDING_MANAGED;
	build(c, &p);
	assert_xpath(c, "count(//hostdev[@managed='no'])", "3");
	assert_xpath(c, "count(//hostdev[@managed='yes'])", "0");
}

static void test_seclabel(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;

	base_params(&p);
	build(c, &p);
	assert_xpath(c, "count(/domain/seclabel)", "0");
	p.run_as_user = true;
	p.uid = 1234;
	p.gid = 567;
	build(c, &p);
	assert_xpath(c, "count(/domain/seclabel)", "1");
	assert_xpath(c, "/domain/seclabel/@type", "static");
	assert_xpath(c, "/domain/seclabel/@model", "dac");
	assert_xpath(c, "/domain/seclabel/@relabel", "no");
	assert_xpath(c, "/domain/seclabel/label", "+1234:+567");
}

static void test_emulate(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;

	base_params(&p);
	p.attach = DEVICE_ATTACH_EMULATE;
	p.domain_type = "qemu";
	p.cpu_mode = "maximum";
	build(c, &p);
	assert_xpath(c, "/domain/@type", "qemu");
	assert_xpath(c, "/domain/cpu/@mode", "maximum");
	assert_xpath(c, "/domain/features/tcg/tb-cache", "128");
	assert_xpath(c, "/domain/features/tcg/tb-cache/@unit", "MiB");
	assert_xpath(c, "count(//hostdev)", "0");
	assert_xpath(c, "count(//rng[@model='virtio'])", "3");
	assert_xpath(c, "//rng[2]/address/@bus", "0x03");
	assert_xpath(c, "//rng[1]/backend", "/dev/urandom");
	assert_xpath(c, "//svm:job/svm:device[1]/@attach", "emulate");
}

static void test_metadata(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;

	base_params(&p);
	build(c, &p);
	assert_xpath(c, "/domain/metadata/svm:job/@id", "42");
	assert_xpath(c, "/domain/metadata/svm:job/@uid", "1000");
	assert_xpath(c, "count(//svm:job/svm:device)", "3");
	assert_xpath(c, "//svm:job/svm:device[3]/@address", "0000:81:00.1");
	assert_xpath(c, "//svm:job/svm:device[3]/@kind", "ib");
	assert_xpath(c, "//svm:job/svm:device[3]/@gres", "ibvf");
	assert_xpath(c, "//svm:job/svm:device[2]/@index", "1");
	assert_xpath(c, "//svm:job/svm:device[2]/@iommu-group", "20");
}

static void test_disks_and_channel(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;

	base_params(&p);
	p.image = "/img/a&b<c>'\"d.qcow2";
	p.kernel = "/boot/vmlinuz";
	p.initrd = "/boot/initrd";
	p.cmdline = "console=ttyS0 x=<&>";
	p.emulator = "/usr/bin/qemu-system-x86_64";
	build(c, &p);
	assert_xpath(c, "//disk[target/@dev='vda']/source/@file",
		     "/var/lib/slurm-vm/overlays/42.qcow2");
	assert_xpath(c, "//disk[target/@dev='vda']/driver/@type", "qcow2");
	assert_xpath(c, "//disk[target/@dev='vda']/backingStore/source/@file",
		     "/img/a&b<c>'\"d.qcow2");
	assert_xpath(c, "//disk[target/@dev='vda']/backingStore/format/@type",
		     "qcow2");
	assert_xpath(c, "//disk[target/@dev='vdb']/driver/@type", "raw");
	assert_xpath(c, "//disk[target/@dev='vdb']/target/@bus", "virtio");
	assert_xpath(c, "count(//disk[target/@dev='vdb']/readonly)", "1");
	assert_xpath(c, "/domain/os/cmdline", "console=ttyS0 x=<&>");
	assert_xpath(c, "/domain/os/kernel", "/boot/vmlinuz");
	assert_xpath(c, "count(/domain/os/boot)", "0");
	assert_xpath(c, "/domain/devices/emulator",
		     "/usr/bin/qemu-system-x86_64");
	assert_xpath(c, "//channel/target/@name", DOMAIN_AGENT_CHANNEL);
	assert_xpath(c, "//channel/source/@path",
		     "/run/slurm-vm/42/agent.sock");
	assert_xpath(c, "//serial/log/@file", "/run/slurm-vm/42/console.log");

	/* no overlay: the image is read-only */
	p.overlay = NULL;
	p.image_format = "raw";
	build(c, &p);
	assert_xpath(c, "//disk[target/@dev='vda']/driver/@type", "raw");
	assert_xpath(c, "count(//disk[target/@dev='vda']/readonly)", "1");
}

/* Firmware=uefi: OVMF's code read-only, the job's own NVRAM, no secure
 * boot; the window size only when asked, maxphysaddr only where it exists. */
static void test_uefi(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	char *xml = NULL;

	base_params(&p);
	build(c, &p);
	assert_xpath(c, "count(/domain/os/loader)", "0");
	assert_xpath(c, "count(//q:commandline)", "0");

	p.uefi_code = "/usr/share/OVMF/OVMF_CODE_4M.fd";
	p.nvram = "/var/lib/slurm-vm/overlays/42.nvram.fd";
	build(c, &p);
	assert_xpath(c, "/domain/os/loader", "/usr/share/OVMF/OVMF_CODE_4M.fd");
	assert_xpath(c, "/domain/os/loader/@readonly", "yes");
	assert_xpath(c, "/domain/os/loader/@type", "pflash");
	assert_xpath(c, "/domain/os/loader/@secure", "no");
	assert_xpath(c, "/domain/os/nvram",
		     "/var/lib/slurm-vm/overlays/42.nvram.fd");
	assert_xpath(c, "/domain/cpu/maxphysaddr/@mode", "passthrough");
	assert_xpath(c, "count(//q:commandline)", "0");

	p.mmio64_gib = 256;
	build(c, &p);
	assert_xpath(c, "//q:commandline/q:arg[1]/@value", "-fw_cfg");
	assert_xpath(c, "//q:commandline/q:arg[2]/@value",
		     "name=opt/ovmf/X-PciMmio64Mb,string=262144");

	p.cpu_mode = "maximum"; /* TCG: no host address width to pass */
	build(c, &p);
	assert_xpath(c, "count(/domain/cpu/maxphysaddr)", "0");

	p.nvram = NULL;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	assert_null(xml);
}

/* libvirt's schema takes c->xml (virt-xml-validate, where installed). */
static void assert_libvirt_accepts(struct ctx *c, const char *what)
{
	char path[] = "/tmp/svm-domain-XXXXXX", cmd[256];
	int fd, rc;

	if (system("command -v virt-xml-validate >/dev/null 2>&1") != 0)
		return;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, c->xml, strlen(c->xml)),
			 (ssize_t)strlen(c->xml));
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "virt-xml-validate %s domain >/dev/null 2>&1", path);
	rc = system(cmd);
	unlink(path);
	if (rc != 0)
		fail_msg("virt-xml-validate refuses %s:\n%s", what, c->xml);
}

/* A three-file image under the overlay: every file is named with its own
 * format, in order, and the chain ends after the last. Before, only the top
 * was named and qemu read the rest of the disk as zeros. libvirt's schema
 * must accept it (virt-xml-validate, where installed). */
static void test_backing_chain(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	const struct domain_layer below[] = {
		{ "/img/mid.qcow2", "qcow2" },
		{ "/img/bottom.raw", "raw" },
	};
	const char *disk = "//disk[target/@dev='vda']";
	char expr[256];

	base_params(&p);
	p.image = "/img/top.qcow2";
	p.backing = below;
	p.n_backing = 2;
	build(c, &p);
	snprintf(expr, sizeof(expr), "%s/backingStore/source/@file", disk);
	assert_xpath(c, expr, "/img/top.qcow2");
	snprintf(expr, sizeof(expr), "%s/backingStore/format/@type", disk);
	assert_xpath(c, expr, "qcow2");
	snprintf(expr, sizeof(expr),
		 "%s/backingStore/backingStore/source/@file", disk);
	assert_xpath(c, expr, "/img/mid.qcow2");
	snprintf(expr, sizeof(expr),
		 "%s/backingStore/backingStore/format/@type", disk);
	assert_xpath(c, expr, "qcow2");
	snprintf(expr, sizeof(expr),
		 "%s/backingStore/backingStore/backingStore/source/@file",
		 disk);
	assert_xpath(c, expr, "/img/bottom.raw");
	snprintf(expr, sizeof(expr),
		 "%s/backingStore/backingStore/backingStore/format/@type",
		 disk);
	assert_xpath(c, expr, "raw");
	/* terminated: the innermost backingStore is empty */
	snprintf(expr, sizeof(expr),
		 "count(%s/backingStore/backingStore/backingStore/"
		 "backingStore/*)",
		 disk);
	assert_xpath(c, expr, "0");
	snprintf(expr, sizeof(expr),
		 "count(%s/backingStore/backingStore/backingStore/"
		 "backingStore)",
		 disk);
	assert_xpath(c, expr, "1");
	snprintf(expr, sizeof(expr), "count(%s//source)", disk);
	assert_xpath(c, expr, "4");

	assert_libvirt_accepts(c, "the chain");
}

/* libxml2 rewrites bytes that are not UTF-8, so qemu would open another
 * file: such a path is refused; UTF-8 text reaches qemu unchanged. */
static void test_path_encoding(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	const struct domain_layer bad[] = { { "/img/b\xe9se.raw", "raw" } };
	char *xml = NULL;

	base_params(&p);
	p.image = "/img/caf\xc3\xa9/\xe6\x97\xa5.qcow2";
	build(c, &p);
	/* written as character references, read back as the same bytes */
	assert_xpath(c, "//disk[target/@dev='vda']/backingStore/source/@file",
		     "/img/caf\xc3\xa9/\xe6\x97\xa5.qcow2");

	p.image = "/img/caf\xe9.qcow2"; /* Latin-1 */
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.image = "/img/\xc0\xaf.qcow2"; /* overlong '/' */
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.image = "/img/ok.qcow2";
	p.overlay = "/ov/\xff.qcow2";
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	base_params(&p);
	p.backing = bad;
	p.n_backing = 1;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	assert_null(xml);
}

/* JobNetwork=vxlan: the guest's NIC on the job's bridge, its tap named as
 * the job's nftables rules expect; none without it. */
static void test_job_network(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	char *xml = NULL;

	base_params(&p);
	build(c, &p);
	assert_xpath(c, "count(/domain/devices/interface)", "0");
	p.net_bridge = "svmb2a";
	p.net_tap = "svmt2a";
	p.net_mac = "02:53:00:00:00:02";
	build(c, &p);
	assert_xpath(c, "count(/domain/devices/interface)", "1");
	assert_xpath(c, "/domain/devices/interface/@type", "bridge");
	assert_xpath(c, "/domain/devices/interface/source/@bridge", "svmb2a");
	assert_xpath(c, "/domain/devices/interface/target/@dev", "svmt2a");
	assert_xpath(c, "/domain/devices/interface/mac/@address",
		     "02:53:00:00:00:02");
	assert_xpath(c, "/domain/devices/interface/model/@type", "virtio");
	p.net_tap = NULL;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.net_tap = "../x";
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	assert_null(xml);
}

/* The hot-plugged device's bus is controller @index (decimal). */
static void got_bus_is(struct ctx *c, const char *index)
{
	char *bus = xstr(c, "/*/address/@bus");

	assert_int_equal(strtoul(bus, NULL, 16), strtoul(index, NULL, 10));
	free(bus);
}

/* A warm start's template and restore (hotplug): the NIC and the devices
 * are left out, their ports stay, one more for the NIC; what is hot-plugged
 * later lands where a cold boot of the same plan puts it. */
static void test_hotplug(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	char *cold_rng[3], *nic_port, *got, **hot = NULL;

	base_params(&p);
	p.attach = DEVICE_ATTACH_EMULATE;
	p.net_bridge = "svmb2a";
	p.net_tap = "svmt2a";
	p.net_mac = "02:53:00:00:00:02";
	build(c, &p);
	for (int i = 0; i < 3; i++) {
		char expr[64];

		snprintf(expr, sizeof(expr), "//rng[%d]/address/@bus", i + 1);
		cold_rng[i] = xstr(c, expr);
	}
	assert_xpath(c, "count(/domain/genid)", "0");

	p.hotplug = true;
	p.genid = "";
	build(c, &p);
	assert_xpath(c, "count(//rng)", "0");
	assert_xpath(c, "count(//interface)", "0");
	assert_xpath(c, "count(//controller[@model='pcie-root-port'])", "4");
	assert_xpath(c, "count(/domain/genid)", "1");
	assert_xpath(c, "/domain/genid", "");
	nic_port = xstr(c, "//controller[@model='pcie-root-port']"
			   "[not(address)]/@index");
	/* nothing left for libvirt to place behind the empty ports */
	assert_xpath(c, "//disk[target/@dev='vda']/address/@bus", "0x00");
	assert_xpath(c, "//disk[target/@dev='vdb']/address/@bus", "0x00");
	assert_xpath(c, "//controller[@type='virtio-serial']/address/@slot",
		     "0x0a");
	assert_libvirt_accepts(c, "a warm template");

	p.genid = "4b2c1a6e-33a0-4c6b-9d0c-5f8e2d7a1b90";
	build(c, &p);
	assert_xpath(c, "/domain/genid", p.genid);

	assert_int_equal(domain_hotplug_xmls(&c->plan, &p, &hot), 0);
	for (int i = 0; i < 4; i++) {
		assert_non_null(hot[i]);
		reset(c);
		c->xml = strdup(hot[i]);
		c->doc = xmlReadMemory(c->xml, strlen(c->xml), "dev.xml", NULL,
				       XML_PARSE_NONET);
		assert_non_null(c->doc);
		c->xp = xmlXPathNewContext(c->doc);
		got = xstr(c, "/*/address/@bus");
		if (i == 0) {
			assert_xpath(c, "/interface/mac/@address",
				     "02:53:00:00:00:02");
			assert_xpath(c, "/interface/target/@dev", "svmt2a");
			assert_int_equal(strtoul(got, NULL, 16),
					 strtoul(nic_port, NULL, 10));
		} else {
			assert_xpath(c, "name(/*)", "rng");
			assert_string_equal(got, cold_rng[i - 1]);
		}
		free(got);
	}
	assert_null(hot[4]);
	strv_free(hot);
	free(nic_port);
	for (int i = 0; i < 3; i++)
		free(cold_rng[i]);
}

/* virtiofs cannot be saved: a hotplug guest keeps its shared memory and
 * the shares' ports, and gets each share live after the NIC and devices. */
static void test_hotplug_virtiofs(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	char *const shares[] = { "/home", "/scratch", NULL };
	char *const sockets[] = { "/run/svm/42/sock/virtiofsd-0.sock",
				  "/run/svm/42/sock/virtiofsd-1.sock", NULL };
	char **hot = NULL, *port;

	base_params(&p);
	p.attach = DEVICE_ATTACH_EMULATE;
	p.hotplug = true;
	p.shares = shares;
	p.n_shares = 2;
	p.share_transport = SHARED_DIR_VIRTIOFS;
	build(c, &p); /* the template: no virtiofsd yet */
	assert_xpath(c, "count(//filesystem)", "0");
	assert_xpath(c, "/domain/memoryBacking/source/@type", "memfd");
	assert_xpath(c, "count(//controller[@model='pcie-root-port'])", "5");
	port = xstr(c, "//controller[@model='pcie-root-port'][not(address)]"
		       "[last()]/@index");
	assert_int_equal(domain_hotplug_xmls(&c->plan, &p, &hot), -EINVAL);
	p.share_sockets = sockets;
	assert_int_equal(domain_hotplug_xmls(&c->plan, &p, &hot), 0);
	assert_non_null(hot[4]);
	assert_null(hot[5]);
	reset(c);
	c->xml = strdup(hot[4]);
	c->doc = xmlReadMemory(c->xml, strlen(c->xml), "fs.xml", NULL,
			       XML_PARSE_NONET);
	c->xp = xmlXPathNewContext(c->doc);
	assert_xpath(c, "/filesystem/driver/@type", "virtiofs");
	assert_xpath(c, "/filesystem/source/@socket", sockets[1]);
	assert_xpath(c, "/filesystem/target/@dir", "svmshare1");
	got_bus_is(c, port);
	strv_free(hot);
	free(port);
}

/* Share @i's filesystem element: XPath @rel below it is @want. */
static void assert_share(struct ctx *c, unsigned i, const char *rel,
			 const char *want)
{
	char expr[128];

	snprintf(expr, sizeof(expr), "/domain/devices/filesystem[%u]/%s", i + 1,
		 rel);
	assert_xpath(c, expr, want);
}

/* SharedDirs=: one 9p filesystem per share, served by qemu with its own
 * (the job user's) rights, tagged by index; none without shares. */
static void test_shares(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	char *const shares[] = { "/home", "/scratch/proj" };
	char *const bad[] = { "/home", "relative" };
	char *const latin1[] = { "/caf\xe9" };
	char *xml = NULL;

	base_params(&p);
	p.run_as_user = true;
	build(c, &p);
	assert_xpath(c, "count(/domain/devices/filesystem)", "0");
	p.shares = shares;
	p.n_shares = 2;
	build(c, &p);
	assert_xpath(c, "count(/domain/devices/filesystem)", "2");
	for (unsigned i = 0; i < 2; i++) {
		char want[32];

		snprintf(want, sizeof(want), SHARED_DIR_TAG_FMT, i);
		assert_share(c, i, "@type", "mount");
		assert_share(c, i, "@accessmode", "squash");
		assert_share(c, i, "@multidevs", "remap");
		assert_share(c, i, "source/@dir", shares[i]);
		assert_share(c, i, "target/@dir", want);
	}
	/* qemu, which serves them, runs as the job user */
	assert_xpath(c, "/domain/seclabel/label", "+1000:+0");
	assert_libvirt_accepts(c, "the shares");
	/* a warm template's, in root's qemu: a guest's modes and owners are
	 * xattrs there, so it cannot plant a set-uid root file on the host */
	p.shares_mapped = true;
	build(c, &p);
	for (unsigned i = 0; i < 2; i++) {
		assert_share(c, i, "@accessmode", "mapped");
		assert_share(c, i, "source/@dir", shares[i]);
	}
	assert_libvirt_accepts(c, "a warm template's shares");
	p.shares_mapped = false;

	p.shares = bad;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.shares = latin1;
	p.n_shares = 1;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.shares = NULL;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.shares = shares;
	p.n_shares = SHARED_DIRS_MAX + 1;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	assert_null(xml);
}

/* SharedDirTransport=virtiofs: one virtiofs filesystem per share on the
 * socket of the virtiofsd the prolog started, tagged as over 9p; no
 * <readonly/> and no squash (virtiofsd, as the job user, decides); the
 * guest's memory shared with virtiofsd (memfd, shared access, every NUMA
 * cell shared). */
static void test_shares_virtiofs(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	char *const shares[] = { "/home", "/scratch/proj" };
	char *const sockets[] = { "/run/slurm-vm/job-42.0/share0.sock",
				  "/run/slurm-vm/job-42.0/share1.sock" };
	char *const relative[] = { "/run/x.sock", "x.sock" };
	char expr[128];
	char *xml = NULL;

	base_params(&p);
	p.run_as_user = true;
	p.shares = shares;
	p.n_shares = 2;
	p.share_transport = SHARED_DIR_VIRTIOFS;
	p.share_sockets = sockets;
	build(c, &p);
	assert_xpath(c, "count(/domain/devices/filesystem)", "2");
	for (unsigned i = 0; i < 2; i++) {
		char want[32];

		snprintf(want, sizeof(want), SHARED_DIR_TAG_FMT, i);
		assert_share(c, i, "@type", "mount");
		assert_share(c, i, "driver/@type", "virtiofs");
		assert_share(c, i, "driver/@queue", "1024");
		assert_share(c, i, "source/@socket", sockets[i]);
		assert_share(c, i, "target/@dir", want);
	}
	assert_xpath(c, "count(//filesystem/readonly)", "0");
	assert_xpath(c, "count(//filesystem/@accessmode)", "0");
	assert_xpath(c, "count(//filesystem/source/@dir)", "0");
	assert_xpath(c, "/domain/memoryBacking/source/@type", "memfd");
	assert_xpath(c, "/domain/memoryBacking/access/@mode", "shared");
	snprintf(expr, sizeof(expr), "%u", c->plan.n_cells);
	assert_xpath(c, "count(/domain/cpu/numa/cell[@memAccess='shared'])",
		     expr);
	assert_libvirt_accepts(c, "the virtiofs shares");

	/* 9p shares and no shares: the guest's memory stays private */
	p.share_transport = SHARED_DIR_9P;
	build(c, &p);
	assert_xpath(c, "count(/domain/memoryBacking)", "0");
	assert_xpath(c, "count(//cell/@memAccess)", "0");
	p.share_transport = SHARED_DIR_VIRTIOFS;
	p.n_shares = 0;
	build(c, &p);
	assert_xpath(c, "count(/domain/memoryBacking)", "0");

	/* each share needs its socket, an absolute path */
	p.n_shares = 2;
	p.share_sockets = NULL;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.share_sockets = relative;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.share_sockets = sockets;
	p.share_transport = SHARED_DIR_AUTO; /* resolved before, never here */
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	assert_null(xml);
}

static void test_bad_params(void **state)
{
	struct ctx *c = *state;
	struct domain_params p;
	struct plan empty = { 0 };
	char *xml = NULL;

	base_params(&p);
	p.name = "../x";
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	p.name = NULL;
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	base_params(&p);
	p.domain_type = "xen";
	assert_int_equal(domain_xml_build(&c->plan, &p, &xml), -EINVAL);
	base_params(&p);
	assert_int_equal(domain_xml_build(&empty, &p, &xml), -EINVAL);
	assert_null(xml);
}

static void test_hugepages(void **state)
{
	struct topology *t = NULL;
	struct plan plan;
	struct plan_request r = { .cpus = "0-1,4-5",
				  .mem_mib = 8192,
				  .hugepage_kib = 2048 };
	struct domain_params p;
	struct ctx c = { 0 };
	char *const shares[] = { "/home" };
	char *const sockets[] = { "/run/slurm-vm/job-42.0/share0.sock" };

	assert_int_equal(
		topology_load(SRCDIR
			      "/tests/fixtures/topology/synthetic-2x4.xml",
			      &t),
		0);
	assert_int_equal(plan_compute(t, &r, &plan), 0);
	base_params(&p);
	c.plan = plan;
	build(&c, &p);
	assert_xpath(&c, "//memoryBacking/hugepages/page/@size", "2048");
	assert_xpath(&c, "//memoryBacking/hugepages/page/@nodeset", "0-1");
	assert_xpath(&c, "count(//memoryBacking/access)", "0");
	assert_xpath(&c, "count(/domain/cpu/numa/cell)", "2");
	assert_xpath(&c, "/domain/numatune/memory/@nodeset", "0,1");
	assert_xpath(&c, "/domain/cpu/topology/@sockets", "2");
	/* synthetic topologies have no distances */
	assert_xpath(&c, "count(//distances)", "0");
	reset(&c);
	/* virtiofs shares: the huge pages shared with virtiofsd, no memfd */
	p.shares = shares;
	p.n_shares = 1;
	p.share_transport = SHARED_DIR_VIRTIOFS;
	p.share_sockets = sockets;
	build(&c, &p);
	assert_xpath(&c, "//memoryBacking/hugepages/page/@size", "2048");
	assert_xpath(&c, "//memoryBacking/access/@mode", "shared");
	assert_xpath(&c, "count(//memoryBacking/source)", "0");
	assert_xpath(&c, "count(/domain/cpu/numa/cell[@memAccess='shared'])",
		     "2");
	assert_libvirt_accepts(&c, "virtiofs over huge pages");
	reset(&c);
	plan_free(&plan);
	topology_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpus_and_memory),
		cmocka_unit_test(test_partition),
		cmocka_unit_test(test_hostdevs),
		cmocka_unit_test(test_seclabel),
		cmocka_unit_test(test_emulate),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_disks_and_channel),
		cmocka_unit_test(test_uefi),
		cmocka_unit_test(test_backing_chain),
		cmocka_unit_test(test_path_encoding),
		cmocka_unit_test(test_job_network),
		cmocka_unit_test(test_hotplug),
		cmocka_unit_test(test_hotplug_virtiofs),
		cmocka_unit_test(test_shares),
		cmocka_unit_test(test_shares_virtiofs),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_hugepages),
	};

	log_open("test_domain");
	log_set_level(LOG_LEVEL_ERROR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
