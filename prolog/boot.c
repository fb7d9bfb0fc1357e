/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vm/domain.h"
#include "core/fileutil.h"
#include "vm/hypervisor.h"
#include "vm/pidfile.h"
#include "core/clock.h"
#include "net/jobnet.h"
#include "job/journal.h"
#include "core/log.h"
#include "prolog.h"
#include "core/run.h"
#include "vm/seed.h"
#include "job/user.h"

#define SEED_STATE_NAME "seed"

/* OverlayDir: root's, 0711. Job users reach their own overlay by name (qemu
 * runs as them) but can neither list nor create anything there. */
static int overlay_dir_prepare(const char *path)
{
	_cleanup_close_ int fd =
		dir_open_root_private(path, 0711, "OverlayDir");
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return log_errno(errno, "cannot stat OverlayDir %s", path);
	if ((st.st_mode & 07777) != 0711 && fchmod(fd, 0711) < 0)
		return log_errno(errno, "cannot chmod OverlayDir %s", path);
	return 0;
}

/* Runs qemu-img create for the job's overlay; !@backing: a plain
 * image of the same size. */
int boot_overlay_create(const char *overlay, const struct image_layer *base,
			bool backing, char *out, size_t outlen)
{
	char size[32];

	snprintf(size, sizeof(size), "%" PRIu64, base->virtual_size);
	/* -u: qemu-img must not open the user's image (we parsed it); the
	 * format of every layer is told, never probed. */
	/* clang-format off */
	char *const with_backing[] = { "/usr/bin/qemu-img", "create", "-q",
				       "-f", "qcow2", "-u", "-F",
				       (char *)image_format_name(base->format),
				       "-b", base->path, (char *)overlay, size,
				       NULL };
	char *const plain[] = { "/usr/bin/qemu-img", "create", "-q", "-f",
				"qcow2", (char *)overlay, size, NULL };
	/* clang-format on */
	return run_wait(backing ? with_backing : plain, 60, out, outlen);
}

/* qemu-img failed: the host's fault if it cannot make the same overlay
 * without the user's image either (disk full, OverlayDir gone), else the
 * image's (the check should have refused it). The try uses the overlay's
 * own journaled name and is removed at once. */
static enum prolog_result overlay_failure(struct prolog *p, const char *overlay,
					  int r, const char *out)
{
	const struct image_layer *base = &p->chain.layers[0];
	char plain_out[1024];
	int plain = -1;

	if (r > 0) /* a timeout or no qemu-img is never the image's doing */
		plain = boot_overlay_create(overlay, base, false, plain_out,
					    sizeof(plain_out));
	unlink(overlay);
	if (plain != 0) {
		log_error("job %u: qemu-img create %s failed (%d): %s",
			  p->req.job_id, overlay, r, out);
		return PROLOG_NODE_FAULT;
	}
	/* The reason the job's steps print. */
	log_error("job %u: refused: no overlay can be made on the image: %s "
		  "(image %s)",
		  p->req.job_id, out, base->path);
	return PROLOG_JOB_FAULT;
}

static enum prolog_result boot_overlay(struct prolog *p, char **overlay)
{
	char out[1024];
	int r;

	r = overlay_dir_prepare(p->conf.overlay_dir);
	if (r < 0)
		return PROLOG_NODE_FAULT;
	if (asprintf(overlay, "%s/%s.qcow2", p->conf.overlay_dir,
		     p->state_name) < 0)
		return PROLOG_NODE_FAULT;
	if (state_journal(p, JOURNAL_OVERLAY, *overlay) < 0)
		return PROLOG_NODE_FAULT;
	r = boot_overlay_create(*overlay, &p->chain.layers[0], true, out,
				sizeof(out));
	if (r != 0)
		return overlay_failure(p, *overlay, r, out);
	/* qemu runs as the job user: the overlay is the user's, in a root
	 * directory the user can only traverse (no other name in it can be
	 * made or swapped). */
	if (chown(*overlay, p->req.uid, p->req.gid) < 0 ||
	    chmod(*overlay, 0600) < 0) {
		log_errno(errno, "job %u: cannot give overlay %s to uid %u",
			  p->req.job_id, *overlay, (unsigned)p->req.uid);
		return PROLOG_NODE_FAULT;
	}
	return PROLOG_OK;
}

#define NVRAM_MAX (64u << 20)

static bool wants_uefi(const struct prolog *p)
{
	return p->spec.firmware && strcmp(p->spec.firmware, "uefi") == 0;
}

/* Copies vm.conf's UefiVars (root's configuration: trusted) to a new file
 * @dst that only the job user can read and write. */
static int nvram_copy(const char *src, const char *dst, uid_t uid, gid_t gid)
{
	_cleanup_close_ int in = -1, out = -1;
	char buf[65536];
	struct stat st;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0)
		return log_errno(errno, "cannot read UefiVars=%s", src);
	if (!S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size > NVRAM_MAX) {
		log_error(
			"UefiVars=%s is not an NVRAM template (a regular file "
			"of at most 64 MiB); see vm.conf(5)",
			src);
		return -EINVAL;
	}
	/* A leftover of a killed prolog is ours to replace, never to open. */
	if (unlink(dst) < 0 && errno != ENOENT)
		return log_errno(errno, "cannot replace %s", dst);
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		   0600);
	if (out < 0)
		return log_errno(errno, "cannot create %s", dst);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return log_errno(errno ?: EIO, "cannot write %s", dst);
	if (n < 0)
		return log_errno(errno, "cannot read UefiVars=%s", src);
	if (fchown(out, uid, gid) < 0)
		return log_errno(errno, "cannot give %s to uid %u", dst,
				 (unsigned)uid);
	return 0;
}

/* UEFI guests keep their variables in a per-job NVRAM file beside the
 * overlay: the user's, so qemu (running as the user) can write it. */
static enum prolog_result boot_nvram(struct prolog *p, char **nvram)
{
	if (!wants_uefi(p))
		return PROLOG_OK;
	if (access(p->conf.uefi_code, R_OK) < 0) {
		log_errno(
			errno,
			"job %u: image %s boots UEFI, but UefiCode=%s cannot be read (install ovmf or fix vm.conf)",
			p->req.job_id, p->req.image, p->conf.uefi_code);
		return PROLOG_NODE_FAULT;
	}
	if (asprintf(nvram, "%s/%s.nvram.fd", p->conf.overlay_dir,
		     p->state_name) < 0) {
		*nvram = NULL;
		return PROLOG_NODE_FAULT;
	}
	if (state_journal(p, JOURNAL_NVRAM, *nvram) < 0)
		return PROLOG_NODE_FAULT;
	if (nvram_copy(p->conf.uefi_vars, *nvram, p->req.uid, p->req.gid) < 0)
		return PROLOG_NODE_FAULT;
	return PROLOG_OK;
}

int boot_user_load(struct prolog *p, struct user_info *u)
{
	if (user_info_load(p->req.uid, p->req.gid, u) == 0)
		return 0;
	state_record_reason(
		p,
		"job %u: user %s (uid %u) is unknown to node %s's NSS; no guest can be made for it",
		p->req.job_id, p->req.user, (unsigned)p->req.uid,
		p->alloc.node);
	return -ESRCH;
}

/* The seed's documents in <state>/seed/, the ISO <state>/seed.iso, the job
 * user's (qemu's) alone: it holds their keys, groups and network plan. */
static enum prolog_result boot_seed(struct prolog *p, char **iso)
{
	_cleanup_free_ char *dir = state_file(p, SEED_STATE_NAME);
	_cleanup_free_ char *keys = NULL;
	_cleanup_free_ char *agent = NULL;
	_cleanup_free_ char *net = NULL, *hosts = NULL;
	struct user_info user;
	int r;

	*iso = state_file(p, SEED_STATE_NAME ".iso");
	if (!dir || !*iso)
		return PROLOG_NODE_FAULT;
	if (boot_user_load(p, &user) < 0)
		return PROLOG_JOB_FAULT;
	if (seed_read_ssh_keys(&user, &keys) < 0) {
		user_info_free(&user);
		state_record_reason(p, "job %u: %s", p->req.job_id,
				    log_last_error());
		return PROLOG_JOB_FAULT;
	}
	/* The agent goes on the seed for images that have none. */
	if (seed_find_agent(p->conf.helper_dir, &agent) < 0)
		goto fail;
	if (p->has_net && (!(net = jobnet_network_config(&p->net)) ||
			   !(hosts = jobnet_hosts(&p->net))))
		goto fail;
	struct seed_params sp = {
		.job_id = p->req.job_id,
		.restart = p->req.restart_count,
		.hostname = p->alloc.node,
		.user = &user,
		.ssh_keys = keys,
		.agent = agent,
		.network_config = net,
		.hosts = hosts,
		.shares = p->conf.shared_dirs,
		.n_shares = (unsigned)vmconf_n_shared_dirs(&p->conf),
		.share_transport = p->share_transport,
	};
	if (state_journal(p, JOURNAL_SEED, SEED_STATE_NAME) < 0)
		goto fail;
	if (mkdirat(p->state_fd, SEED_STATE_NAME, 0700) < 0 &&
	    errno != EEXIST) {
		log_errno(errno, "cannot create %s", dir);
		goto fail;
	}
	r = seed_build(&sp, dir, *iso);
	if (r == -EINVAL) {
		user_info_free(&user);
		state_record_reason(
			p,
			"job %u: the cloud-init seed cannot hold user %s: %s",
			p->req.job_id, p->req.user, log_last_error());
		return PROLOG_JOB_FAULT;
	}
	if (r < 0)
		goto fail;
	user_info_free(&user);
	return PROLOG_OK;
fail:
	log_error("job %u: cannot make the cloud-init seed %s", p->req.job_id,
		  *iso);
	user_info_free(&user);
	return PROLOG_NODE_FAULT;
}

/* The guest's tap exists (libvirt made it), the guest has not run: lock
 * it before its first frame. A failure is the node's (its nft). */
int boot_guard_tap(void *arg)
{
	struct boot_tap_guard *g = arg;
	int r = jobnet_guard_tap(&g->p->net, g->p->state_fd);

	g->failed = r < 0;
	return r;
}

void boot_domain_name(const struct prolog *p, char *name, size_t size)
{
	snprintf(name, size, DOMAIN_NAME_PREFIX "%s", p->state_name);
}

/* qemu's pid file in the state directory: the extern step adopts qemu
 * from it (slurm-vm-adopt), so that Slurm counts and constrains the guest.
 * Not found: the guest runs outside the job's accounting, and the log says
 * so. */
void boot_record_qemu(struct prolog *p, const char *name)
{
	pid_t pid;

	if (hv_qemu_pid(name, &pid) < 0) {
		log_warn("job %u: cannot find the pid of guest %s's qemu: "
			 "Slurm's accounting and cgroups will not see it",
			 p->req.job_id, name);
		return;
	}
	(void)pidfile_write(p->state_fd, QEMU_PIDFILE, pid);
}

void boot_domain_params(struct prolog *p, struct boot_names *n,
			struct domain_params *dp)
{
	boot_domain_name(p, n->name, sizeof(n->name));
	dp->name = n->name;
	dp->job_id = p->req.job_id;
	dp->uid = p->req.uid;
	dp->gid = p->req.gid;
	dp->run_as_user = true;
	dp->image = p->chain.layers[0].path;
	dp->image_format = image_format_name(p->chain.layers[0].format);
	for (unsigned i = 1; i < p->chain.depth; i++) {
		n->backing[i - 1].path = p->chain.layers[i].path;
		n->backing[i - 1].format =
			image_format_name(p->chain.layers[i].format);
	}
	dp->backing = n->backing;
	dp->n_backing = p->chain.depth - 1;
	dp->kernel = p->spec.kernel;
	dp->initrd = p->spec.initrd;
	dp->cmdline = p->spec.cmdline;
	dp->console_log = n->console = state_file(p, "console.log");
	dp->channel_socket = n->channel = state_file(p, "agent.sock");
	if (p->has_net) {
		jobnet_mac_string(&p->net, p->net.self, n->mac);
		dp->net_bridge = p->net.bridge;
		dp->net_tap = p->net.tap;
		dp->net_mac = n->mac;
	}
	domain_params_from_conf(dp, &p->conf);
	/* virtiofs: each share's virtiofsd listens already (virtiofs.c) */
	dp->share_transport = p->share_transport;
	dp->share_sockets = p->share_sockets;
}

void boot_names_free(struct boot_names *n)
{
	free(n->console);
	free(n->channel);
}

static enum prolog_result boot_domain(struct prolog *p, const char *overlay,
				      const char *nvram, const char *seed)
{
	_cleanup_(boot_names_free) struct boot_names n = { 0 };
	_cleanup_free_ char *xml = NULL;
	struct domain_params dp = { 0 };
	struct hypervisor *hv = NULL;
	struct boot_tap_guard guard = { .p = p };
	enum prolog_result res = PROLOG_JOB_FAULT;
	const char *name = n.name;
	int r;

	boot_domain_params(p, &n, &dp);
	dp.overlay = overlay;
	if (nvram) {
		dp.uefi_code = p->conf.uefi_code;
		dp.nvram = nvram;
	}
	dp.seed = seed;
	if (!dp.console_log || !dp.channel_socket)
		return PROLOG_NODE_FAULT;
	if (domain_xml_build(&p->plan, &dp, &xml) < 0) {
		log_error("job %u: cannot build the domain XML", p->req.job_id);
		return PROLOG_NODE_FAULT;
	}
	if (hv_open(p->conf.libvirt_uri, &hv) < 0)
		return PROLOG_NODE_FAULT;
	if (state_journal(p, JOURNAL_DOMAIN, name) < 0) {
		res = PROLOG_NODE_FAULT;
		goto out;
	}
	r = hv_create(hv, xml, p->plan.mem_limit_mib,
		      p->has_net ? boot_guard_tap : NULL, &guard);
	if (r == 0) {
		boot_record_qemu(p, name);
		res = PROLOG_OK;
	} else if (r == -EOPNOTSUPP || guard.failed) /* the host's fault */
		res = PROLOG_NODE_FAULT;
	else
		state_record_reason(
			p, "libvirt could not start the guest of job %u: %s",
			p->req.job_id, log_last_error());
out:
	hv_close(hv);
	return res;
}

enum prolog_result boot_relay(struct prolog *p, const char *persona)
{
	_cleanup_free_ char *relay = NULL,
			    *channel = state_file(p, "agent.sock");
	_cleanup_free_ char *sock = state_file(p, "sock/relay.sock");
	_cleanup_free_ char *pidfile = state_file(p, "relay.pid");
	_cleanup_free_ char *logfile = state_file(p, "relay.log");
	_cleanup_free_ char *oomfile = state_file(p, GUEST_OOM_FILE);
	char uid[16], gid[16], out[1024];
	int r;

	if (asprintf(&relay, "%s/slurm-vm-relay", p->conf.helper_dir) < 0)
		return PROLOG_NODE_FAULT;
	snprintf(uid, sizeof(uid), "%u", (unsigned)p->req.uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)p->req.gid);
	if (state_journal(p, JOURNAL_RELAY, "relay.pid") < 0)
		return PROLOG_NODE_FAULT;
	/* clang-format off */
	char *argv[] = { relay, "--channel", channel, "--socket", sock,
			 "--uid", uid, "--gid", gid, "--daemon",
			 "--pidfile", pidfile, "--log-file", logfile,
			 "--oom-file", oomfile, NULL, NULL, NULL, NULL };
	/* clang-format on */
	size_t n = 16;

	if (persona) { /* a warm start's guest becomes the job's */
		argv[n++] = "--persona";
		argv[n++] = (char *)persona;
	}
	if (p->conf.allow_root)
		argv[n++] = "--allow-root";
	r = run_wait(argv, 30, out, sizeof(out));
	if (r != 0) {
		log_error("job %u: %s did not start (%d): %s", p->req.job_id,
			  relay, r, out);
		return PROLOG_NODE_FAULT;
	}
	return PROLOG_OK;
}

/* A guest whose qemu ended (killed, out of memory) or that powered off or
 * rebooted (on_reboot is destroy) will never be ready: no use waiting out
 * BootTimeout. A libvirt that cannot say is no reason to give up. */
struct boot_watch {
	struct hypervisor *hv;
	const char *name;
};

static bool boot_domain_alive(void *arg)
{
	const struct boot_watch *w = arg;

	return hv_is_running(w->hv, w->name) != 0;
}

unsigned boot_time_left(const struct prolog *p)
{
	double left = p->boot_deadline - clock_now_s();

	return left >= 1 ? (unsigned)left : 0;
}

enum prolog_result boot_wait_ready(struct prolog *p, double t0)
{
	_cleanup_free_ char *exec = NULL;
	_cleanup_free_ char *sock = state_file(p, "sock/relay.sock");
	struct boot_watch watch = { 0 };
	char name[96], timeout[16], out[1024];
	enum prolog_result res = PROLOG_OK;
	unsigned left = boot_time_left(p);
	int r;

	if (left == 0) {
		state_record_reason(
			p,
			"the guest of job %u did not become ready within BootTimeout=%us (image %s)",
			p->req.job_id, p->conf.boot_timeout, p->req.image);
		return PROLOG_JOB_FAULT;
	}
	if (asprintf(&exec, "%s/slurm-vm-exec", p->conf.helper_dir) < 0)
		return PROLOG_NODE_FAULT;
	if (hv_open(p->conf.libvirt_uri, &watch.hv) < 0)
		return PROLOG_NODE_FAULT;
	boot_domain_name(p, name, sizeof(name));
	watch.name = name;
	snprintf(timeout, sizeof(timeout), "%u", left);
	/* clang-format off */
	char *const argv[] = { exec, "--socket", sock, "--timeout", timeout,
			       "--wait-ready", NULL };
	/* clang-format on */
	r = run_wait_while(argv, left + 10, out, sizeof(out), boot_domain_alive,
			   &watch);
	if (r == -ECANCELED) {
		log_error("job %u: guest %s stopped %.1fs after boot, before "
			  "its agent was ready",
			  p->req.job_id, name, clock_now_s() - t0);
		state_record_reason(
			p,
			"the guest of job %u stopped before it became ready (image %s): qemu ended, or the guest powered off or rebooted while booting",
			p->req.job_id, p->req.image);
		res = PROLOG_JOB_FAULT;
	} else if (r != 0) {
		log_error(
			"job %u: the guest's agent was not ready within %us: %s",
			p->req.job_id, p->conf.boot_timeout, out);
		state_record_reason(
			p,
			"the guest of job %u did not become ready within BootTimeout=%us (image %s)",
			p->req.job_id, p->conf.boot_timeout, p->req.image);
		res = PROLOG_JOB_FAULT;
	} else {
		log_info("job %u: guest ready %.1fs after boot", p->req.job_id,
			 clock_now_s() - t0);
	}
	hv_close(watch.hv);
	return res;
}

enum prolog_result boot_cold(struct prolog *p)
{
	_cleanup_free_ char *overlay = NULL, *nvram = NULL, *seed = NULL;
	enum prolog_result res;
	double t0, t;

	t = clock_now_s();
	res = boot_overlay(p, &overlay);
	if (res == PROLOG_OK)
		res = boot_nvram(p, &nvram);
	log_info("job %u: phase overlay %.3fs", p->req.job_id,
		 clock_now_s() - t);
	if (res == PROLOG_OK) {
		t = clock_now_s();
		res = boot_seed(p, &seed);
		log_info("job %u: phase seed %.3fs", p->req.job_id,
			 clock_now_s() - t);
	}
	if (res == PROLOG_OK) {
		t = clock_now_s();
		res = prolog_virtiofs(p);
		log_info("job %u: phase virtiofsd %.3fs", p->req.job_id,
			 clock_now_s() - t);
	}
	if (res == PROLOG_OK) {
		t = clock_now_s();
		res = boot_domain(p, overlay, nvram, seed);
		log_info("job %u: phase define+start %.3fs", p->req.job_id,
			 clock_now_s() - t);
	}
	t0 = clock_now_s();
	if (res == PROLOG_OK)
		res = boot_relay(p, NULL);
	if (res == PROLOG_OK)
		res = boot_wait_ready(p, t0);
	return res;
}
