/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "strutil.h"
#include "vmconf.h"

enum key_type { KEY_STRING, KEY_PATH, KEY_PATHLIST, KEY_BOOL, KEY_UINT,
		KEY_U64, KEY_CHOICE, KEY_LOGLEVEL };

struct key {
	const char *name;
	enum key_type type;
	size_t offset;
	const char *const *choices; /* KEY_CHOICE: index stored as int */
	uint64_t max;		    /* KEY_UINT/KEY_U64 */
	const char *defval;
};

static const char *const binding_choices[] = { "prebound", "managed", NULL };
static const char *const attach_choices[] = { "vfio", "emulate", NULL };
static const char *const domain_types[] = { "kvm", "qemu", NULL };
static const char *const cpu_modes[] = { "host-passthrough", "host-model",
					 "maximum", NULL };

#define K(n, t, f, ...)                                                        \
	{ .name = n, .type = t, .offset = offsetof(struct vmconf, f),          \
	  __VA_ARGS__ }

static const struct key keys[] = {
	K("ImageCatalog", KEY_PATH, image_catalog, .defval = SYSCONFDIR "/slurm/vm-images.d"),
	K("ImageDirs", KEY_PATHLIST, image_dirs, .defval = "/var/lib/slurm-vm/images"),
	K("AllowUserImages", KEY_BOOL, allow_user_images, .defval = "no"),
	K("StateDir", KEY_PATH, state_dir, .defval = "/run/slurm-vm"),
	K("OverlayDir", KEY_PATH, overlay_dir, .defval = "/var/lib/slurm-vm/overlays"),
	K("LogFile", KEY_PATH, log_file),
	K("LogLevel", KEY_LOGLEVEL, log_level, .defval = "info"),
	K("LibvirtURI", KEY_STRING, libvirt_uri, .defval = "qemu:///system"),
	K("DomainType", KEY_CHOICE, domain_type, .choices = domain_types, .defval = "kvm"),
	K("CpuMode", KEY_CHOICE, cpu_mode, .choices = cpu_modes, .defval = "host-passthrough"),
	K("Emulator", KEY_PATH, emulator),
	K("BootTimeout", KEY_UINT, boot_timeout, .max = 3600, .defval = "300"),
	K("ShutdownTimeout", KEY_UINT, shutdown_timeout, .max = 600, .defval = "30"),
	K("MemOverhead", KEY_U64, mem_overhead_mb, .max = 1 << 20, .defval = "512"),
	K("AllowRoot", KEY_BOOL, allow_root, .defval = "no"),
	K("SysfsRoot", KEY_PATH, sysfs_root, .defval = "/sys"),
	K("TopologyFile", KEY_PATH, topology_file),
	K("DeviceBinding", KEY_CHOICE, device_binding, .choices = binding_choices, .defval = "prebound"),
	K("DeviceAttach", KEY_CHOICE, device_attach, .choices = attach_choices, .defval = "vfio"),
	K("RequireLocality", KEY_BOOL, require_locality, .defval = "yes"),
};

/* domain_type and cpu_mode are strings in the struct but choices here. */
static bool key_choice_is_string(const struct key *k)
{
	return k->offset == offsetof(struct vmconf, domain_type) ||
	       k->offset == offsetof(struct vmconf, cpu_mode);
}

static const struct key *key_find(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (strlen(keys[i].name) == len &&
		    strncasecmp(keys[i].name, name, len) == 0)
			return &keys[i];
	return NULL;
}

static const char *key_suggest(const char *name)
{
	const char *best = NULL;
	unsigned best_d = 3; /* suggest only near misses */

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		unsigned d = str_edit_distance_ci(name, keys[i].name);
		if (d < best_d) {
			best_d = d;
			best = keys[i].name;
		}
	}
	return best;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "yes", "true", "1", "on" };
	static const char *const no[] = { "no", "false", "0", "off" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int key_store(struct vmconf *conf, const struct key *k, const char *v,
		     const char *where)
{
	void *field = (char *)conf + k->offset;
	uint64_t n;
	int r;

	switch (k->type) {
	case KEY_PATH:
		if (v[0] != '/') {
			log_error("%s: %s=%s: must be an absolute path", where,
				  k->name, v);
			return -EINVAL;
		}
		/* fall through */
	case KEY_STRING:
		free(*(char **)field);
		*(char **)field = *v ? strdup(v) : NULL;
		return 0;
	case KEY_PATHLIST: {
		char **list = NULL;
		r = strv_split(v, ':', &list);
		if (r < 0)
			return r;
		for (char **p = list; *p; p++) {
			if ((*p)[0] != '/') {
				log_error("%s: %s: '%s' must be an absolute path",
					  where, k->name, *p);
				strv_free(list);
				return -EINVAL;
			}
		}
		strv_free(*(char ***)field);
		*(char ***)field = list;
		return 0;
	}
	case KEY_BOOL:
		if (parse_bool(v, (bool *)field) < 0) {
			log_error("%s: %s=%s: expected yes or no", where,
				  k->name, v);
			return -EINVAL;
		}
		return 0;
	case KEY_UINT:
	case KEY_U64:
		r = str_to_u64(v, &n);
		if (r < 0 || n > k->max) {
			log_error("%s: %s=%s: expected a whole number from 0 to %llu",
				  where, k->name, v, (unsigned long long)k->max);
			return -EINVAL;
		}
		if (k->type == KEY_UINT)
			*(unsigned *)field = (unsigned)n;
		else
			*(uint64_t *)field = n;
		return 0;
	case KEY_CHOICE:
		for (int i = 0; k->choices[i]; i++) {
			if (strcasecmp(v, k->choices[i]) != 0)
				continue;
			if (key_choice_is_string(k)) {
				free(*(char **)field);
				*(char **)field = strdup(k->choices[i]);
			} else {
				*(int *)field = i;
			}
			return 0;
		}
		{
			_cleanup_free_ char *all = strv_join(k->choices, ", ");
			log_error("%s: %s=%s: expected one of %s", where,
				  k->name, v, all ? all : "?");
		}
		return -EINVAL;
	case KEY_LOGLEVEL: {
		enum log_level lvl;
		if (log_level_from_string(v, &lvl) < 0) {
			log_error("%s: %s=%s: expected error, warn, info or debug",
				  where, k->name, v);
			return -EINVAL;
		}
		*(int *)field = (int)lvl;
		return 0;
	}
	}
	return -EINVAL;
}

/* Splits "Key = Value" into the key's length and the value, blanks around
 * '=' allowed; returns NULL for an item without '=' or without a key. */
static const char *item_split(const char *item, size_t *keylen)
{
	const char *eq = strchr(item, '=');
	const char *v;
	size_t len;

	if (!eq)
		return NULL;
	len = (size_t)(eq - item);
	while (len > 0 && isspace((unsigned char)item[len - 1]))
		len--;
	if (len == 0)
		return NULL;
	*keylen = len;
	v = eq + 1;
	while (isspace((unsigned char)*v))
		v++;
	return v;
}

int vmconf_set(struct vmconf *conf, const char *item, const char *where)
{
	const struct key *k;
	const char *value;
	size_t keylen;

	value = item_split(item, &keylen);
	if (!value) {
		log_error("%s: '%s': expected Key=Value", where, item);
		return -EINVAL;
	}
	k = key_find(item, keylen);
	if (!k) {
		_cleanup_free_ char *name = strndup(item, keylen);
		const char *hint = name ? key_suggest(name) : NULL;
		if (hint)
			log_error("%s: unknown key '%s' (did you mean '%s'?)",
				  where, name, hint);
		else
			log_error("%s: unknown key '%s'; see vm.conf(5)", where,
				  name ? name : item);
		return -EINVAL;
	}
	return key_store(conf, k, value, where);
}

static void vmconf_defaults(struct vmconf *conf)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		char item[512];
		if (!keys[i].defval)
			continue;
		snprintf(item, sizeof(item), "%s=%s", keys[i].name,
			 keys[i].defval);
		/* Defaults are ours: a failure here is a bug. */
		if (vmconf_set(conf, item, "built-in default") < 0)
			abort();
	}
}

/* Strips comments and surrounding blanks in place; returns the item. */
static char *line_item(char *line)
{
	char *hash = strchr(line, '#');
	char *end;

	if (hash)
		*hash = '\0';
	while (isspace((unsigned char)*line))
		line++;
	end = line + strlen(line);
	while (end > line && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return line;
}

static int vmconf_parse_file(struct vmconf *conf, FILE *f, const char *path)
{
	bool seen[ARRAY_SIZE(keys)] = { false };
	char line[4096];
	unsigned lineno = 0;
	int r = 0;

	while (fgets(line, sizeof(line), f)) {
		char where[PATH_MAX + 16];
		const struct key *k = NULL;
		size_t keylen;
		char *item;

		lineno++;
		snprintf(where, sizeof(where), "%s:%u", path, lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			log_error("%s: line longer than %zu bytes", where,
				  sizeof(line) - 1);
			return -EINVAL;
		}
		item = line_item(line);
		if (!*item)
			continue;
		if (item_split(item, &keylen))
			k = key_find(item, keylen);
		if (k && seen[k - keys]) {
			log_error("%s: %s is set twice", where, k->name);
			r = -EINVAL;
			continue;
		}
		if (k)
			seen[k - keys] = true;
		/* Report every bad line, not just the first. */
		if (vmconf_set(conf, item, where) < 0)
			r = -EINVAL;
	}
	return r;
}

int vmconf_load(struct vmconf *conf, const char *path)
{
	_cleanup_fclose_ FILE *f = NULL;

	memset(conf, 0, sizeof(*conf));
	vmconf_defaults(conf);
	if (!path)
		return 0;
	conf->path = strdup(path);
	if (!conf->path)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f)
		return log_errno(errno, "cannot read %s", path);
	return vmconf_parse_file(conf, f, path);
}

char *vmconf_default_path(void)
{
	const char *slurm_conf = getenv("SLURM_CONF");
	const char *slash;
	char *path;

	if (!slurm_conf || !*slurm_conf)
		slurm_conf = "/etc/slurm/slurm.conf";
	slash = strrchr(slurm_conf, '/');
	if (!slash)
		return strdup("vm.conf");
	if (asprintf(&path, "%.*s/vm.conf", (int)(slash - slurm_conf),
		     slurm_conf) < 0)
		return NULL;
	return path;
}

void vmconf_free(struct vmconf *conf)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		void *field = (char *)conf + keys[i].offset;
		switch (keys[i].type) {
		case KEY_STRING:
		case KEY_PATH:
			free(*(char **)field);
			break;
		case KEY_CHOICE:
			if (key_choice_is_string(&keys[i]))
				free(*(char **)field);
			break;
		case KEY_PATHLIST:
			strv_free(*(char ***)field);
			break;
		default:
			break;
		}
	}
	free(conf->path);
	memset(conf, 0, sizeof(*conf));
}

void vmconf_print(const struct vmconf *conf, FILE *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct key *k = &keys[i];
		const void *field = (const char *)conf + k->offset;
		_cleanup_free_ char *joined = NULL;
		enum log_level lvl;

		fprintf(out, "%s=", k->name);
		switch (k->type) {
		case KEY_STRING:
		case KEY_PATH:
			fprintf(out, "%s", *(char *const *)field ? *(char *const *)field : "");
			break;
		case KEY_PATHLIST:
			joined = strv_join((const char *const *)*(char **const *)field, ":");
			fprintf(out, "%s", joined ? joined : "");
			break;
		case KEY_BOOL:
			fprintf(out, "%s", *(const bool *)field ? "yes" : "no");
			break;
		case KEY_UINT:
			fprintf(out, "%u", *(const unsigned *)field);
			break;
		case KEY_U64:
			fprintf(out, "%llu", (unsigned long long)*(const uint64_t *)field);
			break;
		case KEY_CHOICE:
			if (key_choice_is_string(k))
				fprintf(out, "%s", *(char *const *)field);
			else
				fprintf(out, "%s", k->choices[*(const int *)field]);
			break;
		case KEY_LOGLEVEL:
			lvl = (enum log_level)*(const int *)field;
			fprintf(out, "%s", lvl == LOG_LEVEL_ERROR ? "error"
					   : lvl == LOG_LEVEL_WARN ? "warn"
					   : lvl == LOG_LEVEL_INFO ? "info"
								   : "debug");
			break;
		}
		fputc('\n', out);
	}
}

const char *const *vmconf_keys(void)
{
	static const char *names[ARRAY_SIZE(keys) + 1];

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		names[i] = keys[i].name;
	return names;
}
