/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "vm/domain.h"
#include "vm/hypervisor.h"
#include "hw/ibpart.h"
#include "job/journal.h"
#include "core/log.h"
#include "vm/reclaim.h"
#include "core/strutil.h"

/* ---------------------------------------------------------------- XML */

static xmlXPathObjectPtr xpath(xmlXPathContextPtr ctx, const char *expr)
{
	xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);

	if (o && (!o->nodesetval || o->nodesetval->nodeNr == 0)) {
		xmlXPathFreeObject(o);
		return NULL;
	}
	return o;
}

/* The attribute's value, malloc'd (xmlFree), or NULL. */
static char *attr_of(xmlNodePtr n, const char *name)
{
	return (char *)xmlGetProp(n, BAD_CAST name);
}

/* Does a file the domain names (channel socket, console log) lie inside
 * <StateDir>/<name>/? That ties the domain to this node's state. */
static bool domain_tied(xmlXPathContextPtr ctx, const char *prefix)
{
	xmlXPathObjectPtr o =
		xpath(ctx, "/domain/devices//@path | /domain/devices//@file");
	bool tied = false;

	for (int i = 0; o && !tied && i < o->nodesetval->nodeNr; i++) {
		xmlChar *v = xmlNodeGetContent(o->nodesetval->nodeTab[i]);

		tied = v && strncmp((char *)v, prefix, strlen(prefix)) == 0 &&
		       !strstr((char *)v + strlen(prefix), "..");
		xmlFree(v);
	}
	xmlXPathFreeObject(o);
	return tied;
}

static int guest_read_metadata(struct guest *g, xmlXPathContextPtr ctx)
{
	xmlXPathObjectPtr o = xpath(ctx, "/domain/metadata/svm:job");
	int r = 0;

	if (o) {
		char *uid = attr_of(o->nodesetval->nodeTab[0], "uid");
		unsigned u;

		if (uid && str_to_uint(uid, &u) == 0)
			g->uid = (long)u;
		xmlFree(uid);
		xmlXPathFreeObject(o);
	}
	o = xpath(ctx, "/domain/metadata/svm:job/svm:device");
	if (!o)
		return 0;
	g->devices = calloc(o->nodesetval->nodeNr, sizeof(*g->devices));
	if (!g->devices)
		r = -ENOMEM;
	for (int i = 0; !r && i < o->nodesetval->nodeNr; i++) {
		xmlNodePtr n = o->nodesetval->nodeTab[i];
		struct guest_device *d = &g->devices[g->n_devices];
		char *addr = attr_of(n, "address"), *gres = attr_of(n, "gres");
		char *index = attr_of(n, "index");
		unsigned idx;

		if (addr) {
			d->addr = strdup(addr);
			d->gres = strdup(gres ? gres : "?");
			d->index = index && str_to_uint(index, &idx) == 0
					   ? (int)idx
					   : -1;
			g->n_devices++;
			if (!d->addr || !d->gres)
				r = -ENOMEM;
		}
		xmlFree(addr);
		xmlFree(gres);
		xmlFree(index);
	}
	xmlXPathFreeObject(o);
	return r;
}

static int add_foreign(struct guest_list *list, const char *domain,
		       xmlXPathContextPtr ctx)
{
	xmlXPathObjectPtr o = xpath(
		ctx, "/domain/devices/hostdev[@type='pci']/source/address");
	int r = 0;

	for (int i = 0; o && !r && i < o->nodesetval->nodeNr; i++) {
		xmlNodePtr n = o->nodesetval->nodeTab[i];
		char *dom = attr_of(n, "domain"), *bus = attr_of(n, "bus");
		char *slot = attr_of(n, "slot"), *fn = attr_of(n, "function");
		struct foreign_hostdev *v;
		char addr[32];

		if (bus && slot && fn) {
			snprintf(addr, sizeof(addr), "%04lx:%02lx:%02lx.%lx",
				 dom ? strtoul(dom, NULL, 0) : 0,
				 strtoul(bus, NULL, 0), strtoul(slot, NULL, 0),
				 strtoul(fn, NULL, 0));
			v = realloc(list->foreign,
				    (list->n_foreign + 1) * sizeof(*v));
			if (v) {
				list->foreign = v;
				v[list->n_foreign].addr = strdup(addr);
				v[list->n_foreign].domain = strdup(domain);
				list->n_foreign++;
			} else
				r = -ENOMEM;
		}
		xmlFree(dom);
		xmlFree(bus);
		xmlFree(slot);
		xmlFree(fn);
	}
	xmlXPathFreeObject(o);
	return r;
}

/* One active domain: ours (tied to our StateDir) or foreign. */
static int scan_domain(const struct vmconf *conf, struct guest_list *list,
		       struct hypervisor *hv, const char *name)
{
	_cleanup_free_ char *xml = NULL, *prefix = NULL;
	const char *state_name = name + strlen(GUEST_DOMAIN_PREFIX);
	xmlXPathContextPtr ctx = NULL;
	xmlDocPtr doc;
	uint32_t job = 0;
	unsigned restart = 0;
	bool ours;
	int r;

	if (hv_dumpxml(hv, name, &xml) < 0)
		return 0; /* gone meanwhile */
	doc = xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR |
				    XML_PARSE_NOWARNING);
	if (!doc)
		return 0;
	ctx = xmlXPathNewContext(doc);
	r = ctx ? 0 : -ENOMEM;
	if (!r && xmlXPathRegisterNs(ctx, BAD_CAST DOMAIN_XMLNS_PREFIX,
				     BAD_CAST DOMAIN_XMLNS) != 0)
		r = -ENOMEM;
	ours = strncmp(name, GUEST_DOMAIN_PREFIX,
		       strlen(GUEST_DOMAIN_PREFIX)) == 0 &&
	       guest_name_parse(state_name, &job, &restart) == 0 &&
	       asprintf(&prefix, "%s/%s/", conf->state_dir, state_name) >= 0 &&
	       domain_tied(ctx, prefix);
	if (!r && ours) {
		struct guest *g =
			guest_list_add(list, state_name, job, restart);

		if (!g)
			r = -ENOMEM;
		else {
			g->has_domain = true;
			if (hv_domain_state(hv, name, &g->domain_state) < 0)
				g->domain_state = "unknown";
			r = guest_read_metadata(g, ctx);
		}
	} else if (!r)
		r = add_foreign(list, name, ctx);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
	return r;
}

int guests_scan(const struct vmconf *conf, struct guest_list *list)
{
	_cleanup_strv_free_ char **names = NULL;
	struct hypervisor *hv = NULL;
	int r;

	memset(list, 0, sizeof(*list));
	r = guest_list_scan_state(conf, list);
	if (r < 0)
		goto out;
	if (!conf->boot || hv_open(conf->libvirt_uri, &hv) < 0 ||
	    hv_list(hv, "", &names) < 0) {
		list->libvirt_down = conf->boot;
		goto out;
	}
	for (size_t i = 0; names[i] && r == 0; i++)
		r = scan_domain(conf, list, hv, names[i]);
out:
	hv_close(hv);
	if (r < 0) {
		guest_list_free(list);
		return r;
	}
	if (list->n)
		qsort(list->v, list->n, sizeof(*list->v), guest_order);
	return 0;
}

const struct guest *guests_holding(const struct guest_list *list,
				   const char *addr)
{
	for (size_t i = 0; i < list->n; i++)
		for (size_t k = 0;
		     list->v[i].has_domain && k < list->v[i].n_devices; k++)
			if (strcasecmp(list->v[i].devices[k].addr, addr) == 0)
				return &list->v[i];
	return NULL;
}

const char *guests_foreign_holder(const struct guest_list *list,
				  const char *addr)
{
	for (size_t i = 0; i < list->n_foreign; i++)
		if (list->foreign[i].addr &&
		    strcasecmp(list->foreign[i].addr, addr) == 0)
			return list->foreign[i].domain;
	return NULL;
}

/* ------------------------------------------------------------ reclaim */

static void time_step(struct teardown_result *res, const char *verb, double t0,
		      int error)
{
	struct teardown_step_time *st;

	if (res->n_timed == TEARDOWN_TIMED_STEPS)
		return;
	st = &res->timed[res->n_timed++];
	snprintf(st->verb, sizeof(st->verb), "%s", verb);
	st->seconds = clock_now_s() - t0;
	st->error = error;
}

/* A domain of ours the journal does not name (a lost journal). */
static int destroy_unjournaled(const struct vmconf *conf, const char *name,
			       struct teardown_result *res)
{
	char domain[96];
	struct hypervisor *hv = NULL;
	double t0 = clock_now_s();
	int r;

	snprintf(domain, sizeof(domain), GUEST_DOMAIN_PREFIX "%s", name);
	r = hv_open(conf->libvirt_uri, &hv);
	if (r == 0)
		r = hv_destroy(hv, domain);
	hv_close(hv);
	res->steps++;
	if (r < 0) {
		res->failed++;
		res->node_unsafe = true;
		log_error("cannot destroy guest %s", domain);
	}
	time_step(res, "DESTROY", t0, r);
	return r;
}

static int mark_torn_down(int fd)
{
	_cleanup_close_ int m =
		openat(fd, GUEST_TORN_DOWN_FILE,
		       O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);

	return m < 0 ? -errno : 0;
}

int guest_reclaim(const struct vmconf *conf, const struct guest *g,
		  unsigned lock_wait_s, bool hurry, struct teardown_result *res)
{
	struct vmconf quick;
	_cleanup_close_ int fd = -1;
	bool keep = false;
	double t0;
	int r = 0;

	memset(res, 0, sizeof(*res));
	if (g->has_state) {
		fd = statedir_open(conf->state_dir, g->name, false);
		if (fd < 0 && fd != -ENOENT)
			return log_errno(fd, "cannot open state %s/%s",
					 conf->state_dir, g->name);
	}
	if (fd < 0 && !g->has_domain)
		return -ENOENT;
	if (fd >= 0) {
		r = statedir_lock(fd, lock_wait_s);
		if (r < 0)
			return r;
		keep = faccessat(fd, GUEST_KEEP_FILE, F_OK,
				 AT_SYMLINK_NOFOLLOW) == 0;
		/* Nothing of the guest is kept: a clean shutdown buys nothing
		 * the waiting job would notice. */
		quick = *conf;
		if (hurry && !keep)
			quick.shutdown_timeout = 0;
		r = teardown_replay_guest(&quick, fd, g, keep, res);
	}
	if (g->has_domain && destroy_unjournaled(conf, g->name, res) < 0)
		r = -EIO;
	if (fd < 0)
		return r;
	if (r < 0) {
		log_error("%s: %u of %u steps failed; %s/%s kept for another "
			  "try (slurm-vm cleanup)",
			  g->name, res->failed, res->steps, conf->state_dir,
			  g->name);
		return -EIO;
	}
	t0 = clock_now_s();
	if (keep)
		r = mark_torn_down(fd);
	else
		r = statedir_remove(conf->state_dir, g->name);
	time_step(res, "STATEDIR", t0, r);
	if (r < 0)
		return log_errno(r, "cannot %s %s/%s", keep ? "mark" : "remove",
				 conf->state_dir, g->name);
	return 0;
}

/* ------------------------------------------------------ kept state */

int guest_remove_kept(const struct vmconf *conf, const char *name,
		      unsigned lock_wait_s)
{
	struct teardown_result res;
	_cleanup_close_ int fd = statedir_open(conf->state_dir, name, false);
	int r;

	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	r = statedir_lock(fd, lock_wait_s);
	if (r < 0)
		return r;
	r = teardown_kept_files(conf, fd, &res);
	if (r < 0)
		return log_errno(r,
				 "%s: %u of %u kept files could not be "
				 "deleted; kept for another try",
				 name, res.failed, res.steps);
	return statedir_remove(conf->state_dir, name);
}

/* The kept files of state @name removed and logged with @why (KeepFor=
 * @hours), counted in *@removed, or a failure in *@failed. */
static void kept_remove_counted(const struct vmconf *conf, const char *name,
				const char *why, unsigned hours,
				unsigned *removed, int *failed)
{
	if (guest_remove_kept(conf, name, 0) < 0) {
		(*failed)++;
		return;
	}
	log_info("%s: kept files (--vm-keep) removed%s%u hours", name, why,
		 hours);
	(*removed)++;
}

int kept_expire(const struct vmconf *conf, time_t now, unsigned *removed)
{
	struct guest_list list = { 0 };
	_cleanup_close_ int top = -1;
	int r, failed = 0;

	*removed = 0;
	if (!conf->keep_for_hours)
		return 0;
	r = guest_list_scan_state(conf, &list);
	top = open(conf->state_dir,
		   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	for (size_t i = 0; r == 0 && top >= 0 && i < list.n; i++) {
		char marker[sizeof(list.v[i].name) +
			    sizeof(GUEST_TORN_DOWN_FILE) + 1];
		struct stat st;

		snprintf(marker, sizeof(marker), "%s/" GUEST_TORN_DOWN_FILE,
			 list.v[i].name);
		if (!list.v[i].torn_down ||
		    fstatat(top, marker, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - st.st_mtime < (time_t)conf->keep_for_hours * 3600)
			continue;
		kept_remove_counted(conf, list.v[i].name,
				    ": older than KeepFor=",
				    conf->keep_for_hours, removed, &failed);
	}
	guest_list_free(&list);
	if (r == 0 && failed)
		r = -EIO;
	return r;
}

int kept_remove_job(const struct vmconf *conf, uint32_t job_id,
		    unsigned *removed, unsigned *not_torn_down)
{
	struct guest_list list = { 0 };
	int r, failed = 0;

	*removed = *not_torn_down = 0;
	r = guest_list_scan_state(conf, &list);
	for (size_t i = 0; r == 0 && i < list.n; i++) {
		if (list.v[i].job_id != job_id)
			continue;
		if (!list.v[i].torn_down) {
			(*not_torn_down)++;
			continue;
		}
		kept_remove_counted(conf, list.v[i].name,
				    " by the admin before KeepFor=",
				    conf->keep_for_hours, removed, &failed);
	}
	guest_list_free(&list);
	if (r == 0 && failed)
		r = -EIO;
	return r;
}

int guest_take_name(const struct vmconf *conf, uint32_t job_id,
		    unsigned restart, unsigned lock_wait_s,
		    struct teardown_result *res)
{
	struct guest g;
	bool torn;
	int fd;

	memset(res, 0, sizeof(*res));
	guest_from_job(&g, job_id, restart);
	fd = statedir_open(conf->state_dir, g.name, false);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	torn = faccessat(fd, GUEST_TORN_DOWN_FILE, F_OK, AT_SYMLINK_NOFOLLOW) ==
	       0;
	/* Written for that job, not for this one. */
	if (!torn && unlinkat(fd, GUEST_KEEP_FILE, 0) < 0 && errno != ENOENT) {
		close(fd);
		return log_errno(errno, "cannot delete %s/%s/" GUEST_KEEP_FILE,
				 conf->state_dir, g.name);
	}
	close(fd);
	log_warn("%s/%s is left from an earlier job %u (job ids wrapped): "
		 "%s",
		 conf->state_dir, g.name, job_id,
		 torn ? "its kept files are removed"
		      : "its guest is torn down, nothing kept");
	if (torn)
		return guest_remove_kept(conf, g.name, lock_wait_s);
	return guest_reclaim(conf, &g, lock_wait_s, true, res);
}

int guest_reclaim_incarnations(const struct vmconf *conf, uint32_t job_id,
			       unsigned restart, unsigned lock_wait_s,
			       guest_fate_fn ended, struct teardown_result *res,
			       char *left, size_t left_len)
{
	struct guest_list list;
	char why[160];
	int r;

	memset(res, 0, sizeof(*res));
	r = guest_list_scan_incarnations(conf, job_id, 0, UINT_MAX, &list);
	/* The highest first: the lower ones then find no later holder of
	 * what they share, and undo it. */
	for (size_t i = list.n; r == 0 && i-- > 0;) {
		const struct guest *g = &list.v[i];

		if (g->restart == restart)
			continue;
		snprintf(left, left_len, "%s", g->name);
		why[0] = '\0';
		r = ended(g, why, sizeof(why));
		if (r == 0)
			log_info("%s/%s left alone: slurmctld says its job is "
				 "%s",
				 conf->state_dir, g->name, why);
		if (r <= 0)
			continue;
		log_warn("%s/%s is left from %s (%s): its guest is torn down",
			 conf->state_dir, g->name,
			 g->restart > restart
				 ? "an older job of this id (job ids wrapped)"
				 : "an earlier incarnation of this job id",
			 why);
		r = guest_reclaim(conf, g, lock_wait_s, true, res);
		if (r == -ENOENT)
			r = 0; /* reclaimed meanwhile */
	}
	guest_list_free(&list);
	return r;
}
