/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm ib-partitions: OpenSM's partitions.conf from the site's base
 * file and the records the prologs leave in IbPartitionDir= (one per job
 * and node, common/hw/ibpart.h). Runs on the subnet manager's node, once
 * or every --watch seconds. The file is replaced whole (rename) and only
 * when it changes; then OpenSM gets SIGHUP, which makes it sweep and read
 * the partitions again. Records of jobs slurmctld no longer lists get no
 * partition, so an ended job never keeps one (their VFs stay limited
 * members of Default); when slurmctld does not answer, the file stays as
 * it is.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "common_opts.h"
#include "core/fileutil.h"
#include "hw/ibpart.h"
#include "slurm/jobfate.h"
#include "core/log.h"
#include "core/macro.h"

#define FILE_MAX (4u << 20)

struct ibp_opts {
	const char *records, *output, *base, *pid_file;
	bool all, dry_run;
	unsigned watch;
};

static void ibp_usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm ib-partitions --base FILE [--output FILE] "
		"[--records DIR]\n"
		"         [--pid-file FILE] [--all] [--dry-run] [--watch SEC] "
		"[--config vm.conf]\n\n"
		"Writes OpenSM's partitions.conf (default "
		"/etc/opensm/partitions.conf): the\nsite's --base file, "
		"which must define the Default partition, then one\n"
		"partition per running VM job with InfiniBand VFs, from the "
		"records the\nprologs leave in --records (vm.conf "
		"IbPartitionDir). Jobs slurmctld does not\nlist are left out "
		"(--all: keep every record). A changed file replaces the\n"
		"old one whole and OpenSM (--pid-file) gets SIGHUP.\n");
}

/* The whole file, NUL-terminated; a missing one is "" when @optional. */
static int slurp(const char *path, bool optional, char **out)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *buf = NULL;
	size_t n;

	if (!f) {
		if (optional && errno == ENOENT)
			return (*out = strdup("")) ? 0 : -ENOMEM;
		return log_errno(errno, "%s: cannot read", path);
	}
	buf = malloc(FILE_MAX + 1);
	if (!buf)
		return -ENOMEM;
	n = fread(buf, 1, FILE_MAX + 1, f);
	if (ferror(f) || n > FILE_MAX)
		return log_errno(ferror(f) ? EIO : EFBIG, "%s: cannot read",
				 path);
	buf[n] = '\0';
	*out = TAKE_PTR(buf);
	return 0;
}

/* Does a line of the base start a definition of the default partition
 * (named Default, or P_Key 0x7fff)? Without it the jobs' lines would make
 * one that holds only their VFs. */
static bool line_defines_default(const char *l)
{
	size_t name = strcspn(l, "=,:;\n");
	unsigned long pkey;

	if (name == 7 && strncmp(l, "Default", 7) == 0)
		return true;
	if (l[name] != '=')
		return false;
	pkey = strtoul(l + name + 1, NULL, 0);
	return (pkey & 0x7fff) == IBPART_DEFAULT_PKEY;
}

static bool base_has_default(const char *base)
{
	for (const char *l = base; *l;) {
		l += strspn(l, " \t");
		if (*l != '#' && line_defines_default(l))
			return true;
		l += strcspn(l, "\n");
		l += *l == '\n';
	}
	return false;
}

static int signal_opensm(const char *pid_file)
{
	_cleanup_free_ char *text = NULL;
	long pid;
	char *end;

	if (slurp(pid_file, false, &text) < 0)
		return -ENOENT;
	pid = strtol(text, &end, 10);
	if (end == text || (*end && *end != '\n') || pid <= 1)
		return log_errno(EINVAL, "%s: not a process id", pid_file);
	if (kill((pid_t)pid, SIGHUP) < 0)
		return log_errno(errno,
				 "OpenSM (pid %ld from %s): cannot signal", pid,
				 pid_file);
	printf("OpenSM (pid %ld) told to read its partitions again\n", pid);
	return 0;
}

static int ibp_once(const struct ibp_opts *o)
{
	_cleanup_free_ char *base = NULL, *old = NULL, *text = NULL;
	_cleanup_free_ uint32_t *running = NULL;
	struct ibpart_render_stats st;
	size_t size = 0, n_running = 0;
	FILE *f;
	int r;

	r = slurp(o->base, false, &base);
	if (r < 0)
		return r;
	if (!base_has_default(base))
		return log_errno(EINVAL,
				 "%s does not define the Default partition "
				 "(e.g. \"Default=0x7fff, ipoib : ALL=full, "
				 "SELF=full;\"): the jobs' VFs are added to it "
				 "as limited members",
				 o->base);
	if (!o->all && jobs_active(&running, &n_running) < 0)
		return log_errno(EHOSTDOWN, "%s left as it is", o->output);
	f = open_memstream(&text, &size);
	if (!f)
		return -ENOMEM;
	r = ibpart_render(f, base, o->records, o->all ? NULL : running,
			  n_running, &st);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0)
		return r;
	if (o->dry_run) {
		fputs(text, stdout);
		return st.collisions ? -EEXIST : 0;
	}
	r = slurp(o->output, true, &old);
	if (r < 0)
		return r;
	if (strcmp(old, text) != 0) {
		r = file_replace(o->output, text, strlen(text), 0644);
		if (r < 0)
			return r;
		printf("%s: %u job partition%s, %u stale record%s left out\n",
		       o->output, st.jobs, st.jobs == 1 ? "" : "s", st.stale,
		       st.stale == 1 ? "" : "s");
		if (o->pid_file && signal_opensm(o->pid_file) < 0)
			r = -ESRCH;
	}
	fflush(stdout);
	if (r == 0 && st.collisions)
		r = -EEXIST;
	return r;
}

int cmd_ib_partitions(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "records", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "base", required_argument, NULL, 'b' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "watch", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct ibp_opts o = { .output = "/etc/opensm/partitions.conf" };
	const char *config = NULL;
	struct vmconf conf;
	char *end;
	int c, r;

	while ((c = getopt_long(argc, argv, "c:r:o:b:p:anw:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'r':
			o.records = optarg;
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'b':
			o.base = optarg;
			break;
		case 'p':
			o.pid_file = optarg;
			break;
		case 'a':
			o.all = true;
			break;
		case 'n':
			o.dry_run = true;
			break;
		case 'w':
			o.watch = strtoul(optarg, &end, 10);
			if (*end || !o.watch || o.watch > 3600) {
				log_error("--watch %s: seconds, 1-3600",
					  optarg);
				return 2;
			}
			break;
		case 'h':
			ibp_usage(stdout);
			return 0;
		default:
			ibp_usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !o.base) {
		ibp_usage(stderr);
		return 2;
	}
	if (admin_load_config(&conf, config, NULL, NULL, NULL) < 0)
		return 1;
	if (!o.records)
		o.records = conf.ib_partition_dir;
	if (!o.records) {
		log_error(
			"no records: give --records DIR or IbPartitionDir= in "
			"vm.conf");
		vmconf_free(&conf);
		return 2;
	}
	for (;;) {
		r = ibp_once(&o);
		if (!o.watch)
			break;
		sleep(o.watch);
	}
	vmconf_free(&conf);
	return r < 0 ? 1 : 0;
}
