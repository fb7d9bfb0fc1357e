/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gres.conf, the lines of one node (gresconf.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "slurm/compat.h"
#include "slurm/gresconf.h"
#include "core/log.h"
#include "core/macro.h"
#include "hw/slurm_map.h"
#include "core/strutil.h"

static bool node_matches(const char *hostlist, const char *node)
{
	slurm_hostlist_ptr hl = slurm_hostlist_create(hostlist);
	bool found = false;
	char *h;

	if (!hl)
		return false;
	while (!found && (h = slurm_hostlist_shift(hl))) {
		found = strcmp(h, node) == 0;
		free(h);
	}
	slurm_hostlist_destroy(hl);
	return found;
}

/* Finds "key=value" among the blank-separated words of @line. */
static char *line_value(const char *line, const char *key)
{
	size_t klen = strlen(key);
	const char *p = line;

	while (*p) {
		const char *end;
		while (isspace((unsigned char)*p))
			p++;
		end = p;
		while (*end && !isspace((unsigned char)*end))
			end++;
		if ((size_t)(end - p) > klen && p[klen] == '=' &&
		    strncasecmp(p, key, klen) == 0)
			return strndup(p + klen + 1,
				       (size_t)(end - p) - klen - 1);
		p = end;
	}
	return NULL;
}

static int files_append(char ***files, size_t *n, char **more)
{
	size_t m = strv_length(more);
	char **nv = realloc(*files, (*n + m + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < m; i++)
		nv[(*n)++] = more[i];
	nv[*n] = NULL;
	*files = nv;
	free(more);
	return 0;
}

int gresconf_for_each(const char *path, const char *node, gresconf_line_fn fn,
		      void *ctx)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[8192];
	unsigned lineno = 0;
	int r = 0;

	if (!f)
		return log_errno(errno, "cannot read %s", path);
	while (r == 0 && fgets(line, sizeof(line), f)) {
		_cleanup_free_ char *nodes = NULL, *name = NULL, *file = NULL,
				    *cores = NULL;
		char *hash = strchr(line, '#');

		lineno++;
		if (hash)
			*hash = '\0';
		name = line_value(line, "Name");
		if (!name)
			continue;
		nodes = line_value(line, "NodeName");
		if (nodes && !node_matches(nodes, node))
			continue;
		file = line_value(line, "File");
		cores = line_value(line, "Cores");
		r = fn(path, lineno, name, file, cores, ctx);
	}
	return r;
}

struct gres_files {
	const char *name;
	char **files;
	size_t n;
};

static int gres_files_add_line(const char *path, unsigned lineno,
			       const char *name, const char *file,
			       const char *cores, void *ctx)
{
	struct gres_files *gf = ctx;
	char **expanded = NULL;
	int r;

	if (strcasecmp(name, gf->name) != 0)
		return 0;
	if (!file) {
		log_error("%s:%u: Name=%s without File=: slurm-vm needs a "
			  "device file per %s",
			  path, lineno, name, name);
		return -EINVAL;
	}
	r = slurm_gres_file_expand(file, &expanded);
	if (r < 0) {
		log_error("%s:%u: cannot expand File=%s", path, lineno, file);
		return r;
	}
	r = files_append(&gf->files, &gf->n, expanded);
	if (r < 0)
		strv_free(expanded);
	return r;
}

int gresconf_files(const char *path, const char *node, const char *name,
		   char ***files)
{
	struct gres_files gf = { .name = name };
	int r;

	/* the list even on failure: the caller frees it either way */
	*files = gf.files = calloc(1, sizeof(char *));
	if (!gf.files)
		return -ENOMEM;
	r = gresconf_for_each(path, node, gres_files_add_line, &gf);
	*files = gf.files;
	return r;
}

int gresconf_cores_refused(const struct topology *topo, const char *cores,
			   uint32_t release, int *split_socket, char **whole)
{
	int r;

	*whole = NULL;
	*split_socket = -1;
	r = topology_cores_whole_sockets(topo, cores, whole, split_socket);
	if (r < 0)
		return r;
	return slurm_gres_cores_whole_sockets(release) && *split_socket >= 0;
}
