/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job/image.h"
#include "job/kvconf.h"
#include "core/log.h"
#include "core/strutil.h"
#include "job/user.h"

static const char *const format_choices[] = { "raw", "qcow2", NULL };
static const char *const firmware_choices[] = { "bios", "uefi", NULL };
static const char *const boot_mode_choices[] = { "cold", "warm", NULL };

#define K(n, t, f, ...)                                               \
	{                                                             \
		.name = n, .type = t,                                 \
		.offset = offsetof(struct image_spec, f), __VA_ARGS__ \
	}

static const struct kv_key catalog_keys[] = {
	K("Path", KV_PATH, path),
	K("Format", KV_CHOICE, format, .choices = format_choices),
	K("Kernel", KV_PATH, kernel),
	K("Initrd", KV_PATH, initrd),
	K("Cmdline", KV_STRING, cmdline),
	K("Firmware", KV_CHOICE, firmware, .choices = firmware_choices,
	  .defval = "bios"),
	K("MemOverhead", KV_U64, mem_overhead_mib, .max = 1 << 20),
	K("BootMode", KV_CHOICE, boot_mode, .choices = boot_mode_choices),
	K("Description", KV_STRING, description),
};

static const struct kv_table catalog_table = {
	.keys = catalog_keys,
	.n_keys = ARRAY_SIZE(catalog_keys),
	.manual = "vm.conf(5), IMAGE CATALOG",
};

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int image_catalog_names(const char *dir, char ***names)
{
	DIR *d = opendir(dir);
	char **v = calloc(1, sizeof(*v));
	size_t n = 0;
	struct dirent *de;

	if (!v) {
		if (d)
			closedir(d);
		return -ENOMEM;
	}
	*names = v;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **nv;
		if (len <= 6 || strcmp(de->d_name + len - 6, ".image") != 0)
			continue;
		nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n] = strndup(de->d_name, len - 6);
		if (!v[n])
			break;
		v[++n] = NULL;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), strcmp_ptr);
	*names = v;
	return 0;
}

/* One message, so the reason a job's steps print has both halves. */
static void log_bad_name(const char *dir, const char *problem)
{
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_free_ char *list = NULL;

	if (image_catalog_names(dir, &names) < 0 || !names[0]) {
		log_error("%s; the image catalog %s is empty: ask your "
			  "administrator which images exist",
			  problem, dir);
		return;
	}
	list = strv_join((const char *const *)names, ", ");
	log_error("%s; available images: %s", problem, list ? list : "?");
}

/* The catalog is root's: a descriptor anyone else can change could point a
 * root-run prolog at any file. */
static int catalog_entry_check_owner(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_error("image catalog entry %s must be a regular file owned "
			  "by root and writable only by root",
			  path);
		return -EPERM;
	}
	return 0;
}

/* The Path= of a catalog descriptor, read for a hint only (a full parse
 * would report the catalog's own errors to the user); NULL if none. */
static char *catalog_entry_path(const char *dir, const char *entry)
{
	_cleanup_free_ char *file = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	char line[PATH_MAX + 64];

	if (asprintf(&file, "%s/%s.image", dir, entry) < 0)
		return NULL;
	f = fopen(file, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *k = line + strspn(line, " \t"), *v;

		line[strcspn(line, "#\n")] = '\0';
		if (strncasecmp(k, "Path", 4) != 0)
			continue;
		v = k + 4 + strspn(k + 4, " \t");
		if (*v++ != '=')
			continue;
		v += strspn(v, " \t");
		v[strcspn(v, " \t")] = '\0';
		return strdup(v);
	}
	return NULL;
}

/* "unknown image 'centos.qcow2'" where a catalog image is that file: say
 * which name to give. */
static int log_unknown_name(const char *dir, const char *name)
{
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_free_ char *problem = NULL;

	if (image_catalog_names(dir, &names) < 0)
		return -ENOMEM;
	for (size_t i = 0; names[i]; i++) {
		_cleanup_free_ char *path = catalog_entry_path(dir, names[i]);
		const char *base = path ? strrchr(path, '/') : NULL;

		if (base && strcmp(base + 1, name) == 0) {
			log_error("unknown image '%s'; the catalog image '%s' "
				  "is that file: use --vm-image=%s",
				  name, names[i], names[i]);
			return -ENOENT;
		}
	}
	if (asprintf(&problem, "unknown image '%s'", name) < 0)
		return -ENOMEM;
	log_bad_name(dir, problem);
	return -ENOENT;
}

static int image_resolve_catalog(const struct vmconf *conf, const char *name,
				 struct image_spec *spec)
{
	_cleanup_free_ char *path = NULL, *problem = NULL;
	int r;

	if (!str_is_safe_name(name, IMAGE_NAME_MAX)) {
		if (asprintf(&problem,
			     "'%s' is not a valid image name (letters, digits, "
			     "'.', '_', '-'; or an absolute path to an image "
			     "file)",
			     name) < 0)
			return -ENOMEM;
		log_bad_name(conf->image_catalog, problem);
		return -EINVAL;
	}
	if (asprintf(&path, "%s/%s.image", conf->image_catalog, name) < 0)
		return -ENOMEM;
	r = catalog_entry_check_owner(path);
	if (r == -ENOENT)
		return log_unknown_name(conf->image_catalog, name);
	if (r < 0)
		return r;
	r = kv_defaults(&catalog_table, spec);
	if (r == 0)
		r = kv_parse_file(&catalog_table, spec, path);
	if (r < 0)
		return r;
	if (!spec->path || !spec->format) {
		log_error("%s: Path= and Format= are required; ask your "
			  "administrator to fix the image catalog",
			  path);
		return -EINVAL;
	}
	if (!spec->kernel != !spec->initrd) {
		log_error("%s: Kernel= and Initrd= go together", path);
		return -EINVAL;
	}
	spec->name = strdup(name);
	return spec->name ? 0 : -ENOMEM;
}

/* Is there a catalog descriptor called @name? */
static bool catalog_has(const struct vmconf *conf, const char *name)
{
	_cleanup_free_ char *path = NULL;

	if (!str_is_safe_name(name, IMAGE_NAME_MAX) ||
	    asprintf(&path, "%s/%s.image", conf->image_catalog, name) < 0)
		return false;
	return access(path, F_OK) == 0;
}

int image_request_at(const struct vmconf *conf, const char *request,
		     const char *cwd, char **out)
{
	_cleanup_free_ char *joined = NULL;
	struct stat st;

	*out = NULL;
	if (request[0] != '/' && cwd && *cwd && conf->allow_user_images &&
	    !catalog_has(conf, request)) {
		if (asprintf(&joined, "%s%s%s", cwd,
			     cwd[strlen(cwd) - 1] == '/' ? "" : "/",
			     request) < 0)
			return -ENOMEM;
		/* "centos.qcow2": a file here, else a (mistyped) catalog
		 * name */
		if (strchr(request, '/') ||
		    (stat(joined, &st) == 0 && S_ISREG(st.st_mode))) {
			*out = TAKE_PTR(joined);
			return 0;
		}
	}
	*out = strdup(request);
	return *out ? 0 : -ENOMEM;
}

int image_resolve(const struct vmconf *conf, const char *request,
		  struct image_spec *spec)
{
	_cleanup_free_ char *problem = NULL;

	memset(spec, 0, sizeof(*spec));
	if (!strchr(request, '/'))
		return image_resolve_catalog(conf, request, spec);

	if (!conf->allow_user_images) {
		if (asprintf(&problem,
			     "--vm-image=%s: images from paths are not allowed "
			     "on this cluster; use a catalog image",
			     request) < 0)
			return -ENOMEM;
		log_bad_name(conf->image_catalog, problem);
		return -EPERM;
	}
	if (request[0] != '/') {
		log_error("--vm-image=%s: give the image as an absolute path "
			  "(sbatch, salloc and srun make a relative one "
			  "absolute)",
			  request);
		return -EINVAL;
	}
	spec->path = strdup(request);
	return spec->path ? 0 : -ENOMEM;
}

void image_spec_free(struct image_spec *spec)
{
	kv_free(&catalog_table, spec);
	free(spec->name);
	memset(spec, 0, sizeof(*spec));
}

bool path_is_inside(const char *path, char *const *dirs)
{
	for (size_t i = 0; dirs && dirs[i]; i++) {
		size_t len = strlen(dirs[i]);
		while (len > 1 && dirs[i][len - 1] == '/')
			len--;
		if (strncmp(path, dirs[i], len) == 0 &&
		    (path[len] == '/' || (len == 1 && dirs[i][0] == '/')))
			return true;
	}
	return false;
}

/* Root's, and writable by root alone. */
static bool stat_root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* @dir + "/" + the @len bytes at @name, into @dir (PATH_MAX). */
static int path_append(char *dir, const char *name, size_t len)
{
	size_t at = strlen(dir);

	if (at + 1 + len >= PATH_MAX)
		return -ENAMETOOLONG;
	dir[at] = '/';
	memcpy(dir + at + 1, name, len);
	dir[at + 1 + len] = '\0';
	return 0;
}

/* Resolves @path one name at a time as the kernel does, checking each
 * directory and the file on the way; a symlink is replaced by its target
 * (it is the directory holding it that could change it). */
int image_path_root_only(const char *path, char *bad, size_t size)
{
	char done[PATH_MAX] = "", rest[2 * PATH_MAX], next[2 * PATH_MAX];
	const char *at = rest;
	unsigned links = 0;
	struct stat st;
	int r;

	snprintf(bad, size, "%s", path);
	if (path[0] != '/')
		return -EINVAL;
	if (stat("/", &st) < 0)
		return -errno;
	if (!stat_root_only(&st)) {
		snprintf(bad, size, "/");
		return -EPERM;
	}
	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return -ENAMETOOLONG;
	for (;;) {
		size_t len;
		char *slash;
		ssize_t n;

		at += strspn(at, "/");
		if (!*at)
			return 0;
		len = strcspn(at, "/");
		if (len == 1 && at[0] == '.') {
			at += len;
			continue;
		}
		if (len == 2 && at[0] == '.' && at[1] == '.') {
			slash = strrchr(done, '/');
			if (slash)
				*slash = '\0';
			at += len;
			continue;
		}
		r = path_append(done, at, len);
		if (r < 0)
			return r;
		at += len;
		if (lstat(done, &st) < 0) {
			snprintf(bad, size, "%s", done);
			return -errno;
		}
		if (!S_ISLNK(st.st_mode)) {
			if (!stat_root_only(&st)) {
				snprintf(bad, size, "%s", done);
				return -EPERM;
			}
			continue;
		}
		if (++links > 40)
			return -ELOOP;
		n = readlink(done, next, PATH_MAX - 1);
		if (n < 0)
			return -errno;
		next[n] = '\0';
		/* the target, relative to the link's directory, then the rest
		 */
		*strrchr(done, '/') = '\0';
		if (next[0] == '/')
			done[0] = '\0';
		if (snprintf(next + n, sizeof(next) - (size_t)n, "/%s", at) >=
		    (int)(sizeof(next) - (size_t)n))
			return -ENAMETOOLONG;
		memcpy(rest, next, sizeof(rest));
		at = rest;
	}
}

int image_root_only(const struct image_spec *spec,
		    const struct image_chain *chain, char *bad, size_t size)
{
	int r = 0;

	for (unsigned i = 0; r == 0 && i < chain->depth; i++)
		r = image_path_root_only(chain->layers[i].path, bad, size);
	if (r == 0 && spec->kernel)
		r = image_path_root_only(spec->kernel, bad, size);
	if (r == 0 && spec->initrd)
		r = image_path_root_only(spec->initrd, bad, size);
	return r;
}

/* Reads the first bytes of an image file opened without following a
 * final symlink, after checking it is a regular file. */
static int layer_read_header(const char *path, uint8_t **buf, size_t *len,
			     uint64_t *file_size)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *b = NULL;
	struct stat st;
	size_t want, got = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	want = (uint64_t)st.st_size < IMAGE_HEADER_READ_MAX
		       ? (size_t)st.st_size
		       : IMAGE_HEADER_READ_MAX;
	b = malloc(want ? want : 1);
	if (!b)
		return -ENOMEM;
	while (got < want) {
		ssize_t n = pread(fd, b + got, want - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*buf = TAKE_PTR(b);
	*len = got;
	*file_size = (uint64_t)st.st_size;
	return 0;
}

static int layer_open_error(int r, const char *path, unsigned depth)
{
	const char *what = depth ? "backing file" : "image";

	switch (r) {
	case -ENOENT:
		log_error("%s %s does not exist", what, path);
		break;
	case -EACCES:
	case -EPERM:
		log_error("%s %s is not readable by you: check its permissions "
			  "(chmod a+r, or group read)",
			  what, path);
		break;
	case -EBADFD:
	case -ELOOP:
		log_error("%s %s is not a regular file", what, path);
		break;
	default:
		log_errno(r, "cannot read %s %s", what, path);
	}
	return r == -EBADFD ? -EINVAL : r;
}

/* Resolves a backing name the way qemu does: relative to the directory of
 * the image that names it. */
static char *backing_path(const char *image, const char *name)
{
	const char *slash = strrchr(image, '/');
	char *p;

	if (name[0] == '/')
		return strdup(name);
	if (asprintf(&p, "%.*s/%s", (int)(slash - image), image, name) < 0)
		return NULL;
	return p;
}

/* Checks one file of the chain; on success *next is the backing file to
 * check next (or NULL) and *next_fmt its declared format. */
static int layer_check(const struct vmconf *conf, const char *path,
		       enum image_format expect, unsigned depth,
		       struct image_layer *layer, char **next,
		       enum image_format *next_fmt)
{
	_cleanup_free_ char *canon = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	struct qcow2_info qi;
	const char *why = NULL;
	size_t len = 0;
	int r;

	*next = NULL;
	canon = realpath(path, NULL);
	if (!canon)
		return layer_open_error(-errno, path, depth);
	/* The path goes into the domain XML: libxml2 rewrites invalid
	 * UTF-8, and qemu would open a file we never checked. */
	if (!str_is_utf8_text(canon)) {
		log_error("%s path %s is not valid UTF-8 text (or contains "
			  "control characters): rename it",
			  depth ? "backing file" : "image", path);
		return -EINVAL;
	}
	if (!path_is_inside(canon, conf->image_dirs)) {
		_cleanup_free_ char *dirs =
			strv_join((const char *const *)conf->image_dirs, ", ");
		log_error("%s %s lies outside the allowed image directories "
			  "(%s)%s",
			  depth ? "backing file" : "image", canon,
			  dirs ? dirs : "none",
			  depth ? ": a backing file must not point elsewhere "
				  "on the host"
				: ": copy it into one of them");
		return -EPERM;
	}
	r = layer_read_header(canon, &buf, &len, &layer->file_size);
	if (r < 0)
		return layer_open_error(r, canon, depth);
	r = image_probe(buf, len, layer->file_size, &layer->format, &why);
	if (r < 0) {
		log_error("%s is %s", canon, why);
		return r;
	}
	if (expect != IMAGE_FORMAT_AUTO && layer->format != expect) {
		log_error("%s is %s but is declared %s", canon,
			  image_format_name(layer->format),
			  image_format_name(expect));
		return -EINVAL;
	}
	layer->virtual_size = layer->file_size;
	if (layer->format == IMAGE_FORMAT_QCOW2) {
		r = qcow2_parse(buf, len, &qi, &why);
		if (r < 0) {
			log_error("%s: %s", canon, why);
			return r;
		}
		layer->virtual_size = qi.virtual_size;
		if (qi.has_backing) {
			if (image_name_is_protocol(qi.backing_file)) {
				log_error("%s names the backing file '%s', a "
					  "protocol or json: name; only plain "
					  "files are allowed",
					  canon, qi.backing_file);
				return -EPERM;
			}
			if (!qi.backing_format[0] ||
			    image_format_from_name(qi.backing_format,
						   next_fmt) < 0) {
				log_error("%s: its backing file needs an "
					  "explicit format, raw or qcow2 (fix "
					  "with: qemu-img rebase -u -F qcow2 "
					  "-b BACKING %s)",
					  canon, canon);
				return -EINVAL;
			}
			*next = backing_path(canon, qi.backing_file);
			if (!*next)
				return -ENOMEM;
		}
	}
	layer->path = TAKE_PTR(canon);
	return 0;
}

/* OVMF starts a kernel through its EFI stub: a bzImage is a PE file ("MZ")
 * with the x86 boot header ("HdrS" at 0x202); an ELF vmlinux drops OVMF to
 * its shell and the guest never becomes ready. */
int image_kernel_check(const struct image_spec *spec)
{
	_cleanup_close_ int fd = -1;
	unsigned char hdr[0x206];

	if (!spec->kernel || !spec->firmware ||
	    strcmp(spec->firmware, "uefi") != 0)
		return 0;
	fd = open(spec->kernel, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return log_errno(errno, "image %s: cannot read Kernel=%s",
				 spec->name ? spec->name : spec->path,
				 spec->kernel);
	if (pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    memcmp(hdr, "MZ", 2) != 0 || memcmp(hdr + 0x202, "HdrS", 4) != 0) {
		log_error(
			"image %s: Firmware=uefi needs Kernel= to be a bzImage "
			"with an EFI stub (a distribution's vmlinuz), not %s; "
			"ask your administrator to fix the image catalog",
			spec->name ? spec->name : spec->path, spec->kernel);
		return -ENOEXEC;
	}
	return 0;
}

/* The job's overlay names the top file as its backing file and has its
 * virtual size: what qemu-img cannot write there is the image's fault. */
static int image_overlay_check(const struct image_chain *chain)
{
	const struct image_layer *top = &chain->layers[0];

	if (strlen(top->path) > QCOW2_BACKING_NAME_MAX) {
		/* the reason first: the path is long and may be cut */
		log_error("the image's path is %zu bytes long, a qcow2 overlay "
			  "can name at most %d: move it to a shorter path (%s)",
			  strlen(top->path), QCOW2_BACKING_NAME_MAX, top->path);
		return -ENAMETOOLONG;
	}
	if (top->virtual_size > IMAGE_VIRTUAL_SIZE_MAX) {
		log_error("image %s: its virtual size (%" PRIu64 " bytes) is "
			  "larger than a job's overlay can hold (2 PiB): "
			  "shrink it with qemu-img resize --shrink",
			  top->path, top->virtual_size);
		return -EFBIG;
	}
	return 0;
}

int image_check(const struct vmconf *conf, const struct image_spec *spec,
		struct image_chain *chain)
{
	_cleanup_free_ char *path = strdup(spec->path);
	enum image_format fmt = IMAGE_FORMAT_AUTO;
	int r = 0;

	memset(chain, 0, sizeof(*chain));
	if (!path)
		return -ENOMEM;
	if (spec->format && image_format_from_name(spec->format, &fmt) < 0)
		return -EINVAL;
	while (path) {
		char *next = NULL;
		if (chain->depth == IMAGE_CHAIN_MAX) {
			log_error("%s: the backing chain is deeper than %d; "
				  "flatten it with qemu-img convert",
				  spec->path, IMAGE_CHAIN_MAX);
			r = -ELOOP;
			break;
		}
		r = layer_check(conf, path, fmt, chain->depth,
				&chain->layers[chain->depth], &next, &fmt);
		if (r < 0)
			break;
		chain->depth++;
		free(path);
		path = next;
	}
	if (r == 0)
		r = image_overlay_check(chain);
	if (r == 0)
		r = image_kernel_check(spec);
	if (r < 0)
		image_chain_free(chain);
	return r;
}

void image_chain_free(struct image_chain *chain)
{
	for (unsigned i = 0; i < IMAGE_CHAIN_MAX; i++)
		free(chain->layers[i].path);
	memset(chain, 0, sizeof(*chain));
}

/* In the child of image_check_as_user, errors go up the pipe. */
static int report_fd = -1;

static void report_sink(enum log_level level, const char *msg)
{
	if (level == LOG_LEVEL_ERROR && report_fd >= 0)
		dprintf(report_fd, "E\t%s\n", msg);
}

struct check_request {
	const struct vmconf *conf;
	const struct image_spec *spec;
};

static int check_child(const void *arg, int fd)
{
	const struct check_request *req = arg;
	struct image_chain chain;
	int r;

	report_fd = fd;
	log_set_sink(report_sink);
	log_close();
	r = image_check(req->conf, req->spec, &chain);
	for (unsigned i = 0; r == 0 && i < chain.depth; i++)
		dprintf(fd, "L\t%s\t%" PRIu64 "\t%" PRIu64 "\t%s\n",
			image_format_name(chain.layers[i].format),
			chain.layers[i].virtual_size, chain.layers[i].file_size,
			chain.layers[i].path);
	return r < 0 ? -EPERM : 0;
}

static int parse_report_line(char *line, struct image_chain *chain)
{
	char *fields[5], *save = NULL;
	struct image_layer *l;
	int n = 0;

	if (strncmp(line, "E\t", 2) == 0) {
		log_error("%s", line + 2);
		return 0;
	}
	for (char *t = strtok_r(line, "\t", &save); t && n < 5;
	     t = strtok_r(NULL, "\t", &save))
		fields[n++] = t;
	if (n != 5 || strcmp(fields[0], "L") || chain->depth >= IMAGE_CHAIN_MAX)
		return -EPROTO;
	l = &chain->layers[chain->depth];
	if (image_format_from_name(fields[1], &l->format) < 0 ||
	    str_to_u64(fields[2], &l->virtual_size) < 0 ||
	    str_to_u64(fields[3], &l->file_size) < 0)
		return -EPROTO;
	l->path = strdup(fields[4]);
	if (!l->path)
		return -ENOMEM;
	chain->depth++;
	return 0;
}

/* Every layer's line and every error of the child, at most this much. */
#define CHECK_REPORT_MAX (IMAGE_CHAIN_MAX * (PATH_MAX + 128) + 16384)

int image_check_as_user(const struct vmconf *conf,
			const struct image_spec *spec, uid_t uid, gid_t gid,
			struct image_chain *chain)
{
	const struct check_request req = { .conf = conf, .spec = spec };
	_cleanup_free_ char *report = NULL;
	char *line, *save = NULL;
	bool said = false;
	int r, rp = 0;

	memset(chain, 0, sizeof(*chain));
	r = user_run(uid, gid, check_child, &req, CHECK_REPORT_MAX, &report,
		     NULL);
	if (r == -ETIMEDOUT) {
		log_error("image %s: checking it as uid %u took longer than "
			  "%u s (a hung network or FUSE filesystem?); copy it "
			  "to a local directory",
			  spec->path, (unsigned)uid,
			  user_child_timeout_ms / 1000);
		return r;
	}
	/* A failed child's errors came up too: they are the reason. */
	for (line = report ? strtok_r(report, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		said |= strncmp(line, "E\t", 2) == 0;
		if (rp == 0)
			rp = parse_report_line(line, chain);
	}
	if (r == 0)
		r = rp;
	if (r == 0 && chain->depth == 0)
		r = -EPROTO;
	if (r < 0 && !said)
		log_errno(r, "image %s: cannot check it as uid %u", spec->path,
			  (unsigned)uid);
	else if (r < 0)
		r = -EPERM;
	if (r < 0)
		image_chain_free(chain);
	return r;
}
