/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A template's libvirt save image renamed for a job (common/vm/saveimage.c):
 * what libvirt reads back has the job's name and uuid, the template's
 * cookie right after the new XML, the data area as long as before and the
 * migration stream unchanged; anything but a finished raw version-2 image
 * is refused.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "vm/saveimage.h"

#define TMPL_UUID "7dcb3f76-0f5c-4b0e-9b7e-2f1f3b0a8c11"
#define JOB_UUID  "4faee75c-1111-4222-8333-944455556666"
#define STREAM	  "QEVM\0\0\0\3 the migration stream"

static const char tmpl_xml[] =
	"<domain type='qemu'><name>svm-tmpl</name><uuid>" TMPL_UUID
	"</uuid><genid>9ed461bd-0000-4000-8000-000000000001</genid>"
	"<memory unit='KiB'>524288</memory><devices><disk type='file'>"
	"<source file='/var/lib/slurm-vm/warm/t.qcow2'/></disk></devices>"
	"</domain>";
static const char cookie[] = "<cookie><slirpHelper/></cookie>";

struct header {
	char magic[16];
	uint32_t version, data_len, was_running, compressed, cookie_offset;
	uint32_t unused[14];
};

/* A save image in a memfd: @hdr's fields over the defaults, @pad bytes of
 * padding after the cookie. */
static int image(const struct header *over, uint32_t pad)
{
	size_t xml_len = sizeof(tmpl_xml), cookie_len = sizeof(cookie);
	struct header h = { .version = 2, .was_running = 1 };
	int fd = memfd_create("save", MFD_CLOEXEC);
	uint8_t *data;

	assert_true(fd >= 0);
	memcpy(h.magic, "LibvirtQemudSave", 16);
	h.data_len = (uint32_t)(xml_len + cookie_len + pad);
	h.cookie_offset = (uint32_t)xml_len;
	if (over)
		h = *over;
	data = calloc(1, h.data_len ? h.data_len : 1);
	assert_non_null(data);
	memcpy(data, tmpl_xml, h.data_len < xml_len ? h.data_len : xml_len);
	if (h.data_len >= xml_len + cookie_len)
		memcpy(data + xml_len, cookie, cookie_len);
	assert_int_equal(write(fd, &h, sizeof(h)), sizeof(h));
	assert_int_equal(write(fd, data, h.data_len), h.data_len);
	assert_int_equal(write(fd, STREAM, sizeof(STREAM)), sizeof(STREAM));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	free(data);
	return fd;
}

static struct header defaults(uint32_t pad)
{
	struct header h = { .version = 2, .was_running = 1 };

	memcpy(h.magic, "LibvirtQemudSave", 16);
	h.data_len = (uint32_t)(sizeof(tmpl_xml) + sizeof(cookie) + pad);
	h.cookie_offset = sizeof(tmpl_xml);
	return h;
}

static void test_read(void **state)
{
	struct saveimage img;
	char genid[37];
	int fd = image(NULL, 65536);

	assert_int_equal(saveimage_read(fd, &img), 0);
	assert_string_equal(img.xml, tmpl_xml);
	assert_string_equal(img.cookie, cookie);
	assert_int_equal(img.data_len,
			 sizeof(tmpl_xml) + sizeof(cookie) + 65536);
	assert_int_equal(img.was_running, 1);
	assert_int_equal(saveimage_stream_offset(&img), 92 + img.data_len);
	assert_int_equal(saveimage_genid(&img, genid), 0);
	assert_string_equal(genid, "9ed461bd-0000-4000-8000-000000000001");
	saveimage_free(&img);
	close(fd);
}

/* The renamed head plus the template's stream, read back as libvirt
 * would. */
static void test_renamed(void **state)
{
	struct saveimage img, back;
	struct header h;
	uint8_t *head = NULL;
	size_t len = 0;
	int fd = image(NULL, 65536), out = memfd_create("job", MFD_CLOEXEC);
	int pipefd[2];
	char stream[sizeof(STREAM)];

	assert_int_equal(saveimage_read(fd, &img), 0);
	assert_int_equal(saveimage_renamed_head(&img, "slurmvm-job-4242.0",
						JOB_UUID, &head, &len),
			 0);
	assert_int_equal(len, 92 + img.data_len);
	memcpy(&h, head, sizeof(h));
	assert_int_equal(h.data_len, img.data_len);
	assert_int_equal(write(out, head, len), len);
	assert_int_equal(pipe(pipefd), 0);
	assert_int_equal(saveimage_copy_stream(
				 fd, saveimage_stream_offset(&img), pipefd[1]),
			 0);
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], stream, sizeof(stream)),
			 sizeof(stream));
	assert_memory_equal(stream, STREAM, sizeof(STREAM));
	close(pipefd[0]);

	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	assert_int_equal(saveimage_read(out, &back), 0);
	assert_non_null(strstr(back.xml, "<name>slurmvm-job-4242.0</name>"));
	assert_non_null(strstr(back.xml, "<uuid>" JOB_UUID "</uuid>"));
	assert_null(strstr(back.xml, "svm-tmpl"));
	/* libvirt's ABI check wants everything else as it was. */
	assert_non_null(
		strstr(back.xml, "9ed461bd-0000-4000-8000-000000000001"));
	assert_non_null(strstr(back.xml, "/var/lib/slurm-vm/warm/t.qcow2"));
	assert_string_equal(back.cookie, cookie);
	assert_int_equal(h.cookie_offset, strlen(back.xml) + 1);
	free(head);
	saveimage_free(&back);
	saveimage_free(&img);
	close(out);
	close(fd);
}

static void test_too_long(void **state)
{
	struct saveimage img;
	uint8_t *head = NULL;
	size_t len = 0;
	char name[64];
	int fd = image(NULL, 8);

	assert_int_equal(saveimage_read(fd, &img), 0);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(
		saveimage_renamed_head(&img, name, JOB_UUID, &head, &len),
		-E2BIG);
	assert_null(head);
	saveimage_free(&img);
	close(fd);
}

static void test_bad_names(void **state)
{
	struct saveimage img;
	uint8_t *head = NULL;
	size_t len = 0;
	int fd = image(NULL, 4096);

	assert_int_equal(saveimage_read(fd, &img), 0);
	assert_int_equal(
		saveimage_renamed_head(&img, "a<b", JOB_UUID, &head, &len),
		-EINVAL);
	assert_int_equal(
		saveimage_renamed_head(&img, "", JOB_UUID, &head, &len),
		-EINVAL);
	assert_int_equal(
		saveimage_renamed_head(&img, "job", "not-a-uuid", &head, &len),
		-EINVAL);
	assert_int_equal(
		saveimage_renamed_head(&img, "job",
				       "4FAEE75C-1111-4222-8333-944455556666",
				       &head, &len),
		-EINVAL);
	free(img.xml);
	/* Two names: which one libvirt reads is not ours to guess. */
	img.xml = strdup("<domain><name>a</name><name>b</name><uuid>" TMPL_UUID
			 "</uuid></domain>");
	assert_int_equal(
		saveimage_renamed_head(&img, "job", JOB_UUID, &head, &len),
		-EINVAL);
	free(img.xml);
	img.xml = strdup("<domain><name>a</name></domain>");
	assert_int_equal(
		saveimage_renamed_head(&img, "job", JOB_UUID, &head, &len),
		-EINVAL);
	free(img.xml);
	img.xml = strdup("<domain><name>a</name><uuid>");
	assert_int_equal(
		saveimage_renamed_head(&img, "job", JOB_UUID, &head, &len),
		-EINVAL);
	assert_null(head);
	saveimage_free(&img);
	close(fd);
}

static void expect_refused(const struct header *h, int want)
{
	struct saveimage img;
	int fd = image(h, 0);

	assert_int_equal(saveimage_read(fd, &img), want);
	assert_null(img.xml);
	assert_null(img.cookie);
	close(fd);
}

static void test_refused(void **state)
{
	struct header h = defaults(16);
	int fd;
	struct saveimage img;

	memcpy(h.magic, "LibvirtQemudPart", 16); /* libvirt still writes it */
	expect_refused(&h, -EBADMSG);
	h = defaults(16);
	h.compressed = 1;
	expect_refused(&h, -ENOTSUP);
	h = defaults(16);
	h.version = 3;
	expect_refused(&h, -ENOTSUP);
	h = defaults(16);
	h.cookie_offset = h.data_len;
	expect_refused(&h, -EBADMSG);
	h = defaults(16);
	h.data_len = 0;
	expect_refused(&h, -EBADMSG);
	/* An XML area without its NUL (the cookie offset inside the XML). */
	h = defaults(16);
	h.cookie_offset = 10;
	expect_refused(&h, -EBADMSG);
	/* Cut short inside the header. */
	fd = memfd_create("short", MFD_CLOEXEC);
	assert_int_equal(write(fd, "LibvirtQemudSave", 16), 16);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(saveimage_read(fd, &img), -EBADMSG);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_renamed),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_bad_names),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
