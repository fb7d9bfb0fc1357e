/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "job/kvconf.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/strutil.h"
#include "job/vmconf.h"

static const char *const binding_choices[] = { "prebound", "managed", NULL };
static const char *const attach_choices[] = { "vfio", "emulate", NULL };
static const char *const domain_types[] = { "kvm", "qemu", NULL };
static const char *const job_networks[] = { "none", "vxlan", NULL };
static const char *const share_transports[] = { "9p", "virtiofs", "auto",
						NULL };
static const char *const boot_modes[] = { "cold", "warm", NULL };
static const char *const cpu_modes[] = { "host-passthrough", "host-model",
					 "maximum", NULL };

#define K(n, t, f, ...)                                                     \
	{                                                                   \
		.name = n, .type = t, .offset = offsetof(struct vmconf, f), \
		__VA_ARGS__                                                 \
	}

/* The order here is the order of vm.conf(5) and of `slurm-vm show-config`. */
static const struct kv_key keys[] = {
	K("ImageCatalog", KV_PATH, image_catalog,
	  .defval = SYSCONFDIR "/slurm/vm-images.d"),
	K("ImageDirs", KV_PATHLIST, image_dirs,
	  .defval = "/var/lib/slurm-vm/images"),
	K("AllowUserImages", KV_BOOL, allow_user_images, .defval = "no"),
	K("StateDir", KV_PATH, state_dir, .defval = "/run/slurm-vm"),
	K("OverlayDir", KV_PATH, overlay_dir,
	  .defval = "/var/lib/slurm-vm/overlays"),
	K("OverlayMaxSize", KV_U64, overlay_max_gib, .max = 1 << 20,
	  .defval = "1024"),
	K("KeepFor", KV_UINT, keep_for_hours, .max = 24 * 3650,
	  .defval = "168"),
	K("LogFile", KV_PATH, log_file),
	K("HelperDir", KV_PATH, helper_dir, .defval = PKGLIBEXECDIR),
	K("LogLevel", KV_LOGLEVEL, log_level, .defval = "info"),
	K("LibvirtURI", KV_STRING, libvirt_uri, .defval = "qemu:///system"),
	K("DomainType", KV_CHOICE, domain_type, .choices = domain_types,
	  .defval = "kvm"),
	K("CpuMode", KV_CHOICE, cpu_mode, .choices = cpu_modes,
	  .defval = "host-passthrough"),
	K("Emulator", KV_PATH, emulator),
	K("CgroupPartition", KV_PATH, cgroup_partition),
	K("BootTimeout", KV_UINT, boot_timeout, .max = 3600, .defval = "300"),
	K("ShutdownTimeout", KV_UINT, shutdown_timeout, .max = 600,
	  .defval = "30"),
	K("MemOverhead", KV_U64, mem_overhead_mb, .max = 1 << 20,
	  .defval = "512"),
	K("AllowRoot", KV_BOOL, allow_root, .defval = "no"),
	K("Boot", KV_BOOL, boot, .defval = "yes"),
	K("BootMode", KV_ENUM, boot_mode, .choices = boot_modes,
	  .defval = "cold"),
	K("WarmDir", KV_PATH, warm_dir,
	  .defval = LOCALSTATEDIR "/lib/slurm-vm/warm"),
	K("WarmTemplates", KV_UINT, warm_templates, .max = 1024, .defval = "4"),
	K("WarmCacheSize", KV_U64, warm_cache_gib, .max = 1 << 20,
	  .defval = "32"),
	K("UefiCode", KV_PATH, uefi_code,
	  .defval = "/usr/share/OVMF/OVMF_CODE_4M.fd"),
	K("UefiVars", KV_PATH, uefi_vars,
	  .defval = "/usr/share/OVMF/OVMF_VARS_4M.fd"),
	K("UefiMmio64Window", KV_U64, uefi_mmio64_gib, .max = 1 << 16,
	  .defval = "0"),
	K("SysfsRoot", KV_PATH, sysfs_root, .defval = "/sys"),
	K("TopologyFile", KV_PATH, topology_file),
	K("DeviceBinding", KV_ENUM, device_binding, .choices = binding_choices,
	  .defval = "prebound"),
	K("DeviceAttach", KV_ENUM, device_attach, .choices = attach_choices,
	  .defval = "vfio"),
	K("RequireLocality", KV_BOOL, require_locality, .defval = "yes"),
	K("VfioDir", KV_PATH, vfio_dir, .defval = "/dev/vfio"),
	K("IbvfAutoDetect", KV_BOOL, ibvf_autodetect, .defval = "no"),
	K("TaskTmpDir", KV_STRING, task_tmpdir, .defval = "/tmp"),
	K("BatchInVM", KV_BOOL, batch_in_vm, .defval = "no"),
	K("SharedDirs", KV_PATHLIST, shared_dirs, .sep = ','),
	/* virtiofs where a Rust virtiofsd is installed, else 9p */
	K("SharedDirTransport", KV_ENUM, shared_dir_transport,
	  .choices = share_transports, .defval = "auto"),
	K("VirtiofsdPath", KV_PATH, virtiofsd_path,
	  .defval = "/usr/libexec/virtiofsd"),
	K("JobNetwork", KV_ENUM, job_network, .choices = job_networks,
	  .defval = "none"),
	K("JobNetworkUnderlay", KV_STRING, jobnet_underlay),
	K("JobNetworkVni", KV_STRING, jobnet_vni_text,
	  .defval = "100000-16000000"),
	K("JobNetworkSubnet", KV_STRING, jobnet_subnet_text,
	  .defval = "10.200.0.0/16"),
	K("JobNetworkMtu", KV_UINT, jobnet_mtu, .max = 65485, .defval = "0"),
	K("IbPartitions", KV_BOOL, ib_partitions, .defval = "no"),
	K("IbPKeyRange", KV_STRING, ib_pkey_text, .defval = "0x1000-0x7ffe"),
	K("IbGuidPrefix", KV_STRING, ib_guid_prefix_text, .defval = "0x0200"),
	K("IbPartitionDir", KV_PATH, ib_partition_dir),
};

static const struct kv_table vmconf_table = {
	.keys = keys,
	.n_keys = ARRAY_SIZE(keys),
	.manual = "vm.conf(5)",
};

int vmconf_set(struct vmconf *conf, const char *item, const char *where)
{
	return kv_set(&vmconf_table, conf, item, where);
}

/* A number of at most @max: decimal, or hex after "0x". */
static int parse_number(const char *s, unsigned long max, unsigned long *out)
{
	bool hex = strncasecmp(s, "0x", 2) == 0;
	char *end;

	if (hex)
		s += 2;
	if (!isxdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, hex ? 16 : 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

/* "MIN-MAX", 1 <= MIN <= MAX <= @limit. */
static int parse_range(const char *s, unsigned long limit, unsigned long *min,
		       unsigned long *max)
{
	_cleanup_free_ char *lo = NULL;
	const char *dash = strchr(s, '-');

	if (!dash)
		return -EINVAL;
	lo = strndup(s, (size_t)(dash - s));
	if (!lo)
		return -ENOMEM;
	if (parse_number(lo, limit, min) < 0 ||
	    parse_number(dash + 1, limit, max) < 0 || *min < 1 || *min > *max)
		return -EINVAL;
	return 0;
}

/* "A.B.C.D/N", 8 <= N <= 30, no host bits set. */
int vmconf_parse_subnet(const char *s, uint32_t *net, unsigned *prefix)
{
	_cleanup_free_ char *addr = NULL;
	const char *slash = strchr(s, '/');
	struct in_addr in;
	unsigned n;
	uint32_t a, mask;

	if (!slash)
		return -EINVAL;
	addr = strndup(s, (size_t)(slash - s));
	if (!addr)
		return -ENOMEM;
	if (inet_pton(AF_INET, addr, &in) != 1 ||
	    str_to_uint(slash + 1, &n) < 0 || n < 8 || n > 30)
		return -EINVAL;
	a = ntohl(in.s_addr);
	mask = ~0u << (32 - n);
	if (a & ~mask)
		return -EINVAL;
	*net = a;
	*prefix = n;
	return 0;
}

static int vmconf_check_ib(struct vmconf *conf, const char *path)
{
	unsigned long lo, hi, prefix;

	/* 0x7fff is the default partition's */
	if (parse_range(conf->ib_pkey_text, 0x7ffe, &lo, &hi) < 0)
		return log_errno(EINVAL,
				 "%s: IbPKeyRange=%s: a range MIN-MAX of "
				 "partition keys within 0x0001-0x7ffe; see "
				 "vm.conf(5)",
				 path, conf->ib_pkey_text);
	if (parse_number(conf->ib_guid_prefix_text, 0xffff, &prefix) < 0 ||
	    !prefix)
		return log_errno(EINVAL,
				 "%s: IbGuidPrefix=%s: the first 16 bits of "
				 "the GUIDs given to VFs, 0x0001-0xffff (e.g. "
				 "0x0200, locally administered); see "
				 "vm.conf(5)",
				 path, conf->ib_guid_prefix_text);
	conf->ib_pkey_min = lo;
	conf->ib_pkey_max = hi;
	conf->ib_guid_prefix = prefix;
	return 0;
}

/* The job network's keys, which depend on each other. */
static int vmconf_check_jobnet(struct vmconf *conf, const char *path)
{
	unsigned long lo, hi;

	if (parse_range(conf->jobnet_vni_text, 0xffffff, &lo, &hi) < 0)
		return log_errno(EINVAL,
				 "%s: JobNetworkVni=%s: a range MIN-MAX of "
				 "VXLAN ids within 1-16777215; see vm.conf(5)",
				 path, conf->jobnet_vni_text);
	conf->jobnet_vni_min = lo;
	conf->jobnet_vni_max = hi;
	if (vmconf_parse_subnet(conf->jobnet_subnet_text, &conf->jobnet_subnet,
				&conf->jobnet_prefix) < 0)
		return log_errno(EINVAL,
				 "%s: JobNetworkSubnet=%s: an IPv4 network "
				 "A.B.C.D/N with N in 8-30 and no host bits; "
				 "see vm.conf(5)",
				 path, conf->jobnet_subnet_text);
	if (conf->jobnet_mtu && conf->jobnet_mtu < 1280)
		return log_errno(EINVAL,
				 "%s: JobNetworkMtu=%u: at least 1280, or 0 "
				 "for the underlay's minus 50; see vm.conf(5)",
				 path, conf->jobnet_mtu);
	if (conf->job_network == JOB_NETWORK_VXLAN &&
	    (!conf->jobnet_underlay ||
	     !str_is_safe_name(conf->jobnet_underlay, 15)))
		return log_errno(EINVAL,
				 "%s: JobNetwork=vxlan needs "
				 "JobNetworkUnderlay=<interface name>; see "
				 "vm.conf(5)",
				 path);
	return 0;
}

size_t vmconf_n_shared_dirs(const struct vmconf *conf)
{
	size_t n = 0;

	while (conf->shared_dirs && conf->shared_dirs[n])
		n++;
	return n;
}

int vmconf_shared_dir_usable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* A share's path reaches the domain XML, the seed's YAML and the guest's
 * mount(8) as is: absolute, normalized, and of characters none of them
 * reads specially. "/" would hide the guest's own root. */
static bool share_path_ok(const char *s)
{
	size_t len = strlen(s);

	if (s[0] != '/' || len < 2 || len > SHARED_DIR_PATH_MAX)
		return false;
	for (const char *c = s; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("/._+@-", *c))
			return false;
	/* each component: not empty, not "." or ".." */
	for (const char *c = s + 1; c;) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = c[n] ? c + n + 1 : NULL;
	}
	return true;
}

/* Is @inner the same directory as @outer or below it? */
static bool path_within(const char *inner, const char *outer)
{
	size_t n = strlen(outer);

	return strncmp(inner, outer, n) == 0 &&
	       (inner[n] == '\0' || inner[n] == '/');
}

static int vmconf_check_shares(const struct vmconf *conf, const char *path)
{
	size_t n = vmconf_n_shared_dirs(conf);
	char *const *d = conf->shared_dirs;

	if (n > SHARED_DIRS_MAX)
		return log_errno(
			EINVAL,
			"%s: SharedDirs: %zu directories, at most %d; "
			"share a common parent instead; see vm.conf(5)",
			path, n, SHARED_DIRS_MAX);
	for (size_t i = 0; i < n; i++) {
		if (!share_path_ok(d[i]))
			return log_errno(EINVAL,
					 "%s: SharedDirs: '%s': a normalized "
					 "absolute path other than /, of "
					 "letters, digits and /._+@- only; "
					 "see vm.conf(5)",
					 path, d[i]);
		for (size_t j = 0; j < i; j++)
			if (path_within(d[i], d[j]) || path_within(d[j], d[i]))
				return log_errno(EINVAL,
						 "%s: SharedDirs: '%s' and "
						 "'%s' overlap; list only the "
						 "outer one; see vm.conf(5)",
						 path, d[j], d[i]);
	}
	return 0;
}

int vmconf_load(struct vmconf *conf, const char *path)
{
	int r;

	memset(conf, 0, sizeof(*conf));
	r = kv_defaults(&vmconf_table, conf);
	if (r == 0)
		r = vmconf_check_jobnet(conf, "defaults");
	if (r == 0)
		r = vmconf_check_ib(conf, "defaults");
	if (r < 0 || !path)
		return r;
	conf->path = strdup(path);
	if (!conf->path)
		return -ENOMEM;
	r = kv_parse_file(&vmconf_table, conf, path);
	if (r == 0 && strcmp(conf->task_tmpdir, "keep") != 0 &&
	    (conf->task_tmpdir[0] != '/' || strchr(conf->task_tmpdir, '\n')))
		r = log_errno(
			EINVAL,
			"%s: TaskTmpDir=%s: an absolute path or \"keep\"; "
			"see vm.conf(5)",
			path, conf->task_tmpdir);
	if (r == 0)
		r = vmconf_check_jobnet(conf, path);
	if (r == 0)
		r = vmconf_check_ib(conf, path);
	if (r == 0)
		r = vmconf_check_shares(conf, path);
	return r;
}

char *slurm_conf_sibling(const char *name)
{
	const char *slurm_conf = getenv("SLURM_CONF");
	const char *slash;
	char *path;

	if (!slurm_conf || !*slurm_conf)
		slurm_conf = "/etc/slurm/slurm.conf";
	slash = strrchr(slurm_conf, '/');
	if (!slash)
		return strdup(name);
	if (asprintf(&path, "%.*s/%s", (int)(slash - slurm_conf), slurm_conf,
		     name) < 0)
		return NULL;
	return path;
}

char *vmconf_default_path(void)
{
	return slurm_conf_sibling("vm.conf");
}

void vmconf_free(struct vmconf *conf)
{
	kv_free(&vmconf_table, conf);
	free(conf->path);
	memset(conf, 0, sizeof(*conf));
}

void vmconf_print(const struct vmconf *conf, FILE *out)
{
	kv_print(&vmconf_table, conf, out);
}

const char *const *vmconf_keys(void)
{
	static const char *names[ARRAY_SIZE(keys) + 1];

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		names[i] = keys[i].name;
	return names;
}
