/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hw/ibpart.h"
#include "vm/incarnation.h"
#include "job/journal.h"
#include "core/log.h"

/* "job-<id>.<restart>" exactly as statedir_name() writes it. */
int guest_name_parse(const char *name, uint32_t *job, unsigned *restart)
{
	char canon[64];
	unsigned id, rc;
	char tail;

	if (sscanf(name, "job-%u.%u%c", &id, &rc, &tail) != 2)
		return -EINVAL;
	if (statedir_name(id, rc, canon, sizeof(canon)) < 0 ||
	    strcmp(canon, name) != 0)
		return -EINVAL;
	*job = id;
	*restart = rc;
	return 0;
}

struct guest *guest_list_add(struct guest_list *list, const char *name,
			     uint32_t job, unsigned restart)
{
	struct guest *v;

	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->v[i].name, name) == 0)
			return &list->v[i];
	v = realloc(list->v, (list->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	list->v = v;
	v = &list->v[list->n++];
	guest_from_job(v, job, restart);
	v->has_state = false;
	return v;
}

void guest_from_job(struct guest *g, uint32_t job_id, unsigned restart)
{
	memset(g, 0, sizeof(*g));
	statedir_name(job_id, restart, g->name, sizeof(g->name));
	g->job_id = job_id;
	g->restart = restart;
	g->has_state = true;
	g->uid = -1;
}

int guest_list_scan_state(const struct vmconf *conf, struct guest_list *list)
{
	_cleanup_close_ int top = -1;
	struct dirent *de;
	DIR *d;
	int r = 0;

	top = open(conf->state_dir,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0)
		return errno == ENOENT
			       ? 0
			       : log_errno(errno, "cannot open StateDir %s",
					   conf->state_dir);
	d = fdopendir(dup(top));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char marker[sizeof(de->d_name) + sizeof(GUEST_TORN_DOWN_FILE) +
			    1];
		struct stat st;
		struct guest *g;
		uint32_t job;
		unsigned restart;

		if (guest_name_parse(de->d_name, &job, &restart) < 0 ||
		    fstatat(top, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		g = guest_list_add(list, de->d_name, job, restart);
		if (!g) {
			r = -ENOMEM;
			break;
		}
		g->has_state = true;
		snprintf(marker, sizeof(marker), "%s/" GUEST_TORN_DOWN_FILE,
			 de->d_name);
		g->torn_down =
			fstatat(top, marker, &st, AT_SYMLINK_NOFOLLOW) == 0;
	}
	closedir(d);
	return r;
}

int guest_earlier_incarnations(const struct vmconf *conf, uint32_t job_id,
			       unsigned restart, unsigned *out, size_t max)
{
	struct guest_list list = { 0 };
	size_t n = 0;
	int r;

	r = guest_list_scan_state(conf, &list);
	for (size_t i = 0; r == 0 && i < list.n && n < max; i++) {
		const struct guest *g = &list.v[i];

		if (g->job_id == job_id && g->restart < restart &&
		    !g->torn_down)
			out[n++] = g->restart;
	}
	guest_list_free(&list);
	return r < 0 ? r : (int)n;
}

int guest_order(const void *a, const void *b)
{
	const struct guest *x = a, *y = b;

	if (x->job_id != y->job_id)
		return x->job_id < y->job_id ? -1 : 1;
	return x->restart < y->restart ? -1 : x->restart > y->restart;
}

/* The same resource: NFT names it by family and table, the others by
 * their first argument (device, VF directory, record file). */
static bool same_resource(const struct journal_entry *a,
			  const struct journal_entry *b)
{
	size_t n = a->kind == JOURNAL_NFT ? 2 : 1;

	if (a->kind != b->kind || a->kind == JOURNAL_UNKNOWN || a->n_args < n ||
	    b->n_args < n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a->args[i], b->args[i]) != 0)
			return false;
	return true;
}

/* The journal in state directory @name, read into @j (journal_free), and
 * its first record of @e's resource: its index + 1, or 0 when none. */
static int journal_find(const struct vmconf *conf, const char *name,
			const struct journal_entry *e, struct journal *j)
{
	_cleanup_close_ int fd = statedir_open(conf->state_dir, name, false);
	int r;

	memset(j, 0, sizeof(*j));
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd; /* reclaimed meanwhile */
	r = journal_read(fd, j);
	if (r < 0)
		return log_errno(r, "cannot read the journal of %s/%s",
				 conf->state_dir, name);
	for (size_t i = 0; i < j->n_entries; i++)
		if (same_resource(&j->entries[i], e))
			return (int)i + 1;
	return 0;
}

/* The incarnations of job @job_id here, not torn down, with a restart
 * count in [@lo, @hi), lowest first. */
int guest_list_scan_incarnations(const struct vmconf *conf, uint32_t job_id,
				 unsigned lo, unsigned hi,
				 struct guest_list *list)
{
	size_t n = 0;
	int r;

	memset(list, 0, sizeof(*list));
	r = guest_list_scan_state(conf, list);
	if (r < 0) {
		guest_list_free(list);
		return r;
	}
	for (size_t i = 0; i < list->n; i++)
		if (list->v[i].job_id == job_id && list->v[i].restart >= lo &&
		    list->v[i].restart < hi && !list->v[i].torn_down)
			list->v[n++] = list->v[i];
	list->n = n;
	if (n)
		qsort(list->v, n, sizeof(*list->v), guest_order);
	return 0;
}

int guest_later_holder(const struct vmconf *conf, const struct guest *g,
		       const struct journal_entry *e, char *holder,
		       size_t holder_len)
{
	struct guest_list list;
	struct journal j;
	int r;

	/* Read when the record is undone, not before the guest stopped: a
	 * later incarnation's prolog may have journaled it meanwhile. */
	r = guest_list_scan_incarnations(conf, g->job_id, g->restart + 1,
					 UINT_MAX, &list);
	for (size_t i = 0; r == 0 && i < list.n; i++) {
		r = journal_find(conf, list.v[i].name, e, &j);
		journal_free(&j);
		if (r > 0)
			snprintf(holder, holder_len, "%s", list.v[i].name);
	}
	guest_list_free(&list);
	return r < 0 ? r : r > 0;
}

int guest_earlier_record(const struct vmconf *conf, uint32_t job_id,
			 unsigned restart, enum journal_verb verb,
			 const char *what, struct journal *j,
			 const struct journal_entry **found)
{
	struct journal_entry e = { .verb = (char *)journal_verb_name(verb),
				   .kind = verb,
				   .args = { (char *)what },
				   .n_args = 1 };
	struct guest_list list;
	int r;

	memset(j, 0, sizeof(*j));
	*found = NULL;
	r = guest_list_scan_incarnations(conf, job_id, 0, restart, &list);
	for (size_t i = 0; r == 0 && i < list.n; i++) {
		journal_free(j);
		r = journal_find(conf, list.v[i].name, &e, j);
		if (r > 0)
			*found = &j->entries[r - 1];
	}
	guest_list_free(&list);
	return r < 0 ? r : *found != NULL;
}

int guest_earlier_vf_state(const struct vmconf *conf, uint32_t job_id,
			   unsigned restart, const char *vf_dir,
			   struct ibpart_vf_state *old)
{
	const struct journal_entry *e;
	struct journal j;
	int r;

	r = guest_earlier_record(conf, job_id, restart, JOURNAL_IBGUID, vf_dir,
				 &j, &e);
	if (r > 0) {
		r = e->n_args == 4 ? ibpart_vf_state_set(old, e->args[1],
							 e->args[2], e->args[3])
				   : -EBADMSG;
		r = r < 0 ? log_errno(r,
				      "%s: the IBGUID record of an earlier "
				      "incarnation of job %u is malformed",
				      vf_dir, job_id)
			  : 1;
	}
	journal_free(&j);
	return r;
}

void guest_list_free(struct guest_list *list)
{
	for (size_t i = 0; i < list->n; i++) {
		for (size_t k = 0; k < list->v[i].n_devices; k++) {
			free(list->v[i].devices[k].addr);
			free(list->v[i].devices[k].gres);
		}
		free(list->v[i].devices);
	}
	for (size_t i = 0; i < list->n_foreign; i++) {
		free(list->foreign[i].addr);
		free(list->foreign[i].domain);
	}
	free(list->v);
	free(list->foreign);
	memset(list, 0, sizeof(*list));
}
