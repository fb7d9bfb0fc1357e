/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Image validation against real qemu-img files and hand-made hostile ones. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "job/image.h"
#include "core/log.h"
#include "core/strutil.h"
#include "job/vmconf.h"

static char errors[8192];
static char dir[256], images[300], outside[300], catalog[300];

static void capture_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR) {
		strncat(errors, msg, sizeof(errors) - strlen(errors) - 2);
		strcat(errors, "\n");
	}
}

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static void write_bytes(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
}

static void write_text(const char *path, const char *text)
{
	write_bytes(path, text, strlen(text));
}

/* qemu-img >= 6.1 insists on a backing format: older images lack one. Turn
 * the backing-format extension into an unknown one, as such an image reads. */
static void drop_backing_format(const char *path)
{
	uint8_t h[4096];
	FILE *f = fopen(path, "r+");

	assert_non_null(f);
	assert_int_equal(fread(h, 1, sizeof(h), f), sizeof(h));
	for (size_t i = 104; i + 4 < sizeof(h); i += 8) {
		if (memcmp(h + i, "\xe2\x79\x2a\xca", 4) == 0) {
			memcpy(h + i, "\x12\x34\x56\x78", 4);
			rewind(f);
			assert_int_equal(fwrite(h, 1, sizeof(h), f), sizeof(h));
			fclose(f);
			return;
		}
	}
	fail_msg("%s has no backing format extension", path);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/svm-image-test-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	chmod(dir, 0755);
	snprintf(images, sizeof(images), "%s/images", dir);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	snprintf(catalog, sizeof(catalog), "%s/catalog", dir);
	sh("mkdir -p %s %s %s && chmod 755 %s %s", images, outside, catalog,
	   images, outside);
	return 0;
}

static int teardown(void **state)
{
	sh("rm -rf %s", dir);
	return 0;
}

static void conf_init(struct vmconf *conf, bool user_images)
{
	char item[512];

	assert_int_equal(vmconf_load(conf, NULL), 0);
	snprintf(item, sizeof(item), "ImageDirs=%s", images);
	assert_int_equal(vmconf_set(conf, item, "test"), 0);
	snprintf(item, sizeof(item), "ImageCatalog=%s", catalog);
	assert_int_equal(vmconf_set(conf, item, "test"), 0);
	conf->allow_user_images = user_images;
}

/* Checks a user image path; returns r and leaves messages in errors. */
static int check_path(const char *path, struct image_chain *chain)
{
	struct vmconf conf;
	struct image_spec spec;
	int r;

	errors[0] = '\0';
	conf_init(&conf, true);
	r = image_resolve(&conf, path, &spec);
	if (r == 0)
		r = image_check(&conf, &spec, chain);
	image_spec_free(&spec);
	vmconf_free(&conf);
	return r;
}

static void expect_refused(const char *path, const char *message)
{
	struct image_chain chain;

	if (check_path(path, &chain) == 0)
		fail_msg("%s was accepted", path);
	if (!strstr(errors, message))
		fail_msg("%s: got '%s', want '%s'", path, errors, message);
}

static void test_raw_with_partition_table(void **state)
{
	char path[512];
	struct image_chain chain;
	uint8_t mbr[4096] = { 0 };

	snprintf(path, sizeof(path), "%s/disk.raw", images);
	mbr[510] = 0x55;
	mbr[511] = 0xaa;
	write_bytes(path, mbr, sizeof(mbr));
	assert_int_equal(check_path(path, &chain), 0);
	assert_int_equal(chain.depth, 1);
	assert_int_equal(chain.layers[0].format, IMAGE_FORMAT_RAW);
	assert_string_equal(chain.layers[0].path, path);
	image_chain_free(&chain);
}

static void test_qcow2_chain_inside(void **state)
{
	char base[512], top[512];
	struct image_chain chain;

	snprintf(base, sizeof(base), "%s/base.qcow2", images);
	snprintf(top, sizeof(top), "%s/top.qcow2", images);
	sh("qemu-img create -q -f qcow2 %s 1G", base);
	/* A relative backing name resolves against the top image's directory.
	 */
	sh("cd %s && qemu-img create -q -f qcow2 -b base.qcow2 -F qcow2 %s",
	   images, top);
	assert_int_equal(check_path(top, &chain), 0);
	assert_int_equal(chain.depth, 2);
	assert_string_equal(chain.layers[1].path, base);
	assert_int_equal(chain.layers[0].format, IMAGE_FORMAT_QCOW2);
	assert_int_equal(chain.layers[1].virtual_size, 1ull << 30);
	image_chain_free(&chain);
}

static void test_backing_outside_refused(void **state)
{
	char secret[512], top[512], link[512];

	/* The classic attack: a qcow2 whose backing file is a host file. */
	snprintf(top, sizeof(top), "%s/steal.qcow2", images);
	sh("qemu-img create -q -f qcow2 -u -b /etc/shadow -F raw %s 1G", top);
	expect_refused(top, "lies outside the allowed image directories");

	/* The same through a symlink inside the allowed directory. */
	snprintf(secret, sizeof(secret), "%s/secret.raw", outside);
	snprintf(link, sizeof(link), "%s/innocent.raw", images);
	sh("truncate -s 1M %s && ln -sf %s %s", secret, secret, link);
	snprintf(top, sizeof(top), "%s/steal2.qcow2", images);
	sh("qemu-img create -q -f qcow2 -u -b innocent.raw -F raw %s 1G", top);
	expect_refused(top, "backing file");
	expect_refused(top, "lies outside the allowed image directories");
}

static void test_image_outside_refused(void **state)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/disk.qcow2", outside);
	sh("qemu-img create -q -f qcow2 %s 1G", path);
	expect_refused(path, "lies outside the allowed image directories");
}

static void test_protocol_backing_refused(void **state)
{
	char top[512];

	snprintf(top, sizeof(top), "%s/json.qcow2", images);
	sh("qemu-img create -q -f qcow2 -u -F raw -b "
	   "'json:{\"driver\":\"file\",\"filename\":\"/etc/shadow\"}' %s 1G",
	   top);
	expect_refused(top, "a protocol or json: name");
	snprintf(top, sizeof(top), "%s/nbd.qcow2", images);
	sh("qemu-img create -q -f qcow2 -u -F raw -b nbd:127.0.0.1:10809 %s 1G",
	   top);
	expect_refused(top, "a protocol or json: name");
}

static void test_data_file_refused(void **state)
{
	char top[512];

	snprintf(top, sizeof(top), "%s/datafile.qcow2", images);
	sh("qemu-img create -q -f qcow2 -o data_file=%s/data.raw %s 1M", images,
	   top);
	expect_refused(top, "external data file (data-file)");
}

static void test_encrypted_refused(void **state)
{
	char top[512];

	uint8_t method[4] = { 0, 0, 0, 2 }; /* LUKS */
	FILE *f;

	/* qemu-img's LUKS creation times PBKDF on CPU time and fails on a
	 * loaded machine: mark a plain image's header encrypted instead. */
	snprintf(top, sizeof(top), "%s/luks.qcow2", images);
	sh("qemu-img create -q -f qcow2 %s 1M", top);
	f = fopen(top, "r+");
	assert_non_null(f);
	assert_int_equal(fseek(f, 32, SEEK_SET), 0); /* crypt_method */
	assert_int_equal(fwrite(method, 1, 4, f), 4);
	fclose(f);
	expect_refused(top, "encrypted");
}

static void test_backing_without_format_refused(void **state)
{
	char base[512], top[512];

	snprintf(base, sizeof(base), "%s/nofmt-base.qcow2", images);
	snprintf(top, sizeof(top), "%s/nofmt.qcow2", images);
	sh("qemu-img create -q -f qcow2 %s 1M", base);
	sh("qemu-img create -q -f qcow2 -b %s -F qcow2 %s", base, top);
	drop_backing_format(top);
	expect_refused(top, "needs an explicit format");
}

static void test_not_an_image_refused(void **state)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/notes.txt", images);
	write_bytes(path, "hello, this is not a disk\n", 26);
	expect_refused(path, "neither qcow2 nor a raw disk");
	snprintf(path, sizeof(path), "%s/disk.img.gz", images);
	sh("truncate -s 4096 %s/z && gzip -c %s/z > %s", images, images, path);
	expect_refused(path, "gzip-compressed");
	snprintf(path, sizeof(path), "%s/zero.raw", images);
	sh("truncate -s 1M %s", path);
	expect_refused(path, "no partition table or filesystem");
	snprintf(path, sizeof(path), "%s/missing.qcow2", images);
	expect_refused(path, "does not exist");
	snprintf(path, sizeof(path), "%s/adir", images);
	sh("mkdir -p %s", path);
	expect_refused(path, "not a regular file");
}

static void test_deep_chain_refused(void **state)
{
	char prev[512], cur[512];

	snprintf(prev, sizeof(prev), "%s/c0.qcow2", images);
	sh("qemu-img create -q -f qcow2 %s 1M", prev);
	for (int i = 1; i <= IMAGE_CHAIN_MAX; i++) {
		snprintf(cur, sizeof(cur), "%s/c%d.qcow2", images, i);
		sh("qemu-img create -q -f qcow2 -u -b %s -F qcow2 %s 1M", prev,
		   cur);
		snprintf(prev, sizeof(prev), "%s", cur);
	}
	expect_refused(cur, "deeper than");
}

static void test_user_images_not_allowed(void **state)
{
	struct vmconf conf;
	struct image_spec spec;
	char entry[512];

	snprintf(entry, sizeof(entry), "%s/centos.image", catalog);
	write_text(entry, "Path=/x/centos.qcow2\nFormat=qcow2\n");
	conf_init(&conf, false);
	errors[0] = '\0';
	assert_int_equal(image_resolve(&conf, "/home/u/my.qcow2", &spec),
			 -EPERM);
	assert_non_null(strstr(errors, "images from paths are not allowed"));
	assert_non_null(strstr(errors, "available images: centos"));
	image_spec_free(&spec);
	vmconf_free(&conf);
	unlink(entry);
}

static void test_catalog(void **state)
{
	struct vmconf conf;
	struct image_spec spec;
	char entry[512];

	/* Descriptors must be root's: a package build (a buildd) is not. */
	if (geteuid() != 0)
		skip();
	snprintf(entry, sizeof(entry), "%s/debian.image", catalog);
	write_text(entry, "Path=/srv/debian.qcow2\nFormat=qcow2\n"
			  "Kernel=/srv/vmlinuz\nInitrd=/srv/initrd\n"
			  "Cmdline=console=ttyS0\nMemOverhead=256\n"
			  "BootMode=warm\n");
	snprintf(entry, sizeof(entry), "%s/alma.image", catalog);
	write_text(entry, "Path=/srv/alma.qcow2\nFormt=qcow2\n");
	conf_init(&conf, false);

	assert_int_equal(image_resolve(&conf, "debian", &spec), 0);
	assert_string_equal(spec.path, "/srv/debian.qcow2");
	assert_string_equal(spec.format, "qcow2");
	assert_string_equal(spec.kernel, "/srv/vmlinuz");
	assert_string_equal(spec.cmdline, "console=ttyS0");
	assert_string_equal(spec.firmware, "bios");
	assert_int_equal(spec.mem_overhead_mib, 256);
	assert_string_equal(spec.boot_mode, "warm");
	image_spec_free(&spec);

	errors[0] = '\0';
	assert_int_equal(image_resolve(&conf, "centos7", &spec), -ENOENT);
	assert_non_null(strstr(errors, "unknown image 'centos7'"));
	assert_non_null(strstr(errors, "available images: alma, debian"));
	image_spec_free(&spec);

	errors[0] = '\0';
	assert_int_equal(image_resolve(&conf, "alma", &spec), -EINVAL);
	assert_non_null(strstr(errors, "did you mean 'Format'"));
	image_spec_free(&spec);

	errors[0] = '\0';
	assert_int_equal(image_resolve(&conf, "../../etc/passwd", &spec),
			 -EPERM);
	image_spec_free(&spec);
	assert_int_equal(image_resolve(&conf, ".hidden", &spec), -EINVAL);
	assert_non_null(strstr(errors, "not a valid image name"));
	image_spec_free(&spec);

	/* A descriptor others can write is not trusted. */
	chmod(entry, 0666);
	errors[0] = '\0';
	assert_int_equal(image_resolve(&conf, "alma", &spec), -EPERM);
	assert_non_null(strstr(errors, "writable only by root"));
	image_spec_free(&spec);
	vmconf_free(&conf);
}

/* Firmware=uefi with direct kernel boot: OVMF needs the EFI stub of a
 * bzImage; an ELF vmlinux is refused with what to do. */
static void test_uefi_kernel(void **state)
{
	struct image_spec spec = { 0 };
	char kernel[512];
	unsigned char bz[0x400] = { 'M', 'Z' };

	memcpy(bz + 0x202, "HdrS", 4);
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", images);
	write_bytes(kernel, bz, sizeof(bz));
	spec.name = "efi";
	spec.kernel = kernel;
	spec.firmware = "uefi";
	assert_int_equal(image_kernel_check(&spec), 0);

	write_bytes(kernel, "\177ELF\2\1\1", 7);
	errors[0] = '\0';
	assert_int_equal(image_kernel_check(&spec), -ENOEXEC);
	assert_non_null(strstr(errors, "bzImage with an EFI stub"));

	spec.firmware = "bios"; /* SeaBIOS: qemu loads either */
	assert_int_equal(image_kernel_check(&spec), 0);
	spec.firmware = "uefi";
	spec.kernel = NULL; /* boots from the disk's own ESP */
	assert_int_equal(image_kernel_check(&spec), 0);
	unlink(kernel);
}

static void test_check_as_user(void **state)
{
	char path[512];
	struct vmconf conf;
	struct image_spec spec;
	struct image_chain chain;

	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/private.qcow2", images);
	sh("qemu-img create -q -f qcow2 %s 1M && chmod 600 %s", path, path);
	conf_init(&conf, true);
	assert_int_equal(image_resolve(&conf, path, &spec), 0);
	/* root can read it ... */
	assert_int_equal(image_check_as_user(&conf, &spec, 0, 0, &chain), 0);
	assert_int_equal(chain.depth, 1);
	assert_string_equal(chain.layers[0].path, path);
	image_chain_free(&chain);
	/* ... nobody (65534) cannot, and the prolog must say so. */
	errors[0] = '\0';
	assert_int_equal(
		image_check_as_user(&conf, &spec, 65534, 65534, &chain),
		-EPERM);
	assert_non_null(strstr(errors, "is not readable by you"));
	image_spec_free(&spec);
	vmconf_free(&conf);
}

/* What qemu-img cannot write into the job's overlay is refused by the
 * check, so it never fails in the prolog (where it drained the node): a
 * top path over 1023 bytes, a virtual size a 64 KiB-cluster overlay cannot
 * hold (qemu-img's limit is 2 PiB). */
static void test_overlay_limits(void **state)
{
	char path[2048], top[2100];
	struct image_chain chain;
	uint8_t size[8];
	uint64_t v;
	size_t n;
	FILE *f;

	n = (size_t)snprintf(path, sizeof(path), "%s", images);
	while (n < 1100)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/%0100d", 0);
	sh("mkdir -p %s", path);
	snprintf(top, sizeof(top), "%s/long.qcow2", path);
	sh("qemu-img create -q -f qcow2 %s 1M", top);
	expect_refused(top, "a qcow2 overlay can name at most 1023");

	snprintf(top, sizeof(top), "%s/huge.qcow2", images);
	sh("qemu-img create -q -f qcow2 %s 1M", top);
	for (int i = 0; i < 2; i++) {
		v = i ? IMAGE_VIRTUAL_SIZE_MAX + 512 : IMAGE_VIRTUAL_SIZE_MAX;
		for (int b = 0; b < 8; b++)
			size[b] = (uint8_t)(v >> (56 - 8 * b));
		f = fopen(top, "r+");
		assert_non_null(f);
		assert_int_equal(fseek(f, 24, SEEK_SET), 0); /* size */
		assert_int_equal(fwrite(size, 1, 8, f), 8);
		fclose(f);
		if (i == 0) {
			/* the largest qemu-img makes an overlay for */
			assert_int_equal(check_path(top, &chain), 0);
			image_chain_free(&chain);
			sh("qemu-img create -q -f qcow2 -u -F qcow2 -b %s "
			   "%s/ov.qcow2 %llu && rm %s/ov.qcow2",
			   top, dir, (unsigned long long)v, dir);
		}
	}
	expect_refused(top, "larger than a job's overlay can hold");
}

/* A path in the domain XML that is not UTF-8 is rewritten by libxml2 and
 * qemu opens another file: refused, for the image and for a backing file
 * reached through a directory link; UTF-8 names work. */
static void test_path_encoding(void **state)
{
	char path[512], top[512];
	struct image_chain chain;

	snprintf(path, sizeof(path), "%s/caf\xe9.qcow2", images);
	sh("qemu-img create -q -f qcow2 '%s' 1M", path);
	expect_refused(path, "is not valid UTF-8 text");

	snprintf(path, sizeof(path), "%s/lat\xedn", images);
	sh("mkdir -p '%s' && qemu-img create -q -f qcow2 '%s/b.qcow2' 1M "
	   "&& ln -sfn 'lat\xedn' %s/ascii",
	   path, path, images);
	snprintf(top, sizeof(top), "%s/via-latin1.qcow2", images);
	sh("qemu-img create -q -f qcow2 -u -b ascii/b.qcow2 -F qcow2 %s 1M",
	   top);
	expect_refused(top, "backing file path");
	expect_refused(top, "is not valid UTF-8 text");

	snprintf(path, sizeof(path), "%s/caf\xc3\xa9.qcow2", images);
	sh("qemu-img create -q -f qcow2 '%s' 1M", path);
	assert_int_equal(check_path(path, &chain), 0);
	image_chain_free(&chain);

	assert_true(str_is_utf8_text("/srv/\xe6\x97\xa5/\xf0\x9f\x90\xa7"));
	assert_false(str_is_utf8_text("/srv/\xc0\xaf"));	 /* overlong */
	assert_false(str_is_utf8_text("/srv/\xed\xa0\x80"));	 /* surrogate */
	assert_false(str_is_utf8_text("/srv/\xf4\x90\x80\x80")); /* >10FFFF */
	assert_false(str_is_utf8_text("/srv/\xc2\x85"));	 /* C1 NEL */
	assert_false(str_is_utf8_text("/srv/\xe6\x97"));	 /* truncated */
	assert_false(str_is_utf8_text("/srv/a\tb"));
}

/* At submission a relative path is the user's file in the directory they
 * submit from; a catalog name stays a name; an unknown name that is a
 * catalog image's file name says which name to use. */
static void test_request_at(void **state)
{
	struct vmconf conf;
	struct image_spec spec;
	char entry[640], here[400], *out = NULL;

	snprintf(entry, sizeof(entry), "%s/centos.image", catalog);
	write_text(entry, "# a comment\n path = /srv/x/CentOS-7.qcow2 \n"
			  "Format=qcow2\n");
	snprintf(here, sizeof(here), "%s/home", images);
	sh("mkdir -p %s && truncate -s 1M %s/mine.qcow2", here, here);
	conf_init(&conf, true);

	assert_int_equal(image_request_at(&conf, "mine.qcow2", here, &out), 0);
	snprintf(entry, sizeof(entry), "%s/mine.qcow2", here);
	assert_string_equal(out, entry);
	free(out);
	assert_int_equal(
		image_request_at(&conf, "./x/../mine.qcow2", here, &out), 0);
	snprintf(entry, sizeof(entry), "%s/./x/../mine.qcow2", here);
	assert_string_equal(out, entry);
	free(out);
	/* a catalog name, an absolute path, an unknown name: unchanged */
	assert_int_equal(image_request_at(&conf, "centos", here, &out), 0);
	assert_string_equal(out, "centos");
	free(out);
	assert_int_equal(image_request_at(&conf, "/a/b.qcow2", here, &out), 0);
	assert_string_equal(out, "/a/b.qcow2");
	free(out);
	assert_int_equal(image_request_at(&conf, "CentOS-7.qcow2", here, &out),
			 0);
	assert_string_equal(out, "CentOS-7.qcow2");

	errors[0] = '\0';
	assert_int_equal(image_resolve(&conf, out, &spec), -ENOENT);
	assert_non_null(strstr(errors, "the catalog image 'centos' is that "
				       "file: use --vm-image=centos"));
	image_spec_free(&spec);
	free(out);

	/* a directory here is no image file: ".." stays a (bad) name */
	assert_int_equal(image_request_at(&conf, "..", here, &out), 0);
	assert_string_equal(out, "..");
	free(out);

	/* without user images nothing is made absolute */
	conf.allow_user_images = false;
	assert_int_equal(image_request_at(&conf, "./mine.qcow2", here, &out),
			 0);
	assert_string_equal(out, "./mine.qcow2");
	free(out);
	vmconf_free(&conf);
	snprintf(entry, sizeof(entry), "%s/centos.image", catalog);
	unlink(entry);
}

/* Hostile header bytes that qemu-img would never write. */
static void test_qcow2_parse_malformed(void **state)
{
	uint8_t h[512];
	struct qcow2_info qi;
	const char *why = NULL;

	memset(h, 0, sizeof(h));
	memcpy(h, "QFI\xfb\0\0\0\x03", 8);
	h[23] = 16;   /* cluster_bits */
	h[103] = 104; /* header_length */
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), 0);

	h[15] = 200; /* backing offset 200, size 0 */
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	assert_non_null(strstr(why, "bad length"));
	h[19] = 255;  /* runs past the 512 bytes we have */
	h[15] = 0xff; /* offset 511 */
	h[14] = 0x01;
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	assert_non_null(strstr(why, "outside the first cluster"));
	h[14] = h[15] = h[19] = 0;

	h[23] = 30; /* cluster_bits */
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	assert_non_null(strstr(why, "cluster size"));
	h[23] = 16;

	h[79] = 0x04; /* incompatible: external data file */
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	assert_non_null(strstr(why, "data-file"));
	h[79] = 0x80; /* unknown incompatible feature */
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	h[79] = 0;

	/* A header extension whose length runs past the buffer. */
	memcpy(h + 104, "\xe2\x79\x2a\xca\x7f\xff\xff\xff", 8);
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	assert_non_null(strstr(why, "extension"));
	/* A DATA extension even without the feature bit. */
	memcpy(h + 104, "DATA\0\0\0\x04/etc", 12);
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	assert_non_null(strstr(why, "data-file"));
	memset(h + 104, 0, 12);

	h[103] = 20; /* header_length below v3's 104 */
	assert_int_equal(qcow2_parse(h, sizeof(h), &qi, &why), -EINVAL);
	assert_int_equal(qcow2_parse(h, 50, &qi, &why), -EINVAL);
}

static void test_protocol_names(void **state)
{
	assert_true(image_name_is_protocol("json:{}"));
	assert_true(image_name_is_protocol("nbd:host:1"));
	assert_true(image_name_is_protocol("http://x/y"));
	assert_false(image_name_is_protocol("/srv/a:b.qcow2"));
	assert_false(image_name_is_protocol("base.qcow2"));
	assert_false(image_name_is_protocol("./a:b"));
}

static void test_path_is_inside(void **state)
{
	char *dirs[] = { "/srv/images", "/scratch/", NULL };

	assert_true(path_is_inside("/srv/images/a.qcow2", dirs));
	assert_true(path_is_inside("/scratch/u/a.qcow2", dirs));
	assert_false(path_is_inside("/srv/images-evil/a.qcow2", dirs));
	assert_false(path_is_inside("/srv/images", dirs));
	assert_false(path_is_inside("/etc/shadow", dirs));
}

/* BootMode=warm runs the image's files in root's qemu: each file and every
 * directory above it must be root's and writable by root alone. The test
 * tree is under /run (root's, 0755: /tmp is writable by all). */
static void test_root_only(void **state)
{
	char base[] = "/run/svm-image-root-XXXXXX", bad[PATH_MAX];
	char top[64], kernel[64], initrd[64], sub[64], lower[96];
	char userdir[64], link[96];
	struct image_spec spec = { 0 };
	struct image_chain chain = { .depth = 2 };
	struct stat st;

	if (geteuid() != 0 || stat("/run", &st) < 0 || st.st_uid != 0 ||
	    (st.st_mode & 022))
		skip();
	assert_non_null(mkdtemp(base));
	chmod(base, 0755);
	snprintf(top, sizeof(top), "%s/top.qcow2", base);
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", base);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", base);
	snprintf(sub, sizeof(sub), "%s/lower", base);
	snprintf(lower, sizeof(lower), "%s/base.raw", sub);
	snprintf(userdir, sizeof(userdir), "%s/user", base);
	snprintf(link, sizeof(link), "%s/initrd.link", userdir);
	sh("mkdir -m 755 %s %s && touch %s %s %s %s && chmod 644 %s %s %s %s",
	   sub, userdir, top, kernel, initrd, lower, top, kernel, initrd,
	   lower);
	chain.layers[0].path = top;
	chain.layers[1].path = lower;
	spec.kernel = kernel;
	spec.initrd = initrd;
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)), 0);

	/* a kernel another user owns */
	assert_int_equal(chown(kernel, 65534, 65534), 0);
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)),
			 -EPERM);
	assert_string_equal(bad, kernel);
	assert_int_equal(chown(kernel, 0, 0), 0);

	/* a layer others can write */
	chmod(top, 0666);
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)),
			 -EPERM);
	assert_string_equal(bad, top);
	chmod(top, 0644);

	/* a backing layer in a group-writable directory */
	chmod(sub, 0775);
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)),
			 -EPERM);
	assert_string_equal(bad, sub);
	chmod(sub, 0755);
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)), 0);

	/* a symlink to a root file, in a directory a user owns: the user
	 * could point it elsewhere */
	assert_int_equal(symlink("../initrd.img", link), 0);
	spec.initrd = link;
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)), 0);
	assert_int_equal(chown(userdir, 65534, 65534), 0);
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)),
			 -EPERM);
	assert_string_equal(bad, userdir);
	/* ... and a root symlink to a file the user owns */
	assert_int_equal(chown(userdir, 0, 0), 0);
	assert_int_equal(chown(initrd, 65534, 0), 0);
	assert_int_equal(image_root_only(&spec, &chain, bad, sizeof(bad)),
			 -EPERM);
	assert_string_equal(bad, initrd);

	/* /tmp is anyone's */
	assert_int_equal(image_path_root_only("/tmp/x", bad, sizeof(bad)),
			 -EPERM);
	assert_string_equal(bad, "/tmp");
	assert_int_equal(image_path_root_only("relative", bad, sizeof(bad)),
			 -EINVAL);
	sh("rm -rf %s", base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw_with_partition_table),
		cmocka_unit_test(test_qcow2_chain_inside),
		cmocka_unit_test(test_backing_outside_refused),
		cmocka_unit_test(test_image_outside_refused),
		cmocka_unit_test(test_protocol_backing_refused),
		cmocka_unit_test(test_data_file_refused),
		cmocka_unit_test(test_encrypted_refused),
		cmocka_unit_test(test_backing_without_format_refused),
		cmocka_unit_test(test_not_an_image_refused),
		cmocka_unit_test(test_deep_chain_refused),
		cmocka_unit_test(test_user_images_not_allowed),
		cmocka_unit_test(test_catalog),
		cmocka_unit_test(test_uefi_kernel),
		cmocka_unit_test(test_check_as_user),
		cmocka_unit_test(test_overlay_limits),
		cmocka_unit_test(test_path_encoding),
		cmocka_unit_test(test_request_at),
		cmocka_unit_test(test_qcow2_parse_malformed),
		cmocka_unit_test(test_protocol_names),
		cmocka_unit_test(test_path_is_inside),
		cmocka_unit_test(test_root_only),
	};

	log_set_sink(capture_sink);
	return cmocka_run_group_tests(tests, setup, teardown);
}
