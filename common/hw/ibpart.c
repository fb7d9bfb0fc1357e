/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/devices.h"
#include "core/fileutil.h"
#include "hw/ibpart.h"
#include "core/log.h"
#include "core/macro.h"
#include "core/sortutil.h"

#define RECORD_PREFIX	"job-"
#define RECORD_MAX_SIZE (64u << 10)

uint64_t ibpart_guid(uint16_t prefix, uint32_t job_id, unsigned node_index,
		     unsigned slot, bool port)
{
	return (uint64_t)prefix << 48 | (uint64_t)(job_id & 0x3ffffff) << 22 |
	       (uint64_t)(node_index & 0xffff) << 6 | (slot & 0x1f) << 1 |
	       (port ? 1 : 0);
}

uint16_t ibpart_pkey(uint32_t job_id, uint16_t min, uint16_t max)
{
	return min + job_id % ((unsigned)max - min + 1);
}

void ibpart_guid_text(uint64_t guid, char out[IBPART_GUID_TEXT])
{
	char *p = out;

	for (int shift = 56; shift >= 0; shift -= 8)
		p += sprintf(p, "%s%02x", shift == 56 ? "" : ":",
			     (unsigned)(guid >> shift) & 0xff);
}

int ibpart_guid_parse(const char *s, uint64_t *guid)
{
	unsigned b[8];
	char end;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2],
		   &b[3], &b[4], &b[5], &b[6], &b[7], &end) != 8 ||
	    strlen(s) != IBPART_GUID_TEXT - 1)
		return -EINVAL;
	*guid = 0;
	for (int i = 0; i < 8; i++)
		*guid = *guid << 8 | b[i];
	return 0;
}

/* n of the PF's virtfn<n> link that names @vf. */
static int vf_number(const char *pfdir, const char *vf, unsigned *n)
{
	char link[32], target[NAME_MAX + 1];
	int r;

	for (unsigned i = 0; i < 4096; i++) {
		snprintf(link, sizeof(link), "virtfn%u", i);
		r = file_link_name(pfdir, link, target, sizeof(target));
		if (r < 0)
			return r;
		if (strcmp(target, vf) == 0) {
			*n = i;
			return 0;
		}
	}
	return -ENOENT;
}

int ibpart_vf_dir(const char *sysfs_root, const struct pci_device *vf,
		  char **dir)
{
	_cleanup_free_ char *pfdir = NULL, *d = NULL;
	struct stat st;
	unsigned n;
	int r;

	if (!vf->is_vf)
		return log_errno(EINVAL, "%s is not an SR-IOV VF", vf->addr);
	if (asprintf(&pfdir, "%s/bus/pci/devices/%s", sysfs_root, vf->physfn) <
	    0)
		return -ENOMEM;
	r = vf_number(pfdir, vf->addr, &n);
	if (r < 0)
		return log_errno(-r,
				 "VF %s: no virtfn link of its PF %s names it",
				 vf->addr, vf->physfn);
	if (asprintf(&d, "%s/sriov/%u", pfdir, n) < 0)
		return -ENOMEM;
	if (stat(d, &st) < 0 || !S_ISDIR(st.st_mode)) {
		log_error("VF %s: its PF %s has no sriov/%u/ to take GUIDs "
			  "(ConnectX-3 and older, mlx4, take VF GUIDs from the "
			  "subnet manager's alias GUIDs): IbPartitions=yes "
			  "needs ConnectX-4 or later (mlx5)",
			  vf->addr, vf->physfn, n);
		return -EOPNOTSUPP;
	}
	*dir = TAKE_PTR(d);
	return 0;
}

int ibpart_vf_read(const char *dir, struct ibpart_vf_state *st)
{
	int r;

	memset(st, 0, sizeof(*st));
	r = sysfs_attr_read(dir, "node", st->node, sizeof(st->node));
	if (r == 0)
		r = sysfs_attr_read(dir, "port", st->port, sizeof(st->port));
	if (r == 0)
		r = sysfs_attr_read(dir, "policy", st->policy,
				    sizeof(st->policy));
	if (r < 0)
		return log_errno(
			-r, "%s: cannot read the VF's GUIDs and policy", dir);
	return 0;
}

int ibpart_vf_state_set(struct ibpart_vf_state *st, const char *node,
			const char *port, const char *policy)
{
	if (strlen(node) >= sizeof(st->node) ||
	    strlen(port) >= sizeof(st->port) ||
	    strlen(policy) >= sizeof(st->policy))
		return -EBADMSG;
	strcpy(st->node, node);
	strcpy(st->port, port);
	strcpy(st->policy, policy);
	return 0;
}

/* As echo(1) writes it: the whole value and a newline, in one write. */
static int write_attr(const char *dir, const char *name, const char *value)
{
	_cleanup_free_ char *path = NULL, *line = NULL;
	_cleanup_close_ int fd = -1;
	int len;

	if (asprintf(&path, "%s/%s", dir, name) < 0 ||
	    (len = asprintf(&line, "%s\n", value)) < 0)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || write(fd, line, len) != len)
		return log_errno(errno ? errno : EIO, "%s: cannot write \"%s\"",
				 path, value);
	return 0;
}

int ibpart_vf_write(const char *dir, const struct ibpart_vf_state *st)
{
	int r = write_attr(dir, "node", st->node);

	if (r == 0)
		r = write_attr(dir, "port", st->port);
	if (r == 0)
		r = write_attr(dir, "policy", st->policy);
	return r;
}

int ibpart_record_path(const char *dir, uint32_t job_id, const char *node,
		       char **path)
{
	return asprintf(path, "%s/" RECORD_PREFIX "%u.%s", dir, job_id, node) <
			       0
		       ? -ENOMEM
		       : 0;
}

struct part {
	uint32_t job_id;
	uint16_t pkey;
	uint64_t *guids;
	size_t n;
};

struct parts {
	struct part *v;
	size_t n;
};

static void parts_free(struct parts *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i].guids);
	free(ps->v);
}

static struct part *part_of(struct parts *ps, uint32_t job_id, uint16_t pkey)
{
	struct part *v;

	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].job_id == job_id)
			return &ps->v[i];
	v = realloc(ps->v, (ps->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	ps->v = v;
	v += ps->n++;
	*v = (struct part){ .job_id = job_id, .pkey = pkey };
	return v;
}

/* One record file; a malformed one is skipped with its name (a node's
 * prolog writes them whole: it is not ours). */
static int read_record(const char *dir, const char *name, struct parts *ps)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	char line[128];
	unsigned long long v;
	uint32_t job = 0;
	uint16_t pkey = 0;
	struct part *p = NULL;
	unsigned lineno = 0;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f)
		return log_errno(errno, "%s: cannot read", path);
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#')
			continue;
		if (sscanf(line, "job %llu", &v) == 1 && v && v <= UINT32_MAX &&
		    !job) {
			job = v;
		} else if (sscanf(line, "pkey %llx", &v) == 1 && v &&
			   v < IBPART_DEFAULT_PKEY && job && !pkey) {
			pkey = v;
			p = part_of(ps, job, pkey);
			if (!p)
				return -ENOMEM;
			if (p->pkey != pkey)
				goto bad;
		} else if (sscanf(line, "guid %llx", &v) == 1 && p) {
			uint64_t *g =
				realloc(p->guids, (p->n + 1) * sizeof(*g));

			if (!g)
				return -ENOMEM;
			p->guids = g;
			p->guids[p->n++] = v;
		} else {
			goto bad;
		}
	}
	return 0;
bad:
	log_error("%s:%u: not a slurm-vm partition record; skipped", path,
		  lineno);
	return 0;
}

static int is_record_name(const struct dirent *de)
{
	return strncmp(de->d_name, RECORD_PREFIX, strlen(RECORD_PREFIX)) == 0 &&
	       !file_is_replace_tmp(de->d_name);
}

/* In name order, not the directory's (tmpfs lists the newest first): a
 * job's GUIDs come out node after node, the same file on every fs. */
static int read_records(const char *dir, struct parts *ps)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, is_record_name, alphasort);
	int r = 0;

	if (n < 0)
		return log_errno(errno, "%s: cannot read the records", dir);
	for (int i = 0; i < n; i++) {
		if (r == 0)
			r = read_record(dir, names[i]->d_name, ps);
		free(names[i]);
	}
	free(names);
	return r;
}

static bool job_runs(uint32_t job_id, const uint32_t *running, size_t n_running)
{
	return !running ||
	       bsearch(&job_id, running, n_running, sizeof(*running), cmp_u32);
}

/* The running job other than @job_id whose record in @dir holds @pkey: 0
 * when none, 1 with *@holder set. */
static int pkey_holder(const char *dir, uint32_t job_id, uint16_t pkey,
		       const uint32_t *running, size_t n_running,
		       uint32_t *holder)
{
	struct parts ps = { 0 };
	int r = read_records(dir, &ps);

	for (size_t i = 0; r == 0 && i < ps.n; i++)
		if (ps.v[i].pkey == pkey && ps.v[i].job_id != job_id &&
		    job_runs(ps.v[i].job_id, running, n_running)) {
			*holder = ps.v[i].job_id;
			r = 1;
		}
	parts_free(&ps);
	return r;
}

static char *record_text(uint32_t job_id, uint16_t pkey, const uint64_t *guids,
			 size_t n, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (!f)
		return NULL;
	fprintf(f, "# slurm-vm: InfiniBand partition of job %u on this node\n",
		job_id);
	fprintf(f, "job %u\npkey 0x%04x\n", job_id, pkey);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "guid 0x%016" PRIx64 "\n", guids[i]);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int ibpart_record_write(const char *dir, const char *node, uint32_t job_id,
			uint16_t pkey, const uint64_t *guids, size_t n,
			const uint32_t *running, size_t n_running)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	uint32_t holder = 0;
	size_t len = 0;
	int r;

	r = pkey_holder(dir, job_id, pkey, running, n_running, &holder);
	if (r < 0)
		return r;
	if (r > 0)
		return log_errno(EEXIST,
				 "job %u: its InfiniBand P_Key 0x%04x is held "
				 "by running job %u (a record in %s): one "
				 "P_Key would join both jobs' guests; submit "
				 "again once job %u ended, or ask the "
				 "administrator to widen IbPKeyRange in "
				 "vm.conf",
				 job_id, pkey, holder, dir, holder);
	if (ibpart_record_path(dir, job_id, node, &path) < 0 ||
	    !(text = record_text(job_id, pkey, guids, n, &len)))
		return -ENOMEM;
	return file_replace(path, text, len, 0644);
}

static int cmp_part(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	return (x->job_id > y->job_id) - (x->job_id < y->job_id);
}

/* One member a line: OpenSM reads partitions.conf in lines of 4 KiB, and a
 * partition of a big job does not fit one. */
static void write_members(FILE *out, const struct part *p, const char *role)
{
	for (size_t i = 0; i < p->n; i++)
		fprintf(out, "\t0x%016" PRIx64 "=%s%s\n", p->guids[i], role,
			i + 1 < p->n ? "," : ";");
}

int ibpart_render(FILE *out, const char *base, const char *dir,
		  const uint32_t *running, size_t n_running,
		  struct ibpart_render_stats *st)
{
	struct parts ps = { 0 };
	int r;

	memset(st, 0, sizeof(*st));
	r = read_records(dir, &ps);
	if (r < 0)
		goto out;
	if (ps.n)
		qsort(ps.v, ps.n, sizeof(*ps.v), cmp_part);
	if (base)
		fprintf(out, "%s%s", base,
			*base && base[strlen(base) - 1] != '\n' ? "\n" : "");
	fprintf(out,
		"\n# --- slurm-vm: one partition per VM job with "
		"InfiniBand VFs, written by\n# `slurm-vm ib-partitions` "
		"from %s; edits below this line are lost ---\n",
		dir);
	for (size_t i = 0; i < ps.n; i++) {
		struct part *p = &ps.v[i];
		const struct part *owner = NULL;
		bool runs = job_runs(p->job_id, running, n_running);

		for (size_t j = 0; j < i && runs && !owner; j++)
			if (ps.v[j].pkey == p->pkey &&
			    job_runs(ps.v[j].job_id, running, n_running))
				owner = &ps.v[j];
		if (!runs) {
			st->stale++;
		} else if (owner) {
			log_error(
				"jobs %u and %u have one P_Key 0x%04x: job %u "
				"gets no partition, its VFs only limited "
				"members of Default; widen IbPKeyRange",
				owner->job_id, p->job_id, p->pkey, p->job_id);
			st->collisions++;
		} else if (p->n) {
			fprintf(out, "slurmvm_job%u=0x%04x, ipoib :\n",
				p->job_id, p->pkey);
			write_members(out, p, "full");
			st->jobs++;
		}
		/* Whatever is left out, a recorded VF is never left a full
		 * member of the base's Default (ALL=full): it would reach
		 * every other job's guests. */
		if (!p->n)
			continue;
		fprintf(out, "Default=0x%04x :\n", IBPART_DEFAULT_PKEY);
		write_members(out, p, "limited");
	}
	r = ferror(out) ? -EIO : 0;
out:
	parts_free(&ps);
	return r;
}
