/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pci/pci.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/devices.h"
#include "core/fileutil.h"
#include "core/log.h"
#include "core/strutil.h"

#define MAX_GROUP_FUNCS 256
#define MAX_NUMA_NODE	4095

int pci_addr_canonical(const char *s, char out[PCI_ADDR_MAX])
{
	unsigned dom = 0, bus, slot, fn;
	int n = 0;

	if (!s)
		return -EINVAL;
	if (sscanf(s, "%4x:%2x:%2x.%1x%n", &dom, &bus, &slot, &fn, &n) == 4 &&
	    s[n] == '\0' && n == 12)
		goto ok;
	dom = 0;
	n = 0;
	if (sscanf(s, "%2x:%2x.%1x%n", &bus, &slot, &fn, &n) == 3 &&
	    s[n] == '\0' && n == 7)
		goto ok;
	return -EINVAL;
ok:
	if (slot > 0x1f || fn > 7)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
			return -EINVAL;
	snprintf(out, PCI_ADDR_MAX, "%04x:%02x:%02x.%x", dom, bus, slot, fn);
	return 0;
}

int pci_addr_cmp(const char *a, const char *b)
{
	/* canonical forms have fixed width, so strcmp orders numerically */
	return strcmp(a, b);
}

enum pci_kind pci_classify(uint16_t vendor, uint32_t class)
{
	unsigned cls = class >> 8;

	if ((class >> 16) == 0x03)
		return PCI_KIND_GPU;
	if (vendor != PCI_VENDOR_MELLANOX)
		return PCI_KIND_OTHER;
	if (cls == 0x0c06 || cls == 0x0207)
		return PCI_KIND_IB;
	if (cls == 0x0200)
		return PCI_KIND_ROCE;
	return PCI_KIND_OTHER;
}

const char *pci_kind_name(enum pci_kind kind)
{
	switch (kind) {
	case PCI_KIND_GPU:
		return "gpu";
	case PCI_KIND_IB:
		return "ib";
	case PCI_KIND_ROCE:
		return "roce";
	default:
		return "other";
	}
}

/* Reads the first line of @dir/@name without its newline. -ENOENT if
 * missing, -EINVAL if empty or too long. */
int sysfs_attr_read(const char *dir, const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t len;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, size, f)) {
		log_error("%s: empty or unreadable", path);
		return -EINVAL;
	}
	len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if (len == size - 1) {
		log_error("%s: line too long", path);
		return -EINVAL;
	}
	return len ? 0 : -EINVAL;
}

static int read_hex(const char *dir, const char *name, uint32_t max,
		    uint32_t *out)
{
	char buf[32], *end;
	unsigned long v;
	int r;

	r = sysfs_attr_read(dir, name, buf, sizeof(buf));
	if (r < 0)
		return log_errno(r, "%s/%s: cannot read", dir, name);
	errno = 0;
	if (strncmp(buf, "0x", 2) != 0 || !isxdigit((unsigned char)buf[2]))
		goto bad;
	v = strtoul(buf + 2, &end, 16);
	if (errno || *end || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	log_error("%s/%s: \"%s\" is not a hex number up to 0x%x", dir, name,
		  buf, max);
	return -EINVAL;
}

static int read_numa_node(const char *dir, int *node)
{
	char buf[32];
	unsigned v;
	int r;

	r = sysfs_attr_read(dir, "numa_node", buf, sizeof(buf));
	if (r == -ENOENT) {
		*node = -1; /* no NUMA support or firmware gave none */
		return 0;
	}
	if (r < 0)
		return log_errno(r, "%s/numa_node: cannot read", dir);
	if (strcmp(buf, "-1") == 0) {
		*node = -1;
		return 0;
	}
	if (str_to_uint(buf, &v) < 0 || v > MAX_NUMA_NODE) {
		log_error("%s/numa_node: \"%s\" is not a NUMA node number", dir,
			  buf);
		return -EINVAL;
	}
	*node = v;
	return 0;
}

static int read_iommu_group(const char *dir, int *group)
{
	_cleanup_free_ char *path = NULL;
	char name[32];
	struct stat st;
	unsigned v;
	int r;

	r = file_link_name(dir, "iommu_group", name, sizeof(name));
	if (r == -ENOENT) {
		*group = -1; /* no IOMMU */
		return 0;
	}
	if (r < 0 || str_to_uint(name, &v) < 0 || v > INT_MAX) {
		log_error("%s/iommu_group: not a link to an IOMMU group number",
			  dir);
		return -EINVAL;
	}
	if (asprintf(&path, "%s/iommu_group", dir) < 0)
		return -ENOMEM;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return log_errno(errno ? errno : ENOTDIR,
				 "%s: IOMMU group %u is missing", path, v);
	*group = v;
	return 0;
}

static int first_entry(const char *dir, const char *sub, char **out)
{
	_cleanup_free_ char *path = NULL;
	struct dirent *de;
	DIR *d;
	int r = -ENOENT;

	if (asprintf(&path, "%s/%s", dir, sub) < 0)
		return -ENOMEM;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		*out = strdup(de->d_name);
		r = *out ? 0 : -ENOMEM;
		break;
	}
	closedir(d);
	return r;
}

static int cmp_func(const void *a, const void *b)
{
	return pci_addr_cmp(((const struct pci_function *)a)->addr,
			    ((const struct pci_function *)b)->addr);
}

int devices_iommu_group(const char *sysfs_root, int group,
			struct pci_function **funcs, size_t *n)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ struct pci_function *v = NULL;
	struct dirent *de;
	size_t count = 0;
	DIR *d;
	int r = 0;

	if (group < 0)
		return -EINVAL;
	if (asprintf(&path, "%s/kernel/iommu_groups/%d/devices", sysfs_root,
		     group) < 0)
		return -ENOMEM;
	d = opendir(path);
	if (!d)
		return log_errno(errno, "%s: cannot list IOMMU group", path);
	v = calloc(MAX_GROUP_FUNCS, sizeof(*v));
	if (!v) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *fpath = NULL;
		struct pci_function *f = &v[count];
		char pf[PCI_ADDR_MAX + 8];
		uint32_t cls;

		if (de->d_name[0] == '.')
			continue;
		if (count == MAX_GROUP_FUNCS ||
		    pci_addr_canonical(de->d_name, f->addr) < 0) {
			r = log_errno(EINVAL, "%s/%s: unexpected entry", path,
				      de->d_name);
			break;
		}
		if (asprintf(&fpath, "%s/%s", path, de->d_name) < 0) {
			r = -ENOMEM;
			break;
		}
		f->class =
			read_hex(fpath, "class", 0xffffff, &cls) == 0 ? cls : 0;
		f->is_vf = file_link_name(fpath, "physfn", pf, sizeof(pf)) == 0;
		count++;
	}
	closedir(d);
	if (r < 0)
		return r;
	qsort(v, count, sizeof(*v), cmp_func);
	*funcs = TAKE_PTR(v);
	*n = count;
	return 0;
}

static int read_rdma_dev(const char *sysfs_root, struct pci_device *dev,
			 const char *dir)
{
	_cleanup_free_ char *pfdir = NULL;
	int r;

	r = first_entry(dir, "infiniband", &dev->rdma_dev);
	if (r != -ENOENT || !dev->is_vf)
		return r == -ENOENT ? 0 : r;
	/* a VF bound to vfio-pci has no RDMA device: its PF's tells the port */
	if (asprintf(&pfdir, "%s/bus/pci/devices/%s", sysfs_root, dev->physfn) <
	    0)
		return -ENOMEM;
	r = first_entry(pfdir, "infiniband", &dev->rdma_dev);
	return r == -ENOENT ? 0 : r;
}

static int read_ids(const char *dir, struct pci_device *dev)
{
	uint32_t v;
	int r;

	r = read_hex(dir, "vendor", 0xffff, &v);
	if (r < 0)
		return r;
	dev->vendor = v;
	r = read_hex(dir, "device", 0xffff, &v);
	if (r < 0)
		return r;
	dev->device = v;
	r = read_hex(dir, "class", 0xffffff, &dev->class);
	if (r < 0)
		return r;
	dev->kind = pci_classify(dev->vendor, dev->class);
	return 0;
}

static int read_sriov(const char *dir, struct pci_device *dev)
{
	char buf[32];
	int r;

	r = file_link_name(dir, "physfn", buf, sizeof(buf));
	if (r == 0) {
		if (pci_addr_canonical(buf, dev->physfn) < 0) {
			log_error("%s/physfn: \"%s\" is not a PCI address", dir,
				  buf);
			return -EINVAL;
		}
		dev->is_vf = true;
	} else if (r != -ENOENT) {
		return log_errno(r, "%s/physfn: unreadable", dir);
	}
	r = sysfs_attr_read(dir, "sriov_numvfs", buf, sizeof(buf));
	if (r == 0 && str_to_uint(buf, &dev->num_vfs) < 0) {
		log_error("%s/sriov_numvfs: \"%s\" is not a number", dir, buf);
		return -EINVAL;
	}
	return r == 0 || r == -ENOENT ? 0 : r;
}

/* From the bus/pci/devices link, "../../../devices/pci0000:3a/0000:3a:00.0/
 * 0000:3b:00.0/0000:3c:08.0/0000:3d:00.0": root port, switch upstream port,
 * downstream port, function. A VF sits beside its PF, under the same ports.
 * A tree without such links (no hierarchy known) means no switch. */
static int read_switch(const char *dir, struct pci_device *dev)
{
	char target[PATH_MAX], *p, *tok, *save = NULL, *below_root[2];
	unsigned depth = 0;
	ssize_t n;

	n = readlink(dir, target, sizeof(target) - 1);
	if (n < 0)
		return errno == EINVAL ? 0 : log_errno(errno, "%s", dir);
	target[n] = '\0';
	p = strstr(target, "devices/pci");
	if (!p || !(p = strchr(p + strlen("devices/"), '/')))
		return 0;
	for (tok = strtok_r(p, "/", &save); tok;
	     tok = strtok_r(NULL, "/", &save)) {
		if (depth < 2)
			below_root[depth] = tok;
		depth++;
	}
	if (depth < 3)
		return 0;
	if (pci_addr_canonical(below_root[1], dev->host_switch) < 0) {
		log_error("%s: \"%s\" in its path is not a PCI address", dir,
			  below_root[1]);
		return -EINVAL;
	}
	return 0;
}

static int read_device(const char *sysfs_root, const char *addr,
		       struct pci_device *dev)
{
	_cleanup_free_ char *dir = NULL;
	char drv[NAME_MAX + 1];
	struct stat st;
	int r;

	memset(dev, 0, sizeof(*dev));
	dev->numa_node = dev->iommu_group = -1;
	r = pci_addr_canonical(addr, dev->addr);
	if (r < 0) {
		log_error("\"%s\" is not a PCI address (want 0000:3b:00.0)",
			  addr);
		return r;
	}
	if (asprintf(&dir, "%s/bus/pci/devices/%s", sysfs_root, dev->addr) < 0)
		return -ENOMEM;
	if (stat(dir, &st) < 0)
		return log_errno(errno, "PCI device %s: %s", dev->addr, dir);
	r = read_ids(dir, dev);
	if (r < 0)
		return r;
	r = read_numa_node(dir, &dev->numa_node);
	if (r < 0)
		return r;
	r = read_iommu_group(dir, &dev->iommu_group);
	if (r < 0)
		return r;
	r = read_sriov(dir, dev);
	if (r < 0)
		return r;
	r = file_link_name(dir, "driver", drv, sizeof(drv));
	if (r == 0) {
		dev->driver = strdup(drv);
		if (!dev->driver)
			return -ENOMEM;
	} else if (r != -ENOENT) {
		return log_errno(r, "%s/driver: unreadable link", dir);
	}
	r = read_rdma_dev(sysfs_root, dev, dir);
	if (r < 0)
		return log_errno(r, "%s: cannot read its RDMA device", dir);
	r = read_switch(dir, dev);
	if (r < 0)
		return r;
	if (dev->iommu_group >= 0)
		return devices_iommu_group(sysfs_root, dev->iommu_group,
					   &dev->group, &dev->n_group);
	return 0;
}

int devices_read(const char *sysfs_root, const char *addr,
		 struct pci_device *dev)
{
	int r = read_device(sysfs_root, addr, dev);

	if (r < 0)
		pci_device_clear(dev);
	return r;
}

static int cmp_device(const void *a, const void *b)
{
	return pci_addr_cmp(((const struct pci_device *)a)->addr,
			    ((const struct pci_device *)b)->addr);
}

static int scan_one(const char *sysfs_root, const char *name,
		    struct device_list *list, size_t *cap)
{
	struct pci_device dev;
	int r;

	r = devices_read(sysfs_root, name, &dev);
	if (r < 0)
		return r;
	if (dev.kind == PCI_KIND_OTHER) {
		pci_device_clear(&dev);
		return 0;
	}
	if (list->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct pci_device *nv =
			reallocarray(list->v, ncap, sizeof(*nv));

		if (!nv) {
			pci_device_clear(&dev);
			return -ENOMEM;
		}
		list->v = nv;
		*cap = ncap;
	}
	list->v[list->n++] = dev;
	return 0;
}

int devices_scan(const char *sysfs_root, struct device_list *list)
{
	_cleanup_free_ char *path = NULL;
	struct dirent *de;
	size_t cap = 0;
	DIR *d;
	int r = 0;

	list->v = NULL;
	list->n = 0;
	if (asprintf(&path, "%s/bus/pci/devices", sysfs_root) < 0)
		return -ENOMEM;
	d = opendir(path);
	if (!d)
		return log_errno(errno,
				 "%s: cannot list PCI devices (SysfsRoot?)",
				 path);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		r = scan_one(sysfs_root, de->d_name, list, &cap);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0) {
		device_list_free(list);
		return r;
	}
	if (list->n)
		qsort(list->v, list->n, sizeof(*list->v), cmp_device);
	return 0;
}

const struct pci_device *devices_find(const struct device_list *list,
				      const char *addr)
{
	char canon[PCI_ADDR_MAX];

	if (pci_addr_canonical(addr, canon) < 0)
		return NULL;
	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->v[i].addr, canon) == 0)
			return &list->v[i];
	return NULL;
}

int devices_vfio_path(const struct pci_device *dev, char *buf, size_t size)
{
	if (dev->iommu_group < 0)
		return -ENODEV;
	if ((size_t)snprintf(buf, size, "/dev/vfio/%d", dev->iommu_group) >=
	    size)
		return -ENOBUFS;
	return 0;
}

bool devices_is_gpu_companion(const struct pci_device *gpu,
			      const struct pci_function *f)
{
	unsigned cls = f->class >> 8;

	return gpu->kind == PCI_KIND_GPU && !f->is_vf &&
	       strncmp(gpu->addr, f->addr, 10) == 0 && /* "dddd:bb:ss" */
	       strcmp(gpu->addr, f->addr) != 0 &&
	       (cls == 0x0403 || cls == 0x0c03 || cls == 0x0c80);
}

static bool companion_in(const struct device_list *list,
			 const struct pci_function *f)
{
	for (size_t i = 0; i < list->n; i++)
		if (devices_is_gpu_companion(&list->v[i], f))
			return true;
	return false;
}

int devices_read_group(const char *sysfs_root, int group,
		       struct device_list *list)
{
	_cleanup_free_ struct pci_function *funcs = NULL;
	size_t n = 0, k = 0;
	int r;

	list->v = NULL;
	list->n = 0;
	r = devices_iommu_group(sysfs_root, group, &funcs, &n);
	if (r < 0)
		return r == -ENOENT ? r : -EINVAL;
	list->v = calloc(n + 1, sizeof(*list->v));
	if (!list->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if ((funcs[i].class >> 16) == 0x06)
			continue; /* bridges stay with the host */
		r = devices_read(sysfs_root, funcs[i].addr, &list->v[list->n]);
		if (r < 0) {
			device_list_free(list);
			return r;
		}
		list->n++;
	}
	/* companions go with their GPU, not as devices of their own */
	for (size_t i = 0; i < list->n; i++) {
		struct pci_function f = { .class = list->v[i].class,
					  .is_vf = list->v[i].is_vf };

		strcpy(f.addr, list->v[i].addr);
		if (companion_in(list, &f))
			pci_device_clear(&list->v[i]);
		else
			list->v[k++] = list->v[i];
	}
	list->n = k;
	if (!k) {
		device_list_free(list);
		log_error("IOMMU group %d holds no function to pass through",
			  group);
		return -ENODEV;
	}
	return 0;
}

static void pci_error_quiet(char *msg, ...)
{
}

char *devices_model_name(const struct pci_device *dev)
{
	struct pci_access *pacc;
	char buf[256], *name;
	const char *s;

	pacc = pci_alloc();
	if (!pacc)
		return NULL;
	pacc->warning = pci_error_quiet;
	pacc->debug = pci_error_quiet;
	s = pci_lookup_name(pacc, buf, sizeof(buf),
			    PCI_LOOKUP_VENDOR | PCI_LOOKUP_DEVICE |
				    PCI_LOOKUP_NO_NUMBERS,
			    dev->vendor, dev->device);
	name = s ? strdup(s) : NULL;
	pci_cleanup(pacc);
	if (!name && asprintf(&name, "%04x:%04x", dev->vendor, dev->device) < 0)
		return NULL;
	return name;
}

char *devices_gres_type(const struct pci_device *dev)
{
	_cleanup_free_ char *model = devices_model_name(dev);
	const char *s, *open, *close;
	char *out;
	size_t n = 0;

	if (!model)
		return NULL;
	/* "NVIDIA Corporation GA100 [A100 SXM4 40GB]" -> "a100_sxm4_40gb" */
	open = strrchr(model, '[');
	close = open ? strchr(open, ']') : NULL;
	s = open && close && close > open + 1 ? open + 1 : model;
	out = calloc(33, 1);
	if (!out)
		return NULL;
	for (; *s && s != close && n < 32; s++) {
		if (isalnum((unsigned char)*s))
			out[n++] = tolower((unsigned char)*s);
		else if (n && out[n - 1] != '_')
			out[n++] = '_';
	}
	while (n && out[n - 1] == '_')
		out[--n] = '\0';
	if (!n)
		snprintf(out, 33, "%04x_%04x", dev->vendor, dev->device);
	return out;
}

void pci_device_clear(struct pci_device *dev)
{
	free(dev->group);
	free(dev->driver);
	free(dev->rdma_dev);
	dev->group = NULL;
	dev->driver = dev->rdma_dev = NULL;
	dev->n_group = 0;
}

void device_list_free(struct device_list *list)
{
	for (size_t i = 0; i < list->n; i++)
		pci_device_clear(&list->v[i]);
	free(list->v);
	list->v = NULL;
	list->n = 0;
}

int devices_file_chown(const char *path, uid_t uid, gid_t gid, mode_t mode,
		       struct stat *old)
{
	_cleanup_close_ int fd = -1;
	char proc[64];
	struct stat st;

	/* O_PATH: opening a VFIO group for real would claim it. */
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return log_errno(errno, "cannot open device file %s", path);
	if (fstat(fd, &st) < 0)
		return log_errno(errno, "cannot stat device file %s", path);
	if (!S_ISCHR(st.st_mode)) {
		log_error("%s is not a character device; not touched", path);
		return -ENOTTY;
	}
	if (old)
		*old = st;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0 ||
	    chmod(proc, mode & 07777) < 0)
		return log_errno(errno, "cannot give device file %s to %u:%u",
				 path, (unsigned)uid, (unsigned)gid);
	return 0;
}
