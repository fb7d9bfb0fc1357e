/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "hw/devices.h"
#include "core/fileutil.h"
#include "vm/hypervisor.h"
#include "job/image.h"
#include "net/jobnet.h"
#include "job/journal.h"
#include "core/log.h"
#include "hw/holders.h"
#include "vm/incarnation.h"
#include "vm/seed.h"
#include "core/strutil.h"
#include "hw/ibpart.h"
#include "vm/pidfile.h"
#include "vm/teardown.h"

struct teardown {
	const struct vmconf *conf;
	int state_fd;
	bool keep;
	const struct guest *g; /* whose journal; NULL: no later incarnation */
	struct hypervisor *hv;
	bool hv_failed;
	bool node_unsafe;
};

static struct hypervisor *teardown_hv(struct teardown *t)
{
	if (!t->hv && !t->hv_failed &&
	    hv_open(t->conf->libvirt_uri, &t->hv) < 0)
		t->hv_failed = true;
	return t->hv;
}

/* The job's writable files (overlay, UEFI NVRAM) in OverlayDir. */
static int undo_overlay(struct teardown *t, const char *what, const char *path)
{
	char *const dirs[] = { t->conf->overlay_dir, NULL };

	if (t->keep) {
		log_info("kept %s %s (--vm-keep)", what, path);
		return 0;
	}
	/* The journal is root's, but never delete outside OverlayDir. */
	if (!path_is_inside(path, dirs)) {
		log_error("journal names %s %s outside OverlayDir; not deleted",
			  what, path);
		return -EPERM;
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return log_errno(errno, "cannot delete %s %s", what, path);
	return 0;
}

static int undo_domain(struct teardown *t, const char *name)
{
	double t0;
	int r;

	if (!teardown_hv(t)) {
		log_error("cannot stop guest %s: libvirt is unreachable", name);
		return -EHOSTDOWN;
	}
	t0 = clock_now_s();
	r = hv_stop(t->hv, name, t->conf->shutdown_timeout);
	if (r == HV_STOP_SHUT_DOWN)
		log_info("guest %s shut down in %.1fs (ACPI power button)",
			 name, clock_now_s() - t0);
	else if (r == HV_STOP_DESTROYED && t->conf->shutdown_timeout)
		/* Every job's epilog waits the whole timeout for such an
		 * image: the admin should know. */
		log_warn("guest %s did not shut down within "
			 "ShutdownTimeout=%us; destroyed (its image ignores "
			 "the ACPI power button: see the admin guide, "
			 "section 5)",
			 name, t->conf->shutdown_timeout);
	else if (r == HV_STOP_DESTROYED)
		log_info("guest %s destroyed without a shutdown", name);
	else if (r == HV_STOP_GONE)
		log_info("guest %s was not running", name);
	return r < 0 ? r : 0;
}

/* Stops the helper process (the relay, a virtiofsd) whose pid file
 * @pidfile, in the state directory, says "PID [START_TIME]" (pidfile.h):
 * SIGTERM, up to 3 s to end, then SIGKILL. A missing pid file or process
 * is no error: it ended by itself. */
static int undo_helper(struct teardown *t, const char *pidfile,
		       const char *comm)
{
	unsigned long long start = 0;
	pid_t pid, target;
	int r;

	r = pidfile_read(t->state_fd, pidfile, &pid, &start);
	if (r == -ENOENT || r == -ENODATA)
		return 0;
	if (r < 0)
		return r;
	if (!pid_is_process(pid, comm, start))
		return 0;
	/* A group leader (virtiofsd: the prolog's setsid) is signalled with
	 * its group: virtiofsd's sandbox child goes with it. */
	target = getpgid(pid) == pid ? -pid : pid;
	kill(target, SIGTERM);
	for (int i = 0; i < 300 && pid_is_process(pid, comm, start); i++)
		usleep(10 * 1000);
	if (pid_is_process(pid, comm, start))
		kill(target, SIGKILL);
	return 0;
}

/* A share's virtiofsd (prolog/virtiofs.c): VIRTIOFSD virtiofsd-<i>.pid.
 * It ends by itself once qemu has gone; if not, it is stopped. Its pid
 * file and socket go; its log stays with the state directory. */
static int undo_virtiofsd(struct teardown *t, const char *pidfile)
{
	char sock[64], comm[16];
	unsigned i;
	int end = 0, r;

	if (sscanf(pidfile, VIRTIOFSD_PID_FMT "%n", &i, &end) != 1 ||
	    pidfile[end]) {
		log_error("journal record VIRTIOFSD %s: not a virtiofsd pid "
			  "file; skipped",
			  pidfile);
		return -EBADMSG;
	}
	r = undo_helper(t, pidfile, path_comm(t->conf->virtiofsd_path, comm));
	if (r < 0)
		return log_errno(r, "cannot stop the virtiofsd of %s", pidfile);
	if (unlinkat(t->state_fd, pidfile, 0) < 0 && errno != ENOENT)
		return log_errno(errno, "cannot delete %s", pidfile);
	snprintf(sock, sizeof(sock), VIRTIOFSD_SOCK_FMT, i);
	if (unlinkat(t->state_fd, sock, 0) < 0 && errno != ENOENT)
		return log_errno(errno, "cannot delete %s", sock);
	return 0;
}

/* The seed: <name>.iso and the directory <name>/ of its documents, both in
 * the state directory. */
static int undo_seed(struct teardown *t, const char *name)
{
	static const char *const docs[] = { "meta-data", "user-data",
					    "network-config", SEED_ISO_PACKED };
	_cleanup_free_ char *iso = NULL;
	_cleanup_close_ int dirfd = -1;
	int r = 0;

	if (strchr(name, '/') || name[0] == '.')
		return -EINVAL;
	if (t->keep) {
		log_info("kept seed %s.iso (--vm-keep)", name);
		return 0;
	}
	if (asprintf(&iso, "%s.iso", name) < 0)
		return -ENOMEM;
	if (unlinkat(t->state_fd, iso, 0) < 0 && errno != ENOENT)
		r = log_errno(errno, "cannot delete the seed %s", iso);
	dirfd = openat(t->state_fd, name,
		       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? r : -errno;
	for (size_t i = 0; i < ARRAY_SIZE(docs); i++)
		if (unlinkat(dirfd, docs[i], 0) < 0 && errno != ENOENT)
			r = r ?: -errno;
	if (unlinkat(t->state_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = r
			    ?: log_errno(errno,
					 "cannot delete the seed directory %s",
					 name);
	return r;
}

/* A device the prolog bound to vfio-pci (DeviceBinding=managed) goes back
 * to its host driver; one that cannot makes the node unsafe. */
static int undo_detach(struct teardown *t, const char *addr)
{
	int r;

	if (!teardown_hv(t)) {
		log_error("cannot return PCI device %s: libvirt is unreachable",
			  addr);
		r = -EHOSTDOWN;
	} else {
		r = hv_pci_reattach(t->hv, addr);
	}
	if (r == 0)
		log_info("PCI device %s returned to its host driver", addr);
	else
		t->node_unsafe = true;
	return r;
}

/* A VFIO group file the prolog gave to the job user: its old owner and
 * mode back, then whatever of the user's still holds it (the batch script
 * runs on the host as the same uid and may have opened it) killed: after
 * the chown nothing of theirs can open it again. The journal is root's,
 * but only a character device is touched, never through a link. */
static int undo_devowner(struct teardown *t, char *const *args)
{
	struct device_holder h;
	unsigned uid, gid, killed;
	unsigned long mode;
	char *end;
	int r;

	mode = strtoul(args[3], &end, 8);
	if (str_to_uint(args[1], &uid) < 0 || str_to_uint(args[2], &gid) < 0 ||
	    *end || mode > 07777)
		return -EBADMSG;
	if (devices_file_chown(args[0], uid, gid, (mode_t)mode, NULL) < 0) {
		t->node_unsafe = true;
		return -EIO;
	}
	log_info("%s back to %u:%u %04lo", args[0], uid, gid, mode);
	r = device_file_free(args[0], DEVICE_FREE_WAIT_MS, &h, &killed);
	if (killed)
		log_info("%s: %u process%s of the job's user still held it: "
			 "killed",
			 args[0], killed, killed == 1 ? "" : "es");
	if (r == -EBUSY) {
		log_error("%s is still held by process %d (%s, uid %ld): the "
			  "next job cannot have it",
			  args[0], (int)h.pid, h.comm, h.uid);
		t->node_unsafe = true;
		return -EBUSY;
	}
	return r < 0 ? r : 0;
}

/* The VF's GUIDs and policy as they were before the job. */
static int undo_ibguid(char *const *args)
{
	struct ibpart_vf_state old = { 0 };

	if (ibpart_vf_state_set(&old, args[1], args[2], args[3]) < 0)
		return log_errno(EBADMSG,
				 "journal record IBGUID %s: bad values",
				 args[0]);
	if (ibpart_vf_write(args[0], &old) < 0)
		return -EIO;
	log_info("%s: GUIDs back to node %s port %s, policy %s", args[0],
		 old.node, old.port, old.policy);
	return 0;
}

/* The record, and what a prolog killed while writing it left. */
static int undo_ibrecord(const char *path)
{
	_cleanup_free_ char *tmp = NULL;

	if (asprintf(&tmp, "%s" FILE_REPLACE_TMP_SUFFIX, path) < 0)
		return -ENOMEM;
	if (unlink(tmp) < 0 && errno != ENOENT)
		return log_errno(errno, "%s: cannot remove", tmp);
	if (unlink(path) < 0 && errno != ENOENT)
		return log_errno(errno, "%s: cannot remove", path);
	log_info("%s removed", path);
	return 0;
}

static int teardown_entry(struct teardown *t, const struct journal_entry *e)
{
	if (e->kind == JOURNAL_UNKNOWN) {
		log_error("unknown journal record %s; skipped", e->verb);
		return -EBADMSG;
	}
	if (e->n_args != journal_verbs[e->kind].n_args) {
		log_error("journal record %s has %zu arguments; skipped",
			  e->verb, e->n_args);
		return -EBADMSG;
	}
	switch (e->kind) {
	case JOURNAL_NETLINK:
	case JOURNAL_NFT:
		return jobnet_undo(e->kind, e->args, e->n_args);
	case JOURNAL_DEVOWNER:
		return undo_devowner(t, e->args);
	case JOURNAL_IBGUID:
		return undo_ibguid(e->args);
	case JOURNAL_OVERLAY:
		return undo_overlay(t, "overlay", e->args[0]);
	case JOURNAL_NVRAM:
		return undo_overlay(t, journal_verb_name(e->kind), e->args[0]);
	case JOURNAL_DOMAIN:
		return undo_domain(t, e->args[0]);
	case JOURNAL_RELAY:
		return undo_helper(t, e->args[0], "slurm-vm-relay");
	case JOURNAL_VIRTIOFSD:
		return undo_virtiofsd(t, e->args[0]);
	case JOURNAL_SEED:
		return undo_seed(t, e->args[0]);
	case JOURNAL_DETACH:
		return undo_detach(t, e->args[0]);
	case JOURNAL_IBRECORD:
		return undo_ibrecord(e->args[0]);
	case JOURNAL_UNKNOWN:
		break;
	}
	log_error("unknown journal record %s; skipped", e->verb);
	return -EBADMSG;
}

/* A later incarnation of the job whose journal holds the same record: its
 * guest may run on that very bridge, table, GUIDs and partition record (one
 * name per job id), or the same PCI function and group file, so its replay
 * undoes them, not this one (which would take the file from its qemu, and
 * the function back to its host driver). A later journal that cannot be
 * read may hold them: kept too. */
static bool entry_yielded(struct teardown *t, const struct journal_entry *e,
			  struct teardown_result *res)
{
	const char *what, *table;
	char holder[64];
	int r;

	if (!t->g || !journal_verb_is(e->kind, JOURNAL_PER_JOB))
		return false;
	r = guest_later_holder(t->conf, t->g, e, holder, sizeof(holder));
	if (r == 0)
		return false;
	/* args is NULL-terminated: a short record logs empty strings */
	what = e->n_args ? e->args[0] : "";
	table = e->kind == JOURNAL_NFT && e->n_args > 1 ? e->args[1] : "";
	if (r > 0)
		log_info("journal record %s %s%s%s left to %s, which holds it "
			 "too",
			 e->verb, what, *table ? " " : "", table, holder);
	else
		log_error("journal record %s %s%s%s kept: a later "
			  "incarnation's journal cannot be read; `slurm-vm "
			  "cleanup` undoes it",
			  e->verb, what, *table ? " " : "", table);
	res->yielded += r > 0;
	res->failed += r < 0;
	return true;
}

enum replay_what { REPLAY_ALL, REPLAY_KEPT_FILES, REPLAY_GUEST };

static bool entry_replayed(const struct journal_entry *e, enum replay_what what)
{
	switch (what) {
	case REPLAY_KEPT_FILES:
		return journal_verb_is(e->kind, JOURNAL_KEPT_FILE);
	case REPLAY_GUEST:
		return journal_verb_is(e->kind, JOURNAL_GUEST);
	default:
		return true;
	}
}

static int replay(const struct vmconf *conf, int state_fd,
		  const struct guest *g, bool keep, enum replay_what what,
		  struct teardown_result *res)
{
	struct teardown t = {
		.conf = conf, .state_fd = state_fd, .keep = keep, .g = g
	};
	const char *running = NULL; /* a guest that could not be stopped */
	struct journal j;
	int r;

	memset(res, 0, sizeof(*res));
	r = journal_read(state_fd, &j);
	if (r < 0)
		return r;
	for (size_t i = j.n_entries; i-- > 0;) {
		const struct journal_entry *e = &j.entries[i];
		double t0 = clock_now_s();

		if (!entry_replayed(e, what))
			continue;
		/* The prolog journals isolation before the guest: replayed
		 * backwards, the guest's stop came first. Undone while it may
		 * run, they would open its network and fabric to others;
		 * kept, the journal undoes them once it has stopped. */
		if (running && journal_verb_is(e->kind, JOURNAL_ISOLATES)) {
			log_error("journal record %s kept: guest %s may still "
				  "run; `slurm-vm cleanup` undoes it once the "
				  "guest is stopped",
				  e->verb, running);
			res->kept++;
			continue;
		}
		if (entry_yielded(&t, e, res))
			continue;
		r = teardown_entry(&t, e);
		res->steps++;
		if (r < 0)
			res->failed++;
		/* A guest that may still run may still hold devices. */
		if (r < 0 && e->kind == JOURNAL_DOMAIN) {
			t.node_unsafe = true;
			running = e->n_args == 1 ? e->args[0] : "?";
		}
		if (res->n_timed < TEARDOWN_TIMED_STEPS) {
			struct teardown_step_time *st =
				&res->timed[res->n_timed++];

			snprintf(st->verb, sizeof(st->verb), "%s", e->verb);
			st->seconds = clock_now_s() - t0;
			st->error = r < 0 ? r : 0;
		}
	}
	res->node_unsafe = t.node_unsafe;
	hv_close(t.hv);
	journal_free(&j);
	return res->failed ? -EIO : 0;
}

int teardown_replay(const struct vmconf *conf, int state_fd, bool keep,
		    struct teardown_result *res)
{
	return replay(conf, state_fd, NULL, keep, REPLAY_ALL, res);
}

int teardown_replay_guest(const struct vmconf *conf, int state_fd,
			  const struct guest *g, bool keep,
			  struct teardown_result *res)
{
	return replay(conf, state_fd, g, keep, REPLAY_ALL, res);
}

int teardown_kept_files(const struct vmconf *conf, int state_fd,
			struct teardown_result *res)
{
	return replay(conf, state_fd, NULL, false, REPLAY_KEPT_FILES, res);
}

int teardown_guest_only(const struct vmconf *conf, int state_fd,
			struct teardown_result *res)
{
	return replay(conf, state_fd, NULL, false, REPLAY_GUEST, res);
}
