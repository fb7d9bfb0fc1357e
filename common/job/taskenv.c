/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/macro.h"
#include "core/strutil.h"
#include "job/taskenv.h"

#define MAX_IDS 4096 /* CPUs or NUMA nodes a mask may name */

void task_map_free(struct task_map *m)
{
	free(m->vcpu_cpu);
	free(m->cell_node);
	free(m->devices);
	*m = (struct task_map){ 0 };
}

int task_map_format(const struct task_map *m, char **text)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	for (unsigned i = 0; i < m->n_vcpus; i++)
		fprintf(f, "vcpu %u %u\n", i, m->vcpu_cpu[i]);
	for (unsigned c = 0; c < m->n_cells; c++)
		fprintf(f, "cell %u %u\n", c, m->cell_node[c]);
	for (size_t i = 0; i < m->n_devices; i++)
		fprintf(f, "device %s %d %s\n", m->devices[i].gres,
			m->devices[i].index, m->devices[i].guest_addr);
	if (fclose(f) != 0)
		return -ENOMEM;
	*text = TAKE_PTR(buf);
	return 0;
}

static bool is_pci_addr(const char *s)
{
	unsigned dom, bus, slot, fn;
	char end;

	return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%c", &dom, &bus,
					 &slot, &fn, &end) == 4;
}

/* "NAME N VALUE": the Nth entry, which must come next. */
static int parse_numbered(const char *line, const char *kind, unsigned want,
			  unsigned *value)
{
	char name[8], idx[16], val[16], end;

	if (sscanf(line, "%7s %15s %15s %c", name, idx, val, &end) != 3 ||
	    strcmp(name, kind) != 0)
		return -EINVAL;
	unsigned i;
	if (str_to_uint(idx, &i) < 0 || i != want ||
	    str_to_uint(val, value) < 0 || *value >= MAX_IDS)
		return -EINVAL;
	return 0;
}

static int parse_device(const char *line, struct task_map_device *d)
{
	char gres[sizeof(d->gres)], idx[16], addr[32], end;
	unsigned u;

	if (sscanf(line, "device %15s %15s %31s %c", gres, idx, addr, &end) !=
		    3 ||
	    !str_is_safe_name(gres, sizeof(gres) - 1) || !is_pci_addr(addr))
		return -EINVAL;
	if (strcmp(idx, "-1") == 0)
		d->index = -1;
	else if (str_to_uint(idx, &u) == 0 && u < MAX_IDS)
		d->index = (int)u;
	else
		return -EINVAL;
	strcpy(d->gres, gres);
	strcpy(d->guest_addr, addr);
	return 0;
}

/* "KIND N VALUE" as entry N of @v (N must be next). */
static int add_numbered(const char *line, const char *kind, unsigned **v,
			unsigned *n)
{
	unsigned value;
	unsigned *p;

	if (parse_numbered(line, kind, *n, &value) < 0)
		return -EINVAL;
	p = realloc(*v, (*n + 1) * sizeof(unsigned));
	if (!p)
		return -ENOMEM;
	*v = p;
	p[(*n)++] = value;
	return 0;
}

static int task_map_add(struct task_map *m, const char *line)
{
	void *p;

	if (strncmp(line, "vcpu ", 5) == 0) {
		return add_numbered(line, "vcpu", &m->vcpu_cpu, &m->n_vcpus);
	} else if (strncmp(line, "cell ", 5) == 0) {
		return add_numbered(line, "cell", &m->cell_node, &m->n_cells);
	} else if (strncmp(line, "device ", 7) == 0) {
		p = realloc(m->devices,
			    (m->n_devices + 1) * sizeof(*m->devices));
		if (!p)
			return -ENOMEM;
		m->devices = p;
		if (parse_device(line, &m->devices[m->n_devices]) < 0)
			return -EINVAL;
		m->n_devices++;
	} else {
		return -EINVAL;
	}
	return 0;
}

int task_map_parse(const char *text, struct task_map *m)
{
	_cleanup_strv_free_ char **lines = NULL;
	int r;

	*m = (struct task_map){ 0 };
	if (strv_split(text, '\n', &lines) < 0)
		return -ENOMEM;
	for (char **l = lines; *l; l++) {
		r = task_map_add(m, *l);
		if (r < 0) {
			task_map_free(m);
			return r;
		}
	}
	if (m->n_vcpus == 0 || m->n_vcpus >= MAX_IDS) {
		task_map_free(m);
		return -EINVAL;
	}
	return 0;
}

int task_map_load(const char *path, struct task_map *m)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *text = malloc(TASKMAP_MAX_SIZE + 1);
	size_t n;

	if (!f)
		return -errno;
	if (!text)
		return -ENOMEM;
	n = fread(text, 1, TASKMAP_MAX_SIZE + 1, f);
	if (ferror(f))
		return -EIO;
	if (n > TASKMAP_MAX_SIZE)
		return -EFBIG;
	text[n] = '\0';
	return task_map_parse(text, m);
}

/* ---- ids and masks ---- */

/* The guest id (vCPU or cell) of host id @host in @map; -1: none. */
static int guest_id(const unsigned *map, unsigned n, unsigned host)
{
	for (unsigned i = 0; i < n; i++)
		if (map[i] == host)
			return (int)i;
	return -1;
}

/* "0x1f" or "1f" -> bits in @set (MAX_IDS bits); -EINVAL. */
static int mask_parse(const char *s, bool *set)
{
	size_t len;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	len = strlen(s);
	if (len == 0 || len > MAX_IDS / 4)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = s[len - 1 - i];
		unsigned nib;

		if (!isxdigit((unsigned char)c))
			return -EINVAL;
		nib = (unsigned)(isdigit((unsigned char)c)
					 ? c - '0'
					 : tolower((unsigned char)c) - 'a' +
						   10);
		for (unsigned b = 0; b < 4; b++)
			set[i * 4 + b] = nib & (1u << b);
	}
	return 0;
}

static int mask_format(const bool *set, FILE *f)
{
	int top = -1;

	for (int i = 0; i < MAX_IDS; i++)
		if (set[i])
			top = i;
	if (top < 0)
		return -ENOENT;
	fputs("0x", f);
	for (int nib = top / 4; nib >= 0; nib--) {
		unsigned v = 0;

		for (unsigned b = 0; b < 4; b++)
			v |= set[nib * 4 + b] ? 1u << b : 0;
		fputc("0123456789abcdef"[v], f);
	}
	return 0;
}

/* One host mask -> the guest's; -ENOENT: a host id the guest lacks. */
static int mask_translate(const char *item, const unsigned *map, unsigned n,
			  FILE *f)
{
	_cleanup_free_ bool *host = calloc(MAX_IDS, sizeof(bool));
	_cleanup_free_ bool *guest = calloc(MAX_IDS, sizeof(bool));

	if (!host || !guest)
		return -ENOMEM;
	if (mask_parse(item, host) < 0)
		return -EINVAL;
	for (unsigned i = 0; i < MAX_IDS; i++) {
		int g;

		if (!host[i])
			continue;
		g = guest_id(map, n, i);
		if (g < 0)
			return -ENOENT;
		guest[g] = true;
	}
	return mask_format(guest, f);
}

/* One host id (decimal or 0x hex, as Slurm's map_cpu takes) -> guest's. */
static int id_translate(const char *item, const unsigned *map, unsigned n,
			FILE *f)
{
	unsigned long v;
	char *end;
	int g;

	if (!isxdigit((unsigned char)item[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(item, &end, 0);
	if (errno || *end || v >= MAX_IDS)
		return -EINVAL;
	g = guest_id(map, n, (unsigned)v);
	if (g < 0)
		return -ENOENT;
	fprintf(f, "%d", g);
	return 0;
}

/* The binding list after "map_cpu:" and its kin, translated. */
static int bind_list_translate(const struct task_map *m, const char *kind,
			       const char *list, char **out)
{
	_cleanup_strv_free_ char **items = NULL;
	_cleanup_free_ char *buf = NULL;
	bool ldom = strstr(kind, "_ldom") != NULL;
	bool mask = strstr(kind, "mask_") != NULL;
	const unsigned *map = ldom ? m->cell_node : m->vcpu_cpu;
	unsigned n = ldom ? m->n_cells : m->n_vcpus;
	size_t len = 0;
	FILE *f;
	int r = 0;

	if (strv_split(list, ',', &items) < 0)
		return -ENOMEM;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; items[i] && r == 0; i++) {
		if (i)
			fputc(',', f);
		r = mask ? mask_translate(items[i], map, n, f)
			 : id_translate(items[i], map, n, f);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	if (r == 0)
		*out = TAKE_PTR(buf);
	return r;
}

/* Binding types whose list names host CPUs or nodes. */
static const char *bind_kind(const char *type)
{
	static const char *const kinds[] = { "map_cpu:", "mask_cpu:",
					     "map_ldom:", "mask_ldom:" };

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (strstr(type, kinds[i]))
			return kinds[i];
	return NULL;
}

int taskenv_affinity(const struct task_map *m, const cpu_set_t *set,
		     char **vcpus)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int first = -1, prev = -1;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	/* vCPUs in order; runs become "a-b". */
	for (unsigned v = 0; v <= m->n_vcpus; v++) {
		bool in = v < m->n_vcpus && m->vcpu_cpu[v] < CPU_SETSIZE &&
			  CPU_ISSET(m->vcpu_cpu[v], set);

		if (in && first < 0)
			first = (int)v;
		if (in) {
			prev = (int)v;
			continue;
		}
		if (first < 0)
			continue;
		fprintf(f, "%s%d", ftell(f) ? "," : "", first);
		if (prev > first)
			fprintf(f, "-%d", prev);
		first = -1;
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	if (!buf || !*buf)
		return -ENOENT;
	*vcpus = TAKE_PTR(buf);
	return 0;
}

/* ---- the environment ---- */

static const char *env_get(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

static bool env_is(const char *entry, const char *name)
{
	size_t len = strlen(name);

	return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static const char *const gpu_vars[] = {
	"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
	"ZE_AFFINITY_MASK",	"HIP_VISIBLE_DEVICES",
};

/* Guest ordinal of GPU @index: its rank among the job's GPUs by guest
 * PCI address; -1: not in the guest. */
static int gpu_ordinal(const struct task_map *m, unsigned index)
{
	const struct task_map_device *dev = NULL;
	int ord = 0;

	for (size_t i = 0; i < m->n_devices; i++)
		if (!strcmp(m->devices[i].gres, "gpu") &&
		    m->devices[i].index == (int)index)
			dev = &m->devices[i];
	if (!dev)
		return -1;
	for (size_t i = 0; i < m->n_devices; i++)
		if (!strcmp(m->devices[i].gres, "gpu") &&
		    strcmp(m->devices[i].guest_addr, dev->guest_addr) < 0)
			ord++;
	return ord;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* @value lists the GPUs of @step_gpus in the same order: their guest
 * ordinals; *out NULL: pass it unchanged. */
static int gpu_var_translate(const struct task_map *m, const char *value,
			     const char *step_gpus, char **out)
{
	_cleanup_strv_free_ char **vals = NULL, **idx = NULL;
	_cleanup_free_ char *buf = NULL;
	bool all_in_guest = true;
	size_t len = 0;
	FILE *f;

	*out = NULL;
	if (!step_gpus || strv_split(value, ',', &vals) < 0 ||
	    strv_split(step_gpus, ',', &idx) < 0 ||
	    strv_length(vals) != strv_length(idx))
		return 0;
	for (size_t i = 0; vals[i]; i++)
		if (!all_digits(vals[i]) || !all_digits(idx[i]))
			return 0;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; idx[i] && all_in_guest; i++) {
		unsigned u;
		int ord = str_to_uint(idx[i], &u) == 0 ? gpu_ordinal(m, u) : -1;

		all_in_guest = ord >= 0;
		fprintf(f, "%s%d", i ? "," : "", ord);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	if (all_in_guest)
		*out = TAKE_PTR(buf);
	return 0;
}

/* @env without NAME (of length @len); returns where it was, or the end. */
static size_t env_remove(char **env, const char *name, size_t len)
{
	size_t i = 0, at = SIZE_MAX;

	for (size_t j = 0; env[j]; j++) {
		if (strncmp(env[j], name, len) == 0 && env[j][len] == '=') {
			free(env[j]);
			at = at == SIZE_MAX ? i : at;
			continue;
		}
		env[i++] = env[j];
	}
	env[i] = NULL;
	return at == SIZE_MAX ? i : at;
}

static int env_set(char ***env, const char *name, size_t len, const char *value)
{
	size_t n = strv_length(*env), at;
	char *entry, **v;

	if (asprintf(&entry, "%.*s=%s", (int)len, name, value) < 0)
		return -ENOMEM;
	v = realloc(*env, (n + 2) * sizeof(char *));
	if (!v) {
		free(entry);
		return -ENOMEM;
	}
	*env = v;
	at = env_remove(v, name, len);
	n = strv_length(v);
	memmove(v + at + 1, v + at, (n - at + 1) * sizeof(char *));
	v[at] = entry;
	return 0;
}

int taskenv_set(char ***env, const char *name, const char *value)
{
	return env_set(env, name, strlen(name), value);
}

int taskenv_mask_to_cpuset(const char *mask, cpu_set_t *set)
{
	_cleanup_free_ bool *bits = calloc(MAX_IDS, sizeof(bool));

	if (!bits)
		return -ENOMEM;
	if (mask_parse(mask, bits) < 0)
		return -EINVAL;
	CPU_ZERO(set);
	for (unsigned i = 0; i < MAX_IDS && i < CPU_SETSIZE; i++)
		if (bits[i])
			CPU_SET(i, set);
	return 0;
}

static void skip_blanks(const char **p, const char *end)
{
	while (*p < end && isspace((unsigned char)**p))
		(*p)++;
}

static int prolog_line(const char *line, const char *end, char ***env,
		       int print_fd, char **cpu_mask)
{
	const char *name = line, *eq, *name_end;

	if (end - line >= 6 && !strncmp(line, "print ", 6)) {
		name += 6;
		skip_blanks(&name, end);
		if (write(print_fd, name, (size_t)(end - name)) < 0 ||
		    write(print_fd, "\n", 1) < 0)
			return 0; /* as slurmstepd: the output is best effort */
		return 0;
	}
	if (end - line >= 6 && !strncmp(line, "unset ", 6)) {
		name += 6;
		skip_blanks(&name, end);
		while (end > name && isspace((unsigned char)end[-1]))
			end--;
		if (end > name)
			env_remove(*env, name, (size_t)(end - name));
		return 0;
	}
	if (end - line < 7 || strncmp(line, "export ", 7) != 0)
		return 0;
	name += 7;
	skip_blanks(&name, end);
	eq = memchr(name, '=', (size_t)(end - name));
	if (!eq)
		return 0;
	for (name_end = eq;
	     name_end > name && isspace((unsigned char)name_end[-1]);
	     name_end--)
		;
	if (name_end == name)
		return 0;
	if ((size_t)(name_end - name) == strlen("SLURM_PROLOG_CPU_MASK") &&
	    !strncmp(name, "SLURM_PROLOG_CPU_MASK",
		     (size_t)(name_end - name))) {
		free(*cpu_mask);
		*cpu_mask = strndup(eq + 1, (size_t)(end - eq - 1));
		if (!*cpu_mask)
			return -ENOMEM;
	}
	_cleanup_free_ char *value = strndup(eq + 1, (size_t)(end - eq - 1));
	if (!value)
		return -ENOMEM;
	return env_set(env, name, (size_t)(name_end - name), value);
}

/* slurmstepd's task.c dropped the rebind in 24.11. */
#define PROLOG_CPU_MASK_LAST_RELEASE ((24u << 16) | (5u << 8) | 0xffu)

int taskenv_apply_prolog_output(const char *out, uint32_t release, char ***env,
				int print_fd, char **cpu_mask)
{
	int r = 0;

	*cpu_mask = NULL;
	while (*out && r == 0) {
		const char *nl = strchr(out, '\n');
		const char *end = nl ? nl : out + strlen(out);

		r = prolog_line(out, end, env, print_fd, cpu_mask);
		out = nl ? nl + 1 : end;
	}
	if (release > PROLOG_CPU_MASK_LAST_RELEASE) {
		free(*cpu_mask);
		*cpu_mask = NULL;
	}
	return r;
}

struct env_builder {
	char **v;
	size_t n, cap;
};

static int env_add(struct env_builder *b, const char *name, const char *value)
{
	char *s;

	if (b->n + 2 > b->cap) {
		size_t cap = b->cap * 2;
		char **v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	if (value ? asprintf(&s, "%s=%s", name, value) < 0
		  : !(s = strdup(name)))
		return -ENOMEM;
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
	return 0;
}

/* SLURM_CPU_BIND ("quiet,mask_cpu:0x3,0xc") and SLURM_CPU_BIND_LIST: the
 * translated values, or both NULL: drop them. */
static int cpu_bind_translate(const struct task_map *m, char *const *env,
			      char **bind, char **list)
{
	const char *type = env_get(env, "SLURM_CPU_BIND_TYPE");
	const char *hlist = env_get(env, "SLURM_CPU_BIND_LIST");
	const char *hbind = env_get(env, "SLURM_CPU_BIND");
	const char *kind = type ? bind_kind(type) : NULL;
	const char *at;
	int r;

	*bind = *list = NULL;
	if (!kind || !hlist || !hbind)
		return 1; /* nothing that names host CPUs: unchanged */
	r = bind_list_translate(m, kind, hlist, list);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;
	at = strstr(hbind, kind);
	if (!at || asprintf(bind, "%.*s%s", (int)(at - hbind + strlen(kind)),
			    hbind, *list) < 0) {
		free(*list);
		*list = NULL;
		return at ? -ENOMEM : 0;
	}
	return 0;
}

static bool is_tmp_var(const char *entry)
{
	return env_is(entry, "TMPDIR") || env_is(entry, "TMP") ||
	       env_is(entry, "TEMP");
}

static bool is_guest_var(const char *entry)
{
	return !strncmp(entry, PROTO_ENV_GUEST_PREFIX,
			strlen(PROTO_ENV_GUEST_PREFIX));
}

/* What the step sets for each of its tasks, which the script's copy (its
 * batch step's) must not replace: the step's GPUs, its MPI wire-up, the
 * task's vCPUs, its working directory (srun --chdir); and a name renamed
 * twice. */
static bool is_step_var(const char *entry)
{
	for (size_t i = 0; i < ARRAY_SIZE(gpu_vars); i++)
		if (env_is(entry, gpu_vars[i]))
			return true;
	return !strncmp(entry, "PMI_", 4) || !strncmp(entry, "PMIX_", 5) ||
	       env_is(entry, TASKENV_AFFINITY) || env_is(entry, "PWD") ||
	       is_guest_var(entry);
}

/* PROTO_ENV_GUEST_PREFIX NAME=value (hostcmd_env.h): NAME=value in the
 * task's environment, in place of the host's NAME. */
static int guest_var_apply(struct env_builder *b, const char *entry)
{
	const char *var = entry + strlen(PROTO_ENV_GUEST_PREFIX);
	const char *eq = strchr(var, '=');
	size_t len = eq ? (size_t)(eq - var) + 1 : 0;
	char *s;

	if (len < 2 || is_step_var(var))
		return 0;
	for (size_t i = 0; i < b->n; i++) {
		if (strncmp(b->v[i], var, len))
			continue;
		s = strdup(var);
		if (!s)
			return -ENOMEM;
		free(b->v[i]);
		b->v[i] = s;
		return 0;
	}
	return env_add(b, var, NULL);
}

static int translate_one(const struct task_map *m, const struct taskenv_rule *r,
			 char *const *env, const char *entry, const char *bind,
			 const char *list, int bind_keep, struct env_builder *b)
{
	const char *eq = strchr(entry, '=');
	_cleanup_free_ char *name =
		eq ? strndup(entry, (size_t)(eq - entry)) : NULL;

	if (!name)
		return eq ? -ENOMEM : 0; /* not NAME=value: dropped */
	if (!strcmp(name, "XDG_RUNTIME_DIR") ||
	    !strcmp(name, TASKENV_AFFINITY) || is_guest_var(name))
		return 0;
	if (r->tmpdir && is_tmp_var(entry))
		return env_add(b, name, r->tmpdir);
	if (bind_keep <= 0 && !strcmp(name, "SLURM_CPU_BIND"))
		return bind ? env_add(b, name, bind) : 0;
	if (bind_keep <= 0 && !strcmp(name, "SLURM_CPU_BIND_LIST"))
		return list ? env_add(b, name, list) : 0;
	if (bind_keep <= 0 && !bind &&
	    (!strcmp(name, "SLURM_CPU_BIND_TYPE") ||
	     !strcmp(name, "SLURM_CPU_BIND_VERBOSE")))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(gpu_vars); i++) {
		_cleanup_free_ char *v = NULL;
		int k;

		if (strcmp(name, gpu_vars[i]))
			continue;
		k = gpu_var_translate(m, eq + 1,
				      env_get(env, "SLURM_STEP_GPUS"), &v);
		if (k < 0)
			return k;
		return env_add(b, name, v ? v : eq + 1);
	}
	return env_add(b, entry, NULL);
}

int taskenv_translate(const struct task_map *m, const struct taskenv_rule *r,
		      char *const *env, char ***out)
{
	_cleanup_free_ char *bind = NULL, *list = NULL;
	struct env_builder b = { .cap = 64 };
	int keep, k = 0;

	b.v = calloc(b.cap, sizeof(*b.v));
	if (!b.v)
		return -ENOMEM;
	keep = cpu_bind_translate(m, env, &bind, &list);
	if (keep < 0) {
		free(b.v);
		return keep;
	}
	for (char *const *e = env; *e && k == 0; e++)
		k = translate_one(m, r, env, *e, bind, list, keep, &b);
	if (k == 0 && r->tmpdir && !env_get(env, "TMPDIR"))
		k = env_add(&b, "TMPDIR", r->tmpdir);
	if (k == 0 && r->affinity)
		k = env_add(&b, TASKENV_AFFINITY, r->affinity);
	/* Last: what the script exported wins over all of the host's. */
	for (char *const *e = env; *e && k == 0; e++)
		if (is_guest_var(*e))
			k = guest_var_apply(&b, *e);
	if (k < 0) {
		strv_free(b.v);
		return k;
	}
	*out = b.v;
	return 0;
}
