/* SPDX-License-Identifier: GPL-2.0-or-later */
/* channel/persona_format.c, the persona's one format: the name check the
 * writer, the relay and the agent share, each key's form, the writer's and the
 * file's bounds, and a persona of any size in as many frames as it takes,
 * gathered back whole. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "channel/persona_format.h"
#include "channel/proto.h"

/* A group name with a space passed the relay's check and failed the
 * agent's (issue #44): one check now, the same answer on every side. */
static void test_names(void **state)
{
	static const char *const bad[] = { "a b",  "domain users", "",	  "-x",
					   "+x",   "a:b",	   "a,b", "a/b",
					   "a\tb", "a\x7f" };
	static const char *const good[] = { "alice", "g.1_2-3", "u@dom",
					    "\xc3\xa9t\xc3\xa9" };
	char entry[600], name[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_false(persona_name_ok(bad[i]));
		snprintf(entry, sizeof(entry), "group=%s:5", bad[i]);
		assert_int_equal(persona_entry_check(entry, true, NULL, 0),
				 -EINVAL);
		snprintf(entry, sizeof(entry), "member=%s", bad[i]);
		assert_int_equal(persona_entry_check(entry, true, NULL, 0),
				 -EINVAL);
		snprintf(entry, sizeof(entry), "user=%s:1:1:/h", bad[i]);
		assert_int_equal(persona_entry_check(entry, true, NULL, 0),
				 -EINVAL);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_true(persona_name_ok(good[i]));
	memset(name, 'n', 255);
	name[255] = '\0';
	assert_true(persona_name_ok(name));
	name[255] = 'n';
	name[256] = '\0';
	assert_false(persona_name_ok(name));
}

static void test_entries(void **state)
{
	static const char *const ok[] = {
		"hostname=n1",
		"group=proj:6000",
		"user=alice:5000:5000:/home/a b",
		"shell=/bin/zsh",
		"member=proj",
		"hosts=10.0.0.1 n1",
		"authorized_key=ssh-ed25519 AAAA alice@x",
		"net=52:54:00:00:00:01 job0 10.0.0.1/24 1450",
		"share=svm0 9p trans=virtio /work",
		"future.key=anything",
	};
	static const char *const bad[] = {
		"noequals",
		"=value",
		"k y=v",
		"hostname=a b",
		"hostname=",
		"group=proj",
		"group=proj:-1",
		"group=proj:4294967295",
		"group=proj:1x",
		"user=alice:1:1:relative",
		"user=alice:1:1:/a:b",
		"user=alice:1:/h",
		"shell=sh",
		"authorized_key=",
		"authorized_key=# comment",
		"hosts=a\tb",
	};
	char why[128];

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
		assert_int_equal(persona_entry_check(ok[i], true, NULL, 0), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(
			persona_entry_check(bad[i], true, why, sizeof(why)),
			-EINVAL);
	/* the relay's own: refused in the file, checked on the wire */
	assert_int_equal(persona_entry_check("time=1.5", true, NULL, 0),
			 -EINVAL);
	assert_int_equal(persona_entry_check("time=1.5", false, NULL, 0), 0);
	assert_int_equal(persona_entry_check("time=1.", false, NULL, 0),
			 -EINVAL);
	assert_int_equal(persona_entry_check("entropy=00ff", false, NULL, 0),
			 0);
	assert_int_equal(persona_entry_check("entropy=0", false, NULL, 0),
			 -EINVAL);
	assert_int_equal(persona_entry_check(PERSONA_MORE, false, NULL, 0), 0);
	assert_int_equal(
		persona_entry_check(PERSONA_MORE, true, why, sizeof(why)),
		-EINVAL);
	assert_non_null(strstr(why, "relay's own"));
}

static void test_writer(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct persona_writer w;

	assert_non_null(f);
	persona_writer_init(&w, f);
	assert_int_equal(persona_writef(&w, "hostname", "%s", "n1"), 0);
	assert_int_equal(persona_writef(&w, "group", "%s:%u", "proj", 6u), 0);
	/* an entry the relay or the agent would refuse: the writer's error,
	 * and it sticks */
	assert_int_equal(persona_writef(&w, "group", "%s:%u", "a b", 7u),
			 -EINVAL);
	assert_int_equal(persona_writef(&w, "member", "%s", "proj"), -EINVAL);
	assert_int_equal(persona_writef(&w, "time", "1.0"), -EINVAL);
	fclose(f);
	assert_string_equal(text, "hostname=n1\ngroup=proj:6\n");
	free(text);
	text = NULL;

	/* beyond the file's bounds: -E2BIG */
	f = open_memstream(&text, &len);
	persona_writer_init(&w, f);
	for (unsigned i = 0; i <= PERSONA_MAX_ENTRIES; i++)
		if (persona_writef(&w, "hosts", "10.0.%u.%u n", i / 256,
				   i % 256) < 0)
			break;
	assert_int_equal(w.error, -E2BIG);
	assert_int_equal(w.entries, PERSONA_MAX_ENTRIES);
	fclose(f);
	free(text);
}

static void test_text_parse(void **state)
{
	char text[] = "# the job's identity\n\nhostname=n1\nhosts=10.0.0.1 n1\n"
		      "group=g:1";
	char bad[] = "hostname=n1\ngroup=a b:1\n";
	char own[] = "entropy=00\n";
	char **v = NULL;
	char why[128];
	size_t n;

	assert_int_equal(persona_text_parse(text, &v, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0], "hostname=n1");
	assert_string_equal(v[2], "group=g:1");
	assert_null(v[3]);
	free(v);
	assert_int_equal(persona_text_parse(bad, &v, &n, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "line 2"));
	assert_null(v);
	assert_int_equal(persona_text_parse(own, &v, &n, why, sizeof(why)),
			 -EINVAL);
}

/* Every PERSONA frame of @b, through the agent's gathering: the number of
 * frames; the whole persona in @parts. */
static int frames_gather(struct proto_buf *b, struct persona_parts *parts)
{
	const uint8_t *at = proto_buf_head(b);
	size_t left = proto_buf_pending(b);
	int frames = 0, r = 0;

	while (left) {
		struct proto_header h;
		struct proto_persona m;

		assert_int_equal(proto_header_decode(at, left, &h), 0);
		assert_int_equal(h.kind, PROTO_PERSONA);
		assert_true(h.length <= PROTO_MAX_PAYLOAD);
		assert_int_equal(proto_decode_persona(at + PROTO_HEADER_SIZE,
						      h.length, &m),
				 0);
		assert_int_equal(r, 0); /* nothing after the last */
		r = persona_parts_take(parts, m.entries);
		proto_persona_free(&m);
		assert_true(r >= 0);
		at += PROTO_HEADER_SIZE + h.length;
		left -= PROTO_HEADER_SIZE + h.length;
		frames++;
	}
	assert_int_equal(r, 1);
	return frames;
}

static void test_frames(void **state)
{
	size_t n = 5000;
	char **v = calloc(n + 1, sizeof(*v));
	struct proto_buf b = { 0 };
	struct persona_parts parts = { 0 };
	char *small[] = { "hostname=n1", NULL };

	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		assert_true(asprintf(&v[i], "hosts=10.%zu.%zu.1 %0*zu", i / 256,
				     i % 256, 60, i) > 0);
	assert_int_equal(persona_frames_put(&b, v), 0);
	/* 5000 x 79 bytes: seven frames, gathered whole and in order */
	assert_true(frames_gather(&b, &parts) > 1);
	assert_int_equal(parts.count, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(parts.entries[i], v[i]);
	assert_null(parts.entries[n]);
	persona_parts_free(&parts);
	proto_buf_free(&b);

	/* one frame when it fits: no "more" */
	assert_int_equal(persona_frames_put(&b, small), 0);
	assert_int_equal(frames_gather(&b, &parts), 1);
	assert_int_equal(parts.count, 1);
	persona_parts_free(&parts);
	proto_buf_free(&b);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The agent gathers no more than the file's bounds, whatever is sent. */
static void test_parts_bounds(void **state)
{
	struct persona_parts parts = { 0 };
	static char big[PERSONA_ENTRY_MAX + 1];
	char *more[] = { PERSONA_MORE, big, NULL };
	int r = 0;

	memset(big, 'x', sizeof(big) - 1);
	memcpy(big, "hosts=", 6);
	for (size_t i = 0; i <= PERSONA_FILE_MAX / PERSONA_ENTRY_MAX + 4; i++) {
		r = persona_parts_take(&parts, more);
		if (r < 0)
			break;
		assert_int_equal(r, 0);
	}
	assert_int_equal(r, -E2BIG);
	assert_int_equal(parts.count, 0);
	assert_null(parts.entries);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_text_parse),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_parts_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
