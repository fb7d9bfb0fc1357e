/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-vm plan: the placement and the domain XML the prolog would create
 * for the given job parameters, without touching anything. --topology and
 * --sysfs let any machine be planned from anywhere. --seed-dir also writes
 * the cloud-init seed the prolog would attach (as root), so that the guest
 * of a hand test (virsh create) gets its user, shares and agent.
 */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "common_opts.h"
#include "hw/devices.h"
#include "vm/domain.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "hw/placement.h"
#include "vm/seed.h"
#include "core/strutil.h"
#include "job/user.h"

enum { OUT_BOTH, OUT_XML, OUT_SUMMARY };

struct plan_opts {
	const char *config, *sysfs, *topology;
	char **sets;
	size_t n_sets;
	const char *cpus, *gpus, *ibvfs, *mem, *housekeeping, *hugepages;
	const char *seed_dir, *user;
	unsigned vm_cpus;
	int output;
	struct domain_params dp;
};

static void plan_usage(FILE *out)
{
	fprintf(out,
		"usage: slurm-vm plan --cpus LIST --mem SIZE [options]\n\n"
		"  --cpus LIST          the job's OS CPU ids on the node, "
		"e.g. 0-7,16-23\n"
		"  --mem SIZE           the job's memory on the node (512M, "
		"64G)\n"
		"  --gpus PCI,...       GPUs given to the job\n"
		"  --ibvfs PCI,...      InfiniBand/RoCE VFs given to the job\n"
		"  --housekeeping LIST  CPUs for the emulator (CpuSpecList)\n"
		"  --hugepages 2M|1G    back guest memory with huge pages\n"
		"  --vm-cpus N          fewer vCPUs than the job's CPUs\n"
		"  --image PATH         base image; --overlay PATH, --seed "
		"PATH,\n"
		"  --kernel PATH, --initrd PATH, --cmdline TEXT, --console-log "
		"PATH,\n"
		"  --channel PATH, --name NAME, --job-id N, --uid N\n"
		"  --uefi NVRAM         boot UEFI (vm.conf UefiCode) with this "
		"NVRAM\n"
		"  --seed-dir DIR --user USER\n"
		"                       write the cloud-init seed the prolog "
		"would (USER,\n"
		"                       the shares, the agent) as DIR/seed.iso "
		"and attach it\n"
		"                       (root; instead of --seed)\n"
		"  --config FILE        vm.conf (default: beside slurm.conf)\n"
		"  --sysfs DIR          sysfs root (vm.conf SysfsRoot)\n"
		"  --topology FILE      hwloc XML (vm.conf TopologyFile)\n"
		"  --set Key=Value      override a vm.conf key\n"
		"  --xml | --summary    print only that part\n");
}

static int parse_uint_opt(const char *name, const char *s, unsigned *v)
{
	if (str_to_uint(s, v) < 0) {
		log_error("--%s=%s: not a number", name, s);
		return -EINVAL;
	}
	return 0;
}

static int plan_parse(int argc, char **argv, struct plan_opts *o)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "sysfs", required_argument, NULL, 's' },
		{ "topology", required_argument, NULL, 't' },
		{ "set", required_argument, NULL, 'S' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "ibvfs", required_argument, NULL, 'i' },
		{ "mem", required_argument, NULL, 'm' },
		{ "housekeeping", required_argument, NULL, 'k' },
		{ "hugepages", required_argument, NULL, 'H' },
		{ "vm-cpus", required_argument, NULL, 'v' },
		{ "image", required_argument, NULL, 1 },
		{ "overlay", required_argument, NULL, 2 },
		{ "seed", required_argument, NULL, 3 },
		{ "kernel", required_argument, NULL, 4 },
		{ "initrd", required_argument, NULL, 5 },
		{ "cmdline", required_argument, NULL, 6 },
		{ "console-log", required_argument, NULL, 7 },
		{ "channel", required_argument, NULL, 8 },
		{ "name", required_argument, NULL, 9 },
		{ "job-id", required_argument, NULL, 10 },
		{ "uid", required_argument, NULL, 11 },
		{ "xml", no_argument, NULL, 12 },
		{ "summary", no_argument, NULL, 13 },
		{ "uefi", required_argument, NULL, 14 },
		{ "seed-dir", required_argument, NULL, 15 },
		{ "user", required_argument, NULL, 16 },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	unsigned v;
	int c;

	while ((c = getopt_long(argc, argv, "c:s:t:S:C:g:i:m:k:H:v:h", opts,
				NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 's':
			o->sysfs = optarg;
			break;
		case 't':
			o->topology = optarg;
			break;
		case 'S':
			o->sets[o->n_sets++] = optarg;
			break;
		case 'C':
			o->cpus = optarg;
			break;
		case 'g':
			o->gpus = optarg;
			break;
		case 'i':
			o->ibvfs = optarg;
			break;
		case 'm':
			o->mem = optarg;
			break;
		case 'k':
			o->housekeeping = optarg;
			break;
		case 'H':
			o->hugepages = optarg;
			break;
		case 'v':
			if (parse_uint_opt("vm-cpus", optarg, &o->vm_cpus) < 0)
				return 2;
			break;
		case 1:
			o->dp.image = optarg;
			break;
		case 2:
			o->dp.overlay = optarg;
			break;
		case 3:
			o->dp.seed = optarg;
			break;
		case 4:
			o->dp.kernel = optarg;
			break;
		case 5:
			o->dp.initrd = optarg;
			break;
		case 6:
			o->dp.cmdline = optarg;
			break;
		case 7:
			o->dp.console_log = optarg;
			break;
		case 8:
			o->dp.channel_socket = optarg;
			break;
		case 9:
			o->dp.name = optarg;
			break;
		case 10:
			if (parse_uint_opt("job-id", optarg, &v) < 0)
				return 2;
			o->dp.job_id = v;
			break;
		case 11:
			if (parse_uint_opt("uid", optarg, &v) < 0)
				return 2;
			o->dp.uid = v;
			break;
		case 12:
			o->output = OUT_XML;
			break;
		case 13:
			o->output = OUT_SUMMARY;
			break;
		case 14:
			o->dp.nvram = optarg;
			break;
		case 15:
			o->seed_dir = optarg;
			break;
		case 16:
			o->user = optarg;
			break;
		case 'h':
			plan_usage(stdout);
			return 1;
		default:
			plan_usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !o->cpus || !o->mem) {
		log_error("--cpus and --mem are required");
		plan_usage(stderr);
		return 2;
	}
	if (!o->seed_dir != !o->user || (o->seed_dir && o->dp.seed)) {
		log_error("--seed-dir DIR goes with --user USER (the job user "
			  "the seed makes in the guest), and not with --seed");
		plan_usage(stderr);
		return 2;
	}
	return 0;
}

struct plan_devs {
	struct pci_device *devs;
	struct plan_device_request *req;
	size_t n;
};

static void plan_devs_free(struct plan_devs *d)
{
	for (size_t i = 0; i < d->n; i++)
		pci_device_clear(&d->devs[i]);
	free(d->devs);
	free(d->req);
}

/* --gpus takes GPUs, --ibvfs InfiniBand/RoCE VFs: nothing else. */
static int plan_check_kind(const struct pci_device *dev, const char *gres)
{
	bool gpu = strcmp(gres, "gpu") == 0;

	if (gpu ? dev->kind == PCI_KIND_GPU
		: (dev->kind == PCI_KIND_IB || dev->kind == PCI_KIND_ROCE) &&
			    dev->is_vf)
		return 0;
	log_error("%s is a %s%s function (class %06x), not %s", dev->addr,
		  pci_kind_name(dev->kind), dev->is_vf ? " VF" : "", dev->class,
		  gpu ? "a GPU" : "an InfiniBand or RoCE VF");
	return -EINVAL;
}

static int plan_add_devices(const char *sysfs, const char *list,
			    const char *gres, struct plan_devs *d)
{
	_cleanup_strv_free_ char **addrs = NULL;
	size_t n;
	int r;

	if (!list)
		return 0;
	r = strv_split(list, ',', &addrs);
	if (r < 0)
		return r;
	n = strv_length(addrs);
	for (size_t i = 0; i < n; i++) {
		size_t k = d->n;
		r = devices_read(sysfs, addrs[i], &d->devs[k]);
		if (r < 0)
			return r;
		r = plan_check_kind(&d->devs[k], gres);
		if (r < 0) {
			pci_device_clear(&d->devs[k]);
			return r;
		}
		d->req[k] = (struct plan_device_request){ .dev = &d->devs[k],
							  .gres = gres,
							  .gres_index = -1 };
		d->n++;
	}
	return 0;
}

static int plan_hugepages(const char *s, unsigned *kib)
{
	if (!s)
		return 0;
	if (strcasecmp(s, "2M") == 0)
		*kib = 2048;
	else if (strcasecmp(s, "1G") == 0)
		*kib = 1048576;
	else {
		log_error("--hugepages=%s: use 2M or 1G", s);
		return -EINVAL;
	}
	return 0;
}

/* @dir: root's and writable only by root, as the prolog's state directory
 * (the seed holds the user's keys and groups); made 0700 if missing. */
static int seed_dir_prepare(const char *dir, char **abs)
{
	_cleanup_close_ int fd = dir_open_root_private(dir, 0700, "--seed-dir");

	if (fd < 0)
		return fd;
	if (mkdirat(fd, "seed", 0700) < 0 && errno != EEXIST)
		return log_errno(errno, "cannot create %s/seed", dir);
	*abs = realpath(dir, NULL); /* libvirt takes absolute paths only */
	return *abs ? 0 : log_errno(errno, "cannot resolve %s", dir);
}

/* The prolog's seed (prolog/boot.c boot_seed) for --user on this node:
 * its host name, the user with the host's groups and authorized_keys,
 * vm.conf's shares, HelperDir's agent; no job network (DHCP). */
static int plan_write_seed(const struct plan_opts *o, const struct vmconf *conf,
			   char **iso)
{
	_cleanup_free_ char *dir = NULL, *docs = NULL, *keys = NULL,
			    *agent = NULL;
	struct user_info user = { 0 };
	char host[HOST_NAME_MAX + 1] = "";
	struct passwd *pw;
	int r;

	pw = getpwnam(o->user);
	if (!pw) {
		log_error("--user %s: no such user on this node", o->user);
		return -ENOENT;
	}
	r = seed_dir_prepare(o->seed_dir, &dir);
	if (r < 0)
		return r;
	if (asprintf(&docs, "%s/seed", dir) < 0 ||
	    asprintf(iso, "%s/seed.iso", dir) < 0)
		return -ENOMEM;
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] =
		'\0'; /* Slurm's node name is the short one */
	r = user_info_load(pw->pw_uid, pw->pw_gid, &user);
	if (r == 0)
		r = seed_read_ssh_keys(&user, &keys);
	if (r == 0)
		r = seed_find_agent(conf->helper_dir, &agent);
	if (r == 0) {
		struct seed_params sp = {
			.job_id = o->dp.job_id,
			.hostname = host[0] ? host : "localhost",
			.user = &user,
			.ssh_keys = keys,
			.agent = agent,
			.shares = conf->shared_dirs,
			.n_shares = (unsigned)vmconf_n_shared_dirs(conf),
		};
		r = seed_build(&sp, docs, *iso);
	}
	if (r < 0)
		log_error("cannot make the seed %s for user %s", *iso, o->user);
	user_info_free(&user);
	return r;
}

static int plan_print(const struct plan *plan, const struct plan_opts *o,
		      const struct vmconf *conf)
{
	_cleanup_free_ char *summary = NULL, *xml = NULL, *seed = NULL;
	struct domain_params dp = o->dp;
	char name[64];
	int r;

	if (o->seed_dir) {
		r = plan_write_seed(o, conf, &seed);
		if (r < 0)
			return r;
		dp.seed = seed;
	}
	if (!dp.name) {
		snprintf(name, sizeof(name), "slurm-vm-%u", dp.job_id);
		dp.name = name;
	}
	domain_params_from_conf(&dp, conf);
	if (dp.nvram)
		dp.uefi_code = conf->uefi_code;
	r = plan_summary(plan, &summary);
	if (r < 0)
		return r;
	r = domain_xml_build(plan, &dp, &xml);
	if (r < 0)
		return r;
	if (o->output != OUT_XML)
		fputs(summary, stdout);
	if (o->output == OUT_BOTH)
		putchar('\n');
	if (o->output != OUT_SUMMARY)
		fputs(xml, stdout);
	return 0;
}

static int plan_run(struct plan_opts *o, const struct vmconf *conf)
{
	_cleanup_topology_ struct topology *topo = NULL;
	struct plan_devs devs = { 0 };
	struct plan_request req = {
		.cpus = o->cpus,
		.housekeeping = o->housekeeping,
		.max_vcpus = o->vm_cpus,
		.mem_overhead_mib = conf->mem_overhead_mb,
		.require_locality = conf->require_locality,
	};
	struct plan plan = { 0 };
	size_t max = 2;
	int r;

	if (str_to_mib(o->mem, &req.mem_mib) < 0) {
		log_error("--mem=%s: not a size like 4096, 512M or 64G",
			  o->mem);
		return -EINVAL;
	}
	r = plan_hugepages(o->hugepages, &req.hugepage_kib);
	if (r < 0)
		return r;
	r = topology_load(conf->topology_file, &topo);
	if (r < 0)
		return r;
	max += o->gpus ? strlen(o->gpus) : 0;
	max += o->ibvfs ? strlen(o->ibvfs) : 0;
	devs.devs = calloc(max, sizeof(*devs.devs));
	devs.req = calloc(max, sizeof(*devs.req));
	r = devs.devs && devs.req ? 0 : -ENOMEM;
	if (r == 0)
		r = plan_add_devices(conf->sysfs_root, o->gpus, "gpu", &devs);
	if (r == 0)
		r = plan_add_devices(conf->sysfs_root, o->ibvfs, "ibvf", &devs);
	if (r == 0) {
		req.devices = devs.req;
		req.n_devices = devs.n;
		r = plan_compute(topo, &req, &plan);
	}
	if (r == 0)
		r = plan_print(&plan, o, conf);
	plan_free(&plan);
	plan_devs_free(&devs);
	return r;
}

int cmd_plan(int argc, char **argv)
{
	struct plan_opts o = { 0 };
	_cleanup_free_ char **sets = calloc(argc + 1, sizeof(*sets));
	struct vmconf conf;
	int r;

	if (!sets)
		return 1;
	o.sets = sets;
	r = plan_parse(argc, argv, &o);
	if (r)
		return r == 1 ? 0 : r;
	/* Before anything is read: a user's run would fail later, on a file
	 * only root may read, with a less useful message. */
	if (o.seed_dir && geteuid() != 0) {
		log_error("--seed-dir needs root: the seed is made the user's "
			  "and their keys are read as them, as in the prolog");
		return 1;
	}
	if (admin_load_config(&conf, o.config, o.sysfs, o.topology, o.sets) < 0)
		return 1;
	r = plan_run(&o, &conf);
	vmconf_free(&conf);
	return r < 0 ? 1 : 0;
}
