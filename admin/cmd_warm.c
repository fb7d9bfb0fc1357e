/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm warm: BootMode=warm's templates on this node (WarmDir), listed
 * with what they were made from, or dropped. A template in use by a prolog
 * that restores or makes it is never dropped.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "common_opts.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "core/macro.h"
#include "vm/warmcache.h"

static void warm_usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm warm [--config vm.conf] list\n"
		"       slurm-vm warm [--config vm.conf] drop KEY...|--all\n\n"
		"BootMode=warm's templates in WarmDir: list shows each "
		"template's key, when a job\nlast used it, its size and the "
		"image it was made from; drop removes templates\n(one a "
		"prolog uses or makes stays: try again later). Jobs make "
		"templates as\nthey need them. Root only.\n");
}

/* The image a template was made from: its marker's first "layer" line. */
static void marker_image(const char *dir, const char *key, char *out,
			 size_t size)
{
	char path[4096], text[4096];
	const char *l;

	snprintf(out, size, "-");
	snprintf(path, sizeof(path), "%s/%s/" WARMCACHE_MARKER, dir, key);
	if (file_read_small(path, text, sizeof(text)) <= 0)
		return;
	l = strstr(text, "\nlayer ");
	if (l)
		snprintf(out, size, "%.*s", (int)strcspn(l + 7, " \n"), l + 7);
}

static int warm_list(const struct vmconf *conf)
{
	_cleanup_free_ struct warmcache_entry *e = NULL;
	char when[32], image[1024];
	size_t n;
	int r;

	r = warmcache_list(conf->warm_dir, &e, &n);
	if (r < 0)
		return log_errno(r, "cannot read WarmDir %s", conf->warm_dir);
	printf("%-16s  %-19s  %9s  %s\n", "KEY", "LAST USED", "SIZE", "IMAGE");
	for (size_t i = n; i-- > 0;) {
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S",
			 localtime_r(&e[i].used.tv_sec, &tm));
		marker_image(conf->warm_dir, e[i].key, image, sizeof(image));
		printf("%-16s  %-19s  %6" PRIu64 " MiB  %s\n", e[i].key,
		       e[i].whole ? when : "(being made)", e[i].bytes >> 20,
		       image);
	}
	return 0;
}

static int warm_drop_one(const struct vmconf *conf, const char *key)
{
	int r = warmcache_drop(conf->warm_dir, key);

	if (r == 0)
		printf("dropped template %s\n", key);
	else if (r == -EBUSY)
		log_error("template %s is in use by a prolog: try again later",
			  key);
	else if (r == -EINVAL)
		log_error("%s is no template key (see slurm-vm warm list)",
			  key);
	else
		log_errno(r, "cannot drop template %s", key);
	return r;
}

static int warm_drop(const struct vmconf *conf, char **keys, int n, bool all)
{
	_cleanup_free_ struct warmcache_entry *e = NULL;
	size_t count;
	int r = 0;

	if (!all) {
		for (int i = 0; i < n; i++)
			r = warm_drop_one(conf, keys[i]) ?: r;
		return r;
	}
	r = warmcache_list(conf->warm_dir, &e, &count);
	if (r < 0)
		return log_errno(r, "cannot read WarmDir %s", conf->warm_dir);
	for (size_t i = 0; i < count; i++)
		r = warm_drop_one(conf, e[i].key) ?: r;
	return r;
}

int cmd_warm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *config = NULL, *verb;
	bool all = false;
	struct vmconf conf;
	int c, r;

	while ((c = getopt_long(argc, argv, "c:ah", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'h':
			warm_usage(stdout);
			return 0;
		default:
			warm_usage(stderr);
			return 2;
		}
	}
	verb = optind < argc ? argv[optind++] : NULL;
	if (!verb || (strcmp(verb, "list") == 0 && (optind != argc || all)) ||
	    (strcmp(verb, "drop") == 0 && all == (optind < argc)) ||
	    (strcmp(verb, "list") != 0 && strcmp(verb, "drop") != 0)) {
		warm_usage(stderr);
		return 2;
	}
	if (admin_require_root("warm") < 0)
		return 1;
	if (admin_load_config(&conf, config, NULL, NULL, NULL) < 0)
		return 1;
	if (strcmp(verb, "list") == 0)
		r = warm_list(&conf);
	else
		r = warm_drop(&conf, argv + optind, argc - optind, all);
	vmconf_free(&conf);
	return r < 0 ? 1 : 0;
}
