/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "hw/slurm_map.h"
#include "core/strutil.h"

#define MAX_INDEX 65535
#define MAX_FILES 4096

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

static int parse_range(const char *s, size_t len, unsigned *lo, unsigned *hi)
{
	char buf[32];
	char *dash;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	dash = strchr(buf, '-');
	if (dash)
		*dash = '\0';
	if (str_to_uint(buf, lo) < 0 ||
	    (dash ? str_to_uint(dash + 1, hi) : str_to_uint(buf, hi)) < 0 ||
	    *hi < *lo || *hi > MAX_INDEX)
		return -EINVAL;
	return 0;
}

int slurm_index_list_parse(const char *s, unsigned **idx, size_t *n)
{
	_cleanup_free_ unsigned *v = NULL;
	size_t count = 0, cap = 0;
	const char *p = s;

	*idx = NULL;
	*n = 0;
	if (!s)
		return -EINVAL;
	while (*p) {
		size_t len = strcspn(p, ",");
		unsigned lo, hi;

		if (parse_range(p, len, &lo, &hi) < 0) {
			log_error("\"%s\" is not an index list like 0,2-3", s);
			return -EINVAL;
		}
		for (unsigned i = lo; i <= hi; i++) {
			if (count == cap) {
				cap = cap ? cap * 2 : 8;
				unsigned *nv = reallocarray(v, cap, sizeof(*v));
				if (!nv)
					return -ENOMEM;
				v = nv;
			}
			v[count++] = i;
		}
		p += len;
		if (*p == ',' && *++p == '\0')
			return -EINVAL;
	}
	if (count)
		qsort(v, count, sizeof(*v), cmp_uint);
	size_t u = 0;
	for (size_t i = 0; i < count; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*idx = TAKE_PTR(v);
	*n = u;
	return 0;
}

/* One entry "gpu:a100:2(IDX:0,2)": its name and its index list. */
static int detail_entry(const char *e, size_t len, const char *name,
			unsigned **idx, size_t *n, bool *match)
{
	_cleanup_free_ char *s = strndup(e, len);
	char *paren, *close, *colon;

	if (!s)
		return -ENOMEM;
	*match = false;
	colon = strchr(s, ':');
	paren = strchr(s, '(');
	if (!paren || !(close = strchr(paren, ')')) || close[1] != '\0')
		return -EINVAL;
	*paren = '\0';
	if (colon && colon < paren)
		*colon = '\0';
	if (strcmp(s, name) != 0)
		return 0;
	*match = true;
	*close = '\0';
	if (strncmp(paren + 1, "IDX:", 4) != 0)
		return -EINVAL;
	if (strcmp(paren + 5, "N/A") == 0)
		return 0;
	return slurm_index_list_parse(paren + 5, idx, n);
}

int slurm_gres_detail_indices(const char *detail, const char *name,
			      unsigned **idx, size_t *n)
{
	const char *p = detail;

	*idx = NULL;
	*n = 0;
	if (!detail || !name)
		return -EINVAL;
	while (*p) {
		const char *q = p;
		int depth = 0;
		bool match;
		int r;

		/* commas inside "(IDX:0,2)" do not separate entries */
		while (*q && (depth || *q != ',')) {
			depth += *q == '(';
			depth -= *q == ')';
			q++;
		}
		free(*idx);
		*idx = NULL;
		*n = 0;
		r = detail_entry(p, q - p, name, idx, n, &match);
		if (r < 0) {
			log_error("gres detail \"%s\": cannot parse it",
				  detail);
			return r;
		}
		if (match)
			return 0;
		p = *q ? q + 1 : q;
	}
	return 0;
}

static int strv_push(char ***v, size_t *n, char *s)
{
	char **nv;

	if (!s)
		return -ENOMEM;
	if (*n >= MAX_FILES) {
		free(s);
		return -E2BIG;
	}
	nv = reallocarray(*v, *n + 2, sizeof(*nv));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

static int expand_ranges(const char *pre, size_t prelen, const char *list,
			 size_t listlen, const char *post, char ***v, size_t *n)
{
	const char *p = list, *end = list + listlen;

	if (!listlen || list[listlen - 1] == ',')
		return -EINVAL;
	while (p < end) {
		size_t len = strcspn(p, ",");
		unsigned lo, hi, width;

		if (len > (size_t)(end - p))
			len = end - p;
		if (parse_range(p, len, &lo, &hi) < 0)
			return -EINVAL;
		width = p[0] == '0' && len > 1 ? strcspn(p, "-,]") : 0;
		for (unsigned i = lo; i <= hi; i++) {
			char *s;
			if (asprintf(&s, "%.*s%0*u%s", (int)prelen, pre,
				     (int)width, i, post) < 0)
				return -ENOMEM;
			int r = strv_push(v, n, s);
			if (r < 0)
				return r;
		}
		p += len + 1;
	}
	return 0;
}

int slurm_gres_file_expand(const char *file, char ***out)
{
	char **v = NULL;
	const char *open, *close;
	size_t n = 0;
	int r;

	if (!file || !*file)
		return -EINVAL;
	open = strchr(file, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!open)
		r = strv_push(&v, &n, strdup(file));
	else if (!close || strchr(close + 1, '[') || strchr(close + 1, ']'))
		r = -EINVAL;
	else
		r = expand_ranges(file, open - file, open + 1, close - open - 1,
				  close + 1, &v, &n);
	if (r < 0) {
		strv_free(v);
		log_error("gres.conf File=%s: cannot expand it", file);
		return r;
	}
	*out = v;
	return 0;
}

bool slurm_file_count_all(const char *path, void *ctx)
{
	return true;
}

bool slurm_file_is_char_device(const char *path, void *ctx)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

int slurm_gres_index_files(char *const *files, slurm_file_ok_fn ok, void *ctx,
			   char ***indexed)
{
	char **v = NULL;
	size_t n = 0;

	if (!ok)
		ok = slurm_file_count_all;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; files && files[i]; i++) {
		if (!ok(files[i], ctx)) {
			log_debug("%s: slurmd does not number it", files[i]);
			continue;
		}
		int r = strv_push(&v, &n, strdup(files[i]));
		if (r < 0) {
			strv_free(v);
			return r;
		}
	}
	*indexed = v;
	return 0;
}

int slurm_vfio_file_group(const char *path, int *group)
{
	const char *last;
	unsigned g;

	/* Any directory may hold the vfio nodes (a test cluster keeps fake
	 * ones in its own tree), but the name is always .../vfio/<group>. */
	last = path ? strrchr(path, '/') : NULL;
	if (!last || path[0] != '/' || last - path < 5 ||
	    strncmp(last - 5, "/vfio", 5) != 0 ||
	    str_to_uint(last + 1, &g) < 0 || g > INT_MAX)
		return -EINVAL;
	*group = g;
	return 0;
}

int slurm_cores_to_cpus(const struct topology *topo, const char *cores,
			unsigned threads_per_core, char **cpus)
{
	hwloc_topology_t h = topology_hwloc(topo);
	_cleanup_free_ unsigned *idx = NULL;
	hwloc_bitmap_t out;
	hwloc_obj_type_t type = HWLOC_OBJ_CORE;
	size_t n;
	int r;

	r = slurm_index_list_parse(cores, &idx, &n);
	if (r < 0)
		return r;
	if (!n)
		return -EINVAL;
	if (hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE) <= 0)
		type = HWLOC_OBJ_PU;
	out = hwloc_bitmap_alloc();
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		hwloc_obj_t c = hwloc_get_obj_by_type(h, type, idx[i]);
		unsigned taken = 0;
		int pu;

		if (!c) {
			log_error("Slurm core %u does not exist in the "
				  "topology (%d cores)",
				  idx[i], hwloc_get_nbobjs_by_type(h, type));
			hwloc_bitmap_free(out);
			return -ENOENT;
		}
		hwloc_bitmap_foreach_begin(pu, c->cpuset)
		{
			if (!threads_per_core || taken < threads_per_core)
				hwloc_bitmap_set(out, pu);
			taken++;
		}
		hwloc_bitmap_foreach_end();
	}
	r = hwloc_bitmap_list_asprintf(cpus, out) < 0 ? -ENOMEM : 0;
	hwloc_bitmap_free(out);
	return r;
}
